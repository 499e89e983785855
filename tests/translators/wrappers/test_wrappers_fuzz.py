"""Fuzzing the envelope wrappers' ``unwrap`` (what an adapter runs on every frame or file it
receives): the framings (length prefix of 1, 2 and 4 bytes, delimited, MLLP, STX/ETX), the
copybook header (a display length and a binary one), the XML envelope of an XSD, the SOAP
wrapper 1.1/1.2, and chains of them.

The inputs are well-formed wraps of random payloads, damaged (bytes flipped, inserted, cut,
repeated; lengths claiming up to 2**64 - 1), random bytes, and hostile XML (billion laughs,
quadratic blow-up, external entities and DTDs naming a file or a URL, 100 000 nested
elements, declared encodings the bytes are not in). ``unwrap`` either gives bytes and
:class:`Headers` or raises a one-line :class:`WrapperError`; nothing else escapes; each case
is bounded in time and in memory (nothing is allocated from a claimed length; no entity is
expanded, no file or URL is read). Bounded by ``COUPLER_FUZZ_SECONDS`` (3 s by default); the
seed is printed and ``COUPLER_FUZZ_SEED=N`` replays a run."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from coupler.translators.framing import LengthPrefixed
from coupler.translators.soap import Addressing, SoapFault, wrap
from coupler.translators.wrappers import Headers, WrapperChain, WrapperError, build_chain
from coupler.translators.wrappers.framing import FramingWrapper
from tests.fuzzing import BUDGET, MB, SEED, bounded, cases

DATA = Path(__file__).parent / "data"

HEADER = {"copybook": "txn-header.cpy", "options": {"encoding": "ascii"}, "correlation_id": "CORR-ID",
          "return_address": "REPLY-QUEUE", "return_addresses": ["REPLY.*"], "length": "DATA-LEN",
          "properties": {"txn": "TXN-CODE"}, "constants": {"VERSION": 1}}
BINARY_HEADER = "       01  BIN-HEADER.\n           05  TXN-CODE  PIC X(4).\n           05  DATA-LEN  PIC 9(18) COMP.\n"
XML_ENVELOPE = {"xsd": "envelope.xsd", "payload": "Data", "correlation_id": "Header.CorrelationId",
                "return_address": "Header.ReplyTo", "properties": {"txn": "Header.Transaction"},
                "constants": {"Header.version": 2}}
HUGE = [2**8 - 1, 2**16 - 1, 2**31, 2**32 - 1, 2**63, 2**64 - 1, 10**18]


def _chains(folder: Path) -> dict[str, WrapperChain]:
    (folder / "bin-header.cpy").write_text(BINARY_HEADER)
    (folder / "txn-header.cpy").write_bytes((DATA / "txn-header.cpy").read_bytes())
    (folder / "envelope.xsd").write_bytes((DATA / "envelope.xsd").read_bytes())
    entries: dict[str, list[dict[str, Any]]] = {
        "length 1": [{"type": "length", "options": {"size": 1}}],
        "length 2 little": [{"type": "length", "options": {"size": 2, "byteorder": "little"}}],
        "length 4 inclusive": [{"type": "length", "options": {"size": 4, "includes_header": True}}],
        "length 4 small frames": [{"type": "length", "options": {"size": 4, "max_frame_bytes": 64}}],
        "delimited": [{"type": "delimited", "options": {"delimiter": "CRLF"}}],
        "mllp": [{"type": "mllp"}],
        "stx_etx": [{"type": "stx_etx", "options": {"max_frame_bytes": 100}}],
        "copybook": [{"type": "copybook", "options": HEADER}],
        "copybook binary length": [{"type": "copybook", "options": {"copybook": "bin-header.cpy", "length": "DATA-LEN",
                                                                    "properties": {"txn": "TXN-CODE"}}}],
        "xml": [{"type": "xml", "options": XML_ENVELOPE}],
        "soap 1.1": [{"type": "soap"}],
        "soap 1.2": [{"type": "soap", "options": {"version": "1.2", "action": "urn:pay",
                                                  "return_addresses": ["replies.*"]}}],
        "copybook in length": [{"type": "copybook", "options": HEADER}, {"type": "length", "options": {"size": 2}}],
        "soap in mllp": [{"type": "soap", "options": {"version": "1.2"}}, {"type": "mllp"}],
        "xml in delimited": [{"type": "xml", "options": XML_ENVELOPE}, {"type": "delimited"}],
    }
    return {name: build_chain(entry, base_dir=folder) for name, entry in entries.items()}


@pytest.fixture(scope="module")
def chains(tmp_path_factory: pytest.TempPathFactory) -> dict[str, WrapperChain]:
    return _chains(tmp_path_factory.mktemp("h96_wrappers"))


def _payload(rng: random.Random, name: str) -> bytes:
    if "soap" in name:
        return rng.choice([b'<pay xmlns="urn:x"><amount>1</amount></pay>', b"<a/>", b"",
                           b"<r>" + rng.randbytes(8).hex().encode() + b"</r>"])
    if "delimited" in name and "xml" not in name:
        return bytes(rng.choice(b"abc \t0123456789") for _ in range(rng.randrange(0, 40)))
    if name == "stx_etx" or name == "mllp":
        return bytes(rng.randrange(0x20, 0x7f) for _ in range(rng.randrange(0, 60)))
    if name == "length 1":
        return rng.randbytes(rng.randrange(0, 255))
    return rng.randbytes(rng.randrange(0, 60))


def _headers(rng: random.Random) -> Headers:
    return Headers(correlation_id=rng.choice([None, "abc-1", "12345678-1234-1234-1234-123456789012"]),
                   return_address=rng.choice([None, "REPLY.Q", "replies.x"]),
                   message_id=rng.choice([None, "0b5c2a9e-0f67-4a43-9a34-1a2b3c4d5e6f"]),
                   properties=rng.choice([{}, {"txn": "PAY1"}]))


#: hostile XML: each must be refused (entities, external DTDs) or unwrapped in its bounds
BOMB = (b'<?xml version="1.0"?>\n<!DOCTYPE lolz [<!ENTITY lol "lol">'
        + b"".join(b'<!ENTITY lol%d "%s">' % (n, (b"&lol%d;" % (n - 1) if n > 1 else b"&lol;") * 10) for n in range(1, 10))
        + b"]>\n")
QUADRATIC = b'<?xml version="1.0"?><!DOCTYPE m [<!ENTITY a "' + b"x" * 50_000 + b'">]>'
EXTERNAL = [b'<?xml version="1.0"?><!DOCTYPE m [<!ENTITY x SYSTEM "file:///etc/passwd">]>',
            b'<?xml version="1.0"?><!DOCTYPE m [<!ENTITY x SYSTEM "http://127.0.0.1:1/x">]>',
            b'<?xml version="1.0"?><!DOCTYPE m SYSTEM "file:///etc/passwd">',
            b'<?xml version="1.0"?><!DOCTYPE m PUBLIC "-//X//Y" "http://127.0.0.1:1/m.dtd">',
            b'<?xml version="1.0"?><!DOCTYPE m [<!ENTITY % p SYSTEM "file:///etc/passwd"> %p;]>']
SOAP11 = b'<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/">'
SOAP12 = b'<soap12:Envelope xmlns:soap12="http://www.w3.org/2003/05/soap-envelope">'


def _hostile_xml(rng: random.Random, name: str) -> bytes:
    kind = rng.randrange(8)
    if name.startswith("xml"):
        root_open, root_close = b"<Message>", b"</Message>"
    elif "1.2" in name or "mllp" in name:
        root_open, root_close = SOAP12 + b"<soap12:Body>", b"</soap12:Body></soap12:Envelope>"
    else:
        root_open, root_close = SOAP11 + b"<soapenv:Body>", b"</soapenv:Body></soapenv:Envelope>"
    if kind == 0:
        return BOMB.replace(b"lolz", b"Message") + root_open + b"<x>&lol9;</x>" + root_close
    if kind == 1:
        return QUADRATIC + root_open + b"<x>" + b"&a;" * 5000 + b"</x>" + root_close
    if kind == 2:
        return rng.choice(EXTERNAL) + root_open + b"<x>&x;</x>" + root_close
    if kind == 3:  # deep nesting
        depth = rng.choice([300, 5000, 100_000])
        return root_open + b"<d>" * depth + b"</d>" * depth + root_close
    if kind == 4:  # a declared encoding the bytes are not in, or a BOM that lies
        head = rng.choice([b'<?xml version="1.0" encoding="UTF-16"?>', b'<?xml version="1.0" encoding="cp500"?>',
                           b'<?xml version="1.0" encoding="nope-8"?>', b"\xff\xfe", b"\xef\xbb\xbf\xef\xbb\xbf",
                           b'<?xml version="1.0" encoding="ISO-8859-1"?>'])
        return head + root_open + "<x>\u00e9\u20ac</x>".encode(rng.choice(["utf-8", "utf-16-le", "latin-1"]), "replace") + root_close
    if kind == 5:  # huge headers
        return root_open.replace(b"<soapenv:Body>", b"<soapenv:Header>" + b"<h>x</h>" * 20_000 + b"</soapenv:Header><soapenv:Body>") + root_close
    if kind == 6:  # two Bodies, a Body missing, an Envelope not SOAP's
        return rng.choice([root_open + b"<a/>" + root_close + root_close, SOAP11 + b"</soapenv:Envelope>",
                           b"<Envelope><Body><a/></Body></Envelope>", SOAP11 + b"<soapenv:Body><a/></soapenv:Body>"
                           b"<soapenv:Body><b/></soapenv:Body></soapenv:Envelope>"])
    return root_open + b"<x a='" + b"y" * 200_000 + b"'/>" + root_close  # a huge attribute


def _mutated(rng: random.Random, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randrange(1, 4)):
        what = rng.randrange(7)
        at = rng.randrange(len(out) + 1)
        if what == 0 and out:
            out[min(at, len(out) - 1)] ^= 1 << rng.randrange(8)
        elif what == 1:
            del out[at:]
        elif what == 2:
            del out[at : at + rng.randrange(1, 9)]
        elif what == 3:
            out[at:at] = out[at : at + rng.randrange(1, 40)]
        elif what == 4:
            out[at:at] = rng.randbytes(rng.randrange(1, 9))
        elif what == 5:  # a binary length claiming a huge size
            claim = rng.choice(HUGE)
            out[at:at] = claim.to_bytes(8, rng.choice(["big", "little"]))[-rng.choice([1, 2, 4, 8]):]
        else:  # a display length claiming a huge size
            out[at:at] = str(rng.choice(HUGE)).encode()[: rng.randrange(1, 21)]
    return bytes(out)


def unwrap_once(chain: WrapperChain, data: bytes, label: str) -> None:
    """``chain.unwrap(data)`` gives bytes and headers or raises a one-line WrapperError, within
    5 s and a few MB beyond the input's size."""
    with bounded(label, memory=16 * len(data) + 8 * MB):
        try:
            payload, headers = chain.unwrap(data)
        except WrapperError as exc:
            assert "\n" not in str(exc) and "Traceback" not in str(exc), f"{label}: {exc!s}"
            return
    assert isinstance(payload, bytes) and isinstance(headers, Headers), label
    for name in ("correlation_id", "return_address", "message_id"):
        assert getattr(headers, name) is None or isinstance(getattr(headers, name), str), label
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in headers.properties.items()), label


