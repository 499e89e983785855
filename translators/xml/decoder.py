"""XML -> records: converters compiled from the XSD model, for whole documents or streams.

A whole document is converted (each element checked as it is converted: unknown, missing and
repeated elements and attributes, lexical forms, facets), then validated with xmlschema for
what conversion does not check (the order of the children); the first error stops both, so
refusing a document costs time linear in its size. A stream (``iter_records``) walks a
repeated element with lxml ``iterparse`` in constant memory, converting each record as it
ends. Every error is an :class:`XmlValidationError` naming the line and the path; nothing
else escapes (an unexpected failure of a converter or of xmlschema is reported the same way).
"""

from __future__ import annotations

import copy
import io
import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any
from xml.sax.saxutils import escape

from lxml import etree
from xmlschema import XMLSchemaValidationError

from coupler.canonical.errors import CouplerError

from .codecache import compiled
from .errors import XmlValidationError, XsdError
from .model import XSI, Field, Poly, Record, field_avro, value_avro
from .naming import local_name
from .scalars import Scalar, collapse_text, plain_int_digits
from .security import SAFE_PARSE_OPTIONS, check_docinfo, parse_document, safe_parser, syntax_error

if TYPE_CHECKING:
    from .model import SchemaModel

XSI_NIL = f"{{{XSI}}}nil"
XSI_TYPE = f"{{{XSI}}}type"
#: xsi:type, xsi:nil and the schema location hints are instructions to the processor, not data
_IGNORED_ATTRIBUTE_NS = "{http://www.w3.org/2001/XMLSchema-instance}"
_MISSING = object()
#: what a converter may raise for bad input besides ValueError (Python's own limits)
_BAD_VALUE = (ValueError, OverflowError, ArithmeticError, TypeError)
_HINT = "the document does not match the XSD; correct the document (or the schema)"
#: the key naming the chosen branch in a record of a polymorphic (xsi:type) element
TYPE_KEY = "-type"

Source = str | Path | bytes | IO[bytes]


def element_path(elem: Any) -> str:
    """``/order/line[2]/quantity``-style path of an lxml element (local names)."""
    parts = []
    while elem is not None:
        parent = elem.getparent()
        name = local_name(elem.tag) if isinstance(elem.tag, str) else "?"
        if parent is not None:
            same = [c for c in parent if c.tag == elem.tag]
            if len(same) > 1:
                name = f"{name}[{same.index(elem) + 1}]"
        parts.append(name)
        elem = parent
    return "/" + "/".join(reversed(parts))


def _fail(message: str, elem: Any, source: str | None, exc: BaseException | None = None) -> XmlValidationError:
    """A located error; ``exc``: the value error behind it, whose own ``hint`` (a value the XSD
    allows that its Avro type cannot hold) replaces the default one."""
    hint = getattr(exc, "hint", None) or _HINT
    return XmlValidationError(message, path=element_path(elem), line=elem.sourceline, source=source, hint=hint)


def first_validation_error(schema: Any, tree: Any) -> Any:
    """The first error xmlschema finds in ``tree`` (None: valid), its validation stopped there.

    ``next(schema.iter_errors(tree))`` is not that: in its default ``lax`` mode xmlschema
    validates the whole root element before it yields the first error, building every error
    on the way, and builds one error per unexpected attribute, each with a ``repr`` of all the
    element's attributes: an element given 2,500 attributes held it for half a minute (time
    growing with the square of their number). In ``strict`` mode the first error is raised
    where it is found."""
    try:
        for error in schema.iter_errors(tree, validation="strict"):
            return error
    except XMLSchemaValidationError as error:
        return error
    return None


def first_element_error(decl: Any, elem: Any) -> Any:
    """:func:`first_validation_error` of one element against its declaration ``decl`` (an
    ``XsdElement``), whose ``iter_errors`` has no ``validation`` argument (always lax):
    decoded in strict mode, which raises at the first error (xmlschema's public API; its
    internal validate-only call is ~1.4x faster on valid records, and not kept: a change of
    xmlschema's internals would refuse every record)."""
    try:
        for _ in decl.iter_decode(elem, validation="strict"):
            pass
    except XMLSchemaValidationError as error:
        return error
    return None


def _unexpected(exc: BaseException, elem: Any, source: str | None) -> XmlValidationError:
    """A failure no converter foresaw, as a located error (its first line only)."""
    text = (str(exc).strip().splitlines() or [""])[0][:200]
    return _fail(f"cannot decode this element: {type(exc).__name__}: {text}", elem, source)


