"""Copybook grammar: tokens -> a tree of data description entries.

:func:`parse_copybook` reads copybook text (or :func:`parse_file` a file), resolves
``COPY member [REPLACING ...]`` statements against a search path and returns a
:class:`Copybook`: the top-level items (01 records and 77 items) with their subordinate
items, level-88 condition names attached to their item and level-66 RENAMES kept per
record. Clause values are kept raw (picture string, usage, sign, sync, justified, blank
when zero, value, occurs, redefines); the layout (``layout.py``) gives them sizes and
offsets. Group-level USAGE and SIGN are inherited by the subordinate items.

Every error is a :class:`~.errors.CopybookSyntaxError` naming ``file:line:column``, the
token and what was expected.
"""

from __future__ import annotations

import re
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from coupler.canonical.plain import NEW, Plain

from .errors import CopybookSyntaxError
from .lexer import SourceFormat, Token, tokenize
from .picture import NO_PICTURE_USAGES, USAGES

FIGURATIVE = {
    "ZERO": "ZERO", "ZEROS": "ZERO", "ZEROES": "ZERO",
    "SPACE": "SPACE", "SPACES": "SPACE",
    "HIGH-VALUE": "HIGH-VALUE", "HIGH-VALUES": "HIGH-VALUE",
    "LOW-VALUE": "LOW-VALUE", "LOW-VALUES": "LOW-VALUE",
    "QUOTE": "QUOTE", "QUOTES": "QUOTE",
    "NULL": "NULL", "NULLS": "NULL",
}

_CLAUSE_WORDS = {
    "PIC", "PICTURE", "USAGE", "REDEFINES", "OCCURS", "VALUE", "VALUES", "SIGN", "LEADING",
    "TRAILING", "SYNC", "SYNCHRONIZED", "JUST", "JUSTIFIED", "BLANK", "EXTERNAL", "GLOBAL",
    "RENAMES", "GROUP-USAGE", "IS", "TIMES", "DEPENDING", "ASCENDING", "DESCENDING",
    "INDEXED", "KEY", "THRU", "THROUGH", "COPY", "REPLACING", "TO", "ON", "BY",
} | set(USAGES)

_CLAUSE_LIST = (
    "a clause (PIC, USAGE, OCCURS, REDEFINES, VALUE, SIGN, SYNC, JUSTIFIED, BLANK WHEN ZERO)"
    " or '.'"
)
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_\-:'#@$]*$")
_NUMBER_RE = re.compile(r"^[+-]?(\d+[.,]?\d*|[.,]\d+)(E[+-]?\d+)?$", re.IGNORECASE)
_INT_RE = re.compile(r"^\d+$")
_PIC_RE = re.compile(r"^[A-Za-z0-9()+\-*/$,.:<>£€]+$")
_MAX_COPY_DEPTH = 16
_MAX_OCCURS = 100_000_000

#: file name endings tried when resolving ``COPY member``
COPY_EXTENSIONS = ("", ".cpy", ".cob", ".cbl", ".copy", ".CPY", ".COB", ".CBL", ".txt")


class Literal(Plain, frozen=True):
    """A literal in a VALUE clause: ``kind`` is string, number, hex, national or figurative."""

    text: str
    kind: str
    all: bool = False

    def __init__(self, text: str, kind: str, all: bool = False) -> None:
        self.__dict__.update(text=text, kind=kind, all=all)

    def render(self) -> str:
        prefix = "ALL " if self.all else ""
        if self.kind == "string":
            return prefix + "'" + self.text.replace("'", "''") + "'"
        if self.kind == "hex":
            return prefix + "X'" + self.text + "'"
        if self.kind == "national":
            return prefix + "N'" + self.text + "'"
        return prefix + self.text

    def python_value(self) -> object:
        """The literal as a Python value (str, int, or Decimal text for decimals)."""
        if self.kind == "number":
            text = self.text.replace(",", ".")
            if re.fullmatch(r"[+-]?\d+", text):
                return int(text)
            return text
        return self.text


class Condition(Plain, frozen=True):
    """A level-88 condition name: ``values`` holds single values and (low, high) ranges."""

    name: str
    values: tuple[Literal | tuple[Literal, Literal], ...]
    line: int = 0

    def __init__(self, name: str, values: tuple[Literal | tuple[Literal, Literal], ...], line: int = 0) -> None:
        self.__dict__.update(name=name, values=values, line=line)

    def describe(self) -> str:
        parts = [
            f"{v[0].render()} THRU {v[1].render()}" if isinstance(v, tuple) else v.render()
            for v in self.values
        ]
        return f"88 {self.name} VALUE {' '.join(parts)}"


