"""Line numbers of TOML keys: tomllib keeps no positions, so the text is scanned once.

:func:`key_lines` maps each key path to the line it is written on. Array-of-tables entries
count like TOML does: the third ``[[rule]]`` is ``("rule", 2)``, a ``[[rule.each]]`` under it
``("rule", 2, "each", 0)``. Inline tables and arrays give every key inside them the line of
the key that holds them (:meth:`LineIndex.line` falls back to the nearest known ancestor).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

Path = tuple[str | int, ...]

_BARE = r"[A-Za-z0-9_-]+"
_QUOTED = r'"(?:[^"\\]|\\.)*"|\'[^\']*\''
_KEY = rf"(?:{_BARE}|{_QUOTED})(?:\s*\.\s*(?:{_BARE}|{_QUOTED}))*"
_HEADER = re.compile(rf"^\s*(\[\[?)\s*({_KEY})\s*\]\]?")
_ASSIGN = re.compile(rf"^\s*({_KEY})\s*=")


def _split_key(text: str) -> list[str]:
    parts = re.findall(rf"{_BARE}|{_QUOTED}", text)
    return [p[1:-1] if p[:1] in "\"'" else p for p in parts]


@dataclass
class LineIndex:
    """Key path -> line number (1-based) of one TOML file."""

    file: str
    lines: dict[Path, int] = field(default_factory=dict)

    def line(self, path: Path) -> int:
        """The line of ``path`` or of its nearest ancestor that has one (1 if none)."""
        path = tuple(path)
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return 1

    def where(self, path: Path) -> str:
        return f"{self.file}:{self.line(path)}"


def key_lines(text: str, file: str = "<mapping>") -> LineIndex:
    """Scan TOML ``text`` for table headers and ``key =`` lines."""
    index = LineIndex(file)
    counts: dict[Path, int] = {}
    table: Path = ()
    in_multiline: str | None = None
    depth = 0  # open brackets/braces of a value spanning lines
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw
        if in_multiline:
            if in_multiline in line:
                in_multiline = None
            continue
        if depth:
            depth += _balance(line)
            continue
        m = _HEADER.match(line)
        if m:
            keys = _split_key(m.group(2))
            if m.group(1) == "[[":
                base = (*_resolve(keys[:-1], counts), keys[-1])
                n = counts.get(base, 0)
                counts[base] = n + 1
                path = (*base, n)
                index.lines.setdefault(base, number)
            else:
                path = _resolve(keys, counts)
            table = path
            index.lines[path] = number
            continue
        m = _ASSIGN.match(line)
        if not m:
            continue
        path = (*table, *_split_key(m.group(1)))
        index.lines.setdefault(path, number)
        rest = line[m.end():]
        for quote in ('"""', "'''"):
            if rest.count(quote) == 1:
                in_multiline = quote
        if not in_multiline:
            depth = max(_balance(rest), 0)
    return index


def _resolve(keys: list[str], counts: dict[Path, int]) -> Path:
    """A header's keys with the current index of each array of tables on the way."""
    path: Path = ()
    for key in keys:
        path = (*path, key)
        if path in counts:
            path = (*path, counts[path] - 1)
    return path


def _balance(text: str) -> int:
    """Open minus closed brackets outside strings and comments."""
    depth = 0
    quote = None
    i = 0
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\" and quote == '"':
                i += 2
                continue
            if ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch == "#":
            break
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        i += 1
    return depth
