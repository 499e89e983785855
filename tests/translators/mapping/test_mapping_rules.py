"""Every mapping feature, both directions, on small inline schemas."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal

import pytest

from coupler.translators.mapping import MappingError, parse_mapping

LEGACY = {
    "type": "record", "name": "LEGACY", "fields": [
        {"name": "CUST_ID", "type": ["null", "int"], "default": None},
        {"name": "FIRST", "type": ["null", "string"], "default": None},
        {"name": "LAST", "type": ["null", "string"], "default": None},
        {"name": "FULL", "type": ["null", "string"], "default": None},
        {"name": "STATUS", "type": ["null", "string"], "default": None},
        {"name": "LEVEL", "type": ["null", "int"], "default": None},
        {"name": "BORN", "type": ["null", "int"], "default": None},
        {"name": "BORN_TEXT", "type": ["null", "string"], "default": None},
        {"name": "STAMP", "type": ["null", "string"], "default": None},
        {"name": "AMOUNT", "type": ["null", {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}], "default": None},
        {"name": "AMOUNT_TEXT", "type": ["null", "string"], "default": None},
        {"name": "FLAG", "type": ["null", "string"], "default": None},
        {"name": "REC_TYPE", "type": ["null", "string"], "default": None},
        {"name": "ADDR", "type": ["null", {"type": "record", "name": "ADDR", "fields": [
            {"name": "STREET", "type": ["null", "string"], "default": None},
            {"name": "TOWN", "type": ["null", "string"], "default": None},
        ]}], "default": None},
        {"name": "PHONES", "type": ["null", {"type": "array", "items": ["null", "string"]}], "default": None},
        {"name": "SCORES", "type": ["null", {"type": "array", "items": ["null", "string"]}], "default": None},
        {"name": "ITEMS", "type": ["null", {"type": "array", "items": {"type": "record", "name": "ITEM", "fields": [
            {"name": "CODE", "type": ["null", "string"], "default": None},
            {"name": "QTY", "type": ["null", "string"], "default": None},
        ]}}], "default": None},
    ],
}

CANONICAL = {
    "type": "record", "name": "Customer", "namespace": "t", "fields": [
        {"name": "id", "type": "string"},
        {"name": "name", "type": ["null", "string"], "default": None},
        {"name": "first", "type": ["null", "string"], "default": None},
        {"name": "last", "type": ["null", "string"], "default": None},
        {"name": "status", "type": ["null", {"type": "enum", "name": "Status", "symbols": ["ACTIVE", "INACTIVE"]}], "default": None},
        {"name": "tier", "type": ["null", "string"], "default": None},
        {"name": "born", "type": ["null", {"type": "int", "logicalType": "date"}], "default": None},
        {"name": "born2", "type": ["null", {"type": "int", "logicalType": "date"}], "default": None},
        {"name": "stamp", "type": ["null", {"type": "long", "logicalType": "timestamp-millis"}], "default": None},
        {"name": "amount", "type": ["null", {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 3}], "default": None},
        {"name": "amount2", "type": ["null", {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}], "default": None},
        {"name": "vip", "type": ["null", "boolean"], "default": None},
        {"name": "origin", "type": ["null", "string"], "default": None},
        {"name": "address", "type": ["null", {"type": "record", "name": "Address", "fields": [
            {"name": "street", "type": ["null", "string"], "default": None},
            {"name": "city", "type": ["null", "string"], "default": None},
        ]}], "default": None},
        {"name": "phone", "type": ["null", "string"], "default": None},
        {"name": "mobile", "type": ["null", "string"], "default": None},
        {"name": "scores", "type": {"type": "array", "items": "int"}, "default": []},
        {"name": "items", "type": {"type": "array", "items": {"type": "record", "name": "Item", "fields": [
            {"name": "code", "type": "string"},
            {"name": "quantity", "type": "int"},
        ]}}, "default": []},
    ],
}


def load(rules: str, *, functions=None, legacy=LEGACY, canonical=CANONICAL, file="map.toml"):
    text = '[[field]]\nlegacy = "CUST_ID"\ncanonical = "id"\nformat = "05d"\n\n' + rules
    return parse_mapping(text, file=file, legacy_schema=legacy, canonical_schema=canonical, functions=functions)


def both(mapping, legacy_record):
    canonical = mapping.to_canonical(legacy_record)
    back = mapping.to_legacy(canonical)
    return canonical, back


def test_rename_and_number_text_cast_both_ways() -> None:
    m = load("")
    canonical, back = both(m, {"CUST_ID": 42})
    assert canonical["id"] == "00042"
    assert back["CUST_ID"] == 42
    assert m.invertible


def test_nested_paths_both_ways() -> None:
    m = load('[[field]]\nlegacy = "ADDR.STREET"\ncanonical = "address.street"\n'
             '[[field]]\nlegacy = "ADDR.TOWN"\ncanonical = "address.city"\n')
    canonical, back = both(m, {"CUST_ID": 1, "ADDR": {"STREET": "1 Main St", "TOWN": "Leeds"}})
    assert canonical["address"] == {"street": "1 Main St", "city": "Leeds"}
    assert back["ADDR"] == {"STREET": "1 Main St", "TOWN": "Leeds"}


def test_array_index_paths_both_ways() -> None:
    m = load('[[field]]\nlegacy = "PHONES[0]"\ncanonical = "phone"\n'
             '[[field]]\nlegacy = "PHONES[1]"\ncanonical = "mobile"\n')
    canonical, back = both(m, {"CUST_ID": 1, "PHONES": ["0113 496 0000", "07700 900000"]})
    assert (canonical["phone"], canonical["mobile"]) == ("0113 496 0000", "07700 900000")
    assert back["PHONES"] == ["0113 496 0000", "07700 900000"]


def test_date_from_integer_with_format_both_ways() -> None:
    m = load('[[field]]\nlegacy = "BORN"\ncanonical = "born"\nformat = "%Y%m%d"\n'
             '[[field]]\nlegacy = "BORN_TEXT"\ncanonical = "born2"\nformat = "%d.%m.%Y"\n')
    canonical, back = both(m, {"CUST_ID": 1, "BORN": 19700102, "BORN_TEXT": "31.12.1999"})
    assert canonical["born"] == date(1970, 1, 2) and canonical["born2"] == date(1999, 12, 31)
    assert back["BORN"] == 19700102 and back["BORN_TEXT"] == "31.12.1999"


def test_timestamp_from_text_with_format_is_utc() -> None:
    m = load('[[field]]\nlegacy = "STAMP"\ncanonical = "stamp"\nformat = "%Y-%m-%d-%H.%M.%S"\n')
    canonical, back = both(m, {"CUST_ID": 1, "STAMP": "2024-02-29-13.45.07"})
    assert canonical["stamp"] == datetime(2024, 2, 29, 13, 45, 7, tzinfo=UTC)
    assert back["STAMP"] == "2024-02-29-13.45.07"


def test_decimals_are_exact_and_never_rounded() -> None:
    m = load('[[field]]\nlegacy = "AMOUNT"\ncanonical = "amount"\n'
             '[[field]]\nlegacy = "AMOUNT_TEXT"\ncanonical = "amount2"\nformat = "09.2f"\n')
    canonical, back = both(m, {"CUST_ID": 1, "AMOUNT": Decimal("1234567.89"), "AMOUNT_TEXT": "000012.30"})
    assert canonical["amount"] == Decimal("1234567.890") and canonical["amount"].as_tuple().exponent == -3
    assert canonical["amount2"] == Decimal("12.30")
    assert back["AMOUNT"] == Decimal("1234567.89") and back["AMOUNT_TEXT"] == "000012.30"
    with pytest.raises(MappingError, match="more than 2 fraction digits") as err:
        m.to_canonical({"CUST_ID": 1, "AMOUNT_TEXT": "12.345"})
    assert err.value.where == "map.toml:9"  # the [[field]] of AMOUNT_TEXT
    with pytest.raises(MappingError, match="not rounded"):
        m.to_legacy({"id": "1", "amount": Decimal("1.005")})


def test_boolean_text_cast_with_words() -> None:
    m = load('[[field]]\nlegacy = "FLAG"\ncanonical = "vip"\nformat = "Y|N"\n')
    canonical, back = both(m, {"CUST_ID": 1, "FLAG": "Y"})
    assert canonical["vip"] is True and back["FLAG"] == "Y"
    assert m.to_canonical({"CUST_ID": 1, "FLAG": "N"})["vip"] is False


def test_lookup_table_both_ways_and_unknown_value() -> None:
    m = load('[lookups.status]\nA = "ACTIVE"\nI = "INACTIVE"\n\n'
             '[[field]]\nlegacy = "STATUS"\ncanonical = "status"\nlookup = "status"\n')
    canonical, back = both(m, {"CUST_ID": 1, "STATUS": "I"})
    assert canonical["status"] == "INACTIVE" and back["STATUS"] == "I"
    with pytest.raises(MappingError, match="'X' is not in lookup table 'status'"):
        m.to_canonical({"CUST_ID": 1, "STATUS": "X"})


def test_lookup_with_integer_keys_inline() -> None:
    m = load('[[field]]\nlegacy = "LEVEL"\ncanonical = "tier"\nlookup = { 1 = "gold", 2 = "silver" }\n')
    canonical, back = both(m, {"CUST_ID": 1, "LEVEL": 2})
    assert canonical["tier"] == "silver" and back["LEVEL"] == 2


def test_lookup_that_is_not_one_to_one_only_maps_to_canonical() -> None:
    m = load('[lookups.status]\nA = "ACTIVE"\nN = "ACTIVE"\nI = "INACTIVE"\n\n'
             '[[field]]\nlegacy = "STATUS"\ncanonical = "status"\nlookup = "status"\n')
    assert m.to_canonical({"CUST_ID": 1, "STATUS": "N"})["status"] == "ACTIVE"
    assert not m.invertible
    with pytest.raises(MappingError, match="not one-to-one") as err:
        m.direction("to_legacy")
    assert err.value.where == "map.toml:11"  # the [[field]] using the table


def test_constants_on_either_side() -> None:
    m = load('[[field]]\ncanonical = "origin"\nconstant = "MAINFRAME"\n'
             '[[field]]\nlegacy = "REC_TYPE"\nconstant = "C"\n')
    canonical, back = both(m, {"CUST_ID": 1, "REC_TYPE": "Z"})
    assert canonical["origin"] == "MAINFRAME" and "REC_TYPE" not in {k for k, v in canonical.items() if v}
    assert back["REC_TYPE"] == "C"


def test_defaults_for_null_and_blank_values() -> None:
    m = load('[[field]]\nlegacy = "FIRST"\ncanonical = "first"\ndefault = "(none)"\nlegacy_default = "?"\n')
    assert m.to_canonical({"CUST_ID": 1, "FIRST": None})["first"] == "(none)"
    assert m.to_canonical({"CUST_ID": 1, "FIRST": ""})["first"] == "(none)"
    assert m.to_canonical({"CUST_ID": 1, "FIRST": "Ann"})["first"] == "Ann"
    assert m.to_legacy({"id": "1", "first": None})["FIRST"] == "?"


def test_concatenation_and_its_inverse_split() -> None:
    m = load('[[field]]\nlegacy = ["FIRST", "LAST"]\ncanonical = "name"\nseparator = " "\n')
    canonical, back = both(m, {"CUST_ID": 1, "FIRST": "Ada", "LAST": "Lovelace King"})
    assert canonical["name"] == "Ada Lovelace King"
    assert (back["FIRST"], back["LAST"]) == ("Ada", "Lovelace King")


def test_concatenation_leaves_out_empty_parts() -> None:
    m = load('[[field]]\nlegacy = ["FIRST", "LAST"]\ncanonical = "name"\nseparator = " "\n')
    assert m.to_canonical({"CUST_ID": 1, "FIRST": "", "LAST": "Hopper"})["name"] == "Hopper"
    assert m.to_canonical({"CUST_ID": 1, "FIRST": None, "LAST": "Hopper"})["name"] == "Hopper"
    assert m.to_canonical({"CUST_ID": 1, "FIRST": "Grace", "LAST": ""})["name"] == "Grace"


def test_splitting_and_its_inverse_concatenation() -> None:
    m = load('[[field]]\nlegacy = "FULL"\ncanonical = ["last", "first"]\nseparator = ", "\n')
    canonical, back = both(m, {"CUST_ID": 1, "FULL": "Hopper, Grace"})
    assert (canonical["last"], canonical["first"]) == ("Hopper", "Grace")
    assert back["FULL"] == "Hopper, Grace"


def test_arrays_of_records_map_each_element() -> None:
    m = load('[[field]]\nlegacy = "ITEMS"\ncanonical = "items"\n'
             '  [[field.each]]\n  legacy = "CODE"\n  canonical = "code"\n'
             '  [[field.each]]\n  legacy = "QTY"\n  canonical = "quantity"\n')
    canonical, back = both(m, {"CUST_ID": 1, "ITEMS": [{"CODE": "A1", "QTY": "3"}, {"CODE": "B2", "QTY": "10"}]})
    assert canonical["items"] == [{"code": "A1", "quantity": 3}, {"code": "B2", "quantity": 10}]
    assert back["ITEMS"] == [{"CODE": "A1", "QTY": "3"}, {"CODE": "B2", "QTY": "10"}]
    assert m.to_canonical({"CUST_ID": 1})["items"] == []


def test_arrays_of_values_are_cast_element_by_element() -> None:
    m = load('[[field]]\nlegacy = "SCORES"\ncanonical = "scores"\n')
    canonical, back = both(m, {"CUST_ID": 1, "SCORES": ["7", "12"]})
    assert canonical["scores"] == [7, 12] and back["SCORES"] == ["7", "12"]


def test_custom_function_and_inverse() -> None:
    functions = {"upper": lambda v: v.upper() if v else v, "lower": lambda v: v.lower() if v else v}
    m = load('[[field]]\nlegacy = "LAST"\ncanonical = "last"\nfunction = "upper"\ninverse = "lower"\n', functions=functions)
    canonical, back = both(m, {"CUST_ID": 1, "LAST": "curie"})
    assert canonical["last"] == "CURIE" and back["LAST"] == "curie"


def test_function_with_several_fields_and_no_inverse_is_one_way() -> None:
    functions = {"initials": lambda first, last: f"{first[0]}. {last}"}
    m = load('[[field]]\nlegacy = ["FIRST", "LAST"]\ncanonical = "name"\nfunction = "initials"\n', functions=functions)
    assert m.to_canonical({"CUST_ID": 1, "FIRST": "Marie", "LAST": "Curie"})["name"] == "M. Curie"
    with pytest.raises(MappingError, match="has no inverse") as err:
        m.to_legacy({"id": "1"})
    assert err.value.where == "map.toml:6"


def test_one_way_rule_by_direction() -> None:
    m = load('[[field]]\nlegacy = "FIRST"\ncanonical = "first"\ndirection = "to_legacy"\n')
    assert m.to_canonical({"CUST_ID": 1, "FIRST": "x"})["first"] is None
    assert m.to_legacy({"id": "1", "first": "y"})["FIRST"] == "y"


def test_required_canonical_field_with_a_null_value_is_an_error() -> None:
    m = load("")
    with pytest.raises(MappingError, match="id is required"):
        m.to_canonical({"CUST_ID": None})


def test_nothing_in_a_mapping_outlives_the_record() -> None:
    m = load('[[field]]\nlegacy = "ADDR.TOWN"\ncanonical = "address.city"\n')
    first = m.to_canonical({"CUST_ID": 1, "ADDR": {"TOWN": "A"}})
    second = m.to_canonical({"CUST_ID": 2})
    assert first["address"] == {"city": "A", "street": None} and second["address"] is None
