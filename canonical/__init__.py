"""The canonical data model: envelopes, format indicators, schema registry, codecs."""

from .envelope import Envelope, HistoryEntry, MessageKind, Sequence
from .errors import CouplerError
from .format import FormatIndicator

__all__ = ["CouplerError", "Envelope", "FormatIndicator", "HistoryEntry", "MessageKind", "Sequence"]
