"""The health insurance member service: a small SOAP 1.1/1.2 service described by a WSDL.

It stands in for the client-server health insurance system of the Message Bus example and
knows nothing of Coupler: it answers ``UpdateMemberAddress`` (``health_member.wsdl``,
``health-member-types.xsd``) on ``POST /HealthMemberService`` with aiohttp and lxml, and
serves the WSDL on ``GET /HealthMemberService?wsdl``.

Rules (plan year 2025), applied to every request that validates against the XSD:

* the member must be in the register (``--register FILE``, JSON, or :data:`DEMO_MEMBERS`),
  otherwise a ``Client``/``Sender`` fault ``unknown member``;
* the monthly premium is the plan's base rate x the state factor (CA 1.18, NY 1.32, FL 1.05,
  TX 0.96, others 1.00) x the ZIP region factor (1.00 + 0.01 x the first ZIP digit), rounded
  half up to cents; the rating area is ``<state>-<first three ZIP digits>``;
* the answer carries the premium before and after the move and a confirmation number
  derived from the member and the effective date.

A request that is not a SOAP envelope or does not validate is a ``Client``/``Sender`` fault
naming the problem. Run it with ``python -m examples.legacy.health_member_service --port 8081``.
"""

from __future__ import annotations

import argparse
import json
import logging
import zlib
from dataclasses import dataclass, replace
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

from aiohttp import web
from lxml import etree

from .serving import configure_logging, serve

log = logging.getLogger("health_member_service")

HERE = Path(__file__).resolve().parent
WSDL = HERE / "health_member.wsdl"
XSD = HERE / "health-member-types.xsd"
NS = "urn:example:health"
SOAP11 = "http://schemas.xmlsoap.org/soap/envelope/"
SOAP12 = "http://www.w3.org/2003/05/soap-envelope"
PATH = "/HealthMemberService"
STATE_FACTORS = {"CA": Decimal("1.18"), "NY": Decimal("1.32"), "FL": Decimal("1.05"), "TX": Decimal("0.96")}


@dataclass(frozen=True)
class Member:
    member_id: str
    plan_id: str
    base_rate: Decimal
    state: str
    zip: str


#: the members the service holds when it is given no register file
DEMO_MEMBERS = (
    Member("C-100234", "PPO-GOLD", Decimal("412.00"), "IL", "62701"),
    Member("C-100871", "HMO-SILVER", Decimal("298.50"), "NY", "12207"),
)


class SoapFault(Exception):
    def __init__(self, reason: str, client: bool = True):
        super().__init__(reason)
        self.reason, self.client = reason, client


def monthly_premium(member: Member) -> Decimal:
    factor = STATE_FACTORS.get(member.state, Decimal("1.00")) * (1 + Decimal("0.01") * int(member.zip[0]))
    return (member.base_rate * factor).quantize(Decimal("0.01"), ROUND_HALF_UP)


def load_members(path: str | None) -> dict[str, Member]:
    if path is None:
        return {m.member_id: m for m in DEMO_MEMBERS}
    rows = json.loads(Path(path).read_text(encoding="utf-8"))
    members = [Member(**{**r, "base_rate": Decimal(str(r["base_rate"]))}) for r in rows]
    return {m.member_id: m for m in members}