@pytest.fixture(autouse=True)
def _seed_with_every_report() -> None:
    print(f"COUPLER_FUZZ_SEED={SEED}")


def test_unwrap_of_damaged_and_random_bytes_raises_only_wrapper_errors(chains: dict[str, WrapperChain]) -> None:
    rng = random.Random(SEED)
    names = sorted(chains)
    count = 0
    for count in cases(least=3 * len(names)):
        name = names[count % len(names)]
        chain = chains[name]
        kind = rng.randrange(10)
        if kind == 0:
            data = rng.randbytes(rng.randrange(0, 300))
        elif kind <= 2 and ("soap" in name or "xml" in name):
            data = _hostile_xml(rng, name)
            if len(chain) > 1:  # framed as the chain's outer wrapper frames it
                try:
                    data = WrapperChain(chain.wrappers[1:]).wrap(data)
                except WrapperError:  # a delimiter in the document: as it comes
                    pass
        else:
            try:
                wire = chain.wrap(_payload(rng, name), _headers(rng))
            except WrapperError:
                continue
            data = _mutated(rng, wire) if kind > 3 else wire
        unwrap_once(chain, data, f"case {count} ({name}, {len(data)} bytes: {data[:60]!r}; COUPLER_FUZZ_SEED={SEED})")
    print(f"{count + 1} cases")