class Item(Plain):
    """One data description entry (levels 01-49 and 77) with its subordinate items."""

    level: int
    name: str
    file: str = "<copybook>"
    line: int = 0
    column: int = 0
    is_filler: bool = False
    picture: str | None = None
    usage: str | None = None  # canonical usage (see picture.USAGES), own or inherited
    usage_written: str | None = None  # the USAGE word as written on this entry
    sign_position: typing.Literal["leading", "trailing"] | None = None
    sign_separate: bool = False
    synchronized: bool = False
    justified_right: bool = False
    blank_when_zero: bool = False
    redefines: str | None = None
    occurs_min: int | None = None
    occurs_max: int | None = None
    depending_on: str | None = None
    occurs_keys: list[tuple[str, str]]  # (ASCENDING|DESCENDING, name)
    indexed_by: list[str]
    value: tuple[Literal, ...] = ()
    conditions: list[Condition]
    children: list[Item]
    external: bool = False
    is_global: bool = False

    def __init__(
        self, level: int, name: str, file: str = "<copybook>", line: int = 0, column: int = 0,
        is_filler: bool = False, picture: str | None = None, usage: str | None = None,
        usage_written: str | None = None, sign_position: typing.Literal["leading", "trailing"] | None = None,
        sign_separate: bool = False, synchronized: bool = False, justified_right: bool = False,
        blank_when_zero: bool = False, redefines: str | None = None, occurs_min: int | None = None,
        occurs_max: int | None = None, depending_on: str | None = None, occurs_keys: list[tuple[str, str]] = NEW,
        indexed_by: list[str] = NEW, value: tuple[Literal, ...] = (), conditions: list[Condition] = NEW,
        children: list[Item] = NEW, external: bool = False, is_global: bool = False,
    ) -> None:
        self.level = level
        self.name = name
        self.file = file
        self.line = line
        self.column = column
        self.is_filler = is_filler
        self.picture = picture
        self.usage = usage
        self.usage_written = usage_written
        self.sign_position = sign_position
        self.sign_separate = sign_separate
        self.synchronized = synchronized
        self.justified_right = justified_right
        self.blank_when_zero = blank_when_zero
        self.redefines = redefines
        self.occurs_min = occurs_min
        self.occurs_max = occurs_max
        self.depending_on = depending_on
        self.occurs_keys = [] if occurs_keys is NEW else occurs_keys
        self.indexed_by = [] if indexed_by is NEW else indexed_by
        self.value = value
        self.conditions = [] if conditions is NEW else conditions
        self.children = [] if children is NEW else children
        self.external = external
        self.is_global = is_global

    @property
    def is_group(self) -> bool:
        return bool(self.children)

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


class Renames(Plain, frozen=True):
    """A level-66 RENAMES entry: another name for the bytes of ``start`` [THRU ``thru``]
    (it adds no storage; the layout makes it a field). ``record`` is the index of the
    top-level item it follows."""

    name: str
    start: str
    thru: str | None
    line: int = 0
    file: str = "<copybook>"
    column: int = 0
    record: int = 0

    def __init__(
        self, name: str, start: str, thru: str | None, line: int = 0, file: str = "<copybook>", column: int = 0,
        record: int = 0,
    ) -> None:
        self.__dict__.update(name=name, start=start, thru=thru, line=line, file=file, column=column, record=record)

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


class Copybook(Plain):
    """A parsed copybook: its top-level items and level-66 entries."""

    records: list[Item]
    renames: list[Renames]
    file: str = "<copybook>"

    def __init__(self, records: list[Item], renames: list[Renames] = NEW, file: str = "<copybook>") -> None:
        self.records = records
        self.renames = [] if renames is NEW else renames
        self.file = file


# ---------------------------------------------------------------------------------------
# COPY resolution


def _find_member(member: str, library: str | None, including: str, search_path: Sequence[Path]) -> Path | None:
    dirs: list[Path] = []
    inc = Path(including)
    if inc.parent and including not in ("<copybook>", "<string>"):
        dirs.append(inc.parent)
    dirs.extend(Path(p) for p in search_path)
    if library:
        dirs = [d / library for d in dirs] + [d / library.lower() for d in dirs] + dirs
    names = [member]
    if member.lower() != member:
        names.append(member.lower())
    if member.upper() != member:
        names.append(member.upper())
    for d in dirs:
        for name in names:
            for ext in COPY_EXTENSIONS:
                candidate = d / f"{name}{ext}"
                if candidate.is_file():
                    return candidate
    return None


