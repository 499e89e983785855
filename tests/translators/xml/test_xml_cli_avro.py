"""``coupler xml encode`` reads the Avro container file ``xml decode --to avro`` writes: the
way back from Avro to XML. Checked on a real ISO 20022 payment initiation (pain.001): the
document decoded to Avro and encoded back is valid against the XSD (checked by lxml's own
validator, not the xmlschema object Coupler validates with) and carries the same records as
the JSON-lines way."""

from __future__ import annotations

import contextlib
import json
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from lxml import etree

from coupler.bus.cli.main import main

CORPUS = Path(__file__).parent / "corpus" / "iso20022"
XSD = CORPUS / "pain.001.001.03.xsd"
DOC = CORPUS / "pain.001.001.03.php-sepa-xml.xml"
PATH = "Document/CstmrCdtTrfInitn/PmtInf"


def _records(tmp_path: Path, name: str, to: str, *stream: str) -> Path:
    out = tmp_path / name
    assert main(["xml", "decode", str(XSD), str(DOC), "--to", to, "--output", str(out), *stream]) == 0
    return out


@pytest.mark.parametrize("stream", [(), ("--record-path", PATH)], ids=["document", "record-path"])
def test_the_avro_file_of_xml_decode_encodes_back_to_the_same_valid_xml(tmp_path: Path, stream: tuple[str, ...]) -> None:
    avro = _records(tmp_path, "records.avro", "avro", *stream)
    jsonl = _records(tmp_path, "records.jsonl", "jsonl", *stream)
    assert avro.read_bytes()[:4] == b"Obj\x01"
    from_avro, from_json = tmp_path / "from-avro.xml", tmp_path / "from-json.xml"
    assert main(["xml", "encode", str(XSD), str(avro), "--output", str(from_avro), *stream]) == 0
    assert main(["xml", "encode", str(XSD), str(jsonl), "--output", str(from_json), *stream]) == 0
    ns = {"p": "urn:iso:std:iso:20022:tech:xsd:pain.001.001.03"}
    original, document = etree.parse(str(DOC)), etree.parse(str(from_avro))
    for xpath in ("sum(//p:InstdAmt)", "count(//p:CdtTrfTxInf)", "string(//p:Cdtr/p:Nm)", "string(//p:PmtInfId)"):
        assert document.xpath(xpath, namespaces=ns) == original.xpath(xpath, namespaces=ns), xpath
    assert original.xpath("count(//p:InstdAmt)", namespaces=ns) > 0
    if stream:  # the repeated elements only, under their root
        return
    schema = etree.XMLSchema(etree.parse(str(XSD)))
    assert schema.validate(document), schema.error_log
    # the same values as the JSON-lines way; the lexical forms may differ (Avro keeps a
    # decimal at its schema's scale, 12.34000000000000000, and a UTC time as Z)
    again = tmp_path / "again.jsonl"
    assert main(["xml", "decode", str(XSD), str(from_avro), "--output", str(again)]) == 0
    assert _values(again) == _values(jsonl) == _values_of_xml(from_json, tmp_path)


def _values(path: Path) -> Any:
    def norm(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: norm(v) for k, v in value.items()}
        if isinstance(value, list):
            return [norm(v) for v in value]
        if isinstance(value, Decimal):
            return value.normalize()
        if isinstance(value, str) and len(value) > 18 and value[10:11] == "T":
            with contextlib.suppress(ValueError):
                return datetime.fromisoformat(value)
        return value

    return [norm(json.loads(line, parse_float=Decimal)) for line in path.read_text().splitlines()]


def _values_of_xml(document: Path, tmp_path: Path) -> Any:
    out = tmp_path / "from-json.jsonl"
    assert main(["xml", "decode", str(XSD), str(document), "--output", str(out)]) == 0
    return _values(out)


def test_a_wrong_kind_of_input_is_one_line_naming_both_accepted_formats(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    binary = tmp_path / "records.bin"
    binary.write_bytes(b"\x00\xff\xfe garbage")
    assert main(["xml", "encode", str(XSD), str(binary), "--output", str(tmp_path / "x.xml")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not UTF-8 text" in err and "Avro container file" in err and "JSON lines" in err
    assert not (tmp_path / "x.xml").exists()
