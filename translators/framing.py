"""Framings: how messages are delimited on a byte stream, as small pure classes.

The stream codecs of the bus: length prefix, delimiter, fixed length, STX/ETX and MLLP. The
socket adapter frames its connections with them and the envelope wrappers
(:mod:`coupler.translators.wrappers.framing`) put one payload into one frame with them;
they live here, with the translators, because they know a legacy format and nothing of a
transport.

A :class:`Framing` knows how to ``encode`` one payload into the bytes put on the wire and
how to ``split`` one frame off the front of a buffer. A :class:`FrameDecoder` keeps the
buffer of one connection and enforces the maximum frame size: it never holds more than
``framing.max_wire`` bytes (the maximum payload plus the framing's own bytes), and a
connection reads at most :meth:`FrameDecoder.room` bytes at a time, so an oversized frame is
refused before it is allocated. No I/O happens here.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import Any, Literal

from coupler.canonical.errors import CouplerError

#: default maximum payload size of one frame
DEFAULT_MAX_FRAME = 1024 * 1024

#: named delimiters (site.toml ``delimiter = "CRLF"``)
DELIMITERS = {"LF": b"\n", "CRLF": b"\r\n", "CR": b"\r", "NUL": b"\x00"}

#: MLLP block characters (HL7 v2 minimal lower layer protocol)
MLLP_START, MLLP_END = b"\x0b", b"\x1c\r"
STX, ETX = b"\x02", b"\x03"


def parse_delimiter(text: str) -> bytes:
    """``LF``, ``CRLF``, ``CR``, ``NUL``, ``hex:0d0a`` or a literal string (UTF-8)."""
    if text.upper() in DELIMITERS:
        return DELIMITERS[text.upper()]
    if text.lower().startswith("hex:"):
        return bytes.fromhex(text[4:])
    return text.encode("utf-8")


class FrameError(CouplerError):
    """Bytes on a connection that do not follow the configured framing."""


class FrameTooLarge(FrameError):
    """A frame larger than the configured maximum; the connection is closed."""


@dataclass(frozen=True)
class Framing(abc.ABC):
    """How one payload is put on a byte stream and found again."""

    max_frame: int = DEFAULT_MAX_FRAME

    def __post_init__(self) -> None:
        if self.max_frame < 1:
            raise FrameError(f"max_frame_bytes must be at least 1, got {self.max_frame}")

    @property
    @abc.abstractmethod
    def overhead(self) -> int:
        """Bytes the framing adds around a payload."""

    @property
    def max_wire(self) -> int:
        """The most bytes one frame takes on the wire."""
        return self.max_frame + self.overhead

    @abc.abstractmethod
    def encode(self, payload: bytes) -> bytes:
        """The wire bytes of ``payload``; :class:`FrameError` when it cannot be framed."""

    @abc.abstractmethod
    def split(self, buffer: bytearray | bytes, scanned: int = 0) -> tuple[bytes, int] | None:
        """``(payload, consumed)`` of the first complete frame in ``buffer``, or None.

        ``scanned`` is how many bytes of ``buffer`` an earlier call already looked at without
        finding a frame end (so delimiters are not searched again). Raises
        :class:`FrameTooLarge` as soon as the frame is known to exceed the maximum and
        :class:`FrameError` when the bytes break the framing.
        """

    def decoder(self) -> FrameDecoder:
        return FrameDecoder(self)

    def _check_size(self, size: int) -> None:
        if size > self.max_frame:
            raise FrameTooLarge(
                f"frame of {size} bytes exceeds the maximum of {self.max_frame} bytes",
                hint="raise max_frame_bytes of the adapter if such frames are legitimate",
            )

    def describe(self) -> dict[str, Any]:
        return {"framing": type(self).__name__, "max_frame_bytes": self.max_frame}


@dataclass(frozen=True)
class LengthPrefixed(Framing):
    """A binary length (1, 2 or 4 bytes, big or little endian) before each payload.

    ``includes_header``: the length counts the length field itself.
    """

    size: int = 4
    byteorder: Literal["big", "little"] = "big"
    includes_header: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.size not in (1, 2, 4):
            raise FrameError(f"length prefix size must be 1, 2 or 4 bytes, got {self.size}")
        if self.byteorder not in ("big", "little"):
            raise FrameError(f"byte order must be big or little, got {self.byteorder!r}")

    @property
    def overhead(self) -> int:
        return self.size

    def encode(self, payload: bytes) -> bytes:
        self._check_size(len(payload))
        length = len(payload) + (self.size if self.includes_header else 0)
        if length >= 1 << (8 * self.size):
            raise FrameError(f"payload of {len(payload)} bytes does not fit a {self.size}-byte length prefix")
        return length.to_bytes(self.size, self.byteorder) + payload

    def split(self, buffer: bytearray | bytes, scanned: int = 0) -> tuple[bytes, int] | None:
        if len(buffer) < self.size:
            return None
        length = int.from_bytes(buffer[: self.size], self.byteorder)
        if self.includes_header:
            if length < self.size:
                raise FrameError(f"length prefix {length} is smaller than the prefix itself ({self.size} bytes)")
            length -= self.size
        self._check_size(length)
        end = self.size + length
        if len(buffer) < end:
            return None
        return bytes(buffer[self.size : end]), end

    def describe(self) -> dict[str, Any]:
        return {
            **super().describe(),
            "length_bytes": self.size,
            "byteorder": self.byteorder,
            "length_includes_header": self.includes_header,
        }


@dataclass(frozen=True)
class Delimited(Framing):
    """Each payload followed by a delimiter (LF, CRLF, NUL or any byte string)."""

    delimiter: bytes = b"\n"

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.delimiter:
            raise FrameError("the delimiter must not be empty")

    @property
    def overhead(self) -> int:
        return len(self.delimiter)

    def encode(self, payload: bytes) -> bytes:
        self._check_size(len(payload))
        if self.delimiter in payload:
            raise FrameError(f"payload contains the delimiter {self.delimiter!r} and cannot be framed by it")
        return payload + self.delimiter

    def split(self, buffer: bytearray | bytes, scanned: int = 0) -> tuple[bytes, int] | None:
        start = max(0, scanned - len(self.delimiter) + 1)
        at = buffer.find(self.delimiter, start)
        if at < 0:
            if len(buffer) > self.max_frame + len(self.delimiter) - 1:
                self._check_size(len(buffer))
            return None
        self._check_size(at)
        return bytes(buffer[:at]), at + len(self.delimiter)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "delimiter": self.delimiter.hex()}


@dataclass(frozen=True)
class FixedLength(Framing):
    """Records of exactly ``length`` bytes, one after the other."""

    length: int = 0

    def __post_init__(self) -> None:
        if self.length < 1:
            raise FrameError(f"fixed frame length must be at least 1, got {self.length}")
        object.__setattr__(self, "max_frame", self.length)

    @property
    def overhead(self) -> int:
        return 0

    def encode(self, payload: bytes) -> bytes:
        if len(payload) != self.length:
            raise FrameError(f"payload of {len(payload)} bytes is not a {self.length}-byte fixed-length record")
        return payload

    def split(self, buffer: bytearray | bytes, scanned: int = 0) -> tuple[bytes, int] | None:
        if len(buffer) < self.length:
            return None
        return bytes(buffer[: self.length]), self.length

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "frame_length": self.length}


@dataclass(frozen=True)
class Bracketed(Framing):
    """A start byte string, the payload, an end byte string (STX/ETX, MLLP)."""

    start: bytes = STX
    end: bytes = ETX

    @property
    def overhead(self) -> int:
        return len(self.start) + len(self.end)

    def encode(self, payload: bytes) -> bytes:
        self._check_size(len(payload))
        if self.end in payload:
            raise FrameError(f"payload contains the end marker {self.end!r} and cannot be framed by it")
        return self.start + payload + self.end

    def split(self, buffer: bytearray | bytes, scanned: int = 0) -> tuple[bytes, int] | None:
        n = len(self.start)
        if len(buffer) < n:
            if buffer and not self.start.startswith(bytes(buffer)):
                raise FrameError(f"expected the start marker {self.start!r}, got {bytes(buffer[:n])!r}", where="byte 0 of the frame")
            return None
        if buffer[:n] != self.start:
            raise FrameError(f"expected the start marker {self.start!r}, got {bytes(buffer[:n])!r}", where="byte 0 of the frame")
        at = buffer.find(self.end, max(n, scanned - len(self.end) + 1))
        if at < 0:
            if len(buffer) > self.max_wire - 1:
                self._check_size(len(buffer) - n)
            return None
        self._check_size(at - n)
        return bytes(buffer[n:at]), at + len(self.end)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "start": self.start.hex(), "end": self.end.hex()}


def mllp(max_frame: int = DEFAULT_MAX_FRAME) -> Bracketed:
    """MLLP: ``<VT> message <FS><CR>`` (HL7 v2)."""
    return Bracketed(max_frame=max_frame, start=MLLP_START, end=MLLP_END)


def stx_etx(max_frame: int = DEFAULT_MAX_FRAME) -> Bracketed:
    return Bracketed(max_frame=max_frame, start=STX, end=ETX)


@dataclass
class FrameDecoder:
    """The receive buffer of one connection: feed bytes, get whole payloads.

    The buffer never exceeds ``framing.max_wire`` bytes when reads are bounded by
    :meth:`room`; ``offset`` is the stream position of the buffer's first byte (for errors).
    """

    framing: Framing
    buffer: bytearray = field(default_factory=bytearray)
    offset: int = 0
    _scanned: int = 0

    def room(self) -> int:
        """How many bytes may be read now without exceeding the frame limit (at least 1)."""
        return max(1, self.framing.max_wire - len(self.buffer))

    @property
    def buffered(self) -> int:
        return len(self.buffer)

    def feed(self, data: bytes) -> list[bytes]:
        """Append ``data`` and return every payload completed by it."""
        self.buffer += data
        frames: list[bytes] = []
        while self.buffer:
            try:
                got = self.framing.split(self.buffer, self._scanned)
            except FrameError as exc:
                raise type(exc)(exc.message, where=f"stream byte {self.offset}", hint=exc.hint) from None
            if got is None:
                self._scanned = len(self.buffer)
                if len(self.buffer) > self.framing.max_wire:
                    raise FrameTooLarge(
                        f"more than {self.framing.max_wire} bytes without a complete frame",
                        where=f"stream byte {self.offset}",
                    )
                break
            payload, consumed = got
            del self.buffer[:consumed]
            self.offset += consumed
            self._scanned = 0
            frames.append(payload)
        return frames
