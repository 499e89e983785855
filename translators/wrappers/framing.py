"""Stream framings as wrappers: a length prefix, a delimiter, MLLP, STX/ETX.

The framings are the stream codecs of :mod:`coupler.translators.framing` (the socket
adapter frames its connections with the same ones): :class:`FramingWrapper` puts one payload into one frame and takes
it out of exactly one frame.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from coupler.canonical.options import Bool, Int, OptionsModel, Str, option
from coupler.translators.framing import DEFAULT_MAX_FRAME

from .base import Headers, WrapperError, wrapper_options


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


class FrameOptions(OptionsModel):
    """Options of the ``mllp`` and ``stx_etx`` wrappers."""

    max_frame_bytes: Int = option("Largest frame payload.", default=DEFAULT_MAX_FRAME, ge=1)


class LengthOptions(FrameOptions):
    """Options of the ``length`` wrapper (a length prefix)."""

    size: Int = option("Size of the length prefix (1, 2 or 4).", default=4)
    byteorder: Literal["big", "little"] = option("Byte order of the prefix.", default="big")
    includes_header: Bool = option("The prefix counts itself.", default=False)


class DelimitedOptions(FrameOptions):
    """Options of the ``delimited`` wrapper."""

    delimiter: Str = option("The delimiter (`LF`, `CRLF`, `NUL` or hex such as `0x1c`).", default="LF")


def framing_wrapper(kind: str, options: dict[str, Any]) -> FramingWrapper:
    """A framing wrapper from site.toml options (the socket adapter's option names)."""
    from coupler.translators import framing as f

    try:
        if kind == "length":
            lo = wrapper_options(LengthOptions, options)
            framing: Any = f.LengthPrefixed(max_frame=lo.max_frame_bytes, size=lo.size, byteorder=lo.byteorder,
                                            includes_header=lo.includes_header)
        elif kind == "delimited":
            do = wrapper_options(DelimitedOptions, options)
            framing = f.Delimited(max_frame=do.max_frame_bytes, delimiter=f.parse_delimiter(do.delimiter))
        elif kind in ("mllp", "stx_etx"):
            fo = wrapper_options(FrameOptions, options)
            framing = f.mllp(fo.max_frame_bytes) if kind == "mllp" else f.stx_etx(fo.max_frame_bytes)
        else:
            raise WrapperError(f"unknown framing {kind!r}")
    except WrapperError:
        raise
    except Exception as exc:  # FrameError or a bad delimiter
        raise WrapperError(getattr(exc, "message", str(exc))) from None
    return FramingWrapper(framing, kind)
