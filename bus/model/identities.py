"""Application identity addressing: the Application Repository (IBM US 7,716,678).

Instead of naming a queue, a sender may address an application by identity: ``class``,
``provider``, ``name`` and ``version``. Adapters register the identity they serve together
with the channel they read; a command targets an identity *pattern* (any field may be left
open) and is delivered to the most specific registered match.

Matching: a registered identity matches a pattern when every field set in both is equal (a
registered identity may leave fields open: it then serves any value). Among the matches the
most specific wins: the one that agrees with the pattern on the most fields that it names
itself (class, then provider, name, version weigh in that order); ties go to the highest
version, then to the latest registration.

Text form (``coupler send --target``, ``site.toml``): ``class/provider/name@version`` with
``*`` or an omitted trailing part meaning "any", e.g. ``crm``, ``crm/acme``,
``crm/acme/customers@2``, ``crm/*/customers``.
"""

from __future__ import annotations

import abc
import builtins
import re
from dataclasses import dataclass
from typing import Any

from coupler.canonical.errors import CouplerError


class IdentityError(CouplerError):
    """A malformed identity or pattern, or one that nothing registered matches."""


_PART = r"[A-Za-z0-9_.\-]+|\*"
_TEXT = re.compile(
    rf"^(?P<cls>{_PART})(?:/(?P<provider>{_PART}))?(?:/(?P<name>{_PART}))?(?:@(?P<version>{_PART}))?$"
)
_FIELDS = ("cls", "provider", "name", "version")


@dataclass(frozen=True)
class Identity:
    """ApplIdentData: application class, provider, name and version (None = any)."""

    cls: str | None
    provider: str | None = None
    name: str | None = None
    version: str | None = None

    def __post_init__(self) -> None:
        for f in _FIELDS:
            value = getattr(self, f)
            if value == "*" or value == "":
                object.__setattr__(self, f, None)
            elif value is not None:
                object.__setattr__(self, f, str(value))

    @classmethod
    def parse(cls, text: str) -> Identity:
        m = _TEXT.match(text.strip()) if isinstance(text, str) else None
        if not m:
            raise IdentityError(
                f"malformed application identity {text!r}",
                hint="expected CLASS[/PROVIDER[/NAME]][@VERSION], e.g. crm/acme/customers@2",
            )
        return cls(m.group("cls"), m.group("provider"), m.group("name"), m.group("version"))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Identity:
        unknown = set(data) - {"class", "cls", "provider", "name", "version"}
        if unknown:
            raise IdentityError(
                f"unknown identity field(s) {', '.join(sorted(unknown))}",
                hint="use class, provider, name, version",
            )
        return cls(data.get("class", data.get("cls")), data.get("provider"), data.get("name"),
                   data.get("version"))

    def __str__(self) -> str:
        text = "/".join(v or "*" for v in (self.cls, self.provider, self.name))
        text = re.sub(r"(/\*)+$", "", text)
        return f"{text}@{self.version}" if self.version else text

    def to_json(self) -> dict[str, Any]:
        return {"class": self.cls, "provider": self.provider, "name": self.name, "version": self.version}

    def specificity(self, pattern: Identity) -> tuple[int, ...] | None:
        """How specifically this registered identity matches ``pattern`` (None: no match)."""
        score = []
        for f in _FIELDS:
            mine, wanted = getattr(self, f), getattr(pattern, f)
            if mine is not None and wanted is not None and mine != wanted:
                return None
            score.append(1 if mine is not None and wanted is not None else 0)
        return tuple(score)


@dataclass(frozen=True)
class Registration:
    """An identity served on a channel by an adapter."""

    id: int
    identity: Identity
    channel: str
    adapter: str | None
    registered_at: float

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            **self.identity.to_json(),
            "identity": str(self.identity),
            "channel": self.channel,
            "adapter": self.adapter,
            "registered_at": self.registered_at,
        }


def _version_key(version: str | None) -> tuple[Any, ...]:
    if version is None:
        return (0,)
    parts = re.split(r"[.\-]", version)
    return (1, *[(0, int(p), "") if p.isdigit() else (1, 0, p) for p in parts])


class IdentityRepository(abc.ABC):
    """The Application Repository: matching and resolution; each transport keeps the
    registrations in its own store (:meth:`register`, :meth:`unregister`, :meth:`list`)."""

    @abc.abstractmethod
    def register(self, identity: Identity | str, channel: str, *, adapter: str | None = None) -> Registration:
        """Register ``identity`` as reachable on ``channel`` (replacing the same registration)."""

    @abc.abstractmethod
    def unregister(self, *, adapter: str | None = None, identity: Identity | str | None = None) -> int:
        """Remove the registrations of an adapter and/or of one exact identity."""

    @abc.abstractmethod
    def list(self) -> list[Registration]:
        """Every registration, ordered by identity."""

    def matches(self, pattern: Identity | str) -> builtins.list[Registration]:
        """Every registration matching ``pattern``, most specific first."""
        pat = Identity.parse(pattern) if isinstance(pattern, str) else pattern
        scored = []
        for reg in self.list():
            score = reg.identity.specificity(pat)
            if score is not None:
                scored.append((score, _version_key(reg.identity.version), reg.registered_at, reg.id, reg))
        scored.sort(key=lambda s: s[:4], reverse=True)
        return [s[-1] for s in scored]

    def resolve(self, pattern: Identity | str) -> Registration:
        """The most specific registration matching ``pattern``, or :class:`IdentityError`."""
        found = self.matches(pattern)
        if not found:
            raise IdentityError(
                f"no registered application matches {pattern}",
                hint="list them with `coupler ctl identities`",
            )
        return found[0]
