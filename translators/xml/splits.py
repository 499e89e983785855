"""XML files of repeated records cut at record boundaries, each piece a well-formed document
(Spark's ``xml`` split tasks, :mod:`coupler.translators.spark.xml_splits`, and ``coupler xml
decode --jobs``).

How a file splits. The records are the ``element`` children of the document's root (the
record path ``ROOT/element``):

* a file larger than a split is cut at record boundaries: a split starts at a record's
  start tag ``<element`` that directly follows the end tag ``</element>`` of the record
  before it (whitespace between them allowed), found by a byte search near each target
  offset, never by parsing the whole file. A split other than the first is
  read as the file's head (the XML declaration, the root start tag with its namespace
  declarations and any elements before the first record) followed by its bytes and the
  root's end tag (:class:`SplitStream`), so every split is a well-formed document of its own;
* a file whose root is the record element holds one record (one split);
* a record element deeper than the root's children, a UTF-16 file, or a file no larger
  than a split is one split.

A ``</element> <element`` inside a comment, a CDATA section or a processing instruction is
no boundary: a candidate is checked backwards from it (the last opener of each since the
previous boundary must be closed before it), and the head ends at the first record's start
tag only when it parses as the root's start. One inside a record (an element of the record's
own name nested in it) cannot be told without parsing: a schema whose record type can hold an
element of its name is read whole (:func:`plan_xml_job`), and a split that turns out not to be
whole records fails with a one-line error saying so.
"""

from __future__ import annotations

import io
import mmap
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from coupler.canonical.errors import CouplerError
from coupler.translators.sizing import guided_split_bytes, tail_floor

#: default bytes per split: an eighth of a copybook file's (``splits.DEFAULT_SPLIT_BYTES``),
#: for XML decodes some 15 times fewer bytes per second than copybook records, and the last
#: splits take a fraction of a second, not half of one
XML_SPLIT_BYTES = 16 * 1024 * 1024
#: the smallest split of the last wave: 128 KB of 16 MB, about 8 ms of a core's work (XML
#: decodes ~18 MB/s per core; a split's own cost is ~1.6 ms of CPU). 53 MB on two slots: 10
#: splits, the last two 0.15 MB; with a sixteenth, before, 7, the last two 1.2 MB (~65 ms: the
#: slots ended up to that far apart)
XML_TAIL_DIVISOR = 128
_WINDOW = 1 << 20  # bytes searched for a boundary per step
_DONTNEED = getattr(mmap, "MADV_DONTNEED", None)  # None: no madvise (Windows)
_FOLIO = 2 << 20  # the largest folio of the page cache (a huge page)


class XmlSplitError(CouplerError):
    """An XML input cannot be planned for the split tasks."""


@dataclass(frozen=True)
class XmlSplit:
    """Bytes ``start``..``end`` of ``path``; ``head`` bytes of the file's start go before
    them and ``tail`` after them (a split in the middle of a file); ``record_path`` is
    ``ROOT/element``, or empty when the document is the record."""

    path: str
    file_id: int
    start: int
    end: int
    index: int
    record_path: str
    head: int = 0
    tail: bytes = b""


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _document_shape(path: str, element: str) -> tuple[str, str, str, int] | None:
    """(root local name, root tag as written, record tag as written, offset of the first
    record's start tag) of a document whose records are the root's ``element`` children;
    None when the root is the element or the records are not its children."""
    from lxml import etree

    root_raw = root_local = None
    depth = 0
    try:
        for event, elem in etree.iterparse(path, events=("start", "end"), resolve_entities=False, no_network=True,
                                           load_dtd=False, huge_tree=True):
            if event == "end":
                depth -= 1
                if depth == 0:
                    break
                continue
            depth += 1
            raw = f"{elem.prefix}:{_local(elem.tag)}" if elem.prefix else _local(elem.tag)
            if depth == 1:
                root_local, root_raw = _local(elem.tag), raw
                if root_local == _local(element):
                    return None
            elif depth == 2 and _local(elem.tag) == _local(element):
                break
        else:
            return None
    except etree.XMLSyntaxError:
        return None  # the task reports the document's error where it is
    if depth != 2 or root_raw is None or root_local is None:
        return None
    first = _first_record(path, raw, root_raw)
    if first is None:
        return None
    return root_local, root_raw, raw, first


def _first_record(path: str, raw: str, root_raw: str) -> int | None:
    """The offset of the first record's start tag: the first ``<raw`` whose bytes before it
    (the head every split is read after) are a well-formed start of the document, the root
    open and nothing else (a ``<rec`` in a comment of the prologue, a CDATA section or a
    header element before the first record is not it: the head stopped there made every
    split but the first unreadable). None when none of the first 100 is."""
    from lxml import etree

    start_tag = re.compile(rb"<" + re.escape(raw.encode()) + rb"[\s/>]")
    end = f"</{root_raw}>".encode()
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=True)
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        pos = 0
        for _ in range(100):
            found = _search(mm, start_tag, pos)
            if found is None:
                return None
            try:
                etree.fromstring(mm[:found] + end, parser)
            except etree.XMLSyntaxError:
                pos = found + 1
                continue
            return found
    return None


