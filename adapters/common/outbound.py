"""The outbound side both file adapters share: name template, directory jail, writer.

``deliver`` renders the file name from the message, refuses (as an invalid message) any
name that leaves the root, streams the body (or its claim-checked file) to a temporary
name, renames it atomically per the ``file_exists`` policy, then records the message id so
that a redelivered message is not written twice: with ``dedupe``, an
:class:`~coupler.bus.api.IdempotentReceiver` keyed on ``message_id`` whose keys are kept in
the adapter's file seen-state.

Delivery is idempotent across a crash at any instant (DESIGN.md, reliability contract):

* the temporary is ``.NAME.<adapter tag>-<message key>.part``, derived from the adapter
  and the message id, so a redelivery writes the same temporary again;
* once the temporary holds the whole content, a *pending* key of the message is recorded
  (durably, in the same seen-state) before the rename; a redelivered message with a pending
  key finishes the rename if the temporary is still there, else the rename had happened:
  either way it is recorded as delivered and not written again;
* on start, :meth:`FileWriter.recover` finishes the pending temporaries of this adapter and
  removes its other ones (left half-written by a crash: their message is delivered again).

``file_exists = "append"`` writes in place (no temporary), record-atomically: a failed append
is cut back to where it began, and one a crash interrupted (its ``.NAME.<tag>-<key>.append``
marker is left) is cut back by :meth:`FileWriter.recover` at start, before any other message
is appended. The marker stays until the append is recorded: a crash between a complete
append and its record cuts the append back too, and the redelivered message appends it once
(exactly once, with ``dedupe`` and message ids that are safe file name parts, as UUIDs are).
"""

from __future__ import annotations

import hashlib
import logging
import posixpath
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from coupler.bus.api import Bool, CommandFault, IdempotentReceiver, OptionsModel, Str, option
from coupler.canonical import Envelope

from .claims import body_chunks
from .errors import FileExistsPolicyError, PathTraversalError, PayloadError
from .fs import FileSystem
from .jail import safe_relative
from .naming import check_template, render
from .options import Mode
from .state import FileState
from .writer import (
    FileExists,
    append_marker,
    finish_written,
    is_cut,
    rename_into_place,
    temp_name,
    undo_append,
    unique_candidates,
    write_file,
)


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
    chmod: Mode | None = option(
        'Permission mode of written files, such as `"0640"`; directories the adapter creates get read '
        'and search permission for the same readers (`"0750"`). Without it, the umask\'s: files 0600 and '
        'directories 0700 under the daemon (umask 077).', default=None)
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


#: the seen-state "consumer" of the keys below (the receiver's own is ``files``)
_PENDING = "files.pending"
#: a pending key whose rename failed (``fail`` policy lost a race): not delivered
_ABANDONED = "files.abandoned"
#: a pending key whose delivery was finished by the recovery (its message id unknown there)
_DONE = "files.done"
_SAFE_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


def delivery_key(message_id: str) -> str:
    """The key of ``message_id`` in delivery records and temporary names (itself when it is
    a safe file name part, as UUIDs are; else a hash)."""
    if _SAFE_ID.fullmatch(message_id):
        return message_id
    return "h" + hashlib.sha256(message_id.encode()).hexdigest()[:40]


def adapter_tag(adapter: str) -> str:
    """What marks the temporaries of ``adapter``: its name hashed (8 hex digits)."""
    return hashlib.sha256(adapter.encode()).hexdigest()[:8]


