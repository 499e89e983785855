"""Plain value classes (canonical/plain.py): what ``@dataclass`` gave the copybook parser,
layout and decoder classes (repr, eq, hash, frozen, replace, pickling), with hand-written
``__init__`` methods, each checked here against its class's fields."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle

import pytest

from coupler.canonical.errors import Problem
from coupler.canonical.plain import NEW, Plain
from coupler.translators.copybook import (
    batch,
    batch_files,
    codepages,
    decoder,
    layout,
    lexer,
    options,
    parser,
    picture,
)


def _subclasses(cls: type) -> list[type]:
    found = []
    for sub in cls.__subclasses__():
        found += [sub, *_subclasses(sub)]
    return found


CLASSES = [c for c in _subclasses(Plain) if c.__module__.startswith("coupler.")]


def test_every_class_of_the_copybook_decode_path_is_here() -> None:
    assert {Problem, lexer.Token, lexer._Line, codepages.CodePage, codepages.AsciiCodec, picture.EditPosition,
            picture.DecodeContext, picture.FieldType, parser.Literal, parser.Condition, parser.Item, parser.Renames,
            parser.Copybook, layout.Occurs, layout.Node, layout.Group, layout.Field, layout.Layout, layout.OutputNode,
            options.CopybookOptions, batch.BadField, batch.DecodedBatch, decoder.BadRecord, decoder.DecodeStats,
            batch_files.FileBatch} <= set(CLASSES)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__qualname__)
def test_init_takes_every_field_in_order_with_its_default(cls: type) -> None:
    """A field added to a class without its ``__init__`` parameter (or the other way round),
    or a default that differs from the class's, fails here."""
    params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    assert [p.name for p in params] == list(cls._fields)  # type: ignore[attr-defined]
    assert len({p.kind for p in params}) <= 1  # all positional-or-keyword, or all keyword-only
    for p in params:
        if p.default is NEW:
            assert p.name not in vars(cls) and not any(p.name in vars(base) for base in cls.__mro__[1:])
        elif p.default is not inspect.Parameter.empty:
            assert getattr(cls, p.name) == p.default, p.name


def test_a_frozen_class_as_a_frozen_dataclass() -> None:
    tok = lexer.Token("PIC", "word", "a.cpy", 3, 12)
    assert repr(tok) == "Token(text='PIC', kind='word', file='a.cpy', line=3, column=12, prefix='')"
    assert tok == lexer.Token("PIC", "word", "a.cpy", 3, 12, "") and hash(tok) == hash(lexer.Token(*tok.__dict__.values()))
    assert tok != lexer.Token("PIC", "word", "a.cpy", 3, 13)
    assert tok != ("PIC", "word", "a.cpy", 3, 12, "")
    with pytest.raises(dataclasses.FrozenInstanceError):
        tok.text = "X"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del tok.text  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(tok)) == tok and copy.deepcopy(tok) == tok and copy.copy(tok) == tok
    moved = tok._replace(line=4)
    assert (moved.line, moved.text, tok.line) == (4, "PIC", 3)
    with pytest.raises(TypeError):
        tok._replace(nothing=1)
    assert Problem("a.b", "bad") == Problem("a.b", "bad", (), None) and str(Problem("a.b", "bad")) == "a.b: bad"
    match tok:
        case lexer.Token(text, kind):
            assert (text, kind) == ("PIC", "word")


def test_a_mutable_class_as_a_dataclass() -> None:
    item = parser.Item(5, "A")
    other = parser.Item(5, "A")
    assert item == other and item.children is not other.children and item.children == []
    item.children.append(parser.Item(10, "B"))
    assert item != other
    with pytest.raises(TypeError):
        hash(item)
    assert repr(parser.Copybook([])) == "Copybook(records=[], renames=[], file='<copybook>')"
    assert pickle.loads(pickle.dumps(item)) == item


def test_eq_false_is_identity_and_hidden_and_uncompared_fields() -> None:
    node = layout.Field(name="A", identifier="A", level=5, path=("A",))
    same = layout.Field(name="A", identifier="A", level=5, path=("A",))
    assert node != same and node == node and len({node, same}) == 2
    with pytest.raises(TypeError):
        layout.Field("A", "A", 5, ("A",))  # type: ignore[misc]  # keyword-only, as kw_only=True
    ft = picture.field_type("Z9.99")
    assert ft.edit and "edit=" not in repr(ft) and repr(ft).startswith("FieldType(picture='Z9.99', usage='DISPLAY'")
    assert ft._replace(size=9).size == 9 and ft._replace(size=9).edit == ft.edit
    stats = decoder.DecodeStats(records=2, offset=10, on_bad_field=print)
    assert stats == decoder.DecodeStats(records=2) and "on_bad_field" not in repr(stats)


def test_state_set_by_init_survives_pickling_and_options_check_again_on_replace() -> None:
    page = codepages.code_page("cp037")
    again = pickle.loads(pickle.dumps(page))
    assert again == page and again.decode(b"\xc1") == "A" and again.encode("A") == b"\xc1"
    assert "_decode_map" not in repr(page)
    opts = options.CopybookOptions.from_mapping({"record_format": "V"})
    assert opts.replace(record_length=10).record_length == 10 and opts.record_length is None
    with pytest.raises(options.OptionsError, match="record_format D"):
        opts.replace(record_format="D")
    assert pickle.loads(pickle.dumps(opts)) == opts and opts.to_dict() == {"record_format": "V"}
    ctx = opts.decode_context()
    assert ctx.text_codec is ctx.text_codec and pickle.loads(pickle.dumps(ctx)) == ctx
