"""Acceptance of issue 7, the Message Bus example of the seeds end to end.

`coupler daemon` (a real child process) runs a site with a SOAP inbound endpoint and a socket
client adapter. zeep, knowing only the WSDL it downloads from ``?wsdl``, asks for an auto
insurance quote; the SOAP adapter turns the request into a ``request`` command on the bus; the
dispatcher hands it to the socket adapter, which writes a fixed-width EBCDIC record (copybook
layouts) to the legacy TCP rating service and reads its reply record; the reply flows back
over the bus and becomes the SOAP response. A request the service refuses reaches zeep as a
SOAP fault carrying the service's reason.
"""

from __future__ import annotations

import shutil
import signal
from decimal import Decimal
from pathlib import Path

import pytest
import zeep
from zeep.exceptions import Fault

from coupler.bus.config.loader import load_site
from coupler.bus.runtime.control import ControlClient
from examples.legacy.auto_policy_service import QuoteRequest, running_service
from tests.bus.site_helpers import REPO, start_daemon_process, wait_for, write_site

pytestmark = pytest.mark.slow

LEGACY = REPO / "examples" / "legacy"

SITE = """
[site]
name = "auto-policy"
data_dir = "data"

[commands]
reply_timeout_seconds = 20

# the SOAP face of the rating transaction: requests become `request` commands for auto-rating
[[adapters]]
name = "policy-soap"
type = "soap"
direction = "inbound"
[adapters.options]
mode = "server"
wsdl = "legacy/auto_policy.wsdl"
target = "auto-rating"
host = "127.0.0.1"
listen_port = 0
timeout = 20
formats = {{ GetAutoQuote = "acme.AutoQuoteRequest@1" }}

# the legacy rating service over raw TCP: 2-byte length prefix, EBCDIC copybook records
[[adapters]]
name = "auto-rating-tcp"
type = "socket"
direction = "outbound"
targets = ["auto-rating"]
commands = ["request", "ping", "describe"]
format = "acme.AutoQuoteRequest@1"
[adapters.options]
mode = "client"
host = "{host}"
port = {port}
framing = "length"
length_bytes = 2
translator = "examples.legacy.auto_policy_translator:translator"
copybook_out = "legacy/copybooks/autoq-request.cpy"
copybook_in = "legacy/copybooks/autoq-reply.cpy"
response_timeout = 10
"""


def _site_dir(tmp_path: Path, address: tuple[str, int]) -> Path:
    """A site directory as an operator lays it out: site.toml with its WSDL and copybooks
    beside it, named by relative paths."""
    site_dir = tmp_path / "site"
    shutil.copytree(LEGACY, site_dir / "legacy", ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    return write_site(site_dir, SITE.format(host=address[0], port=address[1]))


def _soap_url(site_file: Path) -> str:
    """The SOAP endpoint's address, asked through the bus (a `describe` command)."""
    client = ControlClient(load_site(site_file).control_socket)
    (reply,) = client.call("command", command="describe", target="policy-soap", timeout=10)
    assert reply["ok"], reply
    return reply["details"]["description"]["url"]  # the description is an object in the reply


def test_soap_request_answered_by_the_fixed_width_tcp_service(tmp_path: Path) -> None:
    with running_service() as (service, address):
        site_file = _site_dir(tmp_path, address)
        daemon = start_daemon_process(site_file)
        try:
            url = _soap_url(site_file)
            client = zeep.Client(f"{url}?wsdl")
            soap11 = client.bind("AutoPolicyService", "AutoPolicyPort11")
            soap12 = client.bind("AutoPolicyService", "AutoPolicyPort12")

            # 25,000.00 x 3.5 % = 875.00, x 1.25 for New York; factors 1.25 -> risk class B
            quote = soap11.GetAutoQuote(policyId="P-1001", driverAge=40, vehicleYear=2020,
                                        vehicleValue=Decimal("25000.00"), claimsLast5Years=0, state="NY")
            assert (quote.policyId, quote.premium, quote.currency, quote.riskClass) == ("P-1001", Decimal("1093.75"), "USD", "B")

            # 8,000.00 x 3.5 % = 280.00 x 1.60 (age 22) x 0.90 (15-year-old car) x 1.20 (one claim)
            quote = soap12.GetAutoQuote(policyId="P-1002", driverAge=22, vehicleYear=2010,
                                        vehicleValue=Decimal("8000.00"), claimsLast5Years=1, state="TX")
            assert (quote.premium, quote.riskClass) == (Decimal("483.84"), "C")

            # the service's own rule refuses a 16-year-old driver: a Client fault with its reason
            with pytest.raises(Fault) as refused:
                soap11.GetAutoQuote(policyId="P-1003", driverAge=16, vehicleYear=2022,
                                    vehicleValue=Decimal("12000.00"), claimsLast5Years=0, state="CA")
            assert refused.value.code.endswith("Client")
            assert refused.value.message == (
                "policy P-1003 refused by the auto policy rating service: DRIVER AGE 16 BELOW MINIMUM 18"
            )
            assert refused.value.detail.find("{urn:coupler:fault}fault/{urn:coupler:fault}code").text == "invalid"
            with pytest.raises(Fault) as refused12:
                soap12.GetAutoQuote(policyId="P-1004", driverAge=45, vehicleYear=2018,
                                    vehicleValue=Decimal("30000.00"), claimsLast5Years=5, state="FL")
            assert refused12.value.code.endswith("Sender")
            assert refused12.value.message.endswith("5 CLAIMS IN 5 YEARS, MAXIMUM 3")

            # the TCP service really read every field of every record it was sent
            assert service.requests == [
                QuoteRequest("AQ01", "P-1001", 40, 2020, Decimal("25000.00"), 0, "NY"),
                QuoteRequest("AQ01", "P-1002", 22, 2010, Decimal("8000.00"), 1, "TX"),
                QuoteRequest("AQ01", "P-1003", 16, 2022, Decimal("12000.00"), 0, "CA"),
                QuoteRequest("AQ01", "P-1004", 45, 2018, Decimal("30000.00"), 5, "FL"),
            ]

            # everything went through the bus: the socket adapter took four commands and
            # answered each (two refusals counted as failed); nothing is left in a channel
            # (the counters and the last acknowledgement may lag the reply by an instant: wait)
            control = ControlClient(load_site(site_file).control_socket)

            def settled() -> dict | None:
                got = control.call("status")
                tcp = next(a for a in got["adapters"] if a["name"] == "auto-rating-tcp")
                done = (tcp["in"], tcp["failed"]) == (4, 2) and all(c["depth"] == 0 for c in got["channels"])
                return got if done else None

            status = wait_for(settled, "four commands counted and every channel empty", timeout=30)
            adapters = {a["name"]: a for a in status["adapters"]}
            assert adapters["auto-rating-tcp"]["state"] == "running" and adapters["policy-soap"]["state"] == "running"
            assert (adapters["auto-rating-tcp"]["in"], adapters["auto-rating-tcp"]["failed"]) == (4, 2)
            assert all(c["depth"] == 0 for c in status["channels"]), status["channels"]
        finally:
            daemon.send_signal(signal.SIGTERM)
            _, err = daemon.communicate(timeout=30)
        assert daemon.returncode == 0, err
        assert "Traceback" not in err, err
