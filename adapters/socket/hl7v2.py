"""HL7 v2 acknowledgements (original mode): ``AA`` accept, ``AE`` error, ``AR`` reject.

Only the MSH segment of the incoming message is read: its separators (MSH-1, MSH-2), the
sending and receiving application and facility (MSH-3..6), the message type (MSH-9), the
control id (MSH-10), the processing id (MSH-11) and the version (MSH-12). The ACK swaps
sender and receiver and echoes the control id in MSA-2.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

from coupler.canonical.errors import CouplerError

ACCEPT, ERROR, REJECT = "AA", "AE", "AR"
SEGMENT_SEPARATORS = ("\r\n", "\n", "\r")


class HL7Error(CouplerError):
    """Text that is not an HL7 v2 message (no MSH segment first)."""


@dataclass(frozen=True)
class Header:
    """The fields of an MSH segment an acknowledgement needs."""

    field_sep: str
    encoding_chars: str
    sending_app: str
    sending_facility: str
    receiving_app: str
    receiving_facility: str
    message_type: str
    control_id: str
    processing_id: str
    version: str

    @property
    def trigger(self) -> str:
        parts = self.message_type.split(self.encoding_chars[:1] or "^")
        return parts[1] if len(parts) > 1 else ""


def read_header(message: bytes | str, encoding: str = "utf-8") -> Header:
    """The MSH fields of ``message``; :class:`HL7Error` when it does not start with MSH."""
    text = message.decode(encoding, errors="replace") if isinstance(message, bytes) else message
    text = text.lstrip("\r\n")
    if not text.startswith("MSH") or len(text) < 8:
        raise HL7Error("not an HL7 v2 message: it does not start with an MSH segment", where="byte 0")
    sep = text[3]
    segment = text
    for s in SEGMENT_SEPARATORS:
        segment = segment.split(s, 1)[0]
    fields = segment.split(sep)
    # fields[0] = "MSH", fields[1] = MSH-2 (MSH-1 is the separator itself): MSH-n = fields[n-1]

    def f(n: int) -> str:
        return fields[n - 1] if len(fields) >= n else ""

    return Header(
        field_sep=sep,
        encoding_chars=f(2) or "^~\\&",
        sending_app=f(3),
        sending_facility=f(4),
        receiving_app=f(5),
        receiving_facility=f(6),
        message_type=f(9),
        control_id=f(10),
        processing_id=f(11) or "P",
        version=f(12) or "2.5",
    )


def _escape(text: str, header: Header) -> str:
    """``text`` with the message's separator characters escaped (HL7 escape sequences)."""
    esc = header.encoding_chars[2:3] or "\\"
    names = {header.field_sep: "F", esc: "E"}
    comps = header.encoding_chars
    for ch, name in zip(comps[:2] + comps[3:4], ("S", "R", "T"), strict=False):
        names[ch] = name
    return "".join(f"{esc}{names[c]}{esc}" if c in names else c for c in " ".join(text.split()))


def acknowledgement(
    message: bytes | str,
    code: str,
    text: str = "",
    *,
    encoding: str = "utf-8",
    now: datetime | None = None,
) -> bytes:
    """The ACK (``code`` AA/AE/AR) of ``message``, encoded; works for unparseable input too."""
    if code not in (ACCEPT, ERROR, REJECT):
        raise ValueError(f"unknown acknowledgement code {code!r}")
    try:
        h = read_header(message, encoding)
    except HL7Error:
        h = Header("|", "^~\\&", "", "", "", "", "", "", "P", "2.5")
        code = REJECT if code == ACCEPT else code
        text = text or "not an HL7 v2 message"
    sep, comp = h.field_sep, h.encoding_chars[:1]
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%d%H%M%S")
    msh = sep.join(
        [
            "MSH",
            h.encoding_chars,
            h.receiving_app,
            h.receiving_facility,
            h.sending_app,
            h.sending_facility,
            stamp,
            "",
            comp.join(["ACK", h.trigger, "ACK"]) if h.trigger else "ACK",
            uuid.uuid4().hex[:20],
            h.processing_id,
            h.version,
        ]
    )
    msa = sep.join(["MSA", code, h.control_id] + ([_escape(text, h)[:80]] if text else []))
    return (msh + "\r" + msa + "\r").encode(encoding)
