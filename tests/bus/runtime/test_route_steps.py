"""Route pipelines run by a real daemon from site.toml, on SQLite and on RabbitMQ + PostgreSQL
(the same test for both stores, as the contract suite does): one test per stateless pattern."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from coupler.bus.config.loader import ConfigError, load_site
from coupler.bus.plugins.manager import plugin_manager
from coupler.bus.runtime.daemon import Daemon
from coupler.canonical import Envelope, FormatIndicator
from tests.bus.site_helpers import running_daemon, wait_for, write_site

JSON = FormatIndicator.parse("test.Order@1;application/json")
XML = FormatIndicator.parse("test.Order@1;application/xml")
TEXT = FormatIndicator.parse("test.Lines@1;text/plain")

def order(region: str, amount: float, **properties: str) -> Envelope:
    body = {"id": f"{region}-{amount}", "customer": {"region": region}, "amount": amount, "items": [{"sku": "a"}]}
    return Envelope(format=JSON, body=json.dumps(body).encode(), properties=properties)


def drained(d: Daemon, channel: str, n: int) -> list[Envelope]:
    """Exactly ``n`` messages of ``channel`` (waiting for them), acknowledged."""
    assert d.transport is not None
    got: list[Envelope] = []

    def take() -> bool:
        assert d.transport is not None
        batch = d.transport.receive(channel, "test", max=100)
        d.transport.ack(batch)
        got.extend(x.envelope for x in batch)
        return len(got) >= n

    wait_for(take, f"{n} message(s) on {channel}")
    assert len(got) == n, [e.body for e in got]
    return got


def settled(d: Daemon, channel: str) -> None:
    assert d.transport is not None
    wait_for(lambda: d.transport is not None and d.transport.stats(channel)[0].depth == 0, f"{channel} drained")


def body(e: Envelope) -> dict:
    return json.loads(e.body)


FILTER = """
[[routes]]
name = "eu-orders"
from = "orders.in"
to = ["orders.eu"]
[[routes.steps]]
type = "filter"
when = "body.customer.region = 'EU' and body.amount > 0"

[[routes]]
name = "big-orders"
from = "big.in"
to = ["big.out"]
[[routes.steps]]
type = "filter"
when = "body.amount >= 100"
otherwise = "small.out"
"""


def test_message_filter_discards_or_sends_otherwise_and_counts(store: str, tmp_path: Path) -> None:
    with running_daemon(write_site(tmp_path, store + FILTER)) as d:
        t = d.transport
        assert t is not None
        sent = [order("EU", 10), order("US", 10), order("EU", -1), order("EU", 20)]
        t.send("orders.in", sent)
        t.send("big.in", [order("EU", 150), order("EU", 5)])
        eu = drained(d, "orders.eu", 2)
        assert sorted(body(e)["amount"] for e in eu) == [10, 20]
        [big] = drained(d, "big.out", 1)
        [small] = drained(d, "small.out", 1)
        assert body(big)["amount"] == 150 and body(small)["amount"] == 5
        settled(d, "orders.in")
        assert t.receive("orders.eu", "test") == []
        assert t.dead_letters() == []
        # counted right after the commit, which the channel's depth may show a moment before
        wait_for(lambda: d.pipelines["eu-orders"].counts[("step 0 filter", "discarded")] == 2, "the discards counted")
        # every step is in the Message History of what leaves the route
        assert ("route:eu-orders", "step 0 filter: passed") in [(h.component, h.action) for h in eu[0].history]
        # a discarded message is journaled with the step and its expression: its trace says why it ended
        from coupler.bus.runtime.trace import trace

        us = next(e for e in sent if body(e)["customer"]["region"] == "US")
        found = wait_for(lambda: (got := trace(t, us.message_id)) and got["messages"][0]["outcome"] == "discarded" and got,
                         "the discarded message's trace")
        [why] = [h for h in found["hops"] if h["event"] == "discarded"]
        assert why["by"] == "route:eu-orders" and why["channel"] == "orders.in"
        assert why["outcome"] == ("discarded by filter-0 (step 0 filter): "
                                  "did not match \"body.customer.region = 'EU' and body.amount > 0\"")
        assert [h["event"] for h in found["hops"]][-2:] == ["discarded", "acked"]
        # one sent on to its `otherwise` channel is not discarded
        small_trace = trace(t, small.message_id)
        assert small_trace["messages"][0]["outcome"] == "done"
        assert not [h for h in small_trace["hops"] if h["event"] == "discarded"]


PROPERTIES = """
[[routes]]
name = "tag"
from = "in"
to = ["out", "copies"]
[[routes.steps]]
type = "set_properties"
properties = { region = "body.customer.region", sku = "body.items.0.sku", no = "xpath('/order/@no')" }
[[routes.steps]]
type = "wire_tap"
to = "tap"
when = "properties.region = 'EU'"