class RecordDecoder:
    """Converts one lxml element of a complex type into a dict shaped like its Avro record."""

    def __init__(self, record: Record, compiler: Decoder,
                 element_converter: Callable[[Field], Callable[[Any], Any]] | None = None):
        self.record = record
        self.compiler = compiler
        #: makes the converters of the children (default: the decoder's interpreted ones)
        self.element_converter = element_converter or compiler.element_converter
        self.template: dict[str, Any] = {}
        self.arrays: list[str] = []
        self.singles: list[tuple[str, bool]] = []  # (name, required)
        self.required_arrays: list[str] = []
        self.attributes: dict[str, tuple[str, Callable[[str], Any]]] = {}
        self.required_attributes: list[str] = []
        # tag -> (field, converter, repeated, the scalar's own decode for simple-typed
        # elements: called inline when the element has neither attributes nor children)
        self.children: dict[str, tuple[str, Callable[[Any], Any], bool, Callable[[str], Any] | None, int]] = {}
        self.wildcards: list[tuple[Field, Any, int]] = []  # (field, XsdAnyElement, field index)
        self.positional = False
        self.order: str | None = None  # the field listing the children in document order
        self.track = False  # whether the children's field positions are followed
        self.text: tuple[str, Callable[[str], Any]] | None = None
        self.mixed: str | None = None  # the field holding mixed content as XML
        self.any_attributes: tuple[str, Any] | None = None  # (field, XsdAnyAttribute)
        #: (the field listing nil elements, the optional nillable single fields in declaration order)
        self.nil: tuple[str, list[str]] | None = None
        self.simple_types: str | None = None  # the field keeping simple-typed children's xsi:type

    def compile(self) -> None:
        for index, f in enumerate(self.record.fields):
            self.template[f.name] = [] if f.repeated else _MISSING
            if f.kind == "anyattr":
                self.any_attributes = (f.name, f.wildcard)
                continue
            if f.kind == "xsitype":
                self.template[f.name] = None  # set from the xsi:type attribute, when there is one
                continue
            if f.kind == "xsitypes":
                self.simple_types = f.name
                continue
            if f.kind == "nil":
                self.nil = (f.name, [e.name for e in self.record.fields if e.kind == "element" and e.nillable
                                     and not e.repeated and e.min_occurs == 0])
                continue
            if f.repeated:
                self.arrays.append(f.name)
                if f.min_occurs > 0:
                    self.required_arrays.append(f.name)
            else:
                self.singles.append((f.name, f.required))
            if f.kind == "attribute":
                self.attributes[f.qname or ""] = (f.name, f.value.decode)
            elif f.kind == "text":
                self.text = (f.name, f.value.decode)
            elif f.kind == "mixed":
                self.mixed = f.name
            elif f.kind == "any":
                self.wildcards.append((f, f.wildcard, index))
            elif f.kind == "element":
                direct = f.value.decode if isinstance(f.value, Scalar) else None
                if direct is not None and f.default is not None:
                    direct = _with_default(direct, f.default)
                self.children[f.qname or ""] = (f.name, self.element_converter(f), f.repeated, direct, index)
        # the wildcard a foreign element belongs to depends on where it stands (xs:any after
        # each declared part of an extension): tracked when there are several wildcards
        self.positional = len(self.wildcards) > 1
        self.order = self.record.order_field
        self.track = self.positional or self.order is not None

    def __call__(self, elem: Any) -> dict[str, Any]:
        out = dict(self.template)
        for name in self.arrays:
            out[name] = []
        if self.any_attributes is not None:
            out[self.any_attributes[0]] = {}
        if self.simple_types is not None:
            out[self.simple_types] = {}
        keys = elem.keys()
        if keys:
            # lxml's items() costs time quadratic in the number of attributes (25,000 unknown
            # ones: 30 s before the first could be refused): beyond a few, values one by one
            pairs = elem.items() if len(keys) <= 32 else ((key, elem.get(key)) for key in keys)
            for key, text in pairs:
                attribute = self.attributes.get(key)
                if attribute is None:
                    self._other_attribute(out, elem, key, text)
                    continue
                try:
                    out[attribute[0]] = attribute[1](text)
                except _BAD_VALUE as exc:
                    raise _fail(f"attribute {local_name(key)!r}: {exc}", elem, self.compiler.source_name, exc) from None
        if self.mixed is not None:  # text and children travel as XML (xmlschema validates them)
            out[self.mixed] = inner_xml(elem) if (elem.text or len(elem)) else None
        else:
            text = elem.text if self.text is None or not len(elem) else simple_text(elem)
            if self.text is not None:
                try:
                    out[self.text[0]] = self.text[1](text or "")
                except _BAD_VALUE as exc:
                    raise _fail(str(exc), elem, self.compiler.source_name, exc) from None
            elif text and not text.isspace():
                raise _fail(f"text {text.strip()[:30]!r} is not allowed in {self.record.name}", elem,
                            self.compiler.source_name)
            children = self.children
            track = self.track
            # with track: the index of the field of the last child, whether a child came before
            # a field declared earlier (then the record lists its children's order), and the
            # wildcard field each foreign child went to
            position = -1
            deviated = False
            wild: list[str] = []
            for child in elem:
                slot = children.get(child.tag)
                if slot is None:
                    if not isinstance(child.tag, str):  # comment or processing instruction
                        tail = child.tail
                        if tail and not tail.isspace() and self.text is None:
                            raise _fail(f"text {tail.strip()[:30]!r} is not allowed in {self.record.name}", elem,
                                        self.compiler.source_name)
                        continue
                    index = self._wildcard(out, child, position, wild)
                    if index < position:
                        deviated = True
                    position = index
                    continue
                name, convert, repeated, direct, index = slot
                if track:
                    if index < position:
                        deviated = True
                    position = index
                if not repeated and out[name] is not _MISSING:
                    raise _fail(f"element {local_name(child.tag)!r} occurs more than once", child,
                                self.compiler.source_name)
                if direct is not None and not child.keys() and not len(child):
                    # the common simple-typed element, inline: no attribute (so no xsi:nil), no
                    # child; anything else goes through its converter's checks
                    try:
                        value = direct(child.text or "")
                    except _BAD_VALUE as exc:
                        raise _fail(str(exc), child, self.compiler.source_name, exc) from None
                else:
                    value = convert(child)
                    if direct is not None and self.simple_types is not None:
                        type_name = child.get(XSI_TYPE)
                        if type_name is not None:  # kept, also when it names the declared type
                            key = f"{name}[{len(out[name])}]" if repeated else name
                            out[self.simple_types][key] = expanded_type_name(child, type_name, self.compiler.source_name)
                if repeated:
                    out[name].append(value)
                else:
                    out[name] = value
                tail = child.tail
                if tail and not tail.isspace() and self.text is None:
                    raise _fail(f"text {tail.strip()[:30]!r} is not allowed in {self.record.name}", elem,
                                self.compiler.source_name)
            if deviated and self.order is not None:
                out[self.order] = self._document_order(elem, wild)
            if self.nil is not None:  # nil: None here; absent: still _MISSING
                out[self.nil[0]] = [name for name in self.nil[1] if out[name] is None]
        for name, required in self.singles:
            if out[name] is _MISSING:
                if required:
                    raise _fail(f"{self.record.name}: missing {self._what(name)}", elem, self.compiler.source_name)
                out[name] = None
        for name in self.required_arrays:
            if not out[name]:
                raise _fail(f"{self.record.name}: missing {self._what(name)}", elem, self.compiler.source_name)
        return out

    def _other_attribute(self, out: dict[str, Any], elem: Any, key: str, text: str) -> None:
        """An attribute the type does not declare: an xsi: hint (xsi:type kept where the record
        has a field for it), one its xs:anyAttribute admits, or an error."""
        if key.startswith(_IGNORED_ATTRIBUTE_NS):
            if key == XSI_TYPE and self.record.xsi_type_field is not None:
                out[self.record.xsi_type_field] = expanded_type_name(elem, text, self.compiler.source_name)
            return
        if self.any_attributes is not None and self.any_attributes[1].is_matching(key):
            out[self.any_attributes[0]][key] = text
            return
        raise _fail(f"unexpected attribute {local_name(key)!r} in {self.record.name}", elem, self.compiler.source_name)

    def _what(self, name: str) -> str:
        for f in self.record.fields:
            if f.name == name:
                return f"{f.kind} {local_name(f.qname)!r}" if f.qname else f"{f.kind} content"
        return name

    def _document_order(self, elem: Any, wild: list[str]) -> list[str]:
        """The field of each child element in document order (``wild``: the wildcard fields
        the foreign children went to, in order). Listed only when the document's order differs
        from the declaration order, which an empty list stands for."""
        foreign = iter(wild)
        order = []
        for child in elem:
            slot = self.children.get(child.tag)
            if slot is not None:
                order.append(slot[0])
            elif isinstance(child.tag, str):
                order.append(next(foreign))
        return order

    def _wildcard(self, out: dict[str, Any], child: Any, position: int, wild: list[str]) -> int:
        """Put a child no declared element matches into the wildcard field it belongs to (the
        first one at or after the field of the previous child, else the first that matches);
        returns that field's index."""
        chosen = None
        for f, wildcard, index in self.wildcards:
            if not wildcard.is_matching(child.tag):
                continue
            if not f.repeated and out[f.name] is not _MISSING:
                continue
            if index >= position:
                chosen = (f, index)
                break
            if chosen is None:
                chosen = (f, index)
        if chosen is None:
            raise _fail(f"unexpected element {local_name(child.tag)!r} in {self.record.name}", child,
                        self.compiler.source_name)
        f, index = chosen
        text = xml_text(child)
        if f.repeated:
            out[f.name].append(text)
        else:
            out[f.name] = text
        wild.append(f.name)
        return index


def nilled(elem: Any, source: str | None) -> bool:
    """Whether an element of a nillable declaration is nil: its ``xsi:nil`` is true (an
    ``xs:boolean``: ``true`` or ``1``, whitespace around allowed). A nil element has no
    content (XSD 1.1 Part 1, 3.3.4.3, rule 3.2.3: ``<v xsi:nil="true">12</v>`` was None, its
    12 dropped), and an ``xsi:nil`` that is no boolean is an error, as xmlschema says."""
    value = elem.get(XSI_NIL)
    if value is None:
        return False
    value = value.strip(" \t\n\r")
    if value in ("false", "0"):
        return False
    if value not in _NIL:
        raise _fail(f"xsi:nil {value!r} is not a boolean (true, false, 1, 0)", elem, source)
    if elem.text or any(isinstance(c.tag, str) or c.tail for c in elem):
        raise _fail("xsi:nil is true but the element is not empty", elem, source)
    return True


