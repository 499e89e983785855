"""Record layout: a parsed copybook with byte offsets, sizes and Cobrix-style names.

:func:`build_layout` turns a :class:`~.parser.Copybook` into a :class:`Layout`, a tree of
:class:`Group` and :class:`Field` nodes. Every node has its name as written, its
identifier as Cobrix makes it (``-`` becomes ``_``, ``:`` and ``'`` are removed), its path
of identifiers from the record, level, 0-based ``offset`` inside the record, the ``size``
of one occurrence, ``occurs`` (min, max, depending on), ``redefines`` / ``is_redefined``
and, for elementary items, the :class:`~.picture.FieldType` that decodes its bytes.

Offsets follow Cobrix (and COBOL): a REDEFINES item starts where the item it redefines
starts and the items of a redefinition block all span the largest of them; OCCURS items
take ``size * max`` bytes; a SYNCHRONIZED binary item is aligned on its natural boundary
(counted from the start of the record) by inserting slack bytes before it, and an
occurring group that contains such items is padded to a multiple of its alignment, as
IBM COBOL does. Several 01 records in one copybook all start at offset 0 (they describe
the same record area).

:meth:`Layout.layout_text` prints the layout exactly as Cobrix's
``Copybook.generateRecordLayoutPositions()`` does; :meth:`Layout.rows` gives the same
information as JSON-ready dicts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from coupler.canonical.plain import NEW, Plain

from .errors import CopybookLayoutError
from .parser import Condition, Copybook, Item


def identifier(name: str) -> str:
    """A copybook name as Cobrix turns it into a column name: ``-`` -> ``_``, no ``:`` or ``'``."""
    return name.replace("-", "_").replace(":", "").replace("'", "")


class Occurs(Plain, frozen=True):
    """An OCCURS clause: ``min``..``max`` times, ``depending_on`` the identifier of the counter."""

    min: int
    max: int
    depending_on: str | None = None

    def __init__(self, min: int, max: int, depending_on: str | None = None) -> None:
        self.__dict__.update(min=min, max=max, depending_on=depending_on)


class Node(Plain, eq=False):
    """What groups and elementary fields share."""

    name: str
    identifier: str
    level: int
    path: tuple[str, ...]
    offset: int = 0
    size: int = 0  # bytes of one occurrence (slack bytes included)
    span: int = 0  # bytes taken in the parent, as Cobrix reports them (redefinition blocks share the largest)
    slack: int = 0  # SYNCHRONIZED slack bytes inserted before this node
    occurs: Occurs | None = None
    redefines: str | None = None  # identifier of the redefined item
    is_redefined: bool = False
    renames: bool = False  # a level-66 RENAMES item (a view of bytes other items own)
    is_filler: bool = False
    conditions: list[Condition]
    item: Item | None = None

    def __init__(
        self, *, name: str, identifier: str, level: int, path: tuple[str, ...], offset: int = 0, size: int = 0,
        span: int = 0, slack: int = 0, occurs: Occurs | None = None, redefines: str | None = None,
        is_redefined: bool = False, renames: bool = False, is_filler: bool = False,
        conditions: list[Condition] = NEW, item: Item | None = None,
    ) -> None:
        self.name = name
        self.identifier = identifier
        self.level = level
        self.path = path
        self.offset = offset
        self.size = size
        self.span = span
        self.slack = slack
        self.occurs = occurs
        self.redefines = redefines
        self.is_redefined = is_redefined
        self.renames = renames
        self.is_filler = is_filler
        self.conditions = [] if conditions is NEW else conditions
        self.item = item

    @property
    def is_group(self) -> bool:
        return False

    @property
    def total_size(self) -> int:
        """Bytes of all occurrences."""
        return self.size * (self.occurs.max if self.occurs else 1)

    @property
    def end(self) -> int:
        """Offset just after the last occurrence."""
        return self.offset + self.total_size

    @property
    def dotted_path(self) -> str:
        return ".".join(self.path)

    @property
    def where(self) -> str:
        return self.item.where if self.item else "<copybook>"


