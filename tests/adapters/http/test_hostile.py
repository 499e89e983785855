"""Hostile callers: a 1 GB body, 200 slow clients, SQL-ish and binary junk; the server keeps
serving everyone else and its memory stays flat."""

from __future__ import annotations

import select
import socket
import time
from collections.abc import Callable
from urllib.parse import urlsplit

import httpx
import pytest

from coupler.adapters.http import HttpAdapter
from coupler.adapters.http.validation import BodyError, BodyValidator
from coupler.canonical import FormatIndicator
from tests.adapters.daemon_bus import DaemonBus
from tests.bus.site_helpers import wait_for

from .conftest import DATA, ORDER

GB = 1 << 30
CHUNK = 1 << 16


def rss() -> int:
    """This process's resident memory, bytes (the server runs in it)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def address(a: HttpAdapter) -> tuple[str, int]:
    parts = urlsplit(a.url)
    assert parts.hostname and parts.port
    return parts.hostname, parts.port


def send_huge(a: HttpAdapter, head: bytes) -> tuple[bytes, int]:
    """Stream up to 1 GB after ``head`` until the server answers or closes; (answer, bytes sent)."""
    sock = socket.create_connection(address(a), timeout=30)
    sent = 0
    answer = b""
    payload = b"%x\r\n" % CHUNK + b"7" * CHUNK + b"\r\n" if b"chunked" in head else b"7" * CHUNK
    try:
        sock.sendall(head)
        while sent < GB:
            if select.select([sock], [], [], 0)[0]:
                break  # the server answered (or closed): stop sending
            sock.sendall(payload)
            sent += CHUNK
        answer = sock.recv(4096)
    except (BrokenPipeError, ConnectionResetError):
        pass
    finally:
        sock.close()
    return answer, sent


def test_a_1gb_body_is_refused_by_the_limit_with_memory_flat(bus: DaemonBus, server: Callable[..., HttpAdapter]) -> None:
    a = server(max_body_bytes=1 << 20)
    before = rss()
    declared = (b"POST /orders HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Content-Length: %d\r\n\r\n" % GB)
    answer, sent = send_huge(a, declared)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]  # refused on its declared length, unread
    assert sent < 64 * CHUNK
    chunked = (b"POST /orders HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               b"Transfer-Encoding: chunked\r\n\r\n")
    answer, sent = send_huge(a, chunked)  # no length: refused once 1 MiB has come
    assert sent < 256 * CHUNK, f"{sent} bytes sent before the server stopped it"
    assert answer == b"" or answer.startswith(b"HTTP/1.1 413"), answer[:200]
    grown = rss() - before
    assert grown < 64 << 20, f"the server grew by {grown >> 20} MiB"
    assert bus.received("orders", wait=0.2) == []
    ok = httpx.post(f"{a.url}/orders", json=ORDER)  # and it goes on
    assert ok.status_code == 202
    assert a.counts["refused"] >= 1


def test_200_slow_clients_do_not_keep_others_from_being_served(bus: DaemonBus,
                                                               server: Callable[..., HttpAdapter]) -> None:
    a = server(read_timeout=5.0)
    slow = []
    head = b"POST /orders HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 60\r\n\r\n{"
    for _ in range(200):  # each sends its headers and one byte of its body, then stalls
        s = socket.create_connection(address(a), timeout=30)
        s.sendall(head)
        slow.append(s)
    try:
        started = time.monotonic()
        with httpx.Client(timeout=20) as client:
            codes = [client.post(f"{a.url}/orders", json={**ORDER, "orderNo": f"F{i}"}).status_code for i in range(20)]
        served_in = time.monotonic() - started
        assert codes == [202] * 20
        assert len(bus.received("orders", max=100)) == 20
        # the slow ones are answered 408 once read_timeout has passed, and their connections closed
        for s in slow[:5]:
            s.settimeout(30)
            assert s.recv(4096).startswith(b"HTTP/1.1 408")
        wait_for(lambda: a.counts["refused"] >= 200, "every slow client refused", timeout=60)
        print(f"20 requests served in {served_in:.2f} s while 200 slow clients held connections")
    finally:
        for s in slow:
            s.close()


def test_a_body_with_thousands_of_unexpected_attributes_is_refused_in_little_time() -> None:
    """Every XSD error of a body was collected (three shown): xmlschema builds one per
    unexpected attribute, each with a ``repr`` of all of them, so 3,000 attributes on one
    element held the request for half a minute. The validation stops at the first error."""
    validator = BodyValidator(FormatIndicator.parse("acme.Order@1"), ["xml"], str(DATA / "order.avsc"),
                              str(DATA / "order.xsd"), "endpoints.orders-xml", None)
    attributes = " ".join(f'a{n}="x"' for n in range(3000))
    body = f"<order><orderNo {attributes}>X1</orderNo><customer>Ada</customer><quantity>2</quantity></order>"
    started = time.process_time()
    with pytest.raises(BodyError, match="not valid against its XSD: .*'a0'") as refused:
        validator.check(body.encode(), "xml")
    assert time.process_time() - started < 1.0
    assert refused.value.status == 422 and "\n" not in str(refused.value)
