"""The Cobrix-named option dictionary."""

from __future__ import annotations

import pytest

from coupler.translators.copybook.options import CopybookOptions, OptionsError


def test_defaults_are_cobrix_except_the_code_page():
    o = CopybookOptions.from_mapping({})
    assert o.record_format == "F"
    assert o.encoding == "ebcdic"
    assert o.ebcdic_code_page == "cp037"
    assert o.is_rdw_big_endian is False
    assert o.floating_point_format == "IBM"
    assert o.string_trimming_policy == "both"
    assert o.improved_null_detection is True
    assert o.strict_sign_overpunching is True
    assert o.schema_retention_policy == "collapse_root"
    assert o.drop_value_fillers is True and o.drop_group_fillers is False
    assert o.variable_size_occurs is False
    assert o.to_dict() == {}


def test_cli_pairs_and_cobrix_spellings():
    o = CopybookOptions.from_pairs(
        [
            "record_format=vb",
            "IS_RDW_BIG_ENDIAN=true",
            "rdw_adjustment=-4",
            "redefine_segment_id_map:0=STATIC-DETAILS => C,D",
            "redefine-segment-id-map:1=CONTACTS => P",
            "segment_id_level0=C",
            "segment_id_level1=P",
            "segment_filter=S9276511,S1",
            "floating_point_format=ieee754",
            'occurs_mappings={"FIELD": {"A": 1, "B": 2}}',
            "debug=true",
        ]
    )
    assert o.record_format == "VB"
    assert o.is_rdw_big_endian is True
    assert o.rdw_adjustment == -4
    assert o.segment_redefines == {"C": "STATIC-DETAILS", "D": "STATIC-DETAILS", "P": "CONTACTS"}
    assert o.segment_id_levels == ("C", "P")
    assert o.segment_filter == ("S9276511", "S1")
    assert o.floating_point_format == "IEEE754"
    assert o.occurs_mapping == {"FIELD": {"A": 1, "B": 2}}
    assert o.debug == "hex"
    assert CopybookOptions.from_mapping(o.to_dict()) == o
    assert o.decode_context().floating_point_format == "IEEE754"


def test_python_values_are_accepted():
    o = CopybookOptions.from_mapping({"generate_record_id": True, "record_length": 45})
    assert o.generate_record_id is True and o.record_length == 45
    assert o.with_options({"encoding": "ascii"}).encoding == "ascii"
    assert o.with_options({"encoding": "ascii"}).record_length == 45


def test_unknown_option_suggests_the_nearest_name():
    with pytest.raises(OptionsError, match="unknown option 'record_formt'") as err:
        CopybookOptions.from_mapping({"record_formt": "V"})
    assert "did you mean record_format" in str(err.value)
    with pytest.raises(OptionsError, match="did you mean is_rdw_big_endian"):
        CopybookOptions.from_pairs(["is_rdw_bigendian=true"])
    assert CopybookOptions.from_mapping({"path": "/x"}, ignore=["path"]) == CopybookOptions()


@pytest.mark.parametrize(
    ("key", "value", "accepted"),
    [
        ("record_format", "X", "F, FB, V, VB, D"),
        ("ebcdic_code_page", "cp999", "cp037, cp037_extended"),
        ("string_trimming_policy", "middle", "both, left, right, none, keep_all"),
        ("generate_record_id", "maybe", "true or false"),
        ("file_start_offset", "-1", "integer >= 0"),
        ("record_length", "abc", "an integer"),
        ("redefine_segment_id_map:0", "NO-ARROW", "REDEFINE-FIELD => ID1,ID2"),
        ("occurs_mappings", "{bad json", "JSON"),
        ("ascii_charset", "klingon", "character set"),
    ],
)
def test_bad_values_name_the_option_and_the_accepted_values(key, value, accepted):
    with pytest.raises(OptionsError) as err:
        CopybookOptions.from_mapping({key: value})
    assert f"option {key}" in str(err.value)
    assert accepted in str(err.value)


@pytest.mark.parametrize(("spelling", "page"), [
    ("cp37", "cp037"), ("IBM037", "cp037"), ("ibm-037", "cp037"), ("ebcdic-cp-us", "cp037"),
    ("IBM-1047", "cp1047"), ("ibm1140", "cp1140"), ("CP500", "cp500"), ("common", "common"),
])
def test_code_pages_by_their_common_names(spelling, page):
    assert CopybookOptions.from_mapping({"ebcdic_code_page": spelling}).ebcdic_code_page == page


def test_inconsistent_options():
    with pytest.raises(OptionsError, match="needs encoding=ascii"):
        CopybookOptions.from_mapping({"record_format": "D"})
    with pytest.raises(OptionsError, match="without gaps"):
        CopybookOptions.from_mapping({"segment_id_level1": "P"})
    with pytest.raises(OptionsError, match="not KEY=VALUE"):
        CopybookOptions.from_pairs(["record_format"])