class Group(Node, eq=False):
    """A group item: its subordinate nodes in order."""

    children: list[Node]
    alignment: int = 1

    def __init__(
        self, *, name: str, identifier: str, level: int, path: tuple[str, ...], offset: int = 0, size: int = 0,
        span: int = 0, slack: int = 0, occurs: Occurs | None = None, redefines: str | None = None,
        is_redefined: bool = False, renames: bool = False, is_filler: bool = False,
        conditions: list[Condition] = NEW, item: Item | None = None, children: list[Node] = NEW, alignment: int = 1,
    ) -> None:
        self.name = name
        self.identifier = identifier
        self.level = level
        self.path = path
        self.offset = offset
        self.size = size
        self.span = span
        self.slack = slack
        self.occurs = occurs
        self.redefines = redefines
        self.is_redefined = is_redefined
        self.renames = renames
        self.is_filler = is_filler
        self.conditions = [] if conditions is NEW else conditions
        self.item = item
        self.children = [] if children is NEW else children
        self.alignment = alignment

    @property
    def is_group(self) -> bool:
        return True


class Field(Node, eq=False):
    """An elementary item with the type that decodes and encodes its bytes."""

    field_type: Any = None  # picture.FieldType
    picture: str | None = None
    usage: str = "DISPLAY"
    is_dependee: bool = False  # the counter of an OCCURS DEPENDING ON

    def __init__(
        self, *, name: str, identifier: str, level: int, path: tuple[str, ...], offset: int = 0, size: int = 0,
        span: int = 0, slack: int = 0, occurs: Occurs | None = None, redefines: str | None = None,
        is_redefined: bool = False, renames: bool = False, is_filler: bool = False,
        conditions: list[Condition] = NEW, item: Item | None = None, field_type: Any = None,
        picture: str | None = None, usage: str = "DISPLAY", is_dependee: bool = False,
    ) -> None:
        self.name = name
        self.identifier = identifier
        self.level = level
        self.path = path
        self.offset = offset
        self.size = size
        self.span = span
        self.slack = slack
        self.occurs = occurs
        self.redefines = redefines
        self.is_redefined = is_redefined
        self.renames = renames
        self.is_filler = is_filler
        self.conditions = [] if conditions is NEW else conditions
        self.item = item
        self.field_type = field_type
        self.picture = picture
        self.usage = usage
        self.is_dependee = is_dependee


FieldTypeFactory = Callable[[Item], Any]


def default_field_type(item: Item, **options: Any) -> Any:
    """The :class:`~.picture.FieldType` of an elementary item (through ``picture.field_type``)."""
    from . import picture  # the elementary-item half; imported late to keep the parser usable alone

    return picture.field_type(
        item.picture,
        item.usage or "DISPLAY",
        sign_position=item.sign_position,
        sign_separate=item.sign_separate,
        synchronized=item.synchronized,
        blank_when_zero=item.blank_when_zero,
        justified_right=item.justified_right,
        where=item.where,
        **options,
    )