def _with_default(decode: Callable[[str], Any], default: str) -> Callable[[str], Any]:
    """A simple type's decode where an empty element takes the declaration's default (or fixed) value."""
    return lambda text: decode(text or default)


def expanded_type_name(elem: Any, text: str, source: str | None) -> str:
    """The Clark name an ``xsi:type`` QName stands for where it is written (an unprefixed
    name is in the default namespace, as XSD resolves it)."""
    prefix, _, local = text.strip().rpartition(":")
    uri = elem.nsmap.get(prefix or None)
    if prefix and uri is None:
        raise _fail(f"xsi:type {text!r}: the prefix {prefix!r} is not declared", elem, source)
    return f"{{{uri}}}{local}" if uri else local


def xml_text(elem: Any) -> str:
    """One element as a self-contained XML string (unused namespace declarations removed,
    except the prefixes that xsi:type values use: lxml does not see those as used)."""
    keep = {value.strip().rpartition(":")[0] for value in (e.get(XSI_TYPE) for e in elem.iter() if isinstance(e.tag, str))
            if value and ":" in value}
    if keep:  # serialised with every declaration in scope, then the unused ones but these dropped
        clone = etree.fromstring(etree.tostring(elem, with_tail=False), safe_parser())
        etree.cleanup_namespaces(clone, keep_ns_prefixes=sorted(keep))
    else:
        clone = copy.deepcopy(elem)
        clone.tail = None
        etree.cleanup_namespaces(clone)
    return etree.tostring(clone, encoding="unicode")


def simple_text(elem: Any) -> str:
    """The text of an element of simple content with comments or processing instructions in
    it: its text and the text after each of them (their own text is no character data)."""
    return (elem.text or "") + "".join(child.tail or "" for child in elem if not isinstance(child.tag, str))


def inner_xml(elem: Any) -> str:
    """The content of an element (text and children) as an XML string."""
    parts = [escape(elem.text or "")]
    for child in elem:
        parts.append(etree.tostring(child, encoding="unicode", with_tail=True))
    return "".join(parts)


