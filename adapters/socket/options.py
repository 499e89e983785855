"""The socket adapter's options (``[adapters.options]`` of site.toml), checked on load."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from coupler.adapters.common.errors import AdapterConfigError
from coupler.adapters.common.tls import TLS_OPTION_DOCS, TLSOptions, parse_tls
from coupler.bus.api import OptionDoc
from coupler.canonical.errors import CouplerError
from coupler.translators.framing import (
    DEFAULT_MAX_FRAME,
    Delimited,
    FixedLength,
    Framing,
    LengthPrefixed,
    mllp,
    parse_delimiter,
    stx_etx,
)

FRAMINGS = ("length", "delimiter", "fixed", "stx-etx", "mllp")
MODES = ("server", "client")
EXCHANGES = ("one-way", "request-reply")
CORRELATIONS = ("connection", "field")


class SocketConfigError(AdapterConfigError):
    """An adapter option that is missing or wrong."""


def _where(adapter: str, key: str) -> str:
    return f"adapter {adapter}: options.{key}"


class _Reader:
    def __init__(self, adapter: str, options: dict[str, Any]):
        self.adapter = adapter
        self.options = options

    def get(self, key: str, kind: type | tuple[type, ...], default: Any = None, *, choices: tuple[str, ...] = ()) -> Any:
        value = self.options.get(key, default)
        if value is None:
            return None
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
            raise SocketConfigError(f"expected {names}, got {value!r}", where=_where(self.adapter, key))
        if choices and value not in choices:
            raise SocketConfigError(
                f"{value!r} is not one of {', '.join(choices)}", where=_where(self.adapter, key)
            )
        return value

    def positive(self, key: str, default: float | int, kind: type = float) -> Any:
        value = self.get(key, kind, default)
        if value <= 0:
            raise SocketConfigError(f"must be greater than 0, got {value}", where=_where(self.adapter, key))
        return value


@dataclass(frozen=True)
class SocketOptions:
    mode: str
    host: str
    port: int
    framing: Framing
    exchange: str = "one-way"
    target: str | None = None
    operation: str = ""
    request_channel: str | None = None
    command_channel: str = "coupler.commands"
    reply_timeout: float = 30.0
    idle_timeout: float = 300.0
    read_timeout: float = 30.0
    max_connections: int = 100
    first_byte_timeout: float = 10.0
    max_connections_per_peer: int = 10
    max_in_flight: int = 16
    fault_response: str | None = None
    acknowledge: bool = True
    tls: TLSOptions | None = None
    # client mode
    connections: int = 1
    connect_timeout: float = 10.0
    response_timeout: float = 30.0
    correlation: str = "connection"
    correlation_offset: int = 0
    correlation_length: int = 0
    retries: int = 2

    @property
    def is_mllp(self) -> bool:
        return self.framing.describe().get("start") == "0b"

    def correlation_key(self, payload: bytes) -> bytes:
        """The correlation field of a request or response payload (``correlation = "field"``)."""
        key = payload[self.correlation_offset : self.correlation_offset + self.correlation_length]
        if len(key) != self.correlation_length:
            raise CouplerError(
                f"payload of {len(payload)} bytes is too short for the correlation field at "
                f"{self.correlation_offset}+{self.correlation_length}",
                where=f"payload byte {self.correlation_offset}",
            )
        return key


def parse_options(adapter: str, options: dict[str, Any]) -> SocketOptions:
    r = _Reader(adapter, options)
    mode = r.get("mode", str, None, choices=MODES)
    if mode is None:
        raise SocketConfigError("missing: set mode = \"server\" or \"client\"", where=_where(adapter, "mode"))
    host = r.get("host", str, "127.0.0.1" if mode == "client" else "0.0.0.0")
    port = r.get("port", int, None)
    if port is None or not 0 <= port <= 65535 or (mode == "client" and port == 0):
        raise SocketConfigError(f"a TCP port is required (got {port!r})", where=_where(adapter, "port"))
    max_frame = r.positive("max_frame_bytes", DEFAULT_MAX_FRAME, int)
    kind = r.get("framing", str, "length", choices=FRAMINGS)
    framing: Framing
    try:
        if kind == "length":
            framing = LengthPrefixed(
                max_frame=max_frame,
                size=r.get("length_bytes", int, 4),
                byteorder=r.get("byteorder", str, "big", choices=("big", "little")),
                includes_header=r.get("length_includes_header", bool, False),
            )
        elif kind == "delimiter":
            framing = Delimited(max_frame=max_frame, delimiter=parse_delimiter(r.get("delimiter", str, "LF")))
        elif kind == "fixed":
            if "frame_length" not in options:
                raise SocketConfigError("framing = \"fixed\" needs frame_length", where=_where(adapter, "frame_length"))
            framing = FixedLength(length=r.positive("frame_length", 1, int))
        elif kind == "stx-etx":
            framing = stx_etx(max_frame)
        else:
            framing = mllp(max_frame)
    except SocketConfigError:
        raise
    except CouplerError as exc:
        raise SocketConfigError(exc.message, where=_where(adapter, "framing")) from None
    tls = parse_tls(adapter, options)
    exchange = r.get("exchange", str, "one-way", choices=EXCHANGES)
    target, channel = r.get("target", str), r.get("request_channel", str)
    if mode == "server" and exchange == "request-reply" and not (target or channel):
        raise SocketConfigError(
            "request-reply needs the command target (target) or a request_channel",
            where=_where(adapter, "target"),
        )
    correlation = r.get("correlation", str, "connection", choices=CORRELATIONS)
    corr_len = r.get("correlation_length", int, 0)
    if correlation == "field" and corr_len <= 0:
        raise SocketConfigError(
            "correlation = \"field\" needs correlation_offset and correlation_length",
            where=_where(adapter, "correlation_length"),
        )
    return SocketOptions(
        mode=mode,
        host=host,
        port=port,
        framing=framing,
        exchange=exchange,
        target=target,
        operation=r.get("operation", str, ""),
        request_channel=channel,
        command_channel=r.get("command_channel", str, "coupler.commands"),
        reply_timeout=r.positive("reply_timeout", 30.0),
        idle_timeout=r.positive("idle_timeout", SocketOptions.idle_timeout),
        read_timeout=r.positive("read_timeout", SocketOptions.read_timeout),
        max_connections=r.positive("max_connections", SocketOptions.max_connections, int),
        first_byte_timeout=r.positive("first_byte_timeout", SocketOptions.first_byte_timeout),
        max_connections_per_peer=r.positive("max_connections_per_peer", SocketOptions.max_connections_per_peer, int),
        max_in_flight=r.positive("max_in_flight", SocketOptions.max_in_flight, int),
        fault_response=r.get("fault_response", str),
        acknowledge=r.get("acknowledge", bool, True),
        tls=tls,
        connections=r.positive("connections", 1, int),
        connect_timeout=r.positive("connect_timeout", 10.0),
        response_timeout=r.positive("response_timeout", 30.0),
        correlation=correlation,
        correlation_offset=r.get("correlation_offset", int, 0),
        correlation_length=corr_len,
        retries=r.get("retries", int, 2),
    )


#: the options in the generated configuration reference: what bounds a peer (docs/adapters/socket.md has all)
OPTION_DOCS = (
    OptionDoc("max_connections", "integer", SocketOptions.max_connections,
              "Server: connections open at once. When all are taken, a new one takes the slot of the longest-waiting connection (no frame in progress) of the peer holding the most; connections in the middle of a frame keep theirs."),
    OptionDoc("max_connections_per_peer", "integer", SocketOptions.max_connections_per_peer,
              "Server: connections one peer address may hold; its next one takes the slot of its own longest-waiting connection (nginx `limit_conn` per address)."),
    OptionDoc("first_byte_timeout", "number", SocketOptions.first_byte_timeout,
              "Server: seconds from connecting to the first byte of a frame (at most `idle_timeout`)."),
    OptionDoc("idle_timeout", "number", SocketOptions.idle_timeout, "Server: seconds a connection may wait between frames."),
    OptionDoc("read_timeout", "number", SocketOptions.read_timeout,
              "Server: seconds to receive a whole frame from its first byte, however slowly its bytes arrive."),
    OptionDoc("max_in_flight", "integer", SocketOptions.max_in_flight, "Server: frames waiting for the bus at once."),
    OptionDoc("max_frame_bytes", "integer", DEFAULT_MAX_FRAME, "Largest frame payload; a longer one (or a longer claimed length) closes the connection before it is buffered."),
    *TLS_OPTION_DOCS,
)