def _release(mm: mmap.mmap, start: int, end: int) -> None:
    """Give back the pages of ``mm[start:end]`` and of the large folio either side: the process
    no longer maps them (its RSS), the file's pages stay in the page cache and a later read
    maps them again. A file page that a search has read counts in the process's RSS for as
    long as the file is mapped: without this, the bytes searched (the whole file, from each
    boundary's target back to the one before it) made the planner's peak RSS the file's size
    plus the process's own. A read maps its page's whole folio (up to 2 MB of the page cache
    on Linux 6.18's ext4), so pages beside the bytes read, hence the margin."""
    if _DONTNEED is None:
        return
    first = max(0, start - _FOLIO)
    first -= first % mmap.PAGESIZE
    end = min(end + _FOLIO, len(mm))
    if end > first:
        mm.madvise(_DONTNEED, first, end - first)


def _search(mm: mmap.mmap, pattern: re.Pattern[bytes], start: int, group: int = 0) -> int | None:
    """The offset of the first match of ``pattern`` at or after ``start`` (``group``'s start),
    searched a window at a time, the pages of each window without one given back (:func:`_release`)."""
    pos = start
    while pos < len(mm):
        stop = min(len(mm), pos + _WINDOW + 4096)
        m = pattern.search(mm, pos, stop)
        if m:
            return m.start(group)
        _release(mm, pos, stop)
        pos += _WINDOW
    return None


def _rfind(mm: mmap.mmap, sub: bytes, start: int, end: int) -> int:
    """``mm.rfind(sub, start, end)`` searched a window at a time from ``end`` back, the pages
    of each window without it given back (:func:`_release`)."""
    hi = end
    while hi > start:
        lo = max(start, hi - _WINDOW)
        stop = min(end, hi + len(sub) - 1)  # a match starting before hi, ending after it
        found = mm.rfind(sub, lo, stop)
        if found >= 0:
            return found
        _release(mm, lo, stop)
        hi = lo
    return -1


def _last_opener(mm: mmap.mmap, mark: bytes, clean: int, at: int, kinds: tuple[bytes, ...]) -> list[int]:
    """The offset of the last ``<`` + ``mark`` + each of ``kinds`` in ``clean..at`` (-1: none):
    searched backwards for the single byte ``mark`` (``!`` or ``?``, rare in data: memrchr, a
    few milliseconds for 100 MB, where a search for ``<!--`` takes ten times as long); after
    a few marks (a file with a comment in every record), the kinds not met yet are searched
    for whole from there (no Python step per record)."""
    found = [-1] * len(kinds)
    left = len(kinds)
    pos = at
    for _ in range(8):
        k = _rfind(mm, mark, clean + 1, pos)
        if k < 0:
            return found
        pos = k
        if mm[k - 1] != 0x3C:  # no "<" before it
            continue
        for i, kind in enumerate(kinds):
            if found[i] < 0 and mm[k + 1 : k + 1 + len(kind)] == kind:
                found[i] = k - 1
                left -= 1
        if not left:
            return found
    for i, kind in enumerate(kinds):
        if found[i] < 0:
            found[i] = _rfind(mm, b"<" + mark + kind, clean, pos)
    return found


def _in_markup(mm: mmap.mmap, clean: int, at: int) -> bool:
    """Whether offset ``at`` may be inside a comment, a CDATA section or a processing
    instruction, ``clean`` being an earlier offset that is not (the previous boundary): the
    last opener of each since ``clean`` has no closer after it. A comment holds no ``-->``, a
    CDATA section no ``]]>`` and an instruction no ``?>`` before its end, so an offset inside
    one is always found; an opener inside another's text (``<!--`` in CDATA) can only make a
    true boundary refused (the planner then takes the next). The openers are searched
    backwards from ``at``, the closers only after an opener found."""
    comment, cdata = _last_opener(mm, b"!", clean, at, (b"--", b"[CDATA["))
    (instruction,) = _last_opener(mm, b"?", clean, at, (b"",))
    for last, size, closer in ((comment, 4, b"-->"), (cdata, 9, b"]]>"), (instruction, 2, b"?>")):
        if last >= 0 and _rfind(mm, closer, last + size, at) < 0:
            return True
    return False


def _find_boundary(mm: mmap.mmap, boundary: re.Pattern[bytes], clean: int, target: int) -> int | None:
    """The first record boundary at or after ``target`` that is not inside a comment, CDATA
    section or processing instruction (``clean``: the previous boundary)."""
    pos = target
    while True:
        found = _search(mm, boundary, pos, 1)
        if found is None or not _in_markup(mm, clean, found):
            return found
        pos = found + 1


