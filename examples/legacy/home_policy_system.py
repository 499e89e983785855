"""The homeowners insurance system: XML documents (``home-policy.xsd``) through a file drop.

It stands in for the J2EE homeowners system of the Message Bus example and knows nothing of
Coupler. It polls ``INBOX`` for ``*.xml`` documents, validates each against the XSD (lxml,
entities and network off), applies a ``HomeAddressChange`` to its register of home policies
(``--register FILE``, JSON, or :data:`DEMO_HOMES`) and writes a ``HomeAddressAck`` document to
``OUTBOX/ACK-<name>`` (under a hidden name, then renamed); the input moves to
``INBOX/processed``.

Rules: the annual premium is the dwelling's base rate x the territory factor of the new
address: coastal states (FL 1.45, CA 1.20, TX 1.25, others 1.00) x 1.10 when the ZIP is in a
listed wind-exposure prefix (FL 33x/34x, TX 77x/78x, CA 90x), rounded half up to cents; the
territory is ``<state>-<ZIP prefix>``. A document that does not validate or a customer
without a home policy is acknowledged ``REJECTED`` with the reason.

``python -m examples.legacy.home_policy_system --inbox DIR --outbox DIR``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
from dataclasses import dataclass, replace
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

from lxml import etree

from .serving import PollingSystem, configure_logging, poll_until_stopped

log = logging.getLogger("home_policy_system")

XSD = Path(__file__).resolve().parent / "home-policy.xsd"
NS = "urn:example:home"
STATE_FACTORS = {"FL": Decimal("1.45"), "CA": Decimal("1.20"), "TX": Decimal("1.25")}
WIND_PREFIXES = ("33", "34", "77", "78", "90")


@dataclass(frozen=True)
class HomePolicy:
    policy_number: str
    customer_number: str
    base_rate: Decimal
    state: str
    zip: str


DEMO_HOMES = (
    HomePolicy("H-2209917", "C-100234", Decimal("1360.00"), "IL", "62701"),
    HomePolicy("H-2210455", "C-100871", Decimal("990.00"), "NY", "12207"),
)


def annual_premium(policy: HomePolicy) -> Decimal:
    factor = STATE_FACTORS.get(policy.state, Decimal("1.00"))
    if policy.zip.startswith(WIND_PREFIXES):
        factor *= Decimal("1.10")
    return (policy.base_rate * factor).quantize(Decimal("0.01"), ROUND_HALF_UP)


def _parser() -> etree.XMLParser:
    return etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False)


class HomePolicySystem(PollingSystem):
    def __init__(self, inbox: Path, outbox: Path, homes: list[HomePolicy] | None = None):
        self.inbox, self.outbox, self.processed = inbox, outbox, inbox / "processed"
        for d in (inbox, outbox, self.processed):
            d.mkdir(parents=True, exist_ok=True)
        self.homes = {h.customer_number: h for h in (homes if homes is not None else DEMO_HOMES)}
        self.schema = etree.XMLSchema(etree.parse(str(XSD), _parser()))

    def process(self, data: bytes) -> etree._Element:
        ack: dict[str, str] = {}
        try:
            doc = etree.fromstring(data, _parser())
            self.schema.assertValid(doc)
            ack = self._apply(doc)
        except (etree.XMLSyntaxError, etree.DocumentInvalid) as exc:
            ack = {"customerNumber": "", "status": "REJECTED", "message": f"document not valid: {exc}"}
        out = etree.Element(f"{{{NS}}}HomeAddressAck", nsmap={"ho": NS})
        for name in ("customerNumber", "policyNumber", "status", "territory", "previousAnnualPremium", "annualPremium", "message"):
            if name in ack:
                etree.SubElement(out, f"{{{NS}}}{name}").text = ack[name]
        self.schema.assertValid(out)
        return out

    def _apply(self, doc: etree._Element) -> dict[str, str]:
        def text(path: str) -> str:
            return (doc.findtext(path, namespaces={"ho": NS}) or "").strip()

        customer = text("ho:customerNumber")
        policy = self.homes.get(customer)
        if policy is None:
            return {"customerNumber": customer, "status": "REJECTED", "message": "no home policy for this customer"}
        moved = replace(policy, state=text("ho:mailingAddress/ho:state"), zip=text("ho:mailingAddress/ho:zip"))
        before, after = annual_premium(policy), annual_premium(moved)
        self.homes[customer] = moved
        log.info("home policy %s moved to %s %s: %s -> %s", policy.policy_number, moved.state, moved.zip, before, after)
        return {
            "customerNumber": customer, "policyNumber": policy.policy_number, "status": "ACCEPTED",
            "territory": f"{moved.state}-{moved.zip[:3]}", "previousAnnualPremium": str(before),
            "annualPremium": str(after), "message": f"effective {text('ho:effectiveFrom')}, changed by {text('ho:changedBy')}",
        }

    def poll(self) -> int:
        done = 0
        for path in sorted(self.inbox.glob("*.xml")):
            ack = self.process(path.read_bytes())
            tmp = self.outbox / f".ACK-{path.name}.tmp"
            tmp.write_bytes(etree.tostring(ack, xml_declaration=True, encoding="UTF-8", pretty_print=True))
            os.replace(tmp, self.outbox / f"ACK-{path.name}")
            os.replace(path, self.processed / path.name)
            done += 1
        return done



def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The homeowners insurance system (XML documents in a file drop).")
    parser.add_argument("--inbox", required=True, type=Path)
    parser.add_argument("--outbox", required=True, type=Path)
    parser.add_argument("--register", help="JSON list of home policies (default: the built-in demo policies)")
    parser.add_argument("--interval", type=float, default=0.2)
    args = parser.parse_args(argv)
    configure_logging()
    homes = None
    if args.register:
        rows = json.loads(Path(args.register).read_text(encoding="utf-8"))
        homes = [HomePolicy(**{**r, "base_rate": Decimal(str(r["base_rate"]))}) for r in rows]
    system = HomePolicySystem(args.inbox, args.outbox, homes)
    return poll_until_stopped(system, args.interval, f"homeowners system polling {args.inbox}")


if __name__ == "__main__":
    raise SystemExit(main())
