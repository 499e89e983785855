"""Attacks on an HTTP server of the daemon (the http and SOAP adapters, the console), shared by
their tests: slow and silent clients, bodies claiming huge sizes, hundreds of idle
connections, more connections than the server's ``max_connections``, clients that reset the
connection in the middle of a request. Each checks that the server goes on serving (``serve``:
one ordinary request, asserting its answer)."""

from __future__ import annotations

import logging
import socket
import struct
import time
from collections.abc import Callable

import pytest

from tests.bus.site_helpers import wait_for

Address = tuple[str, int]


def vm_hwm() -> int:
    """This process's peak resident memory, bytes (the server runs in it)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


def closed_after(sock: socket.socket, limit: float) -> tuple[float, bytes]:
    """Seconds until the server closes ``sock`` (reading whatever it answers first), and the
    answer; AssertionError if it is still open after ``limit`` seconds."""
    started, answer = time.monotonic(), b""
    sock.settimeout(limit)
    try:
        while chunk := sock.recv(65536):
            answer += chunk
    except TimeoutError:
        raise AssertionError(f"still open after {limit:g} s; answered {answer[:100]!r}") from None
    except OSError:
        pass  # reset by the server: closed too
    return time.monotonic() - started, answer


def slow_clients_are_closed(address: Address, partial: bytes, serve: Callable[[], None], timeout: float) -> None:
    """A silent connection and one trickling ``partial`` (the start of a request's headers)
    one byte every 0.1 s do not keep ``serve`` from being answered, and both are closed about
    ``timeout`` seconds after connecting (the server's keep-alive/header timeout)."""
    silent = socket.create_connection(address, timeout=10)
    trickle = socket.create_connection(address, timeout=10)
    opened = time.monotonic()
    try:
        trickle.sendall(partial[:1])
        serve()  # while both hold their connections
        closed = None
        for byte in partial[1:] * 1000:
            try:
                trickle.sendall(bytes([byte]))
            except OSError:
                closed = time.monotonic() - opened
                break
            trickle.setblocking(False)
            try:
                if trickle.recv(4096) == b"":
                    closed = time.monotonic() - opened
                    break
            except BlockingIOError:
                pass
            except OSError:
                closed = time.monotonic() - opened
                break
            finally:
                trickle.setblocking(True)
            if time.monotonic() - opened > timeout + 30:
                break
            time.sleep(0.1)  # the pace of the slow sender, not a wait for a condition
        assert closed is not None, f"a client trickling its headers was not closed within {timeout + 30:g} s"
        assert closed >= timeout * 0.8, f"closed after {closed:.2f} s, before the {timeout:g} s timeout"
        elapsed, _ = closed_after(silent, timeout + 30)
        silent_closed = time.monotonic() - opened
        assert silent_closed >= timeout * 0.8, f"a silent client closed after {silent_closed:.2f} s"
        print(f"trickling client closed after {closed:.2f} s, silent one after {silent_closed:.2f} s "
              f"(timeout {timeout:g} s; {elapsed:.2f} s after the check began)")
        serve()
    finally:
        silent.close()
        trickle.close()


def trickle(sock: socket.socket, data: bytes, limit: float = 30.0) -> bytes:
    """Send ``data`` one byte every 0.1 s until the server answers, closes, or ``limit`` seconds
    pass: what it answered meanwhile (b"" if nothing yet: the caller reads what is left)."""
    started = time.monotonic()
    for byte in data:
        try:
            sock.sendall(bytes([byte]))
        except OSError:
            break
        sock.setblocking(False)
        try:
            answer = sock.recv(4096)
            if answer:
                return answer
        except BlockingIOError:
            pass
        finally:
            sock.setblocking(True)
        if time.monotonic() - started > limit:
            break
        time.sleep(0.1)  # the pace of the slow sender, not a wait for a condition
    return b""


def ask(address: Address, data: bytes, limit: float = 10.0) -> bytes:
    """Send ``data``, return the head of the server's answer (or what it sent before closing);
    AssertionError if none comes within ``limit`` seconds. (The server may go on reading, and
    discarding, a refused body for a while, as aiohttp's lingering close does.)"""
    with socket.create_connection(address, timeout=limit) as s:
        s.sendall(data)
        return answer_head(s, limit)


def answer_head(s: socket.socket, limit: float = 10.0) -> bytes:
    """The head of the server's answer on ``s`` (or what it sent before closing)."""
    answer = b""
    s.settimeout(limit)
    try:
        while b"\r\n\r\n" not in answer and (chunk := s.recv(65536)):
            answer += chunk
    except TimeoutError:
        raise AssertionError(f"no answer within {limit:g} s") from None
    except OSError:
        pass  # reset by the server
    return answer


def huge_claims_are_refused(address: Address, head: bytes, limit: int, serve: Callable[[], None]) -> None:
    """Requests (``head``: the request line and headers but the length and the empty line)
    claiming 10**12 or 2**63-1 bytes are refused at once with 413 (or 400), unread; a chunk
    size of 2**63-1 is refused once ``limit`` bytes have come, and one overflowing 64 bits at
    once; the peak memory grows by no more than the limit lets in; the server goes on."""
    before = vm_hwm()
    for length in (10**12, 2**63 - 1, 2**64 + 1):
        started = time.monotonic()
        answer = ask(address, head + b"Content-Length: %d\r\n\r\n" % length)
        took = time.monotonic() - started
        assert answer.startswith((b"HTTP/1.1 413", b"HTTP/1.0 413", b"HTTP/1.1 400", b"HTTP/1.0 400")), (
            f"Content-Length {length}: {answer[:200]!r}")
        assert took < 5, f"Content-Length {length}: answered after {took:.2f} s"
        assert b"Traceback" not in answer
    answer = ask(address, head + b"Transfer-Encoding: chunked\r\n\r\nffffffffffffffffffffffff\r\nx")
    assert answer.startswith((b"HTTP/1.1 400", b"HTTP/1.0 400", b"HTTP/1.1 413", b"HTTP/1.0 413")), answer[:200]
    # a chunk claiming 2**63-1 bytes, its bytes streamed until the server stops it
    sent = 0
    with socket.create_connection(address, timeout=10) as s:
        s.sendall(head + b"Transfer-Encoding: chunked\r\n\r\n7fffffffffffffff\r\n")
        block = b"7" * 65536
        try:
            while sent < 64 * limit:
                s.sendall(block)
                sent += len(block)
                s.setblocking(False)
                try:
                    if s.recv(1, socket.MSG_PEEK):
                        break  # answered
                except BlockingIOError:
                    pass
                finally:
                    s.setblocking(True)
        except OSError:
            pass  # closed by the server
        answer = answer_head(s)
    assert sent < 16 * limit + (4 << 20), f"{sent} bytes were taken of a body over the limit of {limit}"
    assert answer == b"" or answer.startswith((b"HTTP/1.1 413", b"HTTP/1.0 413")), answer[:200]
    grown = vm_hwm() - before
    print(f"peak memory grew by {grown >> 10} KiB; {sent >> 10} KiB of the huge chunk taken")
    # at most what the limit lets in (buffered until it is passed), never what was claimed
    assert grown < limit + (48 << 20), f"the peak memory grew by {grown >> 20} MiB (the limit is {limit >> 10} KiB)"
    serve()


def many_idle_connections_do_not_lock_out(address: Address, serve: Callable[[], None],
                                          open_connections: Callable[[], int], count: int = 400) -> None:
    """``count`` idle connections held at once: others are served meanwhile, and once they
    close the server has let them all go and goes on."""
    held = []
    try:
        for _ in range(count):
            held.append(socket.create_connection(address, timeout=10))
        wait_for(lambda: open_connections() >= count, f"the server to hold {count} connections", timeout=30)
        started = time.monotonic()
        serve()
        print(f"served in {time.monotonic() - started:.3f} s while {count} idle connections were open")
    finally:
        for s in held:
            s.close()
    wait_for(lambda: open_connections() == 0, "the server to let the idle connections go", timeout=30)
    serve()


def reset(sock: socket.socket) -> None:
    """Close ``sock`` with a TCP reset (SO_LINGER 0)."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def resets_leave_no_traceback(address: Address, head: bytes, serve: Callable[[], None],
                              open_connections: Callable[[], int], caplog: pytest.LogCaptureFixture) -> None:
    """Clients resetting the connection in the middle of the headers, of a body, and of a
    malformed request leave the server serving, with no ERROR record (no traceback)."""
    caplog.set_level(logging.DEBUG)
    held_open = [head[: len(head) // 2],  # the server waits for the rest of these
                 head + b"Content-Length: 1000\r\n\r\n" + b"<" * 100,
                 head + b"Transfer-Encoding: chunked\r\n\r\n10\r\n0123"]
    malformed = [b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
                 b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(range(64))]  # a TLS hello
    for data in held_open + malformed:
        s = socket.create_connection(address, timeout=10)
        s.sendall(data)
        if data in held_open:
            wait_for(lambda: open_connections() >= 1, "the server to take the connection", timeout=10)
        reset(s)
        wait_for(lambda: open_connections() == 0, "the server to let the reset connection go", timeout=10)
    serve()
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert not errors, [f"{r.name}: {r.getMessage()}" for r in errors]
    shown = [r for r in caplog.records if r.exc_info and r.levelno >= logging.INFO]
    assert not shown, [f"{r.name}: {r.getMessage()}" for r in shown]


def connections_over_the_limit_are_refused(address: Address, request: bytes, serve: Callable[[], None],
                                           open_connections: Callable[[], int], maximum: int,
                                           caplog: pytest.LogCaptureFixture) -> None:
    """``maximum`` idle connections held (the server's ``max_connections``): each new one is
    answered 503 and closed at once, with one WARNING line for all of them (not one each); a
    held connection still gets its ``request`` answered; once some close, new clients are
    served again."""
    caplog.set_level(logging.INFO)
    held = []
    try:
        for _ in range(maximum):
            held.append(socket.create_connection(address, timeout=10))
        wait_for(lambda: open_connections() >= maximum, f"the server to hold {maximum} connections", timeout=30)
        refusals = 20
        slowest = 0.0
        for _ in range(refusals):
            with socket.create_connection(address, timeout=10) as extra:
                took, answer = closed_after(extra, 5)
            slowest = max(slowest, took)
            assert answer.startswith(b"HTTP/1.1 503"), answer[:200]
            assert b"max_connections" in answer, answer
        print(f"{refusals} connections over the limit of {maximum} refused, the slowest in {slowest:.3f} s")
        assert open_connections() == maximum
        held[0].sendall(request)  # a connection held all along is served as ever
        answer = answer_head(held[0])
        assert answer.startswith(b"HTTP/1.1 2"), answer[:200]
        for s in held[: maximum // 2]:
            s.close()
        del held[: maximum // 2]
        wait_for(lambda: open_connections() <= maximum - maximum // 2, "the server to let connections go",
                 timeout=30)
        serve()
    finally:
        for s in held:
            s.close()
    reports = [r for r in caplog.records if "a new connection refused" in r.getMessage()]
    assert 1 <= len(reports) <= 2, [r.getMessage() for r in reports]  # a second one if 10 s went by
    assert all(r.levelno == logging.WARNING and r.exc_info is None for r in reports)
    assert f"{maximum} connections are open" in reports[0].getMessage(), reports[0].getMessage()
