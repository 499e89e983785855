"""Atomic output for the writer data sources: stage, then publish by renaming.

A write job gets an id on the driver. Each task of a writer data source writes its
partition to ``<staging>/<job id>/part-<partition>-<job id>.<ext>.attempt-<attempt>``; a
split job (:func:`.direct.run_split_job`) writes each split it claims to
``part-<split>-<job id>.<ext>.run-<random>`` and keeps its claims in ``claims/`` there.
``<staging>`` is a hidden folder beside the output (``.<name>.staging``), never inside it.
When every task has succeeded, :meth:`OutputCommitter.commit` on the driver removes what
else is in the job's folder (failed or dropped attempts, claims), gives the files of the
successful attempts their final names, and moves them into place:

* the output folder does not exist yet (the usual case): the staged job folder, holding
  exactly the committed files and ``_SUCCESS``, is renamed to the output path in one
  ``rename`` -- the output appears complete or not at all;
* ``overwrite``: the old output is first renamed aside, the new one renamed in, the old one
  removed;
* ``append``: the committed files are renamed into the existing folder one by one (each
  rename is atomic; the job id in their names keeps them from colliding).

:meth:`OutputCommitter.abort` (a task failed) removes the job's staging folder. A driver
killed before commit leaves only the hidden staging folder, which the next job on the same
output removes (``cleanup_stale``). Readers look for ``_SUCCESS``, which lists the job's files and its record count.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from coupler.canonical.errors import CouplerError

SUCCESS_MARKER = "_SUCCESS"


class OutputExistsError(CouplerError):
    """The output path exists and the write mode is neither overwrite nor append."""


class CommitError(CouplerError):
    """A job's output could not be published whole (nothing of it was)."""


@dataclass
class TaskFile:
    """The commit message of one task: the staged file and the name it is published under."""

    staged: str
    final_name: str
    records: int
    bytes: int


def task_files(messages: Sequence[object]) -> list[TaskFile | None]:
    """The :class:`TaskFile` commit messages among what Spark hands a writer's ``commit``."""
    return [m for m in messages if isinstance(m, TaskFile)]


def _task_ids() -> tuple[int, int]:
    from pyspark import TaskContext

    ctx = TaskContext.get()
    if ctx is None:  # called outside a Spark task (tests of the committer itself)
        return 0, 0
    return ctx.partitionId(), ctx.attemptNumber()


@dataclass
class OutputCommitter:
    """Stages task files for ``output`` and publishes them on commit (picklable)."""

    output: str
    mode: str = "append"  # overwrite | append | error (refuse an existing output)
    extension: str = "dat"
    job_id: str = ""

    def __post_init__(self) -> None:
        if not self.job_id:
            self.job_id = uuid.uuid4().hex[:12]

    @property
    def staging_root(self) -> Path:
        out = Path(self.output)
        return out.parent / f".{out.name}.staging"

    @property
    def job_dir(self) -> Path:
        return self.staging_root / self.job_id

    def check_target(self) -> None:
        """Refuse an existing output unless overwriting or appending (on the driver, before the job)."""
        out = Path(self.output)
        if self.mode not in ("overwrite", "append") and out.exists():
            raise OutputExistsError(
                f"output {out} already exists",
                where=str(out),
                hint="remove it, or write with mode overwrite or append",
            )
        out.parent.mkdir(parents=True, exist_ok=True)
        self.cleanup_all()
        self.job_dir.mkdir(parents=True, exist_ok=True)

    def task_path(self, split: int | None = None) -> tuple[Path, str]:
        """The staging file of the running task attempt and its published name: named for
        the task's partition, or for ``split`` when a task writes one file per split it
        claims (:func:`.direct.run_split_job`; the staging name then unique to this run of
        the split, since a later job stage may run the same split again)."""
        if split is not None:  # the driver made the job's folder: a late attempt after the commit finds none
            final = f"part-{split:05d}-{self.job_id}.{self.extension}"
            return self.job_dir / f"{final}.run-{uuid.uuid4().hex[:12]}", final
        if not self.job_dir.is_dir():  # made by the driver (check_target): never again by a task
            # a task still running when its failed job was aborted would make it again, and
            # leave the staging folder behind the abort
            raise CommitError(f"the job's staging folder {self.job_dir} is gone: the job was aborted, or this "
                              "executor does not see the driver's file system", where=self.output,
                              hint="write to a file system every executor shares with the driver")
        partition, attempt = _task_ids()
        final = f"part-{partition:05d}-{self.job_id}.{self.extension}"
        return self.job_dir / f"{final}.attempt-{attempt}", final

    def commit(self, messages: Sequence[TaskFile | None]) -> list[str]:
        """Publish the files of the successful task attempts; the published paths."""
        out = Path(self.output)
        files = [m for m in messages if m is not None]
        for m in files:
            os.replace(m.staged, self.job_dir / m.final_name)
        # the rest: failed or speculative attempts, a split job's claims
        self._only(self.job_dir, {m.final_name for m in files})
        published = [str(out / m.final_name) for m in files]
        manifest = json.dumps({
            "job": self.job_id,
            "files": [m.final_name for m in files],
            "records": sum(m.records for m in files),
            "bytes": sum(m.bytes for m in files),
        }, indent=1)
        if self.mode == "append" and out.exists():
            for m in files:
                os.replace(self.job_dir / m.final_name, out / m.final_name)
            (out / SUCCESS_MARKER).write_text(manifest)
            _remove(self.job_dir)
        else:
            (self.job_dir / SUCCESS_MARKER).write_text(manifest)
            self.job_dir.parent.mkdir(parents=True, exist_ok=True)
            old = None
            if out.exists():
                old = self.staging_root / f"old-{self.job_id}"
                os.replace(out, old)
            os.replace(self.job_dir, out)
            if old is not None:
                _remove(old)
        self.cleanup_stale()
        return published

    def _only(self, folder: Path, names: set[str]) -> None:
        """Remove from ``folder`` what is not ``names``, again while something is left (an
        attempt Spark was still stopping may write meanwhile); refuse to publish what cannot
        be removed."""
        for _ in range(3):
            stray = [p for p in folder.iterdir() if p.name not in names] if folder.exists() else []
            if not stray:
                return
            for p in stray:
                _remove(p)
        raise CommitError(f"the job's staging folder still holds {sorted(p.name for p in stray)[:3]}",
                          where=str(folder), hint="a task of this job is still writing: run the job again")

    def abort(self, messages: Sequence[TaskFile | None] = ()) -> None:
        """Remove everything this job staged."""
        _remove(self.job_dir)
        self.cleanup_stale()

    def cleanup_stale(self) -> None:
        """Remove the staging folder when no job uses it any more."""
        root = self.staging_root
        if root.exists() and not any(root.iterdir()):
            _remove(root)

    def cleanup_all(self) -> None:
        """Remove the staging folders of earlier jobs (a driver killed before commit)."""
        root = self.staging_root
        if root.exists():
            for p in root.iterdir():
                if p.name != self.job_id:
                    _remove(p)


def read_manifest(output: str | Path) -> dict[str, object] | None:
    """What a committed job wrote (``_SUCCESS``): files, records, bytes; None when not committed."""
    marker = Path(output) / SUCCESS_MARKER
    try:
        return dict(json.loads(marker.read_text() or "{}"))
    except (OSError, ValueError):
        return None


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)
