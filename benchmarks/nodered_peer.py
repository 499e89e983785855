"""Coupler against Node-RED 4 on the same job: a file of JSON-lines orders in, negative amounts
dropped, routed on ``body.region``, joined into batches of 100 per route (or what a route holds
after a 2-second time-out), the batches appended to one file per route.

* ``coupler`` -- ``coupler daemon`` of a generated site.toml: a ``filedrop`` inbound adapter
  (the whole file as one message, polled every 0.05 s, ``stable_seconds = 0``: files arrive by an
  atomic rename), one route (``split`` into lines, each part ``bench.Order@1`` JSON;
  ``filter`` ``body.amount >= 0``, ``set_properties`` region = ``body.region``, ``aggregate``
  by region, 100 or 2 s, strategy ``lines``; its rules send each region's batches to a channel
  of its own), one ``filedrop`` outbound adapter per region appending to ``REGION.jsonl``.
  Embedded SQLite store, the daemon's defaults (synchronous FULL): the file's message is
  acknowledged in the transaction that stores the aggregator's open groups and sends the
  completed batches, so a SIGKILL before that commit redoes the whole file. This is the flow
  Node-RED's (below) and a Camel route (``split().tokenize("\n")``) have: the file read whole,
  its lines split in memory. ``NODERED_PEER_COUPLER_MODE=lines``: the adapter publishes one
  durable message per line instead (``payload = "lines"``, the route with 4 workers).
* ``node-red`` -- Node-RED 4 (npm ``node-red@4``, installed into ``build/nodered`` when
  missing; Node-RED 5 needs a newer Node.js), core nodes only: ``watch`` (the drop directory)
  -> ``switch`` (a ``*.jsonl`` file) -> ``file in`` (one string) -> ``split`` (``\\n``) ->
  ``json`` -> ``switch`` (``payload.amount >= 0``) -> ``switch`` (``payload.region``, one output
  per region) -> ``join`` (custom: an array of 100, time-out 2 s) -> ``file out`` (append,
  ``REGION.jsonl``). Headless (no editor, no admin API), its own user directory, a free
  loopback port.

Throughput: both run side by side in one invocation on the same generated file; the clock
starts at the rename that makes the file appear in the drop directory and stops at the
modification time of the last output file once every order with a non-negative amount is in
the outputs; orders/s counts every order of the file. The CPU time (user + system, all threads)
each process used from the arrival to the end is printed too (orders per CPU second): on a
loaded machine it is the steadier figure.

``--kill N``: FILES files are dropped one after another (only while the system is up, so no
file arrives while it is down) and each system is SIGKILLed N times at random moments of the
same seeded schedule (the seed is printed; ``--seed`` repeats a run) and restarted as a user
would (``coupler daemon --site site.toml``; ``node red.js`` with the same user directory). At
the end the outputs are read back and every order is checked: lost (an order with a
non-negative amount in no batch), duplicated (extra copies), torn lines, and orders in the
wrong file or with a negative amount.

Usage: .venv/bin/python benchmarks/nodered_peer.py [--orders N] [--repeat N] [--kill N]
       [--files N] [--seed N] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

BUILD = REPO / "build"
NODERED_PREFIX = BUILD / "nodered"
RED_JS = NODERED_PREFIX / "node_modules" / "node-red" / "red.js"
WORK = BUILD / "nodered_peer"
REGIONS = ("EU", "US", "APAC", "LATAM")
BATCH, TIMEOUT = 100, 2
LEASE = 30.0  # Coupler's default [store] lease_seconds
#: worker threads of the Coupler route with one message per line (their commits share disk
#: syncs: the store's group commit); with the file as one message the route keeps its one worker
CONCURRENCY = int(os.environ.get("NODERED_PEER_CONCURRENCY", "4"))


# -- the peer's installation ----------------------------------------------------------------

def ensure_nodered() -> str:
    """Node.js (apt-get when missing and root) and Node-RED 4 under build/nodered; its version."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        if os.geteuid() != 0:
            sys.exit("nodered_peer: Node.js is missing: install it (apt-get install nodejs npm) and run again")
        print("installing nodejs and npm with apt-get", flush=True)
        subprocess.run(["apt-get", "update", "-qq"], check=True)
        subprocess.run(["apt-get", "install", "-y", "-qq", "nodejs", "npm"], check=True,
                       env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
    major = int(subprocess.run(["node", "--version"], capture_output=True, text=True, check=True)
                .stdout.strip().lstrip("v").split(".")[0])
    if major < 18:
        sys.exit(f"nodered_peer: Node-RED 4 needs Node.js 18 or newer; this one is {major}: upgrade it and run again")
    if not RED_JS.exists():
        print(f"installing node-red@4 into {NODERED_PREFIX} with npm", flush=True)
        NODERED_PREFIX.mkdir(parents=True, exist_ok=True)
        subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--prefix", str(NODERED_PREFIX), "node-red@4"],
                       check=True)
    return json.loads((RED_JS.parent / "package.json").read_text())["version"]