[[routes]]
name = "by-region"
from = "copies"
otherwise = "other"
[[routes.rules]]
when = "body.customer.region = 'EU'"
to = ["eu"]
"""


def test_set_properties_wire_tap_and_content_based_router_on_the_body(store: str, tmp_path: Path) -> None:
    with running_daemon(write_site(tmp_path, store + PROPERTIES)) as d:
        t = d.transport
        assert t is not None
        t.send("in", [order("EU", 1), order("US", 2)])
        t.send("in", Envelope(format=XML, body=b'<order no="42"><customer region="EU"/></order>'))
        out = drained(d, "out", 3)
        props = sorted((e.properties.get("region", ""), e.properties.get("sku", ""), e.properties.get("no", "")) for e in out)
        assert props == [("", "", "42"), ("EU", "a", ""), ("US", "a", "")]
        [tapped] = drained(d, "tap", 1)
        assert tapped.properties["region"] == "EU"
        [eu] = drained(d, "eu", 1)
        assert body(eu)["customer"]["region"] == "EU"
        # the XML one has no body.* fields: it cannot be routed on them and is invalid, with the reason
        [other] = drained(d, "other", 1)
        assert body(other)["customer"]["region"] == "US"
        [bad] = wait_for(lambda: t.dead_letters(kind="invalid"), "the XML order in the invalid messages")
        assert "body fields need an Avro or JSON body" in bad.reason and bad.component == "route:by-region"


def test_a_route_rule_on_a_bare_name_is_refused_with_the_fix(tmp_path: Path) -> None:
    site = write_site(tmp_path, '[[routes]]\nfrom = "in"\n[[routes.rules]]\nwhen = "status = \'ACTIVE\'"\nto = ["out"]\n')
    with pytest.raises(ConfigError) as info:
        load_site(site)
    message = str(info.value)
    assert "routes[0].rules[0].when" in message and "write body.status" in message and "\n" not in message


def test_unknown_step_types_and_keys_are_reported_with_their_key_path(tmp_path: Path) -> None:
    text = """
[[routes]]
from = "in"
to = ["out"]
[[routes.steps]]
type = "filtr"
[[routes.steps]]
type = "filter"
whn = "kind = 'document'"
"""
    with pytest.raises(ConfigError) as info:
        load_site(write_site(tmp_path, text), pm=plugin_manager(entry_points=False))
    message = str(info.value)
    assert "routes[0].steps[0].type: no installed plugin provides step type 'filtr' (did you mean 'filter'?" in message
    assert re.search(r"routes\[0\]\.steps\[1\]\.whn: unknown key", message)
    assert "routes[0].steps[1].when: required key is missing" in message


def test_the_built_in_step_types_come_through_the_plugin_hook() -> None:
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "coupler.bus.cli.main", "plugins", "--json"],
                         capture_output=True, text=True, check=True).stdout
    plugins = {p["name"]: p for p in json.loads(out)}
    steps = plugins["steps"]["contributes"]["step_types"] if "contributes" in plugins["steps"] else plugins["steps"]["step_types"]
    assert {"filter", "set_properties", "wire_tap"} <= set(steps)


def test_metrics_count_the_discarded_messages(tmp_path: Path) -> None:
    text = FILTER + '\n[http]\nlisten = "127.0.0.1:0"\n'
    with running_daemon(write_site(tmp_path, text)) as d:
        assert d.transport is not None and d.console_url is not None
        d.transport.send("orders.in", [order("US", 1), order("EU", 2)])
        drained(d, "orders.eu", 1)
        settled(d, "orders.in")
        line = 'coupler_route_step_messages_total{outcome="discarded",route="eu-orders",step="step 0 filter"} 1.0'

        def scraped() -> bool:  # counted once the commit returned (after its disk sync): wait for it
            assert d.console_url is not None
            with urllib.request.urlopen(d.console_url.rstrip("/") + "/metrics") as r:
                return line in r.read().decode()

        wait_for(scraped, "the discarded message in /metrics")


SPLIT = """
[[channels]]
name = "whole"
reassemble = true

[[routes]]
name = "lines"
from = "text.in"
to = ["text.lines"]
[[routes.steps]]
type = "split"
lines = true

