"""A translator with a bug (``translator = "tests.adapters.socket.poison:explosive"``): a
payload starting with ``BOOM`` makes it raise a plain ``ZeroDivisionError``, not a
CouplerError; anything else is read as UTF-8 text."""

from __future__ import annotations

from coupler.bus.api import Document
from coupler.canonical import FormatIndicator

FORMAT = FormatIndicator("test.Text", 1, "text/plain")


class Explosive:
    def decode(self, payload: bytes) -> Document:
        if payload.startswith(b"BOOM"):
            return Document(FORMAT, payload[: 1 // 0])
        return Document(FORMAT, payload)

    def encode(self, document: Document) -> bytes:
        if document.body.startswith(b"KABOOM"):
            raise KeyError("reply field")
        return document.body


def explosive(options: dict) -> Explosive:
    """The factory named in the adapter options."""
    return Explosive()