class FileWriter:
    """Writes delivered messages as files under a file system's root."""

    #: test hook: called with the name written, after the rename and before the delivery is
    #: recorded (the fault-injection tests kill the process here)
    after_rename: Callable[[str], None] | None = None

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
        #: marks the temporaries of this adapter
        self.tag = adapter_tag(name)
        self._temp = re.compile(r"\.(.+)\." + self.tag + r"-([A-Za-z0-9_-]+)\.(part|append)")
        self.recovered = False

    @property
    def duplicates(self) -> int:
        """Messages dropped as written before."""
        return self.receiver.duplicates if self.receiver is not None else 0

    def _is_pending(self, key: str) -> bool:
        if self.receiver is None:
            return False
        marks = self.state.seen(_PENDING, [key])
        return bool(marks) and not self.state.seen(_ABANDONED, [key])

    # -- recovery ---------------------------------------------------------------------------

    def recover(self) -> dict[str, int]:
        """Finish what a crash interrupted: pending temporaries of this adapter are renamed into
        place, its other temporaries removed. Returns ``{"finished": n, "removed": n}``."""
        counts = {"finished": 0, "removed": 0}
        recursive = "/" in self.s.file_name
        for info in self.fs.scan("", recursive=recursive, skip=frozenset()):
            m = self._temp.fullmatch(info.name)
            if m is None:
                continue
            base, key = m.group(1), m.group(2)
            if is_cut(base):  # a long name's temporary: only its redelivery knows the target
                if not self._is_pending(key):
                    self.fs.remove(info.path)
                    counts["removed"] += 1
                continue
            if m.group(3) == "append":
                if self.receiver is not None and self.receiver.processed(self.state, key):
                    self.fs.remove(info.path)  # the append was recorded: only its marker was left
                else:  # an append a crash cut, or not recorded: it goes (its message comes again)
                    undo_append(self.fs, info.path, posixpath.join(posixpath.dirname(info.path), base))
                counts["removed"] += 1
            elif self._is_pending(key):
                target = posixpath.join(posixpath.dirname(info.path), base)
                written = self._finish(key, info.path, target)
                counts["finished"] += 1
                self.log.info("%s: finished the delivery a crash interrupted: %s", self.name, written)
            else:
                self.fs.remove(info.path)
                counts["removed"] += 1
                self.log.info("%s: removed %s, left by an interrupted delivery", self.name, info.path)
        self.recovered = True
        return counts

    def _finish(self, key: str, tmp: str, target: str, envelope: Envelope | None = None) -> str | None:
        """A pending delivery: rename its temporary if the crash came before, then record it."""
        if self.fs.exists(tmp):
            placed = self._linked(tmp, target)
            if placed is not None:  # the crash cut a rename between its link and its unlink
                written: str | None = placed
                self.fs.remove(tmp)
            else:
                written = rename_into_place(self.fs, tmp, target, self.s.file_exists)
            finish_written(self.fs, tmp, target, written, self.s.done_suffix, f"{self.tag}-{key}")
        else:  # renamed before the crash (with ``unique`` perhaps as target-N)
            written = target
        if envelope is not None and self.receiver is not None:
            self.receiver.mark(self.state, envelope)
        self.state.mark_seen(_DONE, [key])
        return written

    def _linked(self, tmp: str, target: str) -> str | None:
        """The name ``tmp`` is already linked as (a no-replace rename is a link, then an unlink
        of the temporary), or None."""
        candidates = unique_candidates(target) if self.s.file_exists == "unique" else iter([target])
        for name in candidates:
            if not self.fs.exists(name):
                return None
            if self.fs.same_file(tmp, name):
                return name
        return None

    def _chunks(self, envelope: Envelope) -> Iterator[bytes]:
        yield from body_chunks(envelope)
        if self.s.line_terminator:
            yield self.s.line_terminator.encode()

    def deliver(self, envelope: Envelope) -> str | None:
        """Write one message; returns the name written (None: ignored or a duplicate)."""
        if not self.recovered:  # not done at start (the server was unreachable): before the first
            self.recover()
        key = delivery_key(envelope.message_id)
        if self.receiver is not None:
            done = self.receiver.is_duplicate(self.state, envelope)
            if not done and self.state.seen(_DONE, [key]):  # finished by the recovery at start
                self.receiver.duplicates += 1
                done = True
            if done:
                self.log.info("%s: message %s was written before; dropped", self.name, envelope.message_id)
                return None
        where = f"adapter {self.name}: options.file_name"
        try:
            name = safe_relative(render(self.s.file_name, envelope, where=where), where=where)
        except PathTraversalError as exc:
            self.refused += 1
            self.log.warning("%s: refused message %s: %s", self.name, envelope.message_id, exc)
            raise CommandFault(f"path traversal refused: {exc}", code="invalid") from exc
        tag = f"{self.tag}-{key}"
        if self._is_pending(key):  # a crash came between the commit and the record
            self.log.info("%s: message %s was being written; finishing it", self.name, envelope.message_id)
            written = self._finish(key, temp_name(name, tag), name, envelope)
            self.written += written is not None
            return written
        committed = False

        def commit(tmp: str) -> None:
            nonlocal committed
            if self.receiver is not None:
                self.state.mark_seen(_PENDING, [key])
                committed = True

        # an append keeps its marker until it is recorded (a crash before the record cuts it
        # back, so the redelivery appends it once), when the record is keyed by the message id
        keep_marker = self.receiver is not None and key == envelope.message_id
        try:
            written = write_file(
                self.fs, name, self._chunks(envelope), policy=self.s.file_exists,
                mode=self.s.chmod, done_suffix=self.s.done_suffix, tag=tag, commit=commit,
                keep_marker=keep_marker,
            )
        except PathTraversalError as exc:  # a symbolic link inside the root leading out
            self.refused += 1
            self.log.warning("%s: refused message %s: %s", self.name, envelope.message_id, exc)
            raise CommandFault(f"path traversal refused: {exc}", code="invalid") from exc
        except PayloadError as exc:  # its claim-checked body is missing, or not one of the bus's
            self.refused += 1
            self.log.warning("%s: refused message %s: %s", self.name, envelope.message_id, exc)
            raise CommandFault(str(exc), code="invalid") from exc
        except FileExistsPolicyError as exc:
            if committed:  # the rename lost a race: nothing was written
                self.state.mark_seen(_ABANDONED, [key])
            raise CommandFault(str(exc), code="failed") from exc
        if self.after_rename is not None and written is not None:
            self.after_rename(written)
        if self.receiver is not None:
            self.receiver.mark(self.state, envelope)
        if keep_marker and self.fs.exists(marker := append_marker(name, tag)):
            self.fs.remove(marker)
        if written is not None:
            self.written += 1
        return written
