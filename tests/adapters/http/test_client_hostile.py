"""Outbound REST against a partner that answers badly (:mod:`.hostile_partner`): bodies without
end, claimed sizes of 2^63, gzip bombs, unknown or broken encodings, answers trickled a byte at
a time, connections reset mid-body, huge headers, statuses nobody expects, junk in
``Retry-After`` and in the token endpoint's answer. Each call ends within the adapter's
``timeout`` (a total, not per read), in one line (a :class:`CouplerError`: the bus retries or
dead-letters the message), having read no more than ``max_response_bytes``; the adapter goes
on with the next message. The random run composes such answers (``COUPLER_FUZZ_SECONDS``,
``COUPLER_FUZZ_SEED``: tests/fuzzing.py)."""

from __future__ import annotations

import json
import random
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from coupler.adapters.http import HttpAdapter
from coupler.bus.api import Command, Document, command_envelope
from coupler.bus.testing import EmbeddedBus
from coupler.canonical import Envelope, FormatIndicator
from coupler.canonical.errors import CouplerError
from tests.adapters.hostile_partner import Connection, HostilePartner, gzip_bomb
from tests.fuzzing import MB, SEED, bounded, cases

from .conftest import ORDER

FMT = FormatIndicator("acme.Order", 1, "application/json")
TIMEOUT = 1.0


@pytest.fixture
def embedded(tmp_path: Path) -> Iterator[EmbeddedBus]:
    with EmbeddedBus(tmp_path / "site") as b:
        yield b


@pytest.fixture
def hostile() -> Iterator[HostilePartner]:
    p = HostilePartner().start()
    yield p
    p.stop()


def client(bus: EmbeddedBus, partner: HostilePartner, **options: Any) -> HttpAdapter:
    options = {"mode": "client", "url": partner.url + "/api/orders", "backoff": 0.01, "retries": 0,
               "timeout": TIMEOUT, "max_response_bytes": 64 * 1024, **options}
    return bus.adapter(HttpAdapter, "orders-out", options, direction="outbound", channel="orders")


def request(a: HttpAdapter) -> bytes:
    """The partner's answer to a ``request`` command (its body is read, up to the limit)."""
    doc = Document(FMT, json.dumps(ORDER).encode())
    reply = a.handle(Command("request", a.name, command_envelope("request", a.name, document=doc), document=doc))
    (answer,) = reply.documents
    return answer.body


def one_line_failure(call: Any) -> str:
    with pytest.raises(CouplerError) as err:
        call()
    text = str(err.value)
    assert "\n" not in text and "\r" not in text, text
    return text


def head(status: str = "201 Created", *headers: str) -> bytes:
    text = f"HTTP/1.1 {status}\r\n" + "".join(f"{h}\r\n" for h in headers) + "\r\n"
    try:
        return text.encode("latin-1")
    except UnicodeEncodeError:
        return text.encode("utf-8")


def endless_chunks(c: Connection) -> None:
    c.send(head("201 Created", "Content-Type: application/json", "Transfer-Encoding: chunked"))
    chunk = b"%x\r\n%s\r\n" % (65536, b"7" * 65536)
    while True:
        c.send(chunk)


def trickled_head(c: Connection) -> None:
    for byte in head("201 Created", "Content-Type: application/json", "X-Slow: " + "s" * 200):
        c.send(bytes([byte]))
        c.pause(0.05)


def trickled_body(c: Connection) -> None:
    c.send(head("201 Created", "Content-Length: 1000"))
    while True:
        c.send(b"{")
        c.pause(0.05)


def test_a_body_without_end_is_cut_at_max_response_bytes(embedded: EmbeddedBus, hostile: HostilePartner) -> None:
    hostile.answer = endless_chunks
    a = client(embedded, hostile)
    with bounded("endless body", seconds=10, memory=32 * MB):
        text = one_line_failure(lambda: request(a))
    assert "max_response_bytes" in text
    hostile.answer = lambda c: c.send(head("201 Created", "Content-Length: 2") + b"{}")
    assert request(a) == b"{}"  # the adapter goes on


