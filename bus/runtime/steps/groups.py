"""What the stateful steps of a daemon's routes hold, for an operator: the open groups of the
Aggregators, the streams and batches of the Resequencers, the messages the Content Enrichers
wait answers for (the console's Groups page, ``/api/groups``, ``/metrics``), and the two
things an operator does with an aggregation group: complete it now, or discard it.

On a multi-node (AMQP) site the state is shared: every daemon shows every group, and a
force-complete takes the group's lock, so it completes once whichever daemon is asked.
"""

from __future__ import annotations

from typing import Any

from coupler.bus.transport.base import Transport
from coupler.canonical.errors import CouplerError

from .aggregate import Aggregator
from .base import Step, StepContext
from .pipeline import Pipeline, Stopped


class GroupError(CouplerError):
    """A group an operator named that is not there (or a step that has no groups)."""


def stateful_steps(pipelines: dict[str, Pipeline]) -> list[tuple[Pipeline, int, Step]]:
    return [(p, i, s) for p in pipelines.values() for i, s in enumerate(p.steps) if s.stateful]


def _open(step: Step, tx: Any) -> list[dict[str, Any]]:
    lister = getattr(step, "open_groups", None) or getattr(step, "waiting", None)
    return list(lister(tx)) if lister is not None else []


def open_groups(pipelines: dict[str, Pipeline], transport: Transport) -> list[dict[str, Any]]:
    """Every open group: route, step, type, key, size, age_seconds (and what the step adds)."""
    rows: list[dict[str, Any]] = []
    for p, _i, step in stateful_steps(pipelines):
        with transport.transaction() as tx:
            for g in _open(step, tx):
                rows.append({"route": p.name, "step": step.setup.name, "type": step.type_name, **g})
    return rows


def summary(pipelines: dict[str, Pipeline], transport: Transport) -> list[dict[str, Any]]:
    """Per stateful step: open groups, messages held, the oldest group's age, completions by reason."""
    out = []
    for p, _i, step in stateful_steps(pipelines):
        with transport.transaction() as tx:
            groups = [g for g in _open(step, tx) if g.get("status", "running") == "running"]
        out.append({
            "route": p.name, "step": step.setup.name, "type": step.type_name, "open": len(groups),
            "held": sum(int(g.get("size", 0)) for g in groups),
            "oldest_age_seconds": max((float(g.get("age_seconds", 0.0)) for g in groups), default=0.0),
            "completed": dict(getattr(step, "completed", {})),
        })
    return out


def _aggregator(pipelines: dict[str, Pipeline], route: str, step: str) -> tuple[Pipeline, int, Aggregator]:
    for p, i, s in stateful_steps(pipelines):
        if p.name == route and s.setup.name == step:
            if not isinstance(s, Aggregator):
                raise GroupError(f"route {route} step {step} is a {s.type_name}, not an aggregate step")
            return p, i, s
    raise GroupError(f"route {route} has no stateful step {step!r}", hint="the console's Open groups page (/api/groups) lists them")


def force_complete(pipelines: dict[str, Pipeline], transport: Transport, route: str, step: str, key: str) -> dict[str, Any]:
    """Complete group ``key`` now (reason ``forced``): its aggregate goes on from the next step."""
    p, i, agg = _aggregator(pipelines, route, step)
    try:
        with transport.transaction() as tx:
            out = agg.force(tx, key)
            if out is None:
                raise GroupError(f"route {route} step {step} has no open group {key!r}")
            ctx = StepContext(tx, p.name)
            ctx.committed.append(lambda: agg.count_completion("forced"))
            p.run(ctx, out.record_hop(p.component, f"{agg.label}: group {key} completed by an operator"), i + 1)
    except Stopped as stop:
        raise GroupError(f"the aggregate of group {key} was refused at {stop.where}: {stop.outcome}") from None
    p.count_committed(ctx)
    return {"route": route, "step": step, "key": key, "completed": True, "message_id": out.message_id}


def discard(pipelines: dict[str, Pipeline], transport: Transport, route: str, step: str, key: str) -> dict[str, Any]:
    """Drop group ``key`` and the messages it held."""
    _p, _i, agg = _aggregator(pipelines, route, step)
    with transport.transaction() as tx:
        n = agg.discard(tx, key)
    if not n:
        raise GroupError(f"route {route} step {step} has no open group {key!r}")
    return {"route": route, "step": step, "key": key, "discarded": n}


__all__ = ["GroupError", "discard", "force_complete", "open_groups", "stateful_steps", "summary"]
