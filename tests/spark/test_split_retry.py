"""A split job whose task fails once: Spark runs the task again, and the splits the failed
attempt had claimed are run again by the driver; every record is written once.

Its own Spark session in a subprocess (``local[2,3]``: a failed task is tried up to three
times; the test session's ``local[2]`` fails the job at the first failure)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.spark.test_xml_splits import XSD, _orders_file

SCRIPT = """
import json, logging, os, sys
from pathlib import Path
from coupler.bus.batch.jobs import spark_session
from coupler.translators.spark.commit import OutputCommitter
from coupler.translators.spark.direct import run_split_job
from coupler.translators.spark.xml_splits import XmlSplitTask, plan_xml_splits, record_avro_schema

xsd, data, out, marker = sys.argv[1:5]


class FailsOnce(XmlSplitTask):
    # the first attempt at split 3 stages its file, then fails (as a worker dying at the
    # worst moment would); the results of the other splits it ran are lost with it
    def __call__(self, index, split):
        message = super().__call__(index, split)
        if index == 3:
            try:
                os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:
                return message
            raise RuntimeError("the first attempt at split 3 fails")
        return message


warnings = []
logging.getLogger("coupler.translators.spark.direct").addHandler(
    type("H", (logging.Handler,), {"emit": lambda self, r: warnings.append(r.getMessage())})())
spark = spark_session("local[2,3]", app_name="split-retry", lean_jvm=True)
splits = plan_xml_splits([data], "order", split_bytes=20_000, slots=2)
committer = OutputCommitter(out, "overwrite", "avro")
committer.check_target()
schema = record_avro_schema(xsd, "order", "orders/order")
manifest = run_split_job(spark, splits, FailsOnce(xsd, "order", committer, "avro", schema, None), committer)
spark.stop()
print(json.dumps({"records": manifest["records"], "splits": len(splits), "tasks": manifest["timing"]["tasks"],
                  "files": manifest["files"], "warnings": warnings}))
"""


def test_a_task_that_fails_once_is_retried_and_its_claimed_splits_run_again(tmp_path: Path) -> None:
    import fastavro

    from coupler.translators.spark.xml_splits import plan_xml_splits
    from tests.spark.test_xml_splits import _decoded

    data = _orders_file(tmp_path / "orders.xml", 300)
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-c", SCRIPT, XSD, str(data), str(out), str(tmp_path / "failed-once")],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert (tmp_path / "failed-once").exists()  # the failure happened
    assert result["records"] == 300 and result["files"] == result["splits"] > 4
    # two task slots, then a second stage of one task per split the failed attempt claimed
    assert result["tasks"] > 2 and any("running them again" in w for w in result["warnings"])
    ids = []
    for part in sorted(out.glob("part-*.avro")):
        with open(part, "rb") as fh:
            ids += [r["id"] for r in fastavro.reader(fh)]
    expected = [r["id"] for r in _decoded(plan_xml_splits([str(data)], "order", split_bytes=20_000, slots=2))]
    assert ids == expected and len(set(ids)) == 300
    assert not list(out.glob("*.run-*")) and not (out / "claims").exists()
