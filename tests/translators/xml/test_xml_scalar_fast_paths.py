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


def _edits(base: str) -> list[str]:
    """``base`` with each character replaced by, or preceded by, every ASCII character and a
    few other digits, and each character dropped."""
    chars = [chr(c) for c in range(128)] + ["\u0660", "\u0661", "\u0966", "\uff11", "\U0001d7cf", "\u00b2"]
    texts = [base]
    for i in range(len(base) + 1):
        texts.append(base[:i] + base[i + 1:])
        for c in chars:
            texts += [base[:i] + c + base[i + 1:], base[:i] + c + base[i:]]
    return texts


def test_dates_and_utc_timestamps_read_straight_to_avro_as_the_decoder_and_encoder_read_them() -> None:
    """``date_avro_days`` and ``datetime_avro_micros`` (``xml decode --to avro``: no date or
    datetime made) tell the common form by its length and separators and leave the rest to
    ``date.fromisoformat``: every text one edit away from a valid one gives either None (the
    general path decides) or exactly the Avro value of what the decoder gives, and every text
    of the common form that the decoder reads gives its value."""
    from coupler.translators.xml.avro import _date_days, _timestamp_micros
    from coupler.translators.xml.scalars import (
        _DATE_ISO,
        _DATETIME_ISO,
        date_avro_days,
        datetime_avro_micros,
        parse_date,
        parse_datetime,
    )

    days = date_avro_days(Scalar("date", builtin="date", white_space="collapse"))
    micros = datetime_avro_micros(Scalar("datetime", builtin="dateTime", white_space="collapse"))
    assert days is not None and micros is not None
    cases = [(days, parse_date, _date_days, _DATE_ISO, "", ["2024-03-15", "1970-01-01", "2024-02-29", "0001-01-01"]),
             (micros, parse_datetime, _timestamp_micros, _DATETIME_ISO, "Z",
              ["2024-03-15T09:30:12Z", "2024-03-15T09:30:12.250Z", "1969-12-31T23:59:59.999999Z", "2024-03-15T09:30:12.1Z"])]
    for fast, parse, encode, common, zone, bases in cases:
        taken = 0
        for base in bases:
            for text in _edits(base):
                got = fast(text)
                try:
                    value = parse(text)
                except ValueError:
                    value = None
                if got is None:
                    # the general path's texts of the common form are read here too
                    assert value is None or not common.match(text) or not text.endswith(zone), text
                    continue
                taken += 1
                assert value is not None and got == encode(value), text
        assert taken > len(bases)
