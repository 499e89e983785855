"""``coupler xml decode --record-path ROOT/ELEMENT --jobs N``: the files cut at record
boundaries (the planner of Spark's xml source) and decoded by N worker processes give the
records, their order, the Avro file's blocks and the errors of ``--jobs 1``; a worker that
dies ends the command with one line, without hanging."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import fastavro
import pytest

from coupler.bus.cli.main import main
from coupler.translators.xml import parallel
from coupler.translators.xml.splits import plan_xml_splits

ROOT = Path(__file__).resolve().parents[3]
FATTURA = Path(__file__).parent / "corpus" / "fatturapa"
FATTURA_XSD = FATTURA / "Schema_del_file_xml_FatturaPA_versione_1.2.xsd"
FATTURA_DOC = FATTURA / "IT01234567890_FPA03.xml"  # an official sample invoice of two bodies
FATTURA_PATH = "FatturaElettronica/FatturaElettronicaBody"
ORDERS_XSD = Path(__file__).parent / "data" / "orders" / "orders.xsd"
sys.path.insert(0, str(ROOT / "benchmarks"))
from xml_translate import HEAD, TAIL, order  # noqa: E402  (the benchmark's generator)

TINY = "0.001"  # --split-size-mb: about 1 KB, so that small files are cut into several parts


@pytest.fixture(params=["fork", "forkserver"])
def start_method(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both ways the workers start: copies of a one-thread process (the command line's case),
    and from the fork server (a process running other threads)."""
    import multiprocessing

    monkeypatch.setattr(parallel, "_context", lambda: multiprocessing.get_context(request.param))
    return str(request.param)


def _decode(capsys: pytest.CaptureFixture[str], *args: Any) -> tuple[int, str]:
    code = main(["xml", "decode", *map(str, args), "--no-progress"])
    return code, capsys.readouterr().err


def _without_sync(path: Path) -> bytes:
    """The file's bytes without its sync marker (random, written after the header and after
    every block: the file's last 16 bytes)."""
    data = path.read_bytes()
    return data.replace(data[-16:], b"")


def _orders(path: Path, count: int, bad: int | None = None, how: str = "value") -> Path:
    body = [order(n) for n in range(count)]
    if bad is not None:
        if how == "value":
            body[bad] = body[bad].replace("<quantity>2</quantity>", "<quantity>two</quantity>", 1)
        else:  # not well-formed
            body[bad] = body[bad].replace("</sku>", "</skux>", 1)
        assert body[bad] != order(bad)
    path.write_text(HEAD + "".join(body) + TAIL, encoding="utf-8")
    return path


def test_a_real_world_file_cut_in_parts_gives_the_records_of_one_process(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], start_method: str,
) -> None:
    # the planner cuts the invoice between its two bodies at this split size
    assert len(plan_xml_splits([str(FATTURA_DOC)], "FatturaElettronicaBody", split_bytes=1048, slots=2)) == 2
    out = {}
    for jobs in ("1", "2"):
        for to in ("avro", "jsonl"):
            out[jobs, to] = tmp_path / f"jobs{jobs}.{to}"
            code, err = _decode(capsys, FATTURA_XSD, FATTURA_DOC, "--record-path", FATTURA_PATH, "--to", to,
                                "--output", out[jobs, to], "--jobs", jobs, "--split-size-mb", TINY)
            assert (code, err) == (0, "")
    assert out["2", "jsonl"].read_bytes() == out["1", "jsonl"].read_bytes()
    assert len(out["1", "jsonl"].read_text().splitlines()) == 2
    # the same Avro records, in blocks cut alike: the same bytes but for the random sync marker
    with out["1", "avro"].open("rb") as one, out["2", "avro"].open("rb") as two:
        assert list(fastavro.reader(two)) == list(fastavro.reader(one))
    assert _without_sync(out["2", "avro"]) == _without_sync(out["1", "avro"])


def test_many_parts_and_files_keep_the_order_and_the_avro_blocks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], start_method: str,
) -> None:
    first, second = _orders(tmp_path / "a.xml", 700), _orders(tmp_path / "b.xml", 300)
    assert len(plan_xml_splits([str(first), str(second)], "order", split_bytes=64 * 1024, slots=2)) > 10
    out = {}
    for jobs in ("1", "2", "3"):
        out[jobs] = tmp_path / f"jobs{jobs}.avro"
        code, err = _decode(capsys, ORDERS_XSD, first, second, "--record-path", "orders/order", "--to", "avro",
                            "--output", out[jobs], "--jobs", jobs, "--split-size-mb", "0.0625")
        assert (code, err) == (0, "")
    with out["1"].open("rb") as fh:
        records = list(fastavro.reader(fh))
        fh.seek(0)
        blocks = [b.num_records for b in fastavro.block_reader(fh)]
    assert len(records) == 1000 and len(blocks) > 2
    assert [r["id"] for r in records] == [f"PO-{n}" for n in range(700)] + [f"PO-{n}" for n in range(300)]
    for jobs in ("2", "3"):
        with out[jobs].open("rb") as fh:
            assert [b.num_records for b in fastavro.block_reader(fh)] == blocks
        assert _without_sync(out[jobs]) == _without_sync(out["1"])


