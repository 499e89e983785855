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

A comment or CDATA section that itself contains ``</element> <element`` could be taken
for a boundary; data files of repeated records do not hold such text.
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
    first = _find(path, re.compile(rb"<" + re.escape(raw.encode()) + rb"[\s/>]"), 0)
    if first is None:
        return None
    return root_local, root_raw, raw, first


def _find(path: str, pattern: re.Pattern[bytes], start: int, group: int = 0) -> int | None:
    """The offset of the first match of ``pattern`` at or after ``start`` (``group``'s start)."""
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        pos = start
        while pos < len(mm):
            m = pattern.search(mm, pos, min(len(mm), pos + _WINDOW + 4096))
            if m:
                return m.start(group)
            pos += _WINDOW
    return None


def plan_xml_splits(
    paths: Sequence[str], element: str, *, split_bytes: int = XML_SPLIT_BYTES, slots: int = 1,
) -> list[XmlSplit]:
    """The splits of every file (see the module's description), file by file."""
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
        pos = first
        while True:
            target = pos + guided_split_bytes(size - pos + later, split_bytes, slots, floor)
            if target >= size:
                break
            found = _find(path, boundary, target, 1)
            if found is None:
                break
            bounds.append(found)
            pos = found
        tail = f"</{root_raw}>".encode()
        for i, start in enumerate(bounds):
            last = i == len(bounds) - 1
            out.append(XmlSplit(path, file_id, start, size if last else bounds[i + 1], i, record_path,
                                head=first if i else 0, tail=b"" if last else tail))
    return out


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
