"""The worked example of docs/plugins.md ("Adding a transport") runs as it is written: its
plugin opens the site that names it, and its contract test passes."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from pathlib import Path

from coupler.bus.config.loader import load_site
from coupler.bus.plugins.manager import plugin_manager
from coupler.bus.testing import contract
from coupler.bus.transport.factory import open_transport
from coupler.canonical import Envelope

ROOT = Path(__file__).resolve().parents[3]


def _blocks() -> dict[str, str]:
    """The python blocks of the section, by the file name on their first line."""
    text = (ROOT / "docs" / "plugins.md").read_text()
    section = text.split("## Adding a transport", 1)[1].split("\n## ", 1)[0]
    return {re.match(r"# (\S+)", b).group(1): b for b in re.findall(r"```python\n(.*?)```", section, re.S)}


def test_the_worked_example_registers_opens_and_passes_the_contract(tmp_path: Path, monkeypatch) -> None:
    blocks = _blocks()
    assert set(blocks) == {"coupler_scratch.py", "test_scratch.py"}
    for name, code in blocks.items():
        (tmp_path / name).write_text(code)
    monkeypatch.syspath_prepend(str(tmp_path))
    plugin = importlib.import_module("coupler_scratch")
    site_file = tmp_path / "site.toml"
    site_file.write_text('[store]\ntype = "scratch"\n\n[store.scratch]\nname = "shared"\n')
    pm = plugin_manager(extra=(plugin,))
    first, second = open_transport(load_site(site_file, pm=pm), pm), open_transport(load_site(site_file, pm=pm), pm)
    first.send("notes", Envelope(format="test.Note@1", body=b"hi"))
    assert [d.envelope.body for d in second.receive("notes", "c")] == [b"hi"]  # one store, by name
    site_file.write_text('[store]\ntype = "scratch"\n\n[store.scratch]\nnmae = "x"\n')
    try:
        load_site(site_file, pm=pm)
    except Exception as exc:  # noqa: BLE001 - the loader's one-line error is what the user sees
        assert "site.toml:5: store.scratch.nmae: unknown key" in str(exc)
    else:
        raise AssertionError("a misspelled [store.scratch] key was accepted")
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path / "test_scratch.py")],
        cwd=tmp_path, capture_output=True, text=True, env={"PYTHONPATH": f"{tmp_path}:{ROOT}", "PATH": "/usr/bin:/bin"},
        timeout=600,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    every = [name for name in dir(contract) if name.startswith("test_")]
    assert re.search(rf"\b{len(every)} passed\b", run.stdout), run.stdout[-500:]
