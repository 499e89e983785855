"""What every envelope wrapper shares: the headers it reads and writes, its errors."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, ValidationError

from coupler.canonical.envelope import Envelope
from coupler.canonical.errors import CouplerError
from coupler.canonical.options import OptionsModel, Str, option, problems

_M = TypeVar("_M", bound=BaseModel)

#: the envelope headers a wrapper can carry (besides free-form properties)
HEADER_NAMES = ("correlation_id", "return_address", "message_id")
#: the property keeping a return address a partner's envelope named but the site does not allow
REFUSED_RETURN_ADDRESS = "refused_return_address"


class WrapperError(CouplerError):
    """A wrapper that cannot be built (bad options) or bytes it cannot wrap or unwrap."""


@dataclass
class Headers:
    """Envelope headers carried by a legacy wrapper (a protocol header, a SOAP header)."""

    correlation_id: str | None = None
    return_address: str | None = None
    message_id: str | None = None
    properties: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_envelope(cls, envelope: Envelope) -> Headers:
        return cls(envelope.correlation_id, envelope.return_address, envelope.message_id, dict(envelope.properties))

    def get(self, name: str) -> str | None:
        return getattr(self, name) if name in HEADER_NAMES else self.properties.get(name)

    def set(self, name: str, value: str | None) -> None:
        if name in HEADER_NAMES:
            setattr(self, name, value)
        elif value is not None:
            self.properties[name] = value

    def merge(self, inner: Headers) -> Headers:
        """These headers with the ones ``inner`` has and these lack."""
        out = Headers(self.correlation_id, self.return_address, self.message_id, dict(inner.properties))
        out.properties.update(self.properties)
        for name in HEADER_NAMES:
            if getattr(out, name) is None:
                setattr(out, name, getattr(inner, name))
        return out

    def envelope_changes(self) -> dict[str, Any]:
        """Keyword arguments for :meth:`Envelope.replace` (only the headers that are set)."""
        changes: dict[str, Any] = {n: getattr(self, n) for n in HEADER_NAMES if getattr(self, n)}
        if self.properties:
            changes["properties"] = dict(self.properties)
        return changes

    def apply(self, envelope: Envelope) -> Envelope:
        """``envelope`` with these headers (properties added to its own)."""
        changes = self.envelope_changes()
        if "properties" in changes:
            changes["properties"] = {**envelope.properties, **changes["properties"]}
        return envelope.replace(**changes)


@runtime_checkable
class Wrapper(Protocol):
    """An Envelope Wrapper: puts a payload into a legacy envelope and takes it out."""

    def wrap(self, payload: bytes, headers: Headers) -> bytes:
        """The wrapped bytes of ``payload``, with what ``headers`` says in the envelope."""
        ...

    def unwrap(self, data: bytes) -> tuple[bytes, Headers]:
        """The payload inside ``data`` and the headers its envelope carried."""
        ...


def checked_return_address(headers: Headers, allowed: Sequence[str]) -> Headers:
    """``headers`` unwrapped from a partner's envelope, whose return address (a ReplyTo, a
    reply-queue field) is kept only when it is a channel the site allows (``allowed``: glob
    patterns such as ``replies.*``): otherwise replies to it would go wherever the partner
    chose. A refused one is kept as the property :data:`REFUSED_RETURN_ADDRESS`."""
    value = headers.return_address
    if value and not any(fnmatchcase(value, pattern) for pattern in allowed):
        headers.return_address = None
        headers.properties[REFUSED_RETURN_ADDRESS] = value
    return headers


# -- the options of a wrapper -------------------------------------------------------------


class HeaderFields(OptionsModel):
    """Options naming where a wrapper carries the envelope headers (a field path each)."""

    correlation_id: Str | None = option("Where the correlation id is carried.", default=None)
    return_address: Str | None = option("Where the return address is carried.", default=None)
    message_id: Str | None = option("Where the message id is carried.", default=None)
    return_addresses: list[Str] = option(
        "Channels a return address read from the envelope may name (glob patterns, such as `replies.*`); "
        "any other is not used (kept as the property `refused_return_address`), so a partner cannot choose "
        "where replies go. Empty: none is used.", default_factory=list)

    def header_paths(self) -> dict[str, str]:
        return {name: getattr(self, name) for name in HEADER_NAMES if getattr(self, name) is not None}


def wrapper_options(model: type[_M], options: Any) -> _M:
    """A wrapper's ``options`` as ``model``, or a :class:`WrapperError` naming the key (all
    problems, when there are several)."""
    try:
        return model.model_validate(options)
    except ValidationError as exc:
        found = problems(exc, model, options)
    if len(found) == 1:
        raise WrapperError(found[0].message, where=found[0].path or None)
    raise WrapperError(f"{len(found)} problems: " + "; ".join(str(p) for p in found))
