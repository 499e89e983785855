"""Benchmark: a large XML file of repeated records -> an Avro container file.

Generates ``--mb`` megabytes (default 200) of ``orders/order`` records valid against
``tests/translators/xml/data/orders/orders.xsd``, streams them through the XML translator
(lxml iterparse + record converters generated from the schema) into an Avro container file
as ``coupler xml decode --to avro`` writes it (the Avro encoder generated from the schema), and
measures xmlschema's whole-document ``to_dict`` on a slice (``--baseline-mb``, default 10) as
the baseline. Also, in the same run: typed decoding alone, the records written by fastavro's
own writer, and a bare lxml ``iterparse`` pass that only visits every element (issue 32's
floor; the ratio XML -> Avro / lxml is printed in CPU and wall time with the load average), and
for context lxml without element proxies (libxml2 alone, parser targets: per end tag, and with
start, data and end and each element's text joined, what a target-driven decoder pays at least).
Reports MB/s, the ratios, and peak RSS growth over the run. Then the command line's whole
process, ``coupler xml decode --record-path orders/order --to avro`` on the same file, with
``--jobs 1`` and ``--jobs 2`` alternately (``--cli-pairs``, default 2): wall and CPU seconds
(the command's and its workers'), the speed-up, the load average.

    .venv/bin/python benchmarks/xml_translate.py [--mb 200] [--baseline-mb 10]

Before and after a change (``--baseline-ref``): the old code is checked out of git into a
temporary worktree and the same generated file (``--compare-mb``, default 4) is translated
alternately by the old and the current code, each run in a fresh process importing only its
own ``coupler`` package, ``--pairs`` times (default 7). Each run measures the CPU time of its
process (``time.process_time``: less sensitive than wall-clock time to other jobs on the
machine) for typed decoding alone and for XML -> Avro file (each code's own way of writing the
file: fastavro's writer before issue 32), the least of ``--repeat`` (3)
repetitions; the report gives every pair, the medians, and the ratio new/old of the medians
(below 1.00: the current code is faster). ``--profile N`` then adds a cProfile of each.

    .venv/bin/python benchmarks/xml_translate.py --baseline-ref afe0c7b [--compare-mb 4] [--pairs 7] [--repeat 3]

Peak RSS by file size (``--rss-mb``): the command line's whole process on files of each size
made by the same generator, each ``--rss-to`` and ``--rss-jobs``, the command's own peak RSS
(``VmHWM`` at its exit) and its largest worker's (polled), with CPU and wall seconds; with
``--baseline-ref``, that commit's code and this one alternately (``--rss-pairs`` runs each).

    .venv/bin/python benchmarks/xml_translate.py --rss-mb 20,100,200,400 [--rss-to avro,jsonl] [--rss-jobs 1,2] [--baseline-ref REF]
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import baseline
import fastavro
from machine import memory_note

ROOT = Path(__file__).resolve().parent.parent
XSD = ROOT / "tests/translators/xml/data/orders/orders.xsd"

HEAD = ('<?xml version="1.0" encoding="UTF-8"?>\n<orders xmlns="http://acme.example.com/orders/v1" '
        'xmlns:c="http://acme.example.com/common" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">\n'
        "<batchId>42</batchId>\n")
TAIL = "</orders>\n"


def order(n: int) -> str:
    lines = "".join(
        f'<line number="{k}"><sku>SKU-{n % 997}-{k}</sku><description>Item {k} of order {n}</description>'
        f'<quantity>{k + 1}</quantity><unitPrice currency="EUR">{(n % 500) + k}.{k:02d}</unitPrice>'
        f"<weightKg>{k * 0.25}</weightKg></line>"
        for k in range(1, 4)
    )
    return (
        f'<order id="PO-{n}" priority="{n % 5}"><orderDate>2024-{1 + n % 12:02d}-{1 + n % 28:02d}</orderDate>'
        f"<createdAt>2024-03-15T09:30:{n % 60:02d}.250Z</createdAt><status>CONFIRMED</status>"
        f'<buyer id="C-{n}"><name>Customer {n}</name><address kind="billing"><c:street>Main St {n}</c:street>'
        f"<c:city>Berlin</c:city><c:postal-code>10115</c:postal-code><c:country>DE</c:country></address></buyer>"
        f"<invoiceRef>INV-{n}</invoiceRef>{lines}"
        f'<total currency="EUR">{n % 1000}.50</total><discountRate>0.0525</discountRate>'
        f'<approvedBy xsi:nil="true"/></order>\n'
    )


def generate(path: Path, megabytes: float) -> int:
    target = int(megabytes * 1024 * 1024)
    written, n = 0, 0
    with path.open("w", encoding="utf-8") as out:
        out.write(HEAD)
        while written < target:
            chunk = "".join(order(n + i) for i in range(1000))
            out.write(chunk)
            written += len(chunk)
            n += 1000
        out.write(TAIL)
    return n


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


#: the top-level folders installed as ``coupler.<folder>`` (setup.py)
RECORD_PATH = "orders/order"


def worker(code: Path | None, xml: Path, profile: int, repeat: int) -> dict[str, Any]:
    """One run in this process: CPU seconds of typed decoding and of XML -> Avro file (the
    least of ``repeat`` repetitions of each)."""
    if code is not None:
        baseline.use_code(code)
    from coupler.translators.xml import XsdModel
    from coupler.translators.xml import decoder as decoder_module
    from coupler.translators.xml.model import value_avro

    model = XsdModel.load(XSD)
    decoder = model.decoder("orders")
    raw_schema = value_avro(decoder.resolve_path(RECORD_PATH)[-1][1].record, set())
    write = avro_writer(raw_schema)
    result: dict[str, Any] = {"code": str(Path(decoder_module.__file__).resolve().parent)}
    if profile:
        import cProfile
        import io
        import pstats

        profiler = cProfile.Profile()
        profiler.enable()
        result["records"] = sum(1 for _ in decoder.iter_records(xml, RECORD_PATH))
        profiler.disable()
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(profile)
        result["profile"] = out.getvalue()
        return result
    decode_s, avro_s = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(repeat):
            start = time.process_time()
            result["records"] = sum(1 for _ in decoder.iter_records(xml, RECORD_PATH))
            decode_s.append(time.process_time() - start)
            start = time.process_time()
            with (Path(tmp) / "out.avro").open("wb") as out_file:
                write(out_file, avro_records(decoder, xml, raw_schema))
            avro_s.append(time.process_time() - start)
    # the least of the repetitions: what the code costs when the machine's other work
    # interferes least (caches, the other hyperthread)
    result["decode_s"], result["avro_s"] = min(decode_s), min(avro_s)
    return result


def avro_writer(raw_schema: Any) -> Any:
    """How the code being measured writes an Avro container file, as ``xml decode --to avro``
    does: its generated encoder where it has one (issue 32), else fastavro's writer."""
    try:
        from coupler.translators.xml.avro import write_container
    except ImportError:  # code before issue 32
        parsed = fastavro.parse_schema(raw_schema)
        return lambda out, records: fastavro.writer(out, parsed, records)
    return lambda out, records: write_container(out, raw_schema, records)


