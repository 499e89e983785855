"""``make demo``: the main job on embedded defaults.

Until the reference site exists, the demo shows the canonical model's version awareness:
an ``acme.Customer`` version 2 record travels in an envelope, a consumer that reads
version 1 receives it converted by the schema registry, and the answer converts back.
"""

from __future__ import annotations

import json
import sys

from coupler.canonical import Envelope, FormatIndicator
from coupler.canonical.registry import SchemaRegistry

CUSTOMER_V2 = {
    "customer_id": "C-1001",
    "name": "Ann Smith",
    "email": "ann.smith@example.com",
    "address": {"street": "12 Harbour Road", "city": "Springfield", "postal_code": "12345", "country": "US"},
    "phone": "+1 555 0100",
    "segment": "BUSINESS",
}


def main() -> int:
    registry = SchemaRegistry.default()
    v2, v1 = FormatIndicator.parse("acme.Customer@2"), FormatIndicator.parse("acme.Customer@1")

    sent = Envelope(format=v2, body=registry.encode(CUSTOMER_V2, v2), origin="demo")
    wire = sent.to_bytes()
    received = Envelope.from_bytes(wire)
    as_v1 = registry.decode(registry.convert_body(received.body, received.format, v1), v1)
    back_to_v2 = registry.convert(as_v1, v1, v2)

    out = sys.stdout
    out.write(f"envelope {received.message_id}: {received.format} ({len(wire)} bytes on the wire)\n")
    out.write(f"\n{v2} as sent:\n{json.dumps(CUSTOMER_V2, indent=2)}\n")
    out.write(f"\n{v1} as a version-1 consumer reads it (phone and segment dropped):\n{json.dumps(as_v1, indent=2)}\n")
    out.write(f"\nback to {v2} (fields v1 lacks take v2's defaults):\n{json.dumps(back_to_v2, indent=2)}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
