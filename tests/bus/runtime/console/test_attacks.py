"""The console's HTTP server under attack (tests/adapters/hostile.py): silent and trickling
clients are closed after ``[http] keepalive_timeout`` while others are served; API requests
claiming 10**12 or 2**63 bytes, or a chunk of 2**63-1, are refused with 413 unread, the peak
memory flat; 400 idle connections lock nobody out; resets in the middle of a request leave no
traceback."""

from __future__ import annotations

import contextlib
import json
import socket
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

from prometheus_client.parser import text_string_to_metric_families

from coupler.bus.config.loader import load_site
from coupler.bus.runtime.console.server import read_token
from tests.adapters import hostile
from tests.bus.runtime.console.helpers import console_site
from tests.bus.site_helpers import running_daemon


@contextlib.contextmanager
def _console(tmp_path: Path, keepalive: float | None = None) -> Iterator[tuple]:
    site_file = console_site(tmp_path)
    if keepalive is not None:
        text = site_file.read_text()
        site_file.write_text(text.replace("[http]\n", f"[http]\nkeepalive_timeout = {keepalive}\n", 1))
    with running_daemon(site_file, plugins=None) as daemon:
        parts = urlsplit(daemon.console_url)
        token = read_token(load_site(site_file))
        head = (b"POST /api/groups/complete HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Authorization: Bearer %s\r\n" % token.encode())
        runner = daemon._console._runner

        def serve() -> None:
            with urllib.request.urlopen(daemon.console_url + "/healthz", timeout=10) as r:
                assert r.status == 200

        yield (parts.hostname, parts.port), head, serve, lambda: len(runner.server.connections)


def test_silent_and_trickling_clients_are_closed_after_keepalive_timeout(tmp_path):
    with _console(tmp_path, keepalive=1.0) as (address, head, serve, _):
        hostile.slow_clients_are_closed(address, head, serve, 1.0)


def test_huge_claimed_sizes_are_refused_unread(tmp_path):
    with _console(tmp_path) as (address, head, serve, _):
        hostile.huge_claims_are_refused(address, head, 64 << 20, serve)


def test_400_idle_connections_do_not_lock_others_out(tmp_path):
    with _console(tmp_path) as (address, _, serve, open_connections):
        hostile.many_idle_connections_do_not_lock_out(address, serve, open_connections)


def test_resets_in_the_middle_of_a_request_leave_no_traceback(tmp_path, caplog):
    with _console(tmp_path) as (address, head, serve, open_connections):
        hostile.resets_leave_no_traceback(address, head, serve, open_connections, caplog)


def test_a_body_nested_too_deeply_is_refused_in_one_line(tmp_path):
    """JSON nested past the parser's recursion limit is bad JSON (400), not an internal error."""
    with _console(tmp_path) as (address, head, serve, _):
        body = b"[" * 100_000 + b"]" * 100_000
        with socket.create_connection(address, timeout=30) as c:
            c.sendall(head + b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body)
            answer = b""
            while chunk := c.recv(65536):
                answer += chunk
        assert answer.startswith(b"HTTP/1.1 400"), answer[:200]
        assert b"not JSON" in answer and b"nested too deeply" in answer, answer[-300:]
        serve()


def _answer(address: tuple, data: bytes) -> bytes:
    """The whole answer to ``data`` (the server closes the connection after it)."""
    with socket.create_connection(address, timeout=30) as c:
        c.sendall(data)
        answer = b""
        with contextlib.suppress(ConnectionResetError):
            while chunk := c.recv(65536):
                answer += chunk
    return answer


def test_the_body_limit_is_the_sites_http_max_body_bytes(tmp_path):
    """``[http] max_body_bytes``: a POST body over it is answered 413 in JSON naming the option,
    at once on its declared length and once that many bytes of a chunked body have come; a body
    within it is read."""
    site_file = console_site(tmp_path)
    site_file.write_text(site_file.read_text().replace("[http]\n", "[http]\nmax_body_bytes = 1000\n", 1))
    with running_daemon(site_file, plugins=None) as daemon:
        parts = urlsplit(daemon.console_url)
        address = (parts.hostname, parts.port)
        head = (b"POST /api/groups/complete HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Authorization: Bearer %s\r\nConnection: close\r\n" % read_token(load_site(site_file)).encode())
        big = b'{"route": "r", "step": "s", "key": "%s"}' % (b"k" * 2000)
        declared = _answer(address, head + b"Content-Length: %d\r\n\r\n" % len(big) + big)
        assert declared.startswith(b"HTTP/1.1 413"), declared[:200]
        assert b"larger than 1000 bytes (http.max_body_bytes)" in declared, declared[-300:]
        chunked = _answer(address, head + b"Transfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n" % (len(big), big))
        assert chunked.startswith(b"HTTP/1.1 413"), chunked[:200]
        assert b"larger than 1000 bytes (http.max_body_bytes)" in chunked, chunked[-300:]
        small = b'{"route": "r", "step": "s", "key": "k"}'
        within = _answer(address, head + b"Content-Length: %d\r\n\r\n" % len(small) + small)
        assert within.startswith(b"HTTP/1.1 404") and b"has no stateful step" in within, within[-300:]