[[routes]]
name = "items"
from = "orders.in"
to = ["items.out"]
[[routes.steps]]
type = "split"
array = "body.items"

[[routes]]
name = "xml"
from = "xml.in"
to = ["xml.out"]
[[routes.steps]]
type = "split"
xpath = "//order"

[[routes]]
name = "records"
from = "records.in"
to = ["whole"]
[[routes.steps]]
type = "split"
record_length = 4

[[routes]]
name = "back"
from = "whole"
to = ["records.whole"]

[[routes]]
name = "cobol"
from = "cobol.in"
to = ["cobol.records"]
[[routes.steps]]
type = "split"
records = { record_format = "V", is_rdw_big_endian = true }
"""


def test_splitter_parts_carry_message_sequence_headers(store: str, tmp_path: Path) -> None:
    with running_daemon(write_site(tmp_path, store + SPLIT)) as d:
        t = d.transport
        assert t is not None
        text = Envelope(format=TEXT, body=b"one\r\ntwo\n\nthree")
        t.send("text.in", text)
        lines = sorted(drained(d, "text.lines", 3), key=lambda e: e.sequence.position if e.sequence else -1)
        assert [e.body for e in lines] == [b"one", b"two", b"three"]
        assert [(e.sequence.id, e.sequence.position, e.sequence.end) for e in lines if e.sequence] == [
            (text.message_id, 0, False), (text.message_id, 1, False), (text.message_id, 2, True)]
        assert lines[0].message_id == f"{text.message_id}-0" and lines[0].correlation_id == text.message_id
        # the trace of the split message shows each part stored by the route, through the split step
        from coupler.bus.runtime.trace import trace

        hops = trace(t, text.message_id)["hops"]
        stored = {h["message_id"]: h["by"] for h in hops if h["event"] == "sent" and h["channel"] == "text.lines"}
        assert stored == {e.message_id: "route:lines" for e in lines}
        steps = {h["message_id"]: (h["outcome"], h["by"]) for h in hops if h["event"] == "steps"}
        assert steps == {e.message_id: ("through split-0", "route:lines") for e in lines}
        many = Envelope(format=JSON, body=json.dumps({"items": [{"sku": "a"}, {"sku": "b"}]}).encode())
        t.send("orders.in", many)
        items = drained(d, "items.out", 2)
        assert sorted(json.loads(e.body)["sku"] for e in items) == ["a", "b"]
        assert {str(e.format) for e in items} == {"test.Order.item@1;application/json"}
        t.send("xml.in", Envelope(format=XML, body=b'<batch xmlns:x="urn:x"><order no="1"/><g><order no="2"><x:n/></order></g></batch>'))
        orders = drained(d, "xml.out", 2)
        assert sorted(e.body for e in orders) == [b'<order xmlns:x="urn:x" no="1"/>', b'<order xmlns:x="urn:x" no="2"><x:n/></order>']
        # fixed-size records, put back together by a reassembling channel
        t.send("records.in", Envelope(format=TEXT, body=b"AAAABBBBCC", message_id="rec-1"))
        [whole] = drained(d, "records.whole", 1)
        assert whole.body == b"AAAABBBBCC"
        # variable-length COBOL records with big-endian RDWs, framed as the copybook reader frames them
        rdw = b"".join(len(p).to_bytes(2, "big") + b"\0\0" + p for p in (b"\xc1\xc2\xc3", b"\xf1" * 7))
        t.send("cobol.in", Envelope(format="test.Cobol@1;application/x-cobol-record", body=rdw))
        cobol = sorted(drained(d, "cobol.records", 2), key=lambda e: e.sequence.position if e.sequence else -1)
        assert [e.body for e in cobol] == [b"\xc1\xc2\xc3", b"\xf1" * 7]


SPLIT_FILTER = """
[[routes]]
name = "skus"
from = "orders.in"
to = ["items.out"]
[[routes.steps]]
type = "split"
array = "body.items"
[[routes.steps]]
type = "filter"
name = "only-a"
when = "body.sku = 'a'"
"""


def test_the_trace_says_which_parts_a_filter_discarded_and_when_it_discarded_them_all(tmp_path: Path) -> None:
    from coupler.bus.runtime.trace import trace

    with running_daemon(write_site(tmp_path, SPLIT_FILTER)) as d:
        t = d.transport
        assert t is not None
        some = Envelope(format=JSON, body=json.dumps({"items": [{"sku": "a"}, {"sku": "b"}, {"sku": "c"}]}).encode())
        none = Envelope(format=JSON, body=json.dumps({"items": [{"sku": "x"}, {"sku": "y"}]}).encode())
        t.send("orders.in", [some, none])
        [kept] = drained(d, "items.out", 1)
        assert json.loads(kept.body) == {"sku": "a"}
        settled(d, "orders.in")

        def why(message: Envelope) -> tuple[str, list[str]]:
            found = wait_for(lambda: (got := trace(t, message.message_id)) and got["messages"] and got, "its trace")
            own = found["messages"][0]
            return own["outcome"], [h["outcome"] for h in found["hops"] if h["event"] == "discarded" and h["message_id"] == message.message_id]

        # two parts of three discarded, one sent on: the message is done, the discards are said (one
        # reason, said once and counted)
        assert why(some) == ("done", ["some discarded by only-a (step 1 filter): did not match \"body.sku = 'a'\" (2 parts)"])
        # every part discarded: the message ended there
        assert why(none) == ("discarded", ["discarded by only-a (step 1 filter): did not match \"body.sku = 'a'\" (2 parts)"])


def test_a_splitter_on_a_body_that_is_not_xml_sends_nothing_and_is_invalid(store: str, tmp_path: Path) -> None:
    with running_daemon(write_site(tmp_path, store + SPLIT)) as d:
        t = d.transport
        assert t is not None
        t.send("xml.in", Envelope(format=XML, body=b"<batch><order no='1'/><order"))
        [bad] = wait_for(lambda: t.dead_letters(kind="invalid"), "the broken XML in the invalid messages")
        assert "step 0 split" in bad.reason and "not XML" in bad.reason
        assert t.receive("xml.out", "test") == []  # the part before the error was rolled back


ROUTING = """
[[routes]]
name = "dyn"
from = "dyn.in"
[[routes.steps]]
type = "dynamic_router"
channel = "orders.{body.customer.region}"
allowed = ["orders.EU", "orders.US"]
otherwise = "orders.unknown"

