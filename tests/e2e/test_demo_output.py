"""What ``make demo`` prints, without running the whole demo (issue 20): the commands it shows
can be pasted into a shell as they are, and a long step shows a live line with its elapsed
time on a terminal and only its closing line when piped."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from examples.demo.demo import Demo
from tests.bus.site_helpers import REPO, wait_for, write_site


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_shown_command_pastes_into_a_shell_as_printed(tmp_path: Path) -> None:
    site = write_site(tmp_path / "site", "")
    doc = tmp_path / "change.json"
    doc.write_text('{"street": "1 Main St"}')
    out = io.StringIO()
    demo = Demo(tmp_path / "demo", 1, out_stream=out)
    demo.cli("channel", "put", "--site", str(site), "changes", str(doc),
             "--format", "acme.Address@1;application/json", show=True)
    (shown,) = [line for line in out.getvalue().splitlines() if line.startswith("$ ")]
    assert "'acme.Address@1;application/json'" in shown  # quoted: a shell would end the command at the ;
    env = {**os.environ, "PATH": os.pathsep.join([os.path.dirname(sys.executable), os.environ["PATH"]])}
    pasted = subprocess.run(["bash", "-c", shown[2:]], capture_output=True, text=True, cwd=REPO, env=env, timeout=120)
    assert pasted.returncode == 0 and pasted.stdout.strip() == "put 1 message(s) on changes", pasted.stderr
    got = subprocess.run([sys.executable, "-m", "coupler.bus.cli", "channel", "get", "--site", str(site), "changes",
                          "--max", "2", "--json"], capture_output=True, text=True, cwd=REPO, env=env, timeout=120)
    assert got.stdout.count('"acme.Address@1;application/json"') == 2, got.stdout + got.stderr


def test_a_long_step_shows_elapsed_time_on_a_terminal_and_progress_lines_when_piped(tmp_path: Path) -> None:
    piped = io.StringIO()
    demo = Demo(tmp_path, 1, out_stream=piped)
    demo.progress_seconds = 0.2
    with demo.activity("Spark ingests the extract", lambda: "12.0 MB"):
        # piped (a log, `make demo | tee`): said when it starts, then a plain line now and then
        wait_for(lambda: piped.getvalue().count("so far") >= 2, "two progress lines")
    lines = piped.getvalue().splitlines()
    assert lines[0] == "  Spark ingests the extract ..."
    assert all(re.fullmatch(r"  Spark ingests the extract: \d+ s so far, 12\.0 MB", line) for line in lines[1:-1]), lines
    assert re.fullmatch(r"  Spark ingests the extract: \d+\.\d s", lines[-1])  # no live line, no escapes
    assert "\x1b" not in piped.getvalue()

    terminal = Terminal()
    with Demo(tmp_path, 1, out_stream=terminal).activity("Spark ingests the extract", lambda: "12.0 MB"):
        # the live line is drawn by a ticker thread every 0.25 s: wait for it (a fixed 0.8 s may
        # pass before a loaded machine runs that thread)
        wait_for(lambda: "12.0 MB" in terminal.getvalue(), "the live line with the probe's value")
    shown = terminal.getvalue()
    assert "Spark ingests the extract" in shown and "12.0 MB" in shown and " s " in shown  # the live line, updated
    assert re.search(r"  Spark ingests the extract: \d+\.\d s$", shown.rstrip().splitlines()[-1])  # then closed


def test_the_extract_progress_counts_the_bytes_written_so_far(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """While the life system writes the nightly extract (under a hidden name, renamed at the
    end), the demo's progress line shows the megabytes written so far, not 0.0 MB."""
    from examples.legacy import life_batch_system

    demo = Demo(tmp_path, 1, out_stream=io.StringIO())
    demo.extract_tmp = tmp_path / "life" / "LIFE.MASTER.EXTRACT.dat"
    demo.extract_tmp.parent.mkdir(parents=True)
    seen: list[str] = []
    rename = os.replace

    def before_rename(src: object, dst: object) -> None:  # the extract is whole, not yet renamed
        seen.append(demo.extract_written())
        rename(src, dst)  # type: ignore[arg-type]

    monkeypatch.setattr(life_batch_system.os, "replace", before_rename)
    life_batch_system.write_extract(demo.extract_tmp, 2_000_000)
    assert seen == [f"{demo.extract_tmp.stat().st_size / 1e6:.1f} MB"]
