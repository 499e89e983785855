"""File drop outbound: atomic writes, file_exists policies, templates and the directory jail."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from coupler.adapters.common.errors import AdapterConfigError
from coupler.adapters.filedrop import FileDropAdapter
from coupler.bus.api import Command, CommandFault, Document
from coupler.canonical import Envelope, FormatIndicator

from ..filebus import Bus, adapter

FMT = FormatIndicator.parse("acme.Order@2;application/json")


def make(bus: Bus, out: Path, **options):
    a = adapter(FileDropAdapter, "out", {"directory": str(out), **options}, bus.context("out"), direction="outbound")
    a.start()
    return a


def env(body: bytes = b"{}", **props: str) -> Envelope:
    return Envelope(format=FMT, body=body, properties=dict(props))


def files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_template_over_headers_and_properties_with_chmod_and_done_file(bus: Bus, tmp_path: Path) -> None:
    a = make(bus, tmp_path / "out", file_name="{prop.region}/{format_name}-v{format_version}-{prop.id}.json",
             chmod="0640", done_file_suffix=".done")
    try:
        a.deliver(env(b'{"a":1}', region="eu", id="42"))
        target = tmp_path / "out" / "eu" / "acme.Order-v2-42.json"
        assert files(tmp_path / "out") == {"eu/acme.Order-v2-42.json": b'{"a":1}', "eu/acme.Order-v2-42.json.done": b""}
        assert stat.S_IMODE(target.stat().st_mode) == 0o640
    finally:
        a.stop()


def test_under_the_daemons_umask_chmod_also_opens_the_directories_it_creates(bus: Bus, tmp_path: Path) -> None:
    # the daemon runs with umask 077: a legacy program running as another user (in the
    # group) reads a 0640 file only if it may also enter the directories the adapter created
    old = os.umask(0o077)
    try:
        out = tmp_path / "out" / "batch"
        a = make(bus, out, file_name="{prop.region}/{message_id}.json", chmod="0640", create_directories=True)
        try:
            a.deliver(env(region="eu"))
        finally:
            a.stop()
        [written] = (out / "eu").iterdir()
        assert stat.S_IMODE(written.stat().st_mode) == 0o640
        created = {str(p.relative_to(tmp_path)): oct(stat.S_IMODE(p.stat().st_mode))
                   for p in (tmp_path / "out", out, out / "eu")}
        assert created == {"out": "0o750", "out/batch": "0o750", "out/batch/eu": "0o750"}
        # without chmod the files and directories stay the daemon's own
        private = tmp_path / "private"
        b = make(bus, private, file_name="{prop.region}/{message_id}.json", create_directories=True)
        try:
            b.deliver(env(region="eu"))
        finally:
            b.stop()
        assert oct(stat.S_IMODE((private / "eu").stat().st_mode)) == "0o700"
    finally:
        os.umask(old)


@pytest.mark.parametrize("region", ["../../etc", "..", "/etc", "a/../../b", "x\\..\\y"])
def test_path_traversal_is_refused_as_invalid_and_reported(bus: Bus, tmp_path: Path, region: str, caplog) -> None:
    out = tmp_path / "out"
    a = make(bus, out, file_name="{prop.region}/{message_id}.json")
    try:
        with pytest.raises(CommandFault) as info:
            a.deliver(env(region=region))
        assert info.value.code == "invalid" and "path traversal refused" in str(info.value)
        written = {k for k in files(tmp_path) if not k.startswith("site/")}
        assert written == set()  # nothing written anywhere, even the root stays empty
        assert any("refused" in r.getMessage() for r in caplog.records)
        assert a.describe()["outbound"]["refused"] == 1
    finally:
        a.stop()


def test_symbolic_link_out_of_the_root_is_refused(bus: Bus, tmp_path: Path) -> None:
    out, outside = tmp_path / "out", tmp_path / "outside"
    out.mkdir()
    outside.mkdir()
    (out / "link").symlink_to(outside)
    a = make(bus, out, file_name="link/{message_id}")
    try:
        with pytest.raises(CommandFault, match="path traversal"):
            a.deliver(env())
        assert list(outside.iterdir()) == []
    finally:
        a.stop()


def test_file_exists_policies(bus: Bus, tmp_path: Path) -> None:
    results = {}
    for policy in ("override", "append", "ignore", "unique", "fail"):
        out = tmp_path / policy
        a = make(bus, out, file_name="same.txt", file_exists=policy)
        try:
            a.deliver(env(b"first"))
            if policy == "fail":
                with pytest.raises(CommandFault, match="already exists"):
                    a.deliver(env(b"second"))
            else:
                a.deliver(env(b"second"))
            results[policy] = files(out)
        finally:
            a.stop()
    assert results == {
        "override": {"same.txt": b"second"},
        "append": {"same.txt": b"firstsecond"},
        "ignore": {"same.txt": b"first"},
        "unique": {"same.txt": b"first", "same-1.txt": b"second"},
        "fail": {"same.txt": b"first"},
    }


def test_redelivered_message_is_written_once(bus: Bus, tmp_path: Path) -> None:
    a = make(bus, tmp_path / "out", file_name="lines.jsonl", file_exists="append", line_terminator="\n")
    try:
        m1, m2 = env(b'{"n":1}'), env(b'{"n":2}')
        for m in (m1, m2, m1):
            a.deliver(m)
        assert files(tmp_path / "out") == {"lines.jsonl": b'{"n":1}\n{"n":2}\n'}
    finally:
        a.stop()


def test_no_temporary_file_is_left_and_partial_writes_are_invisible(bus: Bus, tmp_path: Path) -> None:
    out = tmp_path / "out"
    a = make(bus, out, file_name="{message_id}.bin")

    class Boom(Exception):
        pass

    def chunks():
        yield b"partial"
        raise Boom

    try:
        from coupler.adapters.common.writer import write_file

        with pytest.raises(Boom):
            write_file(a.writer.fs, "x.bin", chunks())
        assert files(out) == {}
    finally:
        a.stop()


def test_send_command_writes_and_replies_with_the_name(bus: Bus, tmp_path: Path) -> None:
    a = make(bus, tmp_path / "out", file_name="{message_id}.json")
    try:
        cmd_env = Envelope(format="coupler.commands.Send@1", body=b"")
        reply = a.handle(Command("send", "out", cmd_env, document=Document(FMT, b'{"x":1}')))
        assert reply.details["status"] == "delivered"
        assert files(tmp_path / "out") == {f"{cmd_env.message_id}.json": b'{"x":1}'}
        assert a.handle(Command("ping", "out", cmd_env, payload="hi")).details["status"] == "ok"
        with pytest.raises(CommandFault) as info:
            a.handle(Command("fetch", "out", cmd_env))
        assert info.value.code == "unsupported"
    finally:
        a.stop()


def test_bad_template_is_a_configuration_error(bus: Bus, tmp_path: Path) -> None:
    with pytest.raises(AdapterConfigError, match=r"options\.file_name.*\{nope\}"):
        FileDropAdapter("out", {"directory": str(tmp_path), "file_name": "{nope}.txt"}, bus.context("out"))


def test_claim_checked_body_is_streamed_to_the_file(bus: Bus, tmp_path: Path) -> None:
    big = tmp_path / "claims" / "0123abcd"  # a claim check as the bus stores one
    big.parent.mkdir()
    big.write_bytes(os.urandom(3_000_000))
    a = make(bus, tmp_path / "out", file_name="big.bin")
    try:
        a.deliver(env(b"", **{"coupler.claim-file": str(big)}))
        assert (tmp_path / "out" / "big.bin").read_bytes() == big.read_bytes()
    finally:
        a.stop()


def test_a_claim_property_not_naming_a_claimed_file_is_refused_as_invalid(bus: Bus, tmp_path: Path) -> None:
    """A ``coupler.claim-file`` property a partner forged never makes the adapter write a file
    of its choosing: only a file in a ``claims`` directory is a claim check."""
    secret = tmp_path / "etc" / "shadow"
    secret.parent.mkdir()
    secret.write_bytes(b"root:$6$secret")
    a = make(bus, tmp_path / "out")
    try:
        with pytest.raises(CommandFault) as info:
            a.deliver(env(b"", **{"coupler.claim-file": str(secret)}))
        assert info.value.code == "invalid" and "not a claimed file" in str(info.value)
        assert files(tmp_path / "out") == {}
    finally:
        a.stop()
