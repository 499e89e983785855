"""Every ``coupler`` command, given inputs of the wrong kind (binary bytes, an empty file,
a file of another format, a directory where a file belongs, a file where a directory
belongs), answers with one line on standard error and a non-zero exit: never a traceback.

The matrix is built from the parser itself: a test checks that every command of
``coupler --help`` (every leaf of the parser) has a row here, so a new command cannot be
left out. Each row names its command line with one slot (``{X}``) that takes every wrong
input in turn; the other arguments are valid, so the slot's input is what is refused. The
command runs in a process of its own (forked from the test's, as the ``coupler`` script runs
``main()``), with its standard input closed, under a deadline. The binary inputs come from a
random seed printed by the run (``COUPLER_FUZZ_SEED`` replays it)."""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sys
import time
import traceback
from pathlib import Path

import fastavro
import pytest

from coupler.bus.cli.main import COMMAND_MODULES, build_parser, main
from tests.bus.site_helpers import REPO
from tests.fuzzing import SEED

COPYBOOK = REPO / "examples" / "legacy" / "copybooks" / "life-master.cpy"
WSDL = REPO / "examples" / "legacy" / "auto_policy.wsdl"

XSD = """<?xml version="1.0"?>
<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema">
  <xs:element name="order"><xs:complexType><xs:sequence>
    <xs:element name="id" type="xs:int"/><xs:element name="item" type="xs:string"/>
  </xs:sequence></xs:complexType></xs:element>
</xs:schema>
"""
XML = '<?xml version="1.0"?><order><id>1</id><item>bolt</item></order>\n'
SITE = """[site]
name = "fuzz"
data_dir = "data"

[[adapters]]
name = "drop-in"
type = "filedrop"
direction = "inbound"
channel = "orders"
format = "acme.Order@1"
[adapters.options]
directory = "in"
"""
SCHEMA = {"type": "record", "name": "Order", "namespace": "acme",
          "fields": [{"name": "id", "type": "int"}, {"name": "item", "type": "string"}]}


def _wrong_inputs(root: Path) -> dict[str, Path]:
    """The wrong inputs, one of each kind (the binary one from the logged seed)."""
    rnd = random.Random(SEED)
    root.mkdir()
    binary = root / "binary.dat"
    binary.write_bytes(b"\xff\xfe\x00\x80" + rnd.randbytes(4096))
    empty = root / "empty.txt"
    empty.write_bytes(b"")
    xml = root / "other.xml"
    xml.write_text(XML)
    jsonl = root / "other.json"
    jsonl.write_text('{"id": 1, "item": "bolt"}\n')
    avro = root / "other.avro"
    with avro.open("wb") as out:
        fastavro.writer(out, fastavro.parse_schema(SCHEMA), [{"id": 1, "item": "bolt"}])
    cobol = root / "other.cpy"
    cobol.write_text(COPYBOOK.read_text())
    directory = root / "a-directory"
    (directory / "sub").mkdir(parents=True)
    (directory / "junk.avsc").write_bytes(b"\xff\x00junk")
    return {"binary": binary, "empty": empty, "xml": xml, "json": jsonl, "avro": avro,
            "copybook": cobol, "directory": directory}


def _valid(root: Path) -> dict[str, Path]:
    root.mkdir()
    files = {"xsd": XSD, "xml": XML, "jsonl": '{"id": 1, "item": "bolt"}\n', "site": SITE}
    out = {}
    for name, text in files.items():
        path = root / f"valid.{name}" if name != "site" else root / "site.toml"
        path.write_text(text)
        out[name] = path
    (root / "schemas" / "acme" / "order").mkdir(parents=True)
    (root / "schemas" / "acme" / "order" / "v1.avsc").write_text(json.dumps(SCHEMA))
    out["schemas"] = root / "schemas"
    (root / "in").mkdir()
    out["copybook"] = COPYBOOK
    out["wsdl"] = WSDL
    return out


