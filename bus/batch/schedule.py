"""Batch ingestion run by the daemon: the ``[[batch]]`` entries of ``site.toml``.

:class:`BatchScheduler` runs in one daemon thread. For each job it decides when to run
``coupler batch ingest --site SITE --source ADAPTER`` (:mod:`coupler.bus.batch.ingest`):

* ``on_staged``: the adapter's ``batch_dir`` is looked at every ``poll_seconds``; a run
  starts once something is staged and unchanged between two looks (a file being moved in
  is not taken half-way);
* ``interval_seconds``: every N seconds from the last run's start;
* ``at``: daily at local times ``HH:MM``.

A run starts only when there is work (staged files, or a batch an earlier run committed
but did not finish), so a schedule costs nothing while nothing arrives. Each run is a
child process in its own process group: Spark's JVM never lives in the daemon and a crash
of the job cannot take the daemon down. One run per source at a time (and the job's own
lock keeps a hand-started ``coupler batch ingest`` out). A failed run is retried after
``retry_seconds`` while its files are still staged; a run over ``timeout_seconds`` is
killed. On shutdown a running job is terminated: ingestion is crash-safe, the next run
completes it.

Each job's standard output (the JSON summary) and standard error (its log) go to
``DATA_DIR/batch/ADAPTER/run.json`` and ``run.log``; the outcome of the last run to
``last_run.json`` there, so ``coupler ctl status`` shows it across restarts
(:meth:`BatchScheduler.status`, :func:`recorded_runs`).
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from coupler.bus.config.loader import BatchJobConfig, SiteConfig
from coupler.bus.transport.private import private_dir
from coupler.canonical.errors import CouplerError

log = logging.getLogger("coupler.batch")

LAST_RUN = "last_run.json"
#: how long a terminated job gets to exit before it is killed
KILL_GRACE_SECONDS = 10.0


def next_daily(times: tuple[str, ...] | list[str], after: float) -> float | None:
    """The first of the local times of day ``times`` (``HH:MM``) strictly after ``after``."""
    if not times:
        return None
    now = datetime.fromtimestamp(after)
    candidates = []
    for t in times:
        hour, minute = (int(x) for x in t.split(":"))
        at = now.replace(hour=hour, minute=minute, second=0, microsecond=0)
        if at.timestamp() <= after:
            at += timedelta(days=1)
        candidates.append(at.timestamp())
    return min(candidates)


def _iso(t: float | None) -> str | None:
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="seconds") if t else None


@dataclass
class JobRun:
    """One run of a batch job and its outcome."""

    source: str
    trigger: str
    started_at: float
    finished_at: float | None = None
    #: ``running``, ``succeeded``, ``failed`` or ``interrupted`` (by the daemon's shutdown)
    outcome: str = "running"
    exit_code: int | None = None
    batches: int = 0
    inputs: int = 0
    records: int = 0
    #: bytes of the inputs read
    bytes: int = 0
    errors: int = 0
    error: str | None = None
    pid: int | None = None
    events: list[str] = field(default_factory=list)

    @property
    def duration(self) -> float | None:
        return None if self.finished_at is None else self.finished_at - self.started_at

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["duration_seconds"] = None if self.duration is None else round(self.duration, 3)
        data["started"] = _iso(self.started_at)
        data["finished"] = _iso(self.finished_at)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> JobRun:
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})


def _option_text(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def ingest_command(site: SiteConfig, job: BatchJobConfig) -> list[str]:
    """The ``coupler batch ingest`` command line of ``job``."""
    cmd = [
        sys.executable, "-m", "coupler.bus.cli.main", "batch", "ingest", "--site", str(site.path),
        "--source", job.source, "--json", "--master", job.master, "--to", job.to_spec,
    ]
    output = job.output
    if output and "://" not in output:
        output = str(site.path.parent / output)  # relative to site.toml (an absolute one stays)
    for flag, value in (("--from", job.from_spec), ("--output", output), ("--channel", job.channel),
                        ("--map", str(job.mapping) if job.mapping else None)):
        if value:
            cmd += [flag, value]
    for key, value in job.options.items():
        cmd += ["-o", f"{key}={_option_text(value)}"]
    for key, value in job.conf.items():
        cmd += ["--conf", f"{key}={_option_text(value)}"]
    return cmd


def _site_spec(site: SiteConfig, text: str) -> str:
    """``text`` (a SPEC) with a relative file made relative to site.toml, as the job's run (in
    the site's folder) reads it."""
    kind, sep, rest = text.partition(":")
    if not sep or kind.strip().lower() not in ("copybook", "xml") or Path(rest).is_absolute():
        return text
    return f"{kind}:{site.path.parent / rest}"


