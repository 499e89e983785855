"""The Content Enricher step through a real daemon from site.toml, on SQLite and on RabbitMQ +
PostgreSQL: request-reply to an adapter (answer merged, cached, a fault or no answer sends the
message aside after its retries) and a reference file."""

from __future__ import annotations

import json
from pathlib import Path

from coupler.canonical import Envelope, FormatIndicator
from tests.bus.runtime.test_route_steps import drained, settled
from tests.bus.site_helpers import running_daemon, wait_for, write_site

JSON = FormatIndicator.parse("test.Order@1;application/json")

SITE = """
[[adapters]]
name = "pricing"
type = "echo"
direction = "outbound"
channel = "to-pricing"

[[routes]]
name = "priced"
from = "orders.in"
to = ["orders.out"]
[[routes.steps]]
type = "enrich"
target = "pricing"
operation = "price"
into = "answer"
fields = { sku_upper = "SKU" }
key = "body.sku"
cache_ttl_seconds = 300
timeout_seconds = 5

[[routes]]
name = "unanswered"
from = "lost.in"
to = ["lost.out"]
[[routes.steps]]
type = "enrich"
target = "pricing"
commands_channel = "nobody.listens"
into = "answer"
timeout_seconds = 0.5
max_attempts = 2
failed_to = "lost.failed"

[[routes]]
name = "customers"
from = "cust.in"
to = ["cust.out"]
[[routes.steps]]
type = "enrich"
reference = "ref/customers.csv"
key = "body.customer"
fields = { name = "name", region = "region" }
"""


def order(sku: str, **props: str) -> Envelope:
    return Envelope(format=JSON, body=json.dumps({"sku": sku, "qty": 2}).encode(), properties=props)


def test_an_adapters_answer_is_merged_and_cached_and_a_fault_or_silence_sends_the_message_aside(
    store: str, tmp_path: Path
) -> None:
    (tmp_path / "ref").mkdir(parents=True)
    (tmp_path / "ref" / "customers.csv").write_text("id,name,region\nc1,Acme,EU\nc2,Globex,US\n")
    with running_daemon(write_site(tmp_path, store + SITE)) as d:
        t = d.transport
        assert t is not None
        t.send("orders.in", [order("a1")])
        [first] = drained(d, "orders.out", 1)
        assert json.loads(first.body) == {"sku": "a1", "qty": 2, "answer": {"SKU": "A1", "QTY": 2}, "sku_upper": "A1"}
        t.send("orders.in", [order("a1")])  # the same key: from the cache, the adapter is not asked again
        [second] = drained(d, "orders.out", 1)
        assert json.loads(second.body)["sku_upper"] == "A1"
        assert any("from the cache" in h.action for h in second.history)
        t.send("orders.in", [order("b2", fail="yes")])  # the system says no: aside at once, with its reason
        [refused] = wait_for(lambda: t.dead_letters(kind="invalid"), "the refused order in the Invalid Message Channel")
        assert "pricing answered failed: the legacy system said no" in refused.reason
        t.send("lost.in", [order("c3")])  # nobody answers: sent twice, then to failed_to
        [lost] = drained(d, "lost.failed", 1)
        assert "no answer from pricing to 2 request(s)" in lost.properties["enrich.failed"]
        assert json.loads(lost.body) == {"sku": "c3", "qty": 2}
        t.send("cust.in", [Envelope(format=JSON, body=json.dumps({"customer": c}).encode()) for c in ("c2", "zz")])
        [cust] = drained(d, "cust.out", 1)
        assert json.loads(cust.body) == {"customer": "c2", "name": "Globex", "region": "US"}
        settled(d, "cust.in")
        assert any("zz is not in ref/customers.csv" in x.reason for x in t.dead_letters(kind="invalid"))
