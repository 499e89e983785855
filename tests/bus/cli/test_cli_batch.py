"""``coupler batch``: what can be checked without Spark is checked before Spark starts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.bus.site_helpers import REPO

COPYBOOK = REPO / "examples" / "legacy" / "copybooks" / "life-master.cpy"


def batch(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``coupler batch translate`` with no Java on the PATH: had Spark been started, the
    command would fail with Java's error, not with the one asserted."""
    env = {**os.environ, "PATH": os.path.dirname(sys.executable), "JAVA_HOME": str(tmp_path / "no-java")}
    return subprocess.run([sys.executable, "-m", "coupler.bus.cli", "batch", "translate", *args],
                          capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)


@pytest.mark.parametrize(("args", "message"), [
    (["-o", "bogus=1"], "unknown option 'bogus'"),
    (["-o", "encoding=klingon"], "encoding"),
    (["--to", "avro:acme.Nope@1"], "no schema named 'acme.Nope'"),
])
def test_bad_options_are_refused_before_spark_starts(tmp_path: Path, args: list[str], message: str) -> None:
    data = tmp_path / "in.dat"
    data.write_bytes(b"x" * 1000)
    to = [] if "--to" in args else ["--to", "parquet"]
    done = batch(tmp_path, "--from", f"copybook:{COPYBOOK}", *to, "--output", str(tmp_path / "out"), str(data), *args)
    assert done.returncode == 1
    assert message in done.stderr and done.stderr.startswith("coupler: error:"), done.stderr
    assert "JAVA" not in done.stderr.upper() and "Traceback" not in done.stderr


def test_a_missing_input_is_refused_before_spark_starts(tmp_path: Path) -> None:
    done = batch(tmp_path, "--from", f"copybook:{COPYBOOK}", "--to", "parquet", "--output", str(tmp_path / "out"),
                 str(tmp_path / "nope.dat"))
    assert done.returncode == 1 and "nope.dat does not exist" in done.stderr, done.stderr
