"""What a command leaves behind when its output cannot be written or it is stopped: the
``coupler`` process as a user runs it (``python -m coupler.bus.cli``, standard output
buffered as on a terminal's pipe, no ``PYTHONUNBUFFERED``).

* a full output (a file size limit, ``ulimit -f``, stands for a full disk: the same failed
  write, without mounting a file system) - one line naming the ``--output`` file, exit
  status 1, no file under that name and no ``.part`` beside it, an older file of that name
  left as it was;
* Ctrl-C in the middle of a decode - exit status 130, ``coupler: interrupted``, no output;
* SIGTERM in the middle of a one-shot command (``kill``, ``timeout``, systemd), with its
  workers too - as Ctrl-C, with exit status 143 and ``coupler: interrupted (SIGTERM)``;
* a reader that goes away (``coupler ... | head -1``), a standard output on a full device -
  no ``BrokenPipeError`` or ``Exception ignored`` from the interpreter;
* an ``--output`` that is a named pipe is written, not replaced by a regular file.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.bus.site_helpers import coupler_env
from tests.terminal import terminate

COPYBOOK = """       01  REC.
           05  ID    PIC 9(6).
           05  NAME  PIC X(20).
"""
XSD = """<?xml version="1.0"?>
<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema">
  <xs:element name="orders"><xs:complexType><xs:sequence>
    <xs:element name="order" maxOccurs="unbounded"><xs:complexType><xs:sequence>
      <xs:element name="id" type="xs:int"/><xs:element name="item" type="xs:string"/>
    </xs:sequence></xs:complexType></xs:element>
  </xs:sequence></xs:complexType></xs:element>
</xs:schema>
"""
#: the largest file the command may write in the full-output tests (RLIMIT_FSIZE)
LIMIT = 16 * 1024


def _env(*, unbuffered: bool = False) -> dict[str, str]:
    env = {k: v for k, v in coupler_env().items() if k != "PYTHONUNBUFFERED"}
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"
    return env


def _coupler(*args: object, cwd: Path, preexec: Callable[[], None] | None = None, stdout: Any = subprocess.PIPE,
             env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "coupler.bus.cli", *map(str, args)], cwd=cwd, env=env or _env(),
        stdout=stdout, stderr=subprocess.PIPE, text=True, preexec_fn=preexec, timeout=120,
    )


def _file_size_limit() -> None:
    """In the child: files of at most LIMIT bytes; a larger write fails with EFBIG (the
    signal it would raise ignored), as a write to a full disk fails with ENOSPC."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, LIMIT))


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("inputs")
    (root / "rec.cpy").write_text(COPYBOOK)
    names = [b"NAME%d" % (i * 7919 % 100003) for i in range(200_000)]
    (root / "big.dat").write_bytes(b"".join(b"%06d%-20s" % (i, n) for i, n in enumerate(names)))
    (root / "mid.dat").write_bytes((root / "big.dat").read_bytes()[: 26 * 5_000])
    (root / "random.dat").write_bytes(os.urandom(26 * 5_000))  # every record with a bad ID
    (root / "mid.jsonl").write_text("".join(json.dumps({"ID": i, "NAME": n.decode()}) + "\n"
                                            for i, n in enumerate(names[:5_000])))
    (root / "orders.xsd").write_text(XSD)
    orders = "".join(f"<order><id>{i}</id><item>bolt {i}</item></order>" for i in range(2_000))
    (root / "orders.xml").write_text(f"<orders>{orders}</orders>")
    (root / "orders.jsonl").write_text("".join(json.dumps({"id": i, "item": f"bolt {i}"}) + "\n"
                                               for i in range(2_000)))
    return root


