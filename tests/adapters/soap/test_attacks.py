"""The SOAP adapter's server under attack (tests/adapters/hostile.py): silent and trickling
clients are closed after ``keepalive_timeout`` while others are served; a body trickling in is
answered 408 after ``read_timeout``; requests claiming 10**12 or 2**63 bytes, or a chunk of
2**63-1, are refused with 413 unread, the peak memory flat; 400 idle connections lock nobody
out; resets in the middle of a request leave no traceback."""

from __future__ import annotations

import socket
import time
from urllib.parse import urlsplit

import requests

from tests.adapters import hostile

SOAP11 = "http://schemas.xmlsoap.org/soap/envelope/"
QUOTE = (f'<e:Envelope xmlns:e="{SOAP11}" xmlns:p="urn:acme:policy"><e:Body><p:GetQuote>'
         "<p:policyId>P-1</p:policyId><p:driverAge>40</p:driverAge></p:GetQuote></e:Body></e:Envelope>").encode()


def _address(adapter) -> tuple[str, int]:
    parts = urlsplit(adapter.url)
    return parts.hostname, parts.port


def _head(adapter) -> bytes:
    return b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: text/xml\r\nSOAPAction: \"\"\r\n" % adapter.path.encode()


def _serve(adapter):
    def serve() -> None:
        r = requests.post(adapter.url, data=QUOTE, headers={"Content-Type": "text/xml"}, timeout=10)
        assert r.status_code == 200 and b"premium" in r.content, r.content[:300]
    return serve


def _open(adapter):
    runner = adapter.server._runner
    return lambda: len(runner.server.connections)


def test_silent_and_trickling_clients_are_closed_after_keepalive_timeout(soap_server):
    adapter = soap_server(keepalive_timeout=1.0)
    hostile.slow_clients_are_closed(_address(adapter), _head(adapter), _serve(adapter), 1.0)


def test_a_body_trickling_in_is_answered_408_after_read_timeout(soap_server, bus):
    adapter = soap_server(read_timeout=1.0)
    with socket.create_connection(_address(adapter), timeout=10) as s:
        started = time.monotonic()
        s.sendall(_head(adapter) + b"Content-Length: %d\r\n\r\n" % len(QUOTE))
        answer = hostile.trickle(s, QUOTE[:-1])
        if not answer:  # closed while we were sending: what it said is still to be read
            answer = hostile.answer_head(s, 30)
        elapsed = time.monotonic() - started
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert b"read_timeout" in answer and 0.8 <= elapsed < 30, elapsed
    _serve(adapter)()
    assert bus.transport.dead_letters(kind="invalid") == []


def test_huge_claimed_sizes_are_refused_unread(soap_server, bus):
    adapter = soap_server(max_request_bytes=1 << 20)
    hostile.huge_claims_are_refused(_address(adapter), _head(adapter), 1 << 20, _serve(adapter))
    assert bus.transport.dead_letters(kind="invalid") == []


def test_400_idle_connections_do_not_lock_others_out(soap_server):
    adapter = soap_server(keepalive_timeout=60.0)
    hostile.many_idle_connections_do_not_lock_out(_address(adapter), _serve(adapter), _open(adapter))


def test_resets_in_the_middle_of_a_request_leave_no_traceback(soap_server, bus, caplog):
    adapter = soap_server()
    hostile.resets_leave_no_traceback(_address(adapter), _head(adapter), _serve(adapter), _open(adapter), caplog)
    assert bus.transport.dead_letters(kind="invalid") == []


def test_connections_over_max_connections_are_refused_at_once(soap_server, caplog):
    adapter = soap_server(max_connections=20, keepalive_timeout=60.0)
    request = _head(adapter) + b"Content-Length: %d\r\n\r\n" % len(QUOTE) + QUOTE
    hostile.connections_over_the_limit_are_refused(_address(adapter), request, _serve(adapter), _open(adapter), 20,
                                                   caplog)
    health = adapter.health()["connections"]
    assert health["max"] == 20 and health["refused"] == 20, health