def test_a_gzip_bomb_is_inflated_no_further_than_max_response_bytes(embedded: EmbeddedBus,
                                                                    hostile: HostilePartner) -> None:
    bomb = gzip_bomb(256 * MB)
    hostile.answer = lambda c: c.send(head("201 Created", "Content-Encoding: gzip",
                                           f"Content-Length: {len(bomb)}") + bomb)
    a = client(embedded, hostile, timeout=10)
    with bounded("gzip bomb", seconds=10, memory=32 * MB):
        assert "max_response_bytes" in one_line_failure(lambda: request(a))
    body = json.dumps({"ok": True}).encode()
    hostile.answer = lambda c: c.send(head("201 Created", "Content-Encoding: gzip") + zlib.compress(body, wbits=31))
    assert request(a) == body  # a gzipped answer within the limit is read as ever


@pytest.mark.parametrize("answer", [trickled_head, trickled_body], ids=["head", "body"])
def test_an_answer_trickled_a_byte_at_a_time_ends_at_the_timeout(embedded: EmbeddedBus, hostile: HostilePartner,
                                                                  answer: Any) -> None:
    hostile.answer = answer
    a = client(embedded, hostile)
    started = time.monotonic()
    with bounded("trickle", seconds=10):
        assert "timeout" in one_line_failure(lambda: request(a))  # a body the bus needs: read to its end
    assert time.monotonic() - started < TIMEOUT + 2


def test_a_size_claimed_beyond_the_limit_is_refused_before_reading(embedded: EmbeddedBus,
                                                                  hostile: HostilePartner) -> None:
    hostile.answer = lambda c: c.send(head("201 Created", f"Content-Length: {2**63 - 1}") + b"{}")
    a = client(embedded, hostile)
    assert "max_response_bytes" in one_line_failure(lambda: request(a))


@pytest.mark.parametrize("value", ["\u00b2", "\u0663", "12\u00b9"])
def test_a_retry_after_of_other_digits_is_a_retry_not_a_crash(embedded: EmbeddedBus, hostile: HostilePartner,
                                                              value: str) -> None:
    answers = [head("503 Busy", "Content-Length: 0", f"Retry-After: {value}"), head("201 Created", "Content-Length: 0")]
    hostile.answer = lambda c: c.send(answers.pop(0))
    a = client(embedded, hostile, retries=1)
    embedded.deliver(a, Envelope(format=FMT, body=b"{}"))
    assert hostile.requests == 2


def test_a_refusal_whose_body_has_lines_is_one_line(embedded: EmbeddedBus, hostile: HostilePartner) -> None:
    page = b"<html>\r\n<body>\n<h1>Conflict</h1>\n</body>\n</html>\n"
    hostile.answer = lambda c: c.send(head("409 Conflict", f"Content-Length: {len(page)}") + page)
    a = client(embedded, hostile)
    assert "<h1>Conflict</h1>" in one_line_failure(lambda: embedded.deliver(a, Envelope(format=FMT, body=b"{}")))