[[routes]]
name = "slip-start"
from = "slip.in"
to = ["slip.done"]
[[routes.steps]]
type = "routing_slip"
attach = ["stage.a", "stage.b"]

[[routes]]
name = "stage-a"
from = "stage.a"
to = ["slip.done"]
[[routes.steps]]
type = "set_properties"
properties = { visited_a = "message_id" }
[[routes.steps]]
type = "routing_slip"

[[routes]]
name = "stage-b"
from = "stage.b"
to = ["slip.done"]
[[routes.steps]]
type = "set_properties"
properties = { visited_b = "message_id" }
[[routes.steps]]
type = "routing_slip"

[[routes]]
name = "inspect"
from = "det.in"
to = ["det.out"]
[[routes.steps]]
type = "detour"
name = "inspection"
to = "det.inspect"
"""


def test_dynamic_router_routing_slip_and_detour(store: str, tmp_path: Path) -> None:
    from coupler.bus.runtime.control import ControlService

    with running_daemon(write_site(tmp_path, store + ROUTING)) as d:
        t = d.transport
        assert t is not None
        t.send("dyn.in", [order("EU", 1), order("US", 2), order("APAC", 3)])
        assert body(drained(d, "orders.EU", 1)[0])["customer"]["region"] == "EU"
        assert body(drained(d, "orders.US", 1)[0])["customer"]["region"] == "US"
        assert body(drained(d, "orders.unknown", 1)[0])["customer"]["region"] == "APAC"
        # a slip attached by the first route: stage.a, then stage.b, then the last route's `to`
        t.send("slip.in", order("EU", 1))
        [done] = drained(d, "slip.done", 1)
        assert "visited_a" in done.properties and "visited_b" in done.properties
        assert "coupler.routing-slip" not in done.properties
        # a slip carried by the message
        t.send("slip.in", order("EU", 2, **{"coupler.routing-slip": "stage.b"}))
        [done] = drained(d, "slip.done", 1)
        assert "visited_b" in done.properties and "visited_a" not in done.properties
        # detour: off, switched on from the Control Bus, off again
        service = ControlService(d)
        t.send("det.in", order("EU", 1))
        drained(d, "det.out", 1)
        assert service.call("detour", route="inspect", on=True) == [{"route": "inspect", "step": "inspection", "on": True}]
        t.send("det.in", order("EU", 2))
        assert body(drained(d, "det.inspect", 1)[0])["amount"] == 2
        service.call("detour", route="inspect", on=False)
        t.send("det.in", order("EU", 3))
        assert body(drained(d, "det.out", 1)[0])["amount"] == 3


TRANSFORM = """
[schemas]
paths = ["schemas"]

