"""What users drop into an inbox besides plain files (issue 29 item 8): each is either taken
whole, exactly once, or left alone with a warning; none blocks the poller, leads out of the
inbox, fails a file for a writer's fault or loses data."""

from __future__ import annotations

import logging
import os
import shutil
import threading
from pathlib import Path

import pytest

from coupler.adapters.common.errors import FileChanged, PathTraversalError
from coupler.adapters.common.inbound import PollResult

from ..filebus import Bus
from .test_inbound import make, started


def listed(a, name: str):  # type: ignore[no-untyped-def]
    """The listing of ``name`` as the poll sees it."""
    return next(i for i in a.pipeline.fs.scan("", recursive=False, skip=frozenset()) if i.path == name)


def poll_within(a, seconds: float = 60.0) -> PollResult:  # type: ignore[no-untyped-def]
    """A poll that must return (a FIFO opened for reading would block it for ever)."""
    out: list[PollResult] = []
    t = threading.Thread(target=lambda: out.append(a.pipeline.poll()), daemon=True)
    t.start()
    t.join(seconds)
    assert out, "the poll blocked"
    return out[0]


def test_a_fifo_is_left_alone_with_a_warning_and_never_blocks_the_poll(bus: Bus, tmp_path: Path, caplog) -> None:
    drop = tmp_path / "drop"
    drop.mkdir()
    os.mkfifo(drop / "pipe.xml")
    (drop / "a.xml").write_bytes(b"<a/>")
    a = started(make(bus, drop))
    try:
        with caplog.at_level(logging.WARNING):
            assert poll_within(a).done == 1
            assert poll_within(a).done == 0
        assert [m.body for m in bus.drain()] == [b"<a/>"]
        assert caplog.text.count("'pipe.xml' is a FIFO: left alone") == 1  # once, not every poll
        # a FIFO put in the place of a listed file is refused when it is opened, at once
        (drop / "b.xml").write_bytes(b"<b/>")
        info = listed(a, "b.xml")
        (drop / "b.xml").unlink()
        os.mkfifo(drop / "b.xml")
        with pytest.raises(FileChanged, match="no longer a regular file|removed|rewritten|grew|shrank"):
            a.pipeline._take(info, PollResult())
        assert bus.drain() == [] and not (drop / "error").exists()
    finally:
        a.stop()


def test_a_symbolic_link_out_of_the_inbox_is_never_read(bus: Bus, tmp_path: Path, caplog) -> None:
    drop = tmp_path / "drop"
    drop.mkdir()
    secret = tmp_path / "secret.txt"
    secret.write_bytes(b"the site's secrets")
    (drop / "innocent.xml").symlink_to(secret)
    (drop / "linkdir").symlink_to(tmp_path, target_is_directory=True)
    a = started(make(bus, drop, recursive=True))
    try:
        with caplog.at_level(logging.WARNING):
            assert poll_within(a).taken == 0
        assert bus.drain() == []
        assert "'innocent.xml' is a symbolic link: left alone" in caplog.text
        assert secret.read_bytes() == b"the site's secrets" and (drop / "innocent.xml").is_symlink()
        # replaced by a link after it was listed: refused by the jail (out) or at open (O_NOFOLLOW)
        (drop / "inside.xml").write_bytes(b"<inside/>")
        for target in (secret, drop / "inside.xml"):
            (drop / "late.xml").write_bytes(b"<late/>")
            info = listed(a, "late.xml")
            (drop / "late.xml").unlink()
            (drop / "late.xml").symlink_to(target)
            with pytest.raises((FileChanged, PathTraversalError)):
                a.pipeline._take(info, PollResult())
            (drop / "late.xml").unlink()
        assert bus.drain() == []
    finally:
        a.stop()


def test_a_hard_link_is_taken_once_and_the_other_name_kept(bus: Bus, tmp_path: Path) -> None:
    drop = tmp_path / "drop"
    drop.mkdir()
    original = tmp_path / "outside.xml"
    original.write_bytes(b"<linked/>")
    os.link(original, drop / "linked.xml")
    a = started(make(bus, drop))
    try:
        assert poll_within(a).done == 1
        assert poll_within(a).done == 0
        assert [m.body for m in bus.drain()] == [b"<linked/>"]
        assert original.read_bytes() == b"<linked/>"  # the other name of the file is untouched
        assert (drop / "archive" / "linked.xml").samefile(original)
    finally:
        a.stop()


