"""What a Spark worker's first XML split costs beyond a later one: the per-worker fixed cost
of a session's first ``batch translate --from xml:XSD#element`` job (issue 32), in CPU time.

    .venv/bin/python benchmarks/xml_worker_start.py [--mb 20] [--rounds 5] [--baseline-ref REF]
        [--cold] [--parts]

Each run is a fresh Python process, as a Spark task slot's worker is: it starts as
``spark_ingest.py``'s warm-up leaves a worker (the split task's modules imported and the
XSD's model loaded; with ``--cold`` neither, as a ``batch translate`` worker starts), then
runs the split task (``XmlSplitTask``, the ``avro:`` output with codec ``null``, as the
benchmark's job) on the same split of a generated ``orders.xml`` four times. Reported per
run, in CPU seconds of the process (``time.process_time``): the start (imports, model), the
first split and the median of the three later ones; their difference is what the first job
pays once per worker (the task's modules imported when the task is unpickled, code
generation, imports on first use), which both workers of
``local[2]`` pay at the same time. With ``--baseline-ref`` the code of that commit runs in
turn with the current code, run by run (same machine, same moment): ratios, not lone times.
``--parts`` times the first split's steps one by one in the current code.

CPU time, not wall time: the machine may be shared. The load average is printed. Python's
bytecode caches of both trees are written first (``compileall``), as an installed package
has them, so that neither run compiles modules from source.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import baseline  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("bus", "adapters", "canonical", "translators", "schemas")
#: the XSD of ``xml_translate.py``'s orders (not imported in the runs: it imports fastavro)
XSD = ROOT / "tests/translators/xml/data/orders/orders.xsd"
FLAGS = ("split_mb", "fastavro_imported", "pyarrow_imported")


def child(code: str, data: str, split_index: int, cold: bool, parts: bool) -> dict[str, float]:
    """One worker's life in this process: start, then the split four times."""
    if code != "-":
        baseline.use_code(Path(code))
    clock = time.process_time
    xsd = str(XSD)
    roots = (os.getcwd(),)
    c0 = clock()
    out: dict[str, float] = {}
    if not cold:  # spark_ingest.py's _WarmWorker
        import coupler.translators.copybook.arrow_parquet  # noqa: F401
        import coupler.translators.copybook.batch_files  # noqa: F401
        import coupler.translators.spark.direct  # noqa: F401
        from coupler.translators.spark.xml_splits import _model

        _model(xsd, roots)
        out["start"] = clock() - c0
    c1 = clock()
    # what unpickling the task imports in a worker (all there already after the warm-up)
    from coupler.translators.spark.commit import OutputCommitter
    from coupler.translators.spark.direct import settle_worker
    from coupler.translators.spark.xml_splits import XmlSplitTask, plan_xml_splits

    out["task_imports"] = clock() - c1

    # what the driver ships (planned and built here, outside the measured time)
    schema_driver = json.loads(os.environ["H_SCHEMA"])
    split = plan_xml_splits([data], "order", slots=2)[split_index]
    with tempfile.TemporaryDirectory() as tmp:
        committer = OutputCommitter(str(Path(tmp) / "out"), "overwrite", "avro")
        committer.check_target()
        task = XmlSplitTask(xsd, "order", committer, "avro", schema_driver, None, "null")
        if parts:
            out.update(_parts(xsd, roots, schema_driver))
        times = []
        for n in range(4):
            c = clock()
            task(n, split)
            times.append(clock() - c)
            if n == 0:
                settle_worker()
        committer.abort()
    out.update({"first": times[0], "later": statistics.median(times[1:]), "split_mb": (split.end - split.start) / 1e6,
                "fastavro_imported": float("fastavro" in sys.modules), "pyarrow_imported": float("pyarrow" in sys.modules)})
    out["extra"] = out["task_imports"] + out["first"] - out["later"]
    return out


