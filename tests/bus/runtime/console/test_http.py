"""The daemon's HTTP endpoint: token, /metrics moving as messages flow, /healthz, the JSON API
and the message trace (the same hop list from the API and `coupler ctl trace`)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import urllib.error
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from coupler.bus.config.loader import load_site
from coupler.bus.runtime.console.metrics import metric_names
from coupler.bus.runtime.console.server import TOKEN_FILE, console_url, read_token
from coupler.canonical.errors import CouplerError
from tests.bus.runtime.console.helpers import console_site
from tests.bus.site_helpers import REPO, make_daemon, running_daemon, wait_for


def _get(url: str, token: str | None = None) -> tuple[int, bytes]:
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def _post(url: str, token: str, body: dict) -> tuple[int, dict]:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def _samples(url: str) -> dict[tuple[str, tuple], float]:
    status, body = _get(url + "/metrics")
    assert status == 200
    out = {}
    for family in text_string_to_metric_families(body.decode()):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def test_metrics_token_health_and_trace(tmp_path):
    site_file = console_site(tmp_path)
    with running_daemon(site_file, plugins=None) as daemon:
        url = daemon.console_url
        assert url and url.startswith("http://127.0.0.1:")
        site = load_site(site_file)
        token_file = site.data_dir / TOKEN_FILE
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        token = read_token(site)
        assert console_url(site) == f"{url}/?token={token}"

        # no token, a wrong one: 401 on the API and the pages; /metrics and /healthz are open
        assert _get(url + "/api/channels")[0] == 401
        assert _get(url + "/api/channels", "wrong")[0] == 401
        assert _get(url + "/channels")[0] == 401
        status, body = _get(url + "/healthz")
        assert status == 200 and json.loads(body)["status"] == "ok"

        before = _samples(url)
        for i in range(3):
            (tmp_path / "in" / f"order-{i}.json").write_text(json.dumps({"order": i}))
        wait_for(lambda: len(list((tmp_path / "out").iterdir())) == 3, "three files delivered")

        def moved():
            after = _samples(url)
            key = (("channel", "orders"),)
            # an acknowledgement commits before the adapter counts the message and its delivery time is recorded
            figures = [("coupler_channel_messages_acknowledged_total", key),
                       ("coupler_adapter_units_out_total", (("adapter", "drop-in"),)),
                       ("coupler_adapter_units_out_total", (("adapter", "drop-out"),)),
                       ("coupler_adapter_delivery_seconds_count", (("adapter", "drop-out"),))]
            return after if all(after.get(f, 0) >= 3 for f in figures) else None

        after = wait_for(moved, "the acknowledged counter of orders, the adapters' units and deliveries at 3")
        key = (("channel", "orders"),)
        assert after[("coupler_channel_messages_sent_total", key)] - before.get(("coupler_channel_messages_sent_total", key), 0) == 3
        assert after[("coupler_adapter_units_out_total", (("adapter", "drop-in"),))] == 3
        assert after[("coupler_adapter_units_out_total", (("adapter", "drop-out"),))] == 3
        assert after[("coupler_adapter_delivery_seconds_count", (("adapter", "drop-out"),))] == 3
        assert after[("coupler_adapter_up", (("adapter", "drop-in"), ("direction", "inbound"), ("type", "filedrop")))] == 1
        assert after[("coupler_channel_depth", key)] == 0
        names = {name for name, _ in after}
        for name in metric_names():
            if name.startswith(("coupler_batch", "coupler_step_", "coupler_aggregate_")) or name in ("coupler_adapter_command_seconds", "coupler_route_seconds", "coupler_route_step_messages_total"):
                continue  # the site has no batch job; no command or route ran, no step dropped anything (labelled figures show once there)
            assert any(n == name or n.startswith(name + "_") or n == name + "_total" for n in names), name

        # the API: the same operations as coupler ctl
        status, body = _get(url + "/api/channels", token)
        orders = next(c for c in json.loads(body) if c["channel"] == "orders")
        assert orders["acked"] == 3 and "rates" in orders
        assert _post(url + "/api/adapters/drop-out/pause", token, {}) == (200, {"adapter": "drop-out", "paused": True})
        assert daemon.adapters["drop-out"].paused.is_set()
        assert _post(url + "/api/adapters/drop-out/resume", token, {})[0] == 200
        assert _post(url + "/api/adapters/nobody/pause", token, {})[0] == 404

        # the trace of one file: the API and `coupler ctl trace` show the same hops
        status, body = _get(url + "/api/trace?q=order-1.json", token)
        trace = json.loads(body)
        assert len(trace["trace_ids"]) == 1 and len(trace["messages"]) == 1
        events = [(h["event"], h["channel"], h["by"]) for h in trace["hops"]]
        assert events == [("sent", "orders", "adapter:drop-in"), ("received", "orders", "adapter:drop-out"),
                          ("delivered", "orders", "adapter:drop-out"), ("acked", "orders", "adapter:drop-out")]
        # where the outbound adapter wrote it is a hop of its own (journaled with the acknowledgement)
        assert trace["hops"][2]["outcome"] == f"to {tmp_path / 'out' / 'order-1.json'}"
        by_id = json.loads(_get(url + "/api/trace?q=" + trace["messages"][0]["message_id"], token)[1])
        assert by_id["hops"] == trace["hops"]
        ctl = subprocess.run(
            [sys.executable, "-m", "coupler.bus.cli.main", "ctl", "--site", str(site_file), "trace", "order-1.json", "--json"],
            capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(REPO)), timeout=240,
        )
        assert ctl.returncode == 0, ctl.stderr
        assert json.loads(ctl.stdout)["hops"] == trace["hops"]
        text = subprocess.run(
            [sys.executable, "-m", "coupler.bus.cli.main", "ctl", "--site", str(site_file), "trace", trace["trace_ids"][0]],
            capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(REPO)), timeout=240,
        )
        assert text.returncode == 0 and "adapter:drop-out" in text.stdout and "done" in text.stdout
        assert f"to {tmp_path / 'out' / 'order-1.json'}" in text.stdout


def test_plain_http_on_a_remote_address_is_refused(tmp_path):
    daemon = make_daemon(console_site(tmp_path, listen="0.0.0.0:0"), plugins=None)
    with pytest.raises(CouplerError, match="refusing to serve the console as plain HTTP on non-loopback address 0.0.0.0"):
        daemon.start()
    assert daemon.stopped.is_set()


def test_init_writes_the_listen_setting_commented_out(tmp_path):
    from coupler.bus.config.doc import render_template

    assert '# listen = "127.0.0.1:8780"' in render_template()


def _self_signed(directory) -> tuple[str, str]:
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    import ipaddress

    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .sign(key, hashes.SHA256()))
    (directory / "console.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (directory / "console.key").write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                               serialization.NoEncryption()))
    return "console.pem", "console.key"


def test_https_with_the_configured_certificate(tmp_path):
    import ssl

    from coupler.bus.runtime.console.server import parse_listen

    cert, key = _self_signed(tmp_path)
    site_file = console_site(tmp_path, extra="")
    text = site_file.read_text().replace('listen = "127.0.0.1:0"', f'listen = "127.0.0.1:0"\ntls_cert = "{cert}"\ntls_key = "{key}"')
    site_file.write_text(text)
    with running_daemon(site_file, plugins=None) as daemon:
        url = daemon.console_url
        assert url.startswith("https://127.0.0.1:")
        ctx = ssl.create_default_context(cafile=str(tmp_path / cert))
        token = read_token(load_site(site_file))
        req = urllib.request.Request(url + "/api/status", headers={"Authorization": f"Bearer {token}"})
        with urllib.request.urlopen(req, context=ctx, timeout=10) as r:
            assert json.loads(r.read())["site"] == "console-test"
        with pytest.raises(urllib.error.URLError):  # a client that does not trust it refuses it
            urllib.request.urlopen(url + "/healthz", timeout=10)
    # with TLS, a non-loopback address is allowed (only checked here: tests bind loopback)
    http = load_site(site_file).http.model_copy(update={"listen": "0.0.0.0:8780"})
    assert parse_listen(http, site_file) == ("0.0.0.0", 8780)


def test_healthz_fails_while_an_adapter_is_down(tmp_path):
    site_file = console_site(tmp_path)
    with running_daemon(site_file, plugins=None) as daemon:
        url = daemon.console_url
        daemon.statistics.set_state("drop-out", "failed", "disk full")
        status, body = _get(url + "/healthz")
        assert status == 503 and json.loads(body)["failed_adapters"] == ["drop-out"]
        ctl = subprocess.run(
            [sys.executable, "-m", "coupler.bus.cli.main", "ctl", "--site", str(site_file), "console"],
            capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(REPO)), timeout=240,
        )
        assert ctl.returncode == 0, ctl.stderr
        assert ctl.stdout.strip() == f"{url}/?token={read_token(load_site(site_file))}"


def test_an_otlp_endpoint_without_opentelemetry_changes_nothing(tmp_path, monkeypatch, caplog):
    # as if opentelemetry were not installed (importing a module mapped to None fails)
    monkeypatch.setitem(sys.modules, "opentelemetry.exporter.otlp.proto.http.trace_exporter", None)
    site_file = console_site(tmp_path)
    site_file.write_text(site_file.read_text() + '\n[tracing]\notlp_endpoint = "http://127.0.0.1:9/v1/traces"\n')
    with caplog.at_level("WARNING", logger="coupler.tracing"), running_daemon(site_file, plugins=None) as daemon:
        assert daemon.observer.spans is None
        (tmp_path / "in" / "a.json").write_text("{}")
        wait_for(lambda: (tmp_path / "out" / "a.json").exists(), "the file delivered")
    assert "opentelemetry-sdk and opentelemetry-exporter-otlp-proto-http are not installed" in caplog.text