def check_jobs(site: SiteConfig) -> None:
    """``coupler daemon --check`` of the ``[[batch]]`` jobs, without Spark: each job's source
    stages for batch, and what its run loads before the records loads
    (:func:`coupler.bus.batch.jobs.check_specs`: the mapping, the XSD of an ``xml:`` source,
    the copybook), the XSDs reading the site's schema roots (``SiteConfig.schema_roots``)
    as in the run (``coupler batch ingest``). Raises :class:`ConfigError` naming each job's key."""
    from coupler.bus.batch.ingest import _adapter, batch_dir_of
    from coupler.bus.batch.jobs import Spec, check_specs

    problems = []
    for cfg in site.batch:
        key = "source"
        try:
            batch_dir_of(site, cfg.source)
            key = "from"
            from_spec = cfg.from_spec
            if from_spec is None:
                copybook = _adapter(site, cfg.source).options.get("copybook")
                from_spec = f"copybook:{copybook}" if copybook else None
            if from_spec is None:
                problems.append(f"{cfg.key_path}.from: adapter {cfg.source!r} has no copybook; "
                                "say what the staged files are (a SPEC such as xml:FILE.xsd#ELEMENT)")
                continue
            src = Spec.parse(_site_spec(site, from_spec), where=f"{cfg.key_path}.from")
            key = "to"
            dst = Spec.parse(cfg.to_spec, where=f"{cfg.key_path}.to")
            options = {k: _option_text(v) for k, v in cfg.options.items()}
            dirs, roots = [str(p) for p in site.schema_paths], [str(r) for r in site.schema_roots]
            key = "from"
            check_specs(src, dst, options=options, schema_dirs=dirs, schema_roots=roots)
            if cfg.mapping:
                key = "mapping"  # and the reader options it adds
                check_specs(src, dst, options=options, mapping=str(cfg.mapping), schema_dirs=dirs, schema_roots=roots)
        except CouplerError as exc:
            problems.append(f"{cfg.key_path}.{key}: {exc}")
    if problems:
        raise site.config_error(problems)


def recorded_runs(site: SiteConfig) -> list[dict[str, Any]]:
    """The jobs of ``site`` with their last recorded run, as ``ctl status`` shows them when
    no daemon runs."""
    from coupler.bus.batch.ingest import batch_root

    rows = []
    for job in site.batch:
        last = _read_last(batch_root(site, job.source))
        rows.append({
            "source": job.source, "enabled": job.enabled, "state": "stopped" if job.enabled else "disabled",
            "triggers": triggers(job), "pid": None, "staged": None, "next_run": None,
            "last_run": last.to_json() if last else None,
        })
    return rows


def triggers(job: BatchJobConfig) -> list[str]:
    out = ["on staged"] if job.on_staged else []
    if job.interval_seconds:
        out.append(f"every {job.interval_seconds:g}s")
    out += [f"at {t}" for t in job.at]
    return out


def _read_last(root: Path) -> JobRun | None:
    try:
        return JobRun.from_json(json.loads((root / LAST_RUN).read_text()))
    except (OSError, ValueError, TypeError):
        return None