def test_connections_over_max_connections_are_refused_at_once(tmp_path, caplog):
    site_file = console_site(tmp_path)
    site_file.write_text(site_file.read_text().replace("[http]\n", "[http]\nmax_connections = 20\n", 1))
    with running_daemon(site_file, plugins=None) as daemon:
        parts = urlsplit(daemon.console_url)
        runner = daemon._console._runner

        def serve() -> None:
            with urllib.request.urlopen(daemon.console_url + "/healthz", timeout=10) as r:
                assert r.status == 200

        hostile.connections_over_the_limit_are_refused(
            (parts.hostname, parts.port), b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", serve,
            lambda: len(runner.server.connections), 20, caplog)
        # the console's own connections, as an adapter's health shows its server's: /healthz and /metrics
        with urllib.request.urlopen(daemon.console_url + "/healthz", timeout=10) as r:
            health = json.loads(r.read())["connections"]
        assert health["max"] == 20 and health["refused"] == 20 and 1 <= health["open"] <= 20, health
        with urllib.request.urlopen(daemon.console_url + "/metrics", timeout=10) as r:
            samples = {s.name: s.value for f in text_string_to_metric_families(r.read().decode()) for s in f.samples}
        assert samples["coupler_console_connections_max"] == 20, samples
        assert samples["coupler_console_connections_refused_total"] == 20, samples
        assert 1 <= samples["coupler_console_connections"] <= 20, samples


def test_the_body_timeout_is_the_sites_http_read_timeout(tmp_path):
    """``[http] read_timeout``: a POST body trickled slower than it is answered 408 in JSON naming
    the option, after about that long (it was a fixed 30 s); the console goes on serving."""
    site_file = console_site(tmp_path)
    site_file.write_text(site_file.read_text().replace("[http]\n", "[http]\nread_timeout = 1\n", 1))
    with running_daemon(site_file, plugins=None) as daemon:
        parts = urlsplit(daemon.console_url)
        address = (parts.hostname, parts.port)
        head = (b"POST /api/groups/complete HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Authorization: Bearer %s\r\n" % read_token(load_site(site_file)).encode())
        body = b'{"route": "r", "step": "s", "key": "%s"}' % (b"k" * 200)
        with socket.create_connection(address, timeout=30) as c:
            c.sendall(head + b"Content-Length: %d\r\n\r\n" % len(body))
            started = time.monotonic()
            answer = hostile.trickle(c, body, limit=20)  # one byte every 0.1 s: 24 s for all of it
            took = time.monotonic() - started
            with contextlib.suppress(ConnectionResetError):  # the rest (aiohttp lingers before closing)
                while b"http.read_timeout" not in answer and (chunk := c.recv(65536)):
                    answer += chunk
        assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
        assert b"did not arrive within 1 s (http.read_timeout)" in answer, answer[-300:]
        assert took < 10, took
        with urllib.request.urlopen(daemon.console_url + "/healthz", timeout=10) as r:
            assert r.status == 200


def test_a_body_that_is_not_in_its_content_encoding_is_refused_in_one_line(tmp_path, caplog):
    """``Content-Encoding: gzip`` on a body that is not gzip (aiohttp's RequestPayloadError out
    of the body's read) is a 400 naming the encoding, not an internal error."""
    with _console(tmp_path) as (address, head, serve, _):
        body = b'{"group": "x"}'
        with socket.create_connection(address, timeout=30) as c:
            c.sendall(head + b"Content-Encoding: gzip\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(body)
                      + body)
            answer = b""
            while chunk := c.recv(65536):
                answer += chunk
        assert answer.startswith(b"HTTP/1.1 400"), answer[:300]
        assert b"cannot be read as gzip" in answer, answer[-300:]
        serve()
    assert not [r for r in caplog.records if r.levelname == "ERROR"], [r.getMessage() for r in caplog.records]
