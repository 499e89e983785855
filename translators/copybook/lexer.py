"""Copybook source text -> tokens.

Two source formats:

* ``fixed`` (the default, as punched on cards): columns 1-6 are the sequence area and
  columns 73-80 the identification area, both ignored; column 7 is the indicator:
  ``*`` and ``/`` comment lines, ``-`` a continuation line, ``D``/``d`` a debugging line
  (skipped unless ``debug_lines=True``, as the compiler does without ``WITH DEBUGGING
  MODE``). Text lives in columns 8-72. As in Cobrix, a line with any other character in
  column 7 is read as text starting in column 7.
* ``free``: the whole line is text; a line whose first non-blank characters are ``*`` or
  ``/`` is a comment, one starting with ``>>D`` a debugging line.

Lines that hold only a compiler-directing statement for the listing or the compiler options
are dropped, as IBM Enterprise COBOL and GnuCOBOL do (they describe no data): ``EJECT``,
``SKIP1``/``SKIP2``/``SKIP3`` and ``TITLE 'text'`` (each alone on its line, with or without
a period), ``*CBL``/``*CONTROL`` options (written from column 8 on; in column 7 the ``*`` is
already a comment indicator), and ``CBL``/``PROCESS`` option lines (anywhere from column 1).
``REPLACE`` works on the tokens after ``COPY`` expansion (``parser.py``).

In both formats ``*>`` outside a literal starts a floating comment that runs to the end of
the line (``16 FILLER PIC X(353). *> was 420``).

Tab characters are expanded to ``tab_width`` columns before columns are counted. When the
expansion pushes text past column 72 of a fixed-format line, the clause would be silently
truncated, so that is an error instead (use the free format or another tab width).

Tokens are COBOL "character strings": words (``PIC``, ``9(5)V99``, ``CUSTOMER-ID``), the
separator period, alphanumeric literals (``'A'``, ``X'C1'``), and pseudo-text
(``==a==``, for ``COPY ... REPLACING``). Commas and semicolons followed by a space are
separators and are dropped. Every token carries its file, line and column.
"""

from __future__ import annotations

import re
from typing import Literal

from coupler.canonical.plain import Plain

from .errors import CopybookSyntaxError

SourceFormat = Literal["fixed", "free"]

_TEXT_START = 7  # 0-based index of column 8
_TEXT_END = 72  # columns 8..72 inclusive
#: a line holding only a listing statement: EJECT, SKIP1-3, TITLE 'literal' (period optional)
_LISTING = re.compile(r"""(EJECT|SKIP[123])\s*\.?|TITLE\s+('[^']*'|"[^"]*")\s*\.?""", re.IGNORECASE)
#: a line of compiler options: *CBL / *CONTROL (text area), CBL / PROCESS (from column 1 on)
_OPTIONS = re.compile(r"(\*CBL|\*CONTROL|CBL|PROCESS)(\s.*)?", re.IGNORECASE)
_OPTIONS_FROM_COLUMN_1 = re.compile(r"\s*(CBL|PROCESS)(\s.*)?", re.IGNORECASE)


