"""A schema reads local files under its own directory only (and the directories a site adds):
an ``xs:include``/``xs:import`` of ``/etc/passwd`` or ``../../../etc/shadow`` in a partner's XSD
or WSDL is refused in one line naming the schema file and line, the location and what to do,
before the file is opened."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

from coupler.bus.cli.main import main
from coupler.translators.soap.wsdl import read_wsdl
from coupler.translators.xml import XsdModel
from coupler.translators.xml.errors import XsdError
from coupler.translators.xml.security import load_schema

XS = "http://www.w3.org/2001/XMLSchema"


def _schema(path: Path, body: str = "", *, tns: str = "urn:h105:main", element: str = "doc") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f'<?xml version="1.0"?>\n<xs:schema xmlns:xs="{XS}" targetNamespace="{tns}" xmlns="{tns}"\n'
        f'           elementFormDefault="qualified">\n{body}'
        f'  <xs:element name="{element}"><xs:complexType><xs:sequence>\n'
        f'    <xs:element name="v" type="xs:string"/></xs:sequence></xs:complexType></xs:element>\n</xs:schema>\n')
    return path


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """partner/main.xsd (the schema a user gives), partner/sub/ and a sibling outside/ with a
    valid schema: read today through ``../outside/other.xsd``."""
    _schema(tmp_path / "outside" / "other.xsd", element="other")
    _schema(tmp_path / "partner" / "sub" / "types.xsd", element="typed")
    return tmp_path


def _including(tree: Path, location: str) -> Path:
    return _schema(tree / "partner" / "main.xsd", f'  <xs:include schemaLocation="{location}"/>\n')


@pytest.mark.parametrize("location", ["../outside/other.xsd", "{tree}/outside/other.xsd", "file://{tree}/outside/other.xsd"])
def test_an_include_outside_the_schemas_directory_is_refused_naming_file_line_location_and_what_to_do(
        tree: Path, location: str) -> None:
    location = location.format(tree=tree)
    main_xsd = _including(tree, location)
    with pytest.raises(XsdError) as info:
        load_schema(main_xsd)
    text = str(info.value)
    assert "\n" not in text
    assert text.startswith(f"{main_xsd}:4: ")  # the xs:include's line
    assert location in text and str(tree / "outside" / "other.xsd") in text
    assert str(tree / "partner") in text  # the directory it may read
    assert "schema_roots" in text and "--schema-root" in text  # what to do


@pytest.mark.parametrize("location", ["/etc/passwd", "../../../../../../../../etc/passwd", "/dev/zero"])
def test_system_files_are_refused_before_being_read(tree: Path, location: str) -> None:
    main_xsd = _including(tree, location)
    with pytest.raises(XsdError, match="outside the directories") as info:
        load_schema(main_xsd)
    assert str(info.value).startswith(f"{main_xsd}:4: ")
    assert "root:" not in str(info.value)


def test_an_import_outside_is_refused_too_and_a_nested_one_names_its_own_file(tree: Path) -> None:
    _schema(tree / "outside" / "ns.xsd", tns="urn:h105:other", element="ns")
    sub = _schema(tree / "partner" / "sub" / "nested.xsd",
                  '  <xs:import namespace="urn:h105:other" schemaLocation="../../outside/ns.xsd"/>\n',
                  tns="urn:h105:nested", element="nested")
    main_xsd = _schema(tree / "partner" / "main.xsd",
                       '  <xs:import namespace="urn:h105:nested" schemaLocation="sub/nested.xsd"/>\n')
    with pytest.raises(XsdError) as info:
        load_schema(main_xsd)
    assert str(info.value).startswith(f"{sub}:4: ") and "../../outside/ns.xsd" in str(info.value)


def test_the_schemas_own_tree_loads_and_extra_roots_widen_it(tree: Path) -> None:
    assert "{urn:h105:main}typed" in load_schema(_including(tree, "sub/types.xsd")).maps.elements
    main_xsd = _including(tree, "../outside/other.xsd")
    schema = load_schema(main_xsd, roots=[tree / "outside"])
    assert "{urn:h105:main}other" in schema.maps.elements
    assert XsdModel.load(main_xsd, schema_roots=[tree]).avro_schema("other")


def test_a_symbolic_link_out_of_the_directory_is_refused(tree: Path) -> None:
    (tree / "partner" / "link.xsd").symlink_to(tree / "outside" / "other.xsd")
    with pytest.raises(XsdError, match="outside the directories"):
        load_schema(_including(tree, "link.xsd"))
    # the schema given may itself be a link: its own directory is the linked file's too
    (tree / "links").mkdir()
    (tree / "links" / "given.xsd").symlink_to(tree / "partner" / "sub" / "types.xsd")
    assert "{urn:h105:main}typed" in load_schema(tree / "links" / "given.xsd").maps.elements


def test_the_cli_takes_schema_roots(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main_xsd = _including(tree, "../outside/other.xsd")
    assert main(["xsd", "schema", str(main_xsd), "--element", "other"]) != 0
    assert "--schema-root" in capsys.readouterr().err
    assert main(["xsd", "schema", str(main_xsd), "--element", "other", "--schema-root", str(tree / "outside")]) == 0


def _wsdl(path: Path, types: str = "", imports: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'''<?xml version="1.0"?>
<definitions xmlns="http://schemas.xmlsoap.org/wsdl/" xmlns:xs="{XS}"
             xmlns:soap="http://schemas.xmlsoap.org/wsdl/soap/" xmlns:tns="urn:h105:main"
             targetNamespace="urn:h105:main">
{imports}  <types>
    <xs:schema targetNamespace="urn:h105:w">
{types}      <xs:element name="w" type="xs:string"/>
    </xs:schema>
  </types>
</definitions>
''')
    return path


def test_a_wsdls_schemas_read_under_the_wsdls_directory_only(tree: Path) -> None:
    inline = _wsdl(tree / "partner" / "inline.wsdl",
                   types='      <xs:include schemaLocation="../outside/other.xsd"/>\n')
    with pytest.raises(XsdError) as info:
        read_wsdl(inline)
    assert str(info.value).startswith(f"{inline}:7: ") and "../outside/other.xsd" in str(info.value)
    imported = _wsdl(tree / "partner" / "imported.wsdl",
                     imports='  <import namespace="urn:h105:main" location="/etc/passwd"/>\n')
    with pytest.raises(XsdError) as info:
        read_wsdl(imported)
    assert str(info.value).startswith(f"{imported}:5: ") and "/etc/passwd" in str(info.value)
    # a schema the WSDL imports from its directory may not read beyond the WSDL's directory either
    _including(tree, "../outside/other.xsd")
    through = _wsdl(tree / "partner" / "through.wsdl",
                    imports='  <import namespace="urn:h105:main" location="main.xsd"/>\n')
    with pytest.raises(XsdError) as info:
        read_wsdl(through)
    assert str(info.value).startswith(f"{tree / 'partner' / 'main.xsd'}:4: ")
    assert "{urn:h105:main}other" in read_wsdl(through, schema_roots=[tree / "outside"]).schemas[0].maps.elements


# -- very wide content models: xmlschema checks them in quadratic time; over the bound, refused --

def _wide(path: Path, count: int, *, name: str = "wide") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fields = "\n".join(f'      <xs:element name="f{n}" type="xs:string" minOccurs="0"/>' for n in range(count))
    path.write_text(f'<?xml version="1.0"?>\n<xs:schema xmlns:xs="{XS}">\n  <xs:complexType name="{name}">\n'
                    f'    <xs:sequence>\n{fields}\n    </xs:sequence>\n  </xs:complexType>\n'
                    f'  <xs:element name="doc" type="{name}"/>\n</xs:schema>\n')
    return path


def test_a_content_model_wider_than_the_default_bound_is_refused_at_once_naming_the_line_and_the_option(
        tmp_path: Path) -> None:
    import time

    wide = _wide(tmp_path / "wide.xsd", 5001)
    started = time.monotonic()
    with pytest.raises(XsdError) as info:
        load_schema(wide)
    assert time.monotonic() - started < 10  # xmlschema would check it for a minute and more
    text = str(info.value)
    assert "\n" not in text and text.startswith(f"{wide}:3: ")
    assert "'wide'" in text and "5001 particles" in text and "5000" in text
    assert "max_model_particles" in text and "--max-model-particles" in text


def test_the_bound_is_configurable_and_names_the_included_file(tmp_path: Path) -> None:
    wide = _wide(tmp_path / "wide.xsd", 60)
    with pytest.raises(XsdError, match="60 particles, more than 50"):
        load_schema(wide, max_model_particles=50)
    assert "doc" in load_schema(wide, max_model_particles=60).elements
    assert "doc" in XsdModel.load(wide, max_model_particles=0).schema.elements
    main_xsd = tmp_path / "main.xsd"
    main_xsd.write_text(f'<xs:schema xmlns:xs="{XS}">\n  <xs:include schemaLocation="wide.xsd"/>\n</xs:schema>\n')
    with pytest.raises(XsdError) as info:
        load_schema(main_xsd, max_model_particles=50)
    assert str(info.value).startswith(f"{wide}:3: ")


def _from_groups(path: Path, count: int, per: int) -> Path:
    """A type whose sequence refers to ``count`` named groups of ``per`` elements each."""
    groups = "".join(f'  <xs:group name="g{g}"><xs:sequence>'
                     + "".join(f'<xs:element name="g{g}f{n}" type="xs:string" minOccurs="0"/>' for n in range(per))
                     + '</xs:sequence></xs:group>\n' for g in range(count))
    refs = "".join(f'<xs:group ref="g{g}"/>' for g in range(count))
    path.write_text(f'<?xml version="1.0"?>\n<xs:schema xmlns:xs="{XS}">\n{groups}'
                    f'  <xs:complexType name="wide"><xs:sequence>{refs}</xs:sequence></xs:complexType>\n'
                    f'  <xs:element name="doc" type="wide"/>\n</xs:schema>\n')
    return path


def _from_extensions(path: Path, count: int, per: int) -> Path:
    """A chain of ``count`` types, each extending the one before with ``per`` elements."""
    types = []
    for t in range(count):
        fields = "".join(f'<xs:element name="t{t}f{n}" type="xs:string" minOccurs="0"/>' for n in range(per))
        types.append(f'  <xs:complexType name="t{t}"><xs:sequence>{fields}</xs:sequence></xs:complexType>\n' if t == 0
                     else f'  <xs:complexType name="t{t}"><xs:complexContent><xs:extension base="t{t - 1}">'
                          f'<xs:sequence>{fields}</xs:sequence></xs:extension></xs:complexContent></xs:complexType>\n')
    path.write_text(f'<?xml version="1.0"?>\n<xs:schema xmlns:xs="{XS}">\n{"".join(types)}'
                    f'  <xs:element name="doc" type="t{count - 1}"/>\n</xs:schema>\n')
    return path


@pytest.mark.parametrize("build", [_from_groups, _from_extensions], ids=["groups", "extensions"])
def test_a_wide_model_built_from_groups_or_an_extension_chain_is_refused_at_once(tmp_path: Path, build: Any) -> None:
    """5,500 particles, no more than 110 in any one declaration: unbounded, xmlschema loads the
    extension chain in 89 s and the groups in 496 s (h109, under nice, 2 shared cores)."""
    import time

    small = build(tmp_path / "small.xsd", 10, 50)
    assert "doc" in load_schema(small).elements  # 500 particles
    wide = build(tmp_path / "wide.xsd", 50, 110)
    started = time.monotonic()
    with pytest.raises(XsdError) as info:
        load_schema(wide)
    assert time.monotonic() - started < 1.0
    text = str(info.value)
    assert "\n" not in text and re.match(rf"{re.escape(str(wide))}:\d+: ", text)
    assert "5500 particles, more than 5000" in text and "--max-model-particles" in text


def test_groups_each_referring_twice_to_the_one_below_are_counted_without_expanding_them(tmp_path: Path) -> None:
    """g40 -> g39 twice -> ... -> g0: 2**40 particles, each group counted once."""
    import time

    groups = '  <xs:group name="g0"><xs:sequence><xs:element name="a" type="xs:string"/></xs:sequence></xs:group>\n'
    groups += "".join(f'  <xs:group name="g{g}"><xs:sequence><xs:group ref="g{g - 1}"/><xs:group ref="g{g - 1}"/>'
                      '</xs:sequence></xs:group>\n' for g in range(1, 41))
    deep = tmp_path / "deep.xsd"
    deep.write_text(f'<?xml version="1.0"?>\n<xs:schema xmlns:xs="{XS}">\n{groups}'
                    '  <xs:element name="doc"><xs:complexType><xs:sequence><xs:group ref="g40"/></xs:sequence>'
                    '</xs:complexType></xs:element>\n</xs:schema>\n')
    started = time.monotonic()
    with pytest.raises(XsdError, match=f"has {2 ** 40} particles"):
        load_schema(deep)
    assert time.monotonic() - started < 1.0


def test_a_group_in_a_file_read_later_is_counted_in(tmp_path: Path) -> None:
    """main.xsd includes types.xsd (the wide type, referring to the groups), then groups.xsd
    (the groups): no file alone is over the bound; found once all are read, before the build."""
    import time

    _from_groups(tmp_path / "groups.xsd", 50, 110)
    refs = "".join(f'<xs:group ref="g{g}"/>' for g in range(50))
    (tmp_path / "types.xsd").write_text(
        f'<?xml version="1.0"?>\n<xs:schema xmlns:xs="{XS}">\n'
        f'  <xs:complexType name="wider"><xs:sequence>{refs}</xs:sequence></xs:complexType>\n</xs:schema>\n')
    main_xsd = tmp_path / "main.xsd"
    main_xsd.write_text(f'<?xml version="1.0"?>\n<xs:schema xmlns:xs="{XS}">\n'
                        '  <xs:include schemaLocation="types.xsd"/>\n  <xs:include schemaLocation="groups.xsd"/>\n'
                        '  <xs:element name="top" type="wider"/>\n</xs:schema>\n')
    started = time.monotonic()
    with pytest.raises(XsdError, match="'wider' has 5500 particles") as info:
        load_schema(main_xsd)
    assert time.monotonic() - started < 2.0
    assert "\n" not in str(info.value) and str(info.value).startswith(f"{tmp_path / 'types.xsd'}:3: ")


def test_the_cli_and_wsdls_take_the_bound(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wide = _wide(tmp_path / "wide.xsd", 60)
    assert main(["xsd", "schema", str(wide), "--max-model-particles", "50"]) != 0
    assert "--max-model-particles" in capsys.readouterr().err
    assert main(["xsd", "schema", str(wide), "--max-model-particles", "60"]) == 0
    fields = "".join(f'<xs:element name="f{n}" type="xs:string"/>' for n in range(60))
    wsdl = _wsdl(tmp_path / "wide.wsdl", types=f'      <xs:complexType name="t"><xs:sequence>{fields}</xs:sequence></xs:complexType>\n')
    with pytest.raises(XsdError) as info:
        read_wsdl(wsdl, max_model_particles=50)
    assert str(info.value).startswith(f"{wsdl}:7: ")
    assert read_wsdl(wsdl, max_model_particles=60).schemas


def test_the_soap_adapter_takes_schema_roots_and_the_bound() -> None:
    """Oracle's CCMS WSDL imports ``../../../BusinessObjects/...``: refused until the
    distribution's root is a schema root."""
    from coupler.adapters.soap import SoapAdapter

    schema = Path(__file__).parents[1] / "soap" / "corpus" / "oracle" / "ccms" / "Schema"
    wsdl = schema / "BusinessServices" / "CCMS" / "ClientManagement" / "ClientServices.wsdl"
    options = {"mode": "client", "wsdl": str(wsdl), "address": "http://127.0.0.1:9/ccms"}
    with pytest.raises(XsdError, match="outside the directories"):
        SoapAdapter("ccms", options)
    assert SoapAdapter("ccms", {**options, "schema_roots": [str(schema)]}).description.schemas
    with pytest.raises(XsdError, match="more than 5"):
        SoapAdapter("ccms", {**options, "schema_roots": [str(schema)], "max_model_particles": 5})


