"""``coupler schema`` and the CLI's error contract, run as a user runs them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

CUSTOMER_V3_INCOMPATIBLE = {
    "type": "record", "name": "Customer", "namespace": "acme",
    "fields": [
        {"name": "customer_id", "type": "long"},
        {"name": "name", "type": "string"},
        {"name": "loyalty", "type": "int"},
    ],
}


def coupler(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "coupler.bus.cli.main", *args], input=stdin, capture_output=True, text=True, timeout=60
    )


def test_version() -> None:
    out = coupler("--version")
    assert out.returncode == 0 and out.stdout.startswith("coupler ")


def test_schema_list_json() -> None:
    out = coupler("schema", "list", "--json")
    assert out.returncode == 0, out.stderr
    rows = {r["subject"]: r["versions"] for r in json.loads(out.stdout)}
    assert rows["acme.Customer"] == [1, 2] and rows["acme.Address"] == [1]


def test_schema_show_version_and_latest() -> None:
    v1 = json.loads(coupler("schema", "show", "acme.Customer@1").stdout)
    latest = json.loads(coupler("schema", "show", "acme.Customer").stdout)
    assert "phone" not in {f["name"] for f in v1["fields"]}
    assert "phone" in {f["name"] for f in latest["fields"]}


def test_schema_check_incompatible_prints_each_reason(tmp_path: Path) -> None:
    path = tmp_path / "customer_v3.avsc"
    path.write_text(json.dumps(CUSTOMER_V3_INCOMPATIBLE))
    out = coupler("schema", "check", str(path), "--subject", "acme.Customer", "--mode", "full")
    assert out.returncode == 1
    lines = out.stdout.splitlines()
    # customer_id string<->long both ways and loyalty missing backward, against v1 and v2;
    # old versions' address field has no default for forward
    assert any("v1: new version cannot read old data: acme.Customer.customer_id" in ln for ln in lines)
    assert any("v2: new version cannot read old data: acme.Customer.loyalty" in ln for ln in lines)
    assert any("v2: old version cannot read new data: acme.Customer.address" in ln for ln in lines)
    assert len(lines) == 8, lines


def test_schema_check_compatible_exits_zero(tmp_path: Path) -> None:
    v2 = json.loads(coupler("schema", "show", "acme.Customer@2").stdout)
    v2["fields"].append({"name": "nickname", "type": ["null", "string"], "default": None})
    path = tmp_path / "v3.avsc"
    path.write_text(json.dumps(v2))
    out = coupler("schema", "check", str(path), "--subject", "acme.Customer", "--mode", "full")
    assert out.returncode == 0, out.stdout
    assert "compatible (full)" in out.stdout


def test_schema_convert(tmp_path: Path) -> None:
    record = {"customer_id": "C-9", "name": "Bo", "email": "bo@example.com",
              "address": {"street": "2 Elm", "city": "Oslo", "postal_code": "0150", "country": "NO"}}
    path = tmp_path / "c.json"
    path.write_text(json.dumps(record))
    out = coupler("schema", "convert", "--from", "acme.Customer@1", "--to", "acme.Customer@2", str(path))
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {**record, "phone": None, "segment": "RETAIL"}


def test_schemas_option_adds_a_directory(tmp_path: Path) -> None:
    (tmp_path / "policy").mkdir()
    (tmp_path / "policy" / "v1.avsc").write_text(json.dumps(
        {"type": "record", "name": "Policy", "namespace": "acme", "fields": [{"name": "holder", "type": "acme.Customer"}]}))
    out = coupler("schema", "list", "--schemas", str(tmp_path))
    assert "acme.Policy  versions 1" in out.stdout


@pytest.mark.parametrize(
    "args, code, message",
    [
        (("schema", "show", "acme.Customer@7"), 1, "no version 7 of acme.Customer"),
        (("schema", "show", "acme.Customer@x"), 1, "malformed format indicator"),
        (("schema", "convert", "--from", "acme.Customer@1", "--to", "acme.Customer@2", "/nonexistent.json"), 2, "cannot read"),
        (("schema", "frobnicate"), 2, "invalid choice"),
    ],
)
def test_user_errors_are_one_line_without_traceback(args: tuple[str, ...], code: int, message: str) -> None:
    out = coupler(*args)
    assert out.returncode == code
    assert message in out.stderr
    assert "Traceback" not in out.stderr
    if code == 1:
        assert len(out.stderr.strip().splitlines()) == 1


def test_debug_shows_the_traceback() -> None:
    out = coupler("--debug", "schema", "show", "acme.Customer@7")
    assert out.returncode != 0 and "Traceback" in out.stderr


def test_an_unknown_schema_says_how_to_add_ones_own(tmp_path: Path) -> None:
    """``no schema named ...`` names the option through which this command reads schemas of
    one's own: ``--schemas DIR`` on the commands that have it, the site's ``[schemas] paths``
    on those that read a site; and the schema is then found that way."""
    schemas = tmp_path / "schemas"
    (schemas / "acme" / "order").mkdir(parents=True)
    (schemas / "acme" / "order" / "v1.avsc").write_text(json.dumps(
        {"type": "record", "name": "Order", "namespace": "acme", "fields": [{"name": "id", "type": "int"}]}))
    refused = coupler("schema", "show", "acme.Order@1")
    assert refused.returncode == 1
    assert refused.stderr.startswith("coupler: error: no schema named 'acme.Order'")
    assert refused.stderr.rstrip().endswith("a schema of your own: add its directory with --schemas DIR)")
    assert json.loads(coupler("schema", "show", "acme.Order@1", "--schemas", str(schemas)).stdout)["name"] == "Order"

    (tmp_path / "site.toml").write_text("")
    order = tmp_path / "order.json"
    order.write_text('{"id": 1}')
    put = coupler("channel", "put", "--site", str(tmp_path / "site.toml"), "--format", "acme.Order@1", "orders", str(order))
    assert put.returncode != 0 and "no schema named 'acme.Order'" in put.stderr
    assert "a folder of the site's `schemas`" in put.stderr and put.stderr.count("\n") == 1
