"""The daemon's monitor: heartbeats, stuck channels, expired message sequences, the time-outs of
pipeline steps (``on_timer``) and store maintenance."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from coupler.canonical.errors import CouplerError

if TYPE_CHECKING:
    from coupler.bus.runtime.daemon import Daemon

log = logging.getLogger("coupler.daemon")


class Monitor:
    """The monitor thread of one daemon."""

    def __init__(self, daemon: Daemon):
        self.d = daemon

    def run(self) -> None:
        assert self.d.transport is not None
        interval = self.d.site.monitor.interval_seconds
        last_maintenance = 0.0
        timers: dict[str, dict[int, float]] = {name: {} for name, p in self.d.pipelines.items() if p.timers()}
        cadence = min(interval, 1.0) if timers else interval
        checks = time.monotonic() + cadence
        while True:
            # wake for the checks, and for the steps' timers when they have work (an
            # Aggregator's time-out fires when it falls due, not at the next second)
            wake = min([checks, *(self.d.pipelines[name].next_tick(due) for name, due in timers.items())])
            if self.d.stopping.wait(max(wake - time.monotonic(), 0.001)):
                break
            for name, due in timers.items():
                try:
                    self.d.pipelines[name].tick(self.d.transport, due)
                except CouplerError as exc:
                    log.error("route %s: timer failed: %s", name, exc)
            if time.monotonic() < checks:
                continue
            checks = time.monotonic() + cadence
            for ra in self.d.adapters.values():
                if ra.started and not ra.paused.is_set():
                    self.d.statistics.beat(ra.name)
            try:
                self.check_stuck()
                for patterns in self.d._consumer_patterns:
                    for seq_id in patterns.expire():
                        log.warning("%s: sequence %s incomplete after %g s: its parts went to the Invalid "
                                    "Message Channel", patterns.consumer, seq_id, patterns.sequence_timeout,
                                    extra={"consumer": patterns.consumer})
                if time.monotonic() - last_maintenance > 60:
                    last_maintenance = time.monotonic()
                    counts = self.d.transport.maintain()
                    if any(counts.values()):
                        log.info("store maintenance: %s", counts, extra=counts)
            except CouplerError as exc:
                log.error("monitor: %s", exc)

    def check_stuck(self) -> None:
        assert self.d.transport is not None
        default = self.d.site.monitor.stuck_after_seconds
        for st in self.d.transport.stats():
            cfg = self.d.site.channel(st.channel)
            limit = cfg.stuck_after_seconds if cfg and cfg.stuck_after_seconds is not None else default
            if st.oldest_age is not None and limit and st.oldest_age > limit:
                if st.channel not in self.d.alerts:
                    log.warning(
                        "channel %s is stuck: its oldest message is %.0f s old (limit %g s, depth %d)",
                        st.channel, st.oldest_age, limit, st.depth,
                        extra={"channel": st.channel, "oldest_age": st.oldest_age},
                    )
                self.d.alerts[st.channel] = f"oldest message {st.oldest_age:.0f} s old (limit {limit:g} s)"
            elif st.channel in self.d.alerts:
                log.info("channel %s is no longer stuck", st.channel, extra={"channel": st.channel})
                del self.d.alerts[st.channel]