# -- the default roots: the current directory on the command line, the site's folder in a site --

def _ubl_like(tree: Path) -> Path:
    """maindoc/Invoice.xsd imports ../common/Components.xsd, as UBL 2.1 lays them out."""
    _schema(tree / "ubl" / "common" / "Components.xsd", tns="urn:h107:common", element="amount")
    return _schema(tree / "ubl" / "maindoc" / "Invoice.xsd",
                   '  <xs:import namespace="urn:h107:common" schemaLocation="../common/Components.xsd"/>\n',
                   tns="urn:h107:invoice", element="invoice")


def test_the_cli_run_from_a_parent_directory_reads_its_siblings_without_schema_root(
        tree: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    invoice = _ubl_like(tree)
    monkeypatch.chdir(tree)
    assert main(["xsd", "schema", "ubl/maindoc/Invoice.xsd", "--element", "invoice"]) == 0, capsys.readouterr().err
    assert main(["xsd", "schema", str(invoice), "--element", "invoice"]) == 0  # the path given absolute, same
    capsys.readouterr()
    # from the schema's own directory the parent is not a root: refused, naming --schema-root
    monkeypatch.chdir(tree / "ubl" / "maindoc")
    assert main(["xsd", "schema", "Invoice.xsd", "--element", "invoice"]) != 0
    err = capsys.readouterr().err
    assert "outside the directories" in err and "--schema-root" in err and "Traceback" not in err
    assert main(["xsd", "schema", "Invoice.xsd", "--element", "invoice", "--schema-root", str(tree / "ubl")]) == 0


def test_the_cli_run_from_a_parent_directory_still_refuses_system_files(
        tree: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    main_xsd = _including(tree, "/etc/passwd")
    fifo = tree / "partner" / "fifo.xsd"
    os.mkfifo(fifo)
    monkeypatch.chdir(tree)
    for xsd in (main_xsd, _schema(tree / "partner" / "piped.xsd", '  <xs:include schemaLocation="fifo.xsd"/>\n')):
        assert main(["xsd", "schema", str(xsd.relative_to(tree))]) != 0
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "outside the directories" in err and "Traceback" not in err
        assert f"{xsd.relative_to(tree)}:4: " in err


def test_the_wsdl_cli_run_from_a_parent_directory_reads_its_siblings(
        tree: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    _ubl_like(tree)
    wsdl = _wsdl(tree / "ubl" / "wsdl" / "service.wsdl",
                 types='      <xs:import namespace="urn:h107:invoice" schemaLocation="../maindoc/Invoice.xsd"/>\n')
    monkeypatch.chdir(tree)
    assert main(["wsdl", "describe", str(wsdl.relative_to(tree))]) == 0, capsys.readouterr().err


def test_the_spark_xml_source_reads_siblings_under_the_drivers_directory(
        tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Spark XML job started from the distribution's folder, as the command line: the
    driver's working directory is a root, carried to the tasks (they may run elsewhere)."""
    from coupler.translators.spark import xml_splits

    invoice = _ubl_like(tree)
    monkeypatch.chdir(tree / "ubl" / "maindoc")
    with pytest.raises(XsdError, match="outside the directories"):
        xml_splits.record_avro_schema(str(invoice), "invoice", "")
    monkeypatch.chdir(tree)
    assert xml_splits.record_avro_schema(str(invoice), "invoice", "")["type"] == "record"
    task = xml_splits.XmlSplitTask(str(invoice), "invoice", None, "avro", {}, None)  # type: ignore[arg-type]
    monkeypatch.chdir(tree / "ubl" / "maindoc")
    assert task.roots == (str(tree),)
    assert xml_splits._decoder(task.xsd, "invoice", task.roots) is not None
