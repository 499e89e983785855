"""What the issue's users saw as tracebacks are one-line located errors, exit code 1: in
``coupler xml decode`` (whole documents and ``--record-path`` streams) and in the Python API.
The documents are a public ISO 20022 pain.001 fixture with one value damaged."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from coupler.bus.cli.main import main
from coupler.translators.xml import XmlValidationError, XsdModel
from tests.terminal import coupler_on_a_terminal

CORPUS = Path(__file__).parent / "corpus" / "iso20022"
XSD = CORPUS / "pain.001.001.03.xsd"
DOC = CORPUS / "pain.001.001.03.php-sepa-xml.xml"
ONE_LINE = re.compile(r"^coupler: error: (?P<file>\S+):(?P<line>\d+) (?P<path>/\S+): (?P<what>.+) \((?P<todo>[^()]+(\([^()]*\))?[^()]*)\)$")


def _damaged(tmp_path: Path, old: str, new: str) -> Path:
    text = DOC.read_text()
    assert old in text
    path = tmp_path / "damaged.xml"
    path.write_text(text.replace(old, new, 1))
    return path


@pytest.mark.parametrize(("old", "new", "path", "what"), [
    ("2025-08-19T08:32:02+00:00", "99999999999999999999-08-19T08:32:02+00:00", "/Document/CstmrCdtTrfInitn/GrpHdr/CreDtTm",
     "is outside 0001..9999"),  # an XSD year, beyond what the translator's dates hold
    ("<ReqdExctnDt>2025-08-19", "<ReqdExctnDt>99999999999999999999-08-19", "/Document/CstmrCdtTrfInitn/PmtInf/ReqdExctnDt",
     "is outside 0001..9999"),
    ("<NbOfTxs>1</NbOfTxs>", "<NbOfTxs>" + "9" * 40 + "</NbOfTxs>", "/Document/CstmrCdtTrfInitn/GrpHdr/NbOfTxs",
     "does not match the pattern"),
    ("<InitgPty>", '<InitgPty xsi:type="Unknown">', "/Document/CstmrCdtTrfInitn/GrpHdr/InitgPty",
     "xsi:type 'Unknown'"),
    ("<CtrlSum>12.34</CtrlSum>", "<CtrlSum>1.234567890123456789</CtrlSum>", "/Document/CstmrCdtTrfInitn/GrpHdr/CtrlSum",
     "more than 17 fraction digits"),
])
def test_cli_prints_one_located_line_and_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str], old: str, new: str,
                                                 path: str, what: str) -> None:
    damaged = _damaged(tmp_path, old, new)
    assert main(["xml", "decode", str(XSD), str(damaged)]) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err
    match = ONE_LINE.match(err)
    assert match, err
    assert match["file"] == str(damaged) and match["path"] == path and what in match["what"], err
    assert int(match["line"]) == next(n for n, line in enumerate(damaged.read_text().splitlines(), 1) if new in line)


def test_a_stream_names_the_record(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    damaged = _damaged(tmp_path, "<ReqdExctnDt>2025-08-19", "<ReqdExctnDt>99999999999999999999-08-19")
    assert main(["xml", "decode", str(XSD), str(damaged), "--record-path", "Document/CstmrCdtTrfInitn/PmtInf"]) == 1
    err = capsys.readouterr().err.strip()
    assert ("/Document/CstmrCdtTrfInitn/PmtInf[1]/ReqdExctnDt: '99999999999999999999-08-19': an xs:date whose year"
            " 99999999999999999999 is outside 0001..9999") in err
    assert "\n" not in err


def test_control_sums_of_iso_20022_decode_and_the_avro_decimal_holds_every_value_the_facets_allow() -> None:
    model = XsdModel.load(XSD)
    decimal = next(f["type"][1] for f in model.avro_schema("Document")["fields"][0]["type"]["fields"][0]["type"]["fields"]
                   if f["name"] == "CtrlSum")
    assert decimal == {"type": "bytes", "logicalType": "decimal", "precision": 35, "scale": 17}  # 18 digits + 17 fraction
    decoder = model.decoder("Document")
    record = decoder.decode_document(DOC.read_bytes().replace(b"<CtrlSum>12.34</CtrlSum>", b"<CtrlSum>123456789012345678</CtrlSum>", 1))
    assert str(record["CstmrCdtTrfInitn"]["GrpHdr"]["CtrlSum"].normalize()) == "123456789012345678"
    written = model.encoder("Document").encode(record).decode()
    assert "<CtrlSum>123456789012345678</CtrlSum>" in written and "<CtrlSum>12.34</CtrlSum>" in written
    with pytest.raises(XmlValidationError, match="more than 18 digits"):  # the XSD's own limit
        decoder.decode_document(DOC.read_bytes().replace(b"<CtrlSum>12.34</CtrlSum>", b"<CtrlSum>1234567890123456789</CtrlSum>", 1))


@pytest.mark.parametrize("command", [["xsd", "schema"], ["xml", "decode"]])
def test_an_xml_document_given_as_the_schema_is_named_with_what_to_do(capsys: pytest.CaptureFixture[str],
                                                                       command: list[str]) -> None:
    """A newcomer's first mistake: the instance where the XSD goes. One complete line, no bare colon."""
    assert main([*command, str(DOC), *([str(DOC)] if command[0] == "xml" else [])]) == 1
    err = capsys.readouterr().err.strip()
    assert err == (f"coupler: error: {DOC}: not an XSD: its root element is <Document>, not <xs:schema> "
                   "(give the .xsd file that describes the documents first, then the XML documents)")