@pytest.mark.parametrize("name", ["xml", "soap 1.1", "soap 1.2"])
@pytest.mark.parametrize("hostile", range(8))
def test_hostile_xml_is_refused_within_bounds_without_reading_files(chains: dict[str, WrapperChain], name: str,
                                                                     hostile: int) -> None:
    class OneKind(random.Random):
        def randrange(self, *args: Any, **kwargs: Any) -> int:
            return hostile if args == (8,) else super().randrange(*args, **kwargs)

    data = _hostile_xml(OneKind(hostile), name)
    unwrap_once(chains[name], data, f"hostile {hostile} ({name})")
    if hostile in (0, 1, 2):
        with pytest.raises(WrapperError, match="entit|DTD|DOCTYPE") as caught:
            chains[name].unwrap(data)
        assert "root:" not in str(caught.value)  # no file's content in the error


def test_a_length_prefix_claiming_4_gb_is_refused_before_anything_is_allocated(chains: dict[str, WrapperChain]) -> None:
    for name in ("length 4 inclusive", "length 4 small frames"):
        data = b"\xff\xff\xff\xff" + b"x" * 10
        with pytest.raises(WrapperError, match="larger than|exceeds|too large|max"):
            unwrap_once(chains[name], data, name)
            chains[name].unwrap(data)


