"""Avro object container files from a hostile hand, read where Coupler reads them
(:func:`coupler.canonical.streams.avro_container`, under ``coupler translate --from avro`` and
the mappings' Avro input): blocks claiming 2^62 records of no bytes, arrays of 2^60 nulls,
deflate/bzip2/xz bombs, wrong sync markers, schemas nested 5,000 deep, timestamps beyond
datetime, and valid files mutated at random. Each is read or refused with one line
(:class:`UsageError`) within seconds and bounded memory. ``COUPLER_FUZZ_SECONDS``,
``COUPLER_FUZZ_SEED``: tests/fuzzing.py."""

from __future__ import annotations

import bz2
import io
import json
import lzma
import random
import zlib
from pathlib import Path

import fastavro
import pytest

from coupler.bus.cli.inputs import avro_records
from coupler.canonical.errors import UsageError
from coupler.canonical.streams import AVRO_BLOCK_BYTES
from tests.fuzzing import MB, SEED, bounded, cases

RECORD = {"type": "record", "name": "R", "fields": [{"name": "a", "type": "long"}, {"name": "s", "type": "string"},
                                                     {"name": "t", "type": {"type": "long", "logicalType": "timestamp-millis"}},
                                                     {"name": "l", "type": {"type": "array", "items": "int"}}]}


def zigzag(n: int) -> bytes:
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def container(schema: bytes | dict, blocks: list[tuple[int, bytes]], codec: bytes = b"null", sync: bytes = b"S" * 16) -> bytes:
    text = schema if isinstance(schema, bytes) else json.dumps(schema).encode()
    out = bytearray(b"Obj\x01") + zigzag(2)
    for k, v in ((b"avro.schema", text), (b"avro.codec", codec)):
        out += zigzag(len(k)) + k + zigzag(len(v)) + v
    out += b"\x00" + sync
    for count, data in blocks:
        out += zigzag(count) + zigzag(len(data)) + data + sync
    return bytes(out)


def deflate_bomb(size: int) -> bytes:
    z = zlib.compressobj(9, zlib.DEFLATED, -15)
    return b"".join(z.compress(bytes(1 << 20)) for _ in range(size >> 20)) + z.flush()


def read(path: Path, data: bytes) -> int | str:
    path.write_bytes(data)
    try:
        return sum(1 for _ in avro_records(path))
    except UsageError as exc:
        assert "\n" not in str(exc), str(exc)
        return str(exc)


BIG = 2 * AVRO_BLOCK_BYTES
HOSTILE = {
    "2^62 empty records": container({"type": "record", "name": "E", "fields": []}, [(2**62, b"")]),
    "2^62 nulls": container(b'"null"', [(2**62, b"")]),
    "array of 2^60 nulls": container({"type": "record", "name": "A", "fields": [
        {"name": "n", "type": {"type": "array", "items": "null"}}]}, [(1, zigzag(2**60) + b"\x00")]),
    "array of 2^60 empty records": container({"type": "record", "name": "A", "fields": [
        {"name": "n", "type": {"type": "array", "items": {"type": "record", "name": "E", "fields": []}}}]},
        [(1, zigzag(2**60) + b"\x00")]),
    "deflate bomb": container(RECORD, [(1, deflate_bomb(BIG))], codec=b"deflate"),
    "bzip2 bomb": container(RECORD, [(1, bz2.compress(bytes(BIG)))], codec=b"bzip2"),
    "xz bomb": container(RECORD, [(1, lzma.compress(bytes(BIG)))], codec=b"xz"),
    "bzip2 junk": container(RECORD, [(1, b"BZh9junk")], codec=b"bzip2"),
    "xz junk": container(RECORD, [(1, b"\xfd7zXZ\x00junk")], codec=b"xz"),
    "schema 5000 deep": container(b'{"type":"array","items":' * 5000 + b'"long"' + b"}" * 5000, []),
    "json 100000 deep": container(b"[" * 100_000 + b"]" * 100_000, []),
    "timestamp 2^62": container({"type": "long", "logicalType": "timestamp-millis"}, [(1, zigzag(2**62))]),
    "2^62 records of a long in 1 byte": container(RECORD, [(2**62, b"\x02")]),
    "wrong sync": container(RECORD, [(1, b"\x02\x00\x02\x00")], sync=b"S" * 16)[:-16] + b"X" * 16,
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_hostile_container_is_refused_in_one_line_within_bounds(tmp_path: Path, name: str) -> None:
    with bounded(name, seconds=10, memory=16 * MB + BIG):
        outcome = read(tmp_path / "in.avro", HOSTILE[name])
    assert isinstance(outcome, str) and "not a readable Avro container file" in outcome, outcome


def test_compressed_containers_within_the_bound_are_read(tmp_path: Path) -> None:
    records = [{"a": n, "s": "x" * n, "t": 1_700_000_000_000, "l": list(range(n % 7))} for n in range(500)]
    for codec in ("null", "deflate", "bzip2", "xz"):
        buf = io.BytesIO()
        fastavro.writer(buf, RECORD, records, codec=codec)
        assert read(tmp_path / f"{codec}.avro", buf.getvalue()) == 500


def _valid(rng: random.Random) -> bytes:
    buf = io.BytesIO()
    records = [{"a": rng.randrange(-2**63, 2**63), "s": "é" * rng.randrange(20), "t": rng.randrange(2**40),
                "l": [rng.randrange(2**31) for _ in range(rng.randrange(5))]} for _ in range(rng.randrange(1, 40))]
    fastavro.writer(buf, RECORD, records, codec=rng.choice(["null", "deflate", "bzip2", "xz"]),
                    sync_interval=rng.choice([50, 1000, 16000]))
    return buf.getvalue()


def _mutate(rng: random.Random, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randrange(1, 5)):
        at = rng.randrange(len(out) + 1)
        op = rng.randrange(5)
        if op == 0 and at < len(out):
            out[at] = rng.randrange(256)
        elif op == 1:
            del out[at:]
        elif op == 2:
            out[at:at] = zigzag(rng.choice([2**62, 2**60, -(2**62), 2**31, -1, 0, 2**63 - 1]))
        elif op == 3:
            out[at:at + 8] = b"\xff" * 8
        else:
            out[at:at] = out[at:at + rng.randrange(1, 64)] * rng.randrange(1, 30)
    return bytes(out)


def test_random_mutated_containers_are_read_or_refused_in_one_line(tmp_path: Path) -> None:
    print(f"COUPLER_FUZZ_SEED={SEED}")
    rng = random.Random(SEED)
    path = tmp_path / "in.avro"
    count = refused = 0
    for count in cases(least=50):  # noqa: B007
        data = _mutate(rng, _valid(rng)) if rng.random() < 0.95 else rng.choice(list(HOSTILE.values()))
        with bounded(f"avro container {count}", seconds=5, memory=16 * MB + BIG):
            if isinstance(read(path, data), str):
                refused += 1
    print(f"{count + 1} containers, {refused} refused in one line")