#: (command, its command line, the kinds of input right for its slot: the others are wrong).
#: ``{X}`` is the slot, ``{out}`` a fresh output path, other names are valid inputs. An empty
#: site file is a valid site (no adapters); copybook data is any bytes (a record that does
#: not decode is reported and rejected, the run goes on), so only a directory is wrong there.
FILES = {"binary", "empty", "xml", "json", "avro", "copybook"}
ROWS: list[tuple[str, str, set[str]]] = [
    ("schema list", "schema list --schemas {X}", {"directory"}),
    ("schema show", "schema show acme.Order@1 --schemas {X}", {"directory"}),
    ("schema check", "schema check {X} --subject acme.Order --schemas {schemas}", set()),
    ("schema convert", "schema convert {X} --from acme.Order@1 --to acme.Order@1 --schemas {schemas}", {"json"}),
    ("plugin new", "plugin new demo --directory {X}", set()),
    ("xsd schema", "xsd schema {X}", set()),
    ("xml decode", "xml decode {X} {xml}", set()),
    ("xml decode", "xml decode {xsd} {X}", {"xml"}),
    ("xml encode", "xml encode {X} {jsonl} --output {out}", set()),
    ("xml encode", "xml encode {xsd} {X} --output {out}", {"json", "avro"}),
    ("wsdl describe", "wsdl describe {X}", set()),
    ("init", "init {X}", {"directory"}),
    ("daemon", "daemon --check --site {X}", {"empty"}),
    ("daemon", "daemon --site {X}", {"empty"}),
    ("ctl status", "ctl --site {X} status", {"empty"}),
    ("ctl channels", "ctl --site {X} channels", {"empty"}),
    ("ctl adapters", "ctl --site {X} adapters", {"empty"}),
    ("ctl identities", "ctl --site {X} identities", {"empty"}),
    ("ctl dlq list", "ctl --site {X} dlq list", {"empty"}),
    ("ctl dlq show", "ctl --site {X} dlq show 1", {"empty"}),
    ("ctl dlq replay", "ctl --site {X} dlq replay 1", {"empty"}),
    ("ctl dlq purge", "ctl --site {X} dlq purge", {"empty"}),
    ("ctl pause", "ctl --site {X} pause drop-in", {"empty"}),
    ("ctl resume", "ctl --site {X} resume drop-in", {"empty"}),
    ("ctl ping", "ctl --site {X} ping drop-in", {"empty"}),
    ("ctl trace", "ctl --site {X} trace order-1", {"empty"}),
    ("ctl console", "ctl --site {X} console", {"empty"}),
    ("ctl stop", "ctl --site {X} stop", {"empty"}),
    ("ctl detour", "ctl --site {X} detour triage", {"empty"}),
    ("ctl routes", "ctl --site {X} routes", {"empty"}),
    ("ctl groups list", "ctl --site {X} groups list", {"empty"}),
    ("ctl groups complete", "ctl --site {X} groups complete triage by-region EU", {"empty"}),
    ("ctl groups discard", "ctl --site {X} groups discard triage by-region EU", {"empty"}),
    ("ctl test", "ctl --site {X} test triage --file {jsonl}", {"empty"}),
    ("ctl test", "ctl --site {site} test triage --file {X}", set(FILES) | {"json"}),
    ("store backup", "store backup --site {X} {out}", {"empty"}),
    ("store backup", "store backup --site {site} {X}", set()),
    ("channel put", "channel put --site {X} orders {xml}", {"empty"}),
    ("channel put", "channel put --site {site} --format acme.Order@1 orders {X}", {"json"}),
    ("channel get", "channel get --site {X} orders", {"empty"}),
    ("channel purge", "channel purge --site {X} orders", {"empty"}),
    ("send", "send --site {X} --command ping --target drop-in", {"empty"}),
    ("send", "send --site {site} --command send --target drop-in --format acme.Order@1 {X}", {"json"}),
    ("copybook layout", "copybook layout {X}", {"copybook"}),
    ("copybook schema", "copybook schema {X}", {"copybook"}),
    ("copybook decode", "copybook decode {X} {xml}", {"copybook"}),
    ("copybook decode", "copybook decode {copybook} {X}", FILES),
    ("copybook decode", "copybook decode {copybook} {X} --to parquet --parts --jobs 2 --output {out}", FILES),
    ("copybook family", "copybook family {X}", set()),
    ("copybook encode", "copybook encode {X} {jsonl} --output {out}", {"copybook"}),
    ("copybook encode", "copybook encode {copybook} {X} --output {out}", {"json", "empty"}),
    ("batch translate", "batch translate --from copybook:{X} --to parquet --output {out} {xml}", {"copybook"}),
    ("batch ingest", "batch ingest --site {X} --source drop-in", {"empty"}),
    ("translate", "translate --from copybook:{X} --to jsonl --output {out} {xml}", {"copybook"}),
    ("translate", "translate --from copybook:{copybook} --to jsonl --output {out} {X}", FILES),
    ("translate", "translate --from xml:{X} --to jsonl --output {out} {xml}", set()),
    ("translate", "translate --from avro:acme.Order@1 --to jsonl --schemas {schemas} --output {out} {X}", {"avro"}),
]
#: commands that read no input a user names (nothing to give them of the wrong kind)
NO_INPUT = {"plugins"}
KINDS = ("binary", "empty", "xml", "json", "avro", "copybook", "directory")


