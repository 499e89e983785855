"""The auto policy rating service (examples/legacy) on its own, spoken to with bytes built by hand:
it reads EBCDIC fields at their copybook offsets, packed decimals included, and computes its
answers from them."""

from __future__ import annotations

import socket
import struct
from decimal import Decimal

import pytest

from examples.legacy.auto_policy_service import pack_comp3, running_service, unpack_comp3


def _request(policy: str, age: int, year: int, value: str, claims: int, state: str, tran: str = "AQ01") -> bytes:
    packed = pack_comp3(Decimal(value), 5, 2)
    record = (tran + policy.ljust(10) + f"{age:03d}{year:04d}").encode("cp037") + packed
    record += (f"{claims:02d}" + state + " " * 10).encode("cp037")
    assert len(record) == 40
    return record


def _exchange(sock: socket.socket, record: bytes) -> dict[str, object]:
    sock.sendall(struct.pack(">H", len(record)) + record)
    (size,) = struct.unpack(">H", _read(sock, 2))
    reply = _read(sock, size)
    assert size == 61
    return {
        "policy": reply[0:10].decode("cp037").rstrip(),
        "status": reply[10:12].decode("cp037"),
        "premium": unpack_comp3(reply[12:17], 2),
        "currency": reply[17:20].decode("cp037").strip(),
        "risk": reply[20:21].decode("cp037").strip(),
        "message": reply[21:61].decode("cp037").rstrip(),
    }


def _read(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionResetError("the service closed the connection")
        data += chunk
    return data


def test_packed_decimals_round_trip_with_their_sign() -> None:
    assert pack_comp3(Decimal("1093.75"), 5, 2) == bytes.fromhex("000109375c")
    assert pack_comp3(Decimal("-12.5"), 3, 2) == bytes.fromhex("01250d")
    assert unpack_comp3(bytes.fromhex("000109375c"), 2) == Decimal("1093.75")
    assert unpack_comp3(bytes.fromhex("01250d"), 2) == Decimal("-12.50")
    with pytest.raises(OverflowError):
        pack_comp3(Decimal("100000000.00"), 5, 2)


def test_the_service_rates_refuses_and_rejects_what_it_cannot_read() -> None:
    with running_service() as (service, address), socket.create_connection(address, timeout=10) as s:
        # 25000.00 x 0.035 = 875.00; x 1.25 (NY) = 1093.75; factor 1.25 -> B
        assert _exchange(s, _request("P-1", 40, 2020, "25000.00", 0, "NY")) == {
            "policy": "P-1", "status": "00", "premium": Decimal("1093.75"), "currency": "USD", "risk": "B", "message": "QUOTED",
        }
        # 3000.00 x 0.035 = 105.00, below the minimum premium of 250.00; factor 1.00 -> A
        got = _exchange(s, _request("P-2", 50, 2024, "3000.00", 0, "OH"))
        assert (got["premium"], got["risk"]) == (Decimal("250.00"), "A")
        # 70 years old (1.25), 2012 car (13 years: 0.90), 2 claims (1.40), CA (1.30):
        # 20000.00 x 0.035 = 700.00 x 2.0475 = 1433.25; factor 2.0475 -> C
        got = _exchange(s, _request("P-3", 70, 2012, "20000.00", 2, "CA"))
        assert (got["premium"], got["risk"]) == (Decimal("1433.25"), "C")
        got = _exchange(s, _request("P-4", 17, 2020, "9000.00", 0, "NY"))
        assert (got["status"], got["message"], got["premium"]) == ("RJ", "DRIVER AGE 17 BELOW MINIMUM 18", Decimal("0"))
        got = _exchange(s, _request("P-5", 30, 2020, "9000.00", 4, "NY"))
        assert (got["status"], got["message"]) == ("RJ", "4 CLAIMS IN 5 YEARS, MAXIMUM 3")
        got = _exchange(s, _request("P-6", 30, 2020, "9000.00", 0, "NY", tran="XX99"))
        assert (got["status"], got["message"]) == ("ER", "UNKNOWN TRANSACTION XX99")
        bad_age = _request("P-7", 30, 2020, "9000.00", 0, "NY").replace("030".encode("cp037"), "3O0".encode("cp037"))
        got = _exchange(s, bad_age)
        assert (got["policy"], got["status"], got["message"]) == ("P-7", "ER", "DRIVER AGE '3O0' IS NOT NUMERIC")
        got = _exchange(s, b"\x40" * 12)
        assert (got["status"], got["message"]) == ("ER", "RECORD OF 12 BYTES, EXPECTED 40")
    assert len(service.requests) == 8 and service.requests[0].vehicle_value == Decimal("25000.00")
