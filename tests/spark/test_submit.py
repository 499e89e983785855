"""docs/batch.md's cluster example ("Clusters and ``spark-submit``"), as written, on a Spark
standalone master and one worker started from pyspark's own jars (``spark-class
org.apache.spark.deploy.master.Master`` / ``...worker.Worker``), bound to 127.0.0.1: ``make
wheel pyfiles``, ``coupler batch translate --master spark://...`` (the executors' Python has
Coupler installed: the venv's) and ``spark-submit --py-files`` with the zip (the executors'
Python has Coupler's dependencies but not Coupler, which comes from the zip; a check shows
that the wheel would not do). The page's ``master:7077`` becomes the master's address and
``/shared`` a folder of each command; nothing else of the commands changes.

The build runs while the cluster starts and the first command runs, and the two commands'
applications run side by side (a worker of two cores, one each). Every JVM has
``LEAN_JVM_OPTIONS`` (``JDK_JAVA_OPTIONS``: the client JIT only); the ports are free ports (of
``COUPLER_TEST_PORTS``, ``LOW-HIGH``, when set: docs/testing.md), and the Python workers talk
to their JVM over Unix sockets. This replaced a ``local-cluster`` run of ``spark-submit`` with
the wheel, which passed only because its executors' Python had Coupler installed."""

from __future__ import annotations

import glob
import json
import os
import re
import signal
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from coupler.bus.batch.jobs import LEAN_JVM_OPTIONS
from tests.bus.site_helpers import wait_for
from tests.spark.cards_case import all_cards, write_cards

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
DOC = REPO / "docs" / "batch.md"

pytestmark = pytest.mark.slow


#: the ports free_ports() gave this process: never given twice (each is bound only later)
GIVEN: set[int] = set()


def free_ports(count: int) -> list[int]:
    """``count`` loopback ports nobody listens on: of ``COUPLER_TEST_PORTS`` (``LOW-HIGH``) when
    set, else any the kernel gives."""
    wanted = os.environ.get("COUPLER_TEST_PORTS")
    low, _, high = (wanted or "").partition("-")
    candidates = iter(range(int(low), int(high) + 1)) if wanted else None
    ports: list[int] = []
    while len(ports) < count:
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the JVM binds: a port in TIME_WAIT is free
            try:
                s.bind(("127.0.0.1", next(candidates) if candidates else 0))
            except OSError:
                continue
            except StopIteration:
                raise AssertionError(f"COUPLER_TEST_PORTS={wanted}: fewer than {count} free ports") from None
            port = s.getsockname()[1]
        if port not in GIVEN:
            GIVEN.add(port)
            ports.append(port)
    return ports


def cluster_doc_commands() -> list[str]:
    """The command lines of docs/batch.md's cluster block (continuations joined, comment lines dropped)."""
    text = DOC.read_text().split("## Clusters and `spark-submit`", 1)[1]
    block = re.search(r"```sh\n(.*?)```", text, re.S)
    assert block, "docs/batch.md: no block of commands under 'Clusters and spark-submit'"
    lines = block.group(1).replace("\\\n", " ").splitlines()
    return [" ".join(line.split()) for line in lines if line.strip() and not line.startswith("#")]


def master_state(ui_port: int) -> dict[str, Any]:
    with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=5) as response:
        return json.load(response)


@contextmanager
def standalone_cluster(folder: Path, env: dict[str, str], cores: int) -> Iterator[tuple[str, int]]:
    """A master and a worker of ``cores`` cores, as the ``spark-class`` of the venv's pyspark starts
    them: ``(master URL, master web UI port)`` once the worker is registered."""
    master_port, ui_port, worker_port, worker_ui_port = free_ports(4)
    spark_class = str(BIN / "spark-class")
    daemons = {
        "master": [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                   "--port", str(master_port), "--webui-port", str(ui_port)],
        "worker": [spark_class, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                   "--port", str(worker_port), "--webui-port", str(worker_ui_port), "--cores", str(cores),
                   "--memory", f"{cores}g", "--work-dir", str(folder / "work"), f"spark://127.0.0.1:{master_port}"],
    }
    procs: dict[str, subprocess.Popen[bytes]] = {}
    try:
        for name, argv in daemons.items():
            with open(folder / f"{name}.log", "wb") as log:
                procs[name] = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT,
                                               start_new_session=True)

        def registered() -> bool:
            for name, proc in procs.items():
                if proc.poll() is not None:
                    raise AssertionError(f"the {name} exited ({proc.returncode}): "
                                         f"{(folder / f'{name}.log').read_text()[-3000:]}")
            with suppress(OSError):
                return master_state(ui_port).get("aliveworkers") == 1
            return False

        wait_for(registered, "the worker registered with the master", timeout=120)
        yield f"spark://127.0.0.1:{master_port}", ui_port
    finally:
        for proc in procs.values():  # the worker first: it ends its executors
            with suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in reversed(procs.values()):
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def node_python(folder: Path) -> Path:
    """A cluster node's Python: the venv's packages (Coupler's dependencies) without Coupler (its
    editable install is a ``.pth`` file, which ``-S`` leaves unread)."""
    import sysconfig

    script = folder / "node-python"
    script.write_text('#!/bin/sh\nPYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}'
                      f'{sysconfig.get_paths()["purelib"]}" exec {sys.executable} -S "$@"\n')
    script.chmod(0o755)
    return script


