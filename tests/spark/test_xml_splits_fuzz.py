"""The XML split planner against the whole file: random documents, tiny splits.

Each case writes a document of repeated ``rec`` records with comments, CDATA sections and
processing instructions between and inside them (some holding ``</rec> <rec>``), whitespace
of every kind between records, a namespace prefix or none, an XML declaration with or without
an encoding (ISO-8859-1 with non-ASCII text), a prologue and header elements before the first
record; plans it with splits of a few hundred bytes and decodes it split by split, as the
split tasks do. The records must be exactly those of decoding the whole file (never silently
different). The run lasts ``COUPLER_FUZZ_SECONDS`` (3 s by default); ``COUPLER_FUZZ_SEED``
replays one.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from coupler.translators.spark.xml_splits import XmlSplitTask, plan_xml_splits
from coupler.translators.xml import XmlValidationError, XsdModel
from tests.fuzzing import SEED, bounded, cases

NS = "urn:h126:recs"
XSD = f"""<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" targetNamespace="{NS}" xmlns="{NS}"
  elementFormDefault="qualified">
  <xs:element name="list"><xs:complexType><xs:sequence>
    <xs:element name="meta" type="xs:string" minOccurs="0"/>
    <xs:element name="rec" maxOccurs="unbounded"><xs:complexType><xs:sequence>
      <xs:element name="note" type="xs:string"/>
      <xs:element name="n" type="xs:int"/>
    </xs:sequence><xs:attribute name="id" type="xs:string"/></xs:complexType></xs:element>
  </xs:sequence></xs:complexType></xs:element>