[[routes]]
name = "upgrade"
from = "readings.in"
to = ["readings.v2"]
[[routes.steps]]
type = "transform"
to_format = "test.Reading@2"

[[routes]]
name = "normalize"
from = "mixed.in"
to = ["normal.out"]
[[routes.steps]]
type = "transform"
[[routes.steps.cases]]
when = "format.name = 'test.Order'"
fields = ["id", "customer.region"]
[[routes.steps.cases]]
when = "format.name = 'test.Reading' and format.version = 1"
to_format = "test.Reading@2"
"""


METER_V1 = {"type": "record", "name": "Reading", "namespace": "test",
            "fields": [{"name": "meter", "type": "string"}, {"name": "value", "type": "int"}]}
METER_V2 = {"type": "record", "name": "Reading", "namespace": "test",
            "fields": [{"name": "meter", "type": "string"}, {"name": "value", "type": "int"},
                       {"name": "unit", "type": "string", "default": "kWh"}]}


def test_transform_converts_filters_content_and_normalizes(store: str, tmp_path: Path) -> None:
    for version, schema in ((1, METER_V1), (2, METER_V2)):
        path = tmp_path / "schemas" / "test" / "reading" / f"v{version}.avsc"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(schema))
    with running_daemon(write_site(tmp_path, store + TRANSFORM)) as d:
        t = d.transport
        assert t is not None
        registry = d.registry()
        v1 = Envelope(format="test.Reading@1", body=registry.encode({"meter": "m1", "value": 7}, "test.Reading@1"))
        t.send("readings.in", v1)
        [v2] = drained(d, "readings.v2", 1)
        assert v2.format.ref == "test.Reading@2" and registry.decode(v2.body, v2.format) == {"meter": "m1", "value": 7, "unit": "kWh"}
        t.send("mixed.in", [order("EU", 5), v1.replace(message_id="v1-again"),
                            Envelope(format=TEXT, body=b"left alone")])
        out = drained(d, "normal.out", 3)
        by_name = {e.format.name: e for e in out}
        assert json.loads(by_name["test.Order"].body) == {"customer": {"region": "EU"}, "id": "EU-5"}
        assert by_name["test.Reading"].format.version == 2
        assert by_name["test.Lines"].body == b"left alone"


EXPIRE = """
[[channels]]
name = "short"
ttl_seconds = 0.05

[[routes]]
name = "stale"
from = "exp.in"
to = ["exp.out"]
[[routes.steps]]
type = "expire"

[[routes]]
name = "to-short"
from = "short.in"
to = ["short"]

[[channels]]
name = "echoed"
ttl_seconds = 0.05