#: what a fault's detail may hold that XML escapes (text with ``&`` and ``<``, CDATA)
ESCAPED = [b"&amp;", b"&lt;", b"&gt;", b"&#38;", b"&#x3C;", b"<![CDATA[<x>&]]>", b"a &amp; b", b"]]&gt;", b"&quot;"]


def _fault_wire(rng: random.Random, version: str) -> bytes:
    detail = rng.choice(["<p:why xmlns:p='urn:p'>amount</p:why>", "<a/><b>x</b>", None])
    wire = wrap(fault=SoapFault("Sender", "bad amount", detail=detail), version=version,
                addressing=Addressing(relates_to="urn:uuid:12345678-1234-1234-1234-123456789012", reply_to="replies.x"))
    tag = b"detail>" if version == "1.1" else b"Detail>"
    if detail is None:  # an empty detail element, to put text in
        close = b"</soapenv:Fault>" if version == "1.1" else b"</soap12:Fault>"
        wire = wire.replace(close, (b"<detail></detail>" if version == "1.1" else b"<soap12:Detail></soap12:Detail>") + close)
    at = wire.index(tag) + len(tag)
    return wire[:at] + b"".join(rng.choice(ESCAPED) for _ in range(rng.randrange(1, 3))) + wire[at:]


@pytest.mark.parametrize("version", ["1.1", "1.2"])
@pytest.mark.parametrize("text", ESCAPED)
def test_a_fault_whose_detail_holds_escaped_text_unwraps(chains: dict[str, WrapperChain], version: str, text: bytes) -> None:
    """Found by probing after the run above: a partner's fault whose detail holds text XML
    escapes (``a &amp; b``) made the SOAP wrapper raise lxml's XMLSyntaxError: the detail was
    kept as its text unescaped, then parsed again as XML."""
    wire = wrap(fault=SoapFault("Sender", "bad amount", detail="<x/>"), version=version)
    tag = b"detail>" if version == "1.1" else b"Detail>"
    at = wire.index(tag) + len(tag)
    payload, headers = chains[f"soap {version}"].unwrap(wire[:at] + text + wire[at:])
    assert headers.properties["soap_fault"] == "Sender"
    from lxml import etree

    fault = etree.fromstring(payload)
    detail = next(e for e in fault.iter() if isinstance(e.tag, str) and etree.QName(e).localname.lower() == "detail")
    assert (detail.text or "") == etree.fromstring(b"<d>" + text + b"</d>").text  # the same text, read back
    assert [etree.QName(c).localname for c in detail] == ["x"]


def test_soap_fault_and_addressing_survive_damage(chains: dict[str, WrapperChain]) -> None:
    """Mutations of a fault with WS-Addressing headers (a partner's reply to the bus), its
    detail holding text XML escapes."""
    rng = random.Random(SEED + 1)
    count = 0
    for count in cases(least=50, budget=BUDGET / 3):
        version = rng.choice(["1.1", "1.2"])
        wire = _fault_wire(rng, version)
        data = _mutated(rng, wire) if rng.random() < 0.7 else wire
        unwrap_once(chains[f"soap {version}"], data, f"fault {count} ({data[:80]!r}; COUPLER_FUZZ_SEED={SEED})")
    print(f"{count + 1} faults")


def test_a_wrapper_raising_anything_else_is_a_one_line_wrapper_error_naming_it() -> None:
    """What a wrapper (a plugin's, or a bug of a built-in one such as the fault detail above)
    raises besides a WrapperError leaves the chain as a WrapperError naming the wrapper and
    the code that raised: only CouplerErrors escape a parser."""

    class Broken:
        kind = "broken"

        def wrap(self, payload: bytes, headers: Headers) -> bytes:
            return {}[payload]  # type: ignore[no-any-return]  # KeyError

        def unwrap(self, data: bytes) -> tuple[bytes, Headers]:
            return data[:1].decode("utf-32"), Headers()  # type: ignore[return-value]  # UnicodeDecodeError

    chain = WrapperChain([FramingWrapper(LengthPrefixed(size=1)), Broken()])
    with pytest.raises(WrapperError, match=r"^wrapper 2 \(broken\): KeyError: .*raised at test_wrappers_fuzz.py"):
        chain.wrap(b"x")
    unbroken = WrapperChain([Broken(), FramingWrapper(LengthPrefixed(size=1))])
    with pytest.raises(WrapperError, match=r"^wrapper 1 \(broken\): ") as caught:
        unbroken.unwrap(b"\x02ab")
    assert "\n" not in str(caught.value)
