"""The same job in Coupler and in Node-RED 4 (core nodes only), side by side in one run.

The job: a file of JSON-lines orders arrives in a directory; drop the orders with a negative
amount, route on ``route`` (eu, us, asia), join each route's orders into batches of 100 with a
2-second time-out, and append the batches to one file per route.

* Coupler: a filedrop adapter (``payload = "lines"``), one route with a ``filter`` step and an
  ``aggregate`` step (``correlation = "body.route"``, 100 / 2 s), an outbound filedrop adapter
  appending each batch to ``{correlation_id}.jsonl`` -- the default SQLite store, every record
  durable before it is acknowledged.
* Node-RED 4 (installed from the npm registry into ``build/node-red`` when missing; version 5
  needs a newer Node.js than this machine has): watch -> switch (*.jsonl) -> filter (once per file name) -> file in (lines)
  -> switch (not empty) -> json -> switch (amount >= 0) -> switch (route) -> join (100, 2 s) x3
  -> json -> file (append) x3.

Throughput: orders/s from the file's arrival (renamed into the watched directory) to the last
batch appended. Crash: the same file again with the process SIGKILLed ``--kills`` times at
random moments during the run and restarted as a user would (the same command); then the
orders found in the output files are compared with those sent: lost and duplicated. The seed is
printed. Usage::

    .venv/bin/python benchmarks/aggregate_vs_nodered.py [--orders N] [--kills K] [--seed S]
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
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
NODE_RED_DIR = REPO / "build" / "node-red"
ROUTES = ("eu", "us", "asia")

COUPLER_SITE = """
[site]
name = "peer"

[[adapters]]
name = "orders-in"
type = "filedrop"
direction = "inbound"
channel = "orders"
format = "bench.Order@1;application/json"
[adapters.options]
directory = "{drop}"
include = ["*.jsonl"]
payload = "lines"
stable_seconds = 0
poll_interval = 0.1
max_poll_interval = 0.2

[[routes]]
name = "orders"
from = "orders"
to = ["batches"]
idempotent_key = "message_id"
[[routes.steps]]
type = "filter"
when = "body.amount >= 0"
[[routes.steps]]
type = "aggregate"
correlation = "body.route"
complete_size = 100
timeout_seconds = 2
strategy = "lines"

