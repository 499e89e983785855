"""Benchmark: loading a very wide XSD (one xs:sequence of N elements).

For each N, a schema with one complex type whose xs:sequence holds N optional elements is
loaded three ways:

- ``load``: ``load_schema(path, max_model_particles=0)``, no bound: what every load did before
  the bound (xmlschema's whole load, its content-model check included);
- ``check_model``: the share of that load spent in xmlschema's content-model check (Unique
  Particle Attribution and Element Declarations Consistent, pair by pair), from cProfile;
- ``model``: Coupler's own analysis of the loaded schema (``XsdModel`` and its Avro schema);
- ``bounded``: ``load_schema(path)`` with the default bound (5000 particles): the same load
  below it, a refusal above it.

Times are CPU seconds of the process (``time.process_time``), not wall time: the machine is
shared. Then the cost of the bound on real schemas: the scan of each schema file the loads of the
UBL 2.1 Invoice and the HL7 CDA schemas open, against the whole load.

    .venv/bin/python benchmarks/xsd_wide.py [--sizes 500,1000,2000,4000] [--no-profile]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import tempfile
import time
from pathlib import Path

from lxml import etree

from coupler.translators.xml import XsdModel
from coupler.translators.xml.errors import XsdError
from coupler.translators.xml.security import (
    SchemaSandbox,
    load_sandboxed,
    load_schema,
    widest_model,
)

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests/translators/xml/corpus"
REAL = [("ubl", "ubl/xsdrt/maindoc/UBL-Invoice-2.1.xsd"), ("hl7cda", "hl7cda/schema/infrastructure/cda/CDA_SDTC.xsd")]


def wide_schema(folder: Path, count: int) -> Path:
    fields = "\n".join(f'      <xs:element name="f{n}" type="xs:string" minOccurs="0"/>' for n in range(count))
    path = folder / f"wide{count}.xsd"
    path.write_text('<?xml version="1.0"?>\n<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema">\n'
                    f'  <xs:complexType name="wide">\n    <xs:sequence>\n{fields}\n    </xs:sequence>\n'
                    '  </xs:complexType>\n  <xs:element name="doc" type="wide"/>\n</xs:schema>\n')
    return path


def timed(func):  # type: ignore[no-untyped-def]
    """CPU seconds of the process (the machine is shared: wall time says more of the others)."""
    started = time.process_time()
    result = func()
    return time.process_time() - started, result


def check_model_share(path: Path) -> float:
    """The share of a profiled load spent in xmlschema's ``check_model`` (profiling slows the
    many small calls of the check more than the rest: the share is an upper estimate)."""
    profile = cProfile.Profile(time.process_time)
    profile.runcall(load_schema, path, max_model_particles=0)
    stats = pstats.Stats(profile)
    rows = stats.stats  # type: ignore[attr-defined]
    check = sum(row[3] for (file, _, func), row in rows.items() if func == "check_model" and file.endswith("models.py"))
    return check / stats.total_tt  # type: ignore[attr-defined]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="500,1000,2000,4000")
    parser.add_argument("--no-profile", action="store_true", help="skip the cProfile run (a second load per size)")
    args = parser.parse_args()
    load_schema(CORPUS / "maven/maven-4.0.0.xsd")  # imports and xmlschema's meta-schema, once
    with tempfile.TemporaryDirectory(prefix="xsd_wide_") as tmp:
        previous = None
        print("| elements | load s | x previous | check_model share (cProfile) | model s | bounded |")
        print("|---|---|---|---|---|---|")
        for count in [int(s) for s in args.sizes.split(",")]:
            path = wide_schema(Path(tmp), count)
            load, schema = timed(lambda: load_schema(path, max_model_particles=0))  # noqa: B023
            model, _ = timed(lambda: XsdModel(schema, str(path)).avro_schema("doc"))  # noqa: B023
            check = "-" if args.no_profile else f"{check_model_share(path):.0%}"
            try:
                bounded, _ = timed(lambda: load_schema(path))  # noqa: B023
                bounded_text = f"loaded, {bounded:.2f} s"
            except XsdError:
                started = time.process_time()
                try:
                    load_schema(path)
                except XsdError:
                    pass
                bounded_text = f"refused, {time.process_time() - started:.3f} s"
            ratio = f"x{load / previous:.1f}" if previous else "-"
            print(f"| {count} | {load:.2f} | {ratio} | {check} | {model:.2f} | {bounded_text} |", flush=True)
            previous = load
    print()
    print("| schema | load s | files | scan of them s | share |")
    print("|---|---|---|---|---|")
    for name, xsd in REAL:
        path = CORPUS / xsd
        sandbox = SchemaSandbox([CORPUS / name])
        load, _ = timed(lambda: load_sandboxed(path, sandbox))  # noqa: B023
        files = list(dict.fromkeys(sandbox.opened))
        scan, _ = timed(lambda: [widest_model(etree.parse(str(f)).getroot()) for f in files])  # noqa: B023
        print(f"| {name} | {load:.2f} | {len(files)} | {scan:.3f} | {scan / load:.1%} |", flush=True)


if __name__ == "__main__":
    main()
