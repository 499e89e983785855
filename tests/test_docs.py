"""The documentation stays true: generated references are current, links resolve."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from coupler.bus.cli import doc as cli_doc

REPO = Path(__file__).resolve().parents[1]
DOCS = sorted([REPO / "README.md", *(REPO / "docs").rglob("*.md")])
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def test_cli_reference_is_generated_from_the_cli() -> None:
    current = (REPO / "docs" / "cli-reference.md").read_text()
    assert current == cli_doc.render(), "run: .venv/bin/python -m coupler.bus.cli.doc > docs/cli-reference.md"


def test_every_command_is_in_the_reference() -> None:
    text = (REPO / "docs" / "cli-reference.md").read_text()
    for path in cli_doc.command_paths():
        assert f"`{path.removeprefix('coupler ')}`" in text, path


@pytest.mark.parametrize("doc", DOCS, ids=[str(d.relative_to(REPO)) for d in DOCS])
def test_relative_links_resolve(doc: Path) -> None:
    text = re.sub(r"```.*?```", "", doc.read_text(), flags=re.S)  # links inside code are examples
    broken = []
    for target in LINK.findall(text):
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            continue
        path = (doc.parent / target.split("#", 1)[0]).resolve()
        if not path.exists():
            broken.append(target)
    assert not broken, f"{doc.relative_to(REPO)}: broken links {broken}"


def test_index_lists_every_document() -> None:
    index = (REPO / "docs" / "index.md").read_text()
    listed = {(REPO / "docs" / t.split("#")[0]).resolve() for t in LINK.findall(index)}
    missing = [d.relative_to(REPO) for d in DOCS if d.parent.is_relative_to(REPO / "docs")
               and d.name != "index.md" and d.resolve() not in listed]
    assert not missing, f"docs/index.md does not link {missing}"


@pytest.mark.parametrize("command", ["copybook decode", "translate", "batch translate"])
def test_every_decode_path_documents_its_exit_status_and_record_numbering(command: str) -> None:
    """Issue 16: the CLI reference states, for each command that decodes copybook records, how
    records are numbered and what each exit status means."""
    text = (REPO / "docs" / "cli-reference.md").read_text()
    level = "##" if " " not in command else "###"
    section = text.split(f"\n{level} `{command}`\n", 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]
    assert "numbered from 1" in section, command
    for status in ("Exit status", "0 when", "1 when", "2 for a usage error"):
        assert status in section, (command, status)


def test_the_quick_start_has_as_many_commands_as_it_and_the_index_say() -> None:
    words = {5: "five", 6: "six", 7: "seven", 8: "eight"}
    quick = (REPO / "docs" / "quickstart.md").read_text()
    block = re.search(r"in (\w+) commands:\n\n```sh\n(.*?)```", quick, re.S)
    assert block
    count = len(re.findall(r"^\s*coupler ", block.group(2), re.M))
    assert block.group(1) == words[count]
    assert f"a site of your own in {words[count]} commands" in (REPO / "docs" / "index.md").read_text()


def test_the_out_count_of_an_adapter_is_defined_as_the_code_counts_it() -> None:
    """OUT counts an outbound adapter's deliveries too (AdapterStats.sent, the daemon's
    delivery handler): the CLI guide and the metrics table say the same."""
    cli = " ".join((REPO / "docs" / "cli.md").read_text().split())
    assert "*out* what it passed on: the messages it put on the bus (published documents and replies) and the documents it delivered to its legacy system" in cli
    ops = (REPO / "docs" / "operations.md").read_text()
    assert "| `coupler_adapter_units_out_total` | counter | `adapter` | messages put on the bus, documents delivered |" in ops


def test_the_metrics_table_lists_every_metric_the_daemon_exports() -> None:
    """docs/operations.md's metrics table names every family of ``metric_names()``."""
    from coupler.bus.runtime.console.metrics import metric_names

    ops = (REPO / "docs" / "operations.md").read_text()
    table = ops.split("\n## Metrics\n", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"^\| `(coupler_[a-z_]+)` \|", table, re.M))
    assert not set(metric_names()) - listed, f"docs/operations.md#metrics lacks {sorted(set(metric_names()) - listed)}"
    assert not listed - set(metric_names()), f"docs/operations.md#metrics lists unknown {sorted(listed - set(metric_names()))}"


