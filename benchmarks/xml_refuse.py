"""Benchmark: refusing a document with thousands of unknown attributes costs time linear in it.

A public ISO 20022 pain.001 document (``tests/translators/xml/corpus/iso20022``) gets N unknown
attributes on its root element, then each way of reading it must refuse it:

- ``Decoder.decode_document`` (the CLI, the file-drop adapters, the inbound mapping stage);
- ``Decoder.decode_element(..., validate=True)`` (the SOAP server's body decoding);
- ``Decoder.iter_records`` (streams).

The baseline, measured side by side on the smaller sizes, is what the SOAP server did before:
collecting every xmlschema error of the document (``list(schema.iter_errors(...))``).

    .venv/bin/python benchmarks/xml_refuse.py [--sizes 2500,25000,250000] [--baseline-sizes 500,2500]
"""

from __future__ import annotations

import argparse
import io
import time
from pathlib import Path

from lxml import etree

from coupler.translators.xml import XmlValidationError, XsdModel

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests/translators/xml/corpus/iso20022"
XSD = CORPUS / "pain.001.001.03.xsd"
DOC = CORPUS / "pain.001.001.03.php-sepa-xml.xml"


def document(attributes: int) -> bytes:
    """The document with ``attributes`` unknown attributes in the root's start tag (text
    surgery: setting them one by one through lxml is itself quadratic)."""
    text = DOC.read_bytes()
    start = text.index(b"<Document")
    end = text.index(b">", start)
    extra = b"".join(b' a%d="x"' % n for n in range(attributes))
    return text[:end] + extra + text[end:]


def timed(call: object) -> float:
    start = time.perf_counter()
    try:
        call()  # type: ignore[operator]
    except XmlValidationError:
        pass
    else:
        raise SystemExit("the document was accepted")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="2500,25000,250000")
    parser.add_argument("--baseline-sizes", default="500,2500")
    args = parser.parse_args()
    model = XsdModel.load(XSD)
    decoder = model.decoder("Document")
    print(f"{'attributes':>10} {'KB':>7} {'decode_document':>16} {'SOAP body':>10} {'iter_records':>13} {'baseline':>10}")
    baselines = {int(n) for n in args.baseline_sizes.split(",") if n}
    for size in sorted({int(n) for n in args.sizes.split(",") if n} | baselines):
        data = document(size)
        whole = timed(lambda: decoder.decode_document(data, name="bench.xml"))  # noqa: B023
        element = etree.fromstring(data)
        soap = timed(lambda: decoder.decode_element(element, source="SOAP body", validate=True))  # noqa: B023
        stream = timed(lambda: list(decoder.iter_records(io.BytesIO(data), "Document")))  # noqa: B023
        base = "-"
        if size in baselines:
            start = time.perf_counter()
            errors = list(model.schema.iter_errors(io.BytesIO(data)))
            base = f"{time.perf_counter() - start:8.2f} s ({len(errors)} errors)"
        print(f"{size:>10} {len(data) / 1024:7.0f} {whole:14.3f} s {soap:8.3f} s {stream:11.3f} s {base:>10}", flush=True)


if __name__ == "__main__":
    main()
