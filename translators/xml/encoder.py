"""Records -> XML: elements built from the XSD model, then validated with xmlschema.

Values are written in the lexical forms the schema needs (a decimal whose type has a pattern
with every digit of its scale, times and date-times with the offset they carry); JSON-friendly
inputs are accepted too (decimals, dates and times as strings, bytes as base64 strings).
Validation reports the first error only, so refusing costs time linear in the document.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lxml import etree

from coupler.canonical.errors import CouplerError

from .decoder import (
    TYPE_KEY,
    XSI_NIL,
    XSI_TYPE,
    Decoder,
    first_element_error,
    first_validation_error,
)
from .errors import XmlValidationError, XsdError
from .model import XSI, Field, Poly, Record
from .naming import local_name, namespace_of
from .scalars import Scalar
from .security import safe_parser

if TYPE_CHECKING:
    from .model import SchemaModel


class RecordError(ValueError):
    """A record value that cannot be written; ``path`` is the key path inside the record."""

    def __init__(self, message: str, path: list[str]):
        super().__init__(message)
        self.path = path


class Encoder:
    """Builds XML elements of one global element from records shaped like its Avro schema."""

    def __init__(self, model: SchemaModel, element_name: str):
        self.model = model
        self.element = model.element(element_name)
        self.value = model.root_value(element_name)
        self.nsmap = _namespace_map(model, default=not _needs_prefixes(self.value))
        self._declarations: dict[str, Any] = {}  # qname -> its XsdElement (None: not found)

    # -- public ----------------------------------------------------------------------------

    def encode(self, record: dict[str, Any], *, validate: bool = True, label: str = "record") -> bytes:
        """One record -> a complete XML document (UTF-8 bytes with a declaration)."""
        root = self.build(record, label=label)
        if validate:
            self.validate(root, label)
        return etree.tostring(root, xml_declaration=True, encoding="UTF-8", pretty_print=True)

    def build(self, record: dict[str, Any], *, label: str = "record", tag: str | None = None) -> Any:
        root = etree.Element(tag or self.element.name, nsmap=self.nsmap)
        try:
            self._value(self.value, record, root, [])
        except RecordError as exc:
            raise XmlValidationError(str(exc), source=label, path="." + ".".join(exc.path) if exc.path else None) from None
        return root

    def validate(self, root: Any, label: str) -> None:
        _first_error(lambda: first_validation_error(self.model.schema, etree.ElementTree(root)), label)

    def write_stream(self, records: Iterable[dict[str, Any]], output: str | Path, record_path: str,
                     *, validate: bool = True, wrapper: dict[str, Any] | None = None) -> int:
        """Write many records as the repeated element at ``record_path`` (``orders/order``).

        The enclosing elements are written empty (their other content is not known); each
        record element is validated against its declaration. Returns the record count.
        """
        decoder = Decoder(self.model, self.element.name)
        steps = decoder.resolve_path(record_path)
        fields = self._path_fields(record_path)
        count = 0
        tags = [sorted(tags)[0] for tags, _ in steps]
        # the enclosing elements, written once: the namespaces (xsi among them) are declared
        # on the outermost, and each record's own copy of those declarations is left out
        head = tail = b""
        declared: list[bytes] = []
        if len(tags) > 1:
            outer = etree.Element(tags[0], nsmap=self.nsmap)
            inner = outer
            for tag in tags[1:-1]:
                inner = etree.SubElement(inner, tag)
            inner.append(etree.Comment("records"))
            head, tail = etree.tostring(outer, encoding="UTF-8", xml_declaration=False).split(b"<!--records-->")
            head, tail = head + b"\n", tail + b"\n"
            declared = [f' xmlns{":" + p if p else ""}="{uri}"'.encode() for p, uri in self.nsmap.items()]
        last = fields[-1]
        with open(output, "wb") as out:
            out.write(b"<?xml version='1.0' encoding='UTF-8'?>\n" + head)
            for index, record in enumerate(records, 1):
                label = f"record {index}"
                elem = etree.Element(tags[-1], nsmap=self.nsmap)
                try:
                    self._value(last.value, record, elem, [])
                except RecordError as exc:
                    raise XmlValidationError(str(exc), source=label, path="." + ".".join(exc.path)) from None
                if validate:
                    self._validate_part(elem, last, label)
                text = etree.tostring(elem, encoding="UTF-8", xml_declaration=False, pretty_print=True)
                end = text.index(b">")
                start_tag = text[:end]
                for declaration in declared:
                    start_tag = start_tag.replace(declaration, b"", 1)
                out.write(start_tag + text[end:])
                count += 1
            out.write(tail)
        return count

    # -- building --------------------------------------------------------------------------

    def _value(self, value: Any, data: Any, elem: Any, path: list[str]) -> None:
        if isinstance(value, Poly):
            record, data = self._branch(value, data, path)
            if record is not value.declared:
                elem.set(XSI_TYPE, _type_qname(record.type_qname or "", elem, path))
            self._record(record, data, elem, path)
        elif isinstance(value, Record):
            self._record(value, data, elem, path)
        else:
            self._scalar(value, data, elem, path)

    def _record(self, record: Record, data: Any, elem: Any, path: list[str]) -> None:
        if not isinstance(data, dict):
            raise RecordError(f"expected a record {record.name}, got {type(data).__name__}", path)
        known = record.field_names() | {TYPE_KEY}
        for key in data:
            if key not in known:
                raise RecordError(f"unknown field {key!r} in {record.name}", [*path, key])
        order = data.get(record.order_field) if record.order_field is not None else None
        notes = _notes(record, data, path)
        if order:
            self._ordered_children(record, data, order, elem, path, notes)
        for f in record.fields:
            here = [*path, f.name]
            item = data.get(f.name)
            if f.kind == "anyattr":
                if not isinstance(item or {}, dict):
                    raise RecordError(f"expected a map of attributes, got {type(item).__name__}", here)
                for key, text in (item or {}).items():
                    if not isinstance(key, str) or not isinstance(text, str):
                        raise RecordError("attribute names and values must be strings", [*here, str(key)])
                    try:
                        elem.set(key, text)
                    except ValueError as exc:
                        raise RecordError(f"attribute {key!r}: {exc}", [*here, key]) from None
            elif f.kind == "mixed":
                if item is not None:
                    holder = _parse_fragment(f"<x>{item}</x>" if isinstance(item, str) else item, here)
                    elem.text = holder.text
                    for child in holder:
                        elem.append(child)
            elif f.kind == "attribute":
                if item is None:
                    if f.required:
                        raise RecordError(f"missing required attribute field {f.name!r}", here)
                    continue
                elem.set(f.qname, self._text(f.value, item, here))
            elif f.kind == "text":
                elem.text = self._text(f.value, item, here)
            elif f.kind == "xsitype":
                if item is not None and elem.get(XSI_TYPE) is None:
                    elem.set(XSI_TYPE, _type_qname(item, elem, here))
            elif f.kind in ("order", "nil", "xsitypes") or order:
                continue  # the children were written in document order above; the notes: see _Notes
            elif f.kind == "any":
                for text in _as_list(item, f, here):
                    elem.append(_parse_fragment(text, here))
            else:
                self._element(f, item, elem, here, notes)

    def _ordered_children(self, record: Record, data: dict[str, Any], order: Any, elem: Any, path: list[str],
                          notes: _Notes) -> None:
        """The child elements in the order the record's order field lists them (each entry
        takes the next value of its field); values it does not list follow in declaration order."""
        if not isinstance(order, list | tuple) or not all(isinstance(n, str) for n in order):
            raise RecordError("expected a list of field names", [*path, record.order_field or ""])
        fields = {f.name: f for f in record.fields if f.kind in ("element", "any")}
        values = {name: _as_list(data.get(name), f, [*path, name]) if f.repeated else [data.get(name)]
                  for name, f in fields.items()}
        used = dict.fromkeys(fields, 0)
        where = [*path, record.order_field or ""]
        for name in order:
            f = fields.get(name)
            if f is None:
                raise RecordError(f"{name!r} is not an element field of {record.name}", where)
            index = used[name]
            if index >= len(values[name]):
                raise RecordError(f"{name!r} is listed more often than it has values", where)
            used[name] = index + 1
            self._child(f, values[name][index], elem, [*path, f"{name}[{index}]" if f.repeated else name], notes, index)
        for name, f in fields.items():
            if not f.repeated:
                if not used[name]:
                    self._child(f, values[name][0], elem, [*path, name], notes, 0)
                continue
            for index in range(used[name], len(values[name])):
                self._child(f, values[name][index], elem, [*path, f"{name}[{index}]"], notes, index)

    def _child(self, f: Field, entry: Any, parent: Any, path: list[str], notes: _Notes, index: int) -> None:
        """One value of an element or xs:any field (a single field's None: see _element)."""
        if f.kind == "any":
            if entry is not None:
                parent.append(_parse_fragment(entry, path))
            return
        if not f.repeated:
            self._element(f, entry, parent, path, notes)
            return
        child = etree.SubElement(parent, f.qname)
        self._value(f.value, entry, child, path)
        notes.type_of(f, f"{f.name}[{index}]", child, path)

    def _element(self, f: Field, item: Any, parent: Any, path: list[str], notes: _Notes | None = None) -> None:
        """``notes``: what the record says of its children besides their values (see _Notes)."""
        notes = notes or _NO_NOTES
        if f.repeated:
            for index, entry in enumerate(_as_list(item, f, path)):
                child = etree.SubElement(parent, f.qname)
                where = [*path[:-1], f"{path[-1]}[{index}]"]
                self._value(f.value, entry, child, where)
                notes.type_of(f, f"{f.name}[{index}]", child, where)
            return
        if item is None:
            if f.nillable and (f.min_occurs > 0 or f.name in notes.nil):
                etree.SubElement(parent, f.qname).set(XSI_NIL, "true")
            elif f.required:
                raise RecordError(f"missing required field {f.name!r}", path)
            return
        child = etree.SubElement(parent, f.qname)
        self._value(f.value, item, child, path)
        notes.type_of(f, f.name, child, path)

    def _scalar(self, scalar: Scalar, item: Any, elem: Any, path: list[str]) -> None:
        elem.text = self._text(scalar, item, path)

    @staticmethod
    def _text(scalar: Scalar, item: Any, path: list[str]) -> str:
        try:
            return scalar.encode(item)
        except (ValueError, TypeError, ArithmeticError) as exc:  # OverflowError is an ArithmeticError
            raise RecordError(str(exc), path) from None

    def _branch(self, poly: Poly, data: Any, path: list[str]) -> tuple[Record, Any]:
        if isinstance(data, tuple) and len(data) == 2 and isinstance(data[0], str):
            data = {**data[1], TYPE_KEY: data[0]}  # fastavro's return_record_name=True form
        if not isinstance(data, dict):
            raise RecordError(f"expected a record, got {type(data).__name__}", path)
        wanted = data.get(TYPE_KEY)
        if wanted is not None:
            for record in poly.branches:
                if wanted in (record.fullname, record.name, record.type_qname):
                    return record, data
            names = ", ".join(r.fullname for r in poly.branches)
            raise RecordError(f"{TYPE_KEY} {wanted!r} is not one of {names}", path)
        keys = set(data) - {TYPE_KEY}
        fitting = [r for r in poly.branches if keys <= r.field_names()]
        if not fitting:
            raise RecordError(f"the fields {sorted(keys)} match no type of this element", path)
        return min(fitting, key=lambda r: len(r.field_names() - keys)), data

    # -- streaming helpers -----------------------------------------------------------------

    def _path_fields(self, record_path: str) -> list[Field]:
        names = [p for p in record_path.strip("/").split("/") if p][1:]
        fields: list[Field] = []
        value: Any = self.value
        for step in names:
            records = value.branches if isinstance(value, Poly) else [value]
            match = [f for r in records for f in r.fields if f.kind == "element" and local_name(f.qname or "") == local_name(step)]
            if not match:
                raise XsdError(f"record path {record_path!r}: no element {step!r}")
            fields.append(match[0])
            value = match[0].value
        if not fields:
            raise XsdError("a record path for encoding needs at least two steps (root/record)")
        return fields

    def _validate_part(self, elem: Any, f: Field, label: str) -> None:
        decl = self._declaration(f.qname or "")
        if decl is None:
            return
        _first_error(lambda: first_element_error(decl, elem), label)

    def _declaration(self, qname: str) -> Any:
        """The declaration of the element ``qname`` (global, else the first local one), found
        once per encoder: a stream validates each record against it."""
        if qname not in self._declarations:
            self._declarations[qname] = self._find_declaration(qname)
        return self._declarations[qname]

    def _find_declaration(self, qname: str) -> Any:
        for xsd_elem in self.model.schema.maps.elements.values():
            if xsd_elem.name == qname:
                return xsd_elem
        for component in self.model.schema.iter_components():
            if getattr(component, "name", None) == qname and hasattr(component, "iter_errors") and hasattr(component, "min_occurs"):
                return component
        return None


class _Notes:
    """What a record says of its children besides their values: the optional nillable ones
    written ``xsi:nil`` (``xsi_nil``) and the ``xsi:type`` of simple-typed ones (``xsi_types``)."""

    def __init__(self, nil: frozenset[str] = frozenset(), types: dict[str, str] | None = None):
        self.nil = nil
        self.types = types or {}

    def type_of(self, f: Field, key: str, child: Any, path: list[str]) -> None:
        type_name = self.types.get(key) if self.types and isinstance(f.value, Scalar) else None
        if type_name is not None:
            child.set(XSI_TYPE, _type_qname(type_name, child, path))


_NO_NOTES = _Notes()


def _notes(record: Record, data: dict[str, Any], path: list[str]) -> _Notes:
    nil = data.get(record.nil_field) if record.nil_field is not None else None
    types = data.get(record.simple_types_field) if record.simple_types_field is not None else None
    if not nil and not types:
        return _NO_NOTES
    if not isinstance(nil or [], list | tuple) or not all(isinstance(n, str) for n in nil or []):
        raise RecordError("expected a list of field names", [*path, record.nil_field or ""])
    if not isinstance(types or {}, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                     for k, v in (types or {}).items()):
        raise RecordError("expected a map of field names to type names", [*path, record.simple_types_field or ""])
    return _Notes(frozenset(nil or ()), dict(types or {}))


def _type_qname(item: Any, elem: Any, path: list[str]) -> Any:
    """An xsi:type kept as a Clark name, written as a QName: with a prefix in scope for its
    namespace (unprefixed for the default namespace), else one lxml declares on the element."""
    if not isinstance(item, str) or not item.strip():
        raise RecordError("expected the Clark name of a type ({namespace}name)", path)
    uri, local = namespace_of(item), local_name(item)
    if not uri:
        if elem.nsmap.get(None):
            raise RecordError(f"cannot name the type {local!r} (no namespace) under a default namespace", path)
        return local
    prefixes = [p for p, bound in elem.nsmap.items() if bound == uri]
    if prefixes:
        named = sorted(p for p in prefixes if p)
        return f"{named[0]}:{local}" if named else local
    return etree.QName(uri, local)  # lxml declares a prefix for it


def _as_list(item: Any, f: Field, path: list[str]) -> list[Any]:
    if item is None:
        if f.repeated and f.min_occurs > 0:
            raise RecordError(f"missing required field {f.name!r}", path)
        return []
    if f.repeated:
        if not isinstance(item, list | tuple):
            raise RecordError(f"expected a list, got {type(item).__name__}", path)
        return list(item)
    return [item]


def _parse_fragment(text: Any, path: list[str]) -> Any:
    if not isinstance(text, str):
        raise RecordError(f"expected a string holding XML, got {type(text).__name__}", path)
    try:
        root = etree.fromstring(text.encode("utf-8"), safe_parser())
    except etree.XMLSyntaxError as exc:
        raise RecordError(f"not well-formed XML: {exc.msg}", path) from None
    return root


def _first_error(first: Callable[[], Any], label: str) -> None:
    """Raise the first validation error of the XML written (``first()``: it, or None), found
    in xmlschema's strict mode: the validation stops there (one error built, never all)."""
    try:
        error = first()
    except CouplerError:
        raise
    except Exception as exc:  # noqa: BLE001 - xmlschema's own failures
        raise XmlValidationError(f"the XML written cannot be validated: {type(exc).__name__}: {exc}".splitlines()[0],
                                 source=label) from None
    if error is not None:
        reason = (error.reason or error.message or "invalid").strip().splitlines()[0]
        raise XmlValidationError(f"the XML written does not validate: {reason}", source=label, path=error.path)


def _needs_prefixes(value: Any) -> bool:
    """Whether the output must not bind a default namespace: lxml writes an element without a
    namespace (an unqualified local element) under a default-namespace parent without
    ``xmlns=""``, which would put it in the parent's namespace."""
    seen: set[int] = set()
    pending = [value]
    while pending:
        current = pending.pop()
        records = current.branches if isinstance(current, Poly) else [current] if isinstance(current, Record) else []
        for record in records:
            if id(record) in seen:
                continue
            seen.add(id(record))
            for f in record.fields:
                if f.kind == "element" and not (f.qname or "").startswith("{"):
                    return True
                if f.kind == "element":
                    pending.append(f.value)
    return False


def _namespace_map(model: SchemaModel, *, default: bool = True) -> dict[str | None, str]:
    """Prefixes for the output: the user schemas' own prefixes for their namespaces, plus ``xsi``;
    without ``default`` no namespace is bound to the empty prefix."""
    targets = {
        s.target_namespace
        for s in model.schema.maps.iter_schemas()
        if s.target_namespace and not s.target_namespace.startswith("http://www.w3.org/")
    }
    nsmap: dict[str | None, str] = {}
    for schema in model.schema.maps.iter_schemas():
        for prefix, uri in schema.namespaces.items():
            if (prefix or default) and uri in targets and uri not in nsmap.values() and (prefix or None) not in nsmap:
                nsmap[prefix or None] = uri
    for n, uri in enumerate(sorted(targets - set(nsmap.values())), 1):
        nsmap[f"ns{n}"] = uri
    nsmap.setdefault("xsi", XSI)
    return nsmap
