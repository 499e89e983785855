"""The daemon's control endpoint under random requests: raw bytes, JSON of the wrong shape,
nesting deep enough to exhaust the parser, every operation with arguments of random names,
types and sizes. Each request is answered with one line of JSON; a refusal is one line naming
what was wrong, never an internal error; a connection held open without a request does not
stop others; the daemon answers ``status`` afterwards. Bounded by time; the seed is printed
and ``COUPLER_FUZZ_SEED=N`` replays it."""

from __future__ import annotations

import json
import random
import socket
import time
from pathlib import Path
from typing import Any

from coupler.bus.runtime.control import ControlClient, ControlService
from tests.bus.site_helpers import running_daemon, write_site
from tests.fuzzing import BUDGET, SEED, bounded

#: every operation of a running daemon but ``stop`` (which would end the run early)
#: (``dlq_list`` is ``dlq.list``: the endpoint reads either)
OPS = sorted(name[3:] for name in dir(ControlService) if name.startswith("op_") and name != "op_stop")
ARG_NAMES = ["channel", "envelopes", "skip_put", "max", "wait", "peek", "id", "queue", "kind", "limit", "body",
             "query", "route", "step", "key", "adapter", "target", "timeout", "on", "envelope", "name", "args", "x",
             "command", "document", "operation", "payload"]


#: what the fuzzing found, asked first on every run
REGRESSIONS = [
    b'{"op": "dlq_list", "args": {"limit": {"timeout": ["x"]}}}\n',  # a dict reached SQLite
    b'{"op": "dlq_show", "args": {"id": 1000000000000000000000000000000}}\n',  # beyond SQLite's INTEGER
    b"[" * 200_000 + b"]" * 200_000 + b"\n",  # a RecursionError in the JSON parser
    b'{"op": "status", "args": []}\n',
]


def _value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(9 if depth < 2 else 6)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([True, False])
    if kind == 2:
        return rng.choice([0, -1, 1, 2**31, -(2**63), 10**30, rng.randrange(-1000, 1000)])
    if kind == 3:
        return rng.choice([0.0, -0.5, 1e308, float("nan"), float("inf"), rng.random()])
    if kind == 4:
        return rng.choice(["", "q", "orders", "x" * 5000, "\x00\n\ud7ff", "../../etc/passwd", "AAAA====", "e30="])
    if kind == 5:
        return "".join(chr(rng.randrange(1, 0x2FF)) for _ in range(rng.randrange(40)))
    if kind == 6:
        return [_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    if kind == 7:
        return {rng.choice(ARG_NAMES): _value(rng, depth + 1) for _ in range(rng.randrange(4))}
    return [rng.choice(OPS)]


def _request(rng: random.Random) -> bytes:
    """One request line: mostly an operation with random arguments, else a malformed line."""
    shape = rng.randrange(10)
    if shape == 0:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200))).replace(b"\n", b"") + b"\n"
    if shape == 1:
        depth = rng.choice([50, 5_000, 200_000])
        return (b"[" * depth + b"]" * depth if rng.random() < 0.5 else b'{"a":' * depth + b"1" + b"}" * depth) + b"\n"
    if shape == 2:
        return json.dumps(rng.choice([[], 1, "status", None, {"args": {}}, {"op": 5}, {"op": "status", "args": []}])).encode() + b"\n"
    args = {rng.choice(ARG_NAMES): _value(rng) for _ in range(rng.randrange(5))}
    for slow in ("wait", "timeout"):  # a client may ask the daemon to wait: not for long here
        if slow in args:
            args[slow] = rng.choice([0, 0.05])
    return json.dumps({"op": rng.choice(OPS), "args": args}).encode() + b"\n"


def _ask(path: Path, line: bytes) -> bytes:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(30)
        sock.connect(str(path))
        sock.sendall(line)
        with sock.makefile("rb") as f:
            return f.readline()


def test_random_control_requests_get_one_line_answers_and_the_daemon_goes_on(tmp_path: Path) -> None:
    print(f"COUPLER_FUZZ_SEED={SEED}")
    rng = random.Random(SEED)
    with running_daemon(write_site(tmp_path, "")) as d:
        path = d.site.control_socket
        idle = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)  # held open, never asks
        idle.connect(str(path))
        idle.sendall(b'{"op": "sta')
        try:
            deadline, count = time.monotonic() + BUDGET, 0
            regressions = iter(REGRESSIONS)
            while time.monotonic() < deadline or count < len(REGRESSIONS):
                line = next(regressions, None) or _request(rng)
                count += 1
                place = f"request {count} {line[:120]!r} (COUPLER_FUZZ_SEED={SEED})"
                with bounded(place, seconds=30):
                    answer_line = _ask(path, line)
                assert answer_line.endswith(b"\n") and answer_line.count(b"\n") == 1, place
                answer = json.loads(answer_line)
                assert isinstance(answer.get("ok"), bool), place
                if not answer["ok"]:
                    error = answer["error"]
                    assert isinstance(error, str) and error and "\n" not in error, place
                    assert "Traceback" not in error and not error.startswith("internal error"), f"{place}: {error}"
            assert count > 20, f"only {count} requests in {BUDGET} s"
            status = ControlClient(path).call("status")
            assert status["state"] == "running"
        finally:
            idle.close()
