"""XML files of repeated records decoded by several worker processes, the output in file order.

``coupler xml decode --record-path ROOT/ELEM --jobs N``: each file is cut at record
boundaries (:func:`.splits.plan_xml_splits`, the planner of Spark's XML source), each split
(a well-formed document of its own, :class:`.splits.SplitStream`) is decoded by one of ``N``
worker processes, and the parent writes the splits' records in split order: for an Avro
file, the records each worker encoded, cut into the blocks one process would cut them into
(:meth:`.avro.ContainerWriter.write_encoded`); for JSON lines, the lines. The decoder is
Python, so the workers are processes, not threads; each builds the schema's decoder once
(forked from the parent that built it, or the pool's initializer), not once per split. At most ``2 N`` splits are decoded or waiting
to be written at a time, so the parent's memory does not grow with the file.

Errors are the one process's. When a worker reports any error for a split (a bad value, a
split that is not well-formed), the parent, having written the splits before it, decodes
that file again itself from its start, skipping the records already written, and goes on
with it to its end: the records written and the error raised are those of ``--jobs 1``,
found by the same code. A worker that dies (killed, out of memory) ends the command with a
:class:`DecodeWorkerError` naming the file and its bytes being decoded; the pool's other
workers are stopped, nothing waits for them.
"""

from __future__ import annotations

import io
import multiprocessing
import os
import signal
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coupler.canonical.errors import CouplerError

from .splits import XML_SPLIT_BYTES, XmlSplit, plan_xml_job, plan_xml_splits


class DecodeWorkerError(CouplerError):
    """A worker process decoding part of a file ended without an answer."""


class SplitFailed(Exception):
    """A worker's error for a split (its text only): the parent decodes the file again to raise it."""


@dataclass(frozen=True)
class DecoderSpec:
    """What a worker needs to build the decoder (picklable): the XSD and how it is loaded,
    the root element, the record path, and the records' Avro schema for Avro output (None:
    JSON lines)."""

    xsd: str
    roots: tuple[str, ...]
    keep_xsi_types: bool
    limits: tuple[tuple[str, int], ...]
    element: str
    record_path: str
    avro_schema: Any = None


# the worker's decoder, built once by the pool's initializer
_worker: dict[str, Any] = {}


def _start_worker(spec: DecoderSpec, model: Any = None) -> None:
    """Build the decoder of ``spec`` in this process (a worker forked from a parent that built
    it already has it)."""
    if _worker.get("spec") == spec:
        return
    if model is None:
        from . import XsdModel

        model = XsdModel.load(spec.xsd, keep_simple_xsi_types=spec.keep_xsi_types, schema_roots=list(spec.roots),
                              **dict(spec.limits))
    _worker["decoder"] = model.decoder(spec.element)
    _worker["spec"] = spec


def _worker_start(spec: DecoderSpec) -> None:
    """The pool's initializer: ^C is the parent's to handle (it stops the workers), then the decoder."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _start_worker(spec)


def _context() -> Any:
    """How the workers start: as copies of this process (``fork``: nothing to import or load,
    the decoder already built) when it runs one thread, the command line's case; otherwise
    from a fork server (forking a process whose other threads may hold locks is not safe),
    each worker then building the decoder once. Native threads count (``/proc/self/task``)."""
    try:
        single = len(os.listdir("/proc/self/task")) == 1
    except OSError:  # not Linux
        single = False
    return multiprocessing.get_context("fork" if single else "forkserver")


def _decode_split(split: XmlSplit) -> tuple[Any, Any, int]:
    """In a worker: the split's records as (Avro data, record ends, count) or (JSON lines text, None, count)."""
    from .avro import encode_records
    from .jsonio import dumps
    from .splits import SplitStream

    spec: DecoderSpec = _worker["spec"]
    decoder = _worker["decoder"]
    label = split.path if not split.head and not split.tail else f"{split.path} (bytes {split.start}-{split.end})"
    stream = SplitStream(split)
    try:
        records = decoder.iter_records(io.BufferedReader(stream, 1 << 20), spec.record_path, name=label,
                                       avro_schema=spec.avro_schema)
        if spec.avro_schema is not None:
            data, ends = encode_records(spec.avro_schema, records)
            return data, ends, len(ends)
        lines = [dumps(record, decimal_numbers=True) + "\n" for record in records]
        return "".join(lines), None, len(lines)
    except Exception as exc:  # noqa: BLE001 - the parent finds the error again itself
        # as a plain exception: one the parent could not unpickle would break the pool
        raise SplitFailed(f"{type(exc).__name__}: {exc}") from None
    finally:
        stream.close()


