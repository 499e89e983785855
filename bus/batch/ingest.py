"""Batch ingestion: the files an adapter staged for batch -> Spark -> outputs -> event.

The file-drop and SFTP adapters hand files over ``batch_threshold_bytes`` to the batch job:
they move them into their ``batch_dir`` (state ``STAGED``) and publish a
``coupler.batch.StagedFile@1`` event. :func:`ingest` takes what is in that folder:

1. the staged files (not hidden, not ``*.part``) form a batch whose id is a hash of their
   names and sizes, so a rerun over the same files is the same batch;
2. the batch is translated on Spark to ``<data_dir>/batch/<adapter>/<batch id>/data``
   (or ``output``), replacing any earlier attempt, committed atomically; bad records go to
   ``.../errors`` with their reasons;
3. a ledger ``.../batch.json`` records the committed outputs and counts;
4. the ``coupler.BatchCompleted@1`` event is published (its message id derives from the
   batch id, so a repeat is dropped by an Idempotent Receiver);
5. only then are the inputs moved to ``<batch_dir>/archive/<batch id>/``, and the ledger
   marked ``archived``.

A job killed at any point leaves the inputs where they were (or, after step 3, a ledger
that the next run completes first: publish, archive), so running it again produces the
complete output once. One ingestion per source runs at a time (a lock file in
``<data_dir>/batch/<adapter>/``); the Spark session starts only when there is work.
:func:`pending` tells, without Spark, whether a run would have anything to do.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from coupler.bus.batch.jobs import BatchError, BatchResult, Spec, check_specs, translate
from coupler.bus.config.loader import SiteConfig, load_site
from coupler.bus.transport.private import private_dir
from coupler.canonical.envelope import Envelope, MessageKind
from coupler.canonical.format import FormatIndicator

log = logging.getLogger(__name__)

EVENT_FORMAT = "coupler.BatchCompleted@1"
LEDGER = "batch.json"


def staged_files(batch_dir: Path) -> list[Path]:
    """The files waiting in a batch folder, by name."""
    if not batch_dir.is_dir():
        return []
    return sorted(
        p for p in batch_dir.iterdir()
        if p.is_file() and not p.name.startswith((".", "_")) and not p.name.endswith((".part", ".tmp"))
    )


def batch_id_of(files: list[Path]) -> str:
    h = hashlib.sha256()
    for f in files:
        h.update(f"{f.name}\0{f.stat().st_size}\n".encode())
    return h.hexdigest()[:16]


def _adapter(site: SiteConfig, name: str) -> Any:
    for ad in site.adapters:
        if ad.name == name:
            return ad
    known = ", ".join(a.name for a in site.adapters) or "none"
    raise BatchError(f"no adapter named {name!r} in {site.path}", where="--source", hint=f"adapters: {known}")


def batch_root(site: SiteConfig, source: str) -> Path:
    """Where the batches of ``source`` keep their outputs, ledgers and lock."""
    return site.data_dir / "batch" / source


def batch_dir_of(site: SiteConfig, source: str) -> Path:
    """The staging folder (``batch_dir``) of adapter ``source``."""
    adapter = _adapter(site, source)
    if not adapter.options.get("batch_dir"):
        raise BatchError(
            f"adapter {source!r} stages nothing for batch", where=f"{adapter.key_path}.options.batch_dir",
            hint="set batch_dir and batch_threshold_bytes on the adapter",
        )
    return _site_relative(site, str(adapter.options["batch_dir"]))


def _committed(root: Path) -> list[Path]:
    """Ledgers of batches an earlier run committed but did not publish and archive."""
    return [
        ledger for ledger in sorted(root.glob(f"*/{LEDGER}"))
        if json.loads(ledger.read_text()).get("state") == "committed"
    ]


def pending(site: SiteConfig, source: str) -> list[Path]:
    """What a run for ``source`` would take: the staged files, and the ledgers of committed
    batches it would complete first (no Spark needed)."""
    return [*_committed(batch_root(site, source)), *staged_files(batch_dir_of(site, source))]


@contextlib.contextmanager
def source_lock(site: SiteConfig, source: str) -> Iterator[None]:
    """Hold the lock of ``source``'s ingestion; a second one fails at once naming the holder."""
    root = private_dir(batch_root(site, source))
    path = root / ".lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
            raise BatchError(
                f"a batch ingestion of {source!r} is already running (pid {holder})", where=str(path),
                hint="wait for it to finish; the daemon runs one job per source at a time",
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock


def _site_relative(site: SiteConfig, value: str) -> Path:
    p = Path(value)
    return p if p.is_absolute() else (site.path.parent / p).resolve()


def _event(result: BatchResult, source: str, batch_id: str) -> Envelope:
    from coupler.canonical.registry import SchemaRegistry

    record = {
        "batch_id": batch_id,
        "source": source,
        "inputs": result.archived or result.inputs,
        "from_spec": result.from_spec,
        "to_spec": result.to_spec,
        "records": result.records,
        "errors": result.errors,
        "outputs": [result.output],
        "errors_output": result.errors_output,
        "started_at": int(result.started_at * 1000),
        "duration_ms": int(result.duration * 1000),
    }
    body = SchemaRegistry.default().encode(record, EVENT_FORMAT)
    return Envelope(
        format=FormatIndicator.parse(EVENT_FORMAT),
        body=body,
        kind=MessageKind.EVENT,
        message_id=str(uuid.uuid5(uuid.NAMESPACE_URL, f"coupler:batch:{source}:{batch_id}")),
        origin=f"batch:{source}",
        properties={"batch.id": batch_id, "batch.source": source},
    )


def _publish(site: SiteConfig, channel: str, envelope: Envelope) -> str:
    from coupler.bus.transport.factory import open_transport

    transport = open_transport(site)
    try:
        (message_id,) = transport.send(channel, envelope, component="batch")
    finally:
        transport.close()
    return message_id


def _write_ledger(folder: Path, data: dict[str, Any]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".{LEDGER}.tmp"
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
    with open(tmp, "rb+") as fh:
        os.fsync(fh.fileno())
    os.replace(tmp, folder / LEDGER)


def _archive(inputs: list[str], archive_dir: Path) -> list[str]:
    archive_dir.mkdir(parents=True, exist_ok=True)
    moved = []
    for p in inputs:
        src = Path(p)
        target = archive_dir / src.name
        if src.exists():
            os.replace(src, target)
        moved.append(str(target))
    return moved


def _finish(site: SiteConfig, ledger_dir: Path, channel: str) -> BatchResult:
    """Publish and archive a committed batch (the end of a run, or of a killed one)."""
    data = json.loads((ledger_dir / LEDGER).read_text())
    result = BatchResult(**{k: v for k, v in data["result"].items() if k in BatchResult.__dataclass_fields__})
    result.archived = [str(Path(data["archive_dir"]) / Path(p).name) for p in result.inputs]
    if not data.get("published"):
        result.event_id = _publish(site, channel, _event(result, data["source"], data["batch_id"]))
        data["published"] = result.event_id
        _write_ledger(ledger_dir, data)
    result.event_id = data["published"]
    _archive(result.inputs, Path(data["archive_dir"]))
    data["state"] = "archived"
    _write_ledger(ledger_dir, data)
    return result


def ingest(
    site_path: str | os.PathLike[str],
    source: str,
    *,
    spark: Any = None,
    session: Callable[[], Any] | None = None,
    master: str | None = "local[*]",
    from_spec: str | None = None,
    to_spec: str = "parquet",
    output: str | None = None,
    options: Mapping[str, str] | None = None,
    channel: str | None = None,
    mapping: str | None = None,
    schema_dirs: list[str] | None = None,
) -> list[BatchResult]:
    """Ingest what adapter ``source`` of the site staged for batch; one result per batch run.

    Spark is used only when files are staged: ``spark`` (a session), else ``session()``
    (a function returning one), else a new local session on ``master``. Raises
    :class:`BatchError` when another ingestion of ``source`` holds its lock.
    """
    site = load_site(site_path)
    adapter = _adapter(site, source)
    opts = adapter.options
    batch_dir = batch_dir_of(site, source)
    root = batch_root(site, source)
    channel = channel or adapter.channel or "batch.events"
    with source_lock(site, source):
        results: list[BatchResult] = []
        # complete batches an earlier run committed but did not archive
        for ledger in _committed(root):
            log.info("completing batch %s committed by an earlier run", ledger.parent.name)
            results.append(_finish(site, ledger.parent, channel))
        files = staged_files(batch_dir)
        if not files:
            return results
        if from_spec is None:
            copybook = opts.get("copybook")
            if not copybook:
                raise BatchError(
                    f"adapter {source!r} has no copybook; say what the staged files are", where="--from",
                    hint="pass --from copybook:FILE.cpy (or another SPEC)",
                )
            from_spec = f"copybook:{_site_relative(site, str(copybook))}"
            if opts.get("record_length") and not (options or {}).get("record_length"):
                options = {**(options or {}), "record_length": str(opts["record_length"])}
        src, dst = Spec.parse(from_spec, where="--from"), Spec.parse(to_spec, where="--to")
        batch_id = batch_id_of(files)
        ledger_dir = root / batch_id
        out = output.rstrip("/") + f"/{batch_id}" if output else str(ledger_dir / "data")
        started = time.time()
        schema_dirs = [*map(str, site.schema_paths), *(schema_dirs or [])]
        schema_roots = [str(r) for r in site.schema_roots]
        # what the job loads, before Spark's JVM starts: a schema it may not read is one line at once
        check_specs(src, dst, options=options, mapping=mapping, schema_dirs=schema_dirs, schema_roots=schema_roots)
        if spark is None:
            if session is None:
                from coupler.bus.batch.jobs import spark_session

                spark = spark_session(master, app_name=f"coupler-ingest-{source}")
            else:
                spark = session()
        result = translate(
            spark, src, dst, [str(f) for f in files], out, options=options, mapping=mapping,
            errors_output=str(ledger_dir / "errors"),
            schema_dirs=schema_dirs, schema_roots=schema_roots,
        )
        result.batch_id = batch_id
        result.started_at = started
        result.duration = time.time() - started
        _write_ledger(ledger_dir, {
            "state": "committed", "batch_id": batch_id, "source": source,
            "archive_dir": str(batch_dir / "archive" / batch_id), "result": result.to_json(),
        })
        results.append(_finish(site, ledger_dir, channel))
        return results