# -- the orders -----------------------------------------------------------------------------

def write_orders(path: Path, first: int, count: int, rng: random.Random) -> int:
    """``count`` orders numbered from ``first`` (about one in ten with a negative amount); how
    many have a non-negative amount."""
    kept = 0
    with path.open("w") as f:
        for n in range(first, first + count):
            amount = round(rng.uniform(-100, 900), 2)
            kept += amount >= 0
            f.write(json.dumps({"id": n, "region": REGIONS[rng.randrange(len(REGIONS))], "amount": amount,
                                "customer": f"C{rng.randrange(10_000):05d}", "sku": f"SKU-{rng.randrange(500):03d}",
                                "quantity": rng.randrange(1, 20)}) + "\n")
    return kept


def expected(paths: list[Path]) -> dict[int, str]:
    """The orders that must come out: id -> region."""
    out = {}
    for p in paths:
        for line in p.read_text().splitlines():
            o = json.loads(line)
            if o["amount"] >= 0:
                out[o["id"]] = o["region"]
    return out


def read_outputs(out: Path) -> tuple[Counter[int], int, int]:
    """(copies of each order id, torn lines, orders in the wrong file or with a negative amount)."""
    copies: Counter[int] = Counter()
    torn = wrong = 0
    for region in REGIONS:
        f = out / f"{region}.jsonl"
        if not f.exists():
            continue
        for line in f.read_bytes().splitlines():
            try:
                v = json.loads(line)
            except ValueError:
                torn += 1
                continue
            for o in v if isinstance(v, list) else [v]:  # Node-RED writes a batch as one JSON array
                copies[o["id"]] += 1
                wrong += o["region"] != region or o["amount"] < 0
    return copies, torn, wrong