class _Job:
    """A job's schedule, its running process and its last run (guarded by the scheduler's lock)."""

    def __init__(self, site: SiteConfig, config: BatchJobConfig, batch_dir: Path, root: Path, now: float):
        self.site = site
        self.config = config
        self.batch_dir = batch_dir
        self.root = root
        self.last = _read_last(root)
        if self.last is not None and self.last.outcome == "running":  # the daemon died meanwhile
            self.last.outcome = "interrupted"
        start = self.last.started_at if self.last else now
        self.next_interval = start + config.interval_seconds if config.interval_seconds else None
        self.next_daily = next_daily(config.at, now)
        self.next_poll = now
        self.seen: tuple[tuple[str, int], ...] | None = None
        self.staged = 0
        #: what the succeeded runs of this daemon did in all (the metrics of `/metrics`)
        self.totals = {"runs": 0, "records": 0, "bytes": 0, "errors": 0}
        self.proc: subprocess.Popen[bytes] | None = None
        self.run: JobRun | None = None
        self.kill_at: float | None = None

    # -- deciding ----------------------------------------------------------------------------

    def _pending(self) -> tuple[tuple[str, int], ...]:
        from coupler.bus.batch.ingest import pending

        found = []
        for p in pending(self.site, self.config.source):
            try:
                found.append((str(p), p.stat().st_size))
            except FileNotFoundError:
                continue  # archived or renamed meanwhile
        return tuple(found)

    def due(self, now: float) -> str | None:
        """Why the job should start now (None: it should not)."""
        cfg = self.config
        failed = self.last is not None and self.last.outcome == "failed"
        if failed and now < (self.last.finished_at or 0) + cfg.retry_seconds:  # type: ignore[union-attr]
            return None
        reason = None
        if self.next_interval is not None and now >= self.next_interval:
            reason = "interval"
            self.next_interval = now + float(cfg.interval_seconds or 0)
        if self.next_daily is not None and now >= self.next_daily:
            reason = reason or f"at {datetime.fromtimestamp(self.next_daily):%H:%M}"
            self.next_daily = next_daily(cfg.at, now)
        poll = (cfg.on_staged or failed) and now >= self.next_poll
        if reason is None and not poll:
            return None
        self.next_poll = now + cfg.poll_seconds
        work = self._pending()
        self.staged = len(work)
        if not work:
            self.seen = None
            return None
        if reason is not None:
            return reason
        if failed:
            return "retry"
        stable = work == self.seen
        self.seen = work
        return "staged" if stable else None

    def next_run(self) -> float | None:
        """When the schedule (or the retry of a failed run) next starts the job, if known."""
        times = [t for t in (self.next_interval, self.next_daily) if t is not None]
        scheduled = min(times) if times else None
        if self.last is not None and self.last.outcome == "failed":
            retry = (self.last.finished_at or 0) + self.config.retry_seconds
            return retry if scheduled is None else max(scheduled, retry)
        return scheduled

    # -- running -----------------------------------------------------------------------------

    def start(self, trigger: str, now: float) -> None:
        private_dir(self.root)
        cmd = ingest_command(self.site, self.config)
        with open(self.root / "run.json", "wb") as out, open(self.root / "run.log", "wb") as err:
            self.proc = subprocess.Popen(
                cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL, cwd=self.site.path.parent,
                start_new_session=True,  # its own process group: Spark's JVM and workers go with it
            )
        self.run = JobRun(self.config.source, trigger, now, pid=self.proc.pid)
        self.kill_at = now + self.config.timeout_seconds if self.config.timeout_seconds else None
        self.seen = None
        self._record(self.run)
        log.info(
            "batch job %s started (%s): pid %d", self.config.source, trigger, self.proc.pid,
            extra={"batch": self.config.source, "trigger": trigger},
        )

    def check(self, now: float) -> None:
        """Collect the outcome of a finished run; kill one over its time limit."""
        assert self.proc is not None and self.run is not None
        code = self.proc.poll()
        if code is None:
            if self.kill_at is not None and now >= self.kill_at:
                log.error("batch job %s exceeded %gs: killing it", self.config.source, self.config.timeout_seconds,
                          extra={"batch": self.config.source})
                self.terminate()
                self._finish(self.proc.returncode, f"killed after the time limit of {self.config.timeout_seconds:g}s")
            return
        self._finish(code)

    def terminate(self) -> None:
        """SIGTERM to the job's process group, SIGKILL if it has not exited after the grace period."""
        assert self.proc is not None
        for sig, wait in ((signal.SIGTERM, KILL_GRACE_SECONDS), (signal.SIGKILL, None)):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(wait)
                break
            except subprocess.TimeoutExpired:
                continue
        try:  # the JVM and Python workers in the group, should the driver have gone first
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def _finish(self, code: int | None, error: str | None = None, outcome: str | None = None) -> None:
        assert self.run is not None
        run = self.run
        run.finished_at = time.time()
        run.exit_code = code
        run.pid = None
        if outcome is None:
            outcome = "succeeded" if code == 0 and error is None else "failed"
        run.outcome = outcome
        if outcome == "succeeded":
            self._summarise(run)
            self.totals["runs"] += 1
            self.totals["records"] += run.records
            self.totals["bytes"] += run.bytes
            self.totals["errors"] += run.errors
        else:
            run.error = error or self._error_line(code)
        self._record(run)
        self.last, self.run, self.proc, self.kill_at = run, None, None, None
        level = logging.INFO if outcome == "succeeded" else logging.WARNING if outcome == "interrupted" else logging.ERROR
        log.log(
            level, "batch job %s %s in %.1fs: %d batch(es), %d records, %d errors%s",
            run.source, outcome, run.duration or 0.0, run.batches, run.records, run.errors,
            f": {run.error}" if run.error else "", extra={"batch": run.source},
        )

    def _summarise(self, run: JobRun) -> None:
        try:
            results = json.loads((self.root / "run.json").read_text() or "[]")
        except (OSError, ValueError) as exc:
            run.error = f"the job succeeded but its summary cannot be read: {exc}"
            return
        run.batches = len(results)
        run.inputs = sum(len(r.get("inputs") or ()) for r in results)
        run.records = sum(int(r.get("records") or 0) for r in results)
        run.bytes = sum(int(r.get("bytes_in") or 0) for r in results)
        run.errors = sum(int(r.get("errors") or 0) for r in results)
        run.events = [r["event_id"] for r in results if r.get("event_id")]

    def _error_line(self, code: int | None) -> str:
        """The job's one-line error (``coupler: error: ...``), else the last line of its log."""
        try:
            lines = [line.strip() for line in (self.root / "run.log").read_text(errors="replace").splitlines() if line.strip()]
        except OSError:
            lines = []
        errors = [line.removeprefix("coupler: error: ") for line in lines if line.startswith("coupler: error: ")]
        text = errors[-1] if errors else (lines[-1] if lines else "")
        if code is not None and code < 0:
            text = f"killed by {signal.Signals(-code).name}" + (f" ({text})" if text else "")
        return (text or f"exit code {code}")[:500] + f" (log: {self.root / 'run.log'})"

    def _record(self, run: JobRun) -> None:
        tmp = self.root / f".{LAST_RUN}.tmp"
        tmp.write_text(json.dumps(run.to_json(), indent=1, sort_keys=True))
        os.replace(tmp, self.root / LAST_RUN)

    def row(self) -> dict[str, Any]:
        if not self.config.enabled:
            state = "disabled"
        elif self.run is not None:
            state = "running"
        elif self.last is not None and self.last.outcome == "failed":
            state = "failed"
        else:
            state = "idle"
        current = self.run or self.last
        return {
            "source": self.config.source, "enabled": self.config.enabled, "state": state,
            "triggers": triggers(self.config), "pid": self.run.pid if self.run else None,
            "staged": self.staged, "next_run": _iso(self.next_run()),
            "last_run": current.to_json() if current else None,
            "totals": dict(self.totals),
        }