def test_a_directory_with_a_files_name_is_skipped(bus: Bus, tmp_path: Path) -> None:
    drop = tmp_path / "drop"
    (drop / "order.xml").mkdir(parents=True)
    (drop / "order.xml" / "inner.xml").write_bytes(b"<inner/>")
    (drop / "real.xml").write_bytes(b"<real/>")
    a = started(make(bus, drop))
    try:
        result = poll_within(a)
        assert (result.done, result.errors, result.failed) == (1, 0, 0)
        assert [m.body for m in bus.drain()] == [b"<real/>"]
        assert (drop / "order.xml" / "inner.xml").exists()
    finally:
        a.stop()


def test_names_with_a_newline_and_of_255_bytes(bus: Bus, tmp_path: Path) -> None:
    drop = tmp_path / "drop"
    drop.mkdir()
    newline = "two\nlines.xml"
    long_ok = "é" * 100 + "o" * 51 + ".xml"  # 255 bytes in UTF-8
    long_bad = "b" * 251 + ".txt"
    assert len(long_ok.encode()) == 255 == len(long_bad.encode())
    (drop / newline).write_bytes(b"<n/>")
    (drop / long_ok).write_bytes(b"<long/>")
    (drop / long_bad).write_bytes(b"\xff\xfe not utf-8\n")
    a = started(make(bus, drop, payload="lines", encoding="utf-8"))
    try:
        result = poll_within(a)
        assert (result.done, result.failed, result.errors) == (2, 1, 0)
        got = {m.properties["file.name"]: m.body for m in bus.drain()}
        assert got == {newline: b"<n/>", long_ok: b"<long/>"}
        assert sorted(p.name for p in (drop / "archive").iterdir()) == sorted([newline, long_ok])
        [reason] = [p.name for p in (drop / "error").iterdir() if p.name != long_bad]
        assert (drop / "error" / long_bad).exists() and reason.endswith(".reason") and len(reason.encode()) <= 255
        assert "not utf-8" in (drop / "error" / reason).read_text()
        assert poll_within(a).taken == 0
    finally:
        a.stop()


def test_a_file_growing_or_truncated_while_read_is_never_failed_nor_half_taken(bus: Bus, tmp_path: Path) -> None:
    drop = tmp_path / "drop"
    drop.mkdir()
    a = started(make(bus, drop, payload="fixed", record_length=4))
    try:
        # grows between its listing and its reading: nothing published, taken whole once stable
        (drop / "g.dat").write_bytes(b"AAAABBBB")
        info = listed(a, "g.dat")
        with open(drop / "g.dat", "ab") as f:
            f.write(b"CCCC")
        with pytest.raises(FileChanged, match="grew"):
            a.pipeline._take(info, PollResult())
        assert bus.drain() == [] and (drop / "g.dat").exists()
        # truncated in the middle of a record while read: not sent to the error directory
        (drop / "t.dat").write_bytes(b"XXXXYYYY")
        info_t = listed(a, "t.dat")
        os.truncate(drop / "t.dat", 6)
        with pytest.raises(FileChanged, match="shrank"):
            a.pipeline._take(info_t, PollResult())
        assert not (drop / "error").exists()
        # a writer appending while the records are read: the file is not moved away half-read
        (drop / "w.dat").write_bytes(b"1111")
        info_w = listed(a, "w.dat")
        split = a.pipeline.splitter.split

        def appending(stream, source):  # type: ignore[no-untyped-def]
            for n, record in enumerate(split(stream, source)):
                yield record
                if n == 0:
                    with open(drop / "w.dat", "ab") as w:
                        w.write(b"2222")

        a.pipeline.splitter.split = appending
        with pytest.raises(FileChanged):
            a.pipeline._take(info_w, PollResult())
        a.pipeline.splitter.split = split
        assert (drop / "w.dat").read_bytes() == b"11112222"
        bus.drain()
        os.truncate(drop / "t.dat", 4)  # the writer is done: a whole record
        result = poll_within(a)
        assert (result.done, result.failed) == (3, 0)
        got = sorted((m.properties["file.name"], m.body) for m in bus.drain())
        assert got == [("g.dat", b"AAAA"), ("g.dat", b"BBBB"), ("g.dat", b"CCCC"), ("t.dat", b"XXXX"),
                       ("w.dat", b"1111"), ("w.dat", b"2222")]
    finally:
        a.stop()