</xs:schema>"""

#: texts that look like a boundary (or part of one) where the planner's byte search sees them
TRAPS = ["</rec> <rec>", "</rec>\n<rec id='x'>", "</p:rec><p:rec>", "</rec><rec/>", "<rec ", "</rec>", "]]", "--", "?"]


def _markup(rng: random.Random, prefix: str) -> str:
    """A comment, CDATA-free PI or nothing, maybe holding a trap."""
    trap = rng.choice(TRAPS).replace("rec", f"{prefix}rec") if rng.random() < 0.7 else "x"
    kind = rng.choice(["comment", "pi", "none", "none"])
    if kind == "comment":
        return f"<!-- {trap.replace('--', '- -')} -->"
    if kind == "pi":
        return f"<?note {trap.replace('?', '')} ?>"
    return ""


def _note(rng: random.Random, prefix: str, latin: bool) -> str:
    trap = rng.choice(TRAPS).replace("rec", f"{prefix}rec")
    parts = [rng.choice(["plain", "caf\u00e9" if latin else "cafe", ""])]
    for _ in range(rng.randrange(3)):
        choice = rng.random()
        if choice < 0.4:
            parts.append(f"<![CDATA[{trap.replace(']]', '] ]')}]]>")
        elif choice < 0.6:
            parts.append(f"<!-- {trap.replace('--', '- -')} -->")
        elif choice < 0.7:
            parts.append(f"<?pi {trap.replace('?', '')}?>")
        else:
            parts.append(trap.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;"))
    return "".join(parts)


def _document(rng: random.Random) -> tuple[bytes, int]:
    prefix = rng.choice(["", "p:"])
    latin = rng.random() < 0.3
    declaration = rng.choice(['<?xml version="1.0"?>\n', '<?xml version="1.0" encoding="UTF-8"?>\n', ""])
    if latin:
        declaration = '<?xml version="1.0" encoding="ISO-8859-1"?>\n'
    prologue = rng.choice(["", "<!-- <rec id='0'> -->\n", f"<?pi <{prefix}rec ?>\n", "<!-- prologue -->"])
    xmlns = f'xmlns:p="{NS}"' if prefix else f'xmlns="{NS}"'
    head = f"{declaration}{prologue}<{prefix}list {xmlns}>{_markup(rng, prefix)}"
    if rng.random() < 0.5:
        head += f"<{prefix}meta>{_note(rng, prefix, latin)}</{prefix}meta>"
    records = []
    count = rng.randrange(1, 40)
    for i in range(count):
        space = rng.choice(["", " ", "\n", "\r\n\t", "  \n  "])
        attribute = rng.choice(["", f' id="r{i}"', f" id='a&gt;b{i}'", f' id="&lt;/rec&gt; &lt;rec&gt;{i}"'])
        inner = (f"{_markup(rng, prefix)}<{prefix}note>{_note(rng, prefix, latin)}</{prefix}note>"
                 f"{rng.choice(['', ' ', _markup(rng, prefix)])}<{prefix}n>{i}</{prefix}n>")
        records.append(f"<{prefix}rec{attribute}>{inner}</{prefix}rec{rng.choice(['', ' ', chr(10)])}>{space}"
                       f"{_markup(rng, prefix) if rng.random() < 0.2 else ''}")
    text = head + "\n".join(records) + f"</{prefix}list>\n"
    return text.encode("iso-8859-1" if latin else "utf-8"), count


def _outcome(produce: Any) -> Any:
    try:
        return [r for r in produce()]
    except XmlValidationError as exc:  # a CouplerError with one line
        return ("error", str(exc))


def test_split_by_split_decoding_gives_the_records_of_the_whole_file(tmp_path: Path) -> None:
    xsd = tmp_path / "recs.xsd"
    xsd.write_text(XSD)
    decoder = XsdModel.load(xsd).decoder("list")
    task = XmlSplitTask(str(xsd), "rec", None, "avro", {}, None)  # type: ignore[arg-type]
    data = tmp_path / "recs.xml"
    rng = random.Random(SEED)
    split_counts = []
    for case in cases(least=20):
        document, count = _document(rng)
        data.write_bytes(document)
        split_bytes = rng.choice([1, 40, 100, 250, 600])
        label = f"case {case} (COUPLER_FUZZ_SEED={SEED}), split_bytes {split_bytes}"
        with bounded(label):
            whole = _outcome(lambda: decoder.iter_records(str(data), "list/rec"))  # noqa: B023
            assert not isinstance(whole, tuple), (label, whole, document)
            assert len(whole) == count
            splits = plan_xml_splits([str(data)], f"{{{NS}}}rec", split_bytes=split_bytes, slots=2)
            assert splits[0].start == 0 and splits[-1].end == len(document), label
            assert all(a.end == b.start for a, b in zip(splits, splits[1:], strict=False)), label
            split_counts.append(len(splits))
            pieces = _outcome(lambda: [r for s in splits for r in task.records(s)])  # noqa: B023
            assert pieces == whole, (label, [(s.start, s.end) for s in splits], document)
    assert max(split_counts) > 5  # the files were split


def test_the_planners_searches_a_window_at_a_time_find_what_one_search_finds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The planner searches the mapped file a window at a time and gives each window's pages
    back (its RSS does not grow with the file): windows of a few bytes find every match one
    search over the range finds, and plan the documents as the 1 MB windows do."""
    import mmap

    from coupler.translators.xml import splits as planner

    rng = random.Random(SEED)
    raw_file, data = tmp_path / "bytes", tmp_path / "recs.xml"
    for case in cases(least=40, budget=1.0):
        raw = bytes(rng.choice(b"<!?-]>x ") for _ in range(rng.randint(1, 300)))
        raw_file.write_bytes(raw)
        document, _ = _document(rng)
        data.write_bytes(document)
        split_bytes = rng.choice([1, 40, 250])
        label = f"case {case} (COUPLER_FUZZ_SEED={SEED})"
        with bounded(label):
            whole = plan_xml_splits([str(data)], f"{{{NS}}}rec", split_bytes=split_bytes, slots=2)
            monkeypatch.setattr(planner, "_WINDOW", rng.randint(1, 40))
            monkeypatch.setattr(planner, "_FOLIO", rng.choice([0, 4096]))
            with raw_file.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                for _ in range(20):
                    sub = rng.choice([b"!", b"?", b"<!--", b"-->", b"]]>", b"<?", b"x -"])
                    start = rng.randint(0, len(raw))
                    end = rng.randint(start, len(raw))
                    assert planner._rfind(mm, sub, start, end) == raw.rfind(sub, start, end), (label, raw, sub)
            assert plan_xml_splits([str(data)], f"{{{NS}}}rec", split_bytes=split_bytes, slots=2) == whole, label
            monkeypatch.undo()


