"""Benchmark: a large XML file of repeated records -> an Avro container file.

Generates ``--mb`` megabytes (default 200) of ``orders/order`` records valid against
``tests/translators/xml/data/orders/orders.xsd``, streams them through the XML translator
(lxml iterparse + converters compiled from the schema) into an Avro container file, and
measures xmlschema's whole-document ``to_dict`` on a slice (``--baseline-mb``, default 10) as
the baseline. Reports MB/s for both, the ratio, and peak RSS growth over the run.

    .venv/bin/python benchmarks/xml_translate.py [--mb 200] [--baseline-mb 10]
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

import fastavro

from coupler.translators.xml import XsdModel

ROOT = Path(__file__).resolve().parent.parent
XSD = ROOT / "tests/translators/xml/data/orders/orders.xsd"

HEAD = ('<?xml version="1.0" encoding="UTF-8"?>\n<orders xmlns="http://acme.example.com/orders/v1" '
        'xmlns:c="http://acme.example.com/common" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">\n'
        "<batchId>42</batchId>\n")
TAIL = "</orders>\n"


def order(n: int) -> str:
    lines = "".join(
        f'<line number="{k}"><sku>SKU-{n % 997}-{k}</sku><description>Item {k} of order {n}</description>'
        f'<quantity>{k + 1}</quantity><unitPrice currency="EUR">{(n % 500) + k}.{k:02d}</unitPrice>'
        f"<weightKg>{k * 0.25}</weightKg></line>"
        for k in range(1, 4)
    )
    return (
        f'<order id="PO-{n}" priority="{n % 5}"><orderDate>2024-{1 + n % 12:02d}-{1 + n % 28:02d}</orderDate>'
        f"<createdAt>2024-03-15T09:30:{n % 60:02d}.250Z</createdAt><status>CONFIRMED</status>"
        f'<buyer id="C-{n}"><name>Customer {n}</name><address kind="billing"><c:street>Main St {n}</c:street>'
        f"<c:city>Berlin</c:city><c:postal-code>10115</c:postal-code><c:country>DE</c:country></address></buyer>"
        f"<invoiceRef>INV-{n}</invoiceRef>{lines}"
        f'<total currency="EUR">{n % 1000}.50</total><discountRate>0.0525</discountRate>'
        f'<approvedBy xsi:nil="true"/></order>\n'
    )


def generate(path: Path, megabytes: float) -> int:
    target = int(megabytes * 1024 * 1024)
    written, n = 0, 0
    with path.open("w", encoding="utf-8") as out:
        out.write(HEAD)
        while written < target:
            chunk = "".join(order(n + i) for i in range(1000))
            out.write(chunk)
            written += len(chunk)
            n += 1000
        out.write(TAIL)
    return n


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=200)
    parser.add_argument("--baseline-mb", type=float, default=10)
    args = parser.parse_args()
    model = XsdModel.load(XSD)
    decoder = model.decoder("orders")
    from coupler.translators.xml.model import value_avro

    record_schema = fastavro.parse_schema(value_avro(decoder.resolve_path("orders/order")[-1][1].record, set()))
    with tempfile.TemporaryDirectory() as tmp:
        big, small, avro = Path(tmp) / "big.xml", Path(tmp) / "small.xml", Path(tmp) / "out.avro"
        records = generate(big, args.mb)
        generate(small, args.baseline_mb)
        size, small_size = big.stat().st_size / 1e6, small.stat().st_size / 1e6

        # baseline: xmlschema whole-document to_dict
        start = time.perf_counter()
        model.schema.to_dict(str(small))
        base_s = time.perf_counter() - start
        base_rate = small_size / base_s

        rss_before = rss_mb()
        # ours on the small slice (same input as the baseline) and on the big file
        start = time.perf_counter()
        with (Path(tmp) / "small.avro").open("wb") as out:
            fastavro.writer(out, record_schema, decoder.iter_records(small, "orders/order"))
        small_s = time.perf_counter() - start
        rss_small = rss_mb()
        start = time.perf_counter()
        with avro.open("wb") as out:
            fastavro.writer(out, record_schema, decoder.iter_records(big, "orders/order"))
        ours_s = time.perf_counter() - start
        rss_after = rss_mb()

        start = time.perf_counter()
        count = sum(1 for _ in decoder.iter_records(big, "orders/order"))
        decode_s = time.perf_counter() - start
        assert count == records

    print(f"input: {size:.1f} MB, {records} records; baseline slice {small_size:.1f} MB")
    print(f"xmlschema to_dict (baseline, slice):    {base_rate:6.2f} MB/s")
    print(f"coupler XML->Avro file (slice):         {small_size / small_s:6.2f} MB/s  ({small_size / small_s / base_rate:.1f}x)")
    print(f"coupler XML->Avro file (full):          {size / ours_s:6.2f} MB/s  ({size / ours_s / base_rate:.1f}x)")
    print(f"coupler typed decoding only (full):     {size / decode_s:6.2f} MB/s  ({size / decode_s / base_rate:.1f}x)")
    print(f"peak RSS: {rss_before:.0f} MB before, {rss_small:.0f} MB after the {small_size:.0f} MB slice, "
          f"{rss_after:.0f} MB after the {size:.0f} MB file")


if __name__ == "__main__":
    main()
