"""The Process Manager step through a real daemon from site.toml, on SQLite and on RabbitMQ +
PostgreSQL: ask A, then B with A's answer, then write C; each instance's state in the store and
visible to an operator; an unanswered stage fails its instance after its retries."""

from __future__ import annotations

import json
from pathlib import Path

from coupler.bus.runtime.control import ControlService
from coupler.canonical import Envelope, FormatIndicator
from tests.bus.runtime.test_route_steps import drained
from tests.bus.site_helpers import running_daemon, wait_for, write_site

JSON = FormatIndicator.parse("test.Order@1;application/json")

SITE = """
[[adapters]]
name = "credit"
type = "echo"
direction = "outbound"
channel = "to-credit"

[[adapters]]
name = "pricing"
type = "echo"
direction = "outbound"
channel = "to-pricing"

[[adapters]]
name = "writer"
type = "echo"
direction = "outbound"
channel = "orders.write"
[adapters.options]
forward_to = "orders.written"

[[routes]]
name = "orders"
from = "orders.in"
to = ["orders.write"]
[[routes.steps]]
type = "process"
key = "body.order"
stages = [
  {{ name = "credit", target = "credit", operation = "check", into = "credit" }},
  {{ name = "price", target = "pricing", operation = "price", into = "price" }},
]

[[routes]]
name = "stuck"
from = "stuck.in"
to = ["stuck.out"]
[[routes.steps]]
type = "process"
key = "body.order"
commands_channel = "nobody.listens"
failed_to = "stuck.failed"
stages = [ {{ name = "credit", target = "credit", into = "credit", timeout_seconds = {timeout}, max_attempts = 2 }} ]
"""


def order(n: str) -> Envelope:
    return Envelope(format=JSON, body=json.dumps({"order": n}).encode())


def test_ask_a_then_b_with_as_answer_then_write_c_with_the_instances_visible(store: str, tmp_path: Path) -> None:
    with running_daemon(write_site(tmp_path, store + SITE.format(timeout=1.5))) as d:
        t = d.transport
        assert t is not None
        t.send("orders.in", [order("o1"), order("o2")])
        written = drained(d, "orders.written", 2)  # C wrote them (the writer adapter)
        body = json.loads(next(e for e in written if json.loads(e.body)["order"] == "o1").body)
        assert body["credit"] == {"ORDER": "O1"}  # A's answer
        assert body["price"] == {"ORDER": "O1", "CREDIT": {"ORDER": "O1"}}  # B was asked with A's answer
        ctl = ControlService(d)
        done = {g["key"]: g for g in ctl.call("groups") if g["route"] == "orders"}
        assert {k: (g["status"], g["stage"]) for k, g in done.items()} == {"o1": ("finished", "price"), "o2": ("finished", "price")}
        t.send("stuck.in", [order("o3")])
        running = wait_for(lambda: [g for g in ctl.call("groups") if g["route"] == "stuck"], "the stuck instance visible")
        assert running[0]["key"] == "o3" and running[0]["status"] == "running" and running[0]["stage"] == "credit"
        [failed] = drained(d, "stuck.failed", 1)
        assert "instance o3 failed at stage credit: no answer from credit to 2 request(s)" in failed.properties["process.failed"]
        [gone] = [g for g in ctl.call("groups") if g["route"] == "stuck"]
        assert gone["status"] == "failed"
