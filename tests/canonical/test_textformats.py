"""Every loader reads TOML and JSON through canonical.textformats: one reason, the place as
file:line:column, and nesting deep enough to end Python's stack refused in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from coupler.bus.config.loader import ConfigError, load_site
from coupler.canonical.errors import SchemaError
from coupler.canonical.registry import read_schema_file
from coupler.canonical.textformats import TextFormatError, load_json, load_toml
from coupler.translators.copybook.family import FamilyError, LayoutFamily


def test_bad_toml_names_line_and_column_once() -> None:
    with pytest.raises(TextFormatError) as err:
        load_toml('a = 1\nb = "open\n')
    assert (err.value.line, err.value.column) == (2, 10)
    assert err.value.reason.startswith("not valid TOML: ") and "line" not in err.value.reason
    assert err.value.at("site.toml") == "site.toml:2:10"


def test_bad_json_names_line_and_column() -> None:
    with pytest.raises(TextFormatError) as err:
        load_json('{\n  "a": 1,\n  "b": }')
    assert (err.value.line, err.value.column) == (3, 8)
    assert err.value.reason == "not valid JSON: Expecting value"


@pytest.mark.parametrize(("load", "text", "nested"), [
    (load_toml, "x = " + "[" * 5000 + "]" * 5000, "TOML nested too deeply (arrays or inline tables inside each other hundreds of times)"),
    (load_json, "[" * 200_000 + "]" * 200_000, "JSON nested too deeply (arrays or objects inside each other thousands of times)")])
def test_nesting_that_ends_the_stack_is_a_one_line_refusal(load, text: str, nested: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(TextFormatError) as err:
        load(text)
    assert err.value.reason == nested
    assert err.value.at("f") == "f"


def test_each_loader_says_it_the_same_way(tmp_path: Path) -> None:
    """A site file, a layout family and a schema file: ``file:line:column: not valid ...``."""
    site = tmp_path / "site.toml"
    site.write_text('[site]\nname = "x\n')
    family = tmp_path / "family.toml"
    family.write_text('name = "x\n')
    schema = tmp_path / "v1.avsc"
    schema.write_text('{"type": }')
    for call, path, error in ((lambda: load_site(site), site, ConfigError),
                              (lambda: LayoutFamily.load(family), family, FamilyError),
                              (lambda: read_schema_file(schema), schema, SchemaError)):
        with pytest.raises(error) as err:
            call()
        assert str(err.value).startswith(f"{path}:"), str(err.value)
        assert str(err.value).split(": ", 1)[0].count(":") == 2, str(err.value)  # file:line:column
        assert "not valid" in str(err.value) and "\n" not in str(err.value)