class BatchScheduler:
    """The ``[[batch]]`` jobs of a site: ``run(stopping)`` in a thread, ``status()`` from any."""

    def __init__(self, site: SiteConfig, *, now: float | None = None):
        from coupler.bus.batch.ingest import batch_dir_of, batch_root

        now = time.time() if now is None else now
        self.site = site
        self._lock = threading.Lock()
        self.jobs: list[_Job] = []
        problems = []
        for cfg in site.batch:
            try:
                batch_dir = batch_dir_of(site, cfg.source)
            except CouplerError as exc:
                problems.append(f"{cfg.key_path}.source: {exc.message} ({exc.hint})")
                continue
            self.jobs.append(_Job(site, cfg, batch_dir, batch_root(site, cfg.source), now))
        if problems:
            raise site.config_error(problems)

    def run(self, stopping: threading.Event, tick: float = 0.2) -> None:
        """Start and watch jobs until ``stopping`` is set; then terminate those still running."""
        try:
            while not stopping.wait(tick):
                self.step(time.time())
        finally:
            self.stop()

    def step(self, now: float) -> None:
        """One look at every job: collect finished runs, start due ones."""
        for job in self.jobs:
            if not job.config.enabled:
                continue
            with self._lock:
                try:
                    if job.proc is not None:
                        job.check(now)
                        continue
                    trigger = job.due(now)
                    if trigger is not None:
                        job.start(trigger, now)
                except (OSError, CouplerError) as exc:  # a broken batch_dir or data dir must not stop the others
                    log.error("batch job %s: %s", job.config.source, exc, extra={"batch": job.config.source})
                    job.next_poll = now + max(job.config.poll_seconds, 5.0)

    def stop(self) -> None:
        """Terminate running jobs (their inputs stay staged; the next run completes them)."""
        for job in self.jobs:
            with self._lock:
                if job.proc is None:
                    continue
                log.warning("stopping batch job %s (pid %d): the next run takes it up again",
                            job.config.source, job.proc.pid, extra={"batch": job.config.source})
                job.terminate()
                job._finish(job.proc.returncode, "terminated by the daemon's shutdown", outcome="interrupted")

    def status(self) -> list[dict[str, Any]]:
        with self._lock:
            return [job.row() for job in self.jobs]

    def alerts(self) -> list[dict[str, str]]:
        return [
            {"batch": row["source"], "alert": f"last run failed: {row['last_run']['error']}"}
            for row in self.status() if row["state"] == "failed"
        ]