class Decoder:
    """Decodes documents (or a stream of repeated elements) of one global element to records."""

    def __init__(self, model: SchemaModel, element_name: str, *, compiled: bool = True):
        self.model = model
        self.element = model.element(element_name)
        self.value = model.root_value(element_name)
        self.source_name: str | None = None
        self._records: dict[int, RecordDecoder] = {}
        #: the generated converters (one Python function per record type, made on first use);
        #: None: every element goes through the interpreted RecordDecoder (the oracle)
        self.generated = GeneratedConverters(self) if compiled else None
        self.root = self.value_converter(self.value)
        if self.generated is not None:
            self.root = self.generated.value_converter(self.value)

    # -- compilation -----------------------------------------------------------------------

    def record_decoder(self, record: Record) -> RecordDecoder:
        known = self._records.get(id(record))
        if known is None:
            known = self._records[id(record)] = RecordDecoder(record, self)
            known.compile()
        return known

    def value_converter(self, value: Any) -> Callable[[Any], Any]:
        if isinstance(value, Record):
            return self.record_decoder(value)
        if isinstance(value, Poly):
            return self._poly_converter(value)
        raise XsdError(f"no element converter for {value!r}")

    def _poly_converter(self, poly: Poly) -> Callable[[Any], Any]:
        decoders = {r.type_qname: self.record_decoder(r) for r in poly.branches}
        default = self.record_decoder(poly.declared) if poly.declared else None
        tagged = len(poly.branches) > 1

        def convert(elem: Any) -> Any:
            type_name = elem.get(XSI_TYPE)
            if type_name is None:
                if default is None:
                    raise _fail("the element's type is abstract: xsi:type is required", elem, self.source_name)
                decoder = default
            else:
                found = decoders.get(expanded_type_name(elem, type_name, self.source_name))
                if found is None:
                    allowed = ", ".join(local_name(k or "") for k in decoders)
                    raise _fail(f"xsi:type {type_name!r} is not allowed here (allowed: {allowed})", elem, self.source_name)
                decoder = found
            out = decoder(elem)
            if tagged:
                out[TYPE_KEY] = decoder.record.fullname
            return out

        return convert

    def element_converter(self, f: Field) -> Callable[[Any], Any]:
        value = f.value
        source = lambda: self.source_name  # noqa: E731
        nillable = f.nillable
        if isinstance(value, Scalar):
            decode = value.decode if f.default is None else _with_default(value.decode, f.default)

            def convert_scalar(child: Any) -> Any:
                keys = child.keys()
                if keys:
                    for key in keys:
                        if not key.startswith(_IGNORED_ATTRIBUTE_NS):
                            raise _fail(f"unexpected attribute {local_name(key)!r} in a simple-typed element",
                                        child, source())
                if nillable and keys and nilled(child, source()):
                    return None
                if len(child) and any(isinstance(c.tag, str) for c in child):
                    raise _fail("element content is not allowed in a simple-typed element", child, source())
                try:
                    return decode(simple_text(child) if len(child) else (child.text or ""))
                except _BAD_VALUE as exc:
                    raise _fail(str(exc), child, source(), exc) from None

            return convert_scalar
        inner = self.value_converter(value)
        if not nillable:
            return inner

        def convert_nillable(child: Any) -> Any:
            if nilled(child, source()):
                return None
            return inner(child)

        return convert_nillable

    # -- decoding --------------------------------------------------------------------------

    def decode_element(self, elem: Any, *, source: str | None = None, validate: bool = False) -> dict[str, Any]:
        """Convert an lxml element of this decoder's element; with ``validate`` it is then
        validated by xmlschema (a copy as its own document). Only :class:`XmlValidationError`
        escapes."""
        self.source_name = source
        try:
            record = self.root(elem)
        except CouplerError:
            raise
        except Exception as exc:  # noqa: BLE001 - any other failure is a located error
            raise _unexpected(exc, elem, source) from None
        if validate:
            self.validate(etree.ElementTree(_detached(elem)), source or "<input>")
        return record

    def convert(self, elem: Any, converter: Callable[[Any], Any], *, source: str | None = None) -> Any:
        """Apply a converter of :meth:`resolve_path` to one element; errors name ``source``, the
        line and the path, and only :class:`XmlValidationError` escapes."""
        self.source_name = source
        try:
            return converter(elem)
        except CouplerError:
            raise
        except Exception as exc:  # noqa: BLE001 - any other failure is a located error
            raise _unexpected(exc, elem, source) from None

    def decode_document(self, source: Source, *, name: str | None = None, validate: bool = True) -> dict[str, Any]:
        """Decode a whole document to one record, then validate it against the XSD."""
        label = name or (str(source) if isinstance(source, str | Path) else "<input>")
        tree = parse_document(source, name=label)
        root = tree.getroot()
        if root.tag != self.element.name:
            raise XmlValidationError(
                f"root element is {local_name(root.tag)!r}, expected {self.element.local_name!r}",
                source=label, line=root.sourceline, path="/" + local_name(root.tag),
                hint="choose the element with --element",
            )
        record = self.decode_element(root, source=label)
        if validate:
            self.validate(tree, label)
        return record

    def validate(self, tree: Any, label: str) -> None:
        """Validate a parsed document with xmlschema; the first error (only) names the line and path.

        Comments and processing instructions are not what a schema validates, but xmlschema
        (4.3) counts them among an lxml element's children: ``<quantity>4<!-- -->2</quantity>``
        of an ``xs:int`` would be refused as "a simple content element can't have child
        elements" (given the same document as text, it accepts it, as libxml2 does). A
        document holding any is validated as a copy without them (their text joined, line
        numbers kept)."""
        root = tree.getroot() if hasattr(tree, "getroot") else tree
        if next(root.iter(etree.Comment, etree.ProcessingInstruction), None) is not None:
            root = copy.deepcopy(root)
            etree.strip_tags(root, etree.Comment, etree.ProcessingInstruction)
            tree = etree.ElementTree(root)
        try:
            error = first_validation_error(self.model.schema, tree)
        except Exception as exc:  # noqa: BLE001 - xmlschema's own failures (unknown xsi:type...)
            raise self._validation_failure(exc, tree, label) from None
        if error is not None:
            elem = getattr(error, "elem", None)
            line = getattr(elem, "sourceline", None)
            reason = (error.reason or error.message or "invalid").strip().splitlines()[0]
            raise XmlValidationError(reason, source=label, line=line, path=error.path, hint=_HINT)

    def _validation_failure(self, exc: Exception, tree: Any, label: str) -> XmlValidationError:
        maps = self.model.schema.maps
        for elem in tree.getroot().iter():
            type_name = elem.get(XSI_TYPE) if isinstance(elem.tag, str) else None
            if type_name is not None:
                prefix, _, local = type_name.strip().rpartition(":")
                uri = elem.nsmap.get(prefix or None)
                if (prefix and uri is None) or (f"{{{uri}}}{local}" if uri else local) not in maps.types:
                    return _fail(f"xsi:type {type_name!r} names no type of the schema", elem, label)
        return _unexpected(exc, tree.getroot(), label)

    def iter_records(self, source: Source, record_path: str, *, name: str | None = None,
                     avro_schema: Any = None) -> Iterator[dict[str, Any]]:
        """Stream the records at ``record_path`` (``orders/order``) in constant memory.

        With ``avro_schema`` (the record's own Avro schema, as ``write_container`` is given
        it), a record may come as its Avro binary encoding for that schema instead of a dict
        (an :class:`~.avro.EncodedRecord`, see :meth:`GeneratedConverters.avro_converter`)."""
        label = name or (str(source) if isinstance(source, str | Path) else "<input>")
        steps = self.resolve_path(record_path)
        ancestors = [tags for tags, _ in steps[:-1]]
        upwards = ancestors[::-1]  # checked from the record's parent up, for every record
        last_tags, convert = steps[-1]
        record_type = getattr(convert, "record", None)
        if avro_schema is not None and self.generated is not None and isinstance(record_type, Record):
            convert = self.generated.avro_converter(record_type, avro_schema) or convert
        self.source_name = label
        stream = source if not isinstance(source, bytes) else _bytes_io(source)
        if isinstance(stream, Path):
            stream = str(stream)
        context = etree.iterparse(stream, events=("end",), tag=sorted(last_tags), **SAFE_PARSE_OPTIONS)
        checked = False
        index = 0
        try:
            for _, elem in context:
                if not checked:
                    check_docinfo(elem.getroottree(), label)
                    checked = True
                parent = holder = elem.getparent()
                matched = True
                for tags in upwards:
                    if parent is None or parent.tag not in tags:
                        matched = False
                        break
                    parent = parent.getparent()
                if not matched or parent is not None:
                    continue  # the same tag elsewhere (nested deeper): not a record
                index += 1
                try:
                    record = convert(elem)
                except XmlValidationError as exc:
                    raise _numbered(exc, ancestors, index) from None
                except CouplerError:
                    raise
                except Exception as exc:  # noqa: BLE001 - any other failure is a located error
                    raise _numbered(_unexpected(exc, elem, label), ancestors, index) from None
                elem.clear(keep_tail=False)
                while elem.getprevious() is not None:
                    del holder[0]
                yield record
            if not checked and context.root is not None:
                check_docinfo(context.root.getroottree(), label)
        except etree.XMLSyntaxError as exc:
            raise syntax_error(exc, label) from exc
        except OSError as exc:
            raise XmlValidationError(f"cannot read the document: {exc}", source=label) from exc

    def resolve_path(self, record_path: str) -> list[tuple[set[str], Callable[[Any], Any]]]:
        """Each step of ``record_path``: the tags it may have and the converter of its value."""
        names = [p for p in record_path.strip().strip("/").split("/") if p]
        if not names:
            raise XsdError("the record path is empty", hint="give a path such as orders/order")
        if local_name(names[0]) != self.element.local_name:
            raise XsdError(
                f"record path {record_path!r} must start at the root element {self.element.local_name!r}",
                hint=f"e.g. {self.element.local_name}/CHILD",
            )
        steps: list[tuple[set[str], Callable[[Any], Any]]] = [({self.element.name}, self.root)]
        values: list[Any] = [self.value]
        for step in names[1:]:
            found: list[Field] = []
            for value in values:
                records = value.branches if isinstance(value, Poly) else [value] if isinstance(value, Record) else []
                for record in records:
                    found += [f for f in record.fields if f.kind == "element" and f.qname
                              and (f.qname == step or local_name(f.qname) == local_name(step))]
            if not found:
                raise XsdError(f"record path {record_path!r}: no element {step!r} at this level")
            tags = {f.qname for f in found if f.qname}
            first = found[0]
            steps.append((tags, self._field_converter(first) if len(found) == 1 else self._by_tag(found)))
            values = [f.value for f in found]
        return steps

    def _by_tag(self, found: list[Field]) -> Callable[[Any], Any]:
        table = {f.qname: self._field_converter(f) for f in found}
        return lambda elem: table[elem.tag](elem)

    def _field_converter(self, f: Field) -> Callable[[Any], Any]:
        """The converter of a field's element: the generated one where there is one."""
        if self.generated is None or isinstance(f.value, Scalar):
            return self.element_converter(f)
        return self.generated.element_converter(f)


class _Delegate(Exception):
    """The generated converter leaves this element to the interpreted one (an error, or
    something it does not handle: an unknown attribute, a child out of declaration order...)."""


class _End:
    """What the generated converters read after an element's last child: no tag, no tail."""

    tag = tail = None


_END = _End()

#: the errors a generated converter passes on instead of leaving its element to the next
#: converter of its chain: a located error (a child's, from the end of the child's chain, or
#: its own xsi:type's, as the interpreted converter finds it at the same attribute) and running
#: out of stack (which converting again would only repeat, once per ancestor)
_FOUND = (XmlValidationError, RecursionError)

#: the values of xsi:nil that make an element nil
_NIL = ("true", "1")