class Layout(Plain):
    """The layout of a copybook: its records (top-level nodes) and the record size."""

    records: list[Node]
    size: int
    file: str = "<copybook>"
    renames: list[Any]

    def __init__(self, records: list[Node], size: int, file: str = "<copybook>", renames: list[Any] = NEW) -> None:
        self.records = records
        self.size = size
        self.file = file
        self.renames = [] if renames is NEW else renames

    def walk(self) -> Iterator[Node]:
        """Every node, depth first, in copybook order."""

        def rec(node: Node) -> Iterator[Node]:
            yield node
            if isinstance(node, Group):
                for child in node.children:
                    yield from rec(child)

        for r in self.records:
            yield from rec(r)

    def fields(self) -> Iterator[Field]:
        return (n for n in self.walk() if isinstance(n, Field))

    def find(self, name: str) -> Node:
        """The node called ``name`` (copybook name or identifier, any case, or a dotted path)."""
        key = identifier(name).upper()
        found = [
            n for n in self.walk()
            if n.identifier.upper() == key or n.dotted_path.upper() == key
        ]
        if not found:
            raise CopybookLayoutError(f"no field named {name!r} in the copybook", where=self.file)
        if len(found) > 1:
            raise CopybookLayoutError(
                f"{len(found)} fields are named {name!r}", where=self.file,
                hint="qualify it with its path, e.g. " + found[0].dotted_path,
            )
        return found[0]

    @property
    def has_depending_on(self) -> bool:
        return any(n.occurs and n.occurs.depending_on for n in self.walk())

    def layout_text(self) -> str:
        """The layout as Cobrix's ``generateRecordLayoutPositions()`` prints it."""
        counter = 0

        def line(node: Node, indent: str) -> str:
            mods = ("r" if node.is_redefined else "") + ("R" if node.redefines else "") + (
                "[]" if node.occurs else ""
            )
            if isinstance(node, Field) and node.is_dependee:
                mods = "D" + mods
            start = node.offset + 1
            length = node.span
            end = start + length - 1
            return (
                f"{indent}{node.level} {node.identifier}".ljust(39)
                + mods.ljust(11)
                + str(counter).rjust(5)
                + str(start).rjust(7)
                + str(end).rjust(7)
                + str(length).rjust(7)
            )

        def group_text(children: list[Node], indent: str) -> str:
            nonlocal counter
            parts = []
            for child in children:
                if child.renames:  # Cobrix does not print level-66 items
                    continue
                counter += 1
                text = line(child, indent)
                if isinstance(child, Group):
                    text += "\n" + group_text(child.children, indent + "  ")
                parts.append(text)
            return "\n".join(parts)

        header = "-------- FIELD LEVEL/NAME --------- --ATTRIBS--    FLD  START     END  LENGTH\n\n"
        return header + group_text(self.records, "")

    def rows(self) -> list[dict[str, Any]]:
        """One dict per node: level, name, path, start, end (1-based inclusive), length (the
        bytes the node spans in its parent, as Cobrix reports it: a redefinition block spans
        its widest item), size (one occurrence's own bytes), occurs, usage, picture,
        attributes."""
        out = []
        for node in self.walk():
            attrs = ""
            if isinstance(node, Field) and node.is_dependee:
                attrs += "D"
            attrs += ("r" if node.is_redefined else "") + ("R" if node.redefines else "")
            attrs += "[]" if node.occurs else ""
            attrs += "66" if node.renames else ""
            out.append({
                "level": node.level,
                "name": node.name,
                "path": node.dotted_path,
                "start": node.offset + 1,
                "end": node.offset + node.span,
                "length": node.span,
                "size": node.size,  # bytes of one occurrence, as the compiler's LENGTH OF
                "occurs": node.occurs.max if node.occurs else None,
                "usage": node.usage if isinstance(node, Field) else (
                    node.item.usage if node.item and node.item.usage else None
                ),
                "picture": node.picture if isinstance(node, Field) else None,
                "attributes": attrs,
            })
        return out


class _Builder:
    def __init__(self, factory: FieldTypeFactory, file: str):
        self.factory = factory
        self.file = file

    def node(self, item: Item, path: tuple[str, ...], offset: int) -> Node:
        ident = identifier(item.name)
        occurs = None
        if item.occurs_max is not None:
            occurs = Occurs(
                item.occurs_min if item.occurs_min is not None else item.occurs_max,
                item.occurs_max,
                identifier(item.depending_on) if item.depending_on else None,
            )
        common: dict[str, Any] = {
            "name": item.name,
            "identifier": ident,
            "level": item.level,
            "path": (*path, ident),
            "occurs": occurs,
            "redefines": identifier(item.redefines) if item.redefines else None,
            "is_filler": item.is_filler,
            "conditions": list(item.conditions),
            "item": item,
        }
        if item.children:
            group = Group(**common)
            self.place_children(group, item.children, offset)
            return group
        try:
            ftype = self.factory(item)
        except CopybookLayoutError:
            raise
        except Exception as exc:  # a CouplerError from picture.py passes through unchanged
            from coupler.canonical.errors import CouplerError

            if isinstance(exc, CouplerError):
                raise
            raise CopybookLayoutError(
                f"cannot type {item.name}: {exc}", where=item.where
            ) from exc
        fld = Field(
            **common,
            field_type=ftype,
            picture=item.picture,
            usage=item.usage or "DISPLAY",
        )
        align = int(getattr(ftype, "alignment", 1) or 1) if item.synchronized else 1
        fld.slack = (-offset) % align if align > 1 else 0
        fld.offset = offset + fld.slack
        fld.size = int(ftype.size)
        if occurs and align > 1:
            fld.size += (-fld.size) % align
        return fld

    def place_children(self, group: Group, items: list[Item], offset: int) -> None:
        cursor = offset
        block: list[Node] = []  # the current redefinition block
        # its items by identifier (upper case): a REDEFINES is checked and marked in constant
        # time, not by a pass over the block (quadratic in a block of thousands of REDEFINES)
        named: dict[str, list[Node]] = {}
        block_start = offset
        align = 1
        for child_item in items:
            if child_item.redefines:
                if not block:
                    raise CopybookLayoutError(
                        f"{child_item.name} REDEFINES {child_item.redefines} but is the first item of its group",
                        where=child_item.where,
                    )
                target = identifier(child_item.redefines).upper()
                if target not in named:
                    raise CopybookLayoutError(
                        f"{child_item.name} REDEFINES {child_item.redefines}, which is not the item just before it",
                        where=child_item.where,
                        hint="a REDEFINES must follow the item it redefines at the same level",
                    )
                child = self.node(child_item, group.path, block_start)
                block[-1].is_redefined = True  # as Cobrix marks it
                for b in named[target]:
                    b.is_redefined = True
                named[target] = []  # marked: each item once, even of a name many share (FILLER)
                block.append(child)
            else:
                self._close_block(block)
                if block:
                    cursor = block[0].offset + block[0].span
                block_start = cursor
                child = self.node(child_item, group.path, cursor)
                block = [child]
                named = {}
            named.setdefault(child.identifier.upper(), []).append(child)
            group.children.append(child)
            if isinstance(child, Group):
                align = max(align, child.alignment)
            elif child_item.synchronized:
                align = max(align, int(getattr(getattr(child, "field_type", None), "alignment", 1) or 1))
        self._close_block(block)
        if block:
            cursor = block[0].offset + block[0].span
        size = cursor - offset
        if group.occurs and align > 1:
            size += (-size) % align
        group.offset = offset
        group.size = size
        group.alignment = align

    @staticmethod
    def _close_block(block: list[Node]) -> None:
        if not block:
            return
        widest = max(b.slack + b.total_size for b in block)
        for b in block:
            b.span = widest - b.slack