[[adapters]]
name = "echo"
type = "echo"
direction = "outbound"
channel = "to-echo"
[adapters.options]
forward_to = "echoed"
"""


def test_message_expiration_drops_and_counts_expired_messages(store: str, tmp_path: Path) -> None:
    from datetime import timedelta

    from coupler.canonical.envelope import utc_now

    with running_daemon(write_site(tmp_path, store + EXPIRE)) as d:
        t = d.transport
        assert t is not None
        # the channel's ttl_seconds: what the route sent to `short` expires before anyone takes it
        t.send("short.in", order("EU", 3))
        settled(d, "short.in")
        past = utc_now() + timedelta(seconds=0.1)
        wait_for(lambda: utc_now() > past, "the ttl of `short` to pass")
        assert t.receive("short", "late-reader") == []
        [dead] = wait_for(lambda: t.dead_letters(), "`short` expired")
        assert "expired" in dead.reason and dead.envelope is not None and body(dead.envelope)["amount"] == 3
        wait_for(lambda: t.stats("short")[0].expired == 1, "the expiry counted")  # coupler_channel_messages_expired_total
        # what an adapter publishes to a channel with ttl_seconds expires too
        t.send("to-echo", order("EU", 4))
        wait_for(lambda: bool(t.stats("echoed")) and t.stats("echoed")[0].sent == 1, "the echo published")
        past = utc_now() + timedelta(seconds=0.1)
        wait_for(lambda: utc_now() > past, "the ttl of `echoed` to pass")
        assert t.receive("echoed", "late-reader") == []
        wait_for(lambda: t.stats("echoed")[0].expired == 1, "the echo expired")
        # the expire step, met by a message that expired on its way (a Test Message: no lease first)
        stale = order("EU", 1).replace(expires_at=utc_now() - timedelta(seconds=1))
        result = d.test_message("stale", stale)
        assert result["steps"][0]["outcome"] == "expired" and result["sent"] == []
        assert d.test_message("stale", order("EU", 2))["sent"][0]["channel"] == "exp.out"


def test_ctl_test_shows_what_each_step_did_and_delivers_nothing(store: str, tmp_path: Path) -> None:
    import subprocess
    import sys

    from tests.bus.site_helpers import coupler_env

    site = write_site(tmp_path, store + FILTER + PROPERTIES)
    sample = tmp_path / "order.json"
    sample.write_text(json.dumps({"customer": {"region": "EU"}, "amount": 3, "items": [{"sku": "z"}]}))
    with running_daemon(site) as d:
        assert d.transport is not None
        out = subprocess.run(
            [sys.executable, "-m", "coupler.bus.cli.main", "ctl", "--site", str(site), "test", "tag", "--file", str(sample),
             "--format", "test.Order@1;application/json", "--json"],
            capture_output=True, text=True, env=coupler_env(), check=False)
        assert out.returncode == 0, out.stderr
        result = json.loads(out.stdout)
        assert result["result"] == "done"
        assert [s["step"] for s in result["steps"]] == ["step 0 set_properties", "step 1 wire_tap", "to"]
        assert "region=EU" in result["steps"][0]["detail"]
        assert sorted(s["channel"] for s in result["sent"]) == ["copies", "out", "tap"]
        assert d.transport.stats("out") == [] or d.transport.stats("out")[0].depth == 0
        assert d.transport.receive("tap", "test") == []
        routes = subprocess.run(
            [sys.executable, "-m", "coupler.bus.cli.main", "ctl", "--site", str(site), "routes"],
            capture_output=True, text=True, env=coupler_env(), check=False)
        assert routes.returncode == 0, routes.stderr
        row = next(line for line in routes.stdout.splitlines() if line.startswith("tag "))
        assert "set_properties-0 > wire_tap-1" in row and "out, copies" in row


def test_the_worked_examples_of_the_patterns_page_are_valid_sites() -> None:
    from coupler.bus.config.loader import parse_site
    from coupler.bus.plugins.manager import step_types

    page = (Path(__file__).resolve().parents[3] / "docs" / "patterns.md").read_text()
    blocks = re.findall(r"```toml\n(.*?)```", page, flags=re.S)
    assert len(blocks) >= 7
    types = step_types(plugin_manager(entry_points=False))
    for block in blocks:
        parse_site(block, "site.toml", step_types=types)
    listed = re.findall(r"^\| ([A-Z][A-Za-z -]+) \| (offered|partly|later) \|", page, flags=re.M)
    assert len(listed) == 65, len(listed)


SELECT = """
[[routes]]
name = "high"
from = "orders"
select = "properties.priority = 'high'"
to = ["orders.fast"]