def _tokens_of_text(text: str, tok: Token) -> list[Token]:
    """Pseudo-text or a replacement operand -> tokens positioned at ``tok``."""
    toks = tokenize(text, tok.file, source_format="free")
    return [Token(t.text, t.kind, tok.file, tok.line, tok.column, t.prefix) for t in toks]


def _same(a: Token, b: Token) -> bool:
    if a.kind != b.kind:
        return False
    if a.kind == "word":
        return a.upper == b.upper
    return a.text == b.text and a.prefix == b.prefix


def _apply_replacing(
    tokens: list[Token], pairs: list[tuple[str, list[Token], list[Token]]]
) -> list[Token]:
    """COPY ... REPLACING: whole token sequences, and LEADING/TRAILING or :TAG: parts of words."""
    out: list[Token] = []
    i = 0
    while i < len(tokens):
        done = False
        for mode, old, new in pairs:
            if not old:
                continue
            if mode == "full" and tokens[i:i + len(old)] and len(tokens) - i >= len(old) and all(
                _same(tokens[i + k], old[k]) for k in range(len(old))
            ):
                at = tokens[i]
                out.extend(Token(t.text, t.kind, at.file, at.line, at.column, t.prefix) for t in new)
                i += len(old)
                done = True
                break
        if done:
            continue
        tok = tokens[i]
        if tok.kind == "word":
            text = tok.text
            for mode, old, new in pairs:
                if len(old) != 1 or old[0].kind != "word":
                    continue
                pat = old[0].text
                rep = "".join(t.text for t in new)
                if mode == "leading" and text.upper().startswith(pat.upper()):
                    text = rep + text[len(pat):]
                elif mode == "trailing" and text.upper().endswith(pat.upper()):
                    text = text[: len(text) - len(pat)] + rep
                elif mode == "full" and pat.upper() in text.upper():
                    if not pat[:1].isalnum():
                        # partial-word replacement of tags such as :PREFIX:
                        rx = re.escape(pat)
                    else:
                        # parentheses separate text words: X(LEN) -> X(20)
                        rx = r"(?:(?<=\()|^)" + re.escape(pat) + r"(?=\)|$)"
                    text = re.sub(rx, rep.replace("\\", "\\\\"), text, flags=re.IGNORECASE)
            if text != tok.text:
                if text:
                    out.append(Token(text, "word", tok.file, tok.line, tok.column))
                i += 1
                continue
        out.append(tok)
        i += 1
    return out


def _expand_copy(
    tokens: list[Token],
    *,
    search_path: Sequence[Path],
    source_format: SourceFormat,
    tab_width: int,
    stack: tuple[str, ...],
) -> list[Token]:
    out: list[Token] = []
    i = 0
    n = len(tokens)
    while i < n:
        tok = tokens[i]
        if not (tok.kind == "word" and tok.upper == "COPY"):
            out.append(tok)
            i += 1
            continue
        i += 1
        if i >= n or tokens[i].kind not in ("word", "literal"):
            _fail("COPY needs a member name", tokens, i, "a copybook member name")
        member_tok = tokens[i]
        member = member_tok.text
        i += 1
        library = None
        if i < n and tokens[i].kind == "word" and tokens[i].upper in ("OF", "IN"):
            i += 1
            if i >= n or tokens[i].kind not in ("word", "literal"):
                _fail("COPY ... OF needs a library name", tokens, i, "a library name")
            library = tokens[i].text
            i += 1
        if i < n and tokens[i].kind == "word" and tokens[i].upper == "SUPPRESS":
            i += 1
        pairs: list[tuple[str, list[Token], list[Token]]] = []
        if i < n and tokens[i].kind == "word" and tokens[i].upper == "REPLACING":
            i += 1
            while i < n and tokens[i].kind != "period":
                mode = "full"
                if tokens[i].kind == "word" and tokens[i].upper in ("LEADING", "TRAILING"):
                    mode = tokens[i].upper.lower()
                    i += 1
                old = _operand(tokens, i)
                i += 1
                if i >= n or not (tokens[i].kind == "word" and tokens[i].upper == "BY"):
                    _fail("incomplete REPLACING phrase", tokens, i, "BY")
                i += 1
                new = _operand(tokens, i)
                i += 1
                pairs.append((mode, old, new))
            if not pairs:
                _fail("REPLACING without operands", tokens, i, "==text== BY ==text==")
        if i >= n or tokens[i].kind != "period":
            _fail("COPY statement must end with a period", tokens, i, "'.'")
        i += 1
        path = _find_member(member, library, tok.file, search_path)
        if path is None:
            raise CopybookSyntaxError(
                f"copybook member {member!r} not found",
                file=tok.file, line=member_tok.line, column=member_tok.column, token=member,
                expected="a member in the copybook search path",
                hint="add its directory with --copy-path / copy_paths",
            )
        key = str(path.resolve())
        if key in stack or len(stack) >= _MAX_COPY_DEPTH:
            raise CopybookSyntaxError(
                "COPY members include each other (or nest too deeply)",
                file=tok.file, line=member_tok.line, column=member_tok.column, token=member,
                expected="COPY members that do not include themselves",
            )
        text = _read_text(path)
        sub = tokenize(text, str(path), source_format=source_format, tab_width=tab_width)
        sub = _expand_copy(
            sub, search_path=search_path, source_format=source_format, tab_width=tab_width,
            stack=(*stack, key),
        )
        if pairs:
            sub = _apply_replacing(sub, pairs)
        out.extend(sub)
    return out