#: the longest record a layout may describe: 2 GiB - 1, what the decoders' 32-bit offsets
#: reach (a mainframe record is at most 32,760 bytes in RDW files, a few MB elsewhere)
MAX_RECORD_BYTES = 2**31 - 1


#: the most values one record may hold once its OCCURS are expanded: each costs the
#: decoders about 50 bytes of memory, so 4 million keep a decode under 300 MB
MAX_RECORD_VALUES = 4_000_000


def _values(node: Node) -> tuple[int, Node | None]:
    """How many values ``node`` holds with its OCCURS expanded, and its largest table (the
    outermost OCCURS item of the child holding the most values)."""
    times = node.occurs.max if node.occurs else 1
    if isinstance(node, Group):
        inner = [_values(c) for c in node.children]
        each = sum(n for n, _ in inner)
        widest = max(inner, key=lambda v: v[0], default=(0, None))[1]
    else:
        each, widest = 1, None
    table = node if node.occurs else widest
    return times * each, table


def build_layout(
    copybook: Copybook, *, field_type: FieldTypeFactory | None = None, pointer_size: int = 4
) -> Layout:
    """Compute offsets and sizes for every item of ``copybook``.

    ``pointer_size`` is the size of USAGE POINTER, PROCEDURE-POINTER and FUNCTION-POINTER
    items: 4 bytes as IBM Enterprise COBOL (31-bit), 8 for 64-bit programs."""
    if field_type is None:
        field_type = (
            default_field_type if pointer_size == 4
            else (lambda item: default_field_type(item, pointer_size=pointer_size))
        )
    builder = _Builder(field_type, copybook.file)
    records: list[Node] = []
    cursor = 0
    run: list[Item] = []  # consecutive top-level items below level 01 (a copybook without 01)

    def place_run() -> None:
        nonlocal cursor
        if not run:
            return
        # they follow each other (and REDEFINE each other) as the items of one group would
        area = Group(name="", identifier="", level=0, path=())
        builder.place_children(area, list(run), cursor)
        records.extend(area.children)
        cursor = area.offset + area.size
        run.clear()

    for item in copybook.records:
        if item.level not in (1, 77):
            run.append(item)
            continue
        place_run()
        node = builder.node(item, (), 0)
        _Builder._close_block([node])
        records.append(node)
        cursor = node.offset + node.span
    place_run()
    size = max((r.offset + r.span for r in records), default=0)
    layout = Layout(records, size, copybook.file, list(copybook.renames))
    _place_renames(layout, copybook, builder)
    _mark_dependees(layout)
    if not layout.has_depending_on:  # else the counts come from the data, checked before use
        check_bounds(layout)
    return layout


