"""The socket adapter's options: errors name the key."""

from __future__ import annotations

import pytest

from coupler.adapters.socket.options import parse_options
from coupler.bus.api import OptionsError


def test_options_errors_name_the_key():
    with pytest.raises(OptionsError, match=r"options\.mode"):
        parse_options("a", {"port": 1})
    with pytest.raises(OptionsError, match=r"options\.framing.*not one of"):
        parse_options("a", {"mode": "server", "port": 1, "framing": "smoke"})
    with pytest.raises(OptionsError, match=r"options\.framing.*1, 2 or 4"):
        parse_options("a", {"mode": "server", "port": 1, "length_bytes": 3})
    with pytest.raises(OptionsError, match=r"options\.target"):
        parse_options("a", {"mode": "server", "port": 1, "exchange": "request-reply"})
    with pytest.raises(OptionsError, match=r"options\.framing: framing = .fixed. needs frame_length"):
        parse_options("a", {"mode": "server", "port": 1, "framing": "fixed"})
    with pytest.raises(OptionsError, match=r"options\.correlation_length"):
        parse_options("a", {"mode": "client", "port": 1, "correlation": "field"})


def test_every_problem_is_reported_at_once_with_the_adapters_key_path():
    with pytest.raises(OptionsError) as info:
        parse_options("hl7-in", {"mode": "client", "port": 0, "tls": {"cer": "x.pem"}, "idle_timout": 5})
    assert [str(p) for p in info.value.problems] == [
        "adapters[hl7-in].options.port: a client needs the peer's TCP port (not 0)",
        "adapters[hl7-in].options.tls.cer: unknown key (did you mean 'cert'?)",
        "adapters[hl7-in].options.idle_timout: unknown key (did you mean 'idle_timeout'?)",
    ]
