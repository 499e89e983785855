"""W3C trace context over SOAP: the inbound side continues a caller's ``traceparent``."""

from __future__ import annotations

import urllib.request

from coupler.canonical.tracecontext import TRACEPARENT, TraceContext

REQUEST = b"""<?xml version="1.0"?>
<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body>
<p:GetQuote xmlns:p="urn:acme:policy"><p:policyId>P-7</p:policyId><p:driverAge>50</p:driverAge></p:GetQuote>
</soap:Body></soap:Envelope>"""


def test_a_callers_traceparent_is_continued_through_the_bus(bus, quotes, soap_server):
    seen: list[str | None] = []
    answer = quotes.on_request

    def recording(command):
        seen.append(command.envelope.properties.get(TRACEPARENT))
        return answer(command)

    quotes.on_request = recording
    server = soap_server()
    caller = TraceContext.new()
    req = urllib.request.Request(server.url, data=REQUEST, headers={
        "Content-Type": "text/xml; charset=utf-8", "SOAPAction": '"urn:acme:policy:GetQuote"', TRACEPARENT: caller.header})
    with urllib.request.urlopen(req, timeout=30) as r:
        assert b"425.00" in r.read()
    [header] = seen
    received = TraceContext.parse(header)
    assert received is not None and received.trace_id == caller.trace_id
    assert received.span_id != caller.span_id  # a child: the bus's own hop
