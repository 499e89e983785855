"""The shell examples of docs/mappings.md, docs/xsd-to-avro.md, docs/batch.md (those that
need no JVM), docs/cli.md (``channel put``, ``translate``), docs/plugins.md's first plugin and
the README's schema commands run as written, in ``bash``, on the files they name (the
repository's fixtures, copied into a temporary folder under those names), and print what the
page says.

batch.md's ``coupler batch translate`` examples and its Python examples run on Spark:
tests/spark/test_batch_translate.py; its cluster example: tests/spark/test_submit.py.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from tests.bus.site_helpers import REPO, start_daemon_process, wait_for
from tests.e2e.test_site_shell import BIN, sh

pytestmark = pytest.mark.slow

MAPPING_DATA = REPO / "tests" / "translators" / "mapping" / "data"
ORDERS = REPO / "tests" / "translators" / "xml" / "data" / "orders"

#: the three ACCOUNT-REC records of account.cpy that tests/bus/cli/test_cli_translate.py reads
ACCOUNTS = [(MAPPING_DATA / "accounts.dat").read_bytes()[i:i + 92] for i in range(0, 276, 92)]


def doc(name: str) -> str:
    return (REPO / "docs" / name).read_text()


def block_after(text: str, after: str, language: str = "") -> str:
    """The first fenced block of ``language`` after the text ``after``."""
    found = re.search(rf"```{language}\n(.*?)```", text.split(after, 1)[1], re.S)
    assert found, f"no ```{language} block after {after!r}"
    return found.group(1)


def commands(block: str) -> list[str]:
    """The command lines of a shell block: continuations joined, comments and blank lines dropped."""
    lines = [line for line in block.replace("\\\n", " ").splitlines() if line.strip() and not line.startswith("#")]
    return [" ".join(line.split()) for line in lines]


def account_files(folder: Path) -> None:
    """What the mapping guide names: account.cpy, accounts.xsd, account-xml.toml and schemas/
    (the fixtures), and account-copybook.toml as the guide writes it."""
    for name in ("account.cpy", "accounts.xsd", "account-xml.toml"):
        shutil.copy(MAPPING_DATA / name, folder / name)
    shutil.copytree(MAPPING_DATA / "schemas", folder / "schemas")
    (folder / "account-copybook.toml").write_text(block_after(doc("mappings.md"), "## A mapping file", "toml"))


def test_the_mapping_guides_copybook_to_xml_command_runs_and_its_reverse_gives_the_same_bytes(tmp_path: Path) -> None:
    """docs/mappings.md: its mapping file as written, the copybook -> XML command as written,
    "the reverse command gives back the same bytes", and the summary line it quotes."""
    account_files(tmp_path)
    (tmp_path / "accounts.dat").write_bytes(b"".join(ACCOUNTS))
    (command,) = commands(block_after(doc("mappings.md"), "so copybook → XML takes two:"))
    done = sh(command, tmp_path)
    assert done.stdout == ""
    assert done.stderr.startswith("3 records read, 3 written, 0 rejected, 0 bad fields ("), done.stderr
    xml = (tmp_path / "accounts.xml").read_text()
    assert xml.count("<account ") == 3 and "<fullName>Ada Lovelace</fullName>" in xml and "<state>Closed</state>" in xml

    spec = dict(re.findall(r"--(from|to) (\S+)", command))
    reverse = (command.replace(f"--from {spec['from']}", "--from @FROM").replace(f"--to {spec['to']}", f"--from {spec['to']}")
               .replace("--from @FROM", f"--to {spec['from']}").replace("accounts.dat --output accounts.xml",
                                                                      "accounts.xml --output accounts-again.dat"))
    assert reverse != command and "accounts-again.dat" in reverse
    sh(reverse, tmp_path)
    assert (tmp_path / "accounts-again.dat").read_bytes() == (tmp_path / "accounts.dat").read_bytes()

    # a record that fails (a status not in the lookup table) is reported and skipped: exit status 0
    bad = ACCOUNTS[2][:28] + b"X" + ACCOUNTS[2][29:]  # STATUS-CODE
    (tmp_path / "accounts.dat").write_bytes(ACCOUNTS[0] + bad + ACCOUNTS[1])
    done = sh(command, tmp_path)
    said = re.search(r"\(`(\d+ records read, .*?) \(\.\.\.\)`", " ".join(doc("mappings.md").split()))
    assert said and said.group(1) == "3 records read, 2 written, 1 rejected, 0 bad fields"
    assert f"\n{said.group(1)} (" in f"\n{done.stderr}" and "record 2" in done.stderr, done.stderr


def test_the_mapping_guides_python_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/mappings.md's "In Python" example, as written, in the folder of the mapping file,
    with ``record`` a decoded ACCOUNT-REC record."""
    from coupler.translators.copybook import decoder, layout, parser
    from coupler.translators.copybook.options import CopybookOptions

    account_files(tmp_path)
    (tmp_path / "accounts.dat").write_bytes(ACCOUNTS[0])
    monkeypatch.chdir(tmp_path)
    lay = layout.build_layout(parser.parse_file("account.cpy"))
    (record,) = decoder.decode_files(lay, ["accounts.dat"], CopybookOptions.from_mapping({"encoding": "ascii"}))
    names = {"record": record}
    exec(block_after(doc("mappings.md"), "### In Python", "python"), names)
    assert names["account"]["name"] == "John Smith" and names["account"]["status"] == "ACTIVE"
    assert names["record_again"] == record


