"""Prometheus metrics of a daemon (``/metrics``), with ``prometheus_client``.

Figures read at scrape time (a collector over the transport's channel statistics, the
adapters' counters and the batch jobs), and latency histograms observed as messages are
handled (:meth:`Observer.handled`, called by the daemon's workers). Names follow the
client's conventions: a ``coupler_`` prefix, base units (seconds, bytes), ``_total`` for
counters. On a multi-node (AMQP) site every daemon exports its own adapters and latencies;
the channel figures, which every daemon shares, are exported by the one daemon holding the
store's metrics lock (:meth:`~coupler.bus.transport.base.Transport.exports_shared_figures`).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

if TYPE_CHECKING:
    from coupler.bus.runtime.daemon import Daemon
    from coupler.bus.transport.base import Delivery

log = logging.getLogger("coupler.metrics")

#: (metric suffix, ChannelStats field, help) of the channel counters
CHANNEL_COUNTERS = (
    ("sent", "sent", "Messages stored on the channel."),
    ("acknowledged", "acked", "Messages received and acknowledged (done)."),
    ("redelivered", "failed", "Negative acknowledgements that made a message come back for another attempt."),
    ("dead_lettered", "dead", "Messages moved to a Dead Letter Channel."),
    ("invalid", "invalid", "Messages moved to the Invalid Message Channel."),
    ("expired", "expired", "Messages that expired before delivery."),
)
#: latency buckets (seconds): legacy systems answer in milliseconds to minutes
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)


class Observer:
    """The latency histograms of one daemon; ``handled`` times each message a worker handles."""

    def __init__(self) -> None:
        #: the optional OpenTelemetry export (bus/runtime/console/spans.py)
        self.spans: Any = None
        self.registry = CollectorRegistry(auto_describe=True)
        self.delivery_seconds = Histogram(
            "coupler_adapter_delivery_seconds",
            "Time an outbound adapter took to deliver a document to its legacy system (translation included).",
            ["adapter"], registry=self.registry, buckets=BUCKETS,
        )
        self.command_seconds = Histogram(
            "coupler_adapter_command_seconds",
            "Round trip of a command through an adapter: from the command message's time stamp to its reply sent.",
            ["adapter"], registry=self.registry, buckets=BUCKETS,
        )
        self.route_seconds = Histogram(
            "coupler_route_seconds", "Time a route took to forward a message.",
            ["route"], registry=self.registry, buckets=BUCKETS,
        )

    @contextlib.contextmanager
    def handled(self, worker: str, delivery: Delivery) -> Iterator[None]:
        """Time ``worker`` handling ``delivery`` (worker names as the daemon spawns them)."""
        start = time.perf_counter()
        try:
            if self.spans is not None:
                with self.spans.span(worker, delivery):
                    yield
            else:
                yield
        finally:
            kind, _, name = worker.partition(":")
            elapsed = time.perf_counter() - start
            if kind == "deliver":
                self.delivery_seconds.labels(name).observe(elapsed)
            elif kind == "commands":
                sent = delivery.envelope.timestamp.timestamp()
                self.command_seconds.labels(name).observe(max(time.time() - sent, elapsed))
            elif kind == "route":
                self.route_seconds.labels(name).observe(elapsed)

    def attach(self, daemon: Daemon) -> None:
        """Collect the daemon's figures at every scrape."""
        self.registry.register(_DaemonCollector(daemon))

    def exposition(self) -> bytes:
        """The text exposition format of every metric."""
        return generate_latest(self.registry)