def test_a_file_removed_between_listing_and_reading(bus: Bus, tmp_path: Path) -> None:
    drop = tmp_path / "drop"
    drop.mkdir()
    (drop / "gone.xml").write_bytes(b"<gone/>")
    (drop / "stays.xml").write_bytes(b"<stays/>")
    a = started(make(bus, drop))
    try:
        info = listed(a, "gone.xml")
        (drop / "gone.xml").unlink()
        with pytest.raises(FileChanged, match="removed"):
            a.pipeline._take(info, PollResult())
        result = poll_within(a)
        assert (result.done, result.failed, result.errors) == (1, 0, 0)
        assert [m.body for m in bus.drain()] == [b"<stays/>"]
        assert not (drop / "error").exists()
    finally:
        a.stop()


@pytest.mark.parametrize("replacement", ["a file", "nothing", "a link out", "a link in"])
def test_a_sub_directory_replaced_between_listing_and_descent_is_skipped(
        bus: Bus, tmp_path: Path, replacement: str, caplog) -> None:
    """``recursive = true``: a sub-directory listed as one and then, before the scan descends
    into it, replaced by a file (NotADirectoryError failed the whole poll), removed, or
    replaced by a symbolic link (out of the inbox: PathTraversalError failed the poll; into
    it: its files were listed under a second name) is the listing race a file removed
    between listing and reading is: skipped, no error, the other files taken."""
    drop = tmp_path / "drop"
    (drop / "sub").mkdir(parents=True)
    (drop / "sub" / "inside.xml").write_bytes(b"<inside/>")
    (drop / "other").mkdir()
    (drop / "other" / "deep.xml").write_bytes(b"<deep/>")
    (drop / "top.xml").write_bytes(b"<top/>")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.xml").write_bytes(b"<secret/>")
    a = started(make(bus, drop, recursive=True, after="keep"))
    fs = a.pipeline.fs
    path = fs.path
    replaced: list[str] = []

    def replace_sub(rel: str) -> Path:  # the scan's step from listing "sub" to descending into it
        if rel == "sub" and not replaced:
            replaced.append(rel)
            shutil.rmtree(drop / "sub")
            if replacement == "a file":
                (drop / "sub").write_bytes(b"<now a file/>")
            elif replacement == "a link out":
                os.symlink(outside, drop / "sub")
            elif replacement == "a link in":
                os.symlink("other", drop / "sub")
        return path(rel)

    fs.path = replace_sub
    caplog.set_level(logging.WARNING)
    try:
        result = a.pipeline.poll()
        assert replaced == ["sub"]
        assert (result.errors, result.failed) == (0, 0), result
        assert sorted(m.body for m in bus.drain()) == [b"<deep/>", b"<top/>"]
        assert [r.getMessage() for r in caplog.records if "could not be taken" in r.getMessage()
                or "Traceback" in r.getMessage()] == []
    finally:
        a.stop()


def test_twenty_thousand_small_files_at_once(bus: Bus, tmp_path: Path) -> None:
    """Each poll lists all 20,000, takes its share (max_files_per_poll) in name order, each once.
    (Taking all 20,000 here takes minutes: each file costs four durable seen-state writes.)"""
    drop = tmp_path / "drop"
    drop.mkdir()
    n, share = 20_000, 200
    for i in range(n):
        (drop / f"f{i:05d}.txt").write_bytes(b"%d" % i)
    a = started(make(bus, drop, max_files_per_poll=share, after="delete", fsync=False))
    try:
        for poll in range(2):
            result = poll_within(a, 300)
            assert (result.listed, result.done, result.errors, result.failed) == (n - poll * share, share, 0, 0)
        bodies = [m.body for m in bus.drain()]
        assert bodies == [b"%d" % i for i in range(2 * share)]
        left = sorted(p.name for p in drop.iterdir())
        assert len(left) == n - 2 * share and left[0] == f"f{2 * share:05d}.txt"
    finally:
        a.stop()