def check_bounds(layout: Layout) -> None:
    """Refuse, in one line, a record too long for the decoders (:data:`MAX_RECORD_BYTES`)
    or holding too many values once its OCCURS are expanded (:data:`MAX_RECORD_VALUES`).
    Checked by :func:`build_layout` when no OCCURS DEPENDING ON is in the layout (else the
    counts come from the data) and by the vectorised decoder, which lays every record out
    with each OCCURS at its maximum."""
    if layout.size > MAX_RECORD_BYTES:
        big = max(layout.records, key=lambda r: r.offset + r.span)
        raise CopybookLayoutError(
            f"record {big.name or '(unnamed)'} is {layout.size:,} bytes long, more than the {MAX_RECORD_BYTES:,} a "
            "record can have", where=layout.file, hint="check its OCCURS counts and PIC sizes")
    values, table = max((_values(r) for r in layout.records), key=lambda v: v[0], default=(0, None))
    if values > MAX_RECORD_VALUES and table is not None:
        raise CopybookLayoutError(
            f"a record has {values:,} values once its OCCURS are expanded, more than the {MAX_RECORD_VALUES:,} "
            f"a record can have (the largest table: {table.name}, OCCURS {table.occurs.max if table.occurs else 1:,} "
            "TIMES)", where=table.where or layout.file, hint="check its OCCURS counts")


def _place_renames(layout: Layout, copybook: Copybook, builder: _Builder) -> None:
    """Level-66 items become fields over the bytes they rename, placed last in their record:
    the renamed item's own type when one elementary item is renamed, else an alphanumeric
    view (PIC X(n)) of the bytes from the first item to the end of the THRU item."""
    if not copybook.renames:
        return
    from .parser import Item

    for ren in copybook.renames:
        root_item = copybook.records[ren.record] if ren.record < len(copybook.records) else None
        root = next((r for r in layout.records if r.item is root_item), None)
        scope = [n for n in _walk(root)] if root is not None else list(layout.walk())
        if root is not None and root.level not in (1, 77):
            scope = list(layout.walk())  # no 01: the renamed items are top-level items

        def find(name: str, scope: list[Node] = scope, ren: Any = ren, root: Node | None = root) -> Node:
            key = identifier(name).upper()
            hits = [n for n in scope if n.identifier.upper() == key and n is not root]
            if not hits:
                raise CopybookLayoutError(
                    f"66 {ren.name} RENAMES {name}, which is not an item of the record",
                    where=ren.where, hint="RENAMES names items of the record it follows (not 01, 66, 77 or 88)",
                )
            node = hits[0]
            if node.occurs or any(a.occurs for a in _ancestors_of(layout, node)):
                raise CopybookLayoutError(
                    f"66 {ren.name} RENAMES {name}, which is (or is inside) an OCCURS table",
                    where=ren.where,
                )
            return node

        first = find(ren.start)
        last = find(ren.thru) if ren.thru else first
        if ren.thru and (last.offset < first.offset or last.end <= first.offset):
            raise CopybookLayoutError(
                f"66 {ren.name} RENAMES {ren.start} THRU {ren.thru}, but {ren.thru} does not end after {ren.start}"
                " starts", where=ren.where, hint="THRU names an item that follows the first one",
            )
        start, end = first.offset, max(first.end, last.end)
        item = Item(level=66, name=ren.name, file=ren.file, line=ren.line, column=ren.column)
        if last is first and isinstance(first, Field):
            ftype, picture, usage = first.field_type, first.picture, first.usage
        else:
            item.picture = f"X({end - start})"
            ftype = builder.factory(item)
            picture, usage = item.picture, "DISPLAY"
        parent = root if isinstance(root, Group) and root.level in (1, 77) else None
        fld = Field(
            name=ren.name, identifier=identifier(ren.name), level=66,
            path=((*parent.path, identifier(ren.name)) if parent else (identifier(ren.name),)),
            offset=start, size=end - start, span=end - start, item=item,
            field_type=ftype, picture=picture, usage=usage, renames=True,
        )
        if parent is not None:
            parent.children.append(fld)
        else:
            layout.records.append(fld)


def _walk(node: Node | None) -> Iterator[Node]:
    if node is None:
        return
    yield node
    if isinstance(node, Group):
        for child in node.children:
            yield from _walk(child)


def _ancestors_of(layout: Layout, target: Node) -> list[Node]:
    found: list[Node] = []

    def rec(node: Node, trail: list[Node]) -> bool:
        if node is target:
            found.extend(trail)
            return True
        return isinstance(node, Group) and any(rec(c, [*trail, node]) for c in node.children)

    for r in layout.records:
        if rec(r, []):
            break
    return found


