"""Single-byte code pages for copybook text fields (EBCDIC and ASCII extracts).

The EBCDIC tables come from the ``ebcdic`` package (one ``decoding_table`` of 256
characters per code page) and are adjusted the way Cobrix adjusts them, so that text decodes
exactly as Cobrix decodes it (checked against the corpus case ``08_test9_codepages``):

* ``0x0D`` decodes to LF and ``0x25`` to CR (the reverse of the IBM tables),
* ``0x15`` (NEL) decodes to U+0085,
* every other byte that the IBM table maps to a C1 control (U+0080-U+009F) decodes to a space.

``cp037`` is Cobrix's printable variant (every control character but LF, CR and NEL
becomes a space);
``cp037_extended`` keeps the C0 controls. ``common`` is Cobrix's default "invariant" table:
the EBCDIC invariant characters decode as in cp037 and every other byte decodes to a space;
``common_extended`` adds the control characters.

Encoding is the inverse table; where several bytes decode to the same character (all the
bytes that decode to a space, for example) the canonical byte is the one the IBM table maps
that character to.
"""

from __future__ import annotations

import codecs
import re
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

from coupler.canonical.plain import Plain
from coupler.translators.copybook.errors import CopybookError

__all__ = [
    "EBCDIC_CODE_PAGES",
    "CodePage",
    "CodePageError",
    "ascii_codec",
    "code_page",
]


class CodePageError(CopybookError):
    """An unknown code page or character set name."""


#: Every EBCDIC code page name accepted by ``ebcdic_code_page``.
EBCDIC_CODE_PAGES: tuple[str, ...] = (
    "common",
    "common_extended",
    "cp037",
    "cp037_extended",
    "cp273",
    "cp277",
    "cp278",
    "cp280",
    "cp284",
    "cp285",
    "cp297",
    "cp500",
    "cp838",
    "cp870",
    "cp875",
    "cp1025",
    "cp1047",
    *(f"cp{n}" for n in range(1140, 1150)),
)

# Bytes that Cobrix's ``common`` table decodes to something other than a space
# (INDEX.md of the corpus): the EBCDIC invariant characters plus CR/LF and 0xCA.
_COMMON_BYTES: frozenset[int] = frozenset(
    [0x0D, 0x25, 0xB0, 0xBA, 0xBB, 0xE0]
    + list(range(0x4B, 0x51))
    + list(range(0x5A, 0x5F))
    + [0x60, 0x61]
    + list(range(0x6A, 0x70))
    + list(range(0x79, 0x80))
    + list(range(0x81, 0x8A))
    + list(range(0x91, 0x9A))
    + list(range(0xA1, 0xAA))
    + list(range(0xC0, 0xCB))
    + list(range(0xD0, 0xDA))
    + list(range(0xE2, 0xEA))
    + list(range(0xF0, 0xFA))
)


class CodePage(Plain, frozen=True):
    """A single-byte code page: ``decode`` bytes to text and ``encode`` text to bytes."""

    name: str
    table: tuple[str, ...]
    pad: bytes = b"\x40"
    _decode_map: dict[int, str]
    _encode_map: dict[int, int]

    def __init__(self, name: str, table: tuple[str, ...], pad: bytes = b"\x40") -> None:
        self.__dict__.update(name=name, table=table, pad=pad)
        self.__post_init__()

    def __post_init__(self) -> None:
        if len(self.table) != 256:
            raise ValueError(f"code page {self.name}: table has {len(self.table)} entries, not 256")
        object.__setattr__(
            self, "_decode_map", {i: ch for i, ch in enumerate(self.table) if ch != chr(i)}
        )
        object.__setattr__(self, "_encode_map", _encode_map(self.name, self.table))

    def decode(self, raw: bytes) -> str:
        """The text of ``raw`` (every byte decodes to exactly one character)."""
        return raw.decode("latin-1").translate(self._decode_map)

    def encode(self, text: str) -> bytes:
        """The bytes of ``text``; ``UnicodeEncodeError`` for a character the page lacks."""
        mapping = self._encode_map
        out = bytearray(len(text))
        for i, ch in enumerate(text):
            b = mapping.get(ord(ch))
            if b is None:
                raise UnicodeEncodeError(self.name, text, i, i + 1, "not in the code page")
            out[i] = b
        return bytes(out)

    def can_encode(self, ch: str) -> bool:
        return ord(ch) in self._encode_map


def _encode_map(name: str, table: tuple[str, ...]) -> dict[int, int]:
    base = _ibm_table(_base_page(name))
    mapping: dict[int, int] = {}
    for i, ch in enumerate(table):
        mapping.setdefault(ord(ch), i)
    # Prefer the byte the IBM table gives a character (0x40 for a space, not 0x00-0x3F).
    for i, ch in enumerate(base):
        if table[i] == ch:
            mapping[ord(ch)] = i
    return mapping


def _base_page(name: str) -> str:
    if name.startswith("common") or name.startswith("cp037"):
        return "cp037"
    return name


@lru_cache(maxsize=32)
def _ibm_table(name: str) -> tuple[str, ...]:
    module = _ebcdic_module(name)
    table = tuple(module.decoding_table)
    if len(table) != 256:  # pragma: no cover - the package guarantees 256 entries
        raise CodePageError(f"code page {name}: incomplete table in the ebcdic package")
    return table


