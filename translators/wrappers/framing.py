"""Stream framings as wrappers: a length prefix, a delimiter, MLLP, STX/ETX.

The framings are the stream codecs of :mod:`coupler.translators.framing` (the socket
adapter frames its connections with the same ones): :class:`FramingWrapper` puts one payload into one frame and takes
it out of exactly one frame.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .base import Headers, WrapperError, no_more, take


@dataclass(frozen=True)
class FramingWrapper:
    """One payload <-> one frame of ``framing`` (any object with ``encode`` and ``split``)."""

    framing: Any
    kind: str = "framing"

    def wrap(self, payload: bytes, headers: Headers) -> bytes:
        try:
            return self.framing.encode(payload)
        except Exception as exc:
            raise WrapperError(getattr(exc, "message", str(exc))) from None

    def unwrap(self, data: bytes) -> tuple[bytes, Headers]:
        try:
            got = self.framing.split(data)
        except Exception as exc:
            raise WrapperError(getattr(exc, "message", str(exc))) from None
        if got is None:
            raise WrapperError(f"incomplete frame: {len(data)} bytes do not hold a whole {self.kind} frame")
        payload, consumed = got
        if consumed != len(data):
            raise WrapperError(f"{len(data) - consumed} bytes after the {self.kind} frame", where=f"byte {consumed}")
        return payload, Headers()


def framing_wrapper(kind: str, options: dict[str, Any]) -> FramingWrapper:
    """A framing wrapper from site.toml options (the socket adapter's option names)."""
    from coupler.translators import framing as f

    opts = dict(options)
    max_frame = take(opts, "max_frame_bytes", int, f.DEFAULT_MAX_FRAME)
    try:
        if kind == "length":
            framing: Any = f.LengthPrefixed(
                max_frame=max_frame, size=take(opts, "size", int, 4), byteorder=take(opts, "byteorder", str, "big"),
                includes_header=take(opts, "includes_header", bool, False),
            )
            allowed: tuple[str, ...] = ("max_frame_bytes", "size", "byteorder", "includes_header")
        elif kind == "delimited":
            framing = f.Delimited(max_frame=max_frame, delimiter=f.parse_delimiter(take(opts, "delimiter", str, "LF")))
            allowed = ("max_frame_bytes", "delimiter")
        elif kind == "mllp":
            framing, allowed = f.mllp(max_frame), ("max_frame_bytes",)
        elif kind == "stx_etx":
            framing, allowed = f.stx_etx(max_frame), ("max_frame_bytes",)
        else:
            raise WrapperError(f"unknown framing {kind!r}")
    except WrapperError:
        raise
    except Exception as exc:  # FrameError or a bad delimiter
        raise WrapperError(getattr(exc, "message", str(exc))) from None
    no_more(opts, allowed)
    return FramingWrapper(framing, kind)