def test_the_cluster_example_runs_as_written_on_a_standalone_master_and_worker(tmp_path: Path) -> None:
    make, pip, translate, submit = cluster_doc_commands()
    assert make.startswith("make wheel pyfiles") and pip.startswith("pip install ")
    said = re.search(r"Each prints the summary of a local run \(`([^`]+) in \.\.\.`;", " ".join(DOC.read_text().split()))
    assert said, "docs/batch.md: the cluster example's summary"

    # make wheel pyfiles, into dist/ of the test's folder, while the cluster starts and the first
    # command runs: that one needs no build (the venv, with Coupler installed, is the nodes' Python)
    build = subprocess.Popen(["make", "-s", "-C", str(REPO), "-o", ".venv/.installed", "wheel", "pyfiles",
                              f"DIST={tmp_path / 'dist'}"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_", "SPARK_", "PYTHONPATH", "JDK_JAVA"))}
    env.update(PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}", SPARK_LOCAL_IP="127.0.0.1",
               SPARK_LOCAL_DIRS=str(tmp_path / "local"), JDK_JAVA_OPTIONS=LEAN_JVM_OPTIONS)

    def started(command: str, name: str, master: str, **extra: str) -> subprocess.Popen[str]:
        """The page's command with its master and /shared (a folder of its own, with the cards)
        here, and a spark-defaults.conf of its own: its driver's and executor's ports."""
        assert command.count("spark://master:7077") == 1 and "/shared/" in command, command
        write_cards(tmp_path / name)
        here = command.replace("spark://master:7077", master).replace("/shared/", f"{tmp_path / name}/")
        conf = tmp_path / name / "conf"
        conf.mkdir()
        driver_port, driver_blocks, executor_blocks = free_ports(3)
        (conf / "spark-defaults.conf").write_text(
            f"spark.driver.host 127.0.0.1\nspark.driver.bindAddress 127.0.0.1\nspark.driver.port {driver_port}\n"
            f"spark.driver.blockManager.port {driver_blocks}\nspark.blockManager.port {executor_blocks}\n"
            "spark.port.maxRetries 0\nspark.python.unix.domain.socket.enabled true\nspark.cores.max 1\n")
        with open(tmp_path / f"{name}.out", "w") as out, open(tmp_path / f"{name}.err", "w") as err:
            return subprocess.Popen(["bash", "-euo", "pipefail", "-c", here], cwd=tmp_path, stdout=out, stderr=err,
                                    env={**env, "SPARK_CONF_DIR": str(conf), **extra}, text=True)

    def committed(proc: subprocess.Popen[str], name: str) -> None:
        """The command printed the page's summary (spark-submit passes the driver's standard error
        on to its standard output) and committed /shared/out/cards, the three cards."""
        proc.wait(timeout=300)
        said_out, said_err = ((tmp_path / f"{name}.{s}").read_text() for s in ("out", "err"))
        assert proc.returncode == 0, f"{name}: {said_err[-3000:]}"
        lines = [line for line in f"{said_out}\n{said_err}".splitlines() if re.match(r"\d+ input\(s\), ", line)]
        assert len(lines) == 1 and lines[0].startswith(said.group(1).replace("/shared/", f"{tmp_path / name}/") + " in "), (
            name, said_err[-3000:])
        out = tmp_path / name / "out" / "cards"
        table = pq.read_table(sorted(out.glob("part-*.parquet")))
        assert sorted(zip(table.column("CARD_NO").to_pylist(), table.column("CARD_LIMIT").to_pylist(), strict=True)) == all_cards()
        assert json.loads((out / "_SUCCESS").read_text())["records"] == 3

    jobs: list[subprocess.Popen[str]] = []
    try:
        # two cores, one for each command's application (spark.cores.max): they run side by side
        with standalone_cluster(tmp_path, env, cores=2) as (master, ui_port):
            jobs.append(started(translate, "installed", master))

            built = build.communicate(timeout=300)[0]
            assert build.returncode == 0, built
            (archive,) = (tmp_path / "dist").glob("*.zip")
            assert f"--py-files dist/{archive.name} " in submit, submit
            node = node_python(tmp_path)
            jobs.append(started(submit, "submitted", master, PYSPARK_PYTHON=str(node), PYSPARK_DRIVER_PYTHON=sys.executable))
            # meanwhile: `pip install` names the wheel built, and a node's Python without Coupler
            # imports it from the zip --py-files names, not from the wheel
            (wheel,) = (tmp_path / "dist").glob("*.whl")
            assert glob.glob(str(tmp_path / pip.split()[-1])) == [str(wheel)]
            for path, imports in ((None, False), (wheel, False), (archive, True)):
                probe = subprocess.run([str(node), "-c", "import coupler.bus.batch.jobs, coupler.translators.spark.reader"],
                                       env={**os.environ, "PYTHONPATH": str(path or "")}, cwd=tmp_path,
                                       capture_output=True, text=True, timeout=60)
                assert (probe.returncode == 0) == imports, (path, probe.stderr)
                assert imports or "No module named 'coupler'" in probe.stderr, (path, probe.stderr)

            committed(jobs[0], "installed")
            committed(jobs[1], "submitted")

            # both ran on the cluster: two finished applications, each with its executor on the worker
            apps = master_state(ui_port)["completedapps"]
            assert sorted((a["name"], a["state"]) for a in apps) == [("coupler-batch-translate", "FINISHED")] * 2, apps
            assert sorted(p.name for p in (tmp_path / "work").glob("app-*")) == sorted(a["id"] for a in apps)
    finally:
        for proc in (build, *jobs):
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
