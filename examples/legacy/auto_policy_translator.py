"""Message Translator between the canonical auto quote documents and the AUTOQ01 records.

The socket adapter uses it as ``translator = "examples.legacy.auto_policy_translator:translator"``
with ``copybook_out`` = the request copybook and ``copybook_in`` = the reply copybook. The
fixed-width records themselves are read and written by Coupler's copybook translator; this
module only maps field names (canonical <-> copybook) and reads the reply's status:

* ``00``: the reply document ``acme.AutoQuote@1`` (policyId, premium, currency, riskClass);
* ``RJ``: the request was refused by the service's rules -> :class:`CommandFault` ``invalid``
  with the service's message (a SOAP caller gets a Client/Sender fault);
* anything else: the service did not understand the request -> :class:`CommandFault`
  ``failed``.
"""

from __future__ import annotations

import json
from typing import Any

from coupler.adapters.socket.translate import CopybookTranslator, TranslationError
from coupler.bus.api import CommandFault, Document
from coupler.canonical import FormatIndicator

QUOTE_REQUEST = FormatIndicator("acme.AutoQuoteRequest", 1, "application/json")
QUOTE = FormatIndicator("acme.AutoQuote", 1, "application/json")
TRAN_CODE = "AQ01"

#: canonical request field -> AUTOQ-REQUEST field
REQUEST_FIELDS = {
    "policyId": "AQ_POLICY_ID",
    "driverAge": "AQ_DRIVER_AGE",
    "vehicleYear": "AQ_VEHICLE_YEAR",
    "vehicleValue": "AQ_VEHICLE_VALUE",
    "claimsLast5Years": "AQ_CLAIMS_5Y",
    "state": "AQ_STATE",
}
#: AUTOQ-REPLY field -> canonical reply field
REPLY_FIELDS = {"AR_POLICY_ID": "policyId", "AR_PREMIUM": "premium", "AR_CURRENCY": "currency", "AR_RISK_CLASS": "riskClass"}


class AutoQuoteTranslator:
    """Canonical auto quote request -> AUTOQ-REQUEST record; AUTOQ-REPLY record -> quote."""

    def __init__(self, options: dict[str, Any]):
        self.records = CopybookTranslator(options, QUOTE_REQUEST)

    def encode(self, document: Document) -> bytes:
        try:
            request = json.loads(document.body)
        except ValueError as exc:
            raise TranslationError(f"document {document.format} is not JSON: {exc}") from None
        missing = [name for name in REQUEST_FIELDS if name not in request]
        if missing:
            raise TranslationError(f"the auto quote request has no {', '.join(missing)}")
        record = {"AQ_TRAN_CODE": TRAN_CODE, **{REQUEST_FIELDS[k]: request[k] for k in REQUEST_FIELDS}}
        return self.records.encode(Document(QUOTE_REQUEST, json.dumps(record).encode()))

    def decode(self, payload: bytes) -> Document:
        record = json.loads(self.records.decode(payload).body)
        status, message = record.get("AR_STATUS", ""), record.get("AR_MESSAGE", "").strip()
        policy = record.get("AR_POLICY_ID", "").strip()
        if status == "RJ":
            raise CommandFault(f"policy {policy} refused by the auto policy rating service: {message}", code="invalid")
        if status != "00":
            raise CommandFault(
                f"the auto policy rating service did not understand the request for policy {policy} "
                f"(status {status!r}): {message}",
                code="failed",
            )
        quote = {REPLY_FIELDS[k]: (v.strip() if isinstance(v, str) else v) for k, v in record.items() if k in REPLY_FIELDS}
        return Document(QUOTE, json.dumps(quote).encode())


def translator(options: dict[str, Any]) -> AutoQuoteTranslator:
    """The socket adapter's translator factory (``module:attribute``, called with its options)."""
    return AutoQuoteTranslator(options)
