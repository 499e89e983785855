"""The options the generated configuration reference lists (``option_docs``) carry the
defaults the adapters really use."""

from __future__ import annotations

from coupler.adapters.soap import SoapAdapter
from coupler.adapters.socket import SocketAdapter
from coupler.adapters.socket.options import parse_options
from tests.adapters.soap.conftest import WSDL


def test_socket_option_docs_match_the_defaults() -> None:
    settings = parse_options("s", {"mode": "server", "port": 0})
    for doc in SocketAdapter.option_docs:
        if doc.key.startswith("tls."):
            continue
        used = settings.framing.max_frame if doc.key == "max_frame_bytes" else getattr(settings, doc.key)
        assert used == doc.default, doc.key


def test_soap_option_docs_match_the_defaults() -> None:
    adapter = SoapAdapter("p", {"mode": "server", "wsdl": str(WSDL), "target": "q"})
    used = {
        "users": adapter.users or None,
        "username_token_ttl": adapter.token_policy.ttl,
        "username_token_future_ttl": adapter.token_policy.future_ttl,
        "allow_password_text_over_http": adapter.token_policy.allow_password_text_over_http,
        "max_request_bytes": adapter.max_request_bytes,
    }
    for doc in SoapAdapter.option_docs:
        if not doc.key.startswith("tls."):
            assert used[doc.key] == doc.default, doc.key