@pytest.mark.parametrize("how", ["value", "syntax"])
@pytest.mark.parametrize("to", ["jsonl", "avro"])
def test_a_bad_record_in_a_later_part_gives_the_error_of_one_process(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], start_method: str, to: str, how: str,
) -> None:
    data = _orders(tmp_path / "orders.xml", 400, bad=330, how=how)
    splits = plan_xml_splits([str(data)], "order", split_bytes=16 * 1024, slots=2)
    raw = data.read_bytes()
    assert len(splits) > 8 and raw.index(b'id="PO-330"') > splits[5].start  # the bad record is well after the start
    results = {}
    for jobs in ("1", "2"):
        output = tmp_path / f"jobs{jobs}.{to}"
        results[jobs] = (*_decode(capsys, ORDERS_XSD, data, "--record-path", "orders/order", "--to", to,
                                  "--output", output, "--jobs", jobs, "--split-size-mb", "0.015625"), output)
    (code1, err1, out1), (code2, err2, out2) = results["1"], results["2"]
    assert code1 == code2 != 0
    assert err2 == err1 and len(err1.strip().splitlines()) == 1 and str(data) in err1
    assert ("order[331]" in err1) if how == "value" else ("line" in err1)
    # neither leaves an --output file, nor its partial .part (bus/cli/outputs.py)
    assert not out1.exists() and not out2.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["orders.xml"]


def _tricky_files(tmp_path: Path) -> tuple[Path, Path]:
    """A file whose records hold ``</order> <order`` in a comment, and a plain one."""
    body = [order(n) for n in range(300)]
    for n in range(5, 300, 10):
        body[n] = body[n].replace("<status>", '<!-- </order> <order id="not-a-record"> --><status>', 1)
    tricky = tmp_path / "tricky.xml"
    tricky.write_text(HEAD + "".join(body) + TAIL, encoding="utf-8")
    return tricky, _orders(tmp_path / "plain.xml", 200)


def _same_output_with_two_jobs(tmp_path: Path, capsys: pytest.CaptureFixture[str], *files: Path) -> None:
    out = {}
    for jobs in ("1", "2"):
        out[jobs] = tmp_path / f"jobs{jobs}.jsonl"
        code, err = _decode(capsys, ORDERS_XSD, *files, "--record-path", "orders/order",
                            "--output", out[jobs], "--jobs", jobs, "--split-size-mb", "0.015625")
        assert (code, err) == (0, "")
    assert out["2"].read_bytes() == out["1"].read_bytes()
    assert len(out["1"].read_text().splitlines()) == 500


def test_a_boundary_in_a_comment_is_not_cut(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``</order> <order`` in a comment is no record boundary (xml/splits.py): the file is still
    cut, never there, and its records are those of one process."""
    tricky, plain = _tricky_files(tmp_path)
    splits = plan_xml_splits([str(tricky)], "order", split_bytes=16 * 1024, slots=2)
    raw = tricky.read_bytes()
    assert len(splits) > 3
    assert not any(b"<!-- </order>" in raw[s.start - 40 : s.start] for s in splits)
    _same_output_with_two_jobs(tmp_path, capsys, tricky, plain)


def test_a_part_cut_where_no_byte_search_can_tell_is_decoded_again_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A cut the planner cannot know is wrong (an element of the record's name nested in a
    record through ``xs:any``; here the comment check switched off to make one): the parts cut
    there are not well-formed, the command decodes that file again itself, and goes on with
    the next file in parts."""
    from coupler.translators.xml import splits as planner

    monkeypatch.setattr(planner, "_in_markup", lambda *a: False)
    tricky, plain = _tricky_files(tmp_path)
    raw = tricky.read_bytes()
    cut = plan_xml_splits([str(tricky)], "order", split_bytes=16 * 1024, slots=2)
    assert any(raw[s.start - 14 : s.start].startswith(b"<!-- </order>") for s in cut)  # cut in a comment
    _same_output_with_two_jobs(tmp_path, capsys, tricky, plain)


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry))
    return found


def test_a_killed_worker_ends_the_command_with_one_line_without_hanging(tmp_path: Path) -> None:
    data = _orders(tmp_path / "orders.xml", 12000)  # about 12 MB: seconds of work for two workers
    command = [sys.executable, "-m", "coupler.bus.cli", "xml", "decode", str(ORDERS_XSD), str(data),
               "--record-path", "orders/order", "--to", "avro", "--output", str(tmp_path / "out.avro"),
               "--jobs", "2", "--split-size-mb", "0.25", "--no-progress"]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        workers: list[int] = []
        while not workers and proc.poll() is None and time.monotonic() < deadline:
            workers = _children(proc.pid)  # the pool's workers, forked from the command
        assert workers, "no worker process started"
        os.kill(workers[0], signal.SIGKILL)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"coupler: error: {data} (bytes ") and "worker process" in lines[0]
    # the command stopped and reaped its other workers before it ended
    assert not [pid for pid in workers if Path(f"/proc/{pid}").exists()]