def plan_xml_splits(
    paths: Sequence[str], element: str, *, split_bytes: int = XML_SPLIT_BYTES, slots: int = 1, whole: bool = False,
) -> list[XmlSplit]:
    """The splits of every file (see the module's description), file by file; ``whole``: one
    split per file (records that may hold an element of their own name)."""
    out: list[XmlSplit] = []
    sizes = [os.path.getsize(p) for p in paths]
    floor = tail_floor(sum(sizes), split_bytes, slots, XML_TAIL_DIVISOR)
    for file_id, (path, size) in enumerate(zip(paths, sizes, strict=True)):
        with open(path, "rb") as fh:
            bom = fh.read(2)
        shape = None if bom in (b"\xff\xfe", b"\xfe\xff") else _document_shape(path, element)
        if shape is None:
            out.append(XmlSplit(path, file_id, 0, size, 0, ""))
            continue
        root_local, root_raw, rec_raw, first = shape
        record_path = f"{root_local}/{_local(element)}"
        boundary = re.compile(rb"</" + re.escape(rec_raw.encode()) + rb"\s*>\s*(<" + re.escape(rec_raw.encode()) + rb"[\s/>])")
        later = sum(sizes[file_id + 1 :])
        bounds = [0]
        pos = released = first
        with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            while not whole:
                target = pos + guided_split_bytes(size - pos + later, split_bytes, slots, floor)
                if target >= size:
                    break
                found = _find_boundary(mm, boundary, pos, target)
                if found is None:
                    break
                bounds.append(found)
                if found - released >= _WINDOW:  # the windows where the searches stopped, the bytes read beside them
                    _release(mm, released, found)
                    released = found
                pos = found
        tail = f"</{root_raw}>".encode()
        for i, start in enumerate(bounds):
            last = i == len(bounds) - 1
            out.append(XmlSplit(path, file_id, start, size if last else bounds[i + 1], i, record_path,
                                head=first if i else 0, tail=b"" if last else tail))
    return out


def nests_own_name(model: Any, record_path: str) -> bool:
    """Whether a record at ``record_path`` of ``model`` (an :class:`~coupler.translators.xml.XsdModel`)
    may hold, at any depth, an element of its own local name (``<order><sub><order>``): then
    ``</order> <order`` may be inside a record."""
    from coupler.translators.xml.model import Poly, Record

    steps = record_path.split("/")
    values: list[Any] = [model.root_value(steps[0])]
    for step in steps[1:]:
        records = [r for v in values for r in (v.branches if isinstance(v, Poly) else [v]) if isinstance(r, Record)]
        values = [f.value for r in records for f in r.fields if f.kind == "element" and _local(f.qname or "") == step]
    name = steps[-1]
    seen: set[int] = set()
    while values:
        value = values.pop()
        for record in value.branches if isinstance(value, Poly) else [value]:
            if not isinstance(record, Record) or id(record) in seen:
                continue
            seen.add(id(record))
            for f in record.fields:
                if f.kind == "element" and _local(f.qname or "") == name:
                    return True
                if f.kind == "element":
                    values.append(f.value)
    return False


def plan_xml_job(model: Any, paths: Sequence[str], element: str, *, split_bytes: int = XML_SPLIT_BYTES,
                 slots: int = 1) -> list[XmlSplit]:
    """The splits of a job (:func:`plan_xml_splits`); each file whole when the XSD (``model``)
    lets a record hold an element of its own name, whose ``</rec> <rec`` a byte search would
    take for a boundary (its records still stream in constant memory)."""
    splits = plan_xml_splits(paths, element, split_bytes=split_bytes, slots=slots)
    record_path = next((s.record_path for s in splits if s.record_path), "")
    if len(splits) > len(paths) and record_path and nests_own_name(model, record_path):
        return plan_xml_splits(paths, element, slots=slots, whole=True)
    return splits


class SplitStream(io.RawIOBase):
    """The file's head, bytes ``start``..``end``, then ``tail``: a split as a document."""

    def __init__(self, split: XmlSplit):
        self._fh = open(split.path, "rb")  # noqa: SIM115 - closed by close()
        self._parts: list[tuple[int, int] | bytes] = []
        if split.head:
            self._parts.append((0, split.head))
        self._parts.append((split.start, split.end))
        if split.tail:
            self._parts.append(split.tail)
        self._at: int | None = None

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while self._parts:
            part = self._parts[0]
            if isinstance(part, bytes):
                n = min(len(buffer), len(part))
                buffer[:n] = part[:n]
                self._parts[0] = part[n:]
                if not self._parts[0]:
                    self._parts.pop(0)
                return n
            start, end = part
            if self._at != start:
                self._fh.seek(start)
                self._at = start
            n = self._fh.readinto(memoryview(buffer)[: min(len(buffer), end - start)])
            if not n:
                raise XmlSplitError(f"{self._fh.name} ended at byte {start}, before the split's end {end}")
            self._at = start + n
            if start + n >= end:
                self._parts.pop(0)
            else:
                self._parts[0] = (start + n, end)
            return n
        return 0

    def close(self) -> None:
        self._fh.close()
        super().close()


#: the name Spark's split tasks knew it by
_SplitStream = SplitStream
