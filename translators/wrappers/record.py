"""A fixed-width protocol header described by a copybook, in front of the payload.

Legacy protocols (CICS/IMS bridges, MQ applications) put a header before the data: a
transaction code, a reply-to queue, a correlation id, the length of what follows. Options::

    copybook = "txn-header.cpy"          # the header's layout (required)
    options = { encoding = "ascii" }     # Cobrix options of the header
    correlation_id = "CORR-ID"           # header field <-> envelope header
    return_address = "REPLY-QUEUE"
    message_id = "MSG-ID"
    length = "DATA-LEN"                  # set to the payload length; cuts the payload on unwrap
    properties = { txn = "TXN-CODE" }    # envelope property <-> header field
    constants = { "VERSION" = "01" }     # written into every header

Field paths are the copybook's names (``-`` or ``_``), dotted for groups.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coupler.canonical.errors import CouplerError
from coupler.canonical.options import Str, option
from coupler.translators.mapping.avrotypes import AType, SchemaTypes, Step, parse_path
from coupler.translators.mapping.casts import CastUnsupported, make_cast
from coupler.translators.mapping.jsonvalues import coerce
from coupler.translators.mapping.records import get_path, set_path

from .base import (
    HEADER_NAMES,
    HeaderFields,
    Headers,
    WrapperError,
    checked_return_address,
    wrapper_options,
)

_STRING = AType("string", "string")


class CopybookHeaderOptions(HeaderFields):
    """Options of the ``copybook`` wrapper (a fixed-width header before the payload)."""

    copybook: Str = option("The header's copybook (relative to site.toml).")
    options: dict[str, Any] = option("The copybook translator's options of the header.", default_factory=dict)
    length: Str | None = option("The header field holding the payload's length.", default=None)
    properties: dict[str, Str] = option("Message properties carried in header fields: `{ NAME = FIELD }`.",
                                        default_factory=dict)
    constants: dict[str, Any] = option("Header fields written with a constant value: `{ FIELD = VALUE }`.",
                                       default_factory=dict)


@dataclass
class _Slot:
    steps: tuple[Step, ...]
    atype: AType
    to_field: Any
    from_field: Any


@dataclass
class CopybookHeader:
    """A header record of a copybook layout before the payload."""

    copybook: Path
    options: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)  # envelope header or property -> field path
    length: str | None = None
    constants: dict[str, Any] = field(default_factory=dict)
    kind: str = "copybook"
    #: channels a return address read from a header may name (:func:`checked_return_address`)
    return_addresses: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        from coupler.translators.copybook.avro import avro_schema
        from coupler.translators.copybook.decoder import RecordDecoder, parse_options
        from coupler.translators.copybook.encoder import RecordEncoder
        from coupler.translators.copybook.layout import build_layout
        from coupler.translators.copybook.parser import parse_file

        try:
            self.layout = build_layout(parse_file(self.copybook))
            opts = parse_options({k: str(v) for k, v in self.options.items()})
            self.encoder = RecordEncoder(self.layout, opts)
            self.decoder = RecordDecoder(self.layout, opts, policy="strict")
            self.types = SchemaTypes(avro_schema(self.layout, opts))
        except WrapperError:
            raise
        except CouplerError as exc:
            raise WrapperError(f"header copybook: {exc}", where="copybook") from None
        self.size = self.layout.size
        self.slots = {name: self._slot(path, name) for name, path in self.headers.items()}
        self.length_slot = self._slot(self.length, "length") if self.length else None
        self.constant_values = []
        for path, value in self.constants.items():
            slot = self._slot(path, f"constants.{path}")
            try:
                self.constant_values.append((slot.steps, coerce(value, slot.atype, self.types)))
            except ValueError as exc:
                raise WrapperError(f"constant {value!r} does not fit {path}: {exc}", where=f"constants.{path}") from None

    @classmethod
    def from_options(cls, options: dict[str, Any], base_dir: Path) -> CopybookHeader:
        opts = wrapper_options(CopybookHeaderOptions, options)
        headers = opts.header_paths()
        for name, path in opts.properties.items():
            if name in HEADER_NAMES:
                raise WrapperError(f"{name} is an envelope header, not a property", where=f"properties.{name}")
            headers[name] = path
        return cls(base_dir / opts.copybook, dict(opts.options), headers, opts.length, dict(opts.constants),
                   return_addresses=tuple(opts.return_addresses))

    def _slot(self, path: str, where: str) -> _Slot:
        try:
            atype, steps = self.types.resolve(parse_path(path))
            return _Slot(steps, atype, make_cast(_STRING, atype), make_cast(atype, _STRING))
        except (ValueError, LookupError) as exc:
            raise WrapperError(f"header field {path!r}: {exc}", where=where) from None
        except CastUnsupported as exc:
            raise WrapperError(f"header field {path!r} cannot hold a header value: {exc}", where=where) from None

    def wrap(self, payload: bytes, headers: Headers) -> bytes:
        record: dict[str, Any] = {}
        for steps, value in self.constant_values:
            set_path(record, steps, value)
        for name, slot in self.slots.items():
            value = headers.get(name)
            if value is not None:
                try:
                    set_path(record, slot.steps, slot.to_field(value))
                except (ValueError, TypeError, ArithmeticError) as exc:
                    raise WrapperError(f"{name} {value!r} does not fit header field {self.headers[name]}: {exc}") from None
        if self.length_slot is not None:
            set_path(record, self.length_slot.steps, len(payload))
        try:
            header = self.encoder.encode(record)
        except CouplerError as exc:
            raise WrapperError(f"cannot write the header: {exc}") from None
        return header + payload

    def unwrap(self, data: bytes) -> tuple[bytes, Headers]:
        if len(data) < self.size:
            raise WrapperError(f"{len(data)} bytes are shorter than the {self.size}-byte header of {self.copybook.name}")
        record = self.decoder.decode(data[: self.size])
        if not isinstance(record, dict):
            raise WrapperError(f"bad header: {getattr(record, 'error', record)}", where="byte 0")
        headers = Headers()
        for name, slot in self.slots.items():
            value = get_path(record, slot.steps)
            if value is not None and value != "":
                headers.set(name, slot.from_field(value))
        payload = data[self.size:]
        if self.length_slot is not None:
            length = get_path(record, self.length_slot.steps)
            if not isinstance(length, int) or length < 0:
                raise WrapperError(f"header field {self.length} holds no length ({length!r})", where="byte 0")
            if length > len(payload):
                raise WrapperError(f"the header announces {length} payload bytes, only {len(payload)} follow", where=f"byte {self.size}")
            if length < len(payload):
                raise WrapperError(f"{len(payload) - length} bytes after the {length}-byte payload", where=f"byte {self.size + length}")
        return payload, checked_return_address(headers, self.return_addresses)