@pytest.mark.parametrize("stream", [False, True], ids=["documents", "record-path"])
def test_xml_decode_shows_progress_on_a_terminal_and_nothing_when_piped(tmp_path: Path, stream: bool) -> None:
    """Issue 20: a long decode shows a progress bar (bytes, records, rate) on a terminal; piped, nothing."""
    import subprocess
    import sys

    args = ["xml", "decode", str(XSD), str(DOC), str(DOC), "--output", str(tmp_path / "out.jsonl")]
    if stream:
        args += ["--record-path", "Document/CstmrCdtTrfInitn/PmtInf"]
    run = coupler_on_a_terminal(args)
    rc, shown = run.returncode, run.shown
    assert rc == 0, shown
    records = len((tmp_path / "out.jsonl").read_text().splitlines())
    assert records >= 2
    assert f"100.0% {records} records" in shown and "[" + "#" * 30 + "]" in shown, shown
    piped = subprocess.run([sys.executable, "-m", "coupler.bus.cli.main", *args], capture_output=True, text=True,
                           timeout=60)
    assert piped.returncode == 0 and piped.stderr == "" and piped.stdout == ""


@pytest.mark.parametrize("stream", [[], ["--record-path", "Document/CstmrCdtTrfInitn/PmtInf"]], ids=["documents", "record-path"])
def test_xml_decode_of_a_missing_document_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          stream: list[str]) -> None:
    assert main(["xml", "decode", str(XSD), str(DOC), str(tmp_path / "nope.xml"), *stream]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.strip() == f"coupler: error: input file {tmp_path / 'nope.xml'} does not exist"


INTEGERS_XSD = """<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema">
 <xs:element name="R"><xs:complexType><xs:sequence>
  <xs:element name="u" type="xs:unsignedLong" minOccurs="0"/>
  <xs:element name="n" type="xs:integer" minOccurs="0"/>
  <xs:element name="i" type="xs:int" minOccurs="0"/>
 </xs:sequence></xs:complexType></xs:element>
</xs:schema>"""


@pytest.mark.parametrize(("doc", "xsd_allows", "what"), [
    ("<R><u>10000000000000000000</u></R>", True, "beyond the Avro long that xs:unsignedLong is mapped to"),
    ("<R><n>-99999999999999999999</n></R>", True, "beyond the Avro long that xs:integer is mapped to"),
    ("<R><i>2147483648</i></R>", False, "is out of the range of xs:int (-2147483648..2147483647)"),
])
def test_an_integer_beyond_the_avro_long_is_not_called_invalid_when_the_xsd_allows_it(
        tmp_path: Path, doc: str, xsd_allows: bool, what: str) -> None:
    """xs:unsignedLong and the unbounded integer types map to an Avro long: a value the XSD
    accepts but the long cannot hold is refused, saying so (not "the document does not match
    the XSD", which would send the user to correct a valid document)."""
    xsd = tmp_path / "ints.xsd"
    xsd.write_text(INTEGERS_XSD)
    model = XsdModel.load(xsd)
    assert model.schema.is_valid(doc) is xsd_allows
    with pytest.raises(XmlValidationError) as info:
        model.decoder("R").decode_document(doc.encode(), name="ints.xml")
    message = str(info.value)
    assert what in message and "\n" not in message
    assert ("does not match the XSD" in message) is not xsd_allows, message


MANY_CODES_XSD = """<?xml version="1.0" encoding="UTF-8"?>
<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema">
  <xs:simpleType name="Code">
    <xs:restriction base="xs:string"><xs:pattern value="[A-Z]{2}"/></xs:restriction>
  </xs:simpleType>
  <xs:element name="batch">
    <xs:complexType><xs:sequence>
      <xs:element name="item" maxOccurs="unbounded">
        <xs:complexType><xs:sequence>
          <xs:element name="code" type="Code" maxOccurs="unbounded"/>
        </xs:sequence></xs:complexType>
      </xs:element>
    </xs:sequence></xs:complexType>
  </xs:element>
</xs:schema>
"""


@pytest.mark.parametrize("written", ["document", "record-path stream"])
def test_encoding_stops_at_the_first_validation_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      written: str) -> None:
    """The encoder validates what it wrote in xmlschema's strict mode: 20,000 values its
    pattern refuses build one error, not 20,000 (lax mode: seconds, growing with the count)."""
    import time

    import xmlschema

    xsd = tmp_path / "codes.xsd"
    xsd.write_text(MANY_CODES_XSD)
    encoder = XsdModel.load(xsd).encoder("batch")
    built = 0
    make_error = xmlschema.XMLSchemaValidationError.__init__

    def counted(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        nonlocal built
        built += 1
        make_error(self, *args, **kwargs)

    monkeypatch.setattr(xmlschema.XMLSchemaValidationError, "__init__", counted)
    codes = ["ok"] * 20_000  # lower case: not [A-Z]{2}
    start = time.process_time()
    with pytest.raises(XmlValidationError) as refused:
        if written == "document":
            encoder.encode({"item": [{"code": codes}]})
        else:
            encoder.write_stream([{"code": ["AB"]}, {"code": codes}], tmp_path / "out.xml", "batch/item")
    assert time.process_time() - start < 10  # about 0.3 s here; lax mode builds every error first
    message = str(refused.value)
    assert "\n" not in message and "doesn't match any pattern of ['[A-Z]{2}']" in message
    assert ("record 2" in message) == (written == "record-path stream")
    assert "code[1]" in message
    assert built <= 2, f"{built} validation errors built for the first one"
