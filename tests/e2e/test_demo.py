"""`make demo` end to end, with a small nightly extract (``--extract-mb 1``).

The demo runs as a user runs it (``python -m examples.demo.demo``; its Spark JVM with the client
JIT only, ``SPARK_SUBMIT_OPTS``): real child processes for the four legacy systems, OpenSSH's
sshd for the life drop box, ``coupler daemon``, ``coupler send``, ``coupler ctl dlq``,
``coupler batch ingest`` on Spark. The expected answers are worked out here from each legacy
system's documented rules, not read back from the demo.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from coupler.bus.batch.jobs import LEAN_JVM_OPTIONS
from coupler.translators.copybook.decoder import RecordDecoder
from coupler.translators.copybook.layout import build_layout
from coupler.translators.copybook.parser import parse_file
from tests.bus.site_helpers import REPO

pytestmark = pytest.mark.slow

COPYBOOKS = REPO / "examples" / "legacy" / "copybooks"
EXTRACT_MB = 1


def cents(value: Decimal) -> str:
    return str(value.quantize(Decimal("0.01"), ROUND_HALF_UP))


# the first test's time includes the demo's run (the module fixture)
pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, dict]:
    out = tmp_path_factory.mktemp("demo") / "var-demo"
    # Spark's JVM (``coupler batch ingest`` of a 1 MB extract, half the demo's time) lives
    # seconds: the client JIT only (read by spark-submit's launcher; a user's run keeps both)
    env = {**os.environ, "SPARK_SUBMIT_OPTS": LEAN_JVM_OPTIONS}
    done = subprocess.run(
        [sys.executable, "-m", "examples.demo.demo", "--out", str(out), "--extract-mb", str(EXTRACT_MB)],
        cwd=REPO, capture_output=True, text=True, timeout=840, env=env,  # a hang guard: 3 min quiet, more at load 20
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    return out, done.stdout, json.loads((out / "summary.json").read_text())


def test_the_agent_changes_the_address_once_and_four_systems_answer(demo: tuple[Path, str, dict]) -> None:
    out, stdout, summary = demo
    assert summary["send"]["replies"] == 4 and summary["send"]["exit"] == 0
    replies = json.loads((out / "agent" / "replies.json").read_text())
    assert sorted(r["adapter"] for r in replies) == ["auto-tcp", "health-soap", "home-drop", "life-sftp-out"]
    assert all(r["ok"] and r["details"]["status"] == "delivered" for r in replies)
    systems = summary["systems"]

    # auto: 28,500.00 x 3.5 % x 1.20 (one claim) x 1.30 (CA) after the move; x 1.00 (IL) before
    base = Decimal("28500.00") * Decimal("0.035") * Decimal("1.20")
    auto = systems["auto"]["came_back"]
    assert (auto["AR_STATUS"], auto["AR_POLICY_ID"]) == ("00", "A-7730019")
    assert Decimal(auto["AR_PREMIUM"]) == Decimal(cents(base * Decimal("1.30")))
    assert auto["AR_MESSAGE"] == f"MOVED TO CA: {cents(base)} -> {cents(base * Decimal('1.30'))}"

    # health: 412.00 x state factor x (1 + 0.01 x first ZIP digit): IL 62701 -> CA 90401
    health = systems["health"]["came_back"]
    assert health["previousMonthlyPremium"] == cents(Decimal("412.00") * Decimal("1.06"))
    assert health["monthlyPremium"] == cents(Decimal("412.00") * Decimal("1.18") * Decimal("1.09"))
    assert (health["ratingArea"], health["effectiveDate"]) == ("CA-904", "2025-03-01")

    # home: 1,360.00 x 1.20 (CA) x 1.10 (wind-exposed ZIP prefix 90)
    home = systems["home"]["came_back"]
    assert (home["status"], home["policyNumber"], home["territory"]) == ("ACCEPTED", "H-2209917", "CA-904")
    assert home["annualPremium"] == cents(Decimal("1360.00") * Decimal("1.20") * Decimal("1.10"))

    # life: every policy of the customer re-taxed at CA's 2.35 % premium tax
    life = systems["life"]["came_back"]
    assert (life["LC_STATUS"], life["LC_STATE"], life["LC_POLICY_COUNT"]) == ("00", "CA", 2)
    assert [(p["LC_POLICY_ID"], Decimal(str(p["LC_PREMIUM"]))) for p in life["LC_POLICY"]] == [
        ("L-40012873", Decimal(cents(Decimal("1180.00") * Decimal("1.0235")))),
        ("L-40012874", Decimal(cents(Decimal("240.00") * Decimal("1.0235")))),
    ]
    for name in ("life", "health", "auto", "home"):
        assert 0 < systems[name]["seconds"] < 60, (name, systems[name]["seconds"])
        assert f"{name.upper()} ({systems[name]['adapter']}" in stdout


def test_the_life_system_reads_version_1_as_an_ebcdic_fixed_width_file(demo: tuple[Path, str, dict]) -> None:
    out, _, summary = demo
    assert summary["systems"]["life"]["reads"].startswith("acme.AddressChange@1")
    assert summary["transport"]["life"].startswith("SFTP (OpenSSH sshd"), summary["transport"]
    (sent,) = (out / "life" / "dropbox" / "inbox" / "processed").glob("ADDRCHG.*.dat")
    data = sent.read_bytes()
    assert len(data) == 120 and data[:2] == "AC".encode("cp037")
    record = RecordDecoder(build_layout(parse_file(COPYBOOKS / "life-addrchg.cpy")), None, policy="strict").decode(data)
    assert (record["LA_CUSTOMER_ID"], record["LA_STATE"], record["LA_ZIP"]) == ("C-100234", "CA", 90401)
    assert "AG-0042" not in data.decode("cp037")  # the agent is a version-2 field: converted away


def test_the_malformed_record_was_dead_lettered_corrected_and_replayed(demo: tuple[Path, str, dict]) -> None:
    out, stdout, summary = demo
    dl = summary["dead_letters"]
    assert dl["dead_letter"]["kind"] == "invalid" and dl["dead_letter"]["channel"] == "home.changes"
    assert "zip" in dl["dead_letter"]["reason"] and "[0-9]{5}" in dl["dead_letter"]["reason"]
    assert dl["corrected"]["postal_code"] == ["9O4O1", "90401"]
    assert "<ho:status>ACCEPTED</ho:status>" in dl["ack_after_correction"]
    assert dl["left"] == 0
    assert "$ coupler ctl --site" in stdout and "dlq list" in stdout and "dlq replay" in stdout


def test_the_nightly_extract_went_through_spark_into_parquet(demo: tuple[Path, str, dict]) -> None:
    _, _, summary = demo
    nightly = summary["nightly"]
    expected = -(-EXTRACT_MB * 1024 * 1024 // 144)
    assert (nightly["records"], nightly["errors"]) == (expected, 0)
    assert nightly["event"]["format"].startswith("coupler.BatchCompleted@1")
    assert nightly["event"]["body"]["records"] == expected
    table = pq.read_table(nightly["output"])
    assert table.num_rows == expected
    row = table.slice(10, 1).to_pylist()[0]  # record 10: the states cycle in tens from CA, 10 % 4 = 2 beneficiaries
    assert (row["LM_POLICY_ID"], row["LM_STATE"], row["LM_STATUS"]) == ("L-50000010", "CA", "A")
    assert row["LM_BENEFICIARY_COUNT"] == 2
    assert [b["LM_BEN_SHARE"] for b in row["LM_BENEFICIARY"]] == [50, 50]  # OCCURS DEPENDING ON: 2 of 3


def test_the_readmes_demo_commands_are_the_demos_and_run_on_its_site(demo: tuple[Path, str, dict]) -> None:
    """The README's two commands of the demo's site, as written, with its ``var/demo`` the demo's
    output folder: ``coupler send`` is the command the demo printed and ran (which adds
    ``--json``), and ``coupler ctl status`` shows the stopped site: its adapters and channels,
    with the counters of the run."""
    import re
    import shlex

    from tests.e2e.test_docs_shell import block_after, commands
    from tests.e2e.test_site_shell import sh

    out, stdout, _ = demo
    readme = (REPO / "README.md").read_text()
    (send,) = commands(block_after(readme, "issues the change as the common command `send` of `acme.AddressChange@2`:", "sh"))
    ran = re.search(r"^\$ (coupler send .*)$", stdout, re.M)
    assert ran, stdout[-3000:]
    assert shlex.split(send.replace("var/demo", str(out))) + ["--json"] == shlex.split(ran.group(1))

    (status,) = [c for c in commands(block_after(readme, "the `coupler` command is in `.venv/bin/`:", "sh"))
                 if c.startswith("coupler ctl")]
    done = sh(status.replace("var/demo", str(out)), REPO)
    assert done.stdout.startswith("site acme-insurance: stopped (no daemon runs)\n"), done.stdout
    adapters = re.findall(r"^(\S+)\s+\S+\s+stopped\s", done.stdout.split("\nCHANNEL ", 1)[0], re.M)
    assert {"auto-tcp", "health-soap", "home-drop", "life-sftp-out"} <= set(adapters), done.stdout
    # the one command the agent sent: in 1, out 1, nothing left, failed or dead
    assert re.search(r"^coupler\.commands\s+queue\s+0\s+0\s+-\s+1\s+1\s+0\s+0$", done.stdout, re.M), done.stdout