@pytest.mark.parametrize(("document", "records"), [
    # a comment holding a boundary between two records
    (b'<list xmlns="urn:h126:recs"><rec><note>a</note><n>1</n></rec><!-- </rec> <rec> -->\n'
     b"<rec><note>b</note><n>2</n></rec></list>", 2),
    # a CDATA section holding one inside a record
    (b'<list xmlns="urn:h126:recs"><rec><note><![CDATA[x </rec> <rec> y]]></note><n>1</n></rec>'
     b"<rec><note>b</note><n>2</n></rec></list>", 2),
    # a processing instruction holding one
    (b'<list xmlns="urn:h126:recs"><rec><note>a<?pi </rec> <rec> ?></note><n>1</n></rec>\n'
     b"<rec><note>b</note><n>2</n></rec></list>", 2),
    # the first record's start tag in a comment of the prologue (the head stopped inside it)
    (b'<?xml version="1.0"?><!-- <rec> --><list xmlns="urn:h126:recs"><rec><note>a</note><n>1</n></rec>'
     b"<rec><note>b</note><n>2</n></rec></list>", 2),
    (b'<list xmlns="urn:h126:recs"><meta><![CDATA[<rec>]]></meta><rec><note>a</note><n>1</n></rec>'
     b"<rec><note>b</note><n>2</n></rec></list>", 2),
])  # fmt: skip
def test_boundaries_inside_comments_cdata_and_instructions_are_not_taken(tmp_path: Path, document: bytes,
                                                                          records: int) -> None:
    xsd = tmp_path / "recs.xsd"
    xsd.write_text(XSD)
    data = tmp_path / "recs.xml"
    data.write_bytes(document)
    task = XmlSplitTask(str(xsd), "rec", None, "avro", {}, None)  # type: ignore[arg-type]
    whole = list(XsdModel.load(xsd).decoder("list").iter_records(str(data), "list/rec"))
    for split_bytes in (1, 10, 30):
        splits = plan_xml_splits([str(data)], f"{{{NS}}}rec", split_bytes=split_bytes, slots=2)
        assert [r for s in splits for r in task.records(s)] == whole and len(whole) == records


NESTED_XSD = f"""<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" targetNamespace="{NS}" xmlns="{NS}"
  elementFormDefault="qualified">
  <xs:element name="list"><xs:complexType><xs:sequence>
    <xs:element name="rec" type="Rec" maxOccurs="unbounded"/>
  </xs:sequence></xs:complexType></xs:element>
  <xs:complexType name="Rec"><xs:sequence>
    <xs:element name="n" type="xs:int"/>
    <xs:element name="parts" minOccurs="0"><xs:complexType><xs:sequence>
      <xs:element name="rec" type="Rec" maxOccurs="unbounded"/>
    </xs:sequence></xs:complexType></xs:element>
  </xs:sequence></xs:complexType>
</xs:schema>"""


def _nested_file(tmp_path: Path) -> Path:
    records = "\n".join(f"<rec><n>{i}</n><parts><rec><n>{i}1</n></rec>\n<rec><n>{i}2</n></rec></parts></rec>"
                        for i in range(40))
    data = tmp_path / "nested.xml"
    data.write_text(f'<list xmlns="{NS}">\n{records}\n</list>\n')
    return data