def test_the_xsd_guides_decode_to_avro_and_encode_back_commands_run(tmp_path: Path) -> None:
    """docs/xsd-to-avro.md: ``xsd schema`` of its first line, and ``xml decode --to avro`` then
    ``xml encode`` of the Avro file, as written, on the orders fixture (orders.xsd, which
    imports and includes two more; orders.xml a document of two orders): the XML written back
    holds the same records."""
    for xsd in ORDERS.glob("*.xsd"):
        shutil.copy(xsd, tmp_path / xsd.name)
    shutil.copy(ORDERS / "orders-batch.xml", tmp_path / "orders.xml")
    text = doc("xsd-to-avro.md")

    first = re.match(r"`(coupler xsd schema [^`]+)`", text.split("\n", 2)[2])
    assert first, "docs/xsd-to-avro.md: no command on its first line"
    schema = json.loads(sh(first.group(1), tmp_path).stdout)
    assert (schema["type"], schema["name"]) == ("record", "Order")

    decode, encode = commands(block_after(text, "with the same `--element` and `--record-path`:"))
    assert sh(decode, tmp_path).stdout == "" and (tmp_path / "orders.avro").read_bytes()[:4] == b"Obj\x01"
    sh(encode, tmp_path)
    path = re.search(r"--record-path (\S+)", decode)
    assert path

    def records(xml: str) -> list[dict]:
        out = sh(f"coupler xml decode orders.xsd {xml} --record-path {path.group(1)}", tmp_path).stdout
        return [json.loads(line) for line in out.splitlines()]

    assert len(records("orders.xml")) == 2 and records("orders-again.xml") == records("orders.xml")


def batch_site(folder: Path) -> None:
    """A site whose file drop ``cards-in`` stages files for batch, with batch.md's [[batch]]
    entry as written, and the copybook it names."""
    (folder / "cards.cpy").write_text("       01  CARD.\n           05  CARD-NO  PIC X(16).\n"
                                      "           05  CARD-LIMIT  PIC 9(4).\n")
    entry = block_after(doc("batch.md"), "## The daemon runs ingestion", "toml")
    (folder / "site.toml").write_text(
        '[site]\nname = "cards"\n\n[[adapters]]\nname = "cards-in"\ntype = "filedrop"\ndirection = "inbound"\n'
        'channel = "cards"\n[adapters.options]\ndirectory = "drop"\nbatch_threshold_bytes = 1000\n'
        'batch_dir = "staged"\ncopybook = "cards.cpy"\nrecord_length = 20\n\n' + entry)
    (folder / "drop").mkdir()
    (folder / "staged").mkdir()


