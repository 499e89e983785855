"""The compiled kernel reads and writes only inside its buffers, on every text path.

The property tests (``test_fused_kernel.py``) compare the kernel's values with two oracles;
a read past the end of a batch, or a store past a text column's region, that does not change
a value goes unseen there. Here ``_fused.c`` is compiled again with AddressSanitizer and
UndefinedBehaviorSanitizer (``gcc -fsanitize=address,undefined``) and a child process runs
it on batches of 1 to 41 records of every field kind and of records ending in short and long
text fields (the last records of a batch take the paths that must not load past its end),
under each code page, trimming policy and null detection, on each text path this CPU has,
with Python's objects and Arrow's buffers allocated by ``malloc`` so that the sanitizer
guards their ends. Any stray access, overflow or undefined shift ends the child with the
sanitizer's report; the compiled batches must also equal the NumPy kernels'. Loads cut
short by 16 to 24 bytes at a batch's end on any of the three paths, and text regions without
the kernel's 64 bytes of slack, each fail this test (tried). ``COUPLER_FUZZ_SEED=N`` replays
a run's random records.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from coupler.translators.copybook import kernels

SOURCE = Path(kernels.__file__).with_name("_fused.c")

pytestmark = [
    pytest.mark.timeout(600),
    pytest.mark.skipif(not kernels.FUSED_BUILT, reason="the fused kernel is not built (no C compiler at install)"),
    pytest.mark.skipif(shutil.which("gcc") is None, reason="no gcc"),
]

CHILD = r"""
import importlib.machinery, importlib.util, itertools, random, sys
so, seed, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
name = "coupler.translators.copybook._fused"
spec = importlib.util.spec_from_loader(name, importlib.machinery.ExtensionFileLoader(name, so))
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
sys.modules[name] = module  # the kernels module imports this one, not the installed build
sys.path.insert(0, sys.argv[4])
from coupler.translators.copybook import kernels
from coupler.translators.copybook.batch import BatchDecoder
from coupler.translators.copybook.layout import build_layout
from coupler.translators.copybook.parser import parse_copybook
import test_fused_kernel as t

assert kernels._fused is module and kernels.COMPILED, kernels._fused
rng = random.Random(seed)
# every field kind; and records whose last fields are text of 1 to 70 bytes, shorter than the
# kernel's 64-byte loads, so that the last records of a batch take the paths that stop short
# of its end
LAYOUTS = [build_layout(parse_copybook(c)) for c in (t.EVERY_KIND, '''
       01  SHORT.
           05  S-KEY     PIC X(2).
           05  S-QTY     PIC S9(5) COMP-3.
           05  S-NAME    PIC X(40).
           05  S-CODE    PIC X(8).
''', '''
       01  ONE.
           05  O-FLAG    PIC X.
''', '''
       01  MIXED.
           05  M-AMT     PIC S9(7)V99.
           05  M-THIRTY3 PIC X(33).
           05  M-SIXTY5  PIC X(65).
''', '''
       01  REPEATED.
           05  R-ITEM OCCURS 4 TIMES.
               10  R-CODE    PIC X(5).
               10  R-TEXT    PIC X(36).
''', '''
       01  LONG.
           05  L-TEXT    PIC X(70).
           05  L-TAIL    PIC X(20).
''')]
# field contents that steer the kernel's branches: noise, all spaces (empty after trimming),
# all 0x00 (null), all 0xFF, letters between spaces (the trimmed bounds), EBCDIC digits, and
# bytes beyond U+007F in every code page (the multi-byte UTF-8 path)
FILLS = [None, b"\x40", b"\x00", b"\xff", b"\x40\xc1\x40", b"\xf0\xf9", b"\x9f\x4a\xc0"]
def fill(n):
    kind = rng.choice(FILLS)
    if kind is None:
        return bytes(rng.getrandbits(8) for _ in range(n))
    if kind == b"\x40\xc1\x40":
        lead, tail = rng.randint(0, n), rng.randint(0, n)
        core = bytes(rng.choice(b"\xc1\xc2\x81\x82\xf1\x40") for _ in range(max(n - lead - tail, 0)))
        return (b"\x40" * lead + core + b"\x40" * tail)[:n].ljust(n, b"\x40")
    return bytes(rng.choice(kind) for _ in range(n))
paths = module.text_paths()
checked = 0
for _, layout, options in itertools.product(range(rounds), LAYOUTS, t.OPTIONS):
    compiled = BatchDecoder(layout, options, compiled=True)
    numpy = BatchDecoder(layout, options, compiled=False)
    size = compiled.record_size
    count = rng.choice([1, 2, 3, 5, 8, 41])
    raw = bytearray(size * count)
    for r in range(count):
        for col in compiled.fused.columns:
            for offset in col.offsets:
                at = r * size + offset
                raw[at : at + col.ft.size] = fill(col.ft.size)
    raw = bytes(raw)
    want = numpy.decode(raw, first_record=1)
    for path in paths:
        module.use_text_path(path)
        got = compiled.decode(raw, first_record=1)
        assert got.batch.equals(want.batch), (path, options, count)
        assert got.bad == want.bad, (path, options, count)
        checked += 1
print("checked", checked, "batches on", paths)
"""


def _sanitizer_runtime(name: str) -> str | None:
    found = subprocess.run(["gcc", f"-print-file-name={name}"], capture_output=True, text=True).stdout.strip()
    return found if os.path.isabs(found) and os.path.exists(found) else None


def test_the_kernel_stays_inside_its_buffers_under_address_sanitizer(tmp_path: Path) -> None:
    asan, ubsan = _sanitizer_runtime("libasan.so"), _sanitizer_runtime("libubsan.so")
    if not (asan and ubsan):
        pytest.skip("gcc's sanitizer runtimes (libasan, libubsan) are not installed")
    so = tmp_path / "_fused_sanitized.so"
    # -O0: a two-second build (the -O3 one with the sanitizers takes a minute); the same code paths
    build = subprocess.run(
        ["gcc", "-shared", "-fPIC", "-O0", "-fsanitize=address,undefined", "-fno-sanitize-recover=undefined",
         "-fno-omit-frame-pointer", f"-I{sysconfig.get_paths()['include']}", str(SOURCE), "-o", str(so)],
        capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    seed = int(os.environ.get("COUPLER_FUZZ_SEED", int.from_bytes(os.urandom(4), "little")))
    env = {**os.environ, "LD_PRELOAD": f"{asan} {ubsan}", "PYTHONMALLOC": "malloc",
           "ARROW_DEFAULT_MEMORY_POOL": "system",
           "ASAN_OPTIONS": "detect_leaks=0:exitcode=86", "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1"}
    run = subprocess.run([sys.executable, "-c", CHILD, str(so), str(seed), "4", str(Path(__file__).parent)],
                         env=env, capture_output=True, text=True, timeout=540)
    report = run.stderr[-6000:]
    assert "AddressSanitizer" not in run.stderr and "runtime error" not in run.stderr, f"seed {seed}:\n{report}"
    assert run.returncode == 0, f"seed {seed}:\n{report}"
    assert run.stdout.startswith("checked "), run.stdout