def avro_records(decoder: Any, xml: Path, raw_schema: Any) -> Any:
    """The records for the Avro file, as ``xml decode --to avro`` asks for them: with the
    schema, so that the decoder may encode them itself (where the code has that)."""
    if "avro_schema" in inspect.signature(decoder.iter_records).parameters:
        return decoder.iter_records(xml, RECORD_PATH, avro_schema=raw_schema)
    return decoder.iter_records(xml, RECORD_PATH)


def run_worker(code: Path | None, xml: Path, profile: int = 0, repeat: int = 1) -> dict[str, Any]:
    command = [sys.executable, __file__, "--worker", str(xml), "--profile", str(profile), "--repeat", str(repeat)]
    if code is not None:
        command += ["--code", str(code)]
    done = subprocess.run(command, check=True, capture_output=True, text=True)
    return json.loads(done.stdout)


def compare(ref: str, megabytes: float, pairs: int, repeat: int, profile: int) -> None:
    """The old code (git ``ref``, in a temporary worktree) against the current code, alternately."""
    commit, now = baseline.describe(ref), baseline.head()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp, baseline.checkout(commit) as old:
        xml = Path(tmp) / "orders.xml"
        records = generate(xml, megabytes)
        size = xml.stat().st_size / 1e6
        print(f"workload: {size:.1f} MB, {records} orders (each 3 lines, 23 elements, 11 attributes), "
              f"streamed at {RECORD_PATH}")
        print(f"old: {commit} (git worktree {old}); new: the working copy {ROOT} ({now})")
        print(f"{pairs} pairs, old then new, each run a fresh process; CPU seconds (time.process_time),")
        print(f"the least of {repeat} repetitions in the process, for typed decoding alone and for XML -> Avro file")
        print(f"load average at start: {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f} "
              f"on {os.cpu_count()} CPUs")
        print()
        print("pair  typed decoding: old    new   new/old   XML -> Avro file: old    new   new/old")
        runs: dict[str, list[dict[str, Any]]] = {"old": [], "new": []}
        for n in range(pairs):
            for name, code in (("old", old), ("new", ROOT)):
                run = run_worker(code, xml, repeat=repeat)
                assert run["records"] == records, run
                assert Path(run["code"]).is_relative_to(code.resolve()), run["code"]
                runs[name].append(run)
            o, w = runs["old"][-1], runs["new"][-1]
            print(f"{n + 1:4d}  {o['decode_s']:20.2f} s {w['decode_s']:5.2f} s {w['decode_s'] / o['decode_s']:7.3f}"
                  f"  {o['avro_s']:20.2f} s {w['avro_s']:5.2f} s {w['avro_s'] / o['avro_s']:7.3f}")
        med = {(name, key): statistics.median(r[key] for r in runs[name])
               for name in runs for key in ("decode_s", "avro_s")}
        print()
        for key, label in (("decode_s", "typed decoding  "), ("avro_s", "XML -> Avro file")):
            o, w = med["old", key], med["new", key]
            print(f"median {label}: old {o:.2f} s ({size / o:.2f} MB/s)  new {w:.2f} s ({size / w:.2f} MB/s)  "
                  f"new/old {w / o:.3f} ({(w / o - 1) * 100:+.1f} %)")
        load_after = os.getloadavg()
        print(f"load average at end: {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}")
        if profile:
            for name, code in (("old", old), ("new", ROOT)):
                print(f"\n--- cProfile, {name} code, typed decoding, top {profile} by own time ---")
                print(run_worker(code, xml, profile)["profile"].strip())


