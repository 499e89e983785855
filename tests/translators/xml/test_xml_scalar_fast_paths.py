"""The decoder's fast paths give what the general paths give (values and errors).

The per-record loop decodes a simple-typed child inline, decides a decimal's digits from its
text when it can, and collapses whitespace only when there is some; these cases sit on each
side of those shortcuts (docs/performance.md, issue 15).
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from pathlib import Path

import pytest

from coupler.translators.xml import XmlValidationError, XsdModel
from coupler.translators.xml.scalars import Scalar, _decoder

ORDERS_XSD = Path(__file__).parent / "data" / "orders" / "orders.xsd"
AMOUNT = Scalar("decimal", builtin="decimal", white_space="collapse", precision=7, scale=2)  # totalDigits 5, fractionDigits 2


@pytest.mark.parametrize(("text", "value"), [
    ("123.45", "123.45"), ("12345", "12345"), ("-123.45", "-123.45"), ("+.5", "0.5"), ("12.", "12"),
    ("0123.45", "123.45"),  # a leading zero is no digit: more characters than totalDigits, still valid
    ("00012345", "12345"), ("123.450", "123.45"), ("1.5000", "1.50"), (" 123.45\n", "123.45"),
])  # fmt: skip
def test_decimals_within_the_facets(text: str, value: str) -> None:
    assert _decoder(AMOUNT)(text) == Decimal(value)


@pytest.mark.parametrize(("text", "error"), [
    ("123.451", "fraction digits"), ("1234.56", "more than 5 digits"), ("1234.5", None), ("123456", "more than 5 digits"),
    ("1 2", "not an xs:decimal"), ("1e3", "not an xs:decimal"), ("", "not an xs:decimal"),
])  # fmt: skip
def test_decimals_beyond_the_facets(text: str, error: str | None) -> None:
    if error is None:  # the limit itself
        assert _decoder(AMOUNT)(text) == Decimal(text)
        return
    with pytest.raises(ValueError, match=error):
        _decoder(AMOUNT)(text)


def test_whitespace_collapse_of_typed_and_string_values() -> None:
    assert _decoder(Scalar("long", builtin="long", white_space="collapse"))(" 12\t") == 12
    assert _decoder(Scalar("long", builtin="long", white_space="collapse"))("12\n") == 12
    with pytest.raises(ValueError, match="'1 2' is not an xs:long"):  # the collapsed text is named
        _decoder(Scalar("long", builtin="long", white_space="collapse"))("1\t2")
    assert _decoder(Scalar("date", builtin="date", white_space="collapse"))("\n 2024-01-31 ") == date(2024, 1, 31)
    assert _decoder(Scalar("boolean", builtin="boolean", white_space="collapse"))(" true ") is True
    token = _decoder(Scalar("string", white_space="collapse"))
    assert token("SKU-1") == "SKU-1"
    assert token("  a \t\n b  ") == "a b"
    assert _decoder(Scalar("string", white_space="replace"))("a\tb\n") == "a b "


def test_a_simple_typed_element_with_an_attribute_or_a_child_is_still_refused(tmp_path: Path) -> None:
    decoder = XsdModel.load(ORDERS_XSD).decoder("orders")
    path = tmp_path / "orders.xml"
    head = ('<orders xmlns="http://acme.example.com/orders/v1" xmlns:c="http://acme.example.com/common" '
            'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><batchId>42</batchId>')
    order = ('<order id="PO-1"><orderDate>2024-01-02</orderDate><createdAt>2024-03-15T09:30:00+01:00</createdAt>'
             '<status>NEW</status><buyer id="C-1"><name>A</name><address kind="billing"><c:street>S</c:street>'
             '<c:city>B</c:city><c:postal-code>1</c:postal-code><c:country>DE</c:country></address></buyer>'
             '<invoiceRef>I</invoiceRef><line number="1"><sku>SKU-1</sku><description>d</description>'
             '<quantity>2</quantity><unitPrice currency="EUR">1.50</unitPrice></line>'
             '<total currency="EUR">3.00</total><approvedBy xsi:nil="true"/></order>')
    path.write_text(head + order + "</orders>")
    (record,) = decoder.iter_records(path, "orders/order")
    assert record["line"][0]["quantity"] == 2 and record["approvedBy"] is None
    for bad, message in [
        ('<quantity unit="kg">2</quantity>', "unexpected attribute 'unit' in a simple-typed element"),
        ("<quantity><b/>2</quantity>", "element content is not allowed in a simple-typed element"),
        ("<quantity>2</quantity><quantity>3</quantity>", "element 'quantity' occurs more than once"),
        ("<quantity>two</quantity>", "'two' is not an xs:positiveInteger"),
    ]:
        path.write_text(head + order.replace("<quantity>2</quantity>", bad) + "</orders>")
        with pytest.raises(XmlValidationError, match=message) as caught:
            list(decoder.iter_records(path, "orders/order"))
        assert "/orders/order[1]/line/quantity" in str(caught.value)
    path.write_text(head + order.replace("<quantity>2</quantity>", "<quantity>2<!-- n --></quantity>") + "</orders>")
    assert next(decoder.iter_records(path, "orders/order"))["line"][0]["quantity"] == 2