[[adapters]]
name = "batches-out"
type = "filedrop"
direction = "outbound"
channel = "batches"
idempotent_key = "message_id"
[adapters.options]
directory = "{out}"
file_name = "{{correlation_id}}.jsonl"
file_exists = "append"
"""


def node_red_flow(drop: Path, out: Path) -> list[dict]:
    z = "flow"
    nodes: list[dict] = [{"id": z, "type": "tab", "label": "orders"}]

    def node(id_: str, type_: str, wires: list[list[str]], **kw: object) -> None:
        # ids that are not type names (Node-RED takes an id equal to a type for a config node)
        nodes.append({"id": f"n-{id_}", "type": type_, "z": z, "wires": [[f"n-{w}" for w in out] for out in wires], **kw})

    node("watch", "watch", [["only-jsonl"]], files=str(drop), recursive=False)
    # the watch reports a file renamed into the directory more than once: read it once
    node("once", "rbe", [["read"]], func="rbe", gap="", start="", inout="out", septopics=False, property="filename",
         topi="topic")
    node("only-jsonl", "switch", [["once"]], property="filename", propertyType="msg",
         rules=[{"t": "regex", "v": r"\.jsonl$", "vt": "str", "case": False}], checkall="true", repair=False, outputs=1)
    node("read", "file in", [["non-empty"]], filename="filename", filenameType="msg", format="lines", chunk=False,
         sendError=False, encoding="utf8", allProps=False)
    node("non-empty", "switch", [["parse"]], property="payload", propertyType="msg", rules=[{"t": "nempty"}],
         checkall="true", repair=False, outputs=1)
    node("parse", "json", [["positive"]], property="payload", action="obj", pretty=False)
    node("positive", "switch", [["by-route"]], property="payload.amount", propertyType="msg",
         rules=[{"t": "gte", "v": "0", "vt": "num"}], checkall="true", repair=False, outputs=1)
    node("by-route", "switch", [[f"join-{r}"] for r in ROUTES], property="payload.route", propertyType="msg",
         rules=[{"t": "eq", "v": r, "vt": "str"} for r in ROUTES], checkall="false", repair=False, outputs=len(ROUTES))
    for r in ROUTES:
        node(f"join-{r}", "join", [[f"text-{r}"]], mode="custom", build="array", property="payload",
             propertyType="msg", key="topic", joiner="\\n", joinerType="str", accumulate=False, timeout="2",
             count="100", reduceRight=False, reduceExp="", reduceInit="", reduceInitType="", reduceFixup="",
             useparts=False, outputs=1)
        node(f"text-{r}", "json", [[f"write-{r}"]], property="payload", action="str", pretty=False)
        node(f"write-{r}", "file", [[]], filename=str(out / f"{r}.jsonl"), filenameType="str", appendNewline=True,
             createDir=True, overwriteFile="false", encoding="none")
    return nodes


def ensure_node_red() -> Path:
    red = NODE_RED_DIR / "node_modules" / "node-red" / "red.js"
    if not red.exists():
        NODE_RED_DIR.mkdir(parents=True, exist_ok=True)
        subprocess.run(["npm", "install", "--no-audit", "--no-fund", "node-red@4"], cwd=NODE_RED_DIR, check=True)
    return red


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Peer:
    """One tool doing the job in ``work`` (start, kill, count what it wrote)."""

    name = ""

    def __init__(self, work: Path):
        self.work = work
        self.drop, self.out = work / "drop", work / "out"
        self.drop.mkdir(parents=True)
        self.out.mkdir()
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        raise NotImplementedError

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.kill()

    def written(self) -> list[int]:
        """The order numbers in the output files."""
        raise NotImplementedError


class Coupler(Peer):
    name = "Coupler"

    def __init__(self, work: Path):
        super().__init__(work)
        self.site = work / "site" / "site.toml"
        self.site.parent.mkdir()
        self.site.write_text(COUPLER_SITE.format(drop=self.drop, out=self.out))

    def start(self) -> None:
        from coupler.bus.config.loader import load_site
        from coupler.bus.runtime.control import ControlClient, ControlError

        self.proc = subprocess.Popen([sys.executable, "-m", "coupler.bus.cli.main", "daemon", "--site", str(self.site)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client = ControlClient(load_site(self.site).control_socket)
        while True:
            try:
                if client.call("status")["pid"] == self.proc.pid:
                    return
            except ControlError:
                pass
            if self.proc.poll() is not None:
                raise RuntimeError("coupler daemon did not start")
            time.sleep(0.05)

    def written(self) -> list[int]:
        return [json.loads(line)["n"] for f in sorted(self.out.glob("*.jsonl")) for line in f.read_text().splitlines() if line]


class NodeRed(Peer):
    name = "Node-RED 4"

    def __init__(self, work: Path, red: Path):
        super().__init__(work)
        self.red = red
        self.user = work / "node-red"
        self.user.mkdir()
        (self.user / "flows.json").write_text(json.dumps(node_red_flow(self.drop, self.out)))
        self.port = free_port()

    def start(self) -> None:
        self.proc = subprocess.Popen(["node", str(self.red), "-u", str(self.user), "-p", str(self.port), "flows.json"],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        assert self.proc.stdout is not None
        for line in self.proc.stdout:  # started once the flows run
            if b"Started flows" in line:
                break
        else:
            raise RuntimeError("node-red did not start")
        # its log goes on being read (a full pipe would stop it); the watch is set up just after
        threading.Thread(target=self.proc.stdout.read, daemon=True).start()
        time.sleep(1.0)

    def written(self) -> list[int]:
        return [o["n"] for f in sorted(self.out.glob("*.jsonl")) for line in f.read_text().splitlines() if line
                for o in json.loads(line)]


def orders_file(work: Path, n: int, rng: random.Random) -> tuple[Path, set[int]]:
    path = work / "orders.jsonl"
    kept = set()
    with path.open("w") as f:
        for i in range(n):
            amount = round(rng.uniform(-20, 200), 2)
            if amount >= 0:
                kept.add(i)
            f.write(json.dumps({"n": i, "route": ROUTES[i % 3], "amount": amount, "customer": f"c{i % 997}"}) + "\n")
    return path, kept


def arrive(peer: Peer, source: Path) -> None:
    tmp = peer.drop / ".orders.tmp"
    shutil.copyfile(source, tmp)
    os.rename(tmp, peer.drop / "orders.jsonl")


def wait_written(peer: Peer, expected: int, idle: float) -> tuple[list[int], float]:
    """What ``peer`` wrote once it holds ``expected`` orders, or once nothing new came for ``idle`` s."""
    last, count = time.perf_counter(), 0
    while time.perf_counter() - last < idle:
        got = peer.written()
        if len(got) >= expected:
            return got, time.perf_counter()
        if len(got) > count:
            last, count = time.perf_counter(), len(got)
        time.sleep(0.05)
    return peer.written(), time.perf_counter()


def throughput(peer: Peer, source: Path, kept: set[int]) -> dict[str, float]:
    peer.start()
    try:
        t0 = time.perf_counter()
        arrive(peer, source)
        got, t1 = wait_written(peer, len(kept), 120)
        time.sleep(3)  # a batch written twice would be there by now
        got = peer.written()
    finally:
        peer.stop()
    return {"orders_per_s": len(kept) / (t1 - t0), "seconds": t1 - t0, "written": len(got),
            "lost": len(kept - set(got)), "duplicated": sum(c - 1 for c in Counter(got).values() if c > 1)}


def crash(peer: Peer, source: Path, kept: set[int], kills: int, rng: random.Random, span: float) -> dict[str, float]:
    peer.start()
    arrive(peer, source)
    for _ in range(kills):
        time.sleep(rng.uniform(0.05, span / max(kills, 1)))
        peer.kill()
        peer.start()  # restarted as a user would: the same command
    got, _ = wait_written(peer, len(kept), 60)
    time.sleep(5)  # the time-outs of what is still held, and any batch written twice
    got = peer.written()
    peer.stop()
    return {"written": len(got), "lost": len(kept - set(got)),
            "duplicated": sum(c - 1 for c in Counter(got).values() if c > 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--orders", type=int, default=5000)
    ap.add_argument("--kills", type=int, default=5)
    ap.add_argument("--seed", type=int, default=None)
    args = ap.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(1 << 32)
    rng = random.Random(seed)
    red = ensure_node_red()
    version = subprocess.run(["node", "-e", f"console.log(require('{red.parent}/package.json').version)"],
                             capture_output=True, text=True).stdout.strip()
    print(f"seed {seed}, {args.orders} orders, load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} cores, "
          f"Node-RED {version} on Node.js {subprocess.run(['node', '--version'], capture_output=True, text=True).stdout.strip()}")
    with tempfile.TemporaryDirectory() as d:
        work = Path(d)
        source, kept = orders_file(work, args.orders, rng)
        print(f"{len(kept)} orders with amount >= 0")
        results = {}
        for cls in (NodeRed, Coupler):
            label = cls.name
            make = (lambda w, c=cls: c(w, red)) if cls is NodeRed else (lambda w, c=cls: c(w))
            results[label] = throughput(make(work / f"{label}-tp"), source, kept)
            r = results[label]
            print(f"{label:11} {r['orders_per_s']:8.0f} orders/s ({r['seconds']:.1f} s), lost {r['lost']}, "
                  f"duplicated {r['duplicated']}", flush=True)
        span = max(results["Coupler"]["seconds"], 2.0)
        for cls in (NodeRed, Coupler):
            label = cls.name
            make = (lambda w, c=cls: c(w, red)) if cls is NodeRed else (lambda w, c=cls: c(w))
            r = crash(make(work / f"{label}-crash"), source, kept, args.kills, rng,
                      span if cls is Coupler else max(results[label]["seconds"], 0.5))
            print(f"{label:11} {args.kills} SIGKILLs: written {r['written']}, lost {r['lost']}, "
                  f"duplicated {r['duplicated']}", flush=True)
        ratio = results["Coupler"]["orders_per_s"] / results["Node-RED 4"]["orders_per_s"]
        print(f"Coupler / Node-RED orders/s: {ratio:.2f}x")


if __name__ == "__main__":
    main()