def _leaves(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> set[str]:
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        return {" ".join(path)}
    return set().union(*(_leaves(p, (*path, name)) for name, p in subs[0].choices.items()))


def test_every_command_is_fuzzed() -> None:
    commands = _leaves(build_parser())
    assert commands == {c for c, _, _ in ROWS} | NO_INPUT
    for command, row, _ in ROWS:
        assert row.startswith(command.split()[0]) and "{X}" in row


def _start(argv: list[str], cwd: Path, stderr: Path) -> int:
    """``coupler ARGV`` as the ``coupler`` script runs it (``sys.exit(main())``), in a forked
    child of this process (the command modules are imported once, here): the child's pid."""
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 99
        try:
            fd = os.open(stderr, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            os.dup2(fd, 2)
            null = os.open(os.devnull, os.O_RDWR)
            os.dup2(null, 0)
            os.dup2(null, 1)
            os.chdir(cwd)
            sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
            sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115
            sys.stdin = open(0, closefd=False)  # noqa: SIM115
            try:
                code = main(argv)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
            sys.stderr.flush()
        except BaseException:
            traceback.print_exc()
            sys.stderr.flush()
            code = 98
        os._exit(code)
    return pid


def _exit_status(pid: int, deadline: float) -> int:
    """The exit status of child ``pid``; -1000 when it still ran at ``deadline`` (killed)."""
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return -1000
        time.sleep(0.01)


def test_the_seed_is_logged(capsys: pytest.CaptureFixture[str]) -> None:
    with capsys.disabled():
        print(f"\n{__name__}: COUPLER_FUZZ_SEED={SEED} (set it to replay the binary inputs)")


build_parser(modules=COMMAND_MODULES)  # every command module imported here, once


@pytest.mark.parametrize(("command", "row", "right"), ROWS, ids=[r for _, r, _ in ROWS])
def test_wrong_inputs_give_one_line_and_a_non_zero_exit(command: str, row: str, right: set[str], tmp_path: Path) -> None:
    wrong = _wrong_inputs(tmp_path / "wrong")
    valid = _valid(tmp_path / "valid")
    failures = []
    children = {}
    for kind in KINDS:  # every wrong input of the row at once (each in its own directory)
        if kind in right:
            continue
        argv = row.format(X=wrong[kind], out=tmp_path / f"out-{kind}", **valid).split()
        children[kind] = _start(argv, tmp_path / "valid", tmp_path / f"stderr-{kind}")
    deadline = time.monotonic() + 90
    for kind, pid in children.items():
        code = _exit_status(pid, deadline)
        text = (tmp_path / f"stderr-{kind}").read_text(errors="replace")
        lines = text.strip().splitlines()
        if code == -1000:
            failures.append(f"{kind}: still running after 90 s")
        elif (code in (0, 98) or len(lines) != 1 or "Traceback" in text or not lines[0].startswith("coupler")
              or "internal error" in text):  # main()'s last resort is a bug, not an answer
            failures.append(f"{kind}: exit {code}: {text.strip()[-500:]!r}")
    assert not failures, f"COUPLER_FUZZ_SEED={SEED}: coupler {row}\n" + "\n".join(failures)