#: the command line's ``main`` in a process that writes its own CPU seconds and peak RSS
#: (``VmHWM``: this process image only; ``ru_maxrss`` counts the RSS of the process it was
#: started from: a child of this benchmark reported the benchmark's own peak, 262 MB for a
#: command whose own was 44 MB) to the file named by $BENCH_OUT at exit; $BENCH_CODE: an
#: older commit's code (``--baseline-ref``)
_CLI = """\
import atexit, os, sys
if os.environ.get("BENCH_CODE"):
    sys.path.insert(0, os.environ["BENCH_DIR"])
    import baseline
    baseline.use_code(baseline.Path(os.environ["BENCH_CODE"]))
def _report():
    t = os.times()
    with open("/proc/self/status") as f, open(os.environ["BENCH_OUT"], "w") as out:
        out.write(f"{t.user + t.system} {next(line for line in f if line.startswith('VmHWM')).split()[1]}")
atexit.register(_report)  # not run by the workers, which end by os._exit
from coupler.bus.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def _worker_hwm(pid: int, peak: dict[int, int], done: threading.Event) -> None:
    """Poll the peak RSS (``VmHWM``, kB) of ``pid``'s child processes (the workers, which
    have no exit hook of ours) until ``done``."""
    while not done.wait(0.05):
        try:
            children = [int(c) for task in os.listdir(f"/proc/{pid}/task")
                        for c in Path(f"/proc/{pid}/task/{task}/children").read_text().split()]
        except OSError:
            continue
        for child in children:
            try:
                with open(f"/proc/{child}/status") as f:
                    hwm = int(next(line for line in f if line.startswith("VmHWM")).split()[1])
            except (OSError, StopIteration, ValueError):
                continue
            peak[child] = max(peak.get(child, 0), hwm)


def run_cli(xml: Path, out: Path, jobs: int, to: str = "avro",
            code: Path | None = None) -> tuple[float, float, float, float, float]:
    """``coupler xml decode --record-path orders/order --to TO --jobs N`` in a new process:
    wall seconds, CPU seconds (the command's and its workers', from ``wait4``), the
    command's own CPU seconds, its own peak RSS and its largest worker's (MB, 0 without)."""
    command = [sys.executable, "-c", _CLI, "xml", "decode", str(XSD), str(xml), "--record-path", RECORD_PATH,
               "--to", to, "--output", str(out), "--jobs", str(jobs), "--no-progress"]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if code is not None:
        env.update(BENCH_CODE=str(code), BENCH_DIR=str(Path(__file__).resolve().parent))
    with tempfile.NamedTemporaryFile("r") as report, tempfile.TemporaryFile() as err:
        env["BENCH_OUT"] = report.name
        start = time.perf_counter()
        proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=err)
        workers: dict[int, int] = {}
        done = threading.Event()
        poller = threading.Thread(target=_worker_hwm, args=(proc.pid, workers, done), daemon=True)
        poller.start()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        done.set()
        poller.join()
        if os.waitstatus_to_exitcode(status):
            err.seek(0)
            raise RuntimeError(f"{' '.join(command)}: {err.read().decode(errors='replace')[-500:]}")
        own_cpu, own_rss = report.read().split()
    return (wall, usage.ru_utime + usage.ru_stime, float(own_cpu), int(own_rss) / 1024,
            max(workers.values(), default=0) / 1024)


def cli_jobs(xml: Path, tmp: Path, pairs: int, records: int) -> list[str]:
    """The command line's whole process, ``coupler xml decode --record-path orders/order --to avro``,
    with ``--jobs 1`` and ``--jobs 2`` alternately (``pairs`` times) on the same file: wall
    seconds and CPU seconds (the command's and its worker processes'), peak RSS (each
    process's own); the two files' bytes are checked to be the same but for their random sync marker."""
    runs: dict[int, list[tuple[float, float, float]]] = {1: [], 2: []}
    rss: dict[int, tuple[float, float]] = {}  # peak RSS MB of the command, of its largest worker
    outputs = {}
    load = os.getloadavg()
    for _ in range(pairs):
        for jobs in (1, 2):
            out = tmp / f"cli-jobs{jobs}.avro"
            wall, cpu, own_cpu, own_rss, worker_rss = run_cli(xml, out, jobs)
            runs[jobs].append((wall, cpu, own_cpu))
            rss[jobs] = max(rss.get(jobs, (0, 0)), (own_rss, worker_rss))
            data = out.read_bytes()
            outputs[jobs] = data.replace(data[-16:], b"")  # the sync marker: the file's last 16 bytes
            with out.open("rb") as fh:
                assert sum(b.num_records for b in fastavro.block_reader(fh)) == records
    assert outputs[1] == outputs[2], "--jobs 2 wrote other bytes than --jobs 1"
    size = xml.stat().st_size / 1e6
    lines = []
    med: dict[int, float] = {}
    med_cpu: dict[int, float] = {}
    for jobs in (1, 2):
        wall = statistics.median(w for w, _, _ in runs[jobs])
        cpu = statistics.median(c for _, c, _ in runs[jobs])
        own = statistics.median(o for _, _, o in runs[jobs])
        med[jobs] = wall
        lines.append(f"CLI xml decode --to avro --jobs {jobs} (whole process, median of {pairs}): "
                     f"{size / wall:6.2f} MB/s wall, {wall:.2f} s wall, {cpu:.2f} s CPU (command and workers), "
                     f"{size / cpu:6.2f} MB/s CPU; the command's own {own:.2f} s CPU; peak RSS {rss[jobs][0]:.0f} MB"
                     + (f", a worker's {rss[jobs][1]:.0f} MB" if jobs > 1 else "")
                     + (f"; on 2 idle cores at most {med_cpu[1] / max(cpu / 2, own):.2f}x --jobs 1's CPU time"
                        " (all the CPU on 2 cores, or the command's own part)" if jobs > 1 else ""))
        med_cpu[jobs] = cpu
    after = os.getloadavg()
    lines.append(f"CLI --jobs 2 / --jobs 1: {med[1] / med[2]:.2f}x (wall); the same bytes but the sync marker; "
                 f"load average {load[0]:.2f} before, {after[0]:.2f} after, on {len(os.sched_getaffinity(0))} cores")
    return lines


def rss_by_size(sizes: list[float], tos: list[str], jobs_list: list[int], ref: str | None, pairs: int) -> None:
    """Peak RSS of the command's whole process by file size (issue 32: under 300 MB for any
    size): ``xml decode --record-path orders/order`` on files of ``sizes`` MB made by the
    generator, each ``--to`` and ``--jobs`` given, the command's own peak and its largest
    worker's; with ``ref``, that commit's code and this one alternately, ``pairs`` times each
    (the highest peak and the median CPU and wall of the pairs)."""
    load = os.getloadavg()
    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        codes: list[tuple[str, Path | None]] = [("this", None)]
        if ref:
            old = stack.enter_context(baseline.checkout(ref))
            codes = [(baseline.describe(ref), old), ("this", None)]
        print(f"peak RSS by file size, the command's whole process (VmHWM of the command; of its largest worker, "
              f"polled); {pairs} run(s) each, codes alternating; load average {load[0]:.2f} at start on "
              f"{len(os.sched_getaffinity(0))} cores; this code: {baseline.head()}")
        print()
        warm = tmp / "warm.xml"  # each code's bytecode written before the runs measured
        generate(warm, 0.2)
        for _, code in codes:
            run_cli(warm, tmp / "warm.avro", 2, "avro", code)
        print("| file MB | --to | --jobs | code | command's peak RSS MB | a worker's MB | wall s | CPU s | MB/s CPU |")
        print("|---|---|---|---|---|---|---|---|---|")
        for megabytes in sizes:
            xml = tmp / "orders.xml"
            generate(xml, megabytes)
            size = xml.stat().st_size / 1e6
            for to in tos:
                for jobs in jobs_list:
                    runs: dict[str, list[tuple[float, float, float, float, float]]] = {name: [] for name, _ in codes}
                    for _ in range(pairs):
                        for name, code in codes:
                            runs[name].append(run_cli(xml, tmp / f"out.{to}", jobs, to, code))
                    for name, _ in codes:
                        wall = statistics.median(r[0] for r in runs[name])
                        cpu = statistics.median(r[1] for r in runs[name])
                        own = max(r[3] for r in runs[name])
                        worker = max(r[4] for r in runs[name])
                        print(f"| {size:.0f} | {to} | {jobs} | {name} | {own:.0f} | {worker:.0f} | {wall:.1f} | "
                              f"{cpu:.1f} | {size / cpu:.2f} |", flush=True)
            xml.unlink()
    after = os.getloadavg()
    print(f"\nload average {after[0]:.2f} at end; {memory_note()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=200)
    parser.add_argument("--baseline-mb", type=float, default=10)
    parser.add_argument("--baseline-ref", metavar="REF",
                        help="compare with the code of this git commit (alternating processes) instead")
    parser.add_argument("--compare-mb", type=float, default=4, help="size of the file for --baseline-ref")
    parser.add_argument("--pairs", type=int, default=7, help="old/new pairs for --baseline-ref")
    parser.add_argument("--repeat", type=int, default=3, help="repetitions in each process of --baseline-ref")
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="with --baseline-ref: then cProfile each code once, top N functions")
    parser.add_argument("--cli-pairs", type=int, default=2, metavar="N",
                        help="the CLI's whole process with --jobs 1 then --jobs 2, N times (0: not measured)")
    parser.add_argument("--rss-mb", metavar="MB,MB,...",
                        help="instead: the command's peak RSS by file size (e.g. 20,100,200,400), this code's "
                             "and --baseline-ref's alternately")
    parser.add_argument("--rss-to", default="avro", help="with --rss-mb: the outputs, e.g. avro,jsonl")
    parser.add_argument("--rss-jobs", default="1,2", help="with --rss-mb: the --jobs values")
    parser.add_argument("--rss-pairs", type=int, default=1, help="with --rss-mb: runs of each code")
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--code", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        print(json.dumps(worker(args.code, args.worker, args.profile, args.repeat)))
        return
    if args.rss_mb:
        rss_by_size([float(m) for m in args.rss_mb.split(",")], args.rss_to.split(","),
                    [int(j) for j in args.rss_jobs.split(",")], args.baseline_ref, args.rss_pairs)
        return
    if args.baseline_ref:
        compare(args.baseline_ref, args.compare_mb, args.pairs, args.repeat, args.profile)
        return
    from coupler.translators.xml import XsdModel

    model = XsdModel.load(XSD)
    decoder = model.decoder("orders")
    from coupler.translators.xml.model import value_avro

    raw_schema = value_avro(decoder.resolve_path(RECORD_PATH)[-1][1].record, set())
    write = avro_writer(raw_schema)
    with tempfile.TemporaryDirectory() as tmp:
        big, small, avro = Path(tmp) / "big.xml", Path(tmp) / "small.xml", Path(tmp) / "out.avro"
        records = generate(big, args.mb)
        generate(small, args.baseline_mb)
        size, small_size = big.stat().st_size / 1e6, small.stat().st_size / 1e6

        # baseline: xmlschema whole-document to_dict
        start = time.perf_counter()
        model.schema.to_dict(str(small))
        base_s = time.perf_counter() - start
        base_rate = small_size / base_s

        rss_before = rss_mb()
        # ours on the small slice (same input as the baseline) and on the big file
        start = time.perf_counter()
        with (Path(tmp) / "small.avro").open("wb") as out:
            write(out, avro_records(decoder, small, raw_schema))
        small_s = time.perf_counter() - start
        rss_small = rss_mb()
        start, cpu = time.perf_counter(), time.process_time()
        with avro.open("wb") as out:
            write(out, avro_records(decoder, big, raw_schema))
        ours_s, ours_cpu = time.perf_counter() - start, time.process_time() - cpu
        rss_after = rss_mb()

        # the floor: a bare lxml iterparse pass that only visits every element (and clears
        # it, as any streaming reader must to keep memory flat)
        from lxml import etree

        start, cpu = time.perf_counter(), time.process_time()
        elements = 0
        for _event, element in etree.iterparse(str(big), events=("end",)):
            elements += 1
            element.clear()
        lxml_s, lxml_cpu = time.perf_counter() - start, time.process_time() - cpu
        # for context, not the floor: libxml2 alone (the whole document parsed into a
        # tree, no Python per element: not streaming, so on the slice, not the big file), and
        # a parser target that gets a Python call per end tag without lxml making an element
        # (no attributes, text or children to read: not enough for typed decoding), and the
        # least a decoder driven by parser-target callbacks pays before it converts anything:
        # a call per start and end tag, the text of each element collected and joined
        start = time.process_time()
        etree.parse(str(small))
        tree_cpu = time.process_time() - start

        class _Ends:
            count = 0

            def end(self, tag: str) -> None:
                self.count += 1

            def close(self) -> int:
                return self.count

        class _Texts:
            def __init__(self) -> None:
                self.count = 0
                self.text: list[str] = []
                self.data = self.text.append  # called by lxml with each piece of text

            def start(self, tag: str, attrib: Any) -> None:
                if self.text:
                    self.text.clear()

            def end(self, tag: str) -> None:
                self.count += 1
                if self.text:
                    "".join(self.text)
                    self.text.clear()

            def close(self) -> int:
                return self.count

        start = time.process_time()
        ends = etree.parse(str(big), etree.XMLParser(target=_Ends()))
        target_cpu = time.process_time() - start
        assert ends == elements
        start = time.process_time()
        texts = etree.parse(str(big), etree.XMLParser(target=_Texts()))
        texts_cpu = time.process_time() - start
        assert texts == elements

        start = time.perf_counter()
        count = sum(1 for _ in decoder.iter_records(big, "orders/order"))
        decode_s = time.perf_counter() - start
        assert count == records

        # the same records written by fastavro's own writer (what the CLI did before issue 32)
        parsed = fastavro.parse_schema(raw_schema)
        start, cpu = time.perf_counter(), time.process_time()
        with avro.open("wb") as out:
            fastavro.writer(out, parsed, decoder.iter_records(big, "orders/order"))
        fastavro_s, fastavro_cpu = time.perf_counter() - start, time.process_time() - cpu
        cli_lines = cli_jobs(big, Path(tmp), args.cli_pairs, records) if args.cli_pairs else []

    print(f"input: {size:.1f} MB, {records} records; baseline slice {small_size:.1f} MB")
    print(f"xmlschema to_dict (baseline, slice):    {base_rate:6.2f} MB/s")
    print(f"coupler XML->Avro file (slice):         {small_size / small_s:6.2f} MB/s  ({small_size / small_s / base_rate:.1f}x)")
    print(f"coupler XML->Avro file (full):          {size / ours_s:6.2f} MB/s  ({size / ours_s / base_rate:.1f}x), "
          f"{size / ours_cpu:6.2f} MB/s CPU")
    print(f"coupler typed decoding only (full):     {size / decode_s:6.2f} MB/s  ({size / decode_s / base_rate:.1f}x)")
    print(f"coupler records -> fastavro.writer (full): {size / fastavro_s:6.2f} MB/s wall, {size / fastavro_cpu:6.2f} MB/s CPU")
    print(f"bare lxml iterparse, every element (full): {size / lxml_s:6.2f} MB/s wall, {size / lxml_cpu:6.2f} MB/s CPU "
          f"({elements} elements)")
    print(f"for context: lxml parsing the slice into a tree (libxml2, no Python per element) "
          f"{small_size / tree_cpu:6.2f} MB/s CPU; a parser target called per end tag (no elements made) "
          f"{size / target_cpu:6.2f} MB/s CPU; a parser target with start, data and end, each element's "
          f"text joined (a target-driven decoder's floor before any conversion) {size / texts_cpu:6.2f} MB/s CPU")
    print(f"coupler XML->Avro file / bare lxml iterparse: {lxml_s / ours_s:.2f} (wall), {lxml_cpu / ours_cpu:.2f} (CPU); "
          f"XML->Avro {size / ours_cpu:.2f} MB/s CPU (targets: >= 0.3 and >= 25 MB/s); "
          f"load average {os.getloadavg()[0]:.1f}; {memory_note()}")
    print(f"peak RSS: {rss_before:.0f} MB before, {rss_small:.0f} MB after the {small_size:.0f} MB slice, "
          f"{rss_after:.0f} MB after the {size:.0f} MB file")
    for line in cli_lines:
        print(line)


if __name__ == "__main__":
    main()