def test_a_sub_directory_the_daemon_may_not_list_is_reported_once_and_the_rest_is_taken(tmp_path: Path) -> None:
    """``recursive = true`` and one sub-directory the daemon's user may not list: every poll
    failed with "[Errno 13] Permission denied" and no file of the inbox was taken. Now it is
    reported once, in one line, and the other files are taken. A file it may not read (a
    WARNING "could not be taken (will retry)" at every poll) is reported once too. The poll
    runs in a child process as ``nobody`` (root lists and reads everything)."""
    import json
    import pwd
    import shutil
    import tempfile

    if os.geteuid() != 0:
        pytest.skip("needs root to run the poll as another user")
    nobody = pwd.getpwnam("nobody")
    top = Path(tempfile.mkdtemp(prefix="coupler-drop-perm-"))  # outside pytest's 0700 temp root
    try:
        top.chmod(0o755)
        drop = top / "drop"
        (drop / "locked").mkdir(parents=True)
        (drop / "ok.xml").write_bytes(b"<ok/>")
        (drop / "locked" / "inside.xml").write_bytes(b"<inside/>")
        for path in (top, drop, drop / "ok.xml"):
            os.chown(path, nobody.pw_uid, nobody.pw_gid)
        (drop / "locked").chmod(0o700)  # root's
        (drop / "secret.xml").write_bytes(b"<secret/>")
        (drop / "secret.xml").chmod(0o600)  # root's
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: the poll as nobody, what it did as JSON on the pipe
            code = 1
            try:
                os.close(read)
                os.setgid(nobody.pw_gid)
                os.setuid(nobody.pw_uid)
                lines: list[str] = []

                class Keep(logging.Handler):
                    def emit(self, record: logging.LogRecord) -> None:
                        if record.levelno >= logging.WARNING:
                            lines.append(record.getMessage())

                logging.getLogger("coupler").addHandler(Keep())
                bus = Bus(top / "site")
                a = started(make(bus, drop, recursive=True, after="keep"))
                polls = [a.pipeline.poll().to_json() for _ in range(2)]
                bodies = [m.body.decode() for m in bus.drain()]
                a.stop()
                os.write(write, json.dumps({"polls": polls, "bodies": bodies, "warnings": lines}).encode())
                code = 0
            except BaseException as exc:  # noqa: BLE001 - reported to the parent
                os.write(write, json.dumps({"error": f"{type(exc).__name__}: {exc}"}).encode())
            finally:
                os._exit(code)
        os.close(write)
        import select
        import signal

        if not select.select([read], [], [], 120)[0]:  # a lock another thread held at the fork
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(read)
            pytest.fail("the forked poll gave no answer within 120 s")
        with os.fdopen(read, "rb") as pipe:
            out = json.loads(pipe.read() or b"{}")
        os.waitpid(pid, 0)
        assert "error" not in out, out
        assert [(p["done"], p["errors"]) for p in out["polls"]] == [(1, 1), (0, 0)], out
        assert out["bodies"] == ["<ok/>"]
        [line] = [w for w in out["warnings"] if "cannot list" in w]
        assert line == (f"drop: cannot list {drop}/locked: Permission denied: its files are left alone "
                        "(give nobody read and search permission on it)"), line
        [unreadable] = [w for w in out["warnings"] if "secret.xml" in w]
        assert unreadable == (f"drop: cannot read {drop}/secret.xml: Permission denied: taken once it may be "
                              "read, reported again if it changes (give nobody read permission on it)"), unreadable
    finally:
        shutil.rmtree(top, ignore_errors=True)