def test_batch_ingest_with_nothing_staged_starts_no_jvm_and_the_status_shows_the_documented_job(tmp_path: Path) -> None:
    """docs/batch.md: ``coupler batch ingest`` of its synopsis with nothing staged "returns
    without starting a JVM (`nothing staged for batch`)" (no Java on the PATH: had Spark
    started, it would fail), and ``coupler ctl status`` of a running daemon lists the
    [[batch]] entry of the page in the table the page shows."""
    batch_site(tmp_path)
    text = doc("batch.md")
    synopsis = commands(block_after(text, "## `coupler batch ingest`"))[0]
    command = re.sub(r"\s\[.*$", "", synopsis).replace("SITE.toml", "site.toml").replace("ADAPTER", "cards-in")
    done = sh(f"JAVA_HOME={tmp_path / 'no-java'} PATH={BIN} {command}",
              tmp_path)
    said = re.search(r"without starting a JVM \(`([^`]+)`\)", " ".join(text.split()))
    assert said and done.stderr == f"{said.group(1)}\n" and done.stdout == ""

    table = block_after(text, "the trigger, exit code, batches, inputs and event ids:").splitlines()
    daemon = start_daemon_process(tmp_path / "site.toml", env=None)
    try:
        def batch_rows() -> list[str] | None:
            out = sh("coupler ctl --site site.toml status", tmp_path).stdout
            rows = out.split("\nBATCH ", 1)[1].split("\n\n", 1)[0].splitlines() if "\nBATCH " in out else []
            return [f"BATCH {rows[0]}", *rows[1:]] if rows else None

        header, row = wait_for(batch_rows, "the status's BATCH table")
        assert header.split() == table[0].split()
        # the page's row, of a job that has not run yet: its source, state and triggers, and the
        # next run in the page's form (the ERROR column is empty)
        said_row = re.split(r"\s{2,}", table[1].strip())
        got = re.split(r"\s{2,}", row.strip())
        assert got[:3] == said_row[:3] and len(got) == len(said_row) == 9, (got, said_row)
        instant = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00"
        assert re.fullmatch(instant, got[-1]) and re.fullmatch(instant, said_row[-1]), (got, said_row)
        assert sh("coupler ctl --site site.toml stop", tmp_path).stdout.startswith("daemon stopped")
        daemon.communicate(timeout=60)
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.communicate()


def test_the_cli_guides_translate_examples_run_as_written(tmp_path: Path) -> None:
    """docs/cli.md's two ``coupler translate`` commands, as written, on the mapping guide's
    files: copybook records to XML through both mappings, then that XML to canonical Avro;
    each prints the summary the page describes and the Avro holds the three accounts."""
    import fastavro

    account_files(tmp_path)
    (tmp_path / "accounts.dat").write_bytes(b"".join(ACCOUNTS))
    text = doc("cli.md")
    to_xml, to_avro = commands(block_after(text, "[every decode path](#decoding-records-numbering-and-exit-status).", "sh"))
    said = re.search(r"The summary \(`(N records read, M written, K rejected, B bad fields)`", " ".join(text.split()))
    assert said
    summary = re.compile(re.sub(r"\b[NMKB]\b", r"(\\d+)", said.group(1)) + r" \(")
    for command in (to_xml, to_avro):
        done = sh(command, tmp_path)
        counts = summary.match(done.stderr)
        assert done.stdout == "" and counts and counts.groups() == ("3", "3", "0", "0"), done.stderr
    assert (tmp_path / "accounts.xml").read_text().count("<account ") == 3
    with open(tmp_path / "accounts.avro", "rb") as fh:
        reader = fastavro.reader(fh)
        accounts = list(reader)
    assert [a["name"] for a in accounts] == ["John Smith", "Cher", "Ada Lovelace"], accounts
    assert accounts[0]["status"] == "ACTIVE"


def test_the_readmes_schema_commands_run_as_written(tmp_path: Path) -> None:
    """The README's ``coupler schema`` and ``coupler plugins`` lines, as written (the demo's
    ``ctl status`` line runs in tests/e2e/test_demo.py), with ``new.avsc`` a third version of
    acme.Customer that adds an optional field and ``customer.json`` a version-2 record: the
    list names both versions, the check says compatible, the conversion drops what version 1
    lacks, and the plugins list the built-in types."""
    readme = (REPO / "README.md").read_text()
    lines = [c for c in commands(block_after(readme, "the `coupler` command is in `.venv/bin/`:", "sh"))
             if c.startswith(("coupler schema", "coupler plugins"))]
    assert [c.split(" #")[0].split()[:3] for c in lines] == [
        ["coupler", "schema", "list"], ["coupler", "schema", "show"], ["coupler", "schema", "check"],
        ["coupler", "schema", "convert"], ["coupler", "plugins"]], lines
    v2 = json.loads((REPO / "schemas" / "acme" / "customer" / "v2.avsc").read_text())
    v2["fields"].append({"name": "loyalty_tier", "type": ["null", "string"], "default": None})
    (tmp_path / "new.avsc").write_text(json.dumps(v2))
    address = {"street": "1 Main St", "city": "Springfield", "postal_code": "12345", "country": "US"}
    (tmp_path / "customer.json").write_text(json.dumps(
        {"customer_id": "C-100234", "name": "Ada", "email": None, "address": address, "phone": "555-0100", "segment": "BUSINESS"}))

    listed, shown, checked, converted, plugins = (sh(c, tmp_path) for c in lines)
    assert re.search(r"^acme\.Customer\s+versions 1, 2$", listed.stdout, re.M), listed.stdout
    schema = json.loads(shown.stdout)
    assert (schema["namespace"], schema["name"]) == ("acme", "AddressChange")
    assert checked.stdout.strip() == "compatible (full) with acme.Customer versions 1, 2"
    assert json.loads(converted.stdout) == {"customer_id": "C-100234", "name": "Ada", "email": None, "address": address}
    assert "adapter types: filedrop" in plugins.stdout and "translator types: copybook, xml, json" in plugins.stdout


