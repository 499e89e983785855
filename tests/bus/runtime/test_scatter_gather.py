"""Scatter-Gather and the Composed Message Processor for documents on channels, through a real
daemon from site.toml on SQLite and on RabbitMQ + PostgreSQL: a quote request goes to three
suppliers (a recipient list), their answers are gathered by an aggregator with a time-out and
the strategy best / first / all; an order's items, split into a Message Sequence, each checked by
a system and reassembled in order."""

from __future__ import annotations

import json
from pathlib import Path

from coupler.canonical import Envelope, FormatIndicator
from coupler.canonical.envelope import Sequence
from tests.bus.runtime.test_route_steps import drained
from tests.bus.site_helpers import running_daemon, wait_for, write_site

JSON = FormatIndicator.parse("test.Quote@1;application/json")

SITE = """
[[routes]]
name = "rfq"
from = "rfq.in"
to = ["supplier-a", "supplier-b", "supplier-c"]

[[routes]]
name = "best-quote"
from = "quotes"
to = ["quotes.best"]
[[routes.steps]]
type = "aggregate"
correlation = "correlation_id"
complete_size = 3
timeout_seconds = 1.5
strategy = "best"
best = "body.price"

[[routes]]
name = "first-quote"
from = "quick.quotes"
to = ["quotes.first"]
[[routes.steps]]
type = "aggregate"
correlation = "correlation_id"
complete_size = 1
strategy = "first"
discard_late = true

[[adapters]]
name = "checker"
type = "echo"
direction = "outbound"
channel = "items"
[adapters.options]
forward_to = "checked"

[[routes]]
name = "order-checked"
from = "checked"
to = ["orders.checked"]
[[routes.steps]]
type = "aggregate"
complete_sequence = true
timeout_seconds = 30
strategy = "all"
"""


def quote(request: Envelope, supplier: str, price: float) -> Envelope:
    return Envelope(format=JSON, body=json.dumps({"supplier": supplier, "price": price}).encode(),
                    correlation_id=request.message_id)


def test_scatter_gather_best_answer_with_a_time_out_and_first_answer(store: str, tmp_path: Path) -> None:
    with running_daemon(write_site(tmp_path, store + SITE)) as d:
        t = d.transport
        assert t is not None
        both = [Envelope(format=JSON, body=b'{"item": "bolt", "qty": 100}') for _ in range(2)]
        t.send("rfq.in", both)
        # the suppliers (systems outside Coupler) each get every request: a recipient list
        for supplier in ("supplier-a", "supplier-b", "supplier-c"):
            assert sorted(e.message_id for e in drained(d, supplier, 2)) == sorted(e.message_id for e in both)
        first, second = both
        t.send("quotes", [quote(first, "a", 9.5), quote(first, "b", 7.25), quote(first, "c", 8.0)])
        t.send("quotes", [quote(second, "a", 12.0), quote(second, "c", 11.0)])  # b never answers
        got = {e.correlation_id: e for e in drained(d, "quotes.best", 2)}
        assert json.loads(got[first.message_id].body) == {"supplier": "b", "price": 7.25}
        assert got[first.message_id].properties["aggregate.reason"] == "size"
        assert json.loads(got[second.message_id].body) == {"supplier": "c", "price": 11.0}
        assert got[second.message_id].properties["aggregate.reason"] == "timeout"
        t.send("quick.quotes", [quote(first, "c", 8.0), quote(first, "a", 9.5), quote(first, "b", 7.25)])
        [quickest] = drained(d, "quotes.first", 1)
        assert json.loads(quickest.body)["supplier"] == "c"
        counts = d.pipelines["first-quote"].counts
        wait_for(lambda: counts[("step 0 aggregate", "late")] == 2, "the later answers discarded as late")
        assert t.receive("quotes.first", "test") == []


def test_composed_message_processor_reassembles_the_checked_items_in_order(store: str, tmp_path: Path) -> None:
    with running_daemon(write_site(tmp_path, store + SITE)) as d:
        t = d.transport
        assert t is not None
        items = [{"sku": s, "qty": q} for s, q in (("a", 1), ("b", 2), ("c", 3))]
        parts = [Envelope(format=JSON, body=json.dumps(item).encode(), sequence=Sequence("order-7", i, 3))
                 for i, item in enumerate(items)]
        t.send("items", list(reversed(parts)))  # each item to the checking system, answers in any order
        [order] = drained(d, "orders.checked", 1)
        assert json.loads(order.body) == items and order.correlation_id == "order-7"
        assert order.properties["aggregate.reason"] == "sequence" and order.properties["echoed-by"] == "checker"
