"""The socket adapter's options (``[adapters.options]`` of site.toml), checked on load."""

from __future__ import annotations

from functools import cached_property
from typing import Annotated, Any, Literal

from pydantic import Field, Strict, ValidationInfo, field_validator

from coupler.adapters.common.errors import AdapterConfigError
from coupler.adapters.common.tls import TLSOptions
from coupler.bus.api import Bool, Int, OptionsModel, Str, option, validate_options
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


class SocketConfigError(AdapterConfigError):
    """An adapter option that is wrong at run time (a correlation field the payload lacks)."""


Positive = Annotated[float, Strict(), Field(gt=0)]
PositiveInt = Annotated[int, Strict(), Field(gt=0)]


class SocketOptions(OptionsModel):
    """``[adapters.options]`` of ``type = "socket"`` (docs/adapters/socket.md)."""

    mode: Literal["server", "client"] = option("`server` listens for peers; `client` connects to one.")
    host: Str | None = option(
        "Server: the address to listen on (default `0.0.0.0`); client: the peer's host (default `127.0.0.1`).",
        default=None)
    port: Int = option("Server: the TCP port (0: any free one); client: the peer's port.", ge=0, le=65535)
    # framing (the table's order matters: `framing` is checked with the keys before it)
    length_bytes: Int = option("framing `length`: size of the length prefix (1, 2 or 4).", default=4)
    byteorder: Literal["big", "little"] = option("framing `length`: byte order of the prefix.", default="big")
    length_includes_header: Bool = option("framing `length`: the prefix counts itself.", default=False)
    delimiter: Str = option("framing `delimiter`: the delimiter: `LF`, `CRLF`, `CR`, `NUL`, bytes in hex "
                            "such as `hex:1c`, or any other text as it is (UTF-8).", default="LF")
    frame_length: PositiveInt | None = option("framing `fixed`: the length of every frame.", default=None)
    max_frame_bytes: PositiveInt = option(
        "Largest frame payload; a longer one (or a longer claimed length) closes the connection before "
        "it is buffered.", default=DEFAULT_MAX_FRAME)
    framing: Literal["length", "delimiter", "fixed", "stx-etx", "mllp"] = option(
        "How frames are cut from the stream.", default="length", validate_default=True)
    # the exchange
    exchange: Literal["one-way", "request-reply"] = option(
        "`one-way`: frames are published (server) or sent (client); `request-reply`: each frame gets "
        "an answer.", default="one-way")
    request_channel: Str | None = option("Server, request-reply: the channel requests go to.", default=None)
    target: Str | None = option(
        "Server, request-reply: the command target requests are sent to.", default=None, validate_default=True)
    operation: Str = option("Server, request-reply: the operation named in the request command.", default="")
    command_channel: Str = option("The command channel of `target`.", default="coupler.commands")
    reply_timeout: Positive = option("Server: seconds to wait for the bus's reply.", default=30.0)
    idle_timeout: Positive = option("Server: seconds a connection may wait between frames.", default=300.0)
    read_timeout: Positive = option(
        "Server: seconds to receive a whole frame from its first byte, however slowly its bytes arrive.",
        default=30.0)
    first_byte_timeout: Positive = option(
        "Server: seconds from connecting to the first byte of a frame (at most `idle_timeout`).", default=10.0)
    max_connections: PositiveInt = option(
        "Server: connections open at once. When all are taken, a new one takes the slot of the "
        "longest-waiting connection (no frame in progress) of the peer holding the most; connections "
        "in the middle of a frame keep theirs.", default=100)
    max_connections_per_peer: PositiveInt = option(
        "Server: connections one peer address may hold; its next one takes the slot of its own "
        "longest-waiting connection (nginx `limit_conn` per address).", default=10)
    max_in_flight: PositiveInt = option("Server: frames waiting for the bus at once.", default=16)
    fault_response: Str | None = option("Server: the frame answered when a request fails (default: none, "
                                        "the connection is closed; MLLP answers AE/AR).", default=None)
    acknowledge: Bool = option("MLLP server: answer every HL7 message with an ACK.", default=True)
    tls: TLSOptions | None = option("TLS of the connections (see `tls.*`).", default=None)
    # client mode
    connections: PositiveInt = option("Client: connections to the peer.", default=1)
    connect_timeout: Positive = option("Client: seconds to connect.", default=10.0)
    write_timeout: Positive = option(
        "Client: seconds the peer may take to read a frame written to it; a peer that stops reading "
        "fails the send with fault `timeout` and its connection is reset.", default=30.0)
    response_timeout: Positive = option("Client, request-reply: seconds to wait for the peer's answer.",
                                        default=30.0)
    correlation: Literal["connection", "field"] = option(
        "Client: how an answer is matched to its request: one request at a time per `connection`, or a "
        "`field` of the payload.", default="connection")
    correlation_offset: Int = option("Client, correlation `field`: its byte offset.", default=0, ge=0)
    correlation_length: Int = option("Client, correlation `field`: its length in bytes.", default=0, ge=0,
                                     validate_default=True)
    retries: Int = option("Client: attempts after a failed send.", default=2, ge=0)
    # the payload
    translator: Str = option("The payload translator: `raw`, `text`, `hl7`, `copybook` or `module:attribute`.",
                             default="raw")
    encoding: Str = option("`text` and `hl7`: the character encoding.", default="utf-8")
    copybook: Str | None = option("translator `copybook`: the copybook (.cpy) of requests and answers.",
                                  default=None)
    copybook_in: Str | None = option("translator `copybook`: the copybook of frames read (default `copybook`).",
                                     default=None)
    copybook_out: Str | None = option("translator `copybook`: the copybook of frames written (default "
                                      "`copybook`).", default=None)
    copybook_options: dict[str, Any] = option("translator `copybook`: the copybook translator's options.",
                                              default_factory=dict)
    translator_options: dict[str, Any] = option("translator `module:attribute`: options of its own.",
                                                default_factory=dict)

    @field_validator("framing")
    @classmethod
    def _framing_fits(cls, kind: str, info: ValidationInfo) -> str:
        if kind == "fixed" and info.data.get("frame_length") is None:
            raise ValueError('framing = "fixed" needs frame_length')
        try:
            _framing(kind, info.data)
        except KeyError:
            pass  # a key it needs is wrong: reported on that key
        except CouplerError as exc:
            raise ValueError(exc.message) from None
        return kind

    @field_validator("target")
    @classmethod
    def _request_reply_has_a_target(cls, target: str | None, info: ValidationInfo) -> str | None:
        d = info.data
        if d.get("mode") == "server" and d.get("exchange") == "request-reply" and not (target or d.get("request_channel")):
            raise ValueError("request-reply needs the command target (target) or a request_channel")
        return target

    @field_validator("correlation_length")
    @classmethod
    def _field_correlation_has_a_length(cls, length: int, info: ValidationInfo) -> int:
        if info.data.get("correlation") == "field" and length <= 0:
            raise ValueError('correlation = "field" needs correlation_offset and correlation_length')
        return length

    @field_validator("port")
    @classmethod
    def _client_port(cls, port: int, info: ValidationInfo) -> int:
        if info.data.get("mode") == "client" and port == 0:
            raise ValueError("a client needs the peer's TCP port (not 0)")
        return port

    @cached_property
    def framer(self) -> Framing:
        """The stream codec cutting frames."""
        return _framing(self.framing, self.model_dump())

    @property
    def bind_host(self) -> str:
        return self.host or ("127.0.0.1" if self.mode == "client" else "0.0.0.0")

    @property
    def is_mllp(self) -> bool:
        return self.framer.describe().get("start") == "0b"

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


def _framing(kind: str, d: dict[str, Any]) -> Framing:
    max_frame = d["max_frame_bytes"]
    if kind == "length":
        return LengthPrefixed(max_frame=max_frame, size=d["length_bytes"], byteorder=d["byteorder"],
                              includes_header=d["length_includes_header"])
    if kind == "delimiter":
        return Delimited(max_frame=max_frame, delimiter=parse_delimiter(d["delimiter"]))
    if kind == "fixed":
        return FixedLength(length=d["frame_length"])
    if kind == "stx-etx":
        return stx_etx(max_frame)
    return mllp(max_frame)


def parse_options(adapter: str, options: dict[str, Any]) -> SocketOptions:
    """The socket adapter's options, typed; an :class:`OptionsError` lists every problem."""
    settings = validate_options(SocketOptions, options, prefix=f"adapters[{adapter}].options")
    if settings.tls is not None:
        settings.tls._adapter = adapter
    return settings