def _mark_dependees(layout: Layout) -> None:
    fields = list(layout.fields())
    for node in layout.walk():
        if not (node.occurs and node.occurs.depending_on):
            continue
        target = node.occurs.depending_on.upper()
        candidates = [f for f in fields if f.identifier.upper() == target]
        if not candidates:
            raise CopybookLayoutError(
                f"{node.name} OCCURS DEPENDING ON {node.item.depending_on if node.item else target},"
                " which is not a field of the copybook",
                where=node.where,
            )
        before = [f for f in candidates if f.offset <= node.offset] or candidates
        counter = before[-1]
        # a text counter needs occurs_mappings (value -> count): the decoder checks that
        counter.is_dependee = True


def depending_on_counter(layout: Layout, node: Node) -> Field:
    """The counter field of an OCCURS DEPENDING ON item (the last one so named before it)."""
    assert node.occurs is not None and node.occurs.depending_on
    target = node.occurs.depending_on.upper()
    candidates = [f for f in layout.fields() if f.identifier.upper() == target]
    before = [f for f in candidates if f.offset <= node.offset] or candidates
    return before[-1]


# ---------------------------------------------------------------------------------------
# the output view: which nodes become keys of decoded records, and under which names


class OutputNode(Plain, eq=False):
    """A node as it appears in decoded records and in the Avro schema.

    ``name`` is the key (the Cobrix identifier, or ``FILLER_n`` / ``FILLER_Pn`` /
    ``FILLER_AFTER_x`` for kept fillers); ``children`` is ``None`` for a field.
    """

    name: str
    node: Node
    children: list[OutputNode] | None = None
    #: a child segment of a hierarchical record: an array of the child's records
    segment_array: bool = False

    def __init__(
        self, name: str, node: Node, children: list[OutputNode] | None = None, segment_array: bool = False,
    ) -> None:
        self.name = name
        self.node = node
        self.children = children
        self.segment_array = segment_array

    @property
    def is_group(self) -> bool:
        return self.children is not None


def output_tree(
    layout: Layout,
    *,
    drop_group_fillers: bool = False,
    drop_value_fillers: bool = True,
    filler_naming_policy: str = "sequence_numbers",
) -> list[OutputNode]:
    """The top-level output nodes of ``layout`` with FILLERs dropped or renamed as Cobrix does.

    Value (elementary) FILLERs are dropped by default, or kept as ``FILLER_P1``, ``FILLER_P2``
    ...; group FILLERs that hold non-filler items are kept as ``FILLER_1``, ``FILLER_2`` ...
    (numbered after their own children) unless ``drop_group_fillers``; groups left without
    children disappear. ``filler_naming_policy="previous_field_name"`` names a kept filler
    ``FILLER_AFTER_<previous name>`` instead.
    """
    if filler_naming_policy not in ("sequence_numbers", "previous_field_name"):
        raise CopybookLayoutError(
            f"unknown filler_naming_policy {filler_naming_policy!r}",
            hint="use sequence_numbers or previous_field_name",
        )
    counters = {"group": 0, "value": 0}

    def group_children(group: Group) -> tuple[list[OutputNode], bool]:
        out: list[OutputNode] = []
        previous = group.identifier
        has_non_fillers = False
        for child in group.children:
            if isinstance(child, Group):
                kids, kid_has = group_children(child)
                is_filler = child.is_filler or not kid_has
                name = child.identifier
                if child.is_filler and kid_has and not drop_group_fillers:
                    counters["group"] += 1
                    name = (
                        f"FILLER_{counters['group']}"
                        if filler_naming_policy == "sequence_numbers"
                        else f"FILLER_AFTER_{previous}"
                    )
                    is_filler = False
                keep = bool(kids) and not (is_filler and (drop_group_fillers or child.is_filler))
                if keep:
                    out.append(OutputNode(name, child, kids))
                if not is_filler:
                    has_non_fillers = True
                previous = name
            else:
                name = child.identifier
                if child.is_filler:
                    if drop_value_fillers:
                        previous = name
                        continue
                    counters["value"] += 1
                    name = (
                        f"FILLER_P{counters['value']}"
                        if filler_naming_policy == "sequence_numbers"
                        else f"FILLER_AFTER_{previous}"
                    )
                has_non_fillers = True
                out.append(OutputNode(name, child, None))
                previous = name
        return out, has_non_fillers

    root = Group(name="", identifier="", level=0, path=(), children=list(layout.records))
    top, has_non_fillers = group_children(root)
    if not has_non_fillers or not top:
        raise CopybookLayoutError(
            "the copybook is empty once FILLERs are dropped", where=layout.file,
            hint="set drop_value_fillers=false to keep them",
        )
    return top