# -- the two systems ------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class System:
    name = ""

    def __init__(self, root: Path):
        self.root = root
        self.drop = root / "drop"
        self.out = root / "out"
        for d in (self.drop, self.out):
            d.mkdir(parents=True)
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def command(self) -> list[str]:
        raise NotImplementedError

    def env(self) -> dict[str, str]:
        return dict(os.environ)

    def ready(self, log: Path) -> bool:
        raise NotImplementedError

    def start(self) -> None:
        """Start it as a user would, and wait until it takes files."""
        self.starts += 1
        log = self.root / f"log-{self.starts}.txt"
        with log.open("wb") as f:
            self.proc = subprocess.Popen(self.command(), env=self.env(), stdout=f, stderr=subprocess.STDOUT,
                                         cwd=self.root)
        deadline = time.monotonic() + 180
        while not self.ready(log):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.kill()
                sys.exit(f"nodered_peer: {self.name} did not start: see {log}")
            time.sleep(0.05)

    def cpu_seconds(self) -> float:
        """CPU time (user + system) the running process used so far (its threads included)."""
        assert self.proc is not None
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def kill(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()
            self.proc = None


#: seconds between two looks of Coupler's file poller at the drop directory (Node-RED's ``watch``
#: is told by the kernel: no delay); a look at an empty directory costs about 0.2 ms of CPU
POLL = 0.05
#: how Coupler's site takes the file: ``split`` (the file is one message, the route's ``split`` step
#: streams its lines through the rest of the route in memory, as Node-RED's flow and a Camel
#: route do) or ``lines`` (the adapter publishes one durable message per line)
COUPLER_MODE = os.environ.get("NODERED_PEER_COUPLER_MODE", "split")


def coupler_site(root: Path, drop: Path, out: Path, mode: str = "split") -> str:
    """The site.toml of the Coupler side."""
    rules = "".join(f'[[routes.rules]]\nwhen = "properties.region = \'{r}\'"\nto = ["batches.{r}"]\n'
                    for r in REGIONS)
    outs = "".join(f"""
[[adapters]]
name = "out-{r}"
type = "filedrop"
direction = "outbound"
channel = "batches.{r}"
[adapters.options]
directory = "{out}"
file_name = "{r}.jsonl"
file_exists = "append"
""" for r in REGIONS)
    if mode == "split":  # the whole file is one message; its lines are parts inside the route
        inbound = 'format = "bench.Orders@1;application/x-ndjson"\n[adapters.options]\npayload = "whole"\n'
        split = ('[[routes.steps]]\ntype = "split"\nlines = true\n'
                 'part_format = "bench.Order@1;application/json"\n')
        throttle = ""
    else:  # one durable message per line
        inbound = 'format = "bench.Order@1;application/json"\n[adapters.options]\npayload = "lines"\n'
        split = ""
        throttle = f"throttle = {{ concurrency = {CONCURRENCY} }}\n"
    return f"""
[site]
name = "nodered-peer"
data_dir = "{root / 'data'}"

[[adapters]]
name = "orders-in"
type = "filedrop"
direction = "inbound"
channel = "orders"
{inbound}directory = "{drop}"
include = ["*.jsonl"]
stable_seconds = 0
poll_interval = {POLL}
max_poll_interval = {POLL}
{outs}
[[routes]]
name = "orders"
from = "orders"
otherwise = "orders.other"
idempotent_key = "message_id"
{throttle}{split}[[routes.steps]]
type = "filter"
when = "body.amount >= 0"
[[routes.steps]]
type = "set_properties"
properties = {{ region = "body.region" }}
[[routes.steps]]
type = "aggregate"
correlation = "properties.region"
complete_size = {BATCH}
timeout_seconds = {TIMEOUT}
strategy = "lines"
{rules}"""


class Coupler(System):
    name = "coupler"

    def __init__(self, root: Path):
        super().__init__(root)
        self.site = root / "site.toml"
        self.site.write_text(coupler_site(root, self.drop, self.out, COUPLER_MODE))
    def command(self) -> list[str]:
        return [sys.executable, "-m", "coupler.bus.cli.main", "daemon", "--site", str(self.site)]

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
        return env

    def ready(self, log: Path) -> bool:
        from coupler.bus.config.loader import load_site
        from coupler.bus.runtime.control import ControlClient, ControlError

        try:
            return bool(ControlClient(load_site(self.site).control_socket).call("status")["pid"] == self.proc.pid)  # type: ignore[union-attr]
        except ControlError:
            return False


class NodeRed(System):
    name = "node-red"

    def __init__(self, root: Path):
        super().__init__(root)
        self.user_dir = root / "userdir"
        self.user_dir.mkdir()
        self.port = free_port()
        (self.user_dir / "settings.js").write_text(
            "module.exports = {\n"
            f"  uiPort: {self.port}, uiHost: '127.0.0.1', flowFile: 'flows.json', credentialSecret: false,\n"
            "  httpAdminRoot: false, httpNodeRoot: false, diagnostics: {enabled: false},\n"
            "  telemetry: {enabled: false}, logging: {console: {level: 'info', metrics: false, audit: false}},\n"
            "  externalModules: {autoInstall: false},\n"
            "};\n")
        (self.user_dir / "flows.json").write_text(json.dumps(self.flow(), indent=1))

    def flow(self) -> list[dict[str, Any]]:
        tab = "bench"

        def node(id: str, type: str, wires: list[list[str]], **kw: Any) -> dict[str, Any]:
            return {"id": id, "type": type, "z": tab, "name": id, "x": 100, "y": 100, "wires": wires, **kw}

        flow: list[dict[str, Any]] = [{"id": tab, "type": "tab", "label": "orders", "disabled": False, "info": ""}]
        flow += [
            node("watch", "watch", [["jsonl"]], files=str(self.drop), recursive=False),
            node("jsonl", "switch", [["read"]], property="file", propertyType="msg", checkall="true", repair=False,
                 outputs=1, rules=[{"t": "regex", "v": r"\.jsonl$", "vt": "str", "case": False}]),
            node("read", "file in", [["split"]], filename="filename", filenameType="msg", format="utf8",
                 chunk=False, sendError=False, encoding="none", allProps=False),
            node("split", "split", [["json"]], splt="\\n", spltType="str", arraySplt=1, arraySpltType="len",
                 stream=False, addname="", property="payload"),
            node("json", "json", [["amount"]], property="payload", action="obj", pretty=False),
            node("amount", "switch", [["region"]], property="payload.amount", propertyType="msg", checkall="true",
                 repair=False, outputs=1, rules=[{"t": "gte", "v": "0", "vt": "num"}]),
            node("region", "switch", [[f"join-{r}"] for r in REGIONS], property="payload.region",
                 propertyType="msg", checkall="false", repair=False, outputs=len(REGIONS),
                 rules=[{"t": "eq", "v": r, "vt": "str"} for r in REGIONS]),
        ]
        for r in REGIONS:
            flow.append(node(f"join-{r}", "join", [[f"write-{r}"]], mode="custom", build="array", property="payload",
                             propertyType="msg", key="topic", joiner="\\n", joinerType="str", useparts=False,
                             accumulate=False, timeout=str(TIMEOUT), count=str(BATCH), reduceRight=False))
            flow.append(node(f"write-{r}", "file", [[]], filename=str(self.out / f"{r}.jsonl"), filenameType="str",
                             appendNewline=True, createDir=True, overwriteFile="false", encoding="none"))
        return flow

    def command(self) -> list[str]:
        return ["node", str(RED_JS), "--userDir", str(self.user_dir), "--settings",
                str(self.user_dir / "settings.js"), "flows.json"]

    def ready(self, log: Path) -> bool:
        """Its flows started and its watch armed (the watch node arms itself some time after
        "Started flows"): an empty probe file dropped until its json error is in the log."""
        text = log.read_bytes()
        if b"Started flows" not in text:
            return False
        if b"[json:json]" in text.split(b"Started flows", 1)[1]:
            return True
        now = time.monotonic()
        if now - getattr(self, "_probed", 0.0) > 0.5:
            self._probed = now
            probe = self.root / ".probe"
            probe.write_bytes(b"")
            os.rename(probe, self.drop / f"probe-{self.starts}-{now:.3f}.jsonl")
        return False


SYSTEMS = {"coupler": Coupler, "node-red": NodeRed}


# -- runs -----------------------------------------------------------------------------------

def arrive(src: Path, system: System, name: str) -> float:
    """Copy the file next to the drop directory, then rename it in; the time of the rename."""
    tmp = system.root / f".{name}"
    shutil.copyfile(src, tmp)
    t = time.time()
    os.rename(tmp, system.drop / name)
    return t


def last_write(out: Path) -> float:
    return max((f.stat().st_mtime for f in out.glob("*.jsonl")), default=0.0)


def throughput(kind: str, orders_file: Path, want: dict[int, str], count: int) -> dict[str, Any]:
    root = WORK / f"{kind}-{time.strftime('%H%M%S')}-{os.getpid()}"
    system = SYSTEMS[kind](root)
    system.start()
    try:
        cpu0 = system.cpu_seconds()
        t0 = arrive(orders_file, system, "orders.jsonl")
        deadline = time.monotonic() + 900
        sizes: tuple[int, ...] = ()
        while True:
            now = tuple(f.stat().st_size for f in sorted(system.out.glob("*.jsonl")))
            if now != sizes:
                sizes = now
                copies, torn, wrong = read_outputs(system.out)
                if len(copies) >= len(want) or time.monotonic() > deadline:
                    break
            time.sleep(0.1)
        elapsed = last_write(system.out) - t0
        cpu = system.cpu_seconds() - cpu0
    finally:
        system.kill()
    ok = set(copies) == set(want) and max(copies.values()) == 1 and not torn and not wrong
    return {"system": kind, "orders": count, "kept": len(want), "seconds": elapsed, "orders_per_s": count / elapsed,
            "cpu_seconds": cpu, "orders_per_cpu_s": count / cpu, "correct": ok, "root": str(root)}


def kill_run(kind: str, files: list[Path], want: dict[int, str], kills: int, seed: int, gap: float) -> dict[str, Any]:
    """Files dropped every ``gap`` seconds of up-time, ``kills`` SIGKILLs at seeded random moments
    of up-time, each followed by a restart; then the outputs are counted."""
    rng = random.Random(seed)
    span = len(files) * gap
    kill_at = sorted(rng.uniform(0.2, span + 4.0) for _ in range(kills))  # some land in the backlog after the feed
    root = WORK / f"{kind}-kill-{time.strftime('%H%M%S')}-{os.getpid()}"
    system = SYSTEMS[kind](root)
    system.start()
    uptime, mark = 0.0, time.monotonic()
    dropped = killed = 0
    try:
        while dropped < len(files) or killed < kills:
            uptime += time.monotonic() - mark
            mark = time.monotonic()
            if killed < kills and uptime >= kill_at[killed]:
                system.kill()
                killed += 1
                system.start()
                mark = time.monotonic()  # down-time is not up-time
                continue
            if dropped < len(files) and uptime >= dropped * gap:
                arrive(files[dropped], system, files[dropped].name)
                dropped += 1
                continue
            time.sleep(0.01)
        # drain: until every order is out (then a little longer: a second copy would show by then)
        # or the outputs stop changing for three time-outs and a lease: what a killed Coupler
        # daemon had taken (a route worker takes up to 100 messages at a time) comes back to the
        # next one when its lease ends (lease_seconds, 30 s by default), so an earlier end counts
        # as lost what is only waiting
        quiet, sizes, deadline = time.monotonic(), (), time.monotonic() + 600
        while time.monotonic() < deadline:
            now = tuple(f.stat().st_size for f in sorted(system.out.glob("*.jsonl")))
            if now != sizes:
                sizes, quiet = now, time.monotonic()
                if len(read_outputs(system.out)[0]) >= len(want):
                    time.sleep(3 * TIMEOUT)
                    break
            elif time.monotonic() - quiet > 3 * TIMEOUT + 2 + LEASE:
                break
            time.sleep(0.2)
    finally:
        system.kill()
    copies, torn, wrong = read_outputs(system.out)
    lost = len(set(want) - set(copies))
    dup = sum(c - 1 for c in copies.values() if c > 1)
    return {"system": kind, "kills": killed, "starts": system.starts, "orders_kept": len(want), "lost": lost,
            "duplicated": dup, "torn_lines": torn, "wrong": wrong, "root": str(root)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--orders", type=int, default=50_000, help="orders in the throughput file")
    p.add_argument("--repeat", type=int, default=1, help="throughput runs of each (alternating); the best is kept")
    p.add_argument("--kill", type=int, default=0, metavar="N", help="SIGKILL each system N times (0: no kill run)")
    p.add_argument("--files", type=int, default=40, help="--kill: files dropped one after another")
    p.add_argument("--file-orders", type=int, default=500, help="--kill: orders per file")
    p.add_argument("--gap", type=float, default=0.25, help="--kill: seconds of up-time between two files")
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--only", choices=sorted(SYSTEMS), action="append", help="run only this system (repeatable)")
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    version = ensure_nodered()
    node = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()
    kinds = args.only or list(SYSTEMS)
    seed = args.seed if args.seed is not None else random.randrange(1 << 32)
    print(f"seed {seed}; Node-RED {version} on Node.js {node}; Python {sys.version.split()[0]}; "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the start", flush=True)
    WORK.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    results: dict[str, Any] = {"seed": seed, "nodered": version, "node": node, "load_start": os.getloadavg()[0]}

    orders_file = WORK / f"orders-{seed}.jsonl"
    write_orders(orders_file, 0, args.orders, rng)
    want = expected([orders_file])
    runs: list[dict[str, Any]] = []
    for _ in range(args.repeat):
        for kind in kinds:
            r = throughput(kind, orders_file, want, args.orders)
            runs.append(r)
            print(f"{kind:9s} {r['orders']:,} orders ({r['kept']:,} kept) in {r['seconds']:.2f} s: "
                  f"{r['orders_per_s']:,.0f} orders/s ({r['cpu_seconds']:.2f} CPU s: {r['orders_per_cpu_s']:,.0f} "
                  f"orders per CPU second), outputs {'complete and exact' if r['correct'] else 'WRONG'}, "
                  f"load average {os.getloadavg()[0]:.1f}", flush=True)
    best = {k: max(r["orders_per_s"] for r in runs if r["system"] == k) for k in kinds}
    results["throughput"] = runs
    if len(best) == 2:
        ratio = best["coupler"] / best["node-red"]
        results["ratio"] = ratio
        cpu = {k: max(r["orders_per_cpu_s"] for r in runs if r["system"] == k) for k in kinds}
        results["cpu_ratio"] = cpu["coupler"] / cpu["node-red"]
        print(f"best: coupler {best['coupler']:,.0f} orders/s, node-red {best['node-red']:,.0f} orders/s: "
              f"coupler/node-red = {ratio:.2f}; per CPU second: coupler {cpu['coupler']:,.0f}, node-red "
              f"{cpu['node-red']:,.0f} orders: {results['cpu_ratio']:.2f}", flush=True)

    if args.kill:
        files = []
        for i in range(args.files):
            f = WORK / f"kill-{seed}" / f"orders-{i:04d}.jsonl"
            f.parent.mkdir(parents=True, exist_ok=True)
            write_orders(f, i * args.file_orders, args.file_orders, rng)
            files.append(f)
        want = expected(files)
        results["kill"] = []
        for kind in kinds:
            r = kill_run(kind, files, want, args.kill, seed, args.gap)
            results["kill"].append(r)
            print(f"{kind:9s} {r['kills']} SIGKILLs, {args.files} files, {r['orders_kept']:,} orders to deliver: "
                  f"{r['lost']:,} lost, {r['duplicated']:,} duplicated, {r['torn_lines']} torn lines, "
                  f"{r['wrong']} misrouted", flush=True)
    results["load_end"] = os.getloadavg()[0]
    print(f"load average {results['load_end']:.1f} at the end", flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