def test_the_cli_reference_expands_help_placeholders_and_says_each_default_once() -> None:
    text = (REPO / "docs" / "cli-reference.md").read_text()
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    assert not [r for r in rows if "%(" in r], "argparse placeholders left unexpanded"
    assert not [r for r in rows if r.count("default") > 1 and "(default: `" in r], "a default said twice"
    assert "(default: ``)" not in text


def _python_blocks(doc: str, after: str) -> list[str]:
    """The ```python blocks of ``doc`` after the text ``after``, up to its next heading."""
    text = (REPO / doc).read_text().split(after, 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", text, re.S)


def test_the_copybook_guides_python_examples_run_on_a_file_with_a_truncated_record(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/copybook.md's two Python examples, as written, on CUST.cpy (with a COPY from
    copylib/) and CUST.DAT: two RDW records and a truncated last one, which decode_files gives
    as a BadRecord in every mode."""
    import struct

    (tmp_path / "copylib").mkdir()
    (tmp_path / "copylib" / "ADDR.cpy").write_text("           10  STREET        PIC X(10).\n")
    (tmp_path / "CUST.cpy").write_text(
        "       01  CUST.\n"
        "           05  CUST-ID       PIC 9(4).\n"
        "           05  BAL           PIC S9(5)V99 COMP-3.\n"
        "           05  ADDR.\n"
        "           COPY ADDR.\n")
    record = "0042".encode("cp037") + bytes.fromhex("0012345C") + "MAIN ST".ljust(10).encode("cp037")
    rdw = struct.pack("<HH", 0, len(record))  # Cobrix's default: little-endian, the length after the RDW
    (tmp_path / "CUST.DAT").write_bytes(rdw + record + rdw + record + rdw + record[:5])
    (tmp_path / "CUSTF.DAT").write_bytes(record * 3)
    monkeypatch.chdir(tmp_path)

    decode, batches = _python_blocks("docs/copybook.md", "2 for a usage error.")
    names: dict = {}
    exec(decode, names)
    lines = capsys.readouterr().out.splitlines()
    good = '{"CUST_ID":42,"BAL":123.45,"ADDR":{"STREET":"MAIN ST"}}'
    assert lines[:2] == [good, good]
    assert len(lines) == 3 and "CUST.DAT: record 3" in lines[2], lines

    batch = {**names, "options": {}, "paths": ["CUSTF.DAT"]}
    exec(batches, batch)
    assert batch["batch_supported"](names["layout"], {}, ["CUSTF.DAT"])  # the block's loop ran
    assert batch["json_lines"](batch["fb"].batch) == [good] * 3


def test_the_metrics_table_names_every_outcome_a_step_counts() -> None:
    """``coupler_route_step_messages_total``'s ``outcome`` label: each ``Discard(counter=...)``
    of the built-in steps (and the default ``discarded``) is named in the metrics table."""
    sources = " ".join(p.read_text() for p in (REPO / "bus" / "runtime" / "steps").rglob("*.py"))
    outcomes = {"discarded", *re.findall(r'Discard\(.*counter="(\w+)"', sources)}
    ops = (REPO / "docs" / "operations.md").read_text()
    row = next(line for line in ops.splitlines() if line.startswith("| `coupler_route_step_messages_total` |"))
    assert not [o for o in sorted(outcomes) if f"`{o}`" not in row], row


def _toml_blocks() -> list[tuple[str, str]]:
    """Every ```toml block of the README and docs/, as ``(doc:line, text)``."""
    blocks = []
    for doc in DOCS:
        text = doc.read_text()
        for m in re.finditer(r"```toml\n(.*?)```", text, re.S):
            blocks.append((f"{doc.relative_to(REPO)}:{text[:m.start()].count(chr(10)) + 1}", m.group(1)))
    return blocks


#: adapter types of the plugin guide's own examples (installed by their tests, not here)
PLUGIN_EXAMPLE_TYPES = ('type = "acme-notes"', 'type = "hello"')


def test_every_toml_snippet_parses_and_every_adapter_snippet_loads_as_a_site(tmp_path: Path) -> None:
    """A user pastes a snippet into site.toml: it is TOML (no key given twice), and one declaring
    ``[[adapters]]`` is a site the installed plugins accept (types, options, routes), with a
    ``[site]`` table added when it has none."""
    import tomllib

    from coupler.bus.config.loader import load_site
    from coupler.bus.plugins.manager import plugin_manager

    pm = plugin_manager()
    problems = []
    for where, text in _toml_blocks():
        try:
            tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            problems.append(f"{where}: {exc}")
            continue
        if "[[adapters]]" not in text or any(t in text for t in PLUGIN_EXAMPLE_TYPES):
            continue
        site = tmp_path / f"{where.replace('/', '_').replace(':', '_')}.toml"
        site.write_text(text if "[site]" in text else f'[site]\nname = "snippet"\n\n{text}')
        try:
            load_site(site, pm=pm)
        except Exception as exc:  # noqa: BLE001 -- every problem, named by its snippet
            problems.append(f"{where}: {exc}")
    assert not problems, "\n".join(problems)


def test_the_expression_guides_conditions_parse_and_a_bare_name_is_refused_as_it_says(tmp_path: Path) -> None:
    """docs/expressions.md: its example conditions are valid in a site, and its error for
    ``status = 'ACTIVE'`` is the one ``coupler daemon --check`` prints (line 12 of a site)."""
    from coupler.bus.model.selectors import Selector

    guide = (REPO / "docs" / "expressions.md").read_text()
    conditions = re.findall(r'^(?:# )?when = "(.*)"$', guide.split("```toml\n", 1)[1].split("```", 1)[0], re.M)
    assert len(conditions) == 4
    for condition in conditions:
        Selector.parse(condition, bare_properties=False)

    said = guide.split("with the fix in one line:\n\n```\n", 1)[1].split("\n```", 1)[0]
    site = tmp_path / "site.toml"
    site.write_text('[site]\nname = "x"\n\n\n\n\n[[routes]]\nname = "orders"\nfrom = "in"\n'
                    "[[routes.rules]]\nto = [\"out\"]\nwhen = \"status = 'ACTIVE'\"\n")
    proc = subprocess.run([sys.executable, "-m", "coupler.bus.cli", "daemon", "--site", "site.toml", "--check"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert (proc.returncode, proc.stderr.strip()) == (1, said)


def _fenced_blocks(text: str) -> list[tuple[int, str, str]]:
    """``(line of its first text line, language, text)`` of each fenced block of a Markdown text
    (indented fences of list items included)."""
    blocks, opened, lines = [], None, text.splitlines()
    for number, line in enumerate(lines, start=1):
        fence = re.match(r"\s*```(\w*)\s*$", line)
        if fence and opened is None:
            opened = (number + 1, fence.group(1))
        elif fence and opened is not None:
            blocks.append((opened[0], opened[1], "\n".join(lines[opened[0] - 1:number - 1]) + "\n"))
            opened = None
    return blocks


def _documented_command_lines() -> list[tuple[str, str]]:
    """``(doc:line, command)`` for each ``coupler ...`` command of a shell block of the README
    and docs/ (continuations joined; a pipeline, ``&&`` or ``&`` split; comments and
    redirections dropped); the CLI reference is checked against its generator instead."""
    found = []
    for doc in DOCS:
        if doc.name == "cli-reference.md":
            continue
        for first, language, block in _fenced_blocks(doc.read_text()):
            if language not in ("sh", "bash", ""):
                continue
            for i, line in enumerate(block.replace("\\\n", " ").splitlines()):
                line = re.split(r"\s+#", line.strip().removeprefix("$ "))[0]
                for part in re.split(r"\s(?:&&|\||;)\s|\s&$", line):
                    part = re.split(r"\s[<>]\s?", part.strip())[0]
                    if part.startswith("coupler "):
                        found.append((f"{doc.relative_to(REPO)}:{first + i}", part))
    return found


def test_every_documented_command_line_parses() -> None:
    """Each ``coupler`` command a doc shows names commands and options that exist, with values
    of the right type (a synopsis's ``[--optional]`` parts are dropped, an upper-case
    placeholder such as ``ID`` stands for 1)."""
    import contextlib
    import io
    import shlex

    from coupler.bus.cli.main import build_parser

    parser = build_parser()
    commands = _documented_command_lines()
    assert len(commands) > 30
    problems = []
    for where, command in commands:
        command = re.sub(r"\s\[[^\]]*\]", "", command).replace("...", "")
        argv = ["1" if re.fullmatch(r"[A-Z]+", a) else a for a in shlex.split(command)[1:]]
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                parser.parse_args(argv)
        except SystemExit as exc:
            if exc.code:
                problems.append(f"{where}: {command}: {err.getvalue().strip()}")
    assert not problems, "\n".join(problems)


def test_the_copybook_guides_layout_family_example_runs_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/copybook.md's layout family: its customer.family.toml and its Python example, as
    written, on two copybook versions (version 2 adds EMAIL) and CUST.DAT of a version-2 and a
    version-1 record with RDWs: the loop converts each to branch.Customer@2, the last one (read
    with version 1) with EMAIL null."""
    from decimal import Decimal

    from coupler.translators.copybook.encoder import RecordEncoder
    from coupler.translators.copybook.family import LayoutFamily
    from tests.translators.copybook.test_family import R1, R2, V1, V2

    text = (REPO / "docs" / "copybook.md").read_text()
    section = text.split("## Version-aware legacy formats (layout families)", 1)[1]
    toml = re.search(r"```toml\n(.*?)```", section, re.S).group(1)  # type: ignore[union-attr]
    (example,) = re.findall(r"```python\n(.*?)```", section.split("\n## ", 1)[0], re.S)
    (tmp_path / "customer.family.toml").write_text(toml)
    (tmp_path / "customer_v1.cpy").write_text(V1)
    (tmp_path / "customer_v2.cpy").write_text(V2)
    (tmp_path / "copylib").mkdir()
    family = LayoutFamily.load(tmp_path / "customer.family.toml")
    (tmp_path / "CUST.DAT").write_bytes(b"".join(
        RecordEncoder(family.layouts[v], family.options).framed(r) for v, r in ((2, R2), (1, R1))))
    monkeypatch.chdir(tmp_path)

    names: dict = {}
    exec(example, names)
    said = re.search(r"`VersionedRecord\(format, record, file, number, offset\)` \(`number` counts from (\d)", " ".join(text.split()))
    assert said, "docs/copybook.md: where VersionedRecord's number starts"
    item = names["item"]  # the second record of CUST.DAT: its data after an RDW, a version-2 record (63 bytes), an RDW
    assert (str(item.format), item.file, item.number, item.offset) == ("branch.Customer@1", "CUST.DAT", int(said.group(1)) + 1, 4 + 63 + 4)
    assert names["record_v2"] == {"REC_VERSION": "01", "CUST_ID": 42, "NAME": "ANN SMITH", "EMAIL": None,
                                  "BALANCE": Decimal("-12.50")}


def test_the_stateful_patterns_aggregation_strategy_example_runs() -> None:
    """docs/stateful-patterns.md's third-party aggregation strategy, as written: its hook
    returns ``total``, which sums the ``amount`` of a completed group's JSON members into the
    format it names."""
    from coupler.bus.runtime.steps.aggregate import Group
    from coupler.canonical import Envelope, FormatIndicator

    text = (REPO / "docs" / "stateful-patterns.md").read_text()
    (example,) = re.findall(r"```python\n(.*?)```", text.split("through the hook `coupler_aggregation_strategies`:", 1)[1].split("\n## ", 1)[0], re.S)
    names: dict = {}
    exec(example, names)
    strategy = names["coupler_aggregation_strategies"]()["total"]
    order = FormatIndicator.parse("acme.Order@1;application/json")
    group = Group(key="EU", members=[Envelope(format=order, body=b'{"amount": 10}'), Envelope(format=order, body=b'{"amount": 32}')],
                  reason="size", options=None, registry=lambda: None)  # type: ignore[arg-type]  # JSON members need neither
    body, fmt = strategy(group)
    assert json.loads(body) == {"key": "EU", "total": 42} and str(fmt) == "acme.Total@1;application/json"
