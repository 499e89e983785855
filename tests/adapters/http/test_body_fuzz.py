"""The HTTP adapter's request bodies under random input: a valid order as JSON and as XML,
mutated (bytes flipped, cut, repeated, inserted; values of other types; nesting 200,000
deep; huge numbers; other encodings), and random bytes. Each body is accepted or refused
with :class:`BodyError` (a 4xx status, one line): nothing else escapes the validator, which
would answer 500. Bounded by time; the seed is printed and ``COUPLER_FUZZ_SEED=N`` replays it."""

from __future__ import annotations

import json
import random
import time

from coupler.adapters.http.validation import BodyError, BodyValidator
from coupler.canonical import FormatIndicator
from tests.fuzzing import BUDGET, SEED, bounded

from .conftest import DATA, ORDER

XML = b"<order><orderNo>A-1</orderNo><customer>Ada</customer><quantity>3</quantity></order>"
#: what the fuzzing found, checked first on every run
REGRESSIONS = [
    ("json", b"[" * 200_000 + b"]" * 200_000),
    ("json", b'{"orderNo": "A-1", "customer": "Ada", "quantity": ' + b"9" * 5000 + b"}"),
    ("xml", b"<order>" * 5000 + b"</order>" * 5000),
]


def _mutate(rng: random.Random, body: bytes) -> bytes:
    data = bytearray(body)
    for _ in range(rng.randrange(1, 6)):
        op = rng.randrange(6)
        at = rng.randrange(len(data) + 1)
        if op == 0 and data:
            data[min(at, len(data) - 1)] = rng.randrange(256)
        elif op == 1:
            del data[at:]
        elif op == 2:
            data[at:at] = data[rng.randrange(len(data) + 1):][: rng.randrange(1, 200)] * rng.randrange(1, 50)
        elif op == 3:
            data[at:at] = rng.choice([b"<", b">", b"&", b"&#0;", b"]]>", b"\x00", b"\xff\xfe", b'"', b"{", b"}",
                                      b"<!DOCTYPE x [<!ENTITY a 'b'>]>", b"<?xml version='1.0' encoding='UTF-16'?>",
                                      b"NaN", b"1e999", b"-0", b"\\ud800"])
        elif op == 4:
            data = bytearray(data.decode("latin-1").encode(rng.choice(["utf-16", "utf-32", "utf-8"])))
        else:
            data[at:at] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 30)))
    return bytes(data)


def _json_body(rng: random.Random) -> bytes:
    order: dict[str, object] = dict(ORDER)
    for key in rng.sample(sorted(order) + ["extra"], rng.randrange(3)):
        order[key] = rng.choice([None, True, -1, 2**64, 1e308, "", "x" * 10_000, [], {}, [ORDER], {"a": ORDER}])
    body = json.dumps(order).encode()
    return _mutate(rng, body) if rng.random() < 0.6 else body


def test_random_bodies_are_accepted_or_refused_with_a_4xx_in_one_line() -> None:
    print(f"COUPLER_FUZZ_SEED={SEED}")
    rng = random.Random(SEED)
    validator = BodyValidator(FormatIndicator.parse("acme.Order@1"), ["json", "xml"], str(DATA / "order.avsc"),
                              str(DATA / "order.xsd"), "endpoints.orders", None)
    deadline, count, refused = time.monotonic() + BUDGET, 0, 0
    cases = iter(REGRESSIONS)
    while time.monotonic() < deadline or count < len(REGRESSIONS):
        case = next(cases, None)
        if case is None:
            kind = rng.choice(["json", "xml"])
            shape = rng.randrange(10)
            if shape == 0:
                body = bytes(rng.randrange(256) for _ in range(rng.randrange(300)))
            elif kind == "json":
                body = _json_body(rng)
            else:
                body = _mutate(rng, XML)
            case = (kind, body)
        kind, body = case
        count += 1
        place = f"case {count}, {kind} {body[:100]!r} (COUPLER_FUZZ_SEED={SEED})"
        started = time.process_time()
        try:
            with bounded(place):
                validator.check(body, kind)
        except BodyError as exc:
            refused += 1
            assert 400 <= exc.status < 500 and "\n" not in str(exc), f"{place}: {exc}"
        except Exception as exc:  # noqa: BLE001 - what the test looks for
            raise AssertionError(f"{place}: {type(exc).__name__} escaped the validator: {str(exc)[:200]}") from None
        assert time.process_time() - started < 2.0, f"{place}: took {time.process_time() - started:.1f} s"
    assert refused and count > 50, f"{count} cases, {refused} refused in {BUDGET} s"
