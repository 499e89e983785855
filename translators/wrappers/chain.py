"""Wrapper chains (Pipes and Filters): wrapping runs the wrappers in order, unwrapping
runs them backwards.

A chain is declared per adapter in ``site.toml``, innermost wrapper first::

    [[adapters.wrappers]]
    type = "copybook"
    options = { copybook = "txn-header.cpy", correlation_id = "CORR-ID", length = "DATA-LEN" }

    [[adapters.wrappers]]
    type = "length"
    options = { size = 4 }

so a payload becomes ``length prefix + (header + payload)`` on the way out, and the same
chain takes it apart on the way in.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from coupler.canonical.errors import CouplerError, describe_exception

from .base import Headers, Wrapper, WrapperError

Factory = Callable[[dict[str, Any], Path], Wrapper]


@dataclass
class WrapperChain:
    """Wrappers applied in order (innermost first); unwrapping in reverse order."""

    wrappers: Sequence[Wrapper]

    def wrap(self, payload: bytes, headers: Headers | None = None) -> bytes:
        headers = headers or Headers()
        data = payload
        for n, wrapper in enumerate(self.wrappers):
            try:
                data = wrapper.wrap(data, headers)
            except Exception as exc:  # noqa: BLE001 - only a WrapperError leaves a chain
                raise _located(exc, n, wrapper) from None
        return data

    def unwrap(self, data: bytes) -> tuple[bytes, Headers]:
        headers = Headers()
        for n in range(len(self.wrappers) - 1, -1, -1):
            wrapper = self.wrappers[n]
            try:
                data, found = wrapper.unwrap(data)
            except Exception as exc:  # noqa: BLE001 - only a WrapperError leaves a chain
                raise _located(exc, n, wrapper) from None
            headers = headers.merge(found)
        return data, headers

    def __len__(self) -> int:
        return len(self.wrappers)


def builtin_types(schema_roots: Sequence[Path] = ()) -> dict[str, Factory]:
    """The wrapper types Coupler provides, by the name ``type = "..."`` uses; an ``xml``
    envelope's XSD may read files under its directory and ``schema_roots``."""
    from .record import CopybookHeader
    from .soap import SoapWrapper
    from .xml import XmlWrapper

    types: dict[str, Factory] = {
        "copybook": CopybookHeader.from_options,
        "xml": partial(XmlWrapper.from_options, schema_roots=tuple(schema_roots)),
        "soap": SoapWrapper.from_options,
    }
    for kind in ("length", "delimited", "mllp", "stx_etx"):
        types[kind] = _framing(kind)
    return types


def _framing(kind: str) -> Factory:
    from .framing import framing_wrapper

    return lambda options, base_dir: framing_wrapper(kind, options)


def build_chain(entries: Iterable[Mapping[str, Any]], *, base_dir: Path | str = ".",
                types: Mapping[str, Factory] | None = None, where: str = "wrappers",
                schema_roots: Sequence[Path] = ()) -> WrapperChain:
    """The chain of ``entries`` (``[{"type": ..., "options": {...}}]`` as in site.toml);
    relative files in options are resolved against ``base_dir``; an envelope's XSD may read
    files under its own directory and ``schema_roots`` (in a site: its folder and
    ``[schemas] paths``)."""
    known = dict(builtin_types(schema_roots))
    known.update(types or {})
    wrappers = []
    for n, entry in enumerate(entries):
        kind = entry.get("type")
        factory = known.get(kind) if isinstance(kind, str) else None
        if factory is None:
            raise WrapperError(f"unknown wrapper type {kind!r}", where=f"{where}[{n}].type",
                               hint=f"known types: {', '.join(sorted(known))}")
        options = dict(entry.get("options") or {})
        try:
            wrappers.append(factory(options, Path(base_dir)))
        except WrapperError as exc:
            raise WrapperError(exc.message, where=f"{where}[{n}].options" + (f".{exc.where}" if exc.where else ""), hint=exc.hint) from None
    return WrapperChain(wrappers)


def _located(exc: Exception, n: int, wrapper: Any) -> WrapperError:
    """``exc`` raised by wrapper ``n`` (from 0) as a one-line WrapperError naming the wrapper;
    what is not a CouplerError (a bug of the wrapper, a plugin's) names the code that raised it."""
    where = f"wrapper {n + 1} ({_name(wrapper)})"
    if isinstance(exc, CouplerError):
        return WrapperError(exc.message, where=where + (f", {exc.where}" if exc.where else ""), hint=exc.hint)
    return WrapperError(describe_exception(exc), where=where)


def _name(wrapper: Any) -> str:
    return getattr(wrapper, "kind", type(wrapper).__name__)