ASCII = ("-o", "encoding=ascii")
#: every command that writes an --output file, with an input that makes more than LIMIT bytes
FULL: dict[str, tuple[str, ...]] = {
    "copybook decode": ("copybook", "decode", "rec.cpy", "mid.dat", *ASCII),
    "copybook decode --per-record --to avro": ("copybook", "decode", "rec.cpy", "mid.dat", *ASCII,
                                               "--per-record", "--to", "avro"),
    "copybook decode --to parquet": ("copybook", "decode", "rec.cpy", "mid.dat", *ASCII, "--to", "parquet"),
    "copybook encode": ("copybook", "encode", "rec.cpy", "mid.jsonl", *ASCII),
    "translate": ("translate", "--from", "copybook:rec.cpy", "--to", "jsonl", "mid.dat", *ASCII),
    "xml decode": ("xml", "decode", "orders.xsd", "orders.xml", "--record-path", "orders/order"),
    "xml encode": ("xml", "encode", "orders.xsd", "orders.jsonl", "--record-path", "orders/order"),
}


@pytest.mark.parametrize("argv", FULL.values(), ids=FULL.keys())
def test_a_full_output_is_one_line_and_leaves_no_partial_file(argv: tuple[str, ...], inputs: Path,
                                                              tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.write_text("the output of an earlier run\n")
    run = _coupler(*argv, "--output", out, cwd=inputs, preexec=_file_size_limit)
    assert run.returncode == 1, run.stderr
    assert run.stderr == (
        f"coupler: error: {out}: cannot write the --output file: File too large; nothing was written"
        " (a limit refuses a file this large (ulimit -f): raise it or choose another --output)\n"
    )
    assert out.read_text() == "the output of an earlier run\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no out.part


@pytest.mark.parametrize("argv", [("init", "{dir}"), ("plugin", "new", "demo", "--directory", "{dir}")],
                         ids=["init", "plugin new"])
def test_a_site_or_package_that_cannot_be_written_leaves_nothing(argv: tuple[str, ...], tmp_path: Path) -> None:
    """Else a second run, once space is freed, finds the half-written site.toml (``already
    exists``) or a non-empty package directory."""
    target = tmp_path / "new" / "thing"
    run = _coupler(*(a.format(dir=target) for a in argv), cwd=tmp_path, preexec=_file_size_limit_of(100))
    assert run.returncode == 1
    assert run.stderr.startswith("coupler: error: ") and run.stderr.count("\n") == 1, run.stderr
    assert run.stderr.endswith(": File too large; nothing was kept\n"), run.stderr
    assert list(tmp_path.iterdir()) == []


def _file_size_limit_of(limit: int) -> Callable[[], None]:
    def limited() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return limited


def test_a_full_errors_file_is_named(inputs: Path, tmp_path: Path) -> None:
    """The --errors file is written as the decoder reads: its failure is not taken for a
    failure to read the data file."""
    errors = tmp_path / "errors.jsonl"
    run = _coupler("copybook", "decode", "rec.cpy", "random.dat", *ASCII, "--per-record", "--errors", errors,
                   cwd=inputs, preexec=_file_size_limit, stdout=subprocess.DEVNULL)
    assert run.returncode == 1
    assert run.stderr == (
        f"coupler: error: {errors}: cannot write the --errors file: File too large"
        " (a limit refuses a file this large (ulimit -f): raise it or choose another --errors)\n"
    )


def test_parts_of_a_full_output_are_removed(inputs: Path, tmp_path: Path) -> None:
    out = tmp_path / "parts"
    run = _coupler("copybook", "decode", "rec.cpy", "mid.dat", *ASCII, "--to", "parquet", "--parts", "--jobs", "2",
                   "--output", out, cwd=inputs, preexec=_file_size_limit)
    assert run.returncode == 1
    assert run.stderr.startswith(f"coupler: error: {out}: cannot write the --output file: File too large;")
    assert run.stderr.count("\n") == 1
    assert not out.exists()


def test_an_output_in_a_missing_directory(inputs: Path, tmp_path: Path) -> None:
    out = tmp_path / "missing" / "out.jsonl"
    run = _coupler("copybook", "decode", "rec.cpy", "mid.dat", *ASCII, "--output", out, cwd=inputs)
    assert run.returncode == 1
    assert run.stderr == (
        f"coupler: error: {out}: cannot write the --output file: its directory {out.parent} does not exist;"
        " nothing was written (create its directory first or choose another --output)\n"
    )


def test_standard_output_on_a_full_device(inputs: Path) -> None:
    with open("/dev/full", "w") as full:
        run = _coupler("copybook", "decode", "rec.cpy", "mid.dat", *ASCII, cwd=inputs, stdout=full)
    assert run.returncode == 1
    assert run.stderr == "coupler: error: cannot write standard output: No space left on device\n"


def test_ctrl_c_in_a_decode_removes_the_partial_output(inputs: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "coupler.bus.cli", "copybook", "decode", "rec.cpy", "big.dat", *ASCII, "--per-record",
         "--output", str(out)],
        cwd=inputs, env=_env(), stderr=subprocess.PIPE, text=True,
        # Ctrl-C reaches it whatever the test's own runner ignores (a background job ignores SIGINT)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    partial = tmp_path / "out.jsonl.part"
    deadline = time.monotonic() + 60
    while not (partial.exists() and partial.stat().st_size > 0):  # decoding, its first records written
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read() if proc.stderr else ""
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert stderr == "coupler: interrupted\n"
    assert list(tmp_path.iterdir()) == []


def _big_inputs(root: Path) -> Path:
    """Inputs that take seconds to decode (made once for the SIGTERM tests): 2,000,000
    copybook records (52 MB), 300,000 XML orders (~17 MB)."""
    if not (root / "huge.dat").exists():
        with open(root / "huge.dat", "wb") as fh:
            for _ in range(10):
                fh.write((root / "big.dat").read_bytes())
        orders = "".join(f"<order><id>{i}</id><item>bolt {i}</item></order>" for i in range(300_000))
        (root / "many-orders.xml").write_text(f"<orders>{orders}</orders>")
    return root


#: one-shot commands that write --output, each with an input it takes seconds to go through
TERMINATED: dict[str, tuple[str, ...]] = {
    "copybook decode --per-record": ("copybook", "decode", "rec.cpy", "huge.dat", *ASCII, "--per-record"),
    "copybook decode --jobs 2": ("copybook", "decode", "rec.cpy", "huge.dat", *ASCII, "--jobs", "2"),
    "translate": ("translate", "--from", "copybook:rec.cpy", "--to", "jsonl", "huge.dat", *ASCII),
    "xml decode": ("xml", "decode", "orders.xsd", "many-orders.xml", "--record-path", "orders/order", "--jobs", "1"),
    "xml decode --jobs 2": ("xml", "decode", "orders.xsd", "many-orders.xml", "--record-path", "orders/order",
                            "--jobs", "2", "--split-size-mb", "1"),
}


@pytest.mark.parametrize("group", [False, True], ids=["to the command", "to its process group"])
@pytest.mark.parametrize("argv", TERMINATED.values(), ids=TERMINATED.keys())
def test_sigterm_stops_a_command_as_ctrl_c_does(argv: tuple[str, ...], group: bool, inputs: Path,
                                                tmp_path: Path) -> None:
    """``kill PID``, or systemd stopping a unit (SIGTERM to every process of it): the partial
    output removed, an earlier output kept, the workers gone, one line, exit status 143."""
    out = tmp_path / "out.jsonl"
    out.write_text("the output of an earlier run\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "coupler.bus.cli", *argv, "--output", str(out)], cwd=_big_inputs(inputs), env=_env(),
        stderr=subprocess.PIPE, text=True, start_new_session=True,  # its own process group, its workers in it
    )
    partial = tmp_path / "out.jsonl.part"
    deadline = time.monotonic() + 120
    while not (partial.exists() and partial.stat().st_size > 0):  # its first records written
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read() if proc.stderr else ""
        time.sleep(0.01)
    terminate(proc, group=group, timeout=60)
    assert out.read_text() == "the output of an earlier run\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl"]  # no out.jsonl.part
    while True:  # no worker left running (they were in its process group)
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            break
        assert time.monotonic() < deadline, "a worker of the command is still running"
        time.sleep(0.01)


