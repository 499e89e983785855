"""``coupler init``: the new site's files, its template, and the generated configuration reference."""

from __future__ import annotations

import re
import stat
from pathlib import Path

import pytest

from coupler.bus.cli.main import main
from coupler.bus.config.doc import SITE_SCHEMA, TABLES, render_markdown, render_template, walk
from coupler.bus.config.loader import load_site, parse_site


def test_init_creates_a_site_with_the_embedded_store_and_no_adapters(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init", str(tmp_path / "plant-7")]) == 0
    site_file = tmp_path / "plant-7" / "site.toml"
    site = load_site(site_file)
    assert site.name == "plant-7"
    assert site.store.type == "sqlite" and site.store.synchronous == "FULL"
    assert site.adapters == [] and site.routes == []
    assert site.data_dir.is_dir() and stat.S_IMODE(site.data_dir.stat().st_mode) == 0o700
    assert "coupler daemon --site" in capsys.readouterr().out


def test_init_refuses_to_overwrite_a_site(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init", str(tmp_path)]) == 0
    (tmp_path / "site.toml").write_text("# mine\n")
    assert main(["init", str(tmp_path)]) == 1
    assert "already exists" in capsys.readouterr().err
    assert (tmp_path / "site.toml").read_text() == "# mine\n"
    assert main(["init", str(tmp_path), "--force"]) == 0


def test_a_data_directory_that_cannot_be_created_is_one_line_naming_the_key(tmp_path: Path) -> None:
    """``data_dir`` names a file: ``coupler daemon`` says which directory it could not create
    and where it is configured, in the words of every other command that opens the store."""
    import subprocess
    import sys

    from tests.bus.site_helpers import coupler_env

    (tmp_path / "taken").write_text("a file, not a directory\n")
    site = tmp_path / "site.toml"
    site.write_text('[site]\nname = "x"\ndata_dir = "taken"\n')
    run = subprocess.run([sys.executable, "-m", "coupler.bus.cli", "daemon", "--check", "--site", str(site)],
                         env=coupler_env(), capture_output=True, text=True, timeout=120)
    assert run.returncode == 1
    assert run.stderr == (f"coupler: error: {tmp_path / 'taken'}: cannot create the data directory: File exists"
                          f" (create it, or name another in [site] data_dir of {site})\n")


def test_template_has_a_commented_example_of_every_section() -> None:
    text = render_template("x")
    for section in SITE_SCHEMA.fields:
        header = f"[[{section.name}]]" if section.kind == TABLES else f"[{section.name}]"
        assert re.search(rf"^(# )?{re.escape(header)}$", text, re.M), header


def test_every_section_of_the_template_shows_its_keys() -> None:
    """No header stands alone (``# [tracing]`` with nothing under it tells a user nothing):
    every key of a section is shown, commented, with its default or an example."""
    text = render_template("x")
    for section in SITE_SCHEMA.fields:
        if section.kind == TABLES:
            continue
        keys = [f.name for f in section.fields if f.kind not in (TABLES,) and not f.fields]
        block = re.search(rf"^(# )?\[{section.name}\]\n((?:(?:# )?[a-z_]+ += .*\n)*)", text, re.M)
        assert block, section.name
        shown = re.findall(r"^(?:# )?([a-z_]+) += ", block.group(2), re.M)
        assert shown and set(keys) <= set(shown), (section.name, sorted(set(keys) - set(shown)))


def test_template_with_every_example_uncommented_is_a_valid_site(tmp_path: Path) -> None:
    lines = []
    for line in render_template("x").splitlines():
        if line.startswith("## "):
            continue
        lines.append(line[2:] if line.startswith("# ") else line)
    site = parse_site("\n".join(lines), tmp_path / "site.toml")
    assert [a.name for a in site.adapters] == ["orders-in"]
    assert [r.name for r in site.routes] == ["orders-by-region"]
    assert [c.name for c in site.channels] == ["orders"]


def test_configuration_reference_documents_every_key_and_is_up_to_date(repo_root: Path) -> None:
    doc = repo_root / "docs" / "configuration.md"
    assert doc.read_text() == render_markdown(), "regenerate: python -m coupler.bus.config.doc > docs/configuration.md"
    text = doc.read_text()
    for path, field in walk():
        if "." not in path:  # a section: its heading
            assert f"## `[{path}]`" in text or f"## `[[{path}]]`" in text, path
        elif field.fields or field.kind != "table":
            assert f"| `{path}` |" in text, path
