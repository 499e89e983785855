"""The http adapter's server under attack (tests/adapters/hostile.py): silent and trickling
clients are closed after ``keepalive_timeout`` while others are served; bodies claiming 10**12
or 2**63 bytes, or a chunk of 2**63-1, are refused with 413 unread, the peak memory flat; 400
idle connections lock nobody out; resets in the middle of a request leave no traceback."""

from __future__ import annotations

import resource
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from coupler.adapters.http import HttpAdapter
from tests.adapters import hostile
from tests.adapters.daemon_bus import DaemonBus
from tests.bus.site_helpers import REPO, coupler_env, wait_for

from .conftest import DATA, ORDER
from .test_crash import SITE
from .test_hostile import address

HEAD = b"POST /orders HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"


def _serve(a: HttpAdapter) -> Callable[[], None]:
    def serve() -> None:
        assert httpx.post(f"{a.url}/orders", json=ORDER, timeout=10).status_code == 202
    return serve


def _open(a: HttpAdapter) -> Callable[[], int]:
    runner = a._runner
    assert runner is not None and runner.server is not None
    return lambda: len(runner.server.connections)  # type: ignore[union-attr]


def test_silent_and_trickling_clients_are_closed_after_keepalive_timeout(server: Callable[..., HttpAdapter]) -> None:
    a = server(keepalive_timeout=1.0)
    hostile.slow_clients_are_closed(address(a), HEAD, _serve(a), 1.0)


def test_huge_claimed_sizes_are_refused_unread(bus: DaemonBus, server: Callable[..., HttpAdapter]) -> None:
    a = server(max_body_bytes=1 << 20)
    hostile.huge_claims_are_refused(address(a), HEAD, 1 << 20, _serve(a))
    assert len(bus.received("orders", max=10, wait=5)) == 1  # only the request served


def test_400_idle_connections_do_not_lock_others_out(server: Callable[..., HttpAdapter]) -> None:
    a = server(keepalive_timeout=60.0)
    hostile.many_idle_connections_do_not_lock_out(address(a), _serve(a), _open(a))


def test_resets_in_the_middle_of_a_request_leave_no_traceback(server: Callable[..., HttpAdapter],
                                                              caplog: pytest.LogCaptureFixture) -> None:
    a = server()
    hostile.resets_leave_no_traceback(address(a), HEAD, _serve(a), _open(a), caplog)


def test_a_daemon_out_of_file_descriptors_says_so_in_one_line_and_recovers(tmp_path: Path) -> None:
    """400 connections to a daemon allowed 256 open files: it cannot accept more for a while,
    says so in one WARNING line (asyncio logged a traceback for every connection waiting,
    tens of thousands in a few seconds, and again at shutdown), and serves again once they close."""
    shutil.copy(DATA / "order.avsc", tmp_path / "order.avsc")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    (tmp_path / "site.toml").write_text(SITE.format(port=port))
    url = f"http://127.0.0.1:{port}/orders"

    def few_files() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))

    def served() -> bool:
        try:
            return httpx.post(url, json=ORDER, timeout=5).status_code == 202
        except httpx.HTTPError:
            return False

    log_path = tmp_path / "daemon.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "coupler.bus.cli", "daemon", "--site", str(tmp_path / "site.toml")],
                                cwd=REPO, env=coupler_env(), stdout=subprocess.DEVNULL, stderr=log, preexec_fn=few_files)
    held: list[socket.socket] = []
    try:
        wait_for(served, "the daemon to serve", timeout=60)
        for _ in range(400):
            held.append(socket.create_connection(("127.0.0.1", port), timeout=10))
        wait_for(lambda: "cannot accept connections" in log_path.read_text(), "the daemon to run out of files")
        for s in held:
            s.close()
        held.clear()
        wait_for(served, "the daemon to serve again once the connections closed")
    finally:
        for s in held:
            s.close()
        proc.terminate()
        proc.wait(timeout=60)
    text = log_path.read_text()
    assert "Traceback" not in text, text[text.index("Traceback") - 300:][:1500]
    reports = [line for line in text.splitlines() if "cannot accept connections" in line]
    assert 1 <= len(reports) <= 3, reports
    assert "ulimit -n" in reports[0]


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
def test_a_body_that_is_not_in_its_content_encoding_is_a_400_in_one_line(server: Callable[..., HttpAdapter],
                                                                         encoding: str, caplog: pytest.LogCaptureFixture) -> None:
    """Found by probing the SOAP server's headers (the same read): ``Content-Encoding: gzip``
    on a body that is not gzip made aiohttp raise RequestPayloadError out of the body's read,
    answered 500 "Internal Server Error" with an unhandled exception logged."""
    import gzip
    import json

    a = server()
    headers = {"Content-Type": "application/json", "Content-Encoding": encoding}
    r = httpx.post(f"{a.url}/orders", content=json.dumps(ORDER).encode(), headers=headers, timeout=10)
    assert r.status_code == 400, (r.status_code, r.text[:200])
    assert r.json()["detail"].startswith(f"the body cannot be read as {encoding}") and "\n" not in r.json()["detail"]
    if encoding == "gzip":  # a gzip body is read as usual
        good = httpx.post(f"{a.url}/orders", content=gzip.compress(json.dumps(ORDER).encode()), headers=headers,
                          timeout=10)
        assert good.status_code == 202, good.text[:200]
    _serve(a)()
    assert not [r for r in caplog.records if r.levelname == "ERROR"], [r.getMessage() for r in caplog.records]