def _stop(pool: ProcessPoolExecutor) -> None:
    """End the pool's worker processes now: a command that stops (an error, ^C) does not wait
    for splits nobody will write. ``ProcessPoolExecutor`` has no public way to end its running
    workers (``shutdown`` waits for them or leaves them running), so this reads its
    ``_processes`` (pid -> ``multiprocessing.Process``), here only."""
    processes = getattr(pool, "_processes", None) or {}
    for process in list(processes.values()):
        process.terminate()
    # A worker ended while it wrote its split's result leaves part of a message in the result
    # pipe, and the pool's thread that reads it waits for the rest for ever: ``shutdown`` and the
    # interpreter's exit join that thread, so the command hung after SIGTERM (seen in a fresh
    # clone: both `xml decode --jobs 2` cases of the SIGTERM test, the thread in
    # ``Connection._recv``). With this process's own copy of the pipe's write end closed, the
    # thread reads end of file once the workers are gone, and the pool ends as broken.
    writer = getattr(getattr(pool, "_result_queue", None), "_writer", None)
    if writer is not None:
        writer.close()


class ParallelDecode:
    """The records of ``paths`` decoded by ``jobs`` worker processes, in file order.

    ``serial(path, skip)`` is the one-process decode of a file, its records after the first
    ``skip`` (what a worker's error is confirmed and raised by); ``write(result)`` gets each
    split's (data, ends, count) in order, ``record(r)`` each record of a serial decode;
    ``done(nbytes, records)`` is called as each split or file is finished (the progress)."""

    def __init__(self, spec: DecoderSpec, paths: Sequence[Path], jobs: int, *,
                 split_bytes: int = XML_SPLIT_BYTES, model: Any = None) -> None:
        self.spec, self.paths, self.jobs, self.model = spec, list(paths), jobs, model
        self.split_bytes = split_bytes
        steps = [s for s in spec.record_path.strip("/").split("/") if s]
        element = steps[-1]
        if len(steps) == 2:
            # absolute: a fork server's workers keep the directory it started in
            absolute = [os.path.abspath(p) for p in self.paths]
            self.splits = (plan_xml_splits(absolute, element, split_bytes=split_bytes, slots=jobs) if model is None
                           else plan_xml_job(model, absolute, element, split_bytes=split_bytes, slots=jobs))
        else:  # a record deeper than the root's children: a file is one split
            self.splits = [XmlSplit(os.path.abspath(p), i, 0, p.stat().st_size, 0, "") for i, p in enumerate(self.paths)]

    def worth_it(self) -> bool:
        """Whether there are several splits for several workers, and bytes enough to pay for
        starting them: a sixteenth of a split (1 MB by default, some 70 ms of decoding)."""
        total = sum(s.end - s.start for s in self.splits)
        return self.jobs > 1 and len(self.splits) > 1 and total >= self.split_bytes // 16

    def run(self, write: Callable[[tuple[Any, Any, int]], None], serial: Callable[[Path, int], Iterator[Any]],
            record: Callable[[Any], None], done: Callable[[int, int], None]) -> None:
        context = _context()
        if context.get_start_method() == "fork":
            _start_worker(self.spec, self.model)  # the workers are copies of this process
        else:  # imported once by the fork server, not by every worker it starts
            context.set_forkserver_preload([__name__, f"{__package__}.decoder", f"{__package__}.avro"])
        pool = ProcessPoolExecutor(self.jobs, mp_context=context, initializer=_worker_start, initargs=(self.spec,))
        pending: deque[tuple[XmlSplit, Future[Any]]] = deque()
        todo = iter(self.splits)
        written = [0] * len(self.paths)  # records written of each file
        redone: set[int] = set()  # files decoded again by the parent after a worker's error
        ok = False
        try:
            while True:
                while len(pending) < 2 * self.jobs:
                    split = next(todo, None)
                    if split is None:
                        break
                    if split.file_id not in redone:
                        try:
                            pending.append((split, pool.submit(_decode_split, split)))
                        except BrokenProcessPool as exc:  # reported in its turn, as the others'
                            broken: Future[Any] = Future()
                            broken.set_exception(exc)
                            pending.append((split, broken))
                if not pending:
                    break
                split, future = pending.popleft()
                if split.file_id in redone:
                    future.cancel()
                    continue
                try:
                    result = future.result()
                except BrokenProcessPool as exc:
                    raise DecodeWorkerError(
                        "a worker process decoding this part of the file ended without an answer"
                        f" ({exc.__class__.__name__}); no --output was written",
                        where=f"{self.paths[split.file_id]} (bytes {split.start}-{split.end})",
                        hint="run again; --jobs 1 decodes in this process",
                    ) from None
                except Exception:  # noqa: BLE001 - confirmed (and raised) by the one-process decode below
                    redone.add(split.file_id)
                    for other, waiting in pending:
                        if other.file_id == split.file_id:
                            waiting.cancel()
                    path = self.paths[split.file_id]
                    count = 0
                    for item in serial(path, written[split.file_id]):
                        record(item)
                        count += 1
                    written[split.file_id] += count
                    # the rest of the file's bytes, as far as the progress goes
                    done(sum(s.end - s.start for s in self.splits if s.file_id == split.file_id
                             and s.index >= split.index), count)
                    continue
                write(result)
                written[split.file_id] += result[2]
                done(split.end - split.start, result[2])
            ok = True
        finally:
            if not ok:
                _stop(pool)
            pool.shutdown(wait=True, cancel_futures=True)
