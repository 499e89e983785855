"""The model compiled from an XSD: records, fields and simple types.

One analysis of the schema (with xmlschema) yields :class:`Record`, :class:`Field`,
:class:`Poly` and :class:`Scalar` objects; the Avro schema, the decoder and the encoder are
all generated from them, so the three always agree. The mapping rules are in
``docs/xsd-to-avro.md``. This module knows nothing of the decoder and the encoder
(:class:`coupler.translators.xml.xsd.XsdModel` puts the three together).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import xmlschema
from xmlschema.validators import (
    XsdAnyElement,
    XsdAtomicBuiltin,
    XsdComplexType,
    XsdElement,
    XsdGroup,
    XsdList,
    XsdUnion,
)

from .errors import XsdError
from .naming import avro_name, avro_namespace, is_avro_name, local_name, namespace_of
from .scalars import BUILTIN_KINDS, XS, Scalar, avro_type

XSI = "http://www.w3.org/2001/XMLSchema-instance"
ANY_TYPE = f"{{{XS}}}anyType"


@dataclass(eq=False)
class Field:
    """One field of a record: an element, an attribute, the text of simple content, or xs:any."""

    name: str
    kind: str  # "element" | "attribute" | "text" | "any" | "mixed" | "anyattr" | "xsitype" | "order" | "nil" | "xsitypes"
    qname: str | None  # Clark name of the element or attribute
    value: Any  # Scalar | Record | Poly (None for "any", "mixed" and "anyattr")
    repeated: bool = False
    optional: bool = False
    nillable: bool = False
    min_occurs: int = 1
    wildcard: Any = None  # the XsdAnyElement of an "any" field, the XsdAnyAttribute of "anyattr"
    default: str | None = None  # a simple-typed element's default or fixed value (an empty element takes it)

    @property
    def required(self) -> bool:
        return not self.optional and not self.repeated and self.kind not in ("anyattr", "order", "nil", "xsitypes")


@dataclass(eq=False)
class Record:
    """A complex type mapped to an Avro record."""

    name: str
    namespace: str | None
    xsd_type: Any
    fields: list[Field] = field(default_factory=list)
    type_qname: str | None = None  # the global type's Clark name (for xsi:type), else None
    #: the name of the field listing the child elements in document order, when the content
    #: model lets their order vary (a repeated group of several particles, xs:all, a
    #: substitution group or the same element twice), else None
    order_field: str | None = None
    #: the name of the field keeping the element's own xsi:type (Clark name), else None
    xsi_type_field: str | None = None
    #: the name of the field listing the optional nillable elements written xsi:nil="true"
    #: (their null cannot tell them from absent ones), else None
    nil_field: str | None = None
    #: with ``keep_simple_xsi_types``: the name of the field keeping the xsi:type written on
    #: simple-typed child elements (field name, ``name[index]`` when repeated -> Clark name)
    simple_types_field: str | None = None

    @property
    def fullname(self) -> str:
        return f"{self.namespace}.{self.name}" if self.namespace else self.name

    def field_names(self) -> set[str]:
        return {f.name for f in self.fields}


class _FieldIndex:
    """The field names of a record and its element fields by Clark name (the first of each),
    kept while its content model is walked; fields are added to the record through it."""

    def __init__(self, record: Record):
        self.record = record
        self.names = record.field_names()
        self.elements: dict[str | None, Field] = {}
        for f in record.fields:
            if f.kind == "element":
                self.elements.setdefault(f.qname, f)

    def add(self, f: Field) -> None:
        self.record.fields.append(f)
        self.names.add(f.name)
        if f.kind == "element":
            self.elements.setdefault(f.qname, f)


@dataclass(eq=False)
class Poly:
    """An element whose type may be replaced by a derived type through ``xsi:type``."""

    declared: Record | None  # None when the declared type is abstract
    branches: list[Record]

    def branch(self, type_qname: str) -> Record | None:
        for record in self.branches:
            if record.type_qname == type_qname:
                return record
        return None


def value_avro(value: Any, defined: set[str]) -> Any:
    if isinstance(value, Scalar):
        return avro_type(value, defined)
    if isinstance(value, Poly):
        branches = [value_avro(b, defined) for b in value.branches]
        return branches if len(branches) > 1 else branches[0]
    record: Record = value
    if record.fullname in defined:
        return record.fullname
    defined.add(record.fullname)
    schema: dict[str, Any] = {"type": "record", "name": record.name}
    if record.namespace:
        schema["namespace"] = record.namespace
    schema["fields"] = [field_avro(f, defined) for f in record.fields]
    return schema


_DOCS = {"element": "element", "attribute": "attribute", "text": "text content", "any": "xs:any",
         "mixed": "mixed content (XML)", "anyattr": "xs:anyAttribute (Clark name -> text)",
         "xsitype": "the xsi:type the element named (Clark name), null when it named none",
         "order": "the fields of the child elements in document order (one entry per element)",
         "nil": "the optional nillable element fields written xsi:nil=\"true\" (null alone means absent)",
         "xsitypes": "the xsi:type written on simple-typed child elements: field name (name[index] when repeated) -> Clark name"}


def field_avro(f: Field, defined: set[str]) -> dict[str, Any]:
    if f.kind == "nil":
        return {"name": f.name, "doc": _DOCS[f.kind], "type": {"type": "array", "items": "string"}, "default": []}
    if f.kind == "xsitypes":
        return {"name": f.name, "doc": _DOCS[f.kind], "type": {"type": "map", "values": "string"}, "default": {}}
    if f.kind in ("xsitype", "order"):
        out_type: Any = ["null", "string"] if f.kind == "xsitype" else {"type": "array", "items": "string"}
        return {"name": f.name, "doc": _DOCS[f.kind], "type": out_type, "default": None if f.kind == "xsitype" else []}
    inner = "string" if f.kind in ("any", "mixed") else value_avro(f.value, defined) if f.kind != "anyattr" else None
    doc = _DOCS[f.kind]
    out: dict[str, Any] = {"name": f.name}
    if f.qname:
        doc = f"{doc} {f.qname}"
    out["doc"] = doc
    if f.kind == "anyattr":
        out["type"] = {"type": "map", "values": "string"}
        out["default"] = {}
    elif f.repeated:
        out["type"] = {"type": "array", "items": inner}
        if f.min_occurs == 0:
            out["default"] = []
    elif f.optional:
        out["type"] = ["null", *inner] if isinstance(inner, list) else ["null", inner]
        out["default"] = None
    else:
        out["type"] = inner
    return out


class SchemaModel:
    """An XSD compiled into records: the Avro schemas of its global elements."""

    def __init__(self, schema: xmlschema.XMLSchema, source: str = "<schema>", *, keep_simple_xsi_types: bool = False):
        self.schema = schema
        self.source = source
        #: records with simple-typed child elements get a field keeping their xsi:type (a
        #: redundant one too, as SOAP-encoded messages write them); off: accepted, not kept
        self.keep_simple_xsi_types = keep_simple_xsi_types
        self._records: dict[int, Record] = {}
        self._scalars: dict[int, Scalar] = {}
        self._names: dict[str, int] = {}
        self._derived = self._derived_types()

    # -- global elements -------------------------------------------------------------------

    def global_elements(self) -> list[str]:
        """The local names of the schema's global elements (XML Schema's own left out), sorted:
        what :meth:`element` chooses from."""
        return sorted(e.local_name for e in self._global_elements())

    def _global_elements(self) -> list[XsdElement]:
        elements = self.schema.maps.elements
        return [e for e in elements.values() if e.schema.target_namespace != XS and not _is_builtin_schema(e)]

    def element(self, name: str | None = None) -> XsdElement:
        """The global element ``name`` (local name, ``prefix:local`` or ``{ns}local``)."""
        elements = self.schema.maps.elements
        candidates = self._global_elements()
        if name is None:
            if len(candidates) == 1:
                return candidates[0]
            names = ", ".join(sorted(e.local_name for e in candidates))
            raise XsdError(
                f"the schema declares several global elements ({names})",
                where=self.source,
                hint="choose one with --element NAME",
            )
        if name.startswith("{"):
            found = [elements[name]] if name in elements else []
        else:
            prefix, _, local = name.rpartition(":")
            uri = self.schema.namespaces.get(prefix) if prefix else None
            found = [e for e in candidates if e.local_name == local and (uri is None or namespace_of(e.name) == uri)]
        if len(found) != 1:
            names = ", ".join(sorted(e.local_name for e in candidates))
            problem = "is ambiguous" if found else "is not a global element of the schema"
            raise XsdError(f"element {name!r} {problem}", where=self.source, hint=f"global elements: {names}")
        return found[0]

    def root_value(self, name: str | None = None) -> Record | Poly:
        elem = self.element(name)
        value = self.element_value(elem)
        if isinstance(value, Scalar):
            raise XsdError(
                f"element {elem.local_name!r} has a simple type; a record needs a complex type",
                where=self.source,
            )
        return value

    def avro_schema(self, name: str | None = None) -> Any:
        """The Avro schema (JSON-ready) of the records of global element ``name``."""
        return value_avro(self.root_value(name), set())

    # -- compilation -----------------------------------------------------------------------

    def element_value(self, elem: XsdElement, parent: Record | None = None) -> Scalar | Record | Poly:
        xsd_type = elem.type
        if xsd_type.is_simple():
            return self.scalar(xsd_type, elem.local_name, parent)
        assert isinstance(xsd_type, XsdComplexType)
        record = self.record(xsd_type, elem, parent)
        derived = [] if _blocks(elem, xsd_type) else self._derived.get(xsd_type.name or "", [])
        if not derived and not xsd_type.abstract:
            return record
        branches = [] if xsd_type.abstract else [record]
        for sub in derived:
            if not sub.abstract:
                branches.append(self.record(sub, None, None))
        if not branches:
            # an extension point (SAML's BaseID): only a type of another schema can fill it, so
            # a document using it is refused (by xsi:type) unless that schema is loaded too
            return Poly(None, [record])
        return Poly(None if xsd_type.abstract else record, branches)

    def record(self, xsd_type: XsdComplexType, elem: XsdElement | None, parent: Record | None) -> Record:
        known = self._records.get(id(xsd_type))
        if known is not None:
            return known
        if xsd_type.name:
            name, uri = xsd_type.local_name or "", namespace_of(xsd_type.name)
        else:
            assert elem is not None
            name, uri = elem.local_name or "", namespace_of(elem.name or "") or (elem.schema.target_namespace or "")
        record = Record(avro_name(name), avro_namespace(uri), xsd_type, type_qname=xsd_type.name)
        self._claim_name(record, parent, id(xsd_type))
        self._records[id(xsd_type)] = record
        if xsd_type.has_simple_content():
            content = xsd_type.content
            record.fields.append(Field("value", "text", None, self.scalar(content, "value", record)))
        elif is_mixed(xsd_type):
            record.fields.append(Field("content", "mixed", None, None, optional=True))
        elif isinstance(xsd_type.content, XsdGroup):
            self._walk(record, xsd_type.content, 1, 1)
        self._attributes(record, xsd_type)
        if xsd_type.name:  # an xsi:type can name it (also where it is the declared type)
            record.xsi_type_field = self._unique(record, "xsi_type")
            record.fields.append(Field(record.xsi_type_field, "xsitype", None, None, optional=True))
        if record.order_field is not None:
            record.order_field = self._unique(record, "element_order")
            record.fields.append(Field(record.order_field, "order", None, None, repeated=True, min_occurs=0))
        elements = [f for f in record.fields if f.kind == "element"]
        if any(f.nillable and not f.repeated and f.min_occurs == 0 for f in elements):
            record.nil_field = self._unique(record, "xsi_nil")
            record.fields.append(Field(record.nil_field, "nil", None, None, repeated=True, min_occurs=0))
        if self.keep_simple_xsi_types and any(isinstance(f.value, Scalar) for f in elements):
            record.simple_types_field = self._unique(record, "xsi_types")
            record.fields.append(Field(record.simple_types_field, "xsitypes", None, None))
        return record

    def _claim_name(self, record: Record, parent: Record | None, key: int) -> None:
        base = record.name
        candidates = [base]
        if parent is not None:
            candidates.append(f"{parent.name}_{base}")
        candidates += [f"{candidates[-1]}_{n}" for n in range(2, 100)]
        for candidate in candidates:
            full = f"{record.namespace}.{candidate}" if record.namespace else candidate
            if self._names.get(full, key) == key:
                self._names[full] = key
                record.name = candidate
                return
        raise XsdError(f"cannot find a unique Avro name for {base}", where=self.source)

    def _walk(self, record: Record, group: XsdGroup, min_f: int, max_f: int | None,
              index: _FieldIndex | None = None) -> int:
        """Add the fields of ``group``; returns how many element particles it holds, and marks
        the record as keeping its children's order where the group lets that order vary.
        ``index``: the record's field names and element fields, kept as they are added (a
        search of the fields per particle made a sequence of 4,000 elements quadratic)."""
        if index is None:
            index = _FieldIndex(record)
        gmin = group.min_occurs * min_f
        gmax = None if group.max_occurs is None or max_f is None else group.max_occurs * max_f
        own_max = group.max_occurs
        choice = group.model == "choice" and len(group) > 1
        particles = 0
        for item in group:
            if isinstance(item, XsdGroup):
                particles += self._walk(record, item, 0 if choice else gmin, gmax, index)
            elif isinstance(item, XsdAnyElement):
                emin, emax = _occurs(item, 0 if choice else gmin, gmax)
                name = self._unique(record, "any", index.names)
                index.add(Field(name, "any", None, None, repeated=emax is None or emax > 1,
                                optional=emin == 0, min_occurs=emin, wildcard=item))
                particles += 1
            elif isinstance(item, XsdElement):
                emin, emax = _occurs(item, 0 if choice else gmin, gmax)
                members = self._substitutes(item)
                if len(members) > 1:
                    emin = 0
                    if emax is None or emax > 1:
                        record.order_field = ""  # repeated members of a substitution group mix
                for member in members:
                    self._element_field(record, member, emin, emax, index)
                particles += len(members)
        if particles > 1 and (own_max is None or own_max > 1 or group.model == "all"):
            record.order_field = ""  # named when the record is complete (see record())
        return particles

    def _substitutes(self, elem: XsdElement) -> list[XsdElement]:
        head = elem.ref if elem.ref is not None else elem
        groups = self.schema.maps.substitution_groups
        if head.name not in groups or "substitution" in (head.block or ""):
            return [elem]
        members = [] if head.abstract else [elem]
        pending = list(groups[head.name])
        while pending:
            member = pending.pop(0)
            if not member.abstract:
                members.append(member)
            pending.extend(sorted(groups.get(member.name, ()), key=lambda e: e.name))
        return sorted(members, key=lambda e: (e is not elem, e.name))

    def _element_field(self, record: Record, elem: XsdElement, emin: int, emax: int | None,
                       index: _FieldIndex) -> None:
        qname = elem.name
        existing = index.elements.get(qname)
        if existing is not None:
            existing.repeated = True  # the same element twice in the model: one array
            record.order_field = ""  # ... whose items the document places apart
            existing.optional = False
            existing.min_occurs = min(existing.min_occurs, emin)
            return
        name = self._unique(record, avro_name(elem.local_name), index.names)
        default = elem.default if elem.default is not None else elem.fixed
        f = Field(name, "element", qname, None, nillable=bool(elem.nillable), min_occurs=emin,
                  default=None if default is None else str(default))
        f.repeated = emax is None or emax > 1
        f.optional = not f.repeated and (emin == 0 or f.nillable)
        index.add(f)
        f.value = self.element_value(elem, record)

    def _attributes(self, record: Record, xsd_type: XsdComplexType) -> None:
        attributes = []
        for key, attr in xsd_type.attributes.items():
            if key is None or attr.use == "prohibited" or not hasattr(attr, "type"):
                continue
            attributes.append(attr)
        position = 0
        for attr in attributes:
            base = avro_name(attr.local_name or "")
            name = base if base not in record.field_names() else self._unique(record, f"{base}_attr")
            scalar = self.scalar(attr.type, f"{record.name}_{name}", record)
            record.fields.insert(position, Field(name, "attribute", attr.name, scalar, optional=attr.use != "required"))
            position += 1
        wildcard = xsd_type.attributes.get(None) if hasattr(xsd_type.attributes, "get") else None
        if wildcard is not None:
            name = self._unique(record, "any_attributes")
            record.fields.insert(position, Field(name, "anyattr", None, None, wildcard=wildcard))

    @staticmethod
    def _unique(record: Record, name: str, taken: set[str] | None = None) -> str:
        """``name``, or ``name_2``, ``name_3``... the first no field of ``record`` has (``taken``:
        the names of its fields, when the caller keeps them)."""
        taken = record.field_names() if taken is None else taken
        if name not in taken:
            return name
        n = 2
        while f"{name}_{n}" in taken:
            n += 1
        return f"{name}_{n}"

    def scalar(self, xsd_type: Any, hint: str, parent: Record | None) -> Scalar:
        known = self._scalars.get(id(xsd_type))
        if known is not None:
            return known
        scalar = self._make_scalar(xsd_type, hint, parent)
        self._scalars[id(xsd_type)] = scalar
        return scalar

    def _make_scalar(self, xsd_type: Any, hint: str, parent: Record | None) -> Scalar:
        if isinstance(xsd_type, XsdList):
            item = self.scalar(xsd_type.item_type, hint, parent)
            return Scalar("list", item=item, xsd_type=xsd_type, check_facets=not _is_plain(xsd_type))
        if isinstance(xsd_type, XsdUnion) or not xsd_type.is_atomic():
            return Scalar("string", xsd_type=xsd_type, check_facets=True)
        builtin = xsd_type
        while builtin is not None and not isinstance(builtin, XsdAtomicBuiltin):
            builtin = builtin.base_type
        if builtin is None:  # a restriction of xs:anySimpleType: text, checked against its facets
            return Scalar("string", xsd_type=xsd_type, check_facets=True)
        builtin_name = local_name(builtin.name or "")
        kind = BUILTIN_KINDS.get(builtin_name, "string")
        white_space = getattr(xsd_type, "white_space", None) or "preserve"
        check = not isinstance(xsd_type, XsdAtomicBuiltin)
        precision = scale = None
        if kind == "decimal":
            total, fraction = _facet(xsd_type, "totalDigits"), _facet(xsd_type, "fractionDigits")
            if fraction is None or total is None:
                kind = "decimal_text"  # the integer digits (or the scale) are unbounded: keep the exact text
            else:
                # every value the facets allow: up to `total` integer digits, then `fraction` at the scale
                scale, precision = fraction, total + fraction
        symbols: tuple[str, ...] = ()
        enum_name = enum_ns = None
        enumeration = getattr(xsd_type, "enumeration", None)
        if kind == "string" and enumeration:
            values = [str(v) for v in enumeration]
            if all(is_avro_name(v) for v in values) and len(set(values)) == len(values):
                kind, symbols = "enum", tuple(values)
                if xsd_type.name:
                    enum_name, uri = avro_name(xsd_type.local_name), namespace_of(xsd_type.name)
                else:
                    enum_name = avro_name(hint)
                    uri = (parent.xsd_type.schema.target_namespace if parent else "") or ""
                enum_ns = avro_namespace(uri)
                check = False
        return Scalar(kind, builtin=builtin_name, white_space=white_space, precision=precision,
                      scale=scale, symbols=symbols, enum_name=enum_name, enum_namespace=enum_ns,
                      xsd_type=xsd_type, check_facets=check)

    def _derived_types(self) -> dict[str, list[XsdComplexType]]:
        derived: dict[str, list[XsdComplexType]] = {}
        for xsd_type in self.schema.maps.types.values():
            if not isinstance(xsd_type, XsdComplexType) or not xsd_type.name or _is_builtin_schema(xsd_type):
                continue
            base = xsd_type.base_type
            while base is not None and getattr(base, "name", None) and base.name != ANY_TYPE:
                if "extension" in (base.block or "") and xsd_type.derivation == "extension":
                    break
                derived.setdefault(base.name or "", []).append(xsd_type)
                base = base.base_type
        for subs in derived.values():
            subs.sort(key=lambda t: t.name or "")
        return derived


def _occurs(item: Any, min_f: int, max_f: int | None) -> tuple[int, int | None]:
    emin = item.min_occurs * min_f
    emax = None if item.max_occurs is None or max_f is None else item.max_occurs * max_f
    return emin, emax


def _facet(xsd_type: Any, facet: str) -> int | None:
    qname = f"{{{XS}}}{facet}"
    while xsd_type is not None and not isinstance(xsd_type, XsdAtomicBuiltin):
        found = getattr(xsd_type, "facets", {}).get(qname)
        if found is not None:
            return int(found.value)
        xsd_type = xsd_type.base_type
    return None


def is_mixed(xsd_type: Any) -> bool:
    """Complex content with text between the children (``mixed="true"``) or ``xs:anyType``."""
    if xsd_type.name == ANY_TYPE:
        return True
    return bool(xsd_type.mixed) and not xsd_type.has_simple_content()


def _is_plain(xsd_type: Any) -> bool:
    return not getattr(xsd_type, "facets", None)


def _blocks(elem: XsdElement, xsd_type: Any) -> bool:
    block = f"{elem.block or ''} {xsd_type.block or ''}"
    return "extension" in block and "restriction" in block


def _is_builtin_schema(component: Any) -> bool:
    return namespace_of(component.name or "") in (XS, XSI, "http://www.w3.org/XML/1998/namespace")