class _DaemonCollector(Collector):
    def __init__(self, daemon: Daemon):
        self.daemon = daemon

    def describe(self) -> list[Any]:
        return []  # collected at scrape time only (the registry must not call collect() early)

    def collect(self) -> Iterator[Any]:
        d = self.daemon
        up = GaugeMetricFamily("coupler_up", "1 while the daemon runs (0 while it stops).", labels=["site"])
        up.add_metric([d.site.name], 0.0 if d.stopping.is_set() else 1.0)
        yield up
        uptime = GaugeMetricFamily("coupler_uptime_seconds", "Seconds since the daemon started.")
        uptime.add_metric([], time.time() - (d.started_at or time.time()))
        yield uptime
        yield from self._console(d)
        yield from self._adapters(d)
        yield from self._steps(d)
        yield from self._batch(d)
        if d.transport is None:
            return
        try:
            shared = d.transport.exports_shared_figures()
            stats = d.transport.stats() if shared else []
        except Exception as exc:  # the store unreachable: the daemon's own figures still go out
            log.warning("metrics: cannot read channel statistics: %s", exc)
            return
        yield from self._channels(stats)
        alerts = GaugeMetricFamily("coupler_alerts", "Alerts the daemon raises now (stuck channels, failing adapters, batch jobs).")
        alerts.add_metric([], float(len(d.alerts)))
        yield alerts

    def _console(self, d: Daemon) -> Iterator[Any]:
        connections = d.console_connections
        if connections is None:  # no console (the figures are scraped through it)
            return
        open_ = GaugeMetricFamily("coupler_console_connections", "Connections open to the console's HTTP server.")
        open_.add_metric([], float(connections["open"]))
        most = GaugeMetricFamily("coupler_console_connections_max", "Connections the console holds at once "
                                 "([http] max_connections); a new one beyond is answered 503.")
        most.add_metric([], float(connections["max"]))
        refused = CounterMetricFamily("coupler_console_connections_refused", "Connections the console answered 503 "
                                      "and closed because max_connections were open.")
        refused.add_metric([], float(connections["refused"]))
        yield from (open_, most, refused)

    def _adapters(self, d: Daemon) -> Iterator[Any]:
        up = GaugeMetricFamily("coupler_adapter_up", "1 when the adapter runs (paused included), 0 when it failed or stopped.", labels=["adapter", "type", "direction"])
        paused = GaugeMetricFamily("coupler_adapter_paused", "1 while the adapter is paused.", labels=["adapter"])
        units = {
            "in": CounterMetricFamily("coupler_adapter_units_in", "Commands and documents the adapter took from the bus.", labels=["adapter"]),
            "out": CounterMetricFamily("coupler_adapter_units_out", "Messages it put on the bus and documents it delivered to its legacy system.", labels=["adapter"]),
            "failed": CounterMetricFamily("coupler_adapter_units_failed", "Units of work that failed (invalid input, failed delivery or command).", labels=["adapter"]),
        }
        for row in d.statistics.snapshot():
            ra = d.adapters.get(row["name"])
            direction = ra.config.direction if ra is not None else ""
            up.add_metric([row["name"], row["type"], direction], 1.0 if row["state"] in ("running", "paused") else 0.0)
            paused.add_metric([row["name"]], 1.0 if ra is not None and ra.paused.is_set() else 0.0)
            for key, family in units.items():
                family.add_metric([row["name"]], float(row[key]))
        yield up
        yield paused
        yield from units.values()

    def _steps(self, d: Daemon) -> Iterator[Any]:
        dropped = CounterMetricFamily(
            "coupler_route_step_messages",
            "Messages a route step dropped on purpose, by outcome: `discarded` (Message Filter), `expired` "
            "(Message Expiration), `late` (an aggregate's discard_late), `duplicate` (a process instance "
            "running already).", labels=["route", "step", "outcome"])
        for name, pipeline in d.pipelines.items():
            for (step, outcome), count in sorted(pipeline.counts.items()):
                dropped.add_metric([name, step, outcome], float(count))
        yield dropped
        yield from self._groups(d)

    def _groups(self, d: Daemon) -> Iterator[Any]:
        from coupler.bus.runtime.steps.groups import summary

        if d.transport is None:
            return
        open_ = GaugeMetricFamily("coupler_step_open_groups", "Groups a stateful step holds in the store (aggregation "
                                  "groups, resequencer streams with a gap, messages waiting for an enricher's answer).",
                                  labels=["route", "step", "type"])
        held = GaugeMetricFamily("coupler_step_held_messages", "Messages those groups hold.", labels=["route", "step", "type"])
        oldest = GaugeMetricFamily("coupler_step_oldest_group_age_seconds", "Age of the step's oldest open group (0: none).",
                                   labels=["route", "step", "type"])
        completed = CounterMetricFamily("coupler_aggregate_completions", "Aggregation groups this daemon completed, by "
                                        "reason (size, timeout, interval, predicate, sequence, forced).",
                                        labels=["route", "step", "reason"])
        try:
            rows = summary(d.pipelines, d.transport)
        except Exception as exc:  # the store busy or away: the next scrape tries again
            log.debug("metrics: cannot read the open groups: %s", exc)
            return
        for r in rows:
            labels = [r["route"], r["step"], r["type"]]
            open_.add_metric(labels, float(r["open"]))
            held.add_metric(labels, float(r["held"]))
            oldest.add_metric(labels, float(r["oldest_age_seconds"]))
            for reason, n in sorted(r["completed"].items()):
                completed.add_metric([r["route"], r["step"], reason], float(n))
        yield from (open_, held, oldest, completed)

    def _batch(self, d: Daemon) -> Iterator[Any]:
        if d.batch is None:
            return
        records = CounterMetricFamily("coupler_batch_records", "Records the batch job's succeeded runs wrote.", labels=["job"])
        nbytes = CounterMetricFamily("coupler_batch_input_bytes", "Bytes of input the batch job's succeeded runs read.", labels=["job"])
        runs = CounterMetricFamily("coupler_batch_runs", "Succeeded runs of the batch job.", labels=["job"])
        running = GaugeMetricFamily("coupler_batch_running", "1 while the batch job runs.", labels=["job"])
        for row in d.batch.status():
            totals = row.get("totals") or {}
            records.add_metric([row["source"]], float(totals.get("records", 0)))
            nbytes.add_metric([row["source"]], float(totals.get("bytes", 0)))
            runs.add_metric([row["source"]], float(totals.get("runs", 0)))
            running.add_metric([row["source"]], 1.0 if row["state"] == "running" else 0.0)
        yield from (records, nbytes, runs, running)

    def _channels(self, stats: list[Any]) -> Iterator[Any]:
        depth = GaugeMetricFamily("coupler_channel_depth", "Messages on the channel (ready and in flight).", labels=["channel"])
        in_flight = GaugeMetricFamily("coupler_channel_in_flight", "Messages received under a lease, not settled yet.", labels=["channel"])
        oldest = GaugeMetricFamily("coupler_channel_oldest_message_age_seconds", "Age of the oldest message on the channel (0 when empty).", labels=["channel"])
        counters = {
            field: CounterMetricFamily(f"coupler_channel_messages_{suffix}", text, labels=["channel"])
            for suffix, field, text in CHANNEL_COUNTERS
        }
        for st in stats:
            depth.add_metric([st.channel], float(st.depth))
            in_flight.add_metric([st.channel], float(st.in_flight))
            oldest.add_metric([st.channel], float(st.oldest_age or 0.0))
            for field, family in counters.items():
                family.add_metric([st.channel], float(getattr(st, field)))
        yield from (depth, in_flight, oldest)
        yield from counters.values()


def metric_names() -> list[str]:
    """Every metric family name (the docs list them; a test checks they are all exported)."""
    names = [
        "coupler_up", "coupler_uptime_seconds", "coupler_alerts",
        "coupler_console_connections", "coupler_console_connections_max", "coupler_console_connections_refused_total",
        "coupler_adapter_up", "coupler_adapter_paused", "coupler_adapter_units_in_total",
        "coupler_adapter_units_out_total", "coupler_adapter_units_failed_total",
        "coupler_adapter_delivery_seconds", "coupler_adapter_command_seconds", "coupler_route_seconds",
        "coupler_route_step_messages_total", "coupler_step_open_groups", "coupler_step_held_messages",
        "coupler_step_oldest_group_age_seconds", "coupler_aggregate_completions_total",
        "coupler_batch_records_total", "coupler_batch_input_bytes_total", "coupler_batch_runs_total", "coupler_batch_running",
        "coupler_channel_depth", "coupler_channel_in_flight", "coupler_channel_oldest_message_age_seconds",
    ]
    names += [f"coupler_channel_messages_{suffix}_total" for suffix, _, _ in CHANNEL_COUNTERS]
    return names
