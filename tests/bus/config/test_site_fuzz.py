"""Site files under random edits: the demo's ``site.toml`` (every kind of adapter, routes with
steps, schedules) with lines dropped, repeated and swapped, values replaced by values of other
types and sizes, bytes flipped. Loading one, checked against the installed plugins as the
daemon does, either gives a site or raises :class:`CouplerError` whose message names what is
wrong: nothing else escapes (which the CLI would show as an internal error). Bounded by time;
the seed is printed and ``COUPLER_FUZZ_SEED=N`` replays it."""

from __future__ import annotations

import random
import re
import string
import time
from pathlib import Path

from coupler.bus.config.loader import load_site
from coupler.bus.plugins.manager import plugin_manager
from coupler.canonical.errors import CouplerError
from tests.bus.site_helpers import REPO
from tests.fuzzing import BUDGET, SEED, bounded

#: the demo's site as ``make demo`` renders it (its ``${...}`` filled in)
TEMPLATE = string.Template((REPO / "examples" / "demo" / "site.toml").read_text(encoding="utf-8"))
VALUES = ['""', "0", "-1", "1e309", "nan", "true", "[]", "{}", "[1, [2]]", '"x"', '"' + "y" * 5000 + '"',
          "9223372036854775808", '"../../../etc/passwd"', '"*"', '"${X}"', "1979-05-27T07:32:00Z", "'''\n'''",
          '{ a = 1 }', '"\\u0000"',
          "[" * 1000 + "]" * 1000]  # found by hand: a RecursionError in tomllib
ASSIGNMENT = re.compile(r"^(\s*[\w.\"-]+\s*=\s*)(.+)$")


def _edit(rng: random.Random, text: str) -> str:
    lines = text.splitlines()
    for _ in range(rng.randrange(1, 5)):
        op = rng.randrange(6)
        at = rng.randrange(len(lines))
        if op == 0:
            del lines[at]
        elif op == 1:
            lines.insert(at, lines[rng.randrange(len(lines))])
        elif op == 2:
            other = rng.randrange(len(lines))
            lines[at], lines[other] = lines[other], lines[at]
        elif op in (3, 4):  # a value replaced: the most common edit
            assigned = [i for i, line in enumerate(lines) if ASSIGNMENT.match(line)]
            i = rng.choice(assigned)
            match = ASSIGNMENT.match(lines[i])
            assert match
            lines[i] = match.group(1) + rng.choice(VALUES)
        else:
            data = bytearray("\n".join(lines).encode())
            data[rng.randrange(len(data))] = rng.randrange(32, 127)
            lines = data.decode("latin-1").splitlines() or [""]
    return "\n".join(lines) + "\n"


def test_edited_site_files_load_or_say_what_is_wrong(tmp_path: Path) -> None:
    print(f"COUPLER_FUZZ_SEED={SEED}")
    rng = random.Random(SEED)
    pm = plugin_manager()
    path = tmp_path / "site.toml"
    (tmp_path / "key").write_text("not a key")
    (tmp_path / "known_hosts").write_text("")
    site = TEMPLATE.substitute(
        EXAMPLES=REPO / "examples", VAR=tmp_path / "var", LIFE_DROPBOX=tmp_path / "dropbox", HEALTH_PORT=8001,
        AUTO_PORT=8002, SFTP_LOGIN=f'host = "127.0.0.1"\nport = 2222\nusername = "life"\n'
                                   f'private_key = "{tmp_path / "key"}"\nknown_hosts = "{tmp_path / "known_hosts"}"')
    path.write_text(site, encoding="utf-8")
    load_site(path, pm=pm)  # unedited, it loads: the edits are what is refused
    deadline, count, refused = time.monotonic() + BUDGET, 0, 0
    while time.monotonic() < deadline:
        text = _edit(rng, site)
        path.write_text(text, encoding="utf-8")
        count += 1
        try:
            with bounded(f"edit {count} (COUPLER_FUZZ_SEED={SEED})"):
                load_site(path, pm=pm)
        except CouplerError as exc:
            refused += 1
            assert str(exc).strip() and "Traceback" not in str(exc), f"edit {count} (COUPLER_FUZZ_SEED={SEED}): {exc}"
        except Exception as exc:  # noqa: BLE001 - what the test looks for
            (tmp_path / "failing-site.toml").write_text(text, encoding="utf-8")
            raise AssertionError(f"edit {count} (COUPLER_FUZZ_SEED={SEED}): {type(exc).__name__} escaped load_site: "
                                 f"{str(exc)[:300]} (the site file: {tmp_path / 'failing-site.toml'})") from None
    assert count > 20 and refused, f"{count} edits, {refused} refused in {BUDGET} s"
