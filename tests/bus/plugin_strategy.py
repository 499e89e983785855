"""A third party's aggregation strategy, through the ``coupler_aggregation_strategies`` hook:
the members' JSON bodies summed into one total (the test of the hook)."""

from __future__ import annotations

import json
from typing import Any

from coupler.bus.plugins.hookspecs import hookimpl
from coupler.canonical import FormatIndicator


def total(group: Any) -> tuple[bytes, FormatIndicator]:
    amounts = [r["amount"] for r in group.records()]
    body = {"key": group.key, "count": len(amounts), "total": sum(amounts), "reason": group.reason}
    return json.dumps(body).encode(), FormatIndicator.parse("test.Total@1;application/json")


@hookimpl
def coupler_aggregation_strategies() -> dict[str, Any]:
    return {"total": total}