class Token(Plain, frozen=True):
    """One token with its 1-based position in its file."""

    text: str
    kind: str  # "word" | "literal" | "period" | "pseudo"
    file: str
    line: int
    column: int
    prefix: str = ""  # literal prefix: "X" (hexadecimal), "N", "G", "Z" or ""

    def __init__(self, text: str, kind: str, file: str, line: int, column: int, prefix: str = "") -> None:
        self.__dict__.update(text=text, kind=kind, file=file, line=line, column=column, prefix=prefix)

    @property
    def upper(self) -> str:
        return self.text.upper()

    def where(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


class _Line(Plain):
    number: int
    column: int  # 1-based column of text[0]
    text: str
    continuation: bool

    def __init__(self, number: int, column: int, text: str, continuation: bool) -> None:
        self.number = number
        self.column = column
        self.text = text
        self.continuation = continuation


def _expand_tabs(raw: str, tab_width: int) -> str:
    if "\t" not in raw:
        return raw
    return raw.expandtabs(tab_width)


def _clean(raw: str) -> str:
    # control characters (form feed, Ctrl-Z end of file marks, ...) are white space
    return "".join(" " if (ord(ch) < 32 or ord(ch) == 127) else ch for ch in raw)


def _directing(text: str) -> bool:
    """Whether a line's text is only a listing or compiler-options statement (dropped)."""
    stripped = text.strip()
    return bool(stripped) and (_LISTING.fullmatch(stripped) is not None or _OPTIONS.fullmatch(stripped) is not None)


def source_lines(
    text: str,
    file: str,
    *,
    source_format: SourceFormat = "fixed",
    tab_width: int = 8,
    debug_lines: bool = False,
) -> list[_Line]:
    """The lines of a copybook that hold text, with comment and sequence areas removed."""
    if source_format not in ("fixed", "free"):
        raise CopybookSyntaxError(
            f"unknown copybook source format {source_format!r}", file=file, line=0, column=0,
            expected="'fixed' or 'free'",
        )
    if tab_width < 1:
        tab_width = 1
    out: list[_Line] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        had_tab = "\t" in raw
        line = _clean(_expand_tabs(raw, tab_width))
        if source_format == "free":
            stripped = line.lstrip()
            if stripped[:3].upper() == ">>D" and stripped[3:4] in ("", " "):
                if not debug_lines:
                    continue
                line = " " * (len(line) - len(stripped) + 3) + stripped[3:]
                stripped = line.lstrip()
            if not stripped or stripped.startswith(("*", "/")) or _directing(stripped):
                continue
            out.append(_Line(number, 1, line, False))
            continue
        if len(line) <= 6 or _OPTIONS_FROM_COLUMN_1.fullmatch(line):
            continue
        indicator = line[6]
        start = _TEXT_START
        if indicator in "*/":
            continue
        if indicator in "dD":
            # a debugging line (whatever follows in column 8), as the compiler reads it
            if not debug_lines:
                continue
        elif indicator not in " -":
            # As Cobrix does, a copybook written from column 7 (no indicator) is read as
            # text starting in column 7.
            start = _TEXT_START - 1
        body = line[start:_TEXT_END].ljust(_TEXT_END - start)  # a literal continues to column 72
        if indicator != "-" and _directing(body):
            continue
        tail = line[_TEXT_END:]
        if had_tab and tail.strip():
            raise CopybookSyntaxError(
                f"after expanding tabs to {tab_width} columns the text runs past column 72"
                " and would be cut off",
                file=file, line=number, column=_TEXT_END + 1, token=tail.strip()[:20],
                expected="text within columns 8-72",
                hint="use the free source format or another tab width",
            )
        out.append(_Line(number, start + 1, body, indicator == "-"))
    return out


def tokenize(
    text: str,
    file: str = "<copybook>",
    *,
    source_format: SourceFormat = "fixed",
    tab_width: int = 8,
    debug_lines: bool = False,
) -> list[Token]:
    """Split copybook source text into tokens (see the module documentation)."""
    lines = source_lines(
        text, file, source_format=source_format, tab_width=tab_width, debug_lines=debug_lines
    )
    tokens: list[Token] = []
    open_literal: tuple[str, str, int, int] | None = None  # (quote, text so far, line, col)
    literal_prefix = ""
    for ln in lines:
        body = ln.text
        i = 0
        n = len(body)
        if ln.continuation:
            first = len(body) - len(body.lstrip())
            if open_literal is not None:
                if first < n and body[first] in "'\"":
                    i = first + 1
                else:
                    raise CopybookSyntaxError(
                        "continuation of an alphanumeric literal must start with a quote",
                        file=file, line=ln.number, column=ln.column + first,
                        token=body.strip()[:20], expected="a quote",
                    )
            elif tokens and tokens[-1].kind == "word" and first < n and body[first] not in "'\"":
                # the first character continues the last word of the previous line
                j = first
                while j < n and not body[j].isspace():
                    j += 1
                prev = tokens.pop()
                piece = body[first:j]
                merged = prev.text + piece
                tokens.extend(_split_word(merged, prev.file, prev.line, prev.column))
                i = j
        elif open_literal is not None:
            quote, sofar, lline, lcol = open_literal
            raise CopybookSyntaxError(
                "unterminated alphanumeric literal",
                file=file, line=lline, column=lcol, token=(quote + sofar[:20]).rstrip(),
                expected=f"a closing {quote}",
            )
        while True:
            if open_literal is not None:
                quote, sofar, lline, lcol = open_literal
                j = i
                chunk = []
                closed = False
                while j < n:
                    ch = body[j]
                    if ch == quote:
                        if j + 1 < n and body[j + 1] == quote:
                            chunk.append(quote)
                            j += 2
                            continue
                        closed = True
                        j += 1
                        break
                    chunk.append(ch)
                    j += 1
                sofar += "".join(chunk)
                if not closed:
                    # a literal continued on the next line runs to column 72
                    open_literal = (quote, sofar, lline, lcol)
                    break
                tokens.append(Token(sofar, "literal", file, lline, lcol, literal_prefix))
                open_literal = None
                i = j
                # a period right after a literal
                if i < n and body[i] in ".,;" and (i + 1 >= n or body[i + 1].isspace()):
                    if body[i] == ".":
                        tokens.append(Token(".", "period", file, ln.number, ln.column + i))
                    i += 1
            while i < n and body[i].isspace():
                i += 1
            if i >= n:
                break
            if body.startswith("*>", i):  # a floating comment runs to the end of the line
                break
            col = ln.column + i
            ch = body[i]
            if ch in "'\"" or (
                ch.upper() in "XNGZ" and i + 1 < n and body[i + 1] in "'\""
            ):
                prefix = ""
                if ch not in "'\"":
                    prefix = ch.upper()
                    i += 1
                quote = body[i]
                open_literal = (quote, "", ln.number, col)
                literal_prefix = prefix
                i += 1
                continue
            if body.startswith("==", i):
                end = body.find("==", i + 2)
                if end < 0:
                    raise CopybookSyntaxError(
                        "unterminated pseudo-text", file=file, line=ln.number, column=col,
                        token=body[i:i + 20], expected="closing '=='",
                    )
                tokens.append(Token(body[i + 2:end].strip(), "pseudo", file, ln.number, col))
                i = end + 2
                continue
            j = i
            while j < n and not body[j].isspace() and body[j] not in "'\"":
                j += 1
            tokens.extend(_split_word(body[i:j], file, ln.number, col))
            i = j
    if open_literal is not None:
        quote, sofar, lline, lcol = open_literal
        raise CopybookSyntaxError(
            "unterminated alphanumeric literal", file=file, line=lline, column=lcol,
            token=(quote + sofar[:20]).rstrip(), expected=f"a closing {quote}",
        )
    return tokens


def _split_word(word: str, file: str, line: int, column: int) -> list[Token]:
    """A run of non-blank characters -> a word and the separators after it.

    Trailing commas and semicolons are separators and are dropped; a trailing period ends
    the entry (a picture string never ends with a period or a comma).
    """
    stripped = word.rstrip(".,;")
    out: list[Token] = []
    if stripped:
        out.append(Token(stripped, "word", file, line, column))
    for k, ch in enumerate(word[len(stripped):]):
        if ch == ".":
            out.append(Token(".", "period", file, line, column + len(stripped) + k))
    return out
