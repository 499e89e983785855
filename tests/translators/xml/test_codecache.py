"""The generated converters' code kept between processes (``translators/xml/codecache.py``,
issue 32): a Spark worker's first XML split loads what another process compiled."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from coupler.translators.xml import codecache

DATA = Path(__file__).parent / "data"
SOURCE = "def double(x):\n    return 2 * x\n"


@pytest.fixture
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    return tmp_path / "coupler" / "generated-code"


def _run(code: Any) -> Any:
    namespace: dict[str, Any] = {}
    exec(code, namespace)  # noqa: S102 - the test's own source
    return namespace["double"](21)


def _no_compile(*args: object, **kwargs: object) -> None:
    raise AssertionError("compiled, not loaded from the cache")


def test_code_compiled_once_is_loaded_from_the_cache_afterwards(cache_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _run(codecache.compiled(SOURCE, "<double>")) == 42
    assert len(list(cache_home.glob("*.code"))) == 1
    assert oct(cache_home.stat().st_mode & 0o777) == oct(0o700)
    monkeypatch.setattr(codecache, "compile", _no_compile, raising=False)
    code = codecache.compiled(SOURCE, "<double>")
    assert _run(code) == 42 and code.co_filename == "<double>"


def test_another_source_or_name_is_compiled_and_kept_apart(cache_home: Path) -> None:
    codecache.compiled(SOURCE, "<double>")
    other = codecache.compiled(SOURCE.replace("2 * x", "3 * x"), "<double>")
    renamed = codecache.compiled(SOURCE, "<twice>")
    assert _run(other) == 63 and renamed.co_filename == "<twice>"
    assert len(list(cache_home.glob("*.code"))) == 3


def test_a_damaged_cache_file_is_compiled_again(cache_home: Path) -> None:
    codecache.compiled(SOURCE, "<double>")
    (kept,) = cache_home.glob("*.code")
    kept.write_bytes(b"\xe3not marshal data")
    assert _run(codecache.compiled(SOURCE, "<double>")) == 42
    assert _run(codecache.compiled(SOURCE, "<double>")) == 42  # written again, whole


def test_a_folder_others_can_write_to_is_not_used(cache_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache_home.mkdir(parents=True)
    cache_home.chmod(0o777)
    codecache.compiled(SOURCE, "<double>")
    assert not list(cache_home.iterdir())
    # a file planted there is not run
    cache_home.chmod(0o700)
    codecache.compiled(SOURCE, "<double>")
    cache_home.chmod(0o777)
    monkeypatch.setattr(codecache, "compile", _no_compile, raising=False)
    with pytest.raises(AssertionError, match="compiled, not loaded"):
        codecache.compiled(SOURCE, "<double>")


def test_an_unwritable_cache_place_leaves_the_code_compiled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    assert _run(codecache.compiled(SOURCE, "<double>")) == 42


def test_a_second_process_decodes_with_the_first_ones_compiled_converters(cache_home: Path) -> None:
    """What a Spark worker's first XML split does (the decoder, the record converters, the
    fused Avro converter), in two processes: the second compiles nothing, and decodes the same."""
    script = f"""
import sys
from coupler.translators.xml import XsdModel, codecache
from coupler.translators.xml.model import value_avro
compiles = []
if sys.argv[1] == "second":
    def counted(*args, **kwargs):
        compiles.append(args[1])
        return compile(*args, **kwargs)
    codecache.compile = counted
d = XsdModel.load({str(DATA / "orders/orders.xsd")!r}).decoder("orders")
record = d.resolve_path("orders/order")[-1][1].record
out = list(d.iter_records({str(DATA / "orders/orders-batch.xml")!r}, "orders/order", avro_schema=value_avro(record, set())))
print(len(compiles), [bytes(r).hex() for r in out])
"""
    env = {**os.environ, "XDG_CACHE_HOME": str(cache_home.parent.parent)}
    runs = [subprocess.run([sys.executable, "-c", script, which], capture_output=True, text=True, env=env, check=False)
            for which in ("first", "second")]
    assert all(r.returncode == 0 for r in runs), runs[-1].stderr[-1500:]
    (count_1, records_1), (count_2, records_2) = (r.stdout.split(" ", 1) for r in runs)
    assert len(list(cache_home.glob("*.code"))) >= 2
    assert count_2 == "0" and records_2 == records_1 and records_1.strip() != "[]"