[[adapters]]
name = "echo-eu"
type = "echo"
direction = "outbound"
channel = "docs"
select = "body.customer.region = 'EU'"
[adapters.options]
forward_to = "docs.eu"
"""


def test_selective_consumers_take_only_what_they_select(store: str, tmp_path: Path) -> None:
    with running_daemon(write_site(tmp_path, store + SELECT)) as d:
        t = d.transport
        assert t is not None
        t.send("orders", [order("EU", 1, priority="high"), order("EU", 2, priority="low"), order("US", 3, priority="high")])
        fast = drained(d, "orders.fast", 2)
        assert sorted(body(e)["amount"] for e in fast) == [1, 3]
        t.send("docs", [order("US", 4), order("EU", 5)])
        [eu] = drained(d, "docs.eu", 1)
        assert body(eu)["amount"] == 5
        # what nobody selected stays on its channel for another consumer
        left = wait_for(lambda: t.receive("orders", "someone-else", max=10), "the low-priority order left on orders")
        assert [body(x.envelope)["amount"] for x in left] == [2]
        left = wait_for(lambda: t.receive("docs", "someone-else", max=10), "the US document left on docs")
        assert [body(x.envelope)["amount"] for x in left] == [4]


def test_the_console_switches_a_detour(store: str, tmp_path: Path) -> None:
    from coupler.bus.runtime.console.server import read_token

    site_file = write_site(tmp_path, store + ROUTING + '\n[http]\nlisten = "127.0.0.1:0"\n')
    with running_daemon(site_file) as d:
        assert d.transport is not None and d.console_url is not None
        token = read_token(load_site(site_file))
        base = d.console_url.split("/?")[0].rstrip("/")

        def call(path: str, method: str = "GET") -> list[dict]:
            req = urllib.request.Request(base + path, method=method, data=b"{}" if method == "POST" else None,
                                         headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=10) as r:
                return json.loads(r.read())

        assert call("/api/routes/inspect/detour") == [{"route": "inspect", "step": "inspection", "on": False}]
        assert call("/api/routes/inspect/detour/on", "POST")[0]["on"] is True
        d.transport.send("det.in", order("EU", 9))
        assert body(drained(d, "det.inspect", 1)[0])["amount"] == 9
        with pytest.raises(urllib.error.HTTPError) as info:
            call("/api/routes/nowhere/detour")
        assert info.value.code == 404 and "no route named 'nowhere'" in info.value.read().decode()
        # a Test Message from the console: what each step did, nothing stored
        req = urllib.request.Request(
            base + "/api/routes/dyn/test", method="POST",
            data=json.dumps({"body": json.dumps({"customer": {"region": "EU"}}),
                             "format": "test.Order@1;application/json"}).encode(),
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as r:
            result = json.loads(r.read())
        assert result["steps"][0]["outcome"] == "deliver" and result["sent"][0]["channel"] == "orders.EU"
        assert d.transport.receive("orders.EU", "test") == []


def test_daemon_check_refuses_a_rule_on_a_body_field_written_as_a_bare_name(tmp_path: Path) -> None:
    import subprocess
    import sys

    from tests.bus.site_helpers import coupler_env

    site = write_site(tmp_path, '[[routes]]\nname = "r"\nfrom = "in"\n[[routes.rules]]\nwhen = "status = \'ACTIVE\'"\nto = ["out"]\n')
    out = subprocess.run([sys.executable, "-m", "coupler.bus.cli.main", "daemon", "--site", str(site), "--check"],
                         capture_output=True, text=True, env=coupler_env(), timeout=120)
    assert out.returncode != 0 and "Traceback" not in out.stderr
    lines = [line for line in out.stderr.splitlines() if "status" in line]
    assert len(lines) == 1 and "routes[r].rules[0].when" in lines[0] and "write body.status" in lines[0], out.stderr


IDEMPOTENT_BODY = """
[[routes]]
name = "once"
from = "in"
idempotent_key = "body.id"
to = ["out"]
"""


def test_an_idempotent_key_on_a_body_field(store: str, tmp_path: Path) -> None:
    with running_daemon(write_site(tmp_path, store + IDEMPOTENT_BODY)) as d:
        t = d.transport
        assert t is not None
        t.send("in", [order("EU", 1), order("EU", 1), order("EU", 2), Envelope(format=TEXT, body=b"no id")])
        out = drained(d, "out", 2)
        assert sorted(body(e)["id"] for e in out) == ["EU-1", "EU-2"]
        [bad] = wait_for(lambda: t.dead_letters(kind="invalid"), "the text message without a body id")
        assert "business key 'body.id'" in bad.reason and "Avro or JSON body" in bad.reason
        settled(d, "in")
        assert t.receive("out", "test") == []


BY_IDENTITY = """
[[routes]]
name = "to-crm"
from = "customers"
otherwise = "customers.unknown"
[[routes.steps]]
type = "dynamic_router"
identity = "crm/{body.provider}"
otherwise = "customers.unknown"