def test_ctrl_c_while_the_command_starts(tmp_path: Path) -> None:
    """Ctrl-C while ``coupler --help`` loads the plugins (one that takes its time to import):
    the same line and status as in the middle of a command, not a KeyboardInterrupt traceback."""
    started = tmp_path / "importing"
    (tmp_path / "h127_slow_plugin.py").write_text(
        # short sleeps: a SIGINT that lands between the interpreter's check for signals and the
        # start of one long sleep(60) does not interrupt it (seen once under load)
        f"import pathlib, time\npathlib.Path({str(started)!r}).touch()\nfor _ in range(6000):\n    time.sleep(0.01)\n")
    env = _env()
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), env["PYTHONPATH"]])
    env["COUPLER_EXTRA_PLUGINS"] = "h127_slow_plugin"
    proc = subprocess.Popen([sys.executable, "-m", "coupler.bus.cli", "--help"], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while not started.exists():
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert (proc.returncode, stdout, stderr) == (130, "", "coupler: interrupted\n")


def _closed_pipe() -> int:
    """The write end of a pipe whose reader has gone."""
    read, write = os.pipe()
    os.close(read)
    return write


@pytest.mark.parametrize(("argv", "unbuffered"), [
    (("schema", "list"), False),
    (("copybook", "layout", "rec.cpy"), False),
    (("--help",), False),
    (("--version",), True),
], ids=["schema list", "copybook layout", "--help", "--version unbuffered"])
def test_a_reader_that_has_gone_ends_the_command_quietly(argv: tuple[str, ...], unbuffered: bool,
                                                         inputs: Path) -> None:
    """``coupler ... | grep -q X``: the reader may exit before the command writes."""
    write = _closed_pipe()
    try:
        run = _coupler(*argv, cwd=inputs, stdout=write, env=_env(unbuffered=unbuffered))
    finally:
        os.close(write)
    assert (run.returncode, run.stderr) == (0, "")


def test_a_decode_read_by_head_ends_quietly(inputs: Path) -> None:
    """``coupler copybook decode ... | head -1``."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "coupler.bus.cli", "copybook", "decode", "rec.cpy", "big.dat", *ASCII, "--per-record"],
        cwd=inputs, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    assert proc.stdout is not None
    assert json.loads(proc.stdout.readline()) == {"ID": 0, "NAME": "NAME0"}
    proc.stdout.close()
    stderr = proc.communicate(timeout=60)[1]
    assert (proc.returncode, stderr) == (0, "")


def test_an_output_that_is_a_named_pipe_is_written_not_replaced(inputs: Path, tmp_path: Path) -> None:
    """``--output /dev/stdout``, ``/dev/null`` or a FIFO: written in place (renaming a
    finished file over it would replace the device itself, ``/dev/null`` when run as root)."""
    fifo = tmp_path / "records.fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # the command's open for writing does not wait
    try:
        (tmp_path / "two.jsonl").write_text('{"ID": 1, "NAME": "A"}\n{"ID": 2, "NAME": "B"}\n')
        run = _coupler("copybook", "encode", inputs / "rec.cpy", "two.jsonl", *ASCII, "--output", fifo, cwd=tmp_path)
        assert run.returncode == 0, run.stderr
        assert stat.S_ISFIFO(fifo.stat().st_mode)
        assert os.read(reader, 1000) == b"000001A                   000002B                   "
    finally:
        os.close(reader)


def test_an_output_that_is_the_input_is_not_emptied_before_it_is_read(inputs: Path, tmp_path: Path) -> None:
    """``translate X --output X``: the input was truncated by opening the output, the run
    read 0 records and left an empty file."""
    path = tmp_path / "records.jsonl"
    path.write_text((inputs / "mid.jsonl").read_text())
    run = _coupler("translate", "--from", "jsonl", "--to", "jsonl", path, "--output", path, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "5000 records read, 5000 written" in run.stderr
    assert path.read_text() == (inputs / "mid.jsonl").read_text().replace(", ", ",").replace(": ", ":")


def test_a_file_name_that_is_not_utf8_is_shown_with_its_bytes(inputs: Path) -> None:
    """``nope\\xff.dat`` (a Latin-1 name on a UTF-8 system): shown so, not as Python holds the
    byte (``nope\\udcff.dat``)."""
    name = os.fsdecode(b"nope\xff.dat")
    run = _coupler("copybook", "decode", "rec.cpy", name, *ASCII, cwd=inputs)
    assert run.returncode == 1
    assert run.stderr == "coupler: error: nope\\xff.dat: cannot read nope\\xff.dat: No such file or directory\n"
