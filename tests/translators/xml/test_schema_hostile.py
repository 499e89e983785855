"""Partners' schema documents from a hostile hand: XSDs whose declarations nest hundreds deep,
include cycles, includes of files outside the schema's folder and of http:// URLs, invalid or
catastrophic regular expressions, recursive and circular types, entity declarations, and the
XSD and WSDL of tests/adapters/soap mutated at random. Each loads or is refused with one line
(a :class:`CouplerError` naming the file) within its bound, never another exception.
``COUPLER_FUZZ_SECONDS``, ``COUPLER_FUZZ_SEED``: tests/fuzzing.py."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from coupler.canonical.errors import CouplerError
from coupler.translators.soap.wsdl import read_wsdl
from coupler.translators.xml import XsdModel
from tests.fuzzing import MB, SEED, bounded, cases

XS = 'xmlns:xs="http://www.w3.org/2001/XMLSchema"'
SOAP_DATA = Path(__file__).parents[2] / "adapters" / "soap" / "data"


def nested(depth: int) -> str:
    return (f"<xs:schema {XS}>" + "".join(f'<xs:element name="e{i}"><xs:complexType><xs:sequence>' for i in range(depth))
            + "</xs:sequence></xs:complexType></xs:element>" * depth + "</xs:schema>")


def refusal(path: Path, element: str | None = None) -> str:
    with pytest.raises(CouplerError) as err:
        model = XsdModel.load(path)
        model.decoder(element)
    text = str(err.value)
    assert "\n" not in text and str(path) in text, text
    return text


@pytest.mark.parametrize("depth", [200, 300, 600])
def test_declarations_nested_hundreds_deep_are_refused_in_one_line(tmp_path: Path, depth: int) -> None:
    path = tmp_path / "deep.xsd"
    path.write_text(nested(depth))
    with bounded(f"{depth} deep", seconds=30):
        refusal(path, "e0")


def test_declarations_nested_a_few_dozen_deep_load(tmp_path: Path) -> None:
    path = tmp_path / "deep.xsd"
    path.write_text(nested(50))
    XsdModel.load(path).decoder("e0")


@pytest.mark.parametrize("location", ["http://127.0.0.1:19001/x.xsd", "https://example.invalid/x.xsd"])
def test_an_import_over_the_network_is_refused_naming_it(tmp_path: Path, location: str) -> None:
    path = tmp_path / "net.xsd"
    path.write_text(f'<xs:schema {XS}><xs:import namespace="urn:x" schemaLocation="{location}"/>'
                    f'<xs:element name="e" type="xs:string"/></xs:schema>')
    assert location in refusal(path)


def test_an_include_cycle_loads_once(tmp_path: Path) -> None:
    (tmp_path / "a.xsd").write_text(f'<xs:schema {XS}><xs:include schemaLocation="b.xsd"/>'
                                    f'<xs:element name="a"><xs:complexType><xs:sequence><xs:element ref="b"/>'
                                    f"</xs:sequence></xs:complexType></xs:element></xs:schema>")
    (tmp_path / "b.xsd").write_text(f'<xs:schema {XS}><xs:include schemaLocation="a.xsd"/>'
                                    f'<xs:element name="b" type="xs:string"/></xs:schema>')
    XsdModel.load(tmp_path / "a.xsd").decoder("a")


@pytest.mark.parametrize("pattern", ["[a-", "a{2,1}", "\\p{NoSuchBlock}", "(?P<x>a)", "a**"])
def test_an_invalid_pattern_facet_is_refused_in_one_line(tmp_path: Path, pattern: str) -> None:
    path = tmp_path / "re.xsd"
    path.write_text(f'<xs:schema {XS}><xs:simpleType name="t"><xs:restriction base="xs:string">'
                    f'<xs:pattern value="{pattern}"/></xs:restriction></xs:simpleType>'
                    f'<xs:element name="e"><xs:complexType><xs:sequence><xs:element name="v" type="t"/>'
                    f"</xs:sequence></xs:complexType></xs:element></xs:schema>")
    refusal(path, "e")


@pytest.mark.parametrize("body", [
    '<xs:group name="g"><xs:sequence><xs:group ref="g"/></xs:sequence></xs:group>'
    '<xs:complexType name="n"><xs:group ref="g"/></xs:complexType><xs:element name="e" type="n"/>',
    '<xs:complexType name="a"><xs:complexContent><xs:extension base="b"/></xs:complexContent></xs:complexType>'
    '<xs:complexType name="b"><xs:complexContent><xs:extension base="a"/></xs:complexContent></xs:complexType>'
    '<xs:element name="e" type="a"/>',
], ids=["group", "derivation"])
def test_circular_definitions_are_refused_in_one_line(tmp_path: Path, body: str) -> None:
    path = tmp_path / "circular.xsd"
    path.write_text(f"<xs:schema {XS}>{body}</xs:schema>")
    assert "Circular" in refusal(path, "e")


def _mutate(rng: random.Random, text: str) -> str:
    inserts = ['<xs:include schemaLocation="policy-types.xsd"/>', '<xs:import schemaLocation="http://127.0.0.1:19002/x"/>',
               '<xs:include schemaLocation="/etc/passwd"/>', '<xs:pattern value="(a*)*["/>', 'maxOccurs="99999999999"',
               'type="xs:nothing"', 'base="p:Nope"', "<!DOCTYPE s [<!ENTITY x 'y'>]>", "&x;", "<xs:sequence>" * 50,
               '<xs:element name="x" type="xs:string"/>' * 50, 'xmlns:xs="urn:wrong"', "\x00", "<![CDATA[", "<wsdl:import location='policy.wsdl'/>"]
    out = text
    for _ in range(rng.randrange(1, 4)):
        at = rng.randrange(len(out) + 1)
        op = rng.randrange(4)
        if op == 0:
            out = out[:at] + rng.choice(inserts) + out[at:]
        elif op == 1:
            out = out[:at]
        elif op == 2:
            out = out[:at] + out[at + rng.randrange(1, 40):]
        else:
            out = out[:at] + out[at:at + rng.randrange(1, 200)] * rng.randrange(1, 5) + out[at:]
    return out


def test_random_mutated_xsds_and_wsdls_load_or_are_refused_in_one_line(tmp_path: Path) -> None:
    print(f"COUPLER_FUZZ_SEED={SEED}")
    rng = random.Random(SEED)
    xsd, wsdl = (SOAP_DATA / "policy-types.xsd").read_text(), (SOAP_DATA / "policy.wsdl").read_text()
    count = refused = 0
    for count in cases(least=10):  # noqa: B007
        which = rng.choice(["xsd", "wsdl"])
        folder = tmp_path / str(count)
        folder.mkdir()
        (folder / "policy-types.xsd").write_text(_mutate(rng, xsd) if which == "xsd" else xsd)
        (folder / "policy.wsdl").write_text(_mutate(rng, wsdl) if which == "wsdl" else wsdl)
        with bounded(f"{which} {count}", seconds=20, memory=256 * MB):
            try:
                if which == "xsd":
                    XsdModel.load(folder / "policy-types.xsd").decoder("{urn:acme:policy}GetQuote")
                else:
                    read_wsdl(folder / "policy.wsdl")
            except CouplerError as exc:
                assert "\n" not in str(exc), str(exc)
                refused += 1
    print(f"{count + 1} schema documents, {refused} refused in one line")


def test_a_cut_schema_whose_root_prefix_is_bound_nowhere_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "cut.xsd"
    path.write_text("<xs:s")  # the start of <xs:schema, the document cut there
    refusal(path)
