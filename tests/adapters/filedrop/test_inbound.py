"""File drop inbound against a real directory and the real embedded store."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from coupler.adapters.common.errors import AdapterConfigError
from coupler.adapters.filedrop import FileDropAdapter
from coupler.bus.api import OptionsError
from coupler.canonical import FormatIndicator
from tests.bus.site_helpers import wait_for

from ..filebus import Bus, adapter


def make(bus: Bus, drop: Path, **options):
    opts = {"directory": str(drop), "stable_seconds": 0, "autopoll": False, **options}
    a = adapter(FileDropAdapter, "drop", opts, bus.context("drop"), format=FormatIndicator.parse("acme.Order@1"),
                direction="inbound")
    return a


def started(a):
    a.start()
    return a


def test_whole_file_archived_and_taken_once(bus: Bus, tmp_path: Path) -> None:
    drop = tmp_path / "drop"
    drop.mkdir()
    (drop / "a.txt").write_bytes(b"alpha")
    (drop / ".hidden").write_bytes(b"no")
    (drop / "b.tmp").write_bytes(b"excluded")
    a = started(make(bus, drop, exclude=["*.tmp"]))
    try:
        result = a.pipeline.poll()
        assert (result.done, result.messages) == (1, 1)
        [msg] = bus.drain()
        assert msg.body == b"alpha"
        assert msg.format == FormatIndicator("acme.Order", 1, "application/octet-stream")
        assert msg.properties["file.name"] == "a.txt"
        assert (drop / "archive" / "a.txt").read_bytes() == b"alpha"
        assert not (drop / "a.txt").exists()
        assert (drop / ".hidden").exists() and (drop / "b.tmp").exists()
        assert a.pipeline.poll().taken == 0
        assert bus.drain() == []
    finally:
        a.stop()


def test_restart_neither_loses_nor_repeats_and_changed_file_taken_again(bus: Bus, tmp_path: Path) -> None:
    drop = tmp_path / "drop"
    drop.mkdir()
    (drop / "x.txt").write_bytes(b"one")
    a = started(make(bus, drop, after="keep"))
    a.pipeline.poll()
    a.stop()
    assert [m.body for m in bus.drain()] == [b"one"]
    b = started(make(bus, drop, after="keep"))  # a restart: same data dir, file still there
    try:
        assert b.pipeline.poll().messages == 0
        assert bus.drain() == []
        (drop / "x.txt").write_bytes(b"one, changed")
        os.utime(drop / "x.txt", ns=(1, 1_000_000_000))
        assert b.pipeline.poll().messages == 1
        assert [m.body for m in bus.drain()] == [b"one, changed"]
    finally:
        b.stop()


def test_slow_writer_is_not_taken_while_growing(bus: Bus, tmp_path: Path) -> None:
    drop = tmp_path / "drop"
    drop.mkdir()
    a = started(make(bus, drop, stable_seconds=0.6))
    stop = threading.Event()
    writes = []

    def writer() -> None:
        with open(drop / "slow.dat", "wb") as f:
            for i in range(12):
                f.write(b"%03d\n" % i)
                f.flush()
                writes.append(i)
                time.sleep(0.1)
        stop.set()

    t = threading.Thread(target=writer)
    t.start()
    try:
        while not stop.is_set():
            assert a.pipeline.poll().taken == 0, "a file still being written was taken"
            time.sleep(0.05)
        t.join()
        deadline = time.monotonic() + 10
        while a.pipeline.poll().taken == 0 and time.monotonic() < deadline:
            time.sleep(0.1)
        [msg] = bus.drain()
        assert msg.body == b"".join(b"%03d\n" % i for i in range(12))
    finally:
        t.join()
        a.stop()


def test_done_file_marks_readiness(bus: Bus, tmp_path: Path) -> None:
    drop = tmp_path / "drop"
    drop.mkdir()
    (drop / "orders.csv").write_bytes(b"1\n2\n3\n")
    a = started(make(bus, drop, done_suffix=".done", payload="lines", stable_seconds=3600))
    try:
        assert a.pipeline.poll().taken == 0
        (drop / "orders.csv.done").touch()
        result = a.pipeline.poll()
        assert (result.done, result.messages) == (1, 3)
        msgs = bus.drain()
        assert [m.body for m in msgs] == [b"1", b"2", b"3"]
        assert [m.sequence.position for m in msgs] == [0, 1, 2]
        assert [m.sequence.end for m in msgs] == [False, False, True]
        assert len({m.sequence.id for m in msgs}) == 1
        assert not (drop / "orders.csv.done").exists()
        assert (drop / "archive" / "orders.csv").exists()
    finally:
        a.stop()


def test_bad_file_goes_to_error_with_reason_and_publishes_nothing(bus: Bus, tmp_path: Path) -> None:
    drop = tmp_path / "drop"
    drop.mkdir()
    (drop / "recs.dat").write_bytes(b"AAAABBBBCC")  # 2.5 records of 4 bytes
    (drop / "good.dat").write_bytes(b"AAAABBBB")
    a = started(make(bus, drop, payload="fixed", record_length=4))
    try:
        result = a.pipeline.poll()
        assert (result.done, result.failed) == (1, 1)
        assert [m.body for m in bus.drain()] == [b"AAAA", b"BBBB"]
        assert (drop / "error" / "recs.dat").read_bytes() == b"AAAABBBBCC"
        reason = (drop / "error" / "recs.dat.reason").read_text()
        assert "byte 8" in reason and "2 of 4 bytes" in reason
    finally:
        a.stop()


def test_name_clash_in_archive_does_not_stop_the_adapter(bus: Bus, tmp_path: Path) -> None:
    drop = tmp_path / "drop"
    (drop / "archive").mkdir(parents=True)
    (drop / "archive" / "r.txt").write_bytes(b"older")
    (drop / "r.txt").write_bytes(b"newer")
    a = started(make(bus, drop, archive_dated=False))
    try:
        assert a.pipeline.poll().done == 1
        assert (drop / "archive" / "r.txt").read_bytes() == b"older"
        assert (drop / "archive" / "r-1.txt").read_bytes() == b"newer"
    finally:
        a.stop()


def test_recursion_order_and_max_files(bus: Bus, tmp_path: Path) -> None:
    drop = tmp_path / "drop"
    (drop / "sub").mkdir(parents=True)
    for i, name in enumerate(["c.txt", "a.txt", "sub/b.txt"]):
        (drop / name).write_bytes(name.encode())
        os.utime(drop / name, ns=(1, (10 - i) * 1_000_000_000))
    a = started(make(bus, drop, recursive=True, include=["*.txt"], max_files_per_poll=2, order="mtime", after="delete"))
    try:
        assert a.pipeline.poll().done == 2
        assert [m.body for m in bus.drain()] == [b"sub/b.txt", b"a.txt"]
        assert a.pipeline.poll().done == 1
        assert [m.body for m in bus.drain()] == [b"c.txt"]
        assert sorted(p.name for p in drop.rglob("*") if p.is_file()) == []
    finally:
        a.stop()


def test_large_whole_file_goes_through_a_claim_check(bus: Bus, tmp_path: Path) -> None:
    drop = tmp_path / "drop"
    drop.mkdir()
    data = os.urandom(300_000)
    (drop / "big.bin").write_bytes(data)
    a = started(make(bus, drop, claim_check_bytes=100_000))
    try:
        a.pipeline.poll()
        [msg] = bus.drain()
        assert msg.body == b""
        assert Path(msg.properties["coupler.claim-file"]).read_bytes() == data
        assert msg.properties["coupler.claim-size"] == "300000"
    finally:
        a.stop()


def test_files_over_the_batch_threshold_are_staged_for_the_batch_job(bus: Bus, tmp_path: Path) -> None:
    drop = tmp_path / "drop"
    drop.mkdir()
    (drop / "small.dat").write_bytes(b"AAAA")
    (drop / "huge.dat").write_bytes(b"B" * 4000)
    a = started(make(bus, drop, payload="fixed", record_length=4, batch_threshold_bytes=1000, batch_dir=str(tmp_path / "batch")))
    try:
        result = a.pipeline.poll()
        assert (result.done, result.staged) == (1, 1)
        msgs = bus.drain()
        staged = [m for m in msgs if m.kind == "event"]
        assert len(staged) == 1 and len(msgs) == 2
        path = Path(staged[0].properties["batch.path"])
        assert path.parent == tmp_path / "batch" and path.read_bytes() == b"B" * 4000
        assert a.state.counts() == {"DONE": 1, "STAGED": 1}
    finally:
        a.stop()


def test_xml_repeated_element_one_message_each(bus: Bus, tmp_path: Path) -> None:
    drop = tmp_path / "drop"
    drop.mkdir()
    (drop / "o.xml").write_bytes(b"<orders><order id='1'><q>2</q></order><order id='2'/></orders>")
    a = started(make(bus, drop, payload="xml", element="order"))
    try:
        a.pipeline.poll()
        assert [m.body for m in bus.drain()] == [b'<order id="1"><q>2</q></order>', b'<order id="2"/>']
    finally:
        a.stop()


def test_poller_thread_takes_files_and_stops(bus: Bus, tmp_path: Path) -> None:
    drop = tmp_path / "drop"
    drop.mkdir()
    a = make(bus, drop, autopoll=True, poll_interval=0.05, max_poll_interval=0.2)
    a.start()
    try:
        # dropped whole (stable_seconds = 0 takes a file as it is listed: one being written
        # would be taken at the size it had, then again once it changed)
        (drop / ".t.txt").write_bytes(b"threaded")
        (drop / ".t.txt").rename(drop / "t.txt")
        deadline = time.monotonic() + 10
        msgs = []
        while not msgs and time.monotonic() < deadline:
            msgs = bus.drain()
            time.sleep(0.05)
        assert [m.body for m in msgs] == [b"threaded"]
        # the message is on the bus before the file is archived and marked DONE, and before the
        # poll that took it is counted: wait for those
        described = wait_for(lambda: (d := a.describe())["files"] == {"DONE": 1} and d["health"]["poll"]["polls"] >= 1
                             and d, "the file DONE and its poll counted", timeout=10)
        assert described["health"]["status"] == "ok" and not described["health"]["poll"]["poll_overdue"]
    finally:
        a.stop()


def test_unknown_option_and_a_direction_option_are_errors(bus: Bus, tmp_path: Path) -> None:
    with pytest.raises(OptionsError) as info:
        FileDropAdapter("drop", {"directory": str(tmp_path), "stable_secs": 1, "after": "move", "chmod": "rw"},
                        bus.context("drop"))
    assert sorted(str(p) for p in info.value.problems) == [
        "adapters[drop].options.after: 'move' is not one of archive, delete, keep",
        "adapters[drop].options.chmod: 'rw' is not a permission mode such as \"0640\"",
        "adapters[drop].options.stable_secs: unknown key (did you mean 'stable_seconds'?)",
    ]
    # the direction is the adapter's (site.toml [[adapters]] direction), not an option
    with pytest.raises(AdapterConfigError, match=r"adapters\[drop\]\.options\.direction: .*site\.toml"):
        FileDropAdapter("drop", {"directory": str(tmp_path), "direction": "inbound"}, bus.context("drop"))
    # both ways without an output directory would read its own output
    a = FileDropAdapter("drop", {"directory": str(tmp_path)}, bus.context("drop"))
    assert a.direction == "both"
    with pytest.raises(AdapterConfigError, match="output_directory"):
        a.start()


COPYBOOK = """\
       01  CUSTOMER.
           05  CUST-ID      PIC 9(4).
           05  CUST-NAME    PIC X(6).