#: the command in a new process that prints its own peak RSS (``VmHWM``, kB: this process
#: image only, where ``ru_maxrss`` also counts the process it was started from) as it exits
_PEAK_RSS = """\
import atexit, sys
from coupler.bus.cli.main import main
atexit.register(lambda: print(next(l for l in open("/proc/self/status") if l.startswith("VmHWM")).split()[1]))
sys.exit(main(sys.argv[1:]))
"""


def _peak_rss_mb(tmp_path: Path, data: Path) -> float:
    """The command's own peak RSS (MB) decoding ``data`` with two workers, 1 MB parts."""
    out = tmp_path / f"{data.stem}.avro"
    done = subprocess.run([sys.executable, "-c", _PEAK_RSS, "xml", "decode", str(ORDERS_XSD), str(data),
                           "--record-path", "orders/order", "--to", "avro", "--output", str(out), "--jobs", "2",
                           "--split-size-mb", "1", "--no-progress"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    with out.open("rb") as fh:  # every record written
        assert sum(b.num_records for b in fastavro.block_reader(fh)) == int(data.stem.split("-")[1])
    return int(done.stdout.split()[-1]) / 1024


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the peak RSS from Linux's /proc")
def test_the_commands_peak_memory_does_not_grow_with_the_file(tmp_path: Path) -> None:
    # orders of ~64 KB each (a long description: little to decode, many bytes): 1,000 of
    # them are a 64 MB file, 64 a 4 MB one. Planning the parts searches the whole file
    # through a memory map, whose pages count in the RSS while mapped: the peak was the file's
    # size above the small file's (+62 MB); the results waiting to be written are a few parts.
    text = "x" * 64_000
    for count in (64, 1000):
        body = "".join(order(n).replace("<description>Item 1 ", f"<description>{text} Item 1 ", 1)
                       for n in range(count))
        (tmp_path / f"orders-{count}.xml").write_text(HEAD + body + TAIL, encoding="utf-8")
    small = _peak_rss_mb(tmp_path, tmp_path / "orders-64.xml")
    large = _peak_rss_mb(tmp_path, tmp_path / "orders-1000.xml")
    assert (tmp_path / "orders-1000.xml").stat().st_size > 60e6
    assert large - small < 24, f"peak RSS {large:.0f} MB for 64 MB, {small:.0f} MB for 4 MB"


def test_the_progress_bar_follows_the_parts_written(tmp_path: Path) -> None:
    from tests.terminal import coupler_on_a_terminal

    data = _orders(tmp_path / "orders.xml", 300)
    args = ["xml", "decode", str(ORDERS_XSD), str(data), "--record-path", "orders/order", "--output",
            str(tmp_path / "out.jsonl"), "--jobs", "2", "--split-size-mb", "0.03125"]
    run = coupler_on_a_terminal(args)
    assert run.returncode == 0, run.shown
    assert len((tmp_path / "out.jsonl").read_text().splitlines()) == 300
    assert "100.0% 300 records" in run.shown and "[" + "#" * 30 + "]" in run.shown, run.shown
    quiet = coupler_on_a_terminal([*args, "--no-progress"])
    assert quiet.returncode == 0 and "records" not in quiet.shown


def test_jobs_must_be_one_or_more(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _decode(capsys, ORDERS_XSD, _orders(tmp_path / "o.xml", 3), "--record-path", "orders/order",
                        "--jobs", "0")
    assert code == 2 and "--jobs must be 1 or more" in err


def _a_large_result(size: int) -> bytes:
    return b"x" * size


def _writing_a_pipe(pid: int) -> bool:
    """Whether process ``pid`` waits inside a write to a pipe (its kernel wait channel)."""
    with open(f"/proc/{pid}/wchan") as wchan:
        return wchan.read().endswith("pipe_write")  # pipe_write, anon_pipe_write


def test_workers_stopped_while_one_writes_its_result_do_not_hang_the_command() -> None:
    """SIGTERM or an error stops the workers (``parallel._stop``): one ended in the middle of
    writing its split's result left part of a message in the pool's result pipe, and the thread
    reading it waited for the rest for ever, so ``shutdown`` (and the interpreter's exit) never
    returned: the command hung after SIGTERM (a fresh clone, both `xml decode --jobs 2` cases)."""
    import multiprocessing
    import threading
    from concurrent.futures import ProcessPoolExecutor

    for _ in range(20):  # until a worker is caught writing (a 256 MB result through a 64 kB pipe)
        pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork"))
        future = pool.submit(_a_large_result, 256 << 20)
        worker = next(iter(pool._processes))  # type: ignore[attr-defined]
        deadline = time.monotonic() + 30
        while not future.done() and not _writing_a_pipe(worker) and time.monotonic() < deadline:
            time.sleep(0.0002)
        caught = not future.done()
        parallel._stop(pool)
        ended = threading.Thread(target=pool.shutdown, kwargs={"wait": True, "cancel_futures": True}, daemon=True)
        ended.start()
        ended.join(30)
        assert not ended.is_alive(), "the pool's shutdown hung after its worker was stopped mid-write"
        if caught:
            return
    pytest.fail("no worker was caught in the middle of writing its result in 20 tries")
