"""A mapping is checked against both schemas when it is loaded; errors name the file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from coupler.canonical.registry import SchemaRegistry
from coupler.translators.mapping import MappingError, load_mapping

DATA = Path(__file__).parent / "data"

HEAD = '''legacy = "copybook:{cpy}"
canonical = "demo.Account@1"

[legacy_options]
encoding = "ascii"

[lookups.status]
A = "ACTIVE"
I = "INACTIVE"

[[field]]
legacy = "ACCT-ID"
canonical = "account_id"
format = "06d"
'''
#: the lines of HEAD, so that the expected line numbers below read as in the file
HEAD_LINES = HEAD.count("\n")

REST = '''
[[field]]
legacy = ["FIRST-NAME", "LAST-NAME"]
canonical = "name"
separator = " "

[[field]]
legacy = "STATUS-CODE"
canonical = "status"
lookup = "status"

[[field]]
legacy = "OPEN-DATE"
canonical = "opened"
format = "%Y%m%d"

[[field]]
legacy = "BALANCE"
canonical = "balance"

[[field]]
legacy = "BRANCH-CODE"
canonical = "branch.code"

[[field]]
legacy = "BRANCH-CITY"
canonical = "branch.city"

[[field]]
canonical = "source"
constant = "X"
'''


@pytest.fixture(scope="module")
def registry() -> SchemaRegistry:
    return SchemaRegistry.default(extra_dirs=[DATA / "schemas"])


def write(tmp_path: Path, body: str, rest: str = REST) -> Path:
    path = tmp_path / "bad.toml"
    path.write_text(HEAD.format(cpy=DATA / "account.cpy") + body + rest)
    return path


def line_of(path: Path, needle: str) -> int:
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if needle in line:
            return number
    raise AssertionError(needle)


def where(path: Path, needle: str) -> str:
    return f"{path}:{line_of(path, needle)}"


def fails(path: Path, registry: SchemaRegistry, match: str, **kw) -> MappingError:
    with pytest.raises(MappingError, match=match) as err:
        load_mapping(path, registry=registry, **kw)
    return err.value


def test_the_test_mappings_load_and_are_invertible(registry: SchemaRegistry) -> None:
    for name in ("account-copybook.toml", "account-xml.toml"):
        mapping = load_mapping(DATA / name, registry=registry)
        assert mapping.invertible, name


def test_valid_head_and_rest_load(tmp_path: Path, registry: SchemaRegistry) -> None:
    assert load_mapping(write(tmp_path, ""), registry=registry).invertible


def test_unknown_legacy_field_names_file_and_line(tmp_path: Path, registry: SchemaRegistry) -> None:
    path = write(tmp_path, '\n[[field]]\nlegacy = "BRANCH-CTY"\ncanonical = "branch.city"\n')
    err = fails(path, registry, "unknown field 'BRANCH-CTY'.*did you mean 'BRANCH_CITY'")
    assert err.where == where(path, 'BRANCH-CTY')
    assert str(err).startswith(f"{path}:{HEAD_LINES + 3}: ")


def test_unknown_canonical_field_names_file_and_line(tmp_path: Path, registry: SchemaRegistry) -> None:
    path = write(tmp_path, '\n[[field]]\nlegacy = "BRANCH-CITY"\ncanonical = "branch.town"\n')
    err = fails(path, registry, "unknown field 'town' in branch")
    assert err.where == where(path, 'branch.town')


def test_type_mismatch_names_file_and_line(tmp_path: Path, registry: SchemaRegistry) -> None:
    path = write(tmp_path, '\n[[field]]\nlegacy = "BRANCH-CITY"\ncanonical = "branch"\n')
    err = fails(path, registry, "type mismatch.*record")
    assert err.where == where(path, 'canonical = "branch"')


def test_integer_to_date_without_format_is_a_type_mismatch(tmp_path: Path, registry: SchemaRegistry) -> None:
    path = write(tmp_path, "", REST.replace('format = "%Y%m%d"\n', ""))
    err = fails(path, registry, "type mismatch.*only with a format")
    assert err.where == where(path, 'canonical = "opened"')


def test_bad_date_format_names_the_format_line(tmp_path: Path, registry: SchemaRegistry) -> None:
    path = write(tmp_path, "", REST.replace('format = "%Y%m%d"', 'format = "YYYYMMDD"'))
    err = fails(path, registry, "not a strftime pattern")
    assert err.where == where(path, 'YYYYMMDD')


def test_lookup_value_that_is_not_an_enum_symbol_names_the_table_line(tmp_path: Path, registry: SchemaRegistry) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(HEAD.format(cpy=DATA / "account.cpy").replace('I = "INACTIVE"', 'I = "DORMANT"') + REST)
    err = fails(path, registry, "'DORMANT' is not a symbol of enum Status")
    assert err.where == where(path, 'DORMANT')


def test_unknown_key_in_a_rule(tmp_path: Path, registry: SchemaRegistry) -> None:
    path = write(tmp_path, '\n[[field]]\nlegacy = "BRANCH-CITY"\ncanonical = "branch.city"\nseperator = ","\n')
    err = fails(path, registry, "unknown key 'seperator'.*did you mean 'separator'")
    assert err.where == where(path, 'seperator')


def test_unknown_top_level_key(tmp_path: Path, registry: SchemaRegistry) -> None:
    path = tmp_path / "bad.toml"
    path.write_text("legacy_option = 1\n" + HEAD.format(cpy=DATA / "account.cpy") + REST)
    err = fails(path, registry, "unknown key 'legacy_option'.*legacy_options")
    assert err.where == f"{path}:1"


def test_unknown_field_inside_each_names_its_line(tmp_path: Path, registry: SchemaRegistry) -> None:
    body = ('\n[[field]]\nlegacy = "LINES"\ncanonical = "lines"\n'
            '  [[field.each]]\n  legacy = "SKU"\n  canonical = "sku"\n'
            '  [[field.each]]\n  legacy = "QTY"\n  canonical = "qty"\n')
    path = write(tmp_path, body)
    err = fails(path, registry, "unknown field 'qty'.*fields: quantity, sku")
    assert err.where == where(path, 'canonical = "qty"')


def test_required_canonical_field_nobody_sets(tmp_path: Path, registry: SchemaRegistry) -> None:
    path = write(tmp_path, "", REST.replace('[[field]]\ncanonical = "source"\nconstant = "X"\n', ""))
    mapping = load_mapping(path, registry=registry)
    with pytest.raises(MappingError, match="canonical field 'source' is required and no rule sets it") as err:
        mapping.direction("to_canonical")
    assert err.value.where == where(path, 'canonical = "demo.Account@1"')


def test_constant_that_does_not_fit(tmp_path: Path, registry: SchemaRegistry) -> None:
    path = write(tmp_path, "", REST.replace('constant = "X"', "constant = 12"))
    err = fails(path, registry, "constant does not fit the canonical field")
    assert err.where == where(path, 'constant = 12')


def test_unknown_function_lists_the_registered_ones(tmp_path: Path, registry: SchemaRegistry) -> None:
    path = write(tmp_path, '\n[[field]]\nlegacy = "BRANCH-CITY"\ncanonical = "branch.city"\nfunction = "titlecase"\n')
    err = fails(path, registry, "unknown mapping function 'titlecase'.*registered: upper", functions={"upper": str.upper})
    assert err.where == where(path, 'titlecase')


def test_unknown_lookup_table(tmp_path: Path, registry: SchemaRegistry) -> None:
    path = write(tmp_path, "", REST.replace('lookup = "status"', 'lookup = "statuses"'))
    err = fails(path, registry, "no lookup table 'statuses'.*did you mean 'status'")
    assert err.where == where(path, 'statuses')


def test_bad_toml_names_the_file(tmp_path: Path, registry: SchemaRegistry) -> None:
    path = tmp_path / "bad.toml"
    path.write_text('legacy = "copybook:x.cpy\n')
    err = fails(path, registry, "not valid TOML: ")
    assert err.where == f"{path}:1:25" and "line 1" not in err.message  # the place is in where, once


def test_arrays_nested_too_deep_for_toml_are_refused_in_one_line(tmp_path: Path, registry: SchemaRegistry) -> None:
    """tomllib reads nested arrays by recursion, with no limit of its own (a RecursionError before)."""
    path = tmp_path / "deep.toml"
    path.write_text("x = " + "[" * 2000 + "]" * 2000 + "\n")
    err = fails(path, registry, r"TOML nested too deeply \(arrays or inline tables")
    assert err.where == str(path)


def test_unknown_canonical_entity(tmp_path: Path, registry: SchemaRegistry) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(HEAD.format(cpy=DATA / "account.cpy").replace("demo.Account@1", "demo.Account@9") + REST)
    err = fails(path, registry, "no version 9 of demo.Account")
    assert err.where == f"{path}:2"


def test_missing_legacy_copybook(tmp_path: Path, registry: SchemaRegistry) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(HEAD.format(cpy="nowhere.cpy") + REST)
    err = fails(path, registry, "legacy 'copybook:nowhere.cpy'")
    assert err.where == f"{path}:1"