def _apply_replace_statements(tokens: list[Token]) -> list[Token]:
    """The ``REPLACE`` statement, after COPY expansion as the compiler applies it:
    ``REPLACE [LEADING|TRAILING] ==a== BY ==b== ... .`` changes the text that follows it
    until ``REPLACE OFF.`` or the next REPLACE (which supersedes it); the statement itself
    describes no data and is removed."""
    out: list[Token] = []
    pairs: list[tuple[str, list[Token], list[Token]]] = []
    segment: list[Token] = []
    i, n = 0, len(tokens)
    while i < n:
        tok = tokens[i]
        starts_entry = not segment or segment[-1].kind == "period"
        if not (tok.kind == "word" and tok.upper == "REPLACE" and starts_entry):
            segment.append(tok)
            i += 1
            continue
        out.extend(_apply_replacing(segment, pairs) if pairs else segment)
        segment = []
        i += 1
        pairs = []
        if i < n and tokens[i].kind == "word" and tokens[i].upper == "OFF":
            i += 1
        else:
            while i < n and tokens[i].kind != "period":
                mode = "full"
                if tokens[i].kind == "word" and tokens[i].upper in ("LEADING", "TRAILING"):
                    mode = tokens[i].upper.lower()
                    i += 1
                if i >= n or tokens[i].kind != "pseudo":
                    if pairs and mode == "full":
                        _fail("REPLACE statement must end with a period", tokens, i, "'.'")
                    _fail("REPLACE operands are pseudo-text", tokens, i, "==text== BY ==text==")
                old = _operand(tokens, i)
                i += 1
                if i >= n or not (tokens[i].kind == "word" and tokens[i].upper == "BY"):
                    _fail("incomplete REPLACE phrase", tokens, i, "BY")
                i += 1
                if i >= n or tokens[i].kind != "pseudo":
                    _fail("REPLACE operands are pseudo-text", tokens, i, "==text==")
                new = _operand(tokens, i)
                i += 1
                if not old:
                    _fail("REPLACE needs text to replace", tokens, i - 3, "==text== that is not empty")
                pairs.append((mode, old, new))
            if not pairs:
                _fail("REPLACE without operands", tokens, i, "==text== BY ==text== or OFF")
        if i >= n or tokens[i].kind != "period":
            _fail("REPLACE statement must end with a period", tokens, i, "'.'")
        i += 1
    out.extend(_apply_replacing(segment, pairs) if pairs else segment)
    return out


def _operand(tokens: list[Token], i: int) -> list[Token]:
    if i >= len(tokens) or tokens[i].kind == "period":
        _fail("missing REPLACING operand", tokens, i, "==pseudo-text==, a word or a literal")
    tok = tokens[i]
    if tok.kind == "pseudo":
        return _tokens_of_text(tok.text, tok) if tok.text else []
    return [tok]