@pytest.mark.parametrize("grant", [
    b'{"access_token": "t", "expires_in": "soon"}', b'{"access_token": "t", "expires_in": null}',
    b'{"access_token": "t", "expires_in": [1]}', b"[" * 100_000 + b"]" * 100_000, b'"\xff\xfe"',
    b'{"access_token": "' + b"t" * (2 * MB) + b'"}',
], ids=["text", "null", "list", "deep", "not-utf8", "huge"])
def test_a_token_endpoint_answering_junk_fails_the_call_in_one_line(embedded: EmbeddedBus, hostile: HostilePartner,
                                                                   grant: bytes, tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("s")
    secret.chmod(0o600)
    hostile.answer = lambda c: c.send(head("200 OK", "Content-Type: application/json", f"Content-Length: {len(grant)}")
                                      + grant)
    a = client(embedded, hostile, oauth2={"token_url": hostile.url + "/token", "client_id": "c",
                                          "client_secret_file": str(secret)})
    with bounded("token", seconds=10, memory=32 * MB):
        assert "token endpoint" in one_line_failure(lambda: embedded.deliver(a, Envelope(format=FMT, body=b"{}")))


# -- the random run -------------------------------------------------------------------------------

STATUSES = ["200 OK", "201 Created", "204 No Content", "202 Accepted", "301 Moved", "304 Not Modified",
            "400 Bad", "409 Conflict", "429 Slow down", "500 Oops", "503 Busy", "599 Odd", "999 What",
            "700 Seven", "1000 Four digits", "20 Two", "abc Letters", "-1 Negative", "200", "101 Switching Protocols"]
HEADERS = ["Content-Type: text/html", "Content-Type: application/json; charset=utf-16",
           "Content-Type: \xff\xfe", "Content-Type:", "Content-Encoding: gzip", "Content-Encoding: deflate",
           "Content-Encoding: br", "Content-Encoding: zstd", "Content-Encoding: gzip, gzip",
           "Content-Encoding: x-unknown", "Transfer-Encoding: chunked", "Transfer-Encoding: gzip, chunked",
           f"Content-Length: {2**63}", "Content-Length: -1", "Content-Length: 10, 20", "Content-Length: 0x10",
           "Retry-After: 0", "Retry-After: \u00b2", "Retry-After: 99999999999999999999999",
           "Retry-After: Wed, 21 Oct 2015 07:28:00 GMT", "Location: javascript:alert(1)", "Location: http://[::1",
           "X-Big: " + "x" * 100_000, "Connection: close", "Connection: keep-alive", "\xff\xfe: \x00",
           "Set-Cookie: a=" + "b" * 4000, "Content-Length: 5"]
BODIES = [b"", b"{}", b"{", b"<html><body>500</body></html>", b"\xff\xfe\x00{", b"[" * 50_000,
          b'{"a": ' + b"9" * 10_000 + b"}", b"\x1f\x8b\x08\x00garbage", b"x" * 200_000, b"line\nline\r\nline"]


def _answer(rng: random.Random) -> Any:
    status = rng.choice(STATUSES)
    headers = rng.sample(HEADERS, rng.randrange(4))
    body = rng.choice(BODIES)
    if rng.random() < 0.2:
        encoded = zlib.compress(body, wbits=rng.choice([31, 15, -15]))
        body = encoded[: rng.randrange(len(encoded) + 1)] if rng.random() < 0.5 else encoded
        headers.append(f"Content-Encoding: {rng.choice(['gzip', 'deflate', 'identity'])}")
    if rng.random() < 0.5 and not any(h.startswith(("Content-Length", "Transfer-Encoding")) for h in headers):
        headers.append(f"Content-Length: {len(body) + rng.choice([0, 0, 0, -1, 1, 1000])}")
    data = head(status, *headers) + body
    if rng.random() < 0.2:
        data = data[: rng.randrange(len(data) + 1)]
    ending = rng.choice(["close", "close", "reset", "hang", "trickle", "endless"])

    def answer(c: Connection) -> None:
        if ending == "trickle":
            for i in range(0, len(data), 7):
                c.send(data[i:i + 7])
                c.pause(0.02)
        else:
            c.send(data)
        if ending == "reset":
            c.reset()
        elif ending == "hang":
            c.pause(TIMEOUT * 3)
        elif ending == "endless":
            while True:
                c.send(b"7" * 65536)

    return answer


def test_random_hostile_answers_end_in_a_reply_or_one_line_within_the_timeout(
        embedded: EmbeddedBus, hostile: HostilePartner) -> None:
    print(f"COUPLER_FUZZ_SEED={SEED}")
    rng = random.Random(SEED)
    a = client(embedded, hostile, timeout=0.5)
    count = failed = 0
    for count in cases(least=20):  # noqa: B007
        hostile.answer = _answer(rng)
        with bounded(f"hostile answer {count}", seconds=5, memory=64 * MB):
            try:
                if rng.random() < 0.5:
                    body = request(a)
                    assert len(body) <= 64 * 1024
                else:
                    embedded.deliver(a, Envelope(format=FMT, body=b"{}"))
            except CouplerError as exc:
                assert "\n" not in str(exc) and "\r" not in str(exc), str(exc)
                failed += 1
    print(f"{count + 1} answers, {failed} failed in one line")


@pytest.mark.parametrize("location", ["javascript:alert(1)", "http://[::1"])
def test_a_redirect_to_a_location_that_is_no_url_is_a_failed_call(embedded: EmbeddedBus, hostile: HostilePartner,
                                                                  location: str) -> None:
    hostile.answer = lambda c: c.send(head("301 Moved", "Content-Length: 0", f"Location: {location}"))
    a = client(embedded, hostile)
    text = one_line_failure(lambda: embedded.deliver(a, Envelope(format=FMT, body=b"{}")))
    assert "InvalidURL" in text or "location header" in text
    hostile.answer = lambda c: c.send(head("201 Created", "Content-Length: 0"))
    embedded.deliver(a, Envelope(format=FMT, body=b"{}"))  # the adapter goes on
