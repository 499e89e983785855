"""Hierarchical records (Cobrix's ``segment-children:N = "PARENT => CHILD1,CHILD2"``).

A multisegment file whose segments form a tree: a record of the *root* segment starts a new
output row, and the records that follow it (its children, their children...) nest inside
it. Each segment is a REDEFINES group named by ``redefine_segment_id_map:N``; the child
segments of a parent become arrays appended, in copybook order, after the fields of the
parent's group, and disappear from their own place in the record.

As Cobrix (``RecordExtractors.extractHierarchicalRecord``): the children of a parent are
the records after it whose segment maps to the child group, up to the next record of a
segment id on the path from the root to the parent; records before the first root record
are dropped; ``Record_Id`` of a row is the number of the record after its last one (the
next root, or the end of the file or split), ``Record_Byte_Length`` the bytes of all its
records.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from .errors import CopybookLayoutError
from .layout import Group, Layout, OutputNode, identifier

__all__ = ["Hierarchy", "RecordGroup", "group_records", "nest_outputs"]


@dataclass
class Hierarchy:
    """The segment tree of a layout under ``segment-children`` options."""

    #: parent segment group id -> its child groups, in copybook order
    children_of: dict[int, list[Group]]
    #: ids of the child segment groups
    child_ids: set[int]
    #: segment id -> identifier (upper case) of the group it populates
    group_of_segment: dict[str, str]
    #: segment ids of the root segment
    root_ids: frozenset[str]

    @classmethod
    def resolve(cls, layout: Layout, options: Any) -> Hierarchy | None:
        """The hierarchy of ``options`` (None without ``segment-children``); a name that is
        not a segment redefine, or more or fewer than one root, is a located error."""
        from .options import OptionsError

        pairs = getattr(options, "segment_children", ()) or ()
        if not pairs:
            return None
        where = "option segment-children"
        if getattr(options, "segment_id_levels", ()) or getattr(options, "segment_id_root", None):
            raise OptionsError(
                "ID fields generation is not supported for hierarchical records reader"
                " (segment_id_level*/segment_id_root with segment-children)",
                where=where, hint="drop the segment_id_level*/segment_id_root options",
            )
        if not getattr(options, "segment_field", None) or not getattr(options, "redefine_segment_id_map", ()):
            raise OptionsError(
                "segment-children needs segment_field and redefine_segment_id_map:N",
                where=where,
                hint='set -o segment_field=SEGMENT-ID and -o "redefine-segment-id-map:1=PARENT => ID"',
            )
        seg_map = getattr(options, "redefine_segment_id_map", ()) or ()
        group_of_segment = {sid: identifier(name).upper() for name, ids in seg_map for sid in ids}
        redefine_names = {identifier(name).upper() for name, _ids in seg_map}
        groups = {
            n.identifier.upper(): n for n in layout.walk()
            if isinstance(n, Group) and n.identifier.upper() in redefine_names
        }
        known = ", ".join(sorted(groups)) or "none"
        for name in sorted(redefine_names - set(groups)):
            raise CopybookLayoutError(
                f"redefine_segment_id_map names {name}, which is no group of the copybook",
                where="option redefine_segment_id_map", hint=f"segment groups found: {known}",
            )
        parent_of: dict[str, str] = {}
        for parent, kids in pairs:
            for role, name in [("parent", parent), *(("child", k) for k in kids)]:
                if identifier(name).upper() not in groups:
                    raise CopybookLayoutError(
                        f"{role} {name!r} of \"{parent} => {','.join(kids)}\" is not a segment redefine",
                        where=where,
                        hint=f"name groups given in redefine_segment_id_map: {known}",
                    )
            for kid in kids:
                parent_of[identifier(kid).upper()] = identifier(parent).upper()
        roots = [name for name in groups if name not in parent_of]
        if len(roots) != 1:
            raise CopybookLayoutError(
                f"only one root segment is allowed, found {len(roots)}: {', '.join(roots) or 'none'}",
                where=where, hint="every segment but the root must be the child of another",
            )
        order = [n for n in layout.walk() if isinstance(n, Group) and n.identifier.upper() in groups]
        children_of: dict[int, list[Group]] = {}
        for parent in order:
            children_of[id(parent)] = [
                g for g in order if parent_of.get(g.identifier.upper()) == parent.identifier.upper()
            ]
        return cls(
            children_of={k: v for k, v in children_of.items() if v},
            child_ids={id(groups[name]) for name in parent_of},
            group_of_segment=group_of_segment,
            root_ids=frozenset(sid for sid, g in group_of_segment.items() if g == roots[0]),
        )


def nest_outputs(outputs: list[OutputNode], layout: Layout, options: Any) -> list[OutputNode]:
    """The output tree with each child segment's node moved to the end of its parent's
    (marked ``segment_array``: an array of the child's records)."""
    hierarchy = Hierarchy.resolve(layout, options)
    if hierarchy is None:
        return outputs
    moved: dict[int, OutputNode] = {}

    def strip(outs: list[OutputNode]) -> list[OutputNode]:
        kept = []
        for out in outs:
            if id(out.node) in hierarchy.child_ids:
                moved[id(out.node)] = out
                continue
            if out.children is not None:
                out.children = strip(out.children)
            kept.append(out)
        return kept

    top = strip(outputs)

    def attach(outs: list[OutputNode]) -> None:
        for out in outs:
            if out.children is None:
                continue
            attach(out.children)
            for child in hierarchy.children_of.get(id(out.node), []):
                node = moved.get(id(child))
                if node is not None:
                    node.segment_array = True
                    out.children.append(node)

    attach(top)
    attach([m for m in moved.values()])
    return top


@dataclass
class RecordGroup:
    """A root record and the records after it, up to the next root record.

    ``number`` is the row's ``Record_Id`` (Cobrix: the number of the record after the
    group's last one), ``offset`` and ``first`` the byte offset and number of the root
    record, ``records`` the (segment id, payload) of every record, root first."""

    number: int
    offset: int
    first: int
    records: list[tuple[str | None, bytes]] = field(default_factory=list)
    #: (record number, file offset) of each record (for error reports)
    places: list[tuple[int, int]] = field(default_factory=list)

    @property
    def payload(self) -> bytes:
        return self.records[0][1]

    @property
    def byte_length(self) -> int:
        return sum(len(p) for _s, p in self.records)


def group_records(frames: Iterable[Any], segment_id: Any, root_ids: frozenset[str]) -> Iterator[Any]:
    """``frames`` (with ``number``, ``offset``, ``payload``) as :class:`RecordGroup` s; a frame
    of another kind (a truncated record) passes through, after the group before it."""
    from .framing import TruncatedRecord

    current: RecordGroup | None = None
    last = None
    for frame in frames:
        if isinstance(frame, TruncatedRecord):
            yield frame
            continue
        payload = frame.payload
        last = frame.number
        seg = segment_id(payload)
        if seg in root_ids:
            if current is not None:
                current.number = frame.number
                yield current
            current = RecordGroup(number=frame.number, offset=frame.offset, first=frame.number)
        if current is not None:
            current.records.append((seg, payload))
            current.places.append((frame.number, frame.offset))
    if current is not None:
        current.number = (last if last is not None else current.first) + 1
        yield current
