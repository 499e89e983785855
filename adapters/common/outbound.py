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

from coupler.bus.api import Bool, CommandFault, IdempotentReceiver, OptionsModel, Str, option
from coupler.canonical import Envelope

from .claims import body_chunks
from .errors import FileExistsPolicyError, PathTraversalError
from .fs import FileSystem
from .jail import safe_relative
from .naming import check_template, render
from .options import Mode
from .state import FileState
from .writer import FileExists, write_file


@dataclass
class OutboundSettings:
    file_name: str = "{message_id}"
    file_exists: str = "unique"
    chmod: int | None = None
    done_suffix: str | None = None
    line_terminator: str = ""
    dedupe: bool = True


class OutboundOptions(OptionsModel):
    """The outbound options the file drop and SFTP adapters share (see docs/adapters/)."""

    file_name: Str = option("Template of the written file's name (`{message_id}`, `{prop.NAME}`, ...).",
                            default="{message_id}")
    file_exists: FileExists = option(
        "What happens when the file exists.", default="unique")
    chmod: Mode | None = option('Permission mode of written files, such as `"0640"` (default: the umask\'s).',
                                default=None)
    done_file_suffix: Str | None = option("Write an empty marker file NAME+suffix after each file.", default=None)
    line_terminator: Str = option("Appended to every message written.", default="")
    dedupe: Bool = option("Write a message delivered twice once.", default=True)


def read_outbound_settings(opts: OutboundOptions, adapter: str) -> OutboundSettings:
    """The outbound settings of adapter ``adapter`` from its options."""
    s = OutboundSettings(
        file_name=opts.file_name,
        file_exists=opts.file_exists,
        chmod=opts.chmod,
        done_suffix=opts.done_file_suffix or None,
        line_terminator=opts.line_terminator,
        dedupe=opts.dedupe,
    )
    check_template(s.file_name, where=f"adapters[{adapter}].options.file_name")
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
