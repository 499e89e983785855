"""The outbound side both file adapters share: name template, directory jail, writer.

``deliver`` renders the file name from the message, refuses (as an invalid message) any
name that leaves the root, streams the body (or its claim-checked file) to a temporary
name, renames it atomically per the ``file_exists`` policy, then records the message id so
that a redelivered message is not written twice: with ``dedupe``, an
:class:`~coupler.bus.api.IdempotentReceiver` keyed on ``message_id`` whose keys are kept in
the adapter's file seen-state.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass

from coupler.bus.api import CommandFault, IdempotentReceiver
from coupler.canonical import Envelope

from .claims import body_chunks
from .errors import FileExistsPolicyError, PathTraversalError
from .fs import FileSystem
from .jail import safe_relative
from .naming import check_template, render
from .options import Options
from .state import FileState
from .writer import FILE_EXISTS_POLICIES, write_file


@dataclass
class OutboundSettings:
    file_name: str = "{message_id}"
    file_exists: str = "unique"
    chmod: int | None = None
    done_suffix: str | None = None
    line_terminator: str = ""
    dedupe: bool = True


def read_outbound_settings(opts: Options) -> OutboundSettings:
    where = f"adapters[{opts.adapter}].options"
    s = OutboundSettings(
        file_name=opts.string("file_name", "{message_id}"),
        file_exists=opts.string("file_exists", "unique", choices=FILE_EXISTS_POLICIES),
        chmod=opts.mode("chmod", None),
        done_suffix=opts.string("done_file_suffix", None) or None,
        line_terminator=opts.string("line_terminator", ""),
        dedupe=opts.boolean("dedupe", True),
    )
    check_template(s.file_name, where=f"{where}.file_name")
    return s


class FileWriter:
    """Writes delivered messages as files under a file system's root."""

    def __init__(self, name: str, fs: FileSystem, settings: OutboundSettings, state: FileState, logger: logging.Logger):
        self.name = name
        self.fs = fs
        self.s = settings
        self.state = state
        self.log = logger
        self.written = 0
        self.refused = 0
        #: the Idempotent Receiver of ``dedupe``: its keys live in the file seen-state (the
        #: adapter's own; the consumer name is the state's: ``files``)
        self.receiver = IdempotentReceiver("files") if settings.dedupe else None

    def _chunks(self, envelope: Envelope) -> Iterator[bytes]:
        yield from body_chunks(envelope)
        if self.s.line_terminator:
            yield self.s.line_terminator.encode()

    def deliver(self, envelope: Envelope) -> str | None:
        """Write one message; returns the name written (None: ignored or a duplicate)."""
        if self.receiver is not None and self.receiver.is_duplicate(self.state, envelope):
            self.log.info("%s: message %s was written before; dropped", self.name, envelope.message_id)
            return None
        where = f"adapter {self.name}: options.file_name"
        try:
            name = safe_relative(render(self.s.file_name, envelope, where=where), where=where)
        except PathTraversalError as exc:
            self.refused += 1
            self.log.warning("%s: refused message %s: %s", self.name, envelope.message_id, exc)
            raise CommandFault(f"path traversal refused: {exc}", code="invalid") from exc
        try:
            written = write_file(
                self.fs, name, self._chunks(envelope), policy=self.s.file_exists,
                mode=self.s.chmod, done_suffix=self.s.done_suffix,
            )
        except PathTraversalError as exc:  # a symbolic link inside the root leading out
            self.refused += 1
            self.log.warning("%s: refused message %s: %s", self.name, envelope.message_id, exc)
            raise CommandFault(f"path traversal refused: {exc}", code="invalid") from exc
        except FileExistsPolicyError as exc:
            raise CommandFault(str(exc), code="failed") from exc
        if self.receiver is not None:
            self.receiver.mark(self.state, envelope)
        if written is not None:
            self.written += 1
        return written

    @property
    def duplicates(self) -> int:
        """Messages dropped as written before."""
        return self.receiver.duplicates if self.receiver is not None else 0