def test_the_plugin_guides_first_plugin_runs_as_a_plugin(tmp_path: Path) -> None:
    """docs/plugins.md's first example, as written, in a module named by
    ``COUPLER_EXTRA_PLUGINS``: ``coupler hello NAME`` greets, ``coupler plugins`` lists its
    transport, translator and command, and a site whose ``[store] type`` is ``mirror`` keeps its
    messages in ``DATA_DIR/mirror.db``."""
    (tmp_path / "coupler_doc_plugin.py").write_text(block_after(doc("plugins.md"), "(`tests/bus/plugins/test_plugin_hooks.py` runs it):", "python"))
    env = f"PYTHONPATH={tmp_path} COUPLER_EXTRA_PLUGINS=coupler_doc_plugin"
    assert sh(f"{env} coupler hello Ada", tmp_path).stdout == "hello, Ada!\n"
    listed = sh(f"{env} coupler plugins", tmp_path).stdout.split("coupler_doc_plugin ", 1)[1].split("\n\n")[0]
    for line in ("transport types: mirror", "translator types: shout", "cli commands: hello"):
        assert line in listed, listed
    sh("coupler init acme", tmp_path)
    site = tmp_path / "acme" / "site.toml"
    text = site.read_text()
    assert text.count('\ntype = "sqlite"') == 1
    site.write_text(text.replace('\ntype = "sqlite"', '\ntype = "mirror"'))
    assert sh(f"printf 'one\\ntwo\\n' | {env} coupler channel put --site acme/site.toml inbox --lines", tmp_path).stdout == (
        "put 2 message(s) on inbox\n")
    assert sh(f"{env} coupler channel get --site acme/site.toml inbox --max 5", tmp_path).stdout == "one\ntwo\n"
    assert (tmp_path / "acme" / "data" / "mirror.db").exists() and not (tmp_path / "acme" / "data" / "coupler.db").exists()


def test_the_cli_guides_channel_put_examples_run_as_written(tmp_path: Path) -> None:
    """docs/cli.md's ``channel put`` examples, as written, on the site ``coupler init acme``
    makes (no daemon: on the store directly), with the files they name: each puts what it says,
    and the ``--id-from`` command run again puts nothing twice, in the summary's documented form."""
    text = doc("cli.md")
    puts = commands(block_after(text, "bodies (default `coupler.Bytes@1;application/octet-stream`), `-p` adds message properties.", "sh"))
    (again,) = commands(block_after(text, "A message without the field, or not JSON, is an error naming its line.", "sh"))
    assert len(puts) == 3, puts
    sh("coupler init acme", tmp_path)
    address = {"street": "1 Main St", "city": "Springfield", "postal_code": "12345", "country": "US"}
    (tmp_path / "address.json").write_text(json.dumps(address))
    (tmp_path / "order.json").write_text(json.dumps({"order": {"id": "O-0"}, "amount": 3}))
    (tmp_path / "orders.jsonl").write_text("".join(json.dumps({"order": {"id": f"O-{i}"}}) + "\n" for i in (1, 2)))

    said = [sh(c, tmp_path).stdout for c in puts]
    assert said == ["put 2 message(s) on inbox\n", "put 1 message(s) on addresses\n", "put 1 message(s) on orders\n"]
    assert sh(again, tmp_path).stdout == "put 2 message(s) on orders\n"
    form = re.search(r"the summary says how many: `put (\d+) message\(s\) on orders \((\d+) put before, skipped\)`",
                     " ".join(text.split()))
    assert form and sh(again, tmp_path).stdout == "put 0 message(s) on orders (2 put before, skipped)\n"
    got = [json.loads(line) for line in sh("coupler channel get --site acme/site.toml orders --max 10 --json", tmp_path).stdout.splitlines()]
    assert [g["format"] for g in got] == ["acme.Order@1;application/json"] + ["coupler.Bytes@1;application/octet-stream"] * 2
    assert json.loads(sh("coupler channel get --site acme/site.toml addresses --json", tmp_path).stdout)["body"] == json.dumps(address)
