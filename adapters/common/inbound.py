"""The inbound pipeline both file adapters run: list, check readiness, take, publish, finish.

One poll:

1. list the files (``FileSystem.scan``), keep those the :class:`Selection` admits;
2. keep those that are ready (a done marker beside them, or size and mtime stable), plus
   those the seen-state already knows;
3. take up to ``max_files`` of them in name or mtime order, and for each:
   claim it and record ``PROCESSING`` (on a multi-node site the seen-state is shared and
   one daemon only wins the claim; the others leave the file alone) → get a local copy (the file itself, or an SFTP download) →
   check the whole payload (a bad file publishes nothing) → publish its messages, in batches
   of up to 256 records (or 1 MiB) in one transaction of the store each, recording progress
   after each batch → ``PUBLISHED`` → archive, move or delete it → ``DONE``.
   A payload error sends it to the error directory with a ``.reason`` file (``FAILED``);
   a file over ``batch_threshold_bytes`` is handed to the batch job (``STAGED``).

Message ids are derived from the file key and the record index, so a message published
again after a crash (between the publish of its batch and the progress record) carries the same id and
an Idempotent Receiver drops it. A restart resumes a ``PROCESSING`` file after its last
published message and finishes a ``PUBLISHED`` one without publishing it again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import posixpath
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, Protocol

from coupler.bus.api import (
    AdapterContext,
    Bool,
    FileClaimLost,
    Int,
    InvalidMessage,
    Num,
    OptionsModel,
    Str,
    option,
)
from coupler.canonical import Envelope, FormatIndicator
from coupler.canonical.claimcheck import write_claim
from coupler.canonical.envelope import MessageKind, Sequence, name_id
from coupler.canonical.errors import CouplerError, UnitError
from coupler.canonical.tracecontext import TRACEPARENT, TraceContext

from .claims import CLAIM_PROPERTY, CLAIM_SIZE_PROPERTY, store_claim
from .errors import FileChanged, PayloadError, RemoteError
from .fs import FileInfo, FileSystem, changed, check_listed, open_regular
from .jail import safe_relative
from .options import Strings
from .payload import PayloadMode, PayloadSettings, Splitter, WholeSplitter, splitter_for
from .readiness import Readiness, readiness_for
from .selection import Order, Selection, order_files
from .state import (
    DONE,
    FAILED,
    PROCESSING,
    PUBLISHED,
    STAGED,
    FileKey,
    FileState,
    path_shown,
    path_text,
)
from .writer import write_file

_NAMESPACE = uuid.UUID("6f0c6c1e-3b5e-4bde-9a53-1c0c0de0f11e")
_NAMESPACE_BYTES = _NAMESPACE.bytes
#: records of a file published in one transaction of the store (one disk sync and one progress
#: record), at most this many and this many bytes of bodies: few syncs for a file of small
#: records, bounded memory for a file of large ones
PUBLISH_BATCH = 4096
PUBLISH_BATCH_BYTES = 1 << 20
#: what happens to a file once published (option ``after``)
After = Literal["archive", "delete", "keep"]


@dataclass
class InboundSettings:
    selection: Selection = field(default_factory=Selection)
    recursive: bool = False
    order: str = "name"
    max_files: int = 100
    stable_seconds: float = 2.0
    checksum: bool = False
    after: str = "archive"
    archive_dir: str = "archive"
    archive_dated: bool = False
    error_dir: str = "error"
    payload: PayloadSettings = field(default_factory=PayloadSettings)
    validate_first: bool = True
    claim_check_bytes: int = 8 << 20
    batch_threshold_bytes: int | None = None
    batch_dir: Path | None = None
    batch_format: str = "coupler.batch.StagedFile@1"
    format: str | None = None


class InboundOptions(OptionsModel):
    """The inbound options the file drop and SFTP adapters share (see docs/adapters/)."""

    include: Strings = option("Globs over the name and the relative path of the files to take.",
                              default_factory=lambda: ["*"])
    exclude: Strings = option("Globs of files to leave.", default_factory=list)
    recursive: Bool = option("Descend into sub-directories.", default=False)
    order: Order = option("The order files are taken in.", default="name")
    max_files_per_poll: Int = option("Files taken per poll.", default=100, ge=1)
    stable_seconds: Num = option("A file is ready when its size and mtime have not changed for this long.",
                                 default=2.0, ge=0)
    done_suffix: Str | None = option("A file is ready when a marker file NAME+suffix exists.", default=None)
    checksum: Bool = option("Put the file's SHA-256 in its key (a changed file is taken again).", default=False)
    after: After = option("What happens to a file once published.",
                                                        default="archive")
    archive_dir: Str = option("Where `archive` moves files, relative to the directory.", default="archive")
    archive_dated: Bool = option("Archive into a YYYY-MM-DD sub-directory.", default=False)
    error_dir: Str = option("Where files that cannot be read go, relative to the directory.", default="error")
    validate_first: Bool = option("Check the whole file before publishing any record of it.", default=True)
    claim_check_bytes: Int = option("Whole files larger than this go by Claim Check.", default=8 << 20, ge=1)
    batch_threshold_bytes: Int | None = option("Files larger than this are staged for batch in `batch_dir`.",
                                               default=None, ge=1)
    batch_dir: Str | None = option("Where files are staged for batch (relative to site.toml).", default=None)
    batch_format: Str = option("Format of the staged-file event.", default="coupler.batch.StagedFile@1")
    format: Str | None = option("Format indicator when the site sets none (`coupler.File@1`).", default=None)
    payload: PayloadMode = option(
        "How a file becomes messages: the whole file, one per line, per fixed-length record, per "
        "copybook record or per XML element.", default="whole")
    record_length: Int | None = option("payload `fixed`: the record length.", default=None, ge=1)
    copybook: Str | None = option("payload `copybook`: the copybook (relative to site.toml).", default=None)
    element: Str | None = option("payload `xml`: the element each message is.", default=None)
    encoding: Str | None = option("Check that the file is in this encoding.", default=None)
    skip_empty_lines: Bool = option("payload `lines`: skip empty lines.", default=True)
    content_type: Str | None = option("The content type of the messages (default: by payload).", default=None)


def read_inbound_settings(opts: InboundOptions, adapter: str, base_dir: Path | None = None) -> InboundSettings:
    """The inbound settings of adapter ``adapter`` from its options."""
    where = f"adapters[{adapter}].options"
    s = InboundSettings(
        selection=Selection(list(opts.include), list(opts.exclude), opts.done_suffix or None),
        recursive=opts.recursive,
        order=opts.order,
        max_files=opts.max_files_per_poll,
        stable_seconds=opts.stable_seconds,
        checksum=opts.checksum,
        after=opts.after,
        archive_dir=safe_relative(opts.archive_dir, where=f"{where}.archive_dir"),
        archive_dated=opts.archive_dated,
        error_dir=safe_relative(opts.error_dir, where=f"{where}.error_dir"),
        validate_first=opts.validate_first,
        claim_check_bytes=opts.claim_check_bytes,
        batch_threshold_bytes=opts.batch_threshold_bytes,
        batch_format=opts.batch_format,
        format=opts.format,
    )
    batch_dir = opts.batch_dir
    if s.batch_threshold_bytes and not batch_dir:
        raise CouplerError("batch_threshold_bytes needs batch_dir (where the batch job reads)", where=where)
    if batch_dir:
        s.batch_dir = Path(batch_dir) if base_dir is None else base_dir / batch_dir
    copybook = opts.copybook
    s.payload = PayloadSettings(
        mode=opts.payload,
        record_length=opts.record_length,
        copybook=(Path(copybook) if base_dir is None else base_dir / copybook) if copybook else None,
        element=opts.element,
        encoding_check=opts.encoding,
        skip_empty_lines=opts.skip_empty_lines,
        content_type=opts.content_type,
    )
    return s


class LocalCopy(Protocol):
    """Where the pipeline reads a file from: the file itself, or a downloaded copy."""

    #: True when the copy belongs to the adapter (a download) and may be moved or deleted
    owned: bool

    def fetch(self, info: FileInfo) -> Path: ...

    def discard(self, info: FileInfo) -> None: ...


@dataclass
class PollResult:
    listed: int = 0
    ready: int = 0
    done: int = 0
    failed: int = 0
    staged: int = 0
    messages: int = 0
    invalid: int = 0  # messages the bus refused as untranslatable (in the Invalid Message Channel)
    errors: int = 0
    waiting: float | None = None  # seconds until a watched file may become ready

    @property
    def taken(self) -> int:
        return self.done + self.failed + self.staged

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "waiting"}


class InboundPipeline:
    """Polls one file system and publishes what it finds (see the module documentation)."""

    def __init__(
        self,
        *,
        name: str,
        fs: FileSystem,
        settings: InboundSettings,
        state: FileState,
        context: AdapterContext,
        local: LocalCopy,
        format: Callable[[], FormatIndicator | None],
        claims_dir: Path,
    ):
        self.name = name
        self.fs = fs
        self.s = settings
        self.state = state
        self.context = context
        self.local = local
        self._format = format
        self.claims_dir = claims_dir
        self.log = context.logger if context is not None else logging.getLogger(f"coupler.adapter.{name}")
        self.readiness: Readiness = readiness_for(settings.stable_seconds, settings.selection.done_suffix)
        self.splitter: Splitter = splitter_for(settings.payload, where=f"adapters[{name}].options")
        self.lock = threading.Lock()  # one poll at a time (poller thread and fetch command)
        self.totals = PollResult()
        self.skip = frozenset({settings.archive_dir, settings.error_dir})
        #: set when the daemon drains: the poll in progress stops before its next file
        self.halt = threading.Event()
        #: entries reported as left alone (not regular files), so each is reported once
        self._irregular_reported: set[str] = set()
        #: sub-directories reported as not listable, so each is reported once while it stays
        self._unlisted_reported: set[str] = set()
        #: files that could not be read for want of permission (path -> size and mtime listed):
        #: reported once, and again only once they changed or were read
        self._unreadable: dict[str, tuple[int, int]] = {}

    # -- the poll ---------------------------------------------------------------------------

    def poll(self, max_files: int | None = None) -> PollResult:
        with self.lock:
            result = PollResult()
            present: set[str] = set()
            candidates: list[FileInfo] = []
            for info in self.fs.scan("", recursive=self.s.recursive, skip=self.skip):
                present.add(info.path)
                if self.s.selection.matches(info.path):
                    candidates.append(info)
            result.listed = len(candidates)
            self._report_irregular()
            ready = [f for f in candidates if self._ready(f, present)]
            self.readiness.prune(present)
            result.ready = len(ready)
            result.waiting = self.readiness.next_check_in() if len(ready) < len(candidates) else None
            for info in order_files(ready, self.s.order, max_files or self.s.max_files):
                if self.halt.is_set():
                    break
                try:
                    self._take(info, result)
                    self._unreadable.pop(info.path, None)
                except (ConnectionError, EOFError, RemoteError):
                    raise  # the server is gone: the whole poll is retried after a backoff
                except FileChanged as exc:  # a writer still at work: not ready yet, not an error
                    self.log.info("%s: %s is taken again once stable: %s", self.name, path_shown(info.path), exc.strerror)
                except PermissionError as exc:  # the daemon (the SSH login) may not read it
                    self._report_unreadable(info, exc, result)
                except (OSError, CouplerError) as exc:  # one bad file does not stop the others
                    result.errors += 1
                    self.log.warning("%s: %s could not be taken (will retry): %s", self.name, path_shown(info.path), exc)
                except Exception as exc:  # nor does a bug met while taking it
                    result.errors += 1
                    self.log.debug("%s: taking %s raised", self.name, info.path, exc_info=True)
                    self.log.warning("%s: %s could not be taken (will retry): %s", self.name, path_shown(info.path),
                                     UnitError.of(exc))
            self._unreadable = {p: v for p, v in self._unreadable.items() if p in present}
            for k in ("done", "failed", "staged", "messages", "invalid", "listed", "errors"):
                setattr(self.totals, k, getattr(self.totals, k) + getattr(result, k))
            return result

    def _ready(self, info: FileInfo, present: set[str]) -> bool:
        if self._known(info) is not None:
            return True  # seen before (e.g. a restart in the middle): no need to wait again
        return self.readiness.ready(info, present)

    def _known(self, info: FileInfo) -> Any:
        records = self.state.find(path_text(info.path), info.size, info.mtime_ns)
        return records[0] if records else None

    def _take(self, info: FileInfo, result: PollResult) -> None:
        if not self.local.owned:  # read in place: one already changed since the listing gets no record
            self._unchanged(info)
        known = self._known(info)
        local: Path | None = None
        if known is not None and not self.s.checksum:
            key = known.key
        elif not self.s.checksum:
            key = FileKey(info.path, info.size, info.mtime_ns)
        else:
            try:
                local = self.local.fetch(info)
                key = FileKey(info.path, info.size, info.mtime_ns, _sha256(self._open(local, info)))
            except FileNotFoundError:  # taken and moved away by another daemon meanwhile
                self.local.discard(info)
                return
        record = self.state.begin(key)  # a claim: on a multi-node site, one daemon wins it
        if record is None:
            self.log.debug("%s: %s is being taken by another daemon", self.name, key)
            if local is not None:
                self.local.discard(info)
            return
        if record.state != PROCESSING and self._finish_known(info, key, record.state, record.detail):
            if local is not None:
                self.local.discard(info)
            return
        if local is None:
            local = self.local.fetch(info)
        try:
            if self.s.batch_threshold_bytes and info.size > self.s.batch_threshold_bytes:
                self._stage_for_batch(info, key, local)
                result.staged += 1
                return
            if self.s.validate_first and not isinstance(self.splitter, WholeSplitter) and record.published == 0:
                with self._open(local, info) as f:
                    for _ in self.splitter.split(f, f"{self.fs.label}/{path_shown(info.path)}"):
                        pass
            result.messages += self._publish(info, key, local, record.published, result)
        except (OSError, EOFError, RemoteError, FileClaimLost, sqlite3.Error):
            raise  # not this file's fault (I/O, the seen-state): taken again by the next poll
        except (PayloadError, UnitError) as exc:
            self._unchanged(info)  # a record cut by a writer still at work is not the file's fault
            self._fail(info, key, exc)
            result.failed += 1
            return
        except CouplerError:
            raise  # the bus refused the publish (its store, a stop): retried by the next poll
        except Exception as exc:  # anything else this file makes a splitter or translator raise
            self.log.debug("%s: %s raised", self.name, info.path, exc_info=True)
            self._unchanged(info)
            self._fail(info, key, UnitError.of(exc, where=f"{self.fs.label}/{path_shown(info.path)}"))
            result.failed += 1
            return
        self._unchanged(info)  # appended to after it was read: not moved away with the rest unread
        self.state.set_state(key, PUBLISHED)
        self._after_success(info)
        self.state.set_state(key, DONE)
        self.local.discard(info)
        result.done += 1
        self.log.info("%s: took %s", self.name, key)

    def _fail(self, info: FileInfo, key: FileKey, exc: CouplerError) -> None:
        """A file that cannot be published goes to the error directory with the reason."""
        reason = path_text(str(exc))  # it may quote the name: a store and a file hold UTF-8
        self.log.warning("%s: %s goes to %s/: %s", self.name, path_shown(info.path), self.s.error_dir, reason)
        self.state.set_state(key, FAILED, reason)
        self._after_failure(info, key, reason)
        self.local.discard(info)

    def _finish_known(self, info: FileInfo, key: FileKey, state: str, detail: str | None) -> bool:
        """A file the state knows: finish what a crash interrupted; True when nothing is left."""
        if state in (DONE, PUBLISHED):
            self.log.info("%s: %s was published before; finishing it without publishing again", self.name, key)
            self._after_success(info)
            self.state.set_state(key, DONE)
            return True
        if state == FAILED:
            self._after_failure(info, key, detail or "failed before")
            return True
        if state == STAGED:
            if self.fs.exists(info.path):  # staged, then interrupted before the source was finished
                self._after_success(info)
            return True
        return False  # PROCESSING: resume

    # -- publishing -------------------------------------------------------------------------

    def _format_for(self) -> FormatIndicator:
        fmt = self._format()
        content_type = self.s.payload.content_type or self.splitter.content_type
        if fmt is None:
            text = self.s.format or "coupler.File@1"
            fmt = FormatIndicator.parse(text, content_type)
        elif self.s.payload.content_type or fmt.content_type == "avro/binary":
            fmt = fmt.with_content_type(content_type)
        return fmt

    def _properties(self, info: FileInfo, key: FileKey) -> dict[str, str]:
        props = {
            # one trace per file (the same one when the file is read again after a restart):
            # its records and everything derived from them follow it
            TRACEPARENT: TraceContext.for_key(self.message_id(key, -1)).header,
            "file.name": path_text(info.name),
            "file.path": path_text(info.path),
            "file.size": str(info.size),
            "file.mtime": datetime.fromtimestamp(info.mtime_ns / 1e9, UTC).isoformat(),
            "file.source": self.fs.label,
        }
        if key.checksum:
            props["file.sha256"] = key.checksum
        return props

    def message_id(self, key: FileKey, index: int) -> str:
        """The id of the ``index``-th message of a file (-1: the file's trace and sequence):
        the RFC 4122 version 5 UUID of the adapter, the file and the index."""
        return name_id(_NAMESPACE_BYTES, f"{self._id_prefix(key)}{index}")

    def _id_prefix(self, key: FileKey) -> str:
        return f"{self.name}|{key.path}|{key.size}|{key.mtime_ns}|{key.checksum}|"

    def _send(self, envelope: Envelope, info: FileInfo, result: PollResult | None) -> int:
        """Publish one message; 0 when the bus refused it as invalid (it is in the Invalid
        Message Channel with the reason: the file goes on)."""
        try:
            self.context.publish(envelope)
        except InvalidMessage as exc:
            self.log.warning("%s: a message of %s is invalid: %s", self.name, path_shown(info.path), exc)
            if result is not None:
                result.invalid += 1
            return 0
        return 1

    def _publish(self, info: FileInfo, key: FileKey, local: Path, start: int, result: PollResult | None = None) -> int:
        fmt = self._format_for()
        props = self._properties(info, key)
        sequence_id = self.message_id(key, -1)
        if isinstance(self.splitter, WholeSplitter):
            if start > 0:
                return 0
            if info.size > self.s.claim_check_bytes and self.local.owned:  # a download of ours: moved
                claim = store_claim(self.claims_dir, local, move=True)
                props |= {CLAIM_PROPERTY: str(claim), CLAIM_SIZE_PROPERTY: str(info.size)}
                body = b""
            elif info.size > self.s.claim_check_bytes:
                with self._open(local, info) as f:
                    claim, _ = write_claim(self.claims_dir, iter(lambda: f.read(1 << 20), b""))
                    try:
                        self._read_whole(f, local, info)
                    except BaseException:
                        claim.unlink(missing_ok=True)
                        raise
                props |= {CLAIM_PROPERTY: str(claim), CLAIM_SIZE_PROPERTY: str(info.size)}
                body = b""
            else:
                with self._open(local, info) as f:
                    body = f.read()
                    self._read_whole(f, local, info)
            sent = self._send(Envelope(format=fmt, body=body, message_id=self.message_id(key, 0), properties=props), info, result)
            self.state.progress(key, 1)
            return sent
        published = 0
        # the records of a batch: made into envelopes at once (Envelope.many: the headers they
        # share checked once)
        bodies: list[bytes] = []
        ids: list[str] = []
        places: list[dict[str, str]] = []
        sequences: list[Sequence | None] = []
        size = 0
        id_prefix = self._id_prefix(key)
        with self._open(local, info) as f:
            it = self.splitter.records(f, f"{self.fs.label}/{path_shown(info.path)}")
            current = next(it, None)
            index = 0
            while current is not None:
                following = next(it, None)
                if index >= start:
                    offset, body = current
                    # the record as a user counts it: numbered from 1, at its file byte offset
                    place = {**props, "record.number": str(index + 1)}
                    if offset is not None:
                        place["record.offset"] = str(offset)
                    bodies.append(body)
                    ids.append(name_id(_NAMESPACE_BYTES, f"{id_prefix}{index}"))
                    places.append(place)
                    sequences.append(Sequence(sequence_id, index, end=following is None))
                    size += len(body)
                    if len(bodies) >= PUBLISH_BATCH or size >= PUBLISH_BATCH_BYTES or following is None:
                        batch = Envelope.many(fmt, bodies, message_ids=ids, properties=places, sequences=sequences)
                        published += self._send_many(batch, info, result)
                        self.state.progress(key, index + 1)
                        bodies, ids, places, sequences, size = [], [], [], [], 0
                current = following
                index += 1
        return published

    # -- reading the file as it was listed -----------------------------------------------------

    def _open(self, local: Path, info: FileInfo) -> Any:
        """The file to read, refused if it is no longer a regular file (a FIFO or link put in
        its place) or, read in place, if it changed since it was listed."""
        return open_regular(local, None if self.local.owned else info)

    def _read_whole(self, f: Any, local: Path, info: FileInfo) -> None:
        """After reading ``f`` to its end: the file read in place still is as listed."""
        if not self.local.owned:
            check_listed(os.fstat(f.fileno()), info, local)

    def _unchanged(self, info: FileInfo) -> None:
        """Raise :class:`FileChanged` when the listed file is gone or changed (a writer still at
        work: it is taken again once stable, never moved away half-read or failed for it)."""
        current = self.fs.stat(info.path)
        if current is None:
            raise FileChanged(2, "removed while it was being taken", info.path)
        if (current.size, current.mtime_ns) != (info.size, info.mtime_ns):
            raise changed(info, current.size, info.path)

    def _report_irregular(self) -> None:
        """Report, once while they stay, the entries the last listing left alone: those that are
        not regular files, and sub-directories that could not be listed (their files are not
        taken; the others are)."""
        irregular: dict[str, str] = getattr(self.fs, "irregular", {})
        for path in sorted(set(irregular) - self._irregular_reported):
            self.log.warning("%s: %r is %s: left alone (only regular files are taken)", self.name, path, irregular[path])
        self._irregular_reported = set(irregular)
        unlisted: dict[str, str] = getattr(self.fs, "unlisted", {})
        for path in sorted(set(unlisted) - self._unlisted_reported):
            self.log.warning("%s: cannot list %s/%s: %s: its files are left alone (give %s read and search "
                             "permission on it)", self.name, self.fs.label, path_shown(path), unlisted[path],
                             getattr(self.fs, "reader", "the daemon's user"))
        self._unlisted_reported = set(unlisted)

    def _report_unreadable(self, info: FileInfo, exc: PermissionError, result: PollResult) -> None:
        """A file the daemon may not read: one warning (and one error counted) while it stays as
        it was listed; the polls after it try it again quietly (a changed file, or one read
        since, is reported again)."""
        listed = (info.size, info.mtime_ns)
        if self._unreadable.get(info.path) == listed:
            self.log.debug("%s: %s still cannot be read: %s", self.name, path_shown(info.path), exc)
            return
        self._unreadable[info.path] = listed
        result.errors += 1
        self.log.warning("%s: cannot read %s/%s: %s: taken once it may be read, reported again if it changes "
                         "(give %s read permission on it)", self.name, self.fs.label, path_shown(info.path),
                         exc.strerror or exc, getattr(self.fs, "reader", "the daemon's user"))

    def _send_many(self, envelopes: list[Envelope], info: FileInfo, result: PollResult | None) -> int:
        """Publish records of a file in one transaction of the store (one disk sync for the
        batch) when the bus offers it; how many it took (the others are in the Invalid
        Message Channel with the reason: the file goes on)."""
        publish_many = getattr(self.context, "publish_many", None)
        if publish_many is None:
            return sum(self._send(e, info, result) for e in envelopes)
        refused = sum(1 for i in publish_many(envelopes) if i is None)
        if refused:
            self.log.warning("%s: %d messages of %s are invalid (see the Invalid Message Channel)",
                             self.name, refused, path_shown(info.path))
            if result is not None:
                result.invalid += refused
        return len(envelopes) - refused

    def _stage_for_batch(self, info: FileInfo, key: FileKey, local: Path) -> None:
        assert self.s.batch_dir is not None
        batch_dir = self.s.batch_dir
        staged = store_claim(batch_dir, local, move=self.local.owned, suffix=info.name)
        detail = {
            "path": str(staged), "source": f"{self.fs.label}/{path_text(info.path)}", "size": info.size,
            "payload": self.s.payload.mode,
            "copybook": str(self.s.payload.copybook) if self.s.payload.copybook else None,
            "record_length": self.s.payload.record_length,
        }
        self.context.publish(Envelope(
            format=FormatIndicator.parse(self.s.batch_format, "application/json"),
            body=json.dumps(detail, sort_keys=True).encode(),
            kind=MessageKind.EVENT,
            message_id=self.message_id(key, 0),
            properties={**self._properties(info, key), "batch.path": str(staged)},
        ))
        self.state.set_state(key, STAGED, str(staged))
        self._after_success(info)
        self.local.discard(info)
        self.log.info("%s: %s staged for batch as %s", self.name, key, staged)

    # -- after the file ---------------------------------------------------------------------

    def _after_success(self, info: FileInfo) -> None:
        if self.s.after == "keep":
            return
        if self.s.after == "delete":
            self.fs.remove(info.path)
            self._remove_companions(info.path)
            return
        folder = self.s.archive_dir
        if self.s.archive_dated:
            folder = posixpath.join(folder, time.strftime("%Y-%m-%d", time.gmtime()))
        if self._move(info.path, folder) is not None:
            self._remove_companions(info.path)

    def _remove_companions(self, path: str) -> None:
        """Remove what the readiness strategy put beside a file (its done marker)."""
        for companion in self.readiness.companions(path):
            self.fs.remove(companion)

    def _after_failure(self, info: FileInfo, key: FileKey, reason: str) -> None:
        target = self._move(info.path, self.s.error_dir)
        if target is None:
            return
        text = (
            f"file: {self.fs.label}/{path_shown(info.path)}\nsize: {key.size}\nmtime_ns: {key.mtime_ns}\n"
            f"failed_at: {datetime.now(UTC).isoformat()}\nadapter: {self.name}\nreason: {reason}\n"
        )
        write_file(self.fs, _fitting(target, self.s.selection.reason_suffix), [text.encode()], policy="unique")
        self._remove_companions(info.path)

    def _move(self, path: str, folder: str) -> str | None:
        """Move ``path`` into ``folder`` under a free name; None when it is gone already."""
        if not self.fs.exists(path):
            return None
        self.fs.makedirs(folder)
        rel_in_root = path if self.s.recursive else posixpath.basename(path)
        target = posixpath.join(folder, rel_in_root)
        parent = posixpath.dirname(target)
        if parent != folder:
            self.fs.makedirs(parent)
        from .writer import unique_candidates

        for candidate in unique_candidates(target):  # a name clash never stops the adapter
            if self.fs.same_file(path, candidate):  # a crash cut the move between link and unlink
                self.fs.remove(path)
                self.fs.sync_dir(posixpath.dirname(path))
                return candidate
            if self.fs.rename_noreplace(path, candidate):
                self.fs.sync_dir(parent)
                return candidate
            if not self.fs.exists(path):
                return None
        return None  # pragma: no cover - unique_candidates is endless


#: the longest file name most file systems take (bytes)
NAME_MAX = 255


def _fitting(path: str, suffix: str) -> str:
    """``path + suffix``, its name cut (on a character boundary, with room for the ``-N`` of a
    unique name) when it would be longer than :data:`NAME_MAX` bytes."""
    parent, name = posixpath.split(path)
    room = NAME_MAX - len(suffix.encode()) - 4
    if len((name + suffix).encode("utf-8", "surrogateescape")) > NAME_MAX:  # a name's bytes, UTF-8 or not
        name = name.encode("utf-8", "surrogateescape")[:room].decode("utf-8", "ignore")
    return posixpath.join(parent, name + suffix)


def _sha256(f: Any) -> str:
    h = hashlib.sha256()
    with f:
        while block := f.read(1 << 20):
            h.update(block)
    return h.hexdigest()