"""


def ebcdic(text: str) -> bytes:
    return text.encode("cp037")


def test_copybook_records_one_json_message_each(bus: Bus, tmp_path: Path) -> None:
    import json

    cpy = tmp_path / "customer.cpy"
    cpy.write_text(COPYBOOK)
    drop = tmp_path / "drop"
    drop.mkdir()
    (drop / "cust.dat").write_bytes(ebcdic("0001ALICE 0002BOB   "))
    a = started(make(bus, drop, payload="copybook", copybook=str(cpy)))
    try:
        assert a.pipeline.poll().messages == 2
        msgs = bus.drain()
        assert [json.loads(m.body) for m in msgs] == [
            {"CUST_ID": 1, "CUST_NAME": "ALICE"}, {"CUST_ID": 2, "CUST_NAME": "BOB"},
        ]
        assert msgs[0].format.content_type == "application/json"
    finally:
        a.stop()


def test_files_with_names_of_any_bytes_are_taken_and_archived_under_their_own_names(bus: Bus, tmp_path: Path) -> None:
    """A Latin-1 name a legacy system wrote (not UTF-8), a newline, control characters, a
    leading dash or blank, 254 bytes: each file is taken once and archived under its own
    name; the message names it as text (bytes that are not UTF-8 as \\xNN). The seen-state
    could not record a name that is not UTF-8: the first one stopped every poll."""
    drop = tmp_path / "drop"
    drop.mkdir()
    names = {"Übersicht.dat".encode("latin-1"): "\\xdcbersicht.dat", b"new\nline.dat": "new\nline.dat",
             b"esc\x1b[31m\t.dat": "esc\x1b[31m\t.dat", b"-rf": "-rf", b" lead.dat": " lead.dat",
             "ünï€ode.dat".encode(): "ünï€ode.dat", b"x" * 250 + b".dat": "x" * 250 + ".dat"}
    for raw in names:
        with open(os.path.join(os.fsencode(drop), raw), "wb") as f:
            f.write(raw)
    a = started(make(bus, drop))
    try:
        result = a.pipeline.poll()
        assert (result.done, result.errors, result.failed) == (len(names), 0, 0)
        assert sorted(m.properties["file.name"] for m in bus.drain()) == sorted(names.values())
        assert sorted(os.listdir(os.fsencode(drop / "archive"))) == sorted(names)
        assert a.pipeline.poll().taken == 0  # recorded: not taken again
    finally:
        a.stop()


def test_a_file_whose_name_is_not_utf8_and_whose_content_is_bad_goes_to_the_error_directory(bus: Bus, tmp_path: Path) -> None:
    """The reason quotes the name: the seen-state and the .reason file hold it as text (\\xNN);
    the file and its .reason are in error/ under its own bytes (the reason once failed to be
    recorded and the file was retried at every poll)."""
    drop = tmp_path / "drop"
    drop.mkdir()
    name = "Übersicht.dat".encode("latin-1")
    with open(os.path.join(os.fsencode(drop), name), "wb") as f:
        f.write(b"\xdcbersicht\n")
    a = started(make(bus, drop, payload="lines", encoding="utf-8"))
    try:
        result = a.pipeline.poll()
        assert (result.done, result.failed, result.errors) == (0, 1, 0)
        error = os.path.join(os.fsencode(drop), b"error")
        assert sorted(os.listdir(error)) == [name, name + b".reason"]
        with open(os.path.join(error, name + b".reason"), encoding="utf-8") as f:
            assert f"file: {drop}/\\xdcbersicht.dat\n" in f.read()
        assert a.pipeline.poll().taken == 0
    finally:
        a.stop()
