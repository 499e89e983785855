"""The socket adapter's options: errors name the key."""

from __future__ import annotations

import pytest

from coupler.adapters.socket.options import SocketConfigError, parse_options


def test_options_errors_name_the_key():
    with pytest.raises(SocketConfigError, match=r"options\.mode"):
        parse_options("a", {"port": 1})
    with pytest.raises(SocketConfigError, match=r"options\.framing.*not one of"):
        parse_options("a", {"mode": "server", "port": 1, "framing": "smoke"})
    with pytest.raises(SocketConfigError, match=r"options\.framing.*1, 2 or 4"):
        parse_options("a", {"mode": "server", "port": 1, "length_bytes": 3})
    with pytest.raises(SocketConfigError, match=r"options\.target"):
        parse_options("a", {"mode": "server", "port": 1, "exchange": "request-reply"})
    with pytest.raises(SocketConfigError, match=r"options\.frame_length"):
        parse_options("a", {"mode": "server", "port": 1, "framing": "fixed"})
    with pytest.raises(SocketConfigError, match=r"options\.correlation_length"):
        parse_options("a", {"mode": "client", "port": 1, "correlation": "field"})
