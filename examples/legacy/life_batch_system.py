"""The life insurance batch system: a mainframe job that trades fixed-width EBCDIC files.

It stands in for the mainframe (COBOL, IMS) life insurance system of the Message Bus example
and knows nothing of Coupler. It works on its side of an SFTP drop box (a directory that an
sshd serves to the bus):

* ``run``: job LIFADR01 polls ``DROPBOX/inbox`` for files of LIFE-ADDR-CHANGE records
  (``copybooks/life-addrchg.cpy``, 120 bytes, EBCDIC code page 037, zoned ZIP), applies each
  change to its policy register (``--register FILE``, JSON, or :data:`DEMO_POLICIES`), and
  writes one LIFE-CONFIRM record per change (``copybooks/life-confirm.cpy``: packed-decimal
  amounts, a policy table with OCCURS DEPENDING ON) to ``DROPBOX/outbox/CONF.<input name>``
  (written under a hidden name, then renamed); the input moves to ``inbox/processed``.
  Rules: the annual premium of every policy of the customer is its net premium plus the
  premium tax of the new state (CA 2.35 %, NY 0.70 %, TX 1.75 %, FL 1.75 %, IL 0.50 %,
  others 2.00 %), rounded half up to cents. Status ``00`` applied, ``NF`` no such customer,
  ``ER`` a record it cannot read.
* ``extract``: the nightly extract of the policy master file, LIFE-POLICY-MASTER records
  (``copybooks/life-master.cpy``, 144 bytes, COMP-3, OCCURS DEPENDING ON), of a given size,
  generated deterministically.

``python -m examples.legacy.life_batch_system run --dropbox DIR`` /
``python -m examples.legacy.life_batch_system extract --size-mb 300 --output FILE``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

from .serving import PollingSystem, configure_logging, poll_until_stopped

log = logging.getLogger("life_batch_system")

CODEPAGE = "cp037"
CHANGE_LENGTH = 120
CONFIRM_LENGTH = 164
MASTER_LENGTH = 144
MAX_POLICIES = 5
PREMIUM_TAX = {"CA": Decimal("0.0235"), "NY": Decimal("0.0070"), "TX": Decimal("0.0175"),
               "FL": Decimal("0.0175"), "IL": Decimal("0.0050")}
DEFAULT_TAX = Decimal("0.0200")


@dataclass
class LifePolicy:
    policy_id: str
    customer_id: str
    face_amount: Decimal
    net_premium: Decimal
    state: str


#: the register when the job is given none
DEMO_POLICIES = (
    LifePolicy("L-40012873", "C-100234", Decimal("250000.00"), Decimal("1180.00"), "IL"),
    LifePolicy("L-40012874", "C-100234", Decimal("50000.00"), Decimal("240.00"), "IL"),
    LifePolicy("L-40013550", "C-100871", Decimal("100000.00"), Decimal("395.00"), "NY"),
)


def tax_rate(state: str) -> Decimal:
    return PREMIUM_TAX.get(state, DEFAULT_TAX)


def annual_premium(policy: LifePolicy) -> Decimal:
    return (policy.net_premium * (1 + tax_rate(policy.state))).quantize(Decimal("0.01"), ROUND_HALF_UP)


# -- records -----------------------------------------------------------------------------------


def _text(value: str, size: int) -> bytes:
    return value[:size].ljust(size).encode(CODEPAGE)


def pack(value: Decimal | int, size: int, scale: int, signed: bool = True) -> bytes:
    """A packed decimal (COMP-3) of ``size`` bytes."""
    units = int(Decimal(value).scaleb(scale).to_integral_value(ROUND_HALF_UP))
    sign = ("D" if units < 0 else "C") if signed else "F"
    return bytes.fromhex(f"{abs(units):0{size * 2 - 1}d}{sign}")


@dataclass(frozen=True)
class ChangeRecord:
    customer_id: str
    name: str
    street: str
    city: str
    state: str
    zip: str
    effective_date: str


def read_change(record: bytes) -> ChangeRecord:
    if len(record) != CHANGE_LENGTH:
        raise ValueError(f"RECORD OF {len(record)} BYTES, EXPECTED {CHANGE_LENGTH}")
    text = record.decode(CODEPAGE)
    if text[0:2] != "AC":
        raise ValueError(f"UNKNOWN RECORD TYPE {text[0:2]!r}")
    zip_code = text[94:99]
    if not zip_code.isdigit():
        raise ValueError(f"ZIP {zip_code!r} NOT NUMERIC")
    return ChangeRecord(text[2:12].rstrip(), text[12:42].rstrip(), text[42:72].rstrip(), text[72:92].rstrip(),
                        text[92:94], zip_code, text[99:109].rstrip())


def write_confirm(customer: str, status: str, state: str, message: str, policies: list[LifePolicy]) -> bytes:
    out = bytearray(_text(customer, 10) + _text(status, 2) + _text(state, 2) + pack(tax_rate(state) if state else 0, 3, 4)
                    + _text(message, 40) + _text(f"{len(policies):02d}", 2))
    for p in policies[:MAX_POLICIES]:
        out += _text(p.policy_id, 10) + pack(p.face_amount, 6, 2) + pack(annual_premium(p), 5, 2)
    out += b"\x40" * (CONFIRM_LENGTH - len(out))  # the unused table entries: EBCDIC spaces
    return bytes(out)


class LifeBatchJob(PollingSystem):
    """Job LIFADR01 over a drop box directory."""

    def __init__(self, dropbox: Path, policies: list[LifePolicy] | None = None):
        self.inbox, self.outbox = dropbox / "inbox", dropbox / "outbox"
        self.processed = self.inbox / "processed"
        for d in (self.inbox, self.outbox, self.processed):
            d.mkdir(parents=True, exist_ok=True)
        self.policies = list(policies) if policies is not None else [LifePolicy(**vars(p)) for p in DEMO_POLICIES]

    def apply(self, record: bytes) -> bytes:
        try:
            change = read_change(record)
        except (ValueError, UnicodeDecodeError) as exc:
            customer = record[2:12].decode(CODEPAGE, "replace").rstrip()
            return write_confirm(customer, "ER", "", str(exc).upper(), [])
        held = [p for p in self.policies if p.customer_id == change.customer_id]
        if not held:
            return write_confirm(change.customer_id, "NF", change.state, "NO LIFE POLICY FOR CUSTOMER", [])
        before = sum(annual_premium(p) for p in held)
        for p in held:
            p.state = change.state
        after = sum(annual_premium(p) for p in held)
        log.info("customer %s moved to %s: annual premiums %s -> %s", change.customer_id, change.state, before, after)
        return write_confirm(change.customer_id, "00", change.state, f"MOVED {change.effective_date} {before}->{after}", held)

    def poll(self) -> int:
        """Process every complete file of the inbox; returns how many."""
        done = 0
        for path in sorted(self.inbox.iterdir()):
            if not path.is_file() or path.name.startswith("."):
                continue
            data = path.read_bytes()
            records = [data[i:i + CHANGE_LENGTH] for i in range(0, len(data), CHANGE_LENGTH)] or [b""]
            out = b"".join(self.apply(r) for r in records)
            tmp = self.outbox / f".CONF.{path.name}.tmp"
            tmp.write_bytes(out)
            os.replace(tmp, self.outbox / f"CONF.{path.stem}.dat")
            os.replace(path, self.processed / path.name)
            done += 1
        return done



# -- the nightly extract -----------------------------------------------------------------------

_STATES = ("CA", "NY", "TX", "FL", "IL", "WA", "OH", "GA", "PA", "MA")
_NAMES = ("SMITH", "JOHNSON", "WILLIAMS", "BROWN", "JONES", "GARCIA", "MILLER", "DAVIS", "LOPEZ", "WILSON")
_FIRST = ("ANN", "JOHN", "MARIA", "DAVID", "LINDA", "JAMES", "SUSAN", "ROBERT", "KAREN", "MICHAEL")


def partial_extract(path: Path) -> Path:
    """Where the extract bound for ``path`` is written until it is whole (then renamed)."""
    return path.with_name(f".{path.name}.tmp")


def write_extract(path: Path, size_bytes: int, seed: int = 2025) -> int:
    """The nightly LIFE-POLICY-MASTER extract of at least ``size_bytes``; returns its record count."""
    count = max(1, -(-size_bytes // MASTER_LENGTH))
    rng = random.Random(seed)
    tmp = partial_extract(path)
    with open(tmp, "wb") as out:
        chunk: list[bytes] = []
        for n in range(count):
            state = _STATES[n % 10]
            name = f"{_FIRST[rng.randrange(10)]} {_NAMES[rng.randrange(10)]}"
            face = rng.randrange(25_000, 1_000_000) * 100
            beneficiaries = n % 4
            head = (f"L-{50_000_000 + n:08d}C-{100_000 + n // 3:06d}  {name:<30}{state}{rng.randrange(10_000, 99_999):05d}"
                    f"{2000 + n % 25:04d}{1 + n % 12:02d}{1 + n % 28:02d}").encode(CODEPAGE)
            rec = bytearray(head)
            rec += pack(face, 6, 0)  # cents: scale 2 of the picture, whole units here
            rec += pack(face // 200, 5, 0)
            rec += ("A" if n % 50 else "L").encode(CODEPAGE) + str(beneficiaries).encode(CODEPAGE)
            for b in range(beneficiaries):
                rec += f"{_FIRST[(n + b) % 10]} {_NAMES[n % 10]}"[:20].ljust(20).encode(CODEPAGE)
                rec += pack(100 // beneficiaries if b else 100 - (beneficiaries - 1) * (100 // beneficiaries), 2, 0, signed=False)
            rec += b"\x40" * (MASTER_LENGTH - len(rec))
            chunk.append(bytes(rec))
            if len(chunk) == 8192:
                out.write(b"".join(chunk))
                chunk.clear()
        out.write(b"".join(chunk))
    os.replace(tmp, path)
    return count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The life insurance batch system (EBCDIC copybook files).")
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="job LIFADR01: apply address changes dropped in DROPBOX/inbox")
    r.add_argument("--dropbox", required=True, type=Path)
    r.add_argument("--register", help="JSON list of policies (default: the built-in demo policies)")
    r.add_argument("--interval", type=float, default=0.2)
    e = sub.add_parser("extract", help="write the nightly policy master extract")
    e.add_argument("--output", required=True, type=Path)
    e.add_argument("--size-mb", type=float, default=300.0)
    args = parser.parse_args(argv)
    configure_logging()
    if args.command == "extract":
        n = write_extract(args.output, int(args.size_mb * 1024 * 1024))
        print(f"{n} records, {args.output.stat().st_size} bytes: {args.output}", flush=True)
        return 0
    policies = None
    if args.register:
        rows = json.loads(Path(args.register).read_text(encoding="utf-8"))
        policies = [LifePolicy(**{**p, "face_amount": Decimal(str(p["face_amount"])),
                                  "net_premium": Decimal(str(p["net_premium"]))}) for p in rows]
    job = LifeBatchJob(args.dropbox, policies)
    return poll_until_stopped(job, args.interval, f"life batch job LIFADR01 polling {job.inbox}")


if __name__ == "__main__":
    raise SystemExit(main())
