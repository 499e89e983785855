"""``make demo``: the reference site of the Message Bus example, end to end, on embedded defaults.

An insurance agent changes a customer's home address once; four policy systems are updated
(Woolf & Brown's Message Bus). The demo

1. starts the four legacy systems of ``examples/legacy`` as processes of their own: the life
   batch job behind an SFTP drop box (a real OpenSSH sshd; a plain file drop when sshd cannot
   run), the health SOAP service, the auto TCP service, the homeowners XML system;
2. renders ``examples/demo/site.toml`` into ``var/demo/site.toml`` and starts
   ``coupler daemon`` on it;
3. issues the agent's change with ``coupler send --command send --target policies`` as an
   ``acme.AddressChange@2`` document; the bus translates it for each system (the life system
   reads version 1: the schema registry converts it) and aggregates the four replies;
4. collects what came back: the replies, the life job's confirmation file and the homeowners
   system's acknowledgement;
5. takes the branch offices' file of changes, one of them malformed: it lands in the dead
   letters, is listed with ``coupler ctl dlq list``, replayed to a repair channel, corrected
   and sent again;
6. runs the nightly batch: the life system's policy master extract (``--extract-mb``, default
   300 MB) goes through the drop box to ``coupler batch ingest`` on Spark (Parquet), announced
   by a ``coupler.BatchCompleted`` event;
7. prints per system what was sent, what came back and how long it took, writes
   ``var/demo/summary.json`` and stops everything it started.

``python examples/demo/demo.py [--out DIR] [--extract-mb N]`` (``$COUPLER_DEMO_EXTRACT_MB``).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import os
import shlex
import shutil
import signal
import string
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
CUSTOMER = "C-100234"
BRANCH_CUSTOMER = "C-100871"
EXTRACT_ENV = "COUPLER_DEMO_EXTRACT_MB"
CHANGE = {
    "customer_id": CUSTOMER,
    "customer_name": "Ann Smith",
    "street": "500 Ocean Avenue",
    "street2": "Apt 4B",
    "city": "Santa Monica",
    "state": "CA",
    "postal_code": "90401",
    "country": "US",
    "effective_date": "2025-03-01",
    "agent_id": "AG-0042",
}
#: the branch offices' changes: the second one's ZIP has a letter O for a zero
BRANCH_CHANGES = [
    {"customer_id": BRANCH_CUSTOMER, "customer_name": "Raj Patel", "street": "77 Bayshore Drive", "street2": None,
     "city": "Miami", "state": "FL", "postal_code": "33101", "country": "US", "effective_date": "2025-03-15",
     "agent_id": "BR-0007"},
    {"customer_id": CUSTOMER, "customer_name": "Ann Smith", "street": "500 Ocean Avenue", "street2": "Apt 4B",
     "city": "Santa Monica", "state": "CA", "postal_code": "9O4O1", "country": "US", "effective_date": "2025-03-01",
     "agent_id": "BR-0012"},
]
SYSTEMS = ("life", "health", "auto", "home")
ADAPTERS = {"life-sftp-out": "life", "health-soap": "health", "auto-tcp": "auto", "home-drop": "home"}


class DemoError(Exception):
    pass


class Demo:
    def __init__(self, out: Path, extract_mb: float, out_stream: Any = sys.stdout):
        self.out = out
        self.extract_mb = extract_mb
        self.stream = out_stream
        self.started = time.monotonic()
        self.logs = out / "logs"
        self.site: Path = out / "site.toml"
        self.procs: list[tuple[str, subprocess.Popen[bytes]]] = []
        self.summary: dict[str, Any] = {"systems": {}, "transport": {}}
        self.coupler = [sys.executable, "-m", "coupler.bus.cli.main"]
        #: piped output: a line this often while a long step runs
        self.progress_seconds = 10.0

    # -- output and processes ------------------------------------------------------------------

    def say(self, text: str = "") -> None:
        self.stream.write(text + "\n")
        self.stream.flush()

    def step(self, title: str) -> None:
        self.say(f"\n== [{time.monotonic() - self.started:6.1f}s] {title}")

    @contextlib.contextmanager
    def activity(self, label: str, probe: Callable[[], str] | None = None) -> Iterator[None]:
        """A step that takes a while: on a terminal a live line (spinner, elapsed seconds and
        what ``probe`` says); piped, a line when it starts and one every
        :attr:`progress_seconds` with the elapsed time and what ``probe`` says (a log is never
        silent for long); then its closing line with the time it took."""
        t0 = time.monotonic()
        if self.stream.isatty():
            from rich.console import Console

            with Console(file=self.stream).status(label) as status:
                stop = threading.Event()

                def tick() -> None:
                    while not stop.wait(0.25):
                        extra = probe() if probe else ""
                        status.update(f"{label}  {time.monotonic() - t0:6.1f} s  {extra}")

                ticker = threading.Thread(target=tick, daemon=True)
                ticker.start()
                try:
                    yield
                finally:
                    stop.set()
                    ticker.join()
        else:
            self.say(f"  {label} ...")
            stop = threading.Event()

            def progress() -> None:
                while not stop.wait(self.progress_seconds):
                    extra = f", {probe()}" if probe else ""
                    self.say(f"  {label}: {time.monotonic() - t0:.0f} s so far{extra}")

            ticker = threading.Thread(target=progress, daemon=True)
            ticker.start()
            try:
                yield
            finally:
                stop.set()
                ticker.join()
        self.say(f"  {label}: {time.monotonic() - t0:.1f} s")

    def spawn(self, name: str, args: list[str]) -> subprocess.Popen[bytes]:
        log = open(self.logs / f"{name}.log", "wb")  # noqa: SIM115 - closed with the process
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, cwd=REPO, env=env, start_new_session=True)
        log.close()
        self.procs.append((name, proc))
        with open(self.out.parent / f".{self.out.name}.pids", "a") as pids:  # for a run that was killed
            pids.write(f"{proc.pid} {' '.join(args)}\n")
        return proc

    def wait_for_line(self, name: str, marker: str, timeout: float = 30) -> str:
        path = self.logs / f"{name}.log"
        proc = dict(self.procs)[name]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in path.read_text(errors="replace").splitlines():
                if marker in line:
                    return line
            if proc.poll() is not None:
                raise DemoError(f"{name} exited with {proc.returncode}: {path.read_text(errors='replace')[-800:]}")
            time.sleep(0.05)
        raise DemoError(f"{name} did not print {marker!r} within {timeout:.0f} s (see {path})")

    def stop_all(self) -> None:
        for _name, proc in reversed(self.procs):
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(10)
        self.procs.clear()

    def cli(self, *args: str, check: bool = True, show: bool = False, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        """Run ``coupler ARGS --site var/demo/site.toml`` (the site goes after the command group)."""
        argv = [*self.coupler, *args]
        if show:
            self.say("$ " + shlex.join(["coupler", *args]))
        done = subprocess.run(argv, capture_output=True, text=True, cwd=REPO, timeout=timeout)
        if show and done.stdout.strip():
            self.say("  " + done.stdout.rstrip().replace("\n", "\n  "))
        if check and done.returncode != 0:
            raise DemoError(f"coupler {' '.join(args)} exited with {done.returncode}: {done.stderr.strip()[-800:]}")
        return done

    def site_args(self) -> list[str]:
        return ["--site", str(self.site)]

    # -- the steps -----------------------------------------------------------------------------

    def run(self) -> int:
        self.step("starting the four legacy systems")
        ports = self.start_legacy_systems()
        self.step("starting the bus: coupler daemon")
        self.render_site(ports)
        self.start_daemon()
        self.step(f"the agent changes the address of customer {CUSTOMER} once: coupler send")
        sent_at, replies = self.send_change()
        self.step("what came back from each system")
        self.collect(sent_at, replies)
        self.step("the branch offices' file: one malformed record -> dead letters -> corrected and replayed")
        self.dead_letters()
        self.step(f"the nightly batch: {self.extract_mb:g} MB policy master extract -> Spark -> Parquet")
        self.nightly_batch()
        self.print_summary()
        return 0

    def start_legacy_systems(self) -> dict[str, str]:
        from examples.legacy.sftp_dropbox import SftpDropBox, sshd_available

        py = sys.executable
        values: dict[str, str] = {"EXAMPLES": str(EXAMPLES), "VAR": str(self.out)}
        dropbox = self.out / "life" / "dropbox"
        for sub in ("inbox", "outbox", "nightly"):
            (dropbox / sub).mkdir(parents=True, exist_ok=True)
        values["LIFE_DROPBOX"] = str(dropbox)
        reason = sshd_available()
        self.sshd: SftpDropBox | None = None
        if reason is None:
            try:
                self.sshd = SftpDropBox(self.out / "sshd").start()
            except (RuntimeError, OSError, subprocess.CalledProcessError) as exc:
                reason = f"sshd did not start: {exc}"
        if self.sshd is not None:
            s = self.sshd
            values["SFTP_LOGIN"] = (
                f'host = "127.0.0.1"\nport = {s.port}\nusername = "{s.user}"\n'
                f'private_key = "{s.private_key}"\nknown_hosts = "{s.known_hosts}"'
            )
            self.summary["transport"]["life"] = f"SFTP (OpenSSH sshd on 127.0.0.1:{s.port})"
            self.say(f"life    : SFTP drop box {dropbox} served by OpenSSH sshd on 127.0.0.1:{s.port}")
        else:
            values["SFTP_LOGIN"] = ""
            self.summary["transport"]["life"] = f"file drop (no SFTP: {reason})"
            self.say(f"life    : NO SFTP ({reason}); falling back to a plain file drop on {dropbox}")
        self.spawn("life", [py, "-m", "examples.legacy.life_batch_system", "run", "--dropbox", str(dropbox)])
        self.say("life    : " + self.wait_for_line("life", "polling"))
        self.spawn("health", [py, "-m", "examples.legacy.health_member_service", "--port", "0"])
        line = self.wait_for_line("health", "listening on")
        values["HEALTH_PORT"] = line.rsplit(":", 1)[1].split("/")[0]
        self.say("health  : " + line)
        self.spawn("auto", [py, "-m", "examples.legacy.auto_policy_service", "--port", "0"])
        line = self.wait_for_line("auto", "listening on")
        values["AUTO_PORT"] = line.rsplit(":", 1)[1].strip()
        self.say("auto    : " + line)
        home = self.out / "home"
        self.spawn("home", [py, "-m", "examples.legacy.home_policy_system", "--inbox", str(home / "inbox"),
                            "--outbox", str(home / "outbox")])
        self.say("home    : " + self.wait_for_line("home", "polling"))
        (self.out / "branch" / "outbox").mkdir(parents=True, exist_ok=True)
        # the nightly extract is written while the day's work goes on (a job of the mainframe)
        self.extract_name = "LIFE.MASTER.EXTRACT.dat"
        self.extract_tmp = self.out / "life" / self.extract_name
        self.spawn("life-extract", [py, "-m", "examples.legacy.life_batch_system", "extract",
                                    "--size-mb", str(self.extract_mb), "--output", str(self.extract_tmp)])
        return values

    def render_site(self, values: dict[str, str]) -> None:
        text = string.Template((EXAMPLES / "demo" / "site.toml").read_text()).substitute(values)
        if not values["SFTP_LOGIN"]:  # no sshd: the same directories as a plain file drop
            text = text.replace('type = "sftp"', 'type = "filedrop"').replace("remote_directory", "directory")
        self.site.write_text(text)
        self.say(f"site    : {self.site} (from examples/demo/site.toml)")

    def start_daemon(self) -> None:
        self.spawn("daemon", [*self.coupler, "daemon", *self.site_args()])
        deadline = time.monotonic() + 60
        while True:
            done = self.cli("ctl", *self.site_args(), "status", "--json", check=False)
            if done.returncode == 0 and json.loads(done.stdout).get("pid"):
                break
            if dict(self.procs)["daemon"].poll() is not None or time.monotonic() > deadline:
                raise DemoError(f"coupler daemon did not start: {(self.logs / 'daemon.log').read_text()[-1500:]}")
            time.sleep(0.3)
        status = json.loads(done.stdout)
        failed = [a for a in status["adapters"] if a["state"] != "running"]
        if failed:
            raise DemoError(f"adapters not running: {failed}")
        self.say(f"daemon  : pid {status['pid']}, {len(status['adapters'])} adapters running: "
                 + ", ".join(a["name"] for a in status["adapters"]))

    def send_change(self) -> tuple[float, list[dict[str, Any]]]:
        from coupler.canonical.registry import SchemaRegistry

        agent = self.out / "agent"
        agent.mkdir(exist_ok=True)
        document = agent / f"address-change-{CUSTOMER}.avro"
        document.write_bytes(SchemaRegistry.default().encode(CHANGE, "acme.AddressChange@2"))
        (agent / f"address-change-{CUSTOMER}.json").write_text(json.dumps(CHANGE, indent=2) + "\n")
        self.say(f"acme.AddressChange@2 (Avro binary, {document.stat().st_size} bytes):")
        self.say("  " + json.dumps(CHANGE))
        args = ["send", *self.site_args(), "--command", "send", "--target", "policies",
                "--format", "acme.AddressChange@2", str(document), "--json"]
        self.say("$ " + shlex.join(["coupler", *args]))
        sent_wall, t0 = time.time(), time.monotonic()
        done = self.cli(*args, check=False)
        elapsed = time.monotonic() - t0
        if not done.stdout.strip():
            raise DemoError(f"coupler send failed: {done.stderr.strip()}")
        replies = json.loads(done.stdout)
        (agent / "replies.json").write_text(json.dumps(replies, indent=2) + "\n")
        self.say(f"  {len(replies)} replies aggregated in {elapsed:.2f} s (exit status {done.returncode})")
        self.summary["send"] = {"replies": len(replies), "seconds": round(elapsed, 3), "exit": done.returncode}
        if done.returncode != 0:
            raise DemoError("a system refused the change: " + json.dumps(replies, indent=2))
        return sent_wall, replies

    def collect(self, sent_at: float, replies: list[dict[str, Any]]) -> None:
        by_system = {ADAPTERS[r["adapter"]]: r for r in replies if r.get("adapter") in ADAPTERS}
        missing = [s for s in SYSTEMS if s not in by_system]
        if missing:
            raise DemoError(f"no reply from {', '.join(missing)}: {replies}")
        life_conf = self.get_message("life.confirmations", 60)
        home_ack = self.get_message("home.acks", 60)
        dropbox = self.out / "life" / "dropbox"
        life_in = sorted((dropbox / "inbox" / "processed").glob("ADDRCHG.*"))
        life_file = life_in[-1] if life_in else None
        home_file = sorted((self.out / "home" / "inbox" / "processed").glob("AC-*.xml"))
        self.say("")
        systems = self.summary["systems"]
        # life: mainframe batch, version 1, fixed-width EBCDIC through the drop box
        conf = json.loads(life_conf["body"])
        sent_bytes = life_file.read_bytes() if life_file else b""
        systems["life"] = {
            "adapter": "life-sftp-out",
            "transport": self.summary["transport"]["life"],
            "reads": "acme.AddressChange@1 (converted from version 2 by the schema registry)",
            "sent": f"{life_file.name if life_file else '?'}: {len(sent_bytes)} bytes LIFE-ADDR-CHANGE, EBCDIC: "
                    f"{sent_bytes.decode('cp037', 'replace').rstrip()!r}",
            "reply": by_system["life"]["details"],
            "came_back": {k: conf[k] for k in ("LC_STATUS", "LC_STATE", "LC_TAX_RATE", "LC_MESSAGE", "LC_POLICY_COUNT")}
                         | {"LC_POLICY": conf["LC_POLICY"]},
            "seconds": round(_ts(life_conf["timestamp"]) - sent_at, 3),
        }
        # health: SOAP
        health_doc = json.loads(by_system["health"]["documents"][0]["body"]["text"])
        systems["health"] = {
            "adapter": "health-soap",
            "reads": "acme.AddressChange@2",
            "sent": "SOAP UpdateMemberAddress " + json.dumps(self.health_request()),
            "reply": by_system["health"]["details"],
            "came_back": health_doc,
            "seconds": round(self.log_time("health", CUSTOMER) - sent_at, 3),
        }
        # auto: fixed-width over TCP
        auto_doc = json.loads(by_system["auto"]["documents"][0]["body"]["text"])
        systems["auto"] = {
            "adapter": "auto-tcp",
            "reads": "acme.AddressChange@2",
            "sent": "AUTOAC-REQUEST (90 bytes EBCDIC, transaction AC01)",
            "reply": by_system["auto"]["details"],
            "came_back": {k: (v.strip() if isinstance(v, str) else v) for k, v in auto_doc.items()},
            "seconds": round(self.log_time("auto", "MOVED TO") - sent_at, 3),
        }
        # home: XML file drop
        systems["home"] = {
            "adapter": "home-drop",
            "reads": "acme.AddressChange@2",
            "sent": f"{home_file[0].name if home_file else '?'}: "
                    + (" ".join(home_file[0].read_text().split()) if home_file else ""),
            "reply": by_system["home"]["details"],
            "came_back": _ack_fields(home_ack["body"]),
            "seconds": round(_ts(home_ack["timestamp"]) - sent_at, 3),
        }
        for name in SYSTEMS:
            s = systems[name]
            self.say(f"{name.upper()} ({s['adapter']}, reads {s['reads']})")
            self.say(f"  sent      : {s['sent']}")
            self.say(f"  reply     : {json.dumps(s['reply'], sort_keys=True)}")
            self.say(f"  came back : {json.dumps(s['came_back']) if not isinstance(s['came_back'], str) else s['came_back']}")
            self.say(f"  took      : {s['seconds']:.2f} s from the agent's send")

    def health_request(self) -> dict[str, Any]:
        return {"memberId": CHANGE["customer_id"], "addressLine1": CHANGE["street"], "city": CHANGE["city"],
                "state": CHANGE["state"], "zip": CHANGE["postal_code"], "effectiveDate": CHANGE["effective_date"]}

    def get_message(self, channel: str, timeout: float) -> dict[str, Any]:
        done = self.cli("channel", "get", *self.site_args(), channel, "--wait", str(timeout), "--json")
        if not done.stdout.strip():
            raise DemoError(f"nothing arrived on {channel} within {timeout:.0f} s")
        return json.loads(done.stdout.splitlines()[0])

    def log_time(self, name: str, marker: str) -> float:
        """When a legacy service logged ``marker`` (its own clock: logging's asctime)."""
        for line in (self.logs / f"{name}.log").read_text(errors="replace").splitlines():
            if marker in line:
                return datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()
        raise DemoError(f"{name} never logged {marker!r}")

    def dead_letters(self) -> None:
        branch = self.out / "branch" / "outbox" / "BRANCH-CHANGES.jsonl"
        tmp = branch.with_name(".BRANCH-CHANGES.jsonl.tmp")
        tmp.write_text("".join(json.dumps(c) + "\n" for c in BRANCH_CHANGES))
        tmp.rename(branch)
        self.say(f"dropped {branch} ({len(BRANCH_CHANGES)} changes for the homeowners system; "
                 f"the second has ZIP {BRANCH_CHANGES[1]['postal_code']!r})")
        ack = self.get_message("home.acks", 60)
        self.say("home.acks: " + " ".join(ack["body"].split()))
        dead = self.wait_for(lambda: json.loads(self.cli("ctl", *self.site_args(), "dlq", "list", "--json").stdout), 60)
        self.cli("ctl", *self.site_args(), "dlq", "list", show=True)
        letter = dead[0]
        self.cli("ctl", *self.site_args(), "dlq", "show", str(letter["id"]), show=True)
        self.cli("ctl", *self.site_args(), "dlq", "replay", str(letter["id"]), "--to", "home.repair", show=True)
        repair = self.get_message("home.repair", 10)
        record = json.loads(repair["body"])
        fixed = {**record, "postal_code": record["postal_code"].replace("O", "0")}
        corrected = self.out / "branch" / "corrected.json"
        corrected.write_text(json.dumps(fixed) + "\n")
        self.say(f"corrected postal_code {record['postal_code']!r} -> {fixed['postal_code']!r}: {corrected}")
        self.cli("channel", "put", *self.site_args(), "home.changes", str(corrected),
                 "--format", "acme.AddressChange@2;application/json", "-p", "repaired-from=dead-letter-"
                 + str(letter["id"]), show=True)
        ack2 = self.get_message("home.acks", 60)
        self.say("home.acks: " + " ".join(ack2["body"].split()))
        left = json.loads(self.cli("ctl", *self.site_args(), "dlq", "list", "--json").stdout)
        self.cli("ctl", *self.site_args(), "dlq", "list", show=True)
        self.summary["dead_letters"] = {
            "dead_letter": {k: letter[k] for k in ("id", "kind", "channel", "component", "reason")},
            "corrected": {"postal_code": [record["postal_code"], fixed["postal_code"]]},
            "ack_after_correction": " ".join(ack2["body"].split()),
            "left": len(left),
        }

    def wait_for(self, probe: Callable[[], Any], timeout: float) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = probe()
            if value:
                return value
            time.sleep(0.3)
        raise DemoError(f"timed out after {timeout:.0f} s")

    def extract_written(self) -> str:
        """How much of the nightly extract the life system has written so far."""
        from examples.legacy.life_batch_system import partial_extract

        return _mb(self.extract_tmp, partial_extract(self.extract_tmp))

    def nightly_batch(self) -> None:
        proc = dict(self.procs)["life-extract"]
        with self.activity("the mainframe writes the extract", self.extract_written):
            rc = proc.wait(600)
        if rc != 0:
            raise DemoError(f"the extract job failed: {(self.logs / 'life-extract.log').read_text()[-800:]}")
        self.say(self.wait_for_line("life-extract", "records,"))
        nightly = self.out / "life" / "dropbox" / "nightly" / self.extract_name
        os.replace(self.extract_tmp, nightly)  # the mainframe puts the finished extract in the drop box
        size = nightly.stat().st_size
        t0 = time.monotonic()  # the drop box transfer: from the drop box to the batch area
        batch_dir = self.out / "life" / "batch"

        def staged_file() -> Path | None:
            found = [p for p in batch_dir.glob(f"*{self.extract_name}") if p.stat().st_size == size]
            return found[0] if found else None

        with self.activity("the extract goes through the SFTP drop box to the batch area",
                           lambda: _mb(*batch_dir.glob(f"*{self.extract_name}*"))):
            staged = self.wait_for(staged_file, 600)
        transfer = time.monotonic() - t0
        self.say(f"life-nightly staged {staged} ({size / 1e6:.1f} MB) for the batch job")
        self.say("the day's traffic is done: the bus stops and leaves the machine to Spark (the event is durable)")
        self.cli("ctl", *self.site_args(), "stop", show=True)
        parquet = self.out / "nightly" / "policy-master.parquet"
        args = ["batch", "ingest", "--site", str(self.site), "--source", "life-nightly", "--to", "parquet",
                "--output", str(parquet), "--master", "local[2]", "--json"]
        self.say("$ " + shlex.join(["coupler", *args]))
        t1 = time.monotonic()
        with self.activity("Spark ingests the extract"):
            done = self.cli(*args)
        spark_seconds = time.monotonic() - t1
        result = json.loads(done.stdout)[0]
        self.say(f"  {result['records']} records, {result['errors']} errors -> {result['output']} "
                 f"in {spark_seconds:.1f} s")
        events = []
        for _ in range(3):
            msg = self.get_message("life.batches", 10)
            events.append(msg)
            if msg["format"].startswith("coupler.BatchCompleted"):
                break
        completed = events[-1]
        if not completed["format"].startswith("coupler.BatchCompleted"):
            raise DemoError(f"no BatchCompleted event on life.batches: {events}")
        from coupler.canonical.registry import SchemaRegistry

        body = completed.get("body_base64")
        event = (SchemaRegistry.default().decode(base64.b64decode(body), completed["format"].split(";")[0])
                 if body else json.loads(completed["body"]))
        self.say(f"life.batches: {completed['format']} " + json.dumps(event, default=str))
        self.summary["nightly"] = {
            "extract_bytes": size,
            "records": result["records"],
            "errors": result["errors"],
            "output": result["output"],
            "transfer_seconds": round(transfer, 1),
            "spark_seconds": round(spark_seconds, 1),
            "event": {"format": completed["format"], "message_id": completed["message_id"],
                      "body": json.loads(json.dumps(event, default=str))},
        }

    def print_summary(self) -> None:
        total = time.monotonic() - self.started
        self.summary["seconds"] = round(total, 1)
        (self.out / "summary.json").write_text(json.dumps(self.summary, indent=2, default=str) + "\n")
        self.say("\n== summary")
        self.say(f"{'system':8} {'adapter':14} {'reads':22} {'took':>7}  came back")
        for name in SYSTEMS:
            s = self.summary["systems"][name]
            back = s["came_back"]
            short = {
                "life": lambda b: f"{b['LC_STATUS']} {b['LC_MESSAGE'].strip()} tax {b['LC_TAX_RATE']}",
                "health": lambda b: f"premium {b['previousMonthlyPremium']} -> {b['monthlyPremium']}/month, {b['confirmation']}",
                "auto": lambda b: f"{b['AR_STATUS']} {b['AR_MESSAGE']}",
                "home": lambda b: f"{b['status']} {b['policyNumber']} territory {b['territory']}, premium "
                                  f"{b['previousAnnualPremium']} -> {b['annualPremium']}/year",
            }[name](back)
            self.say(f"{name:8} {s['adapter']:14} {s['reads'].split(' ')[0]:22} {s['seconds']:6.2f}s  {short}")
        dl = self.summary["dead_letters"]
        self.say(f"dead letters: 1 malformed record ({dl['dead_letter']['reason'][:90]}...), corrected "
                 f"{dl['corrected']['postal_code'][0]} -> {dl['corrected']['postal_code'][1]}, {dl['left']} left")
        n = self.summary["nightly"]
        self.say(f"nightly batch: {n['extract_bytes'] / 1e6:.0f} MB, {n['records']} records, {n['errors']} errors "
                 f"-> Parquet in {n['spark_seconds']} s (drop box transfer {n['transfer_seconds']} s); "
                 f"event {n['event']['format']}")
        self.say(f"outputs in {self.out}; summary {self.out / 'summary.json'}; total {total:.1f} s")


def _mb(*paths: Path) -> str:
    """The size of ``paths`` together, in MB (missing ones count 0)."""
    total = 0
    for path in paths:
        with contextlib.suppress(OSError):
            total += path.stat().st_size
    return f"{total / 1e6:.1f} MB"


def _ack_fields(xml: str) -> dict[str, str]:
    """The fields of a HomeAddressAck document."""
    from lxml import etree

    root = etree.fromstring(xml.encode(), etree.XMLParser(resolve_entities=False, no_network=True))
    return {etree.QName(child).localname: child.text or "" for child in root}


def _ts(iso: str) -> float:
    return datetime.fromisoformat(iso).timestamp()


def _stop_leftovers(out: Path) -> None:
    """Stop what an earlier run in ``out`` that was killed left running (its pid file lists it)."""
    pids = out.parent / f".{out.name}.pids"
    if not pids.exists():
        return
    for line in pids.read_text().splitlines():
        pid, _, cmd = line.partition(" ")
        try:
            alive = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
        except (OSError, ValueError):
            continue
        if alive == cmd.strip():  # still the process we started, not a reused pid
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(int(pid), signal.SIGTERM)
    pidfile = out / "sshd" / "sshd.pid"
    with contextlib.suppress(OSError, ValueError, ProcessLookupError, PermissionError):
        os.killpg(int(pidfile.read_text().split()[0]), signal.SIGTERM)
    pids.unlink()
    time.sleep(0.5)


@contextlib.contextmanager
def _fresh(out: Path) -> Iterator[Path]:
    _stop_leftovers(out)
    if out.exists():
        shutil.rmtree(out)
    (out / "logs").mkdir(parents=True)
    yield out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python examples/demo/demo.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "var" / "demo", help="output directory (default var/demo)")
    parser.add_argument("--extract-mb", type=float, default=float(os.environ.get(EXTRACT_ENV, "300")),
                        help=f"size of the nightly extract in MB (default ${EXTRACT_ENV} or 300)")
    args = parser.parse_args(argv)
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop everything started, as on Ctrl-C
    with _fresh(args.out.resolve()) as out:
        demo = Demo(out, args.extract_mb)
        try:
            return demo.run()
        except DemoError as exc:
            demo.say(f"\nDEMO FAILED: {exc}")
            return 1
        except KeyboardInterrupt:
            demo.say("\ninterrupted")
            return 130
        finally:
            demo.stop_all()
            if getattr(demo, "sshd", None) is not None:
                demo.sshd.stop()
            (out.parent / f".{out.name}.pids").unlink(missing_ok=True)


if __name__ == "__main__":
    sys.exit(main())