[[adapters]]
name = "acme-crm"
type = "echo"
direction = "outbound"
channel = "crm.acme"
identity = { class = "crm", provider = "acme", name = "customers", version = "1" }
[adapters.options]
forward_to = "acme.received"
"""


def test_dynamic_router_by_application_identity(store: str, tmp_path: Path) -> None:
    with running_daemon(write_site(tmp_path, store + BY_IDENTITY)) as d:
        t = d.transport
        assert t is not None
        acme = Envelope(format=JSON, body=json.dumps({"provider": "acme", "id": 1}).encode())
        other = Envelope(format=JSON, body=json.dumps({"provider": "globex", "id": 2}).encode())
        t.send("customers", [acme, other])
        [got] = drained(d, "acme.received", 1)
        assert json.loads(got.body)["id"] == 1 and got.properties["echoed-by"] == "acme-crm"
        [unknown] = drained(d, "customers.unknown", 1)
        assert json.loads(unknown.body)["provider"] == "globex"


AGGREGATE = """
[[routes]]
name = "batches"
from = "lines.in"
to = ["batches.out"]
[[routes.steps]]
type = "aggregate"
correlation = "body.customer.region"
complete_size = 2
strategy = "lines"
"""


def test_a_test_message_through_a_stateful_step_stores_nothing(tmp_path: Path) -> None:
    with running_daemon(write_site(tmp_path, AGGREGATE)) as d:
        t = d.transport
        assert t is not None
        t.send("lines.in", order("EU", 1))  # the first of a group of two, held in the store
        wait_for(lambda: t.stats("lines.in")[0].depth == 0, "the first order held")
        result = d.test_message("batches", order("EU", 2))
        assert result["result"] == "done" and result["steps"][0]["step"] == "step 0 aggregate"
        assert result["state_writes"] == {} and t.receive("batches.out", "test") == []
        t.send("lines.in", order("EU", 3))  # the real group is untouched: this completes it
        [batch] = drained(d, "batches.out", 1)
        assert b"EU-1" in batch.body and b"EU-3" in batch.body and b"EU-2" not in batch.body


ROLLED_BACK = """
[[routes]]
name = "jsonl"
from = "in"
to = ["out"]
[[routes.steps]]
type = "split"
lines = true
[[routes.steps]]
type = "filter"
when = "body.kind != 'noise'"
"""


def test_what_steps_drop_is_counted_only_when_the_delivery_commits(tmp_path: Path) -> None:
    with running_daemon(write_site(tmp_path, ROLLED_BACK)) as d:
        t = d.transport
        assert t is not None
        t.send("in", Envelope(format=JSON, body=b'{"kind": "noise"}\nnot json\n'))  # the 2nd line is invalid
        [bad] = wait_for(lambda: t.dead_letters(kind="invalid"), "the batch with a bad line in the invalid messages")
        assert "step 1 filter" in bad.reason
        assert d.pipelines["jsonl"].counts == {}  # the discard of line 1 was rolled back with the rest
        t.send("in", Envelope(format=JSON, body=b'{"kind": "noise"}\n{"kind": "order"}\n'))
        [kept] = drained(d, "out", 1)
        assert json.loads(kept.body) == {"kind": "order"}
        settled(d, "in")
        # counted right after the commit, which the channel's depth may show a moment before
        wait_for(lambda: d.pipelines["jsonl"].counts, "the discard counted")
        assert d.pipelines["jsonl"].counts == {("step 1 filter", "discarded"): 1}


def test_a_split_labels_its_lines_with_part_format() -> None:
    from coupler.bus.runtime.steps.pipeline import try_step
    from coupler.bus.runtime.steps.split import Split

    whole = Envelope(format=FormatIndicator.parse("acme.Orders@1;application/x-ndjson"), body=b'{"n": 1}\n\n{"n": 2}\n',
                     properties={"file.name": "o.jsonl"})
    outcome, _ = try_step(Split, {"lines": True, "part_format": "acme.Order@1;application/json"}, whole)
    parts = list(outcome.messages)  # type: ignore[attr-defined]
    assert [(p.body, str(p.format), p.message_id, p.properties) for p in parts] == [
        (b'{"n": 1}', "acme.Order@1;application/json", f"{whole.message_id}-0", {"file.name": "o.jsonl"}),
        (b'{"n": 2}', "acme.Order@1;application/json", f"{whole.message_id}-1", {"file.name": "o.jsonl"}),
    ]
    assert [(p.sequence.position, p.sequence.end) for p in parts if p.sequence] == [(0, False), (1, True)]
    parts[0].properties["x"] = "y"  # each part's headers are its own
    assert "x" not in parts[1].properties and "x" not in whole.properties


def test_a_store_failure_in_a_step_retries_the_delivery_it_does_not_make_the_message_invalid() -> None:
    from coupler.bus.runtime.router import Route
    from coupler.bus.runtime.steps.base import Step, StepSetup
    from coupler.bus.runtime.steps.pipeline import Pipeline
    from coupler.bus.transport.base import TransportError

    class Flaky(Step):
        type_name = "flaky"

        def process(self, message, ctx):  # type: ignore[no-untyped-def]
            raise TransportError("PostgreSQL: deadlock detected")

    pipe = Pipeline("r", [Flaky(None, StepSetup("r", 0, "routes[r].steps[0]", name="flaky-0"))],
                    Route("r", "in", (), to=("out",)))
    result = pipe.test(Envelope(format=FormatIndicator.parse("acme.Order@1;application/json"), body=b"{}"))
    assert result["result"] == "retry at step 0 flaky" and result["sent"] == []
