"""The canonical data model: envelopes, format indicators, schema registry, codecs.

The names below are imported on first use (PEP 562), so that importing one light module of
the package (``coupler.canonical.errors``, which every command line imports) does not import
the envelope and its Avro codec.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .envelope import Envelope, HistoryEntry, MessageKind, Sequence
    from .errors import CouplerError
    from .format import FormatIndicator

__all__ = ["CouplerError", "Envelope", "FormatIndicator", "HistoryEntry", "MessageKind", "Sequence"]

_WHERE = {
    "CouplerError": ".errors",
    "Envelope": ".envelope",
    "FormatIndicator": ".format",
    "HistoryEntry": ".envelope",
    "MessageKind": ".envelope",
    "Sequence": ".envelope",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        value = getattr(importlib.import_module(_WHERE[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