def _read_text(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise CopybookSyntaxError(
            f"cannot read copybook: {exc.strerror or exc}", file=str(path), line=0, column=0,
        ) from exc
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def _fail(message: str, tokens: list[Token], i: int, expected: str) -> NoReturn:
    if i < len(tokens):
        tok = tokens[i]
        raise CopybookSyntaxError(
            message, file=tok.file, line=tok.line, column=tok.column, token=tok.text,
            expected=expected,
        )
    last = tokens[-1] if tokens else None
    raise CopybookSyntaxError(
        message,
        file=last.file if last else "<copybook>",
        line=last.line if last else 0,
        column=(last.column + len(last.text)) if last else 0,
        token="",
        expected=expected,
    )


# ---------------------------------------------------------------------------------------
# entries


def _is_level(tok: Token) -> bool:
    if tok.kind != "word" or not _INT_RE.match(tok.text) or len(tok.text) > 2:
        return False
    lv = int(tok.text)
    return 1 <= lv <= 49 or lv in (66, 77, 88)


class _Parser:
    def __init__(self, tokens: list[Token]):
        self.toks = tokens
        self.i = 0

    # -- token helpers
    def peek(self, k: int = 0) -> Token | None:
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else None

    def next(self) -> Token | None:
        tok = self.peek()
        if tok is not None:
            self.i += 1
        return tok

    def is_word(self, *words: str, k: int = 0) -> bool:
        tok = self.peek(k)
        return tok is not None and tok.kind == "word" and tok.upper in words

    def fail(self, message: str, expected: str) -> NoReturn:
        _fail(message, self.toks, self.i, expected)

    def expect_word(self, what: str) -> Token:
        tok = self.peek()
        if tok is None or tok.kind != "word":
            self.fail(f"missing {what}", what)
        self.i += 1
        return tok

    def expect_int(self, what: str) -> int:
        tok = self.peek()
        if tok is None or tok.kind != "word" or not _INT_RE.match(tok.text):
            self.fail(f"missing {what}", f"an unsigned integer ({what})")
        self.i += 1
        value = int(tok.text)
        if value > _MAX_OCCURS:
            self.i -= 1
            self.fail(f"{what} is too large", f"an integer up to {_MAX_OCCURS}")
        return value

    def skip(self, *words: str) -> None:
        while self.is_word(*words):
            self.i += 1

    def at_entry_end(self) -> bool:
        tok = self.peek()
        if tok is None or tok.kind == "period":
            return True
        return _is_level(tok) and self._starts_entry()

    def _starts_entry(self) -> bool:
        nxt = self.peek(1)
        return nxt is None or nxt.kind in ("word", "period")

    def name_ref(self, what: str) -> str:
        tok = self.peek()
        if tok is None or tok.kind != "word":
            self.fail(f"missing {what}", f"a data name ({what})")
        self.i += 1
        if not _NAME_RE.match(tok.text) or tok.upper in _CLAUSE_WORDS:
            self.i -= 1
            self.fail(f"invalid {what}", f"a data name ({what})")
        while self.is_word("OF", "IN"):  # qualified names: keep the first one
            self.i += 1
            self.expect_word("a qualifying data name")
        return tok.text

    # -- entries
    def entries(self) -> list[tuple[Token, object]]:
        out: list[tuple[Token, object]] = []
        while self.peek() is not None:
            tok = self.peek()
            assert tok is not None
            if tok.kind == "period":  # stray separator periods
                self.i += 1
                continue
            if not _is_level(tok):
                self.fail("expected a level number", "a level number (01-49, 66, 77 or 88)")
            self.i += 1
            level = int(tok.text)
            if level == 88:
                out.append((tok, self.condition(tok)))
            elif level == 66:
                out.append((tok, self.renames(tok)))
            else:
                out.append((tok, self.item(tok, level)))
            if self.peek() is not None and self.peek().kind == "period":  # type: ignore[union-attr]
                self.i += 1
        return out

    def entry_name(self) -> tuple[str, bool, Token | None]:
        tok = self.peek()
        if tok is None or tok.kind != "word" or tok.upper in _CLAUSE_WORDS or (
            _is_level(tok) and self._starts_entry() and not self._name_then_clause()
        ):
            return "FILLER", True, tok
        if tok.upper == "FILLER":
            self.i += 1
            return "FILLER", True, tok
        if not _NAME_RE.match(tok.text) or not re.search(r"[A-Za-z]", tok.text):
            self.fail("invalid data name", "a data name (letters, digits and hyphens) or FILLER")
        self.i += 1
        return tok.text, False, tok

    def _name_then_clause(self) -> bool:
        nxt = self.peek(1)
        return nxt is not None and nxt.kind == "word" and nxt.upper in _CLAUSE_WORDS

    def item(self, lvtok: Token, level: int) -> Item:
        name, filler, ntok = self.entry_name()
        it = Item(
            level=level, name=name, file=lvtok.file, line=lvtok.line, column=lvtok.column,
            is_filler=filler,
        )
        while not self.at_entry_end():
            self.clause(it)
        return it

    def clause(self, it: Item) -> None:
        tok = self.peek()
        assert tok is not None
        word = tok.upper if tok.kind == "word" else ""
        if word in ("PIC", "PICTURE"):
            self.i += 1
            self.skip("IS")
            pic = self.peek()
            if pic is None or pic.kind != "word" or not _PIC_RE.match(pic.text):
                self.fail(f"invalid PICTURE string for {it.name}", "a picture string such as X(10) or S9(7)V99")
            self.i += 1
            if it.picture is not None:
                self.i -= 1
                self.fail(f"{it.name} has two PICTURE clauses", "one PICTURE clause")
            it.picture = pic.text.upper()
        elif word == "USAGE":
            self.i += 1
            self.skip("IS")
            u = self.peek()
            if u is None or u.kind != "word" or u.upper not in USAGES:
                self.fail(f"unknown USAGE for {it.name}", "DISPLAY, COMP, COMP-1..COMP-6, BINARY, PACKED-DECIMAL, NATIONAL, INDEX,"
                      " POINTER, PROCEDURE-POINTER or FUNCTION-POINTER")
            self.i += 1
            self._set_usage(it, u.upper)
        elif word in USAGES:
            self.i += 1
            self._set_usage(it, word)
        elif word == "REDEFINES":
            self.i += 1
            it.redefines = self.name_ref("name of the redefined item")
        elif word == "OCCURS":
            self.i += 1
            self.occurs(it)
        elif word in ("VALUE", "VALUES"):
            self.i += 1
            self.skip("IS", "ARE")
            it.value = tuple(v for v in self.values(it.name) if not isinstance(v, tuple))
        elif word in ("SIGN", "LEADING", "TRAILING"):
            if word == "SIGN":
                self.i += 1
                self.skip("IS")
            pos = self.peek()
            if pos is None or pos.kind != "word" or pos.upper not in ("LEADING", "TRAILING"):
                self.fail("incomplete SIGN clause", "LEADING or TRAILING")
            self.i += 1
            it.sign_position = "leading" if pos.upper == "LEADING" else "trailing"
            if self.is_word("SEPARATE"):
                self.i += 1
                it.sign_separate = True
                self.skip("CHARACTER")
        elif word in ("SYNC", "SYNCHRONIZED"):
            self.i += 1
            it.synchronized = True
            self.skip("LEFT", "RIGHT")
        elif word in ("JUST", "JUSTIFIED"):
            self.i += 1
            it.justified_right = True
            self.skip("RIGHT")
        elif word == "BLANK":
            self.i += 1
            self.skip("WHEN")
            if not self.is_word("ZERO", "ZEROS", "ZEROES"):
                self.fail("incomplete BLANK WHEN ZERO clause", "ZERO")
            self.i += 1
            it.blank_when_zero = True
        elif word == "EXTERNAL":
            self.i += 1
            it.external = True
        elif word == "GLOBAL":
            self.i += 1
            it.is_global = True
        elif word == "GROUP-USAGE":
            self.i += 1
            self.skip("IS")
            if not self.is_word("NATIONAL"):
                self.fail("incomplete GROUP-USAGE clause", "NATIONAL")
            self.i += 1
            self._set_usage(it, "NATIONAL")
        elif word == "DATE":
            self.i += 1
            self.skip("FORMAT")
            self.skip("IS")
            self.next()
        else:
            self.fail(f"unexpected word in the description of {it.name}", _CLAUSE_LIST)

    def _set_usage(self, it: Item, word: str) -> None:
        it.usage_written = word
        it.usage = USAGES[word]

    def occurs(self, it: Item) -> None:
        if it.occurs_max is not None:
            self.i -= 1
            self.fail(f"{it.name} has two OCCURS clauses", "one OCCURS clause")
        first = self.expect_int("OCCURS count")
        explicit_min = self.is_word("TO")
        if explicit_min:
            self.i += 1
            it.occurs_min = first
            it.occurs_max = self.expect_int("OCCURS maximum")
            if it.occurs_max < first:
                self.i -= 1
                self.fail("OCCURS maximum is smaller than the minimum", f"an integer >= {first}")
        else:
            it.occurs_min = first
            it.occurs_max = first
        self.skip("TIMES")
        while True:
            if self.is_word("DEPENDING"):
                self.i += 1
                self.skip("ON")
                it.depending_on = self.name_ref("DEPENDING ON data name")
            elif self.is_word("ASCENDING", "DESCENDING"):
                order = self.next().upper  # type: ignore[union-attr]
                self.skip("KEY")
                self.skip("IS")
                it.occurs_keys.extend((order, n) for n in self._names("KEY data name"))
            elif self.is_word("INDEXED"):
                self.i += 1
                self.skip("BY")
                it.indexed_by.extend(self._names("index name"))
            else:
                break
        if it.depending_on and first == it.occurs_max and not explicit_min:
            it.occurs_min = 0  # OCCURS n DEPENDING ON: 0 to n

    def _names(self, what: str) -> list[str]:
        names = [self.name_ref(what)]
        while True:
            tok = self.peek()
            if (
                tok is None or tok.kind != "word" or tok.upper in _CLAUSE_WORDS
                or tok.upper in ("ASCENDING", "DESCENDING", "INDEXED")
                or (_is_level(tok) and self._starts_entry())
                or not _NAME_RE.match(tok.text)
            ):
                return names
            names.append(self.name_ref(what))

    def literal(self, owner: str) -> Literal | None:
        tok = self.peek()
        if tok is None:
            return None
        all_ = False
        if tok.kind == "word" and tok.upper == "ALL":
            self.i += 1
            tok = self.peek()
            all_ = True
            if tok is None:
                self.fail(f"ALL needs a literal in the VALUE of {owner}", "a literal")
        assert tok is not None
        if tok.kind == "literal":
            self.i += 1
            kind = {"X": "hex", "N": "national", "G": "national"}.get(tok.prefix, "string")
            if kind == "hex" and not re.fullmatch(r"([0-9A-Fa-f]{2})*", tok.text):
                self.i -= 1
                self.fail("invalid hexadecimal literal", "pairs of hexadecimal digits")
            return Literal(tok.text, kind, all_)
        if tok.kind == "word" and tok.upper in FIGURATIVE:
            self.i += 1
            return Literal(FIGURATIVE[tok.upper], "figurative", all_)
        if tok.kind == "word" and _NUMBER_RE.match(tok.text):
            self.i += 1
            return Literal(tok.text, "number", all_)
        if all_:
            self.fail(f"ALL needs a literal in the VALUE of {owner}", "a literal")
        return None

    def values(self, owner: str) -> list[Literal | tuple[Literal, Literal]]:
        out: list[Literal | tuple[Literal, Literal]] = []
        while True:
            tok = self.peek()
            if tok is None or tok.kind == "period":
                break
            if out and _is_level(tok) and self._starts_entry():
                nxt = self.peek(1)
                if nxt is None or nxt.kind == "period" or (
                    nxt.kind == "word" and nxt.upper not in ("THRU", "THROUGH")
                    and nxt.upper not in FIGURATIVE and not _NUMBER_RE.match(nxt.text)
                ):
                    break
            lit = self.literal(owner)
            if lit is None:
                break
            if self.is_word("THRU", "THROUGH"):
                self.i += 1
                hi = self.literal(owner)
                if hi is None:
                    self.fail(f"incomplete THRU range in the VALUE of {owner}", "a literal")
                out.append((lit, hi))
            else:
                out.append(lit)
        if not out:
            self.fail(f"VALUE clause of {owner} has no literal", "a literal, a number or ZERO/SPACE/...")
        return out

    def condition(self, lvtok: Token) -> Condition:
        tok = self.peek()
        if tok is None or tok.kind != "word" or not _NAME_RE.match(tok.text) or tok.upper in _CLAUSE_WORDS:
            self.fail("level 88 needs a condition name", "a condition name")
        self.i += 1
        if not self.is_word("VALUE", "VALUES"):
            self.fail(f"condition {tok.text} needs a VALUE clause", "VALUE")
        self.i += 1
        self.skip("IS", "ARE")
        values = self.values(tok.text)
        if self.is_word("WHEN"):  # WHEN SET TO FALSE IS literal
            self.i += 1
            self.skip("SET")
            self.skip("TO")
            if not self.is_word("FALSE"):
                self.fail("incomplete WHEN SET TO FALSE phrase", "FALSE")
            self.i += 1
            self.skip("IS")
            if self.literal(tok.text) is None:
                self.fail("WHEN SET TO FALSE needs a literal", "a literal")
        if not self.at_entry_end():
            self.fail(f"unexpected word after the values of condition {tok.text}", "'.'")
        return Condition(tok.text, tuple(values), lvtok.line)

    def renames(self, lvtok: Token) -> Renames:
        name = self.name_ref("level-66 name")
        if not self.is_word("RENAMES"):
            self.fail(f"level 66 {name} needs a RENAMES clause", "RENAMES")
        self.i += 1
        start = self.name_ref("renamed data name")
        thru = None
        if self.is_word("THRU", "THROUGH"):
            self.i += 1
            thru = self.name_ref("renamed data name")
        return Renames(name, start, thru, lvtok.line, lvtok.file, lvtok.column)


def _build_tree(entries: list[tuple[Token, object]], file: str) -> Copybook:
    roots: list[Item] = []
    renames: list[Renames] = []
    stack: list[Item] = []
    last: Item | None = None
    for tok, entry in entries:
        if isinstance(entry, Condition):
            if last is None:
                raise CopybookSyntaxError(
                    "level 88 condition before any data item", file=tok.file, line=tok.line,
                    column=tok.column, token=tok.text, expected="a data item before it",
                )
            last.conditions.append(entry)
            continue
        if isinstance(entry, Renames):
            if not roots:
                raise CopybookSyntaxError(
                    "level 66 RENAMES before any record", file=tok.file, line=tok.line,
                    column=tok.column, token=tok.text, expected="a record (01) before it",
                )
            renames.append(entry._replace(record=len(roots) - 1))
            continue
        assert isinstance(entry, Item)
        if entry.level in (1, 77):
            stack = []
        while stack and stack[-1].level >= entry.level:
            stack.pop()
        if stack:
            parent = stack[-1]
            if parent.picture is not None or parent.level == 77:
                raise CopybookSyntaxError(
                    f"{parent.name} has a PICTURE clause, so it cannot have subordinate items",
                    file=tok.file, line=tok.line, column=tok.column, token=tok.text,
                    expected=f"a level number not greater than {parent.level}",
                )
            parent.children.append(entry)
        else:
            roots.append(entry)
        stack.append(entry)
        last = entry
    if not roots:
        raise CopybookSyntaxError(
            "the copybook has no data description entries", file=file, line=1, column=1,
            token="", expected="a level number such as 01",
        )
    for root in roots:
        _inherit(root, None, None)
    return Copybook(roots, renames, file)


def _inherit(item: Item, usage: str | None, sign: tuple[typing.Literal["leading", "trailing"] | None, bool] | None) -> None:
    if item.usage is None and usage is not None:
        item.usage = usage
    if sign is not None and item.sign_position is None:
        item.sign_position, item.sign_separate = sign
    if item.children:
        if item.picture is not None:
            raise CopybookSyntaxError(
                f"group item {item.name} cannot have a PICTURE clause", file=item.file,
                line=item.line, column=item.column, token=item.picture,
                expected="no PICTURE on a group item",
            )
        child_sign = (item.sign_position, item.sign_separate) if item.sign_position else sign
        for child in item.children:
            _inherit(child, item.usage, child_sign)
    elif item.picture is None and (item.usage or "") not in NO_PICTURE_USAGES:
        raise CopybookSyntaxError(
            f"elementary item {item.name} has no PICTURE clause", file=item.file,
            line=item.line, column=item.column, token=item.name,
            expected="a PICTURE clause, subordinate items, or USAGE COMP-1/COMP-2/INDEX/POINTER",
        )


def parse_copybook(
    text: str,
    *,
    file: str = "<copybook>",
    source_format: SourceFormat = "fixed",
    tab_width: int = 8,
    copy_paths: Sequence[str | Path] = (),
    debug_lines: bool = False,
) -> Copybook:
    """Parse copybook text into a :class:`Copybook` (see the module documentation)."""
    tokens = tokenize(
        text, file, source_format=source_format, tab_width=tab_width, debug_lines=debug_lines
    )
    if any(t.kind == "word" and t.upper == "COPY" for t in tokens):
        tokens = _expand_copy(
            tokens, search_path=[Path(p) for p in copy_paths], source_format=source_format,
            tab_width=tab_width, stack=(),
        )
    if any(t.kind == "word" and t.upper == "REPLACE" for t in tokens):
        tokens = _apply_replace_statements(tokens)
    entries = _Parser(tokens).entries()
    return _build_tree(entries, file)


def parse_file(
    path: str | Path,
    *,
    source_format: SourceFormat = "fixed",
    tab_width: int = 8,
    copy_paths: Sequence[str | Path] = (),
    debug_lines: bool = False,
) -> Copybook:
    """Read and parse a copybook file."""
    p = Path(path)
    return parse_copybook(
        _read_text(p), file=str(p), source_format=source_format, tab_width=tab_width,
        copy_paths=copy_paths, debug_lines=debug_lines,
    )
