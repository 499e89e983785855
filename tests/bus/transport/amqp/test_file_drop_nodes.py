"""Two daemons of a multi-node site polling one drop directory through the shared
PostgreSQL seen-state: each file is taken once; a daemon killed in the middle of a file
leaves it to the other."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

from coupler.adapters.common.inbound import PollResult
from coupler.bus.api import DONE, PROCESSING, FileKey
from coupler.canonical import Envelope
from tests.bus.transport.amqp.filedrop_node import CHANNEL, Node

ROOT = Path(__file__).resolve().parents[4]


def _drain(node: Node) -> list[Envelope]:
    out: list[Envelope] = []
    while batch := node.transport.receive(CHANNEL, "test", max=100):
        node.transport.ack(batch)
        out.extend(d.envelope for d in batch)
    return out


def test_two_daemons_polling_one_directory_take_each_file_once(broker_names: dict[str, str], tmp_path: Path) -> None:
    drop = tmp_path / "drop"
    drop.mkdir()
    files = {f"f{i:02d}.txt": [f"f{i:02d}-{j}".encode() for j in range(3)] for i in range(40)}
    for name, lines in files.items():
        (drop / name).write_bytes(b"\n".join(lines) + b"\n")
    nodes = [Node(broker_names, tmp_path / "host-a", drop), Node(broker_names, tmp_path / "host-b", drop)]
    results: dict[int, PollResult] = {0: PollResult(), 1: PollResult()}
    barrier = threading.Barrier(2)

    def poll(i: int) -> None:
        barrier.wait()
        pipeline = nodes[i].adapter.pipeline
        for _ in range(200):  # a poll takes at most 3 files: both daemons see every file listed
            r = pipeline.poll(3)
            for k in ("done", "failed", "errors", "messages"):
                setattr(results[i], k, getattr(results[i], k) + getattr(r, k))
            if not any(p.is_file() for p in drop.iterdir()):
                return

    threads = [threading.Thread(target=poll, args=(i,)) for i in range(2)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        msgs = _drain(nodes[0])
        counts = nodes[0].adapter.state.counts()
    finally:
        for n in nodes:
            n.close()
    assert sorted(p.name for p in (drop / "archive").iterdir()) == sorted(files)
    assert not any(p.is_file() for p in drop.iterdir())
    bodies = Counter(m.body for m in msgs)
    assert bodies == Counter(line for lines in files.values() for line in lines)  # each line once
    assert results[0].done + results[1].done == len(files)
    assert results[0].messages + results[1].messages == 3 * len(files)
    assert results[0].errors == results[1].errors == 0
    assert results[0].failed == results[1].failed == 0
    assert counts == {DONE: len(files)}  # one shared seen-state


def test_a_killed_daemons_file_is_taken_over_and_resumed(broker_names: dict[str, str], tmp_path: Path) -> None:
    drop = tmp_path / "drop"
    drop.mkdir()
    lines = [b"line-%d" % i for i in range(6)]
    (drop / "f.txt").write_bytes(b"\n".join(lines) + b"\n")
    proc = subprocess.run(
        [sys.executable, "-m", "tests.bus.transport.amqp.filedrop_node", broker_names["prefix"], broker_names["postgres_schema"],
         str(tmp_path / "host-a"), str(drop), "1.0", "3"],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, timeout=120,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()[-2000:]
    survivor = Node(broker_names, tmp_path / "host-b", drop)
    try:
        stat = (drop / "f.txt").stat()
        key = FileKey("f.txt", stat.st_size, stat.st_mtime_ns)
        left = survivor.adapter.state.get(key)
        # killed after its 3rd publish, inside the file's first batch of records: no progress
        # recorded, the row still claimed
        assert left is not None and (left.state, left.published) == (PROCESSING, 0)
        deadline = time.monotonic() + 60
        while (drop / "f.txt").exists():  # the dead daemon's lease (1 s) runs out, then it is ours
            assert time.monotonic() < deadline, "the file of the killed daemon was never taken over"
            survivor.adapter.pipeline.poll()
            time.sleep(0.1)
        msgs = _drain(survivor)
        record = survivor.adapter.state.get(key)
    finally:
        survivor.close()
    assert (drop / "archive" / "f.txt").exists()
    assert record is not None and (record.state, record.published) == (DONE, 6)
    # nothing lost; the 3 messages of the cut batch may come twice, with the same ids
    # (Idempotent Receiver)
    assert {m.body for m in msgs} == set(lines)
    assert len({m.message_id for m in msgs}) == len(lines)
    assert len(msgs) <= len(lines) + 3