class GeneratedConverters:
    """Record converters generated as Python source from the schema model (issue 32).

    The interpreted :class:`RecordDecoder` looks its tables up for every attribute and child
    (which field, which converter, repeated or not, follow the position or not...). Here each
    record type becomes one function, written once from the same tables and compiled with
    ``compile``/``exec``: the attributes an if-chain, the children a dispatch on the field's
    index (a binary search over small ints), each field a local variable, the record one
    dict display in field order. Functions are made when first called, so a schema of
    hundreds of types costs only the types its documents use.

    The interpreted decoder stays the oracle and the error path: whatever the generated code
    does not expect (an undeclared or ``xsi:`` attribute other than ``xsi:type``, text where
    none is allowed, a missing or repeated element, a value its converter refuses, a child
    declared earlier than the one before it in a record that lists the document's order...)
    raises :class:`_Delegate` or the converter's own error, and the element is converted again
    by its :class:`RecordDecoder`, which returns the record or raises the located error. Record
    types with mixed content, ``xs:any`` or ``xs:anyAttribute`` are left to it altogether.
    ``tests/translators/xml/test_compiled.py`` checks generated = interpreted on every
    document of the corpus and on mutated ones.
    """

    def __init__(self, decoder: Decoder):
        self.decoder = decoder
        #: the globals of every generated function: the converters refer to each other by name
        self.namespace: dict[str, Any] = {
            "M": _MISSING, "Delegate": _Delegate, "XSI_TYPE": XSI_TYPE, "XSI_NIL": XSI_NIL, "NIL": _NIL,
            "XSI_NS": _IGNORED_ATTRIBUTE_NS, "expanded_type_name": expanded_type_name, "D": decoder,
            "END": _END, "FOUND": _FOUND, "NIL_KEYS": [XSI_NIL], "NILLED": nilled,
        }
        self._names: dict[int, str] = {}
        #: straight to Avro: the encoder generator, the functions made (record id -> name), the
        #: sources not yet compiled, how many of the generator's sources are
        self._avro: Any = None
        self._fused: dict[Any, str] = {}
        self._pending: list[str] = []
        self._avro_done = 0
        #: the decimal, date and dateTime fields read straight into their Avro value (see
        #: _straight_avro): (id of the record, id of the field) -> the Avro type written
        self._straight_fields: dict[tuple[int, int], str] = {}
        self._count = 0
        self.sources: dict[str, str] = {}  # function name -> its source (for reading and debugging)
        #: functions are made on first use, possibly by several threads (SOAP adapters): one at a time
        self._lock = threading.RLock()

    def value_converter(self, value: Any) -> Callable[[Any], Any]:
        """The converter of a record or polymorphic element, made now."""
        with self._lock:
            if isinstance(value, Poly):
                return self._poly(value)
            name = self._record_name(value)
            function = self.namespace[name]
            return self._generate(value, name) if getattr(function, "_stub", False) else function

    def element_converter(self, f: Field) -> Callable[[Any], Any]:
        inner = self.value_converter(f.value)
        if not f.nillable:
            return inner
        decoder = self.decoder
        return lambda elem: None if nilled(elem, decoder.source_name) else inner(elem)

    def _lazy_converter(self, f: Field) -> Callable[[Any], Any]:
        """A field's converter that finds the generated function when called (recursive types)."""
        if isinstance(f.value, Scalar):
            return self.decoder.element_converter(f)
        with self._lock:
            name = self._value_expression(f.value)
        namespace = self.namespace
        if f.nillable:
            decoder = self.decoder
            return lambda elem: None if nilled(elem, decoder.source_name) else namespace[name](elem)
        return lambda elem: namespace[name](elem)

    def _constant(self, value: Any, prefix: str) -> str:
        self._count += 1
        name = f"{prefix}{self._count}"
        self.namespace[name] = value
        return name

    def _record_name(self, record: Record) -> str:
        """The global name of a record's converter: a stub that generates it on its first call."""
        name = self._names.get(id(record))
        if name is None:
            name = self._names[id(record)] = f"r{len(self._names)}"

            def stub(elem: Any) -> Any:
                return self._generate(record, name)(elem)

            stub._stub = True  # type: ignore[attr-defined]
            self.namespace[name] = stub
        return name

    def _value_expression(self, value: Any) -> str:
        """A name in the namespace that converts an element of this record or Poly value."""
        if isinstance(value, Poly):
            return self._constant(self._poly(value), "p")
        return self._record_name(value)

    def _poly(self, poly: Poly) -> Callable[[Any], Any]:
        namespace = self.namespace
        decoders = {r.type_qname: (self._record_name(r), r.fullname) for r in poly.branches}
        default = (self._record_name(poly.declared), poly.declared.fullname) if poly.declared else None
        tagged = len(poly.branches) > 1
        interpreted = self.decoder._poly_converter(poly)  # the errors
        decoder = self.decoder

        def convert(elem: Any) -> Any:
            type_name = elem.get(XSI_TYPE)
            if type_name is None:
                if default is None:
                    return interpreted(elem)
                name, fullname = default
            else:
                found = decoders.get(expanded_type_name(elem, type_name, decoder.source_name))
                if found is None:
                    return interpreted(elem)
                name, fullname = found
            out = namespace[name](elem)
            if tagged:
                out[TYPE_KEY] = fullname
            return out

        return convert

    def _generate(self, record: Record, name: str) -> Callable[[Any], Any]:
        with self._lock:
            function = self.namespace[name]
            if not getattr(function, "_stub", False):
                return function  # made meanwhile by another thread
            return self._make(record, name)

    def _make(self, record: Record, name: str) -> Callable[[Any], Any]:
        if not self._fusable_record(record):
            # interpreted, but its children's converters are the generated ones
            hybrid = RecordDecoder(record, self.decoder, self._lazy_converter)
            hybrid.compile()
            self.namespace[name] = hybrid
            return hybrid
        source = self._source(record, self.decoder.record_decoder(record), name)
        code = compiled(source, f"<record converter {record.fullname}>")
        exec(code, self.namespace)  # noqa: S102 - generated from the schema model above
        self.sources[name] = source
        function = self.namespace[name]
        function.record = record  # as RecordDecoder.record
        return function

    def _source(self, record: Record, interpreted: RecordDecoder, name: str) -> str:
        """The converter's source; for a record with element children, two functions: ``name``
        reads the children in declaration order (the common case, no dispatch at all; comments
        passed over) and leaves anything else (a child out of that order, repeated, unknown...) to
        ``name_d``, which dispatches each child on its field index, and that one to the
        interpreted converter."""
        back = self._constant(interpreted, "interp")
        if not self._linear_ok(record):
            return self._function(record, interpreted, name, back, linear=False)
        return (self._function(record, interpreted, f"{name}_d", back, linear=False) + "\n"
                + self._function(record, interpreted, name, f"{name}_d", linear=True))

    @staticmethod
    def _linear_ok(record: Record) -> bool:
        """Whether the record's children can be read in declaration order (element-only
        content, each element field with its own tag)."""
        tags = [f.qname for f in record.fields if f.kind == "element"]
        return (not any(f.kind == "text" for f in record.fields) and bool(tags)
                and all(isinstance(t, str) for t in tags) and len(set(tags)) == len(tags))

    # -- records written straight to Avro (issue 32) ----------------------------------------

    def avro_converter(self, record: Record, schema: Any) -> Callable[[Any], Any] | None:
        """A converter of ``record``'s elements into their Avro binary encoding for ``schema``
        (an :class:`~.avro.EncodedRecord`), without the dicts: the statements of the generated
        converters, then those of the generated Avro encoder (``translators/xml/avro.py``)
        reading their local variables. Whatever it does not expect (what the dict converters
        delegate, a value the encoder leaves to fastavro) makes it return the record's dict
        from the dict converter instead, which ``write_container`` encodes as before. None
        when ``schema`` is not the record's own or the record type is interpreted."""
        from .avro import NAMESPACE, EncodedRecord

        if not self._fusable_record(record) or json.dumps(schema, sort_keys=True) != json.dumps(
                value_avro(record, set()), sort_keys=True):
            return None
        with self._lock:
            if self._avro is None:
                from .avro import _Generator

                self._avro = _Generator(prefix="A")
                self.namespace.update(NAMESPACE)
                self.namespace["ENCODED"] = EncodedRecord
            fused = self._avro
            name = self._fused_name(record, fused)
            top = f"{name}_top"
            if top not in self.namespace:
                dicts = self._constant(self.value_converter(record), "dicts")
                pending = [*self._pending, *fused.sources[self._avro_done:]]
                pending.append(f"def {top}(elem):\n    out = ENCODED()\n    try:\n        {name}(elem, out)\n"
                               f"    except Exception:\n        return {dicts}(elem)\n    return out\n")
                self.namespace.update(fused.constants)
                code = compiled("\n\n".join(pending), f"<avro converter {record.fullname}>")
                exec(code, self.namespace)  # noqa: S102 - generated from the schema model
                self.sources[top] = "\n\n".join(pending)
                self._pending, self._avro_done = [], len(fused.sources)
            function: Callable[[Any], Any] = self.namespace[top]
            return function

    def _fusable_record(self, record: Record) -> bool:
        interpreted = self.decoder.record_decoder(record)
        return interpreted.mixed is None and not interpreted.wildcards and interpreted.any_attributes is None

    def _fusable(self, f: Field, fused: Any) -> bool:
        """Whether field ``f``'s value is converted straight to Avro (a record of its own, or
        a polymorphic element, not nillable, whose every type is: see :meth:`_fused_poly`)."""
        if fused is None:
            return False
        if isinstance(f.value, Poly):
            return (not f.nillable and all(self._fusable_record(b) for b in f.value.branches)
                    and len({b.type_qname for b in f.value.branches}) == len(f.value.branches))
        return isinstance(f.value, Record) and self._fusable_record(f.value)

    def _fused_poly(self, poly: Poly, fused: Any, optional: bool) -> str:
        """The function converting a polymorphic element straight to Avro: the index of its
        type's branch in the field's union (after ``null`` when ``optional``, written for an
        absent element), then that record's encoding, the record found as the dict converter
        finds it (the declared type without ``xsi:type``, else the type it names); any other
        name delegates."""
        from .avro import _varint

        key = (id(poly), optional)
        name = self._fused.get(key)
        if name is None:
            name = self._fused[key] = f"py{len(self._fused)}"
            shift = 1 if optional else 0
            single = len(poly.branches) == 1 and not optional

            def prefix(record: Record) -> bytes:
                index = next(i for i, b in enumerate(poly.branches) if b is record)
                return b"" if single else _varint(index + shift)

            def write(record: Record, pad: str) -> list[str]:
                head = prefix(record)
                return ([f"{pad}out += {head!r}"] if head else []) + [
                    f"{pad}{self._fused_name(record, fused)}(elem, out)", f"{pad}return"]

            lines = [f"def {name}(elem, out):"]
            if optional:  # the element absent: the union's null
                lines += ["    if elem is M:", "        out += b'\\x00'", "        return"]
            lines += ["    type_name = elem.get(XSI_TYPE)", "    if type_name is None:"]
            lines += ["        raise Delegate"] if poly.declared is None else write(poly.declared, "        ")
            lines.append("    type_name = expanded_type_name(elem, type_name, D.source_name)")
            for branch in poly.branches:
                lines += [f"    if type_name == {branch.type_qname!r}:", *write(branch, "        ")]
            lines.append("    raise Delegate")
            self._pending.append("\n".join(lines) + "\n")
        return name

    def _fused_name(self, record: Record, fused: Any) -> str:
        name = self._fused.get(id(record))
        if name is None:
            # a prefix of its own: the encoder's locals are x, k, v, n, b or t and a number, and
            # a local of that name would hide this function in the body that calls it
            name = self._fused[id(record)] = f"rx{len(self._fused)}"
            interpreted = self.decoder.record_decoder(record)
            self._pending.append(self._function(record, interpreted, name, None,
                                                linear=self._linear_ok(record), fused=fused))
        return name

    def _straight_avro(self, f: Field, record: Record, fused: Any) -> tuple[str, str] | None:
        """Straight to Avro, a single decimal, ``xs:date`` or ``xs:dateTime`` element or simple
        content read into its Avro value, no ``Decimal``, ``date`` or ``datetime`` in between:
        (the function giving it from a text of the common form, ``scalars.decimal_avro_bytes``,
        ``date_avro_days``, ``datetime_avro_micros``; the encoder of a decoded value, for any
        other text or an element with attributes), whose names the converter calls; the
        field is then written as ``bytes``, ``int`` or ``long`` (the same encoding as the
        logical type's). A value either refuses (a text the decoder refuses, a decimal beyond
        the precision) raises, and the record is converted by the dict converter, as before.
        None for any other field, or where a kept ``xsi:type`` leaves the element to the
        interpreted one."""
        if fused is None or not isinstance(f.value, Scalar) or f.repeated:
            return None
        kind = f.value.kind
        if kind not in ("decimal", "date", "datetime"):
            return None
        if f.kind not in ("element", "text") or (f.kind == "element" and record.simple_types_field is not None):
            return None
        from .avro import _date_days, _decimal_bytes, _timestamp_micros
        from .scalars import date_avro_days, datetime_avro_micros, decimal_avro_bytes

        avro_type = field_avro(f, set())["type"]
        logical = (avro_type[1] if isinstance(avro_type, list) and len(avro_type) == 2 and avro_type[0] == "null"
                   else avro_type)
        encode: Callable[[Any], Any]
        fast: Callable[[str], Any] | None
        if kind == "decimal":
            fast = decimal_avro_bytes(f.value)
            encode = _decimal_bytes(f.value.scale or 0, f.value.precision or 38)
            written = "bytes"
        elif kind == "date" and isinstance(logical, dict) and logical.get("logicalType") == "date":
            fast, encode, written = date_avro_days(f.value), _date_days, "int"
        elif kind == "datetime" and isinstance(logical, dict) and logical.get("logicalType") == "timestamp-micros":
            fast, encode, written = datetime_avro_micros(f.value), _timestamp_micros, "long"
        else:
            return None
        if fast is None:
            return None
        self._straight_fields[(id(record), id(f))] = written
        return (self._constant(fast, "dx"),
                self._constant(lambda value: None if value is None else encode(value), "de"))

    def _field_type(self, f: Field, fused: Any, record: Record) -> Any:
        """The Avro type of field ``f`` as the encoder generator takes it (a nested record
        converted straight to Avro: its element, which its function appends to the parent's
        ``out`` when the parent writes the field, with no buffer of its own; a decimal, date or
        dateTime read into its Avro value: ``bytes``, ``int`` or ``long``)."""
        from .avro import ENCODED

        written = self._straight_fields.get((id(record), id(f)))
        if written is not None:
            kind = field_avro(f, set())["type"]
            if isinstance(kind, dict) and kind.get("logicalType") is not None:
                return written
            if isinstance(kind, list) and kind[0] == "null" and len(kind) == 2:
                return ["null", written]

        if self._fusable(f, fused):
            if isinstance(f.value, Poly):  # the union's index is written with the record
                encoded = {"type": ENCODED, "function": self._fused_poly(f.value, fused, f.optional and not f.repeated)}
                return {"type": "array", "items": encoded} if f.repeated else encoded
            encoded = {"type": ENCODED, "function": self._fused_name(f.value, fused)}
            return {"type": "array", "items": encoded} if f.repeated else ["null", encoded] if f.optional else encoded
        return fused.define(field_avro(f, set())["type"], None)

    def _function(self, record: Record, interpreted: RecordDecoder, name: str, back: str | None,  # noqa: C901 - one pass per part
                  *, linear: bool, fused: Any = None) -> str:
        """One converter function: returning the record's dict and leaving what it does not
        expect to ``back``; or, with ``fused`` (the Avro generator), appending the record's
        Avro encoding to ``out`` and raising on what it does not expect (its caller then
        drops the whole record's buffer)."""
        fields = record.fields
        body: list[str] = []
        attributes = [(i, f) for i, f in enumerate(fields) if f.kind == "attribute"]
        elements = [(i, f) for i, f in enumerate(fields) if f.kind == "element"]
        text = next((i for i, f in enumerate(fields) if f.kind == "text"), None)
        singles = [i for i, f in enumerate(fields) if f.kind in ("attribute", "element") and not f.repeated]
        arrays = [i for i, f in elements if f.repeated]
        if singles:
            body.append(" = ".join(f"f{i}" for i in singles) + " = M")
        for i in arrays:
            body.append(f"f{i} = []")
        if record.xsi_type_field is not None:
            body.append("xt = None")
        if record.simple_types_field is not None:
            body.append("xts = {}")
        nil_names = {f.name for f in fields if f.kind == "element" and f.nillable and not f.repeated
                     and f.min_occurs == 0} if record.nil_field is not None else set()
        # keys() first: it is linear in the number of attributes, items() is not (a start tag
        # with 250,000 of them must be refused in a fraction of a second: benchmarks/xml_refuse.py)
        body += ["keys = elem.keys()", "if keys:", "    if len(keys) > 32: raise Delegate",
                 "    for key, value in elem.items():"]
        keyword = "if"
        for i, f in attributes:
            convert = "value" if f.value.decode is str else self._inline(f.value, f.value.decode, "value", "a")
            body.append(f"        {keyword} key == {f.qname!r}: f{i} = {convert}")
            keyword = "elif"
        body.append(f"        {keyword} key.startswith(XSI_NS):")
        if record.xsi_type_field is not None:
            body.append("            if key == XSI_TYPE: xt = expanded_type_name(elem, value, D.source_name)")
        else:
            body.append("            pass")
        body.append("        else: raise Delegate")
        if text is not None:
            decode = self._constant(fields[text].value.decode, 't')
            straight = self._straight_avro(fields[text], record, fused)
            if straight is None:
                body.append(f"f{text} = {decode}(elem.text or '')")
            else:  # straight to its Avro value (see _straight_avro)
                body.append(f"f{text} = {straight[0]}(t := elem.text or '') or {straight[1]}({decode}(t))")
            body.append("if len(elem): raise Delegate")
        elif linear:
            body += ["text = elem.text", "if text and not text.isspace(): raise Delegate"]
            if record.order_field is not None:
                body.append("order = []")
            body += self._linear(elements, record, fused)
        else:
            body += ["text = elem.text", "if text and not text.isspace(): raise Delegate"]
            track = interpreted.order is not None
            if track:
                body += ["position = -1", "deviated = False"]
            tags = {f.qname: i for i, f in elements}
            body += ["for child in elem:", "    tag = child.tag",
                     f"    k = {self._constant(tags, 'tags')}.get(tag, -1)",
                     "    if k < 0:", "        if isinstance(tag, str): raise Delegate",
                     "        tail = child.tail", "        if tail and not tail.isspace(): raise Delegate",
                     "        continue"]
            if track:
                body += ["    if k < position: deviated = True", "    position = k"]
            body += self._dispatch(elements, 1, record, fused)
            body += ["    tail = child.tail", "    if tail and not tail.isspace(): raise Delegate"]
            if track:
                body.append("if deviated: raise Delegate")
        if record.nil_field is not None:
            body.append("nils = []")
            body += [f"if f{i} is None: nils.append({f.name!r})" for i, f in elements if f.name in nil_names]
        for i in singles:
            if fields[i].required:
                body.append(f"if f{i} is M: raise Delegate")
        for i in arrays:
            if fields[i].min_occurs > 0:
                body.append(f"if not f{i}: raise Delegate")
        items = []
        for i, f in enumerate(fields):
            if f.kind == "xsitype":
                value = "xt"
            elif f.kind == "order":  # filled by the in-order reading when the document's order differs
                value = "order" if linear and text is None else "[]"
            elif f.kind == "nil":
                value = "nils"
            elif f.kind == "xsitypes":
                value = "xts"

            elif f.kind == "text" or f.repeated or f.required:
                value = f"f{i}"
            elif fused is not None and isinstance(f.value, Poly) and self._fusable(f, fused):
                value = f"f{i}"  # the element or M: its function writes the union's null for M
            else:
                value = f"None if f{i} is M else f{i}"
            items.append((f, value))
        if fused is not None:
            for f, value in items:
                body.append(f"v = {value}")
                body += fused.emit(self._field_type(f, fused, record), "v", 0)
            return "\n".join([f"def {name}(elem, out):"] + ["    " + line for line in body]) + "\n"
        body.append("return {" + ", ".join(f"{f.name!r}: {value}" for f, value in items) + "}")
        lines = [f"def {name}(elem):", "    try:"]
        lines += ["        " + line for line in body]
        # a child's located error is the interpreted converter's already (the end of the child's
        # own chain): converting this element again would only convert the child again, and
        # every ancestor again, 2^depth times in all
        lines += ["    except FOUND:", "        raise", "    except Exception:", f"        return {back}(elem)"]
        return "\n".join(lines) + "\n"

    def _linear(self, elements: list[tuple[int, Field]], record: Record, fused: Any) -> list[str]:
        """Statements reading the children in the order of their fields: each single field
        takes the next child when it has the field's tag, a repeated one the run of children
        with its tag. The values are those the dispatching function gives a document in this
        order (which then sees no deviation from the declared order and no repetition).

        When a child is left over (a comment or processing instruction, a child of an earlier
        field, another order), the reading goes on from it, each child now dispatched on its
        field's index as the dispatching function does (a single field met twice, an unknown
        element, text after a comment: delegated): comments passed over, a child out of order
        accepted as the interpreted converter accepts it, and for a record that lists its
        children's order (``order_field``: ``xs:all``, repeated choices...) that list made as
        the interpreted converter makes it, when a child came before one declared earlier.
        Each child is converted once: a record with comments at every level of a deep document
        costs its size, not 2^depth (the reading started again from the first child before),
        and a record in another order than declared is converted here, not by the interpreted
        converter. No check per child on the common path (lxml's ``iterchildren`` given the
        Element factory, which skips comments, made XML -> Avro 3-6 % slower on
        ``benchmarks/xml_translate.py``)."""
        advance = "child = next(children, END); tag = child.tag"
        # the children as a list made by lxml in one call: its iterator is cheaper per child
        # than lxml's own (about 50 ns a child here)
        lines = ["children = iter(elem.getchildren())", advance]
        for i, f in elements:
            lines.append(f"{'while' if f.repeated else 'if'} tag == {f.qname!r}:")
            lines += ["    tail = child.tail", "    if tail and not tail.isspace(): raise Delegate"]
            lines += self._element(i, f, 1, record, fused, checked=False)
            lines.append(f"    {advance}")
        track = record.order_field is not None
        tags = self._constant({f.qname: i for i, f in elements}, "tags")
        lines.append("if child is not END:  # left over: a comment, another order, a repetition...")
        if track:  # the field read last (the fields were read in their order), then each child's
            lines += ["    position = -1", *[f"    if f{i}{'' if f.repeated else ' is not M'}: position = {i}"
                                             for i, f in elements], "    deviated = False"]
        lines += ["    while child is not END:", f"        k = {tags}.get(tag, -1)",
                  "        if k < 0:", "            if isinstance(tag, str): raise Delegate",
                  "            tail = child.tail", "            if tail and not tail.isspace(): raise Delegate",
                  "        else:"]
        if track:
            lines += ["            if k < position: deviated = True", "            position = k"]
        lines += ["            tail = child.tail", "            if tail and not tail.isspace(): raise Delegate",
                  *self._dispatch(elements, 3, record, fused), f"        {advance}"]
        if track:  # the field of each child element, in document order (RecordDecoder._document_order)
            names = self._constant({f.qname: f.name for _, f in elements}, "names")
            lines.append(f"    if deviated: order = [{names}[c.tag] for c in elem.getchildren() if isinstance(c.tag, str)]")
        return lines

    def _dispatch(self, elements: list[tuple[int, Field]], depth: int, record: Record, fused: Any) -> list[str]:
        """Statements handling ``child`` by its field index ``k``: a binary search, then a chain."""
        pad = "    " * depth
        if len(elements) <= 3:
            lines = []
            for n, (i, f) in enumerate(elements):
                test = "else" if n == len(elements) - 1 else ("if" if n == 0 else "elif") + f" k == {i}"
                lines.append(f"{pad}{test}:")
                lines += self._element(i, f, depth + 1, record, fused)
            return lines
        middle = len(elements) // 2
        return [f"{pad}if k < {elements[middle][0]}:", *self._dispatch(elements[:middle], depth + 1, record, fused),
                f"{pad}else:", *self._dispatch(elements[middle:], depth + 1, record, fused)]

    def _inline(self, scalar: Scalar, decode: Callable[[str], Any], text: str, prefix: str) -> str:
        """An expression decoding ``text`` (an expression, evaluated once): an integer of a
        few plain digits, a float of digits, sign, dot and exponent, a string needing no
        whitespace collapse or a symbol of an enumeration inline (no call), anything else
        (and what ``int`` or ``float`` refuse, raising) through ``decode``. An empty text goes
        to ``decode`` (an element's default value, or its error)."""
        name = self._constant(decode, prefix)
        digits, low = plain_int_digits(scalar)
        symbols = getattr(decode, "enum_symbols", None)  # the bare enumeration check (scalars.py)
        float_chars = getattr(decode, "float_chars", None)  # a float without facets
        collapse = decode is collapse_text  # a string type whose whitespace collapses, nothing to check
        pattern = getattr(decode, "pattern_match", None)  # a string type of one xs:pattern, nothing else
        if not digits and symbols is None and float_chars is None and not collapse and pattern is None:
            return f"{name}({text})"
        var, first = (text, text) if text.isidentifier() else ("t", f"(t := {text})")
        if pattern is not None:
            match = self._constant(pattern, "m")
            if getattr(decode, "collapse", False):  # printable, no space: nothing to collapse
                return f"({var} if {first} and {var}.isprintable() and ' ' not in {var} and {match}({var}) else {name}({var}))"
            return f"({var} if {match}({first}) else {name}({var}))"
        if symbols is not None:
            return f"({var} if {first} in {self._constant(symbols, 's')} else {name}({var}))"
        if float_chars is not None:
            return f"(float({var}) if {first} and not {var}.strip({float_chars!r}) else {name}({var}))"
        if collapse:  # printable, no space: nothing to collapse (scalars._collapse)
            return f"({var} if {first} and {var}.isprintable() and ' ' not in {var} else {name}({var}))"
        if low > 0:  # xs:positiveInteger: 0 is refused by decode
            return (f"(iv if {first}.isdigit() and len({var}) < {digits} and {var}.isascii() and (iv := int({var})) >= {low}"
                    f" else {name}({var}))")
        return f"(int({var}) if {first}.isdigit() and len({var}) < {digits} and {var}.isascii() else {name}({var}))"

    def _element(self, i: int, f: Field, depth: int, record: Record, fused: Any = None, *,
                 checked: bool = True) -> list[str]:
        """Statements converting ``child`` into field ``i`` (``checked``: refusing a second one)."""
        pad = "    " * depth
        lines = [] if f.repeated or not checked else [f"{pad}if f{i} is not M: raise Delegate"]
        if isinstance(f.value, Scalar):
            direct = f.value.decode if f.default is None else _with_default(f.value.decode, f.default)
            full = self._constant(self.decoder.element_converter(f), "c")
            text = "(child.text or '')" if direct is str else self._inline(f.value, direct, "child.text or ''", "d")
            straight = self._straight_avro(f, record, fused)
            if straight is not None:  # straight to its Avro value (see _straight_avro)
                fast, encode = straight
                decode = self._constant(direct, "d")
                lines.append(f"{pad}f{i} = ({encode}({full}(child)) if child.keys() or len(child) else "
                             f"{fast}(t := child.text or '') or {encode}({decode}(t)))")
                return lines
            if record.simple_types_field is None:
                if f.nillable:  # xsi:nil="true" alone: None, as the element's converter gives it, without it
                    full = (f"(None if child.get(XSI_NIL) in NIL and child.keys() == NIL_KEYS and not child.text"
                            f" and not len(child) else {full}(child))")
                else:
                    full = f"{full}(child)"
                value = f"({full} if child.keys() or len(child) else {text})"
            else:  # an xsi:type to keep, as RecordDecoder keeps it: under the field's name (its
                # index too when repeated), also when it names the declared type. Not left to the
                # interpreted converter: it came after the children before it were converted, and
                # each ancestor doing the same converted them again, 2^depth times in all
                key = f"{f.name!r} + '[' + str(len(f{i})) + ']'" if f.repeated else repr(f.name)
                lines += [f"{pad}if child.keys() or len(child):",
                          f"{pad}    value = {full}(child)", f"{pad}    tn = child.get(XSI_TYPE)",
                          f"{pad}    if tn is not None: xts[{key}] = expanded_type_name(child, tn, D.source_name)",
                          f"{pad}else:", f"{pad}    value = {text}"]
                value = "value"
        else:
            if not self._fusable(f, fused):
                value = f"{self._value_expression(f.value)}(child)"
            else:  # the element itself: converted when its parent writes it (see _field_type)
                value = "child"
            value = f"(None if NILLED(child, D.source_name) else {value})" if f.nillable else value
        lines.append(f"{pad}f{i}.append({value})" if f.repeated else f"{pad}f{i} = {value}")
        return lines


def _numbered(exc: XmlValidationError, ancestors: list[set[str]], index: int) -> XmlValidationError:
    """The error with the record's position in the stream in its path (``/orders/order[7]/...``)."""
    parts = (exc.path or "").split("/")
    depth = len(ancestors) + 1
    if len(parts) > depth:
        parts[depth] = parts[depth].split("[")[0] + f"[{index}]"
    return XmlValidationError(exc.message, path="/".join(parts), line=exc.line, source=exc.source, hint=exc.hint)



def _bytes_io(data: bytes) -> IO[bytes]:
    return io.BytesIO(data)


def _detached(elem: Any) -> Any:
    """``elem`` as the root of its own tree (a copy when it has a parent)."""
    if elem.getparent() is None:
        return elem
    clone = copy.deepcopy(elem)
    clone.tail = None
    return clone