class HealthMemberService:
    """The SOAP endpoint; ``changes`` lists every address change applied."""

    def __init__(self, members: dict[str, Member] | None = None):
        self.members = dict(members) if members is not None else load_members(None)
        self.changes: list[dict[str, str]] = []
        self.schema = etree.XMLSchema(etree.parse(str(XSD), _parser()))
        self._runner: web.AppRunner | None = None

    def app(self) -> web.Application:
        app = web.Application(client_max_size=1 << 20)
        app.router.add_post(PATH, self._post)
        app.router.add_get(PATH, self._get)
        return app

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> tuple[str, int]:
        self._runner = web.AppRunner(self.app(), access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port)
        await site.start()
        server = site._server
        assert server is not None
        address = server.sockets[0].getsockname()  # type: ignore[attr-defined]
        return address[0], address[1]

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _get(self, request: web.Request) -> web.Response:
        if "wsdl" not in request.query:
            return web.Response(status=404, text="GET ?wsdl for the service description")
        return web.Response(body=WSDL.read_bytes(), content_type="text/xml")

    async def _post(self, request: web.Request) -> web.Response:
        soap_ns = SOAP12 if request.content_type == "application/soap+xml" else SOAP11
        try:
            body = _body(await request.read(), soap_ns)
            self.schema.assertValid(body)
            response = self.update_address(body)
        except etree.DocumentInvalid as exc:
            return _fault(soap_ns, SoapFault(f"request does not validate: {exc.error_log.last_error.message}"))
        except SoapFault as exc:
            return _fault(soap_ns, exc)
        envelope = etree.Element(f"{{{soap_ns}}}Envelope", nsmap={"soap": soap_ns})
        etree.SubElement(envelope, f"{{{soap_ns}}}Body").append(response)
        content_type = "application/soap+xml" if soap_ns == SOAP12 else "text/xml"
        return web.Response(body=etree.tostring(envelope, xml_declaration=True, encoding="UTF-8"),
                            content_type=content_type, charset="utf-8")

    def update_address(self, request: etree._Element) -> etree._Element:
        """Apply one UpdateMemberAddress element; the UpdateMemberAddressResponse element."""
        if request.tag != f"{{{NS}}}UpdateMemberAddress":
            raise SoapFault(f"unknown operation element {request.tag}")
        fields = {etree.QName(child).localname: (child.text or "").strip() for child in request}
        member = self.members.get(fields["memberId"])
        if member is None:
            raise SoapFault(f"unknown member {fields['memberId']}")
        moved = replace(member, state=fields["state"], zip=fields["zip"])
        before, after = monthly_premium(member), monthly_premium(moved)
        self.members[member.member_id] = moved
        self.changes.append(fields)
        key = f"{member.member_id}/{fields['effectiveDate']}".encode()
        confirmation = f"HM{zlib.crc32(key):010d}"
        log.info("member %s moved to %s %s: %s -> %s", member.member_id, moved.state, moved.zip, before, after)
        out = etree.Element(f"{{{NS}}}UpdateMemberAddressResponse", nsmap={"h": NS})
        for name, value in (
            ("memberId", member.member_id),
            ("planId", member.plan_id),
            ("ratingArea", f"{moved.state}-{moved.zip[:3]}"),
            ("previousMonthlyPremium", str(before)),
            ("monthlyPremium", str(after)),
            ("effectiveDate", fields["effectiveDate"]),
            ("confirmation", confirmation),
        ):
            etree.SubElement(out, f"{{{NS}}}{name}").text = value
        self.schema.assertValid(out)
        return out


def _parser() -> etree.XMLParser:
    return etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False)


def _body(data: bytes, soap_ns: str) -> etree._Element:
    try:
        root = etree.fromstring(data, _parser())
    except etree.XMLSyntaxError as exc:
        raise SoapFault(f"not XML: {exc}") from None
    body = root.find(f"{{{soap_ns}}}Body")
    if root.tag != f"{{{soap_ns}}}Envelope" or body is None or len(body) != 1:
        raise SoapFault("not a SOAP envelope with one body element")
    return etree.fromstring(etree.tostring(body[0]), _parser())  # standalone, for validation


def _fault(soap_ns: str, fault: SoapFault) -> web.Response:
    env = etree.Element(f"{{{soap_ns}}}Envelope", nsmap={"soap": soap_ns})
    f = etree.SubElement(etree.SubElement(env, f"{{{soap_ns}}}Body"), f"{{{soap_ns}}}Fault")
    if soap_ns == SOAP11:
        etree.SubElement(f, "faultcode").text = "soap:Client" if fault.client else "soap:Server"
        etree.SubElement(f, "faultstring").text = fault.reason
        content_type = "text/xml"
    else:
        code = etree.SubElement(etree.SubElement(f, f"{{{soap_ns}}}Code"), f"{{{soap_ns}}}Value")
        code.text = "soap:Sender" if fault.client else "soap:Receiver"
        reason = etree.SubElement(etree.SubElement(f, f"{{{soap_ns}}}Reason"), f"{{{soap_ns}}}Text")
        reason.text = fault.reason
        reason.set("{http://www.w3.org/XML/1998/namespace}lang", "en")
        content_type = "application/soap+xml"
    log.info("fault: %s", fault.reason)
    return web.Response(status=500, body=etree.tostring(env, xml_declaration=True, encoding="UTF-8"),
                        content_type=content_type, charset="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The health insurance member service (SOAP, WSDL).")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8081, help="0 picks a free port")
    parser.add_argument("--register", help="JSON file of the members (default: the built-in demo members)")
    args = parser.parse_args(argv)
    configure_logging()
    return serve(
        lambda: HealthMemberService(load_members(args.register)), args.host, args.port,
        lambda host, port: f"health member service listening on http://{host}:{port}{PATH}",
    )


if __name__ == "__main__":
    raise SystemExit(main())