def test_records_that_may_hold_their_own_element_are_read_whole(tmp_path: Path) -> None:
    """``</rec>\\n<rec>`` inside a record (a nested ``rec``): no byte search tells it from a
    boundary, so a job whose XSD allows it reads each file whole; its records are those of
    the whole file."""
    from coupler.translators.xml.splits import plan_xml_job

    xsd = tmp_path / "nested.xsd"
    xsd.write_text(NESTED_XSD)
    data = _nested_file(tmp_path)
    assert len(plan_xml_splits([str(data)], f"{{{NS}}}rec", split_bytes=100, slots=2)) > 3  # the byte search alone
    splits = plan_xml_job(XsdModel.load(xsd), [str(data)], f"{{{NS}}}rec", split_bytes=100, slots=2)
    assert len(splits) == 1 and splits[0].record_path == "list/rec"
    task = XmlSplitTask(str(xsd), "rec", None, "avro", {}, None)  # type: ignore[arg-type]
    whole = list(XsdModel.load(xsd).decoder("list").iter_records(str(data), "list/rec"))
    assert [r for s in splits for r in task.records(s)] == whole and len(whole) == 40
    flat = tmp_path / "recs.xsd"
    flat.write_text(XSD)
    assert len(plan_xml_job(XsdModel.load(flat), [str(data)], f"{{{NS}}}rec", split_bytes=100, slots=2)) > 3


WILD_XSD = f"""<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" targetNamespace="{NS}" xmlns="{NS}"
  elementFormDefault="qualified">
  <xs:element name="list"><xs:complexType><xs:sequence>
    <xs:element name="meta" type="xs:string" minOccurs="0"/>
    <xs:element name="rec" maxOccurs="unbounded"><xs:complexType><xs:sequence>
      <xs:element name="note" type="xs:string" minOccurs="0"/>
      <xs:element name="n" type="xs:int"/>
      <xs:any processContents="skip" minOccurs="0" maxOccurs="unbounded"/>
    </xs:sequence></xs:complexType></xs:element>
  </xs:sequence></xs:complexType></xs:element>
</xs:schema>"""


def test_a_split_that_is_not_whole_records_says_so_and_names_the_files_line(tmp_path: Path) -> None:
    """A nested ``rec`` in a wildcard (the XSD declares none, so the file is split): the
    split that ends inside a record fails with one line saying what to do; an error in a
    later split names the file's line (not the line in the split's document)."""
    xsd = tmp_path / "wild.xsd"
    xsd.write_text(WILD_XSD)
    data = _nested_file(tmp_path)
    task = XmlSplitTask(str(xsd), "rec", None, "avro", {}, None)  # type: ignore[arg-type]
    assert len(list(XsdModel.load(xsd).decoder("list").iter_records(str(data), "list/rec"))) == 40
    splits = plan_xml_splits([str(data)], f"{{{NS}}}rec", split_bytes=100, slots=2)
    with pytest.raises(XmlValidationError) as caught:
        for s in splits:
            list(task.records(s))
    text = str(caught.value)
    assert "\n" not in text and "not well-formed XML" in text and "split size larger than the file" in text
    # a value refused in a later split: the line is the file's
    lines = [f'<rec><note>n</note><n>{"x" if i == 33 else i}</n></rec>' for i in range(40)]
    data.write_text(f'<?xml version="1.0"?>\n<list xmlns="{NS}">\n<meta>m</meta>\n' + "\n".join(lines) + "\n</list>\n")
    splits = plan_xml_splits([str(data)], f"{{{NS}}}rec", split_bytes=200, slots=2)
    assert len(splits) > 3
    with pytest.raises(XmlValidationError) as caught:
        for s in splits:
            list(task.records(s))
    assert caught.value.line == 4 + 33, str(caught.value)
    assert "'x' is not an xs:int" in str(caught.value)
