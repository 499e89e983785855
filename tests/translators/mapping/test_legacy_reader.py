"""LegacyReader: one legacy record of a mapping from what an adapter read (the record's bytes
by the mapping's legacy spec, or the record as JSON) — the inbound half of the bus's
translation stage."""

from __future__ import annotations

import datetime
from decimal import Decimal
from pathlib import Path

import pytest

from coupler.canonical.errors import CouplerError
from coupler.canonical.registry import SchemaRegistry
from coupler.translators.mapping import load_mapping
from coupler.translators.mapping.formats import parse_spec
from coupler.translators.mapping.jsonvalues import dumps
from coupler.translators.mapping.legacy import LegacyReader

DATA = Path(__file__).parent / "data"

ACCOUNT = {
    "account_id": "000042", "name": "Ada Lovelace", "status": "ACTIVE", "opened": datetime.date(2024, 1, 31),
    "balance": Decimal("1234.50"), "branch": {"code": "LON1", "city": "London"},
    "lines": [{"sku": "ABC123", "quantity": 2, "unit_price": Decimal("9.99")},
              {"sku": "XYZ789", "quantity": 1, "unit_price": Decimal("100.00")}],
    "source": "BRANCH-SYSTEM", "email": None,
}


@pytest.fixture(scope="module")
def registry() -> SchemaRegistry:
    return SchemaRegistry.from_dirs([DATA / "schemas"])


def test_copybook_record_bytes_and_json_give_the_same_legacy_record(registry: SchemaRegistry) -> None:
    from coupler.translators.copybook.decoder import parse_options
    from coupler.translators.copybook.encoder import RecordEncoder
    from coupler.translators.copybook.layout import build_layout
    from coupler.translators.copybook.parser import parse_file

    mapping = load_mapping(DATA / "account-copybook.toml", registry=registry)
    legacy = mapping.to_legacy(ACCOUNT)
    spec = parse_spec(mapping.legacy_spec, base_dir=DATA, options=mapping.legacy_options)
    data = bytes(RecordEncoder(build_layout(parse_file(spec.path)), parse_options(spec.options)).encode(legacy))
    reader = LegacyReader(mapping)
    from_bytes = reader.decode(data, "application/x-cobol-record")
    assert mapping.to_canonical(from_bytes) == ACCOUNT
    from_json = reader.decode(dumps(from_bytes).encode(), "application/json")
    assert from_json == from_bytes
    # the place is named once, as the file has it: record 7 (from 1) at its file byte offset
    with pytest.raises(CouplerError, match=r"^accounts.dat: record 7 at byte 600, field ACCOUNT_REC.ACCT_ID: "):
        reader.decode(b"ABCDEF" + data[6:], "application/x-cobol-record", label="accounts.dat", record=6,
                      offset=600)  # ACCT-ID PIC 9(6)
    with pytest.raises(CouplerError, match="record 7 is not JSON"):
        reader.decode(b"{nope", "application/json", label="record 7")
    with pytest.raises(CouplerError, match="does not fit the legacy schema of account-copybook.toml"):
        reader.decode(b'{"NO_SUCH_FIELD": 1}', "application/json")


def test_repeated_xml_elements_are_read_one_at_a_time(registry: SchemaRegistry, tmp_path: Path) -> None:
    from lxml import etree

    from coupler.translators.mapping.formats import ErrorReport, record_format

    mapping = load_mapping(DATA / "account-xml.toml", registry=registry)  # xml:accounts.xsd@accounts/account
    feed = tmp_path / "accounts.xml"
    report: ErrorReport = lambda n, error: pytest.fail(str(error))  # noqa: E731
    record_format(parse_spec(mapping.legacy_spec, base_dir=DATA)).write([mapping.to_legacy(ACCOUNT)], feed, report)
    (element,) = etree.parse(str(feed)).getroot()
    reader = LegacyReader(mapping)
    assert mapping.to_canonical(reader.decode(etree.tostring(element), "application/xml")) == {**ACCOUNT, "source": "ACCOUNTS-XML"}
    with pytest.raises(CouplerError, match="is not the record element"):
        reader.decode(etree.tostring(etree.parse(str(feed)).getroot()), "application/xml")


def test_an_xml_record_no_converter_can_read_is_a_located_coupler_error(registry: SchemaRegistry, tmp_path: Path) -> None:
    from lxml import etree

    from coupler.translators.mapping.formats import ErrorReport, record_format

    mapping = load_mapping(DATA / "account-xml.toml", registry=registry)
    feed = tmp_path / "accounts.xml"
    report: ErrorReport = lambda n, error: pytest.fail(str(error))  # noqa: E731
    record_format(parse_spec(mapping.legacy_spec, base_dir=DATA)).write([mapping.to_legacy(ACCOUNT)], feed, report)
    (element,) = etree.parse(str(feed)).getroot()
    dates = [e for e in element.iter() if isinstance(e.tag, str) and e.text == "2024-01-31"]
    dates[0].text = "99999999999999999999-01-31"  # a year Python's date cannot hold
    with pytest.raises(CouplerError, match=r"message 9:\d+ /account/\w+: '99999999999999999999-01-31': an xs:date whose year \d+ is outside 0001..9999"):
        LegacyReader(mapping).decode(etree.tostring(element), "application/xml", label="message 9")


def test_the_xsd_of_an_xml_spec_reads_the_sites_folder_in_a_site(registry: SchemaRegistry, tmp_path: Path) -> None:
    """mappings/xsd/accounts.xsd includes ../../common/accounts.xsd: refused alone (outside its
    directory), read in a site, whose folder is a schema root (the bus's inbound and outbound
    translation stages)."""
    from coupler.bus.config.loader import AdapterConfig
    from coupler.bus.runtime.stages import InboundTranslation
    from coupler.bus.runtime.translation import OutboundTranslation
    from coupler.translators.mapping.writers import BUILTIN_TRANSLATORS

    site = tmp_path / "h107_site"
    (site / "common").mkdir(parents=True)
    (site / "common" / "accounts.xsd").write_text((DATA / "accounts.xsd").read_text())
    (site / "mappings" / "xsd").mkdir(parents=True)
    (site / "mappings" / "xsd" / "accounts.xsd").write_text(
        '<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema">\n'
        '  <xs:include schemaLocation="../../common/accounts.xsd"/>\n</xs:schema>\n')
    text = (DATA / "account-xml.toml").read_text().replace('"xml:accounts.xsd@', '"xml:xsd/accounts.xsd@')
    (site / "mappings" / "account.toml").write_text(text)
    with pytest.raises(CouplerError, match="outside the directories"):
        load_mapping(site / "mappings" / "account.toml", registry=registry)
    mapping = load_mapping(site / "mappings" / "account.toml", registry=registry, schema_roots=[site])
    assert LegacyReader(mapping).kind == "xml"
    config = AdapterConfig.model_validate({"name": "feed", "type": "filedrop", "mapping": "mappings/account.toml"})
    stage = InboundTranslation.for_adapter(config, registry, site)
    assert stage is not None and stage.reader.kind == "xml"
    assert OutboundTranslation.for_adapter(config, registry, site, BUILTIN_TRANSLATORS) is not None
