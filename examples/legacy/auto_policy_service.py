"""The auto policy rating service: a small legacy TCP service speaking fixed-width EBCDIC records.

It stands in for a mainframe transaction (AUTOQ01) reached over raw TCP, and knows nothing of
Coupler: it reads and writes bytes at the offsets of its copybooks
(``copybooks/autoq-request.cpy`` and ``copybooks/autoq-reply.cpy``), in EBCDIC code page 037,
packed decimals (COMP-3) included. Each record travels with a 2-byte big-endian length prefix
(not counting itself); a connection carries any number of request/reply pairs, in order.

Rating rules (tariff year 2025), applied to every request:

* refused (status ``RJ``): a driver under 18, or more than 3 claims in 5 years;
* not understood (status ``ER``): a record of the wrong length, a transaction code other than
  ``AQ01``, digits or packed decimals that are not numbers, a vehicle from the future;
* otherwise quoted (status ``00``): premium = vehicle value x 3.5 %
  x driver age factor (under 25: 1.60, 25 to 64: 1.00, 65 and over: 1.25)
  x vehicle age factor (older than 10 years: 0.90, else 1.00)
  x claims factor (1 + 0.20 per claim)
  x state factor (CA 1.30, NY 1.25, FL 1.20, others 1.00),
  rounded half up to cents, at least 250.00 USD; risk class ``A`` when the product of the
  factors is below 1.10, ``B`` below 1.50, else ``C``.

Address changes (transaction ``AC01``, ``copybooks/autoac-request.cpy``, 90 bytes): the
service keeps a register of the auto policies it holds (customer, driver, vehicle, garaging
address; ``--register FILE``, JSON, or the built-in :data:`DEMO_REGISTER`); a change moves the
policy of that customer to the new address and re-rates it with the rules above at the new
state, answering an AUTOQ-REPLY record: status ``00``, the new premium, and the old and new
premium in the message. A customer without an auto policy is refused (``RJ``); a state that is
not two letters or a ZIP that is not five digits is not understood (``ER``).

Run it with ``python -m examples.legacy.auto_policy_service --port 7070`` (from the
repository root), or embed it with :class:`AutoPolicyService` / :func:`running_service`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import struct
import threading
from collections.abc import Iterator
from dataclasses import dataclass, replace
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

from .serving import configure_logging, serve

log = logging.getLogger("auto_policy_service")

CODEPAGE = "cp037"
TRAN_CODE = "AQ01"
ADDRESS_TRAN_CODE = "AC01"
ADDRESS_LENGTH = 90
TARIFF_YEAR = 2025
REQUEST_LENGTH = 40
REPLY_LENGTH = 61
MAX_RECORD = 4096
CURRENCY = "USD"
MINIMUM_PREMIUM = Decimal("250.00")
STATE_FACTORS = {"CA": Decimal("1.30"), "NY": Decimal("1.25"), "FL": Decimal("1.20")}


class RecordError(ValueError):
    """A request record the service cannot read (answered with status ``ER``)."""


@dataclass(frozen=True)
class QuoteRequest:
    tran_code: str
    policy_id: str
    driver_age: int
    vehicle_year: int
    vehicle_value: Decimal
    claims: int
    state: str


@dataclass(frozen=True)
class QuoteReply:
    policy_id: str
    status: str  # 00 quoted, RJ refused, ER not understood
    premium: Decimal = Decimal("0.00")
    currency: str = ""
    risk_class: str = ""
    message: str = ""


# -- the record formats ------------------------------------------------------------------------


def unpack_comp3(data: bytes, scale: int) -> Decimal:
    """A packed decimal (two digits a byte, the sign in the last nibble: C/F +, D -)."""
    nibbles = [n for b in data for n in (b >> 4, b & 0x0F)]
    digits, sign = nibbles[:-1], nibbles[-1]
    if any(d > 9 for d in digits) or sign not in (0x0C, 0x0D, 0x0F):
        raise RecordError(f"packed decimal {data.hex()} is not a number")
    value = Decimal(int("".join(map(str, digits)) or "0")).scaleb(-scale)
    return -value if sign == 0x0D else value


def pack_comp3(value: Decimal, size: int, scale: int) -> bytes:
    """``value`` as a signed packed decimal of ``size`` bytes with ``scale`` decimals."""
    units = int(value.scaleb(scale).to_integral_value(ROUND_HALF_UP))
    digits = str(abs(units)).rjust(size * 2 - 1, "0")
    if len(digits) > size * 2 - 1:
        raise OverflowError(f"{value} does not fit {size} packed bytes")
    nibbles = [int(d) for d in digits] + [0x0D if units < 0 else 0x0C]
    return bytes((nibbles[i] << 4) | nibbles[i + 1] for i in range(0, len(nibbles), 2))


def _text(record: bytes, start: int, size: int) -> str:
    return record[start : start + size].decode(CODEPAGE).rstrip(" ")


def _number(record: bytes, start: int, size: int, name: str) -> int:
    text = record[start : start + size].decode(CODEPAGE)
    if not text.isdigit():
        raise RecordError(f"{name} {text!r} IS NOT NUMERIC")
    return int(text)


def read_request(record: bytes) -> QuoteRequest:
    """Parse an AUTOQ-REQUEST record (see ``copybooks/autoq-request.cpy``)."""
    if len(record) != REQUEST_LENGTH:
        raise RecordError(f"RECORD OF {len(record)} BYTES, EXPECTED {REQUEST_LENGTH}")
    return QuoteRequest(
        tran_code=_text(record, 0, 4),
        policy_id=_text(record, 4, 10),
        driver_age=_number(record, 14, 3, "DRIVER AGE"),
        vehicle_year=_number(record, 17, 4, "VEHICLE YEAR"),
        vehicle_value=unpack_comp3(record[21:26], 2),
        claims=_number(record, 26, 2, "CLAIMS"),
        state=_text(record, 28, 2),
    )


def write_reply(reply: QuoteReply) -> bytes:
    """An AUTOQ-REPLY record (see ``copybooks/autoq-reply.cpy``)."""
    out = (
        reply.policy_id[:10].ljust(10).encode(CODEPAGE)
        + reply.status.ljust(2).encode(CODEPAGE)
        + pack_comp3(reply.premium, 5, 2)
        + reply.currency.ljust(3).encode(CODEPAGE)
        + reply.risk_class.ljust(1).encode(CODEPAGE)
        + reply.message[:40].ljust(40).encode(CODEPAGE)
    )
    assert len(out) == REPLY_LENGTH
    return out


# -- the business rules ------------------------------------------------------------------------


def rate(request: QuoteRequest) -> QuoteReply:
    """Apply the rating rules of the module docstring to one request."""
    policy = request.policy_id
    if request.tran_code != TRAN_CODE:
        return QuoteReply(policy, "ER", message=f"UNKNOWN TRANSACTION {request.tran_code}")
    if request.vehicle_year > TARIFF_YEAR + 1:
        return QuoteReply(policy, "ER", message=f"VEHICLE YEAR {request.vehicle_year} IN THE FUTURE")
    if request.driver_age < 18:
        return QuoteReply(policy, "RJ", message=f"DRIVER AGE {request.driver_age} BELOW MINIMUM 18")
    if request.claims > 3:
        return QuoteReply(policy, "RJ", message=f"{request.claims} CLAIMS IN 5 YEARS, MAXIMUM 3")
    if request.driver_age < 25:
        age_factor = Decimal("1.60")
    elif request.driver_age < 65:
        age_factor = Decimal("1.00")
    else:
        age_factor = Decimal("1.25")
    vehicle_factor = Decimal("0.90") if TARIFF_YEAR - request.vehicle_year > 10 else Decimal("1.00")
    claims_factor = 1 + Decimal("0.20") * request.claims
    state_factor = STATE_FACTORS.get(request.state, Decimal("1.00"))
    factor = age_factor * vehicle_factor * claims_factor * state_factor
    premium = (request.vehicle_value * Decimal("0.035") * factor).quantize(Decimal("0.01"), ROUND_HALF_UP)
    risk = "A" if factor < Decimal("1.10") else "B" if factor < Decimal("1.50") else "C"
    return QuoteReply(policy, "00", max(premium, MINIMUM_PREMIUM), CURRENCY, risk, "QUOTED")


# -- address changes (AC01) --------------------------------------------------------------------


@dataclass(frozen=True)
class AutoPolicy:
    """A policy of the register: who drives what, garaged where."""

    policy_id: str
    customer_id: str
    driver_age: int
    vehicle_year: int
    vehicle_value: Decimal
    claims: int
    street: str
    city: str
    state: str
    zip: str

    def quote_request(self) -> QuoteRequest:
        return QuoteRequest(TRAN_CODE, self.policy_id, self.driver_age, self.vehicle_year, self.vehicle_value,
                            self.claims, self.state)


@dataclass(frozen=True)
class AddressChange:
    customer_id: str
    street: str
    city: str
    state: str
    zip: str
    effective_date: str


#: the policies the service holds when it is given no register file
DEMO_REGISTER = (
    AutoPolicy("A-7730019", "C-100234", 41, 2021, Decimal("28500.00"), 1, "12 Harbour Road", "Springfield", "IL", "62701"),
    AutoPolicy("A-7730020", "C-100871", 23, 2012, Decimal("9400.00"), 0, "4 Elm Street", "Albany", "NY", "12207"),
)


def load_register(path: str | None) -> dict[str, AutoPolicy]:
    """Policies by customer id, from a JSON list of objects with the fields of :class:`AutoPolicy`."""
    if path is None:
        return {p.customer_id: p for p in DEMO_REGISTER}
    with open(path, encoding="utf-8") as f:
        rows = json.load(f)
    policies = [AutoPolicy(**{**row, "vehicle_value": Decimal(str(row["vehicle_value"]))}) for row in rows]
    return {p.customer_id: p for p in policies}


def read_address_change(record: bytes) -> AddressChange:
    """Parse an AUTOAC-REQUEST record (see ``copybooks/autoac-request.cpy``)."""
    if len(record) != ADDRESS_LENGTH:
        raise RecordError(f"RECORD OF {len(record)} BYTES, EXPECTED {ADDRESS_LENGTH}")
    change = AddressChange(
        customer_id=_text(record, 4, 10),
        street=_text(record, 14, 30),
        city=_text(record, 44, 20),
        state=_text(record, 64, 2),
        zip=_text(record, 66, 5),
        effective_date=_text(record, 71, 10),
    )
    if not (len(change.state) == 2 and change.state.isalpha()):
        raise RecordError(f"STATE {change.state!r} IS NOT A STATE CODE")
    if not (len(change.zip) == 5 and change.zip.isdigit()):
        raise RecordError(f"ZIP {change.zip!r} IS NOT 5 DIGITS")
    return change


def change_address(register: dict[str, AutoPolicy], change: AddressChange) -> QuoteReply:
    """Move the customer's policy to the new address and re-rate it there."""
    policy = register.get(change.customer_id)
    if policy is None:
        return QuoteReply(change.customer_id, "RJ", message=f"NO AUTO POLICY FOR CUSTOMER {change.customer_id}")
    before = rate(policy.quote_request())
    moved = replace(policy, street=change.street, city=change.city, state=change.state, zip=change.zip)
    after = rate(moved.quote_request())
    if after.status != "00":
        return replace(after, policy_id=policy.policy_id)
    register[change.customer_id] = moved
    message = f"MOVED TO {change.state}: {before.premium} -> {after.premium}"
    return replace(after, message=message)