def _parts(xsd: str, roots: tuple[str, ...], schema: object) -> dict[str, float]:
    """The first split's fixed steps one by one (current code): then the split runs warm."""
    clock = time.process_time
    out = {}
    c = clock()
    from coupler.translators.xml import avro  # noqa: F401

    out["import xml.avro"] = clock() - c
    from coupler.translators.spark.xml_splits import _decoder

    c = clock()
    decoder = _decoder(xsd, "orders", roots)
    out["_decoder"] = clock() - c
    c = clock()
    steps = decoder.resolve_path("orders/order")
    out["resolve_path (record converters)"] = clock() - c
    c = clock()
    decoder.generated.avro_converter(steps[-1][1].record, schema)
    out["avro_converter (fused Avro code)"] = clock() - c
    return out


def run(code: str, data: Path, split_index: int, args: argparse.Namespace, schema: str) -> dict[str, float]:
    cmd = [sys.executable, __file__, "--child", code, str(data), str(split_index)]
    if args.cold:
        cmd.append("--cold")
    if args.parts:
        cmd.append("--parts")
    env = {**os.environ, "H_SCHEMA": schema}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if proc.returncode:
        raise SystemExit(proc.stderr[-2000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=float, default=20, help="size of the generated XML file in MiB (default 20)")
    ap.add_argument("--rounds", type=int, default=5, help="runs of each code (default 5)")
    ap.add_argument("--split", type=int, default=-1, help="which split of the file (default the last, the smallest)")
    ap.add_argument("--baseline-ref", help="a commit whose code runs in turn with the current code")
    ap.add_argument("--cold", action="store_true", help="no warm-up: the worker imports and loads the model in its first split")
    ap.add_argument("--parts", action="store_true", help="time the first split's fixed steps one by one (current code)")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        code, data, index = args.child
        print(json.dumps(child(code, data, int(index), args.cold, args.parts)))
        return 0
    import xml_translate

    with tempfile.TemporaryDirectory(prefix="xml-worker-start-") as tmp:
        data = Path(tmp) / "orders.xml"
        xml_translate.generate(data, args.mb)
        from coupler.translators.spark.xml_splits import plan_xml_splits, record_avro_schema

        splits = plan_xml_splits([str(data)], "order", slots=2)
        index = args.split % len(splits)
        schema = json.dumps(record_avro_schema(str(XSD), "order", "orders/order"))
        print(f"{data.stat().st_size / 1e6:.1f} MB, split {index} of {len(splits)} "
              f"({(splits[index].end - splits[index].start) / 1e6:.2f} MB); {baseline.head()}; "
              f"{'cold' if args.cold else 'warm'} workers; load average {os.getloadavg()}")
        codes = {"new": "-"}
        with baseline.checkout(args.baseline_ref) if args.baseline_ref else _none() as old:
            for tree in ([old] if old else []) + [ROOT]:
                for folder in FOLDERS:
                    if (tree / folder).is_dir():
                        compileall.compile_dir(str(tree / folder), quiet=1, workers=1)
            if old:
                codes = {"old": str(old), "new": "-"}
            results: dict[str, list[dict[str, float]]] = {k: [] for k in codes}
            for r in range(args.rounds):
                for name in (list(codes) if r % 2 == 0 else list(codes)[::-1]):
                    res = run(codes[name], data, index, args, schema)
                    results[name].append(res)
                    print(f"round {r + 1} {name}: " + ", ".join(f"{k} {v * 1000:.1f} ms" if k not in FLAGS
                                                              else f"{k} {v:g}" for k, v in res.items()), flush=True)
        print(f"load average {os.getloadavg()}")
        for name, rows in results.items():
            med = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
            print(f"{name} (median of {len(rows)}): " + ", ".join(
                f"{k} {v * 1000:.1f} ms" for k, v in med.items() if k not in FLAGS))
        if "old" in results:
            for key in ("extra", "first") + (("start",) if not args.cold else ()):
                old_v = statistics.median(r[key] for r in results["old"])
                new_v = statistics.median(r[key] for r in results["new"])
                print(f"{key}: old {old_v * 1000:.1f} ms, new {new_v * 1000:.1f} ms, saved {1000 * (old_v - new_v):.1f} ms per worker")
    return 0


class _none:  # noqa: N801 - a context manager that gives None
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


if __name__ == "__main__":
    sys.exit(main())
