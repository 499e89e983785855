"""AMQP frames as pika reads them, except a content header pika cannot decode.

pika decodes the content header of a delivery (its properties and headers table) while it
reads the connection, before any consumer sees the message. A header another application's
client wrote and pika cannot read -- a timestamp beyond the calendar (``T`` 2^63), a field
type pika does not know, a Java client's 16-bit short (``s``, which pika reads as a short
string, so the rest of the table is misread) -- raised out of pika's reading: the
connection dropped, the broker gave the message back first on the next connection, and the
queue was blocked for good (a poison message).

:func:`decode_frame` reads every frame as pika does; a content header whose properties fail
is read as a Header frame of the same channel and body size (the body frames that follow
complete the delivery as usual) whose properties are those pika can read -- all but the
headers table, skipped by its length, when that is what failed -- and carry the cause in
one line: :func:`undecodable`. The consumer (the amqp adapter, the AMQP transport) files
such a message in the Invalid Message Channel with its cause, acknowledges it and goes on
with the next one, on the same connection. :func:`tolerate_undecodable_headers` makes a
connection read its frames so.

A method frame that cannot be decoded is left to fail as before (the connection closes, as
the AMQP specification asks of a frame error): only the broker writes method frames, and
the fields another application chooses in them (exchange, routing key) are short strings
pika reads as bytes when they are not UTF-8.
"""

from __future__ import annotations

import logging
import struct
from typing import Any

import pika
import pika.data
import pika.exceptions
import pika.frame
import pika.spec

from coupler.canonical.errors import one_line

log = logging.getLogger(__name__)

#: the attribute of the properties of an undecodable content header that holds the cause
#: (an attribute, not a header: no producer can write it)
CAUSE = "coupler_undecodable"

_HEADER = pika.spec.FRAME_HEADER  # 2
_END = pika.spec.FRAME_END  # 0xCE
_PROPS = pika.spec.BasicProperties
#: the flags of the properties before the headers table (short strings), in their order
_BEFORE_HEADERS = (_PROPS.FLAG_CONTENT_TYPE, _PROPS.FLAG_CONTENT_ENCODING)


class UndecodableProperties(pika.spec.BasicProperties):
    """The properties of a content header pika could not decode: those it could read, and
    the cause (``coupler_undecodable``) and the length of the raw properties."""

    def __init__(self, cause: str, raw_length: int, **fields: Any) -> None:
        super().__init__(**fields)
        self.coupler_undecodable = cause
        self.coupler_raw_length = raw_length


def undecodable(properties: Any) -> str | None:
    """The cause (one line) when ``properties`` are those of a content header pika could not
    decode (see :func:`decode_frame`), else None."""
    return getattr(properties, CAUSE, None)


def decode_frame(data: bytes) -> tuple[int, Any]:
    """``pika.frame.decode_frame(data)``: the bytes used and the frame (0 and None while the
    frame is incomplete), except that a content header whose properties pika cannot decode
    is a ``pika.frame.Header`` whose properties carry the cause (:func:`undecodable`)."""
    try:
        return pika.frame.decode_frame(data)
    except Exception as exc:  # noqa: BLE001 - whatever pika raises; anything but a content header raises again
        frame = _undecodable_header(data, exc)
        if frame is None:
            raise
        return frame


def tolerate_undecodable_headers(connection: Any) -> Any:
    """Make the pika ``BlockingConnection`` ``connection`` read its frames with
    :func:`decode_frame` (returns it).

    pika internals (pika 1.4.4; the same from 1.0 to 1.4): ``Connection._on_data_available``
    reads each frame of its ``_frame_buffer`` through the method ``_read_frame``, which calls
    ``pika.frame.decode_frame``. pika has no public hook for a frame it cannot decode, so the
    connection's own ``_read_frame`` is replaced by one calling :func:`decode_frame` on the
    same buffer. When a pika version lacks it, the connection is left as it is (a warning):
    such a message drops the connection again (tests/bus/transport/amqp/test_frames.py and
    the foreign-header tests fail then)."""
    impl: Any = getattr(connection, "_impl", None)
    if not callable(getattr(impl, "_read_frame", None)) or not hasattr(impl, "_frame_buffer"):
        log.warning("pika %s reads frames differently: a message whose AMQP content header it cannot decode "
                    "will drop the connection (a poison message)", getattr(pika, "__version__", "?"))
        return connection

    def read_frame() -> tuple[int, Any]:
        return decode_frame(impl._frame_buffer)

    impl._read_frame = read_frame
    return connection