def _ebcdic_module(name: str) -> Any:
    """The ``ebcdic`` package's module of one code page, run on its own: importing it as
    ``ebcdic.<name>`` runs the package's ``__init__``, which imports all of its 30-odd code
    pages (about a tenth of ``copybook decode``'s start-up) to register them as codecs."""
    import importlib.util

    found = sys.modules.get(f"ebcdic.{name}")
    if found is not None:
        return found
    package = importlib.util.find_spec("ebcdic")  # (a top-level package: its __init__ is not run)
    folders = list(package.submodule_search_locations or []) if package else []
    for folder in folders:
        path = Path(folder) / f"{name}.py"
        if path.is_file():
            spec = importlib.util.spec_from_file_location(f"_coupler_ebcdic_{name}", path)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return module
    return importlib.import_module(f"ebcdic.{name}")  # (not laid out as files: the package's way)


def _cobrix_adjusted(table: tuple[str, ...]) -> list[str]:
    out = list(table)
    for i, ch in enumerate(out):
        if 0x80 <= ord(ch) <= 0x9F:
            out[i] = " "
    out[0x0D] = "\n"
    out[0x25] = "\r"
    out[0x15] = "\x85"
    return out


def _printable(table: list[str]) -> list[str]:
    """Cobrix's plain cp037: the controls become spaces, except LF, CR and NEL."""
    return [" " if (ord(ch) < 0x20 or ord(ch) == 0x7F) and ch not in "\n\r" else ch for ch in table]


def _common_extended_controls(cp037: tuple[str, ...]) -> dict[int, str]:
    """Control characters of Cobrix's ``common_extended`` page (bytes 0x00-0x3F).

    An EBCDIC control with an ASCII C0 equivalent decodes to it; the other controls
    decode to SUB (0x1A) below 0x20 and to a space from 0x20 up; DEL and 0x3F are spaces.
    """
    controls: dict[int, str] = {}
    for i in range(0x40):
        ch = cp037[i]
        if ord(ch) < 0x20 and i != 0x3F:
            controls[i] = ch
        elif 0x80 <= ord(ch) <= 0x9F and i < 0x20:
            controls[i] = "\x1a"
        else:
            controls[i] = " "
    controls[0x0D] = "\n"
    controls[0x25] = "\r"
    return controls


def code_page_name(name: str) -> str:
    """The Cobrix name of an EBCDIC code page given by any common spelling: ``cp037``,
    ``CP37``, ``ibm037``, ``IBM-037``, ``ibm37``, Python's aliases (``ebcdic-cp-us``);
    :class:`CodePageError` naming the known pages when there is none."""
    key = name.strip().lower().replace("_", "-") if name else ""
    if key.replace("-", "_") in EBCDIC_CODE_PAGES:
        return key.replace("-", "_")
    m = re.fullmatch(r"(?:cp|ibm|ibm-|cp-|ccsid|ccsid-)?0*(\d{2,4})(-extended)?", key)
    if m:
        candidate = f"cp{int(m.group(1)):03d}" + ("_extended" if m.group(2) else "")
        if candidate in EBCDIC_CODE_PAGES:
            return candidate
    try:
        python_name = codecs.lookup(key).name  # ebcdic-cp-us -> cp037
    except LookupError:
        python_name = ""
    if python_name in EBCDIC_CODE_PAGES:
        return python_name
    raise CodePageError(
        f"unknown EBCDIC code page {name!r}",
        hint="known: " + ", ".join(EBCDIC_CODE_PAGES) + " (IBM names such as ibm037 or IBM-1047 work too)",
    )


@lru_cache(maxsize=32)
def code_page(name: str) -> CodePage:
    """The EBCDIC code page called ``name`` (Cobrix names: ``cp037``, ``common``, ...; any
    spelling :func:`code_page_name` knows)."""
    key = code_page_name(name)
    if key in ("common", "common_extended"):
        cp037 = _ibm_table("cp037")
        table = [cp037[i] if i in _COMMON_BYTES else " " for i in range(256)]
        table[0x0D] = "\n"
        table[0x25] = "\r"
        table[0xCA] = "-"
        if key == "common_extended":
            for i, ch in _common_extended_controls(cp037).items():
                table[i] = ch
        return CodePage(key, tuple(table))
    if key == "cp037":
        return CodePage(key, tuple(_printable(_cobrix_adjusted(_ibm_table("cp037")))))
    if key == "cp037_extended":
        return CodePage(key, tuple(_cobrix_adjusted(_ibm_table("cp037"))))
    return CodePage(key, tuple(_cobrix_adjusted(_ibm_table(key))))


class AsciiCodec(Plain, frozen=True):
    """Text codec of ASCII extracts: a Python character set (``utf-8`` by default)."""

    name: str
    pad: bytes = b" "

    def __init__(self, name: str, pad: bytes = b" ") -> None:
        self.__dict__.update(name=name, pad=pad)

    def decode(self, raw: bytes) -> str:
        return raw.decode(self.name, errors="replace")

    def encode(self, text: str) -> bytes:
        return text.encode(self.name)

    def can_encode(self, ch: str) -> bool:
        try:
            ch.encode(self.name)
        except UnicodeEncodeError:
            return False
        return True


@lru_cache(maxsize=16)
def ascii_codec(charset: str | None = None) -> AsciiCodec:
    """The codec of ``ascii_charset`` (Cobrix reads ASCII text as UTF-8 when it is unset)."""
    name = (charset or "utf-8").strip()
    import codecs

    try:
        info = codecs.lookup(name)
    except LookupError:
        raise CodePageError(
            f"unknown ascii_charset {charset!r}",
            hint="use a Python codec name such as us-ascii, latin-1, utf-8 or cp1252",
        ) from None
    return AsciiCodec(info.name)
