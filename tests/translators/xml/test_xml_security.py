"""Hostile documents are refused: XXE, billion laughs, quadratic blow-up, DTD and schema fetches."""

from __future__ import annotations

from pathlib import Path

import pytest

from coupler.translators.xml import XmlSecurityError, XsdModel, parse_document

DATA = Path(__file__).parent / "data" / "security"
NOTE = DATA / "note.xsd"


@pytest.fixture(scope="module")
def model() -> XsdModel:
    return XsdModel.load(NOTE)


@pytest.mark.parametrize("name", ["xxe.xml", "billion-laughs.xml", "quadratic.xml"])
def test_entity_declarations_are_refused(model: XsdModel, name: str) -> None:
    with pytest.raises(XmlSecurityError, match="entit"):
        model.decoder("note").decode_document(DATA / name)
    with pytest.raises(XmlSecurityError, match="entit"):
        list(model.decoder("note").iter_records(DATA / name, "note/body"))


def test_xxe_never_reads_the_file(model: XsdModel, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET")
    doc = (DATA / "xxe.xml").read_text().replace("file:///etc/passwd", secret.as_uri())
    with pytest.raises(XmlSecurityError) as info:
        parse_document(doc.encode())
    assert "TOP-SECRET" not in str(info.value)


def test_external_dtd_is_never_fetched(model: XsdModel, tmp_path: Path, http_server: tuple[str, list[str]]) -> None:
    url, hits = http_server
    doc = tmp_path / "dtd.xml"
    doc.write_text(f'<?xml version="1.0"?>\n<!DOCTYPE note SYSTEM "{url}/evil.dtd">\n<note xmlns="urn:test:note"><body>&x;</body></note>')
    with pytest.raises(XmlSecurityError, match="external DTD"):
        model.decoder("note").decode_document(doc)
    with pytest.raises(XmlSecurityError, match="external DTD"):
        list(model.decoder("note").iter_records(doc, "note/body"))
    assert hits == []


def test_schema_location_hints_in_documents_are_ignored(model: XsdModel, tmp_path: Path, http_server: tuple[str, list[str]]) -> None:
    url, hits = http_server
    doc = tmp_path / "hint.xml"
    doc.write_text(
        '<note xmlns="urn:test:note" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
        f'xsi:schemaLocation="urn:test:note {url}/note.xsd"><body>hi</body></note>'
    )
    assert model.decoder("note").decode_document(doc) == {"body": "hi"}
    assert hits == []


def test_schema_with_entities_is_refused(tmp_path: Path) -> None:
    xsd = tmp_path / "evil.xsd"
    xsd.write_text(
        '<?xml version="1.0"?><!DOCTYPE xs:schema [<!ENTITY e SYSTEM "file:///etc/passwd">]>'
        '<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema"><xs:element name="a" type="xs:string"/>'
        "<xs:annotation><xs:documentation>&e;</xs:documentation></xs:annotation></xs:schema>"
    )
    with pytest.raises(Exception, match="(?i)entit|dtd|forbidden") as info:
        XsdModel.load(xsd)
    assert "root:" not in str(info.value)