def answer(record: bytes) -> QuoteReply:
    """The reply to one request record, whatever it holds."""
    try:
        return rate(read_request(record))
    except (RecordError, UnicodeDecodeError, InvalidOperation) as exc:
        policy = record[4:14].decode(CODEPAGE, "replace").rstrip(" ") if len(record) >= 14 else ""
        return QuoteReply(policy, "ER", message=str(exc).upper())


# -- the TCP server ----------------------------------------------------------------------------


class AutoPolicyService:
    """The service on an asyncio TCP server. ``requests`` lists every request it read."""

    def __init__(self, register: dict[str, AutoPolicy] | None = None) -> None:
        self.requests: list[QuoteRequest | bytes] = []
        #: address changes applied, in order
        self.changes: list[AddressChange] = []
        self.register = dict(register) if register is not None else load_register(None)
        self._server: asyncio.Server | None = None

    def answer(self, record: bytes) -> QuoteReply:
        """The reply to one record: an address change (AC01) or a quote (anything else)."""
        if record[:4] == ADDRESS_TRAN_CODE.encode(CODEPAGE):
            try:
                change = read_address_change(record)
            except (RecordError, UnicodeDecodeError) as exc:
                customer = record[4:14].decode(CODEPAGE, "replace").rstrip(" ")
                return QuoteReply(customer, "ER", message=str(exc).upper())
            reply = change_address(self.register, change)
            if reply.status == "00":
                self.changes.append(change)
            return reply
        reply = answer(record)
        try:
            self.requests.append(read_request(record))
        except (RecordError, UnicodeDecodeError, InvalidOperation):
            self.requests.append(record)
        return reply

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> tuple[str, int]:
        self._server = await asyncio.start_server(self._serve, host, port)
        address = self._server.sockets[0].getsockname()
        return address[0], address[1]

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        try:
            while True:
                try:
                    (size,) = struct.unpack(">H", await reader.readexactly(2))
                except asyncio.IncompleteReadError:
                    return  # the client closed the connection
                if size > MAX_RECORD:
                    log.warning("%s sent a record of %d bytes: closing", peer, size)
                    return
                record = await reader.readexactly(size)
                reply = self.answer(record)
                log.info("%s: policy %s -> %s %s", peer, reply.policy_id, reply.status, reply.message)
                out = write_reply(reply)
                writer.write(struct.pack(">H", len(out)) + out)
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError) as exc:
            log.info("%s: connection lost: %s", peer, exc)
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()


@contextlib.contextmanager
def running_service(
    host: str = "127.0.0.1", port: int = 0, register: dict[str, AutoPolicy] | None = None
) -> Iterator[tuple[AutoPolicyService, tuple[str, int]]]:
    """The service on a thread of its own (its own event loop); yields it and its address."""
    service = AutoPolicyService(register)
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="auto-policy-service", daemon=True)
    thread.start()
    try:
        address = asyncio.run_coroutine_threadsafe(service.start(host, port), loop).result(10)
        yield service, address
    finally:
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(service.close(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The auto policy rating service (fixed-width EBCDIC over TCP).")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=7070, help="0 picks a free port")
    parser.add_argument("--register", help="JSON file of the auto policies held (default: the built-in demo register)")
    args = parser.parse_args(argv)
    configure_logging()
    return serve(
        lambda: AutoPolicyService(load_register(args.register)), args.host, args.port,
        lambda host, port: f"auto policy rating service listening on {host}:{port}",
    )


if __name__ == "__main__":
    raise SystemExit(main())
