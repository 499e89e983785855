"""Schemas whose widest content model is assembled from groups or an extension chain (docs/performance.md,
"Very wide XSDs through groups and extensions"): ``python -m benchmarks.xsd_wide_indirect [COUNT PER]``
writes them to the current directory and times ``load_schema`` (default bound, then none)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

XS = "http://www.w3.org/2001/XMLSchema"


def groups(path: str, n_groups: int = 50, per: int = 110) -> None:
    """One sequence referring to ``n_groups`` groups of ``per`` elements."""
    out = [f'<?xml version="1.0"?>\n<xs:schema xmlns:xs="{XS}">']
    for g in range(n_groups):
        fields = "".join(f'<xs:element name="g{g}f{n}" type="xs:string" minOccurs="0"/>' for n in range(per))
        out.append(f'  <xs:group name="g{g}"><xs:sequence>{fields}</xs:sequence></xs:group>')
    refs = "".join(f'<xs:group ref="g{g}"/>' for g in range(n_groups))
    out.append(f'  <xs:complexType name="wide"><xs:sequence>{refs}</xs:sequence></xs:complexType>')
    out.append('  <xs:element name="doc" type="wide"/>\n</xs:schema>\n')
    Path(path).write_text("\n".join(out))


def extensions(path: str, n_types: int = 50, per: int = 110) -> None:
    """A chain of ``n_types`` types, each extending the one before with ``per`` elements."""
    out = [f'<?xml version="1.0"?>\n<xs:schema xmlns:xs="{XS}">']
    for t in range(n_types):
        fields = "".join(f'<xs:element name="t{t}f{n}" type="xs:string" minOccurs="0"/>' for n in range(per))
        if t == 0:
            out.append(f'  <xs:complexType name="t0"><xs:sequence>{fields}</xs:sequence></xs:complexType>')
        else:
            out.append(f'  <xs:complexType name="t{t}"><xs:complexContent><xs:extension base="t{t - 1}">'
                       f'<xs:sequence>{fields}</xs:sequence></xs:extension></xs:complexContent></xs:complexType>')
    out.append(f'  <xs:element name="doc" type="t{n_types - 1}"/>\n</xs:schema>\n')
    Path(path).write_text("\n".join(out))


def main(argv: list[str]) -> None:
    from coupler.translators.xml.security import load_schema

    count, per = (int(argv[0]), int(argv[1])) if len(argv) == 2 else (50, 110)
    for build in (groups, extensions):
        path = Path(f"{build.__name__}_{count}x{per}.xsd")
        build(str(path), count, per)
        for limit in (5000, 0):
            started = time.monotonic()
            try:
                load_schema(path, max_model_particles=limit)
                outcome = "loaded"
            except Exception as exc:  # noqa: BLE001 - the refusal is the measurement
                outcome = f"refused ({type(exc).__name__})"
            print(f"{path} max_model_particles={limit}: {outcome} in {time.monotonic() - started:.2f} s", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
