"""``coupler channel put|get|purge`` with and without a running daemon."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from coupler.bus.cli.main import main
from tests.bus.site_helpers import running_daemon, write_site


def run(capsys: pytest.CaptureFixture[str], *argv: str, stdin: bytes | None = None) -> tuple[int, str, str]:
    if stdin is not None:
        sys.stdin = io.TextIOWrapper(io.BytesIO(stdin))
    try:
        rc = main(list(argv))
    finally:
        sys.stdin = sys.__stdin__
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize("with_daemon", [False, True], ids=["store", "daemon"])
def test_put_get_purge(tmp_path: Path, capsys: pytest.CaptureFixture[str], with_daemon: bool) -> None:
    site = str(write_site(tmp_path, ""))
    (tmp_path / "a.txt").write_bytes(b"first file")
    (tmp_path / "b.bin").write_bytes(b"\x00\xffbinary")
    ctx = running_daemon(Path(site)) if with_daemon else None
    if ctx:
        ctx.__enter__()
    try:
        rc, out, _ = run(capsys, "channel", "put", "--site", site, "q", str(tmp_path / "a.txt"), str(tmp_path / "b.bin"),
                         "--format", "acme.Note@1;text/plain", "-p", "source=test", "--unregistered")
        assert rc == 0 and out.strip() == "put 2 message(s) on q"
        rc, out, _ = run(capsys, "channel", "put", "--site", site, "q", "--lines", "--json", stdin=b"l1\n\nl2\r\nl3")
        assert rc == 0 and len(json.loads(out)["message_ids"]) == 3
        rc, out, _ = run(capsys, "channel", "get", "--site", site, "q", "--peek", "--max", "1")
        assert out == "first file\n"
        rc, out, _ = run(capsys, "channel", "get", "--site", site, "q", "--peek", "--max", "10", "--json")
        assert [json.loads(line).get("body") for line in out.splitlines()] == ["first file", None, "l1", "l2", "l3"]
        rc, out, _ = run(capsys, "channel", "get", "--site", site, "q", "--max", "2", "--json")
        first, second = (json.loads(line) for line in out.splitlines())
        assert first["body"] == "first file" and first["format"] == "acme.Note@1;text/plain"
        assert first["properties"] == {"source": "test"} and first["origin"] == "cli"
        assert second["body_base64"] == "AP9iaW5hcnk="
        rc, out, _ = run(capsys, "channel", "get", "--site", site, "q", "--max", "1")
        assert out == "l1\n"
        rc, out, _ = run(capsys, "channel", "purge", "--site", site, "q", "--json")
        assert json.loads(out) == {"channel": "q", "purged": 2}
        rc, out, err = run(capsys, "channel", "get", "--site", site, "q", "--wait", "0.2")
        assert rc == 0 and out == "" and "no message on q" in err
    finally:
        if ctx:
            ctx.__exit__(None, None, None)


def test_bad_format_and_bad_site_are_one_line_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    site = str(write_site(tmp_path, ""))
    rc, _, err = run(capsys, "channel", "put", "--site", site, "q", "--format", "nope", "-", stdin=b"x")
    assert rc == 1 and "malformed format indicator 'nope'" in err and len(err.splitlines()) == 1
    # a well-formed indicator of a schema nobody registered is refused, naming what is known
    rc, out, err = run(capsys, "channel", "put", "--site", site, "q", "--format", "acme.Nope@1", "-", stdin=b"x")
    assert rc == 2 and out == "" and len(err.splitlines()) == 1
    assert "no schema named 'acme.Nope'" in err and "acme.Address" in err and "--unregistered" in err
    rc, _, err = run(capsys, "channel", "put", "--site", site, "q", "--format", "acme.Address@9", "-", stdin=b"x")
    assert rc == 2 and "no version 9 of acme.Address" in err
    rc, out, _ = run(capsys, "channel", "put", "--site", site, "q", "--format", "acme.Nope@1", "--unregistered", "-",
                     stdin=b"x")
    assert rc == 0 and out.strip() == "put 1 message(s) on q"
    bad = write_site(tmp_path / "bad", '[store]\nsynchronous = "SOMETIMES"\n')
    rc, _, err = run(capsys, "channel", "get", "--site", str(bad), "q")
    assert rc == 1 and "store.synchronous: 'SOMETIMES' is not one of FULL, NORMAL" in err