def _undecodable_header(data: bytes, exc: BaseException) -> tuple[int, Any] | None:
    """The Header frame (bytes used, frame) of the content header at the start of ``data``
    whose properties pika failed to decode (``exc``); None when it is no complete content
    header frame of the class Basic (pika's error stands)."""
    try:
        frame_type, channel, size = struct.unpack_from(">BHL", data, 0)
        end = 7 + size + 1
        if frame_type != _HEADER or len(data) < end or data[end - 1] != _END or size < 12:
            return None
        class_id, _weight, body_size = struct.unpack_from(">HHQ", data, 7)
    except struct.error:
        return None
    if class_id != _PROPS.INDEX:
        return None
    raw = bytes(data[19:end - 1])
    cause, fields = _read_around(raw, exc)
    text = one_line(f"its AMQP content header cannot be decoded: {cause}")
    return end, pika.frame.Header(channel, body_size, UndecodableProperties(text[:400], len(raw), **fields))


def _read_around(raw: bytes, exc: BaseException) -> tuple[str, dict[str, Any]]:
    """Why the properties ``raw`` cannot be decoded, and those that can be: every one but the
    headers table when it is the table that fails (it is skipped by its length)."""
    try:
        offset, flags, words = 0, 0, 0
        while True:
            (word,) = struct.unpack_from(">H", raw, offset)
            offset += 2
            flags |= word << (16 * words)
            words += 1
            if not word & 1:
                break
        if not flags & _PROPS.FLAG_HEADERS:
            return f"its properties ({len(raw)} bytes): {_error(exc)}", {}
        for flag in _BEFORE_HEADERS:
            if flags & flag:
                offset += 1 + raw[offset]
        table = offset
        (size,) = struct.unpack_from(">I", raw, table)
        after = table + 4 + size
        if after > len(raw):
            return f"its headers table ({size} bytes) is longer than its properties ({len(raw)} bytes)", {}
    except (struct.error, IndexError):
        return f"its properties ({len(raw)} bytes): {_error(exc)}", {}
    cause = _table_cause(raw, table, after)
    if cause is None:  # pika reads the table: what failed is elsewhere
        return f"its properties ({len(raw)} bytes): {_error(exc)}", {}
    # the flag words with the headers' flag cleared, what precedes the table, what follows it
    without = struct.pack(">H", (flags & 0xFFFF) & ~_PROPS.FLAG_HEADERS) + raw[2:table] + raw[after:]
    try:
        props = _PROPS()
        props.decode(without)
    except Exception as err:  # noqa: BLE001 - the rest is broken too: no property is kept
        return f"{cause}; and its other properties: {_error(err)}", {}
    fields = {k: v for k, v in vars(props).items() if v is not None}
    return cause, fields


def _table_cause(raw: bytes, table: int, after: int) -> str | None:
    """The header of the table at ``raw[table:after]`` that pika cannot decode, in words (None
    when pika reads every entry: the table was misread as a whole)."""
    offset = table + 4
    while offset < after:
        try:
            key, offset = pika.data.decode_short_string(raw, offset)
        except (struct.error, IndexError):
            return "its headers table ends inside the name of a header"
        kind = raw[offset:offset + 1]
        where = f"header {_shown(key)}"
        try:
            _value, offset = pika.data.decode_value(raw, offset)
        except Exception as exc:  # noqa: BLE001 - what pika raises for a value differs per type
            return f"{where}: {_value_error(kind, raw, offset + 1, exc)}"
        if offset > after:
            return f"{where}: its value runs past the end of the headers table (pika reads type {_shown(kind)} " \
                   "differently from the client that wrote it)"
    return None


def _value_error(kind: bytes, raw: bytes, at: int, exc: BaseException) -> str:
    if kind == b"T":
        try:
            (seconds,) = struct.unpack_from(">Q", raw, at)
        except struct.error:
            return "its timestamp is cut short"
        return f"the timestamp {seconds} (seconds) is beyond the calendar pika reads (year 1 to 9999)"
    if kind in (b"F", b"A"):
        return f"a value inside its {'table' if kind == b'F' else 'array'} cannot be decoded ({_error(exc)})"
    if isinstance(exc, pika.exceptions.InvalidFieldTypeException):
        if not kind:
            return "its value is missing (the table ends)"
        return f"field type {_shown(kind)} is none of the types of an AMQP 0-9-1 table that pika reads"
    return _error(exc)


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {' '.join(str(exc).split())[:200] or '(no message)'}"


def _shown(value: Any) -> str:
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
