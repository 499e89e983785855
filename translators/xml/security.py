"""Safe XML and XSD loading: no external entities, no entity expansion, no network.

Documents are parsed by lxml with entity resolution and DTD loading off and the network
disabled; a document whose DTD declares entities (the vehicle of XXE, billion laughs and
quadratic blow-up) or references an external DTD is refused outright. Schemas are loaded by
xmlschema with ``allow="local"`` (imports and includes are resolved relative to the schema
file) and ``defuse="always"``; an import that would need the network is an error naming it.

A schema reads local files under its own directory only (:class:`SchemaSandbox`; for a WSDL,
the WSDL's directory), plus the roots its caller gives (``roots``/``schema_roots``: the command
line gives the current directory and ``--schema-root``; a site its folder, its ``[schemas]
paths`` and the adapter's ``schema_roots``) and the files an XML catalog maps locations to,
regular files only: an ``xs:include`` of ``/etc/passwd`` or
``../../../etc/shadow`` in a partner's schema is refused before the file is opened, in one line
naming the schema file and line, the location and what to do.
"""

from __future__ import annotations

import os
import urllib.request
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any
from urllib.error import URLError

from lxml import etree

from coupler.canonical.errors import one_line

from .errors import XmlSecurityError, XmlValidationError, XsdError

if TYPE_CHECKING:
    import xmlschema


def safe_parser(**options: Any) -> etree.XMLParser:
    """An lxml parser that resolves no entity, loads no DTD and never touches the network."""
    return etree.XMLParser(
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        dtd_validation=False,
        huge_tree=False,
        **options,
    )


SAFE_PARSE_OPTIONS: dict[str, Any] = {
    "resolve_entities": False,
    "no_network": True,
    "load_dtd": False,
    "dtd_validation": False,
    "huge_tree": False,
}


def check_docinfo(tree: etree._ElementTree, source: str) -> None:
    """Refuse a parsed document whose DTD declares entities or points to an external DTD."""
    info = tree.docinfo
    if info.system_url or info.public_id:
        raise XmlSecurityError(
            f"document references an external DTD ({info.system_url or info.public_id}); "
            "external DTDs are never fetched",
            where=source,
            hint="remove the DOCTYPE declaration",
        )
    dtd = info.internalDTD
    if dtd is not None:
        entities = [e.name for e in dtd.iterentities()]
        if entities:
            raise XmlSecurityError(
                f"document declares entities ({', '.join(entities[:5])}); entity declarations "
                "are refused (XXE and entity-expansion attacks)",
                where=source,
                hint="remove the DOCTYPE declaration and write the text literally",
            )


def syntax_error(exc: etree.XMLSyntaxError, label: str) -> XmlValidationError | XmlSecurityError:
    """The error for a parse failure; entity abuse caught by libxml2 is a security error."""
    msg = one_line(exc.msg or str(exc))  # libxml2 ends some with a newline
    if "entit" in msg.lower() or "amplification" in msg.lower():
        return XmlSecurityError(
            f"document refused: {msg} (entity declarations and expansion are refused)",
            where=f"{label}:{exc.lineno}" if exc.lineno else label,
            hint="remove the DOCTYPE declaration",
        )
    return XmlValidationError(f"not well-formed XML: {msg}", source=label, line=exc.lineno or None)


def parse_document(source: str | Path | bytes | IO[bytes], *, name: str | None = None) -> etree._ElementTree:
    """Parse a whole XML document safely; ``name`` is used in error messages."""
    label = name or (str(source) if isinstance(source, str | Path) else "<input>")
    parser = safe_parser()
    try:
        if isinstance(source, bytes):
            tree = etree.ElementTree(etree.fromstring(source, parser))
        else:
            tree = etree.parse(str(source) if isinstance(source, Path) else source, parser)
    except etree.XMLSyntaxError as exc:
        raise syntax_error(exc, label) from exc
    except OSError as exc:
        raise XmlValidationError(f"cannot read the document: {exc}", source=label) from exc
    check_docinfo(tree, label)
    return tree


#: the most element and wildcard particles one content model may have: xmlschema checks a
#: content model (Unique Particle Attribution, Element Declarations Consistent) pair by pair,
#: in time quadratic in its particles, or worse: one xs:sequence of 4,000 elements loads in
#: 38 s, of 8,000 in 8 minutes (docs/performance.md, "Very wide XSDs")
MAX_MODEL_PARTICLES = 5000
_XS = "{http://www.w3.org/2001/XMLSchema}"

#: what to do when a schema names a file outside its directories (the end of the refusal)
SANDBOX_HINT = ("if you trust it, add its directory to the schema roots: [schemas] paths in site.toml (or "
                "schema_roots in the SOAP and http adapters' options), --schema-root on the command line")


class SchemaSandbox:
    """The local files the loading of one schema (or WSDL) may read: regular files under its
    ``roots`` (symbolic links resolved) and the directories ``catalog`` maps locations into
    (the site's own mapping). xmlschema's ``allow="sandbox"`` takes one directory and compares URL
    strings; this is checked where xmlschema opens a file (its public ``opener`` argument),
    on the path as the system resolves it, so that no ``..``, symbolic link or ``file:``
    spelling reads beyond the roots."""

    def __init__(self, roots: Iterable[str | Path], catalog: Any = None, *,
                 max_particles: int = MAX_MODEL_PARTICLES):
        self.roots = [Path(root).resolve() for root in roots]
        if catalog is not None:  # the site's own mapping: where it maps to is trusted
            self.roots += [root.resolve() for root in catalog.directories() if root.resolve() not in self.roots]
        self.library = _bundled_schemas()  # xmlschema's copies of the W3C schemas (xml.xsd, xmldsig...)
        self.catalog = catalog
        self.mapped: set[Path] = set()  # catalog targets: allowed wherever they are
        self.opened: list[Path] = []  # the schema files read, in order (to find who named a refused one)
        self.refused: list[Path] = []
        self.handlers: list[_SandboxedFiles] = []
        self.max_particles = max_particles
        self.too_wide: XsdError | None = None  # a schema file whose content model is over the bound
        self.sizes = ModelSizes()  # the content models of the schema documents read, for the bound
        self.sources: dict[Any, str] = {}  # their roots -> the file (or WSDL) each is read from

    def check_document(self, root: Any, source: str) -> None:
        """Refuse the schema document ``root`` (read from ``source``) when one of its content
        models is over the bound, counting the groups and types of the documents read before."""
        if self.max_particles:
            self.sources[root] = source
            check_model_size(root, source, self.max_particles, sizes=self.sizes)

    def check_models(self) -> None:
        """Every schema document read: a content model over the bound through a group or type
        of a document read after its own (an include at the end of the schema) is refused
        here, before xmlschema builds and checks the models (:meth:`xmlschema.XMLSchema.build`)."""
        if self.max_particles:
            model, count = self.sizes.widest()
            if model is not None:
                refuse_wide(model, count, self.sources.get(model.getroottree().getroot(), "<schema>"),
                            self.max_particles)

    def inside(self, path: str | Path) -> bool:
        real = Path(os.path.realpath(path))
        return real in self.mapped or any(real.is_relative_to(root) for root in [*self.roots, self.library])

    def allows(self, path: str | Path) -> bool:
        """Inside, and a regular file (or none: then "not found"), never a device or a FIFO."""
        return self.inside(path) and (not os.path.exists(path) or os.path.isfile(path))

    def check(self, target: Path, location: str, where: str, what: str) -> None:
        """Refuse ``target`` (named ``location`` by a ``what`` at ``where``) when outside."""
        if not self.allows(target):
            raise XsdError(self.refusal(what, location, target), where=where, hint=SANDBOX_HINT)

    def refusal(self, what: str, location: str, target: Path) -> str:
        roots = ", ".join(str(root) for root in self.roots)
        return (f"{what} {location!r} reads {os.path.realpath(target)}, outside the directories the schema may "
                f"read ({roots}); it was not opened")

    def add_mapped(self, target: Path) -> None:
        self.mapped.add(Path(os.path.realpath(target)))

    def uri_mapper(self, location: str) -> str:
        """For xmlschema's ``uri_mapper``: the catalog's mapping, its target then allowed."""
        if self.catalog is None:
            return location
        mapped: str = self.catalog.uri_mapper(location)
        if mapped != location and mapped.startswith("file:"):
            self.add_mapped(Path(url_to_path(mapped)))
        return mapped

    def opener(self) -> urllib.request.OpenerDirector:
        """For xmlschema's ``opener``: opens ``file:`` URLs inside the sandbox, nothing else,
        until :meth:`close`."""
        opener = urllib.request.OpenerDirector()
        handler = _SandboxedFiles(self)
        self.handlers.append(handler)
        opener.add_handler(handler)
        opener.add_handler(urllib.request.UnknownHandler())
        return opener

    def close(self) -> None:
        """The schemas are loaded: xmlschema keeps the opener for the documents it is then given
        by path (``schema.validate(path)``), which the user chose, not the schema."""
        for handler in self.handlers:
            handler.active = False
        self.sizes = ModelSizes()  # xmlschema keeps the opener, and so the sandbox: not the documents
        self.sources.clear()

    def options(self) -> dict[str, Any]:
        return {"allow": "local", "defuse": "always", "uri_mapper": self.uri_mapper, "opener": self.opener()}

    def raise_refused(self, top: Path, lines: dict[str, int] | None = None) -> None:
        """The refusal of the first file opening refused, at the ``schemaLocation`` that named it
        (``FILE:LINE``, found in the schema files read; ``lines``: an inline schema's lines,
        location -> line of its WSDL)."""
        if self.too_wide is not None:
            raise self.too_wide
        if not self.refused:
            return
        target = self.refused[0]
        more = len(dict.fromkeys(self.refused)) - 1
        what, location, where = "schemaLocation", str(target), str(top)
        found = _naming(target, [top, *self.opened], self)
        if found is not None:
            what, location, where = found
        elif lines:
            for candidate, line in lines.items():
                if _same_file(target, top.parent / candidate.removeprefix("file://")):
                    what, location, where = "schemaLocation", candidate, f"{top}:{line}"
        message = self.refusal(what, location, target) + (f" (and {more} more)" if more else "")
        raise XsdError(message, where=where, hint=SANDBOX_HINT)


def _bundled_schemas() -> Path:
    from xmlschema.locations import SCHEMAS_DIR

    return Path(SCHEMAS_DIR).resolve()


class _SandboxedFiles(urllib.request.FileHandler):
    def __init__(self, sandbox: SchemaSandbox):
        self.sandbox = sandbox
        self.active = True

    def file_open(self, req: urllib.request.Request) -> Any:
        if not self.active:
            return super().file_open(req)
        path = Path(urllib.request.url2pathname(req.selector))
        if not self.sandbox.allows(path):
            self.sandbox.refused.append(path)
            raise URLError(f"{path} is outside the directories the schema may read")
        self.sandbox.opened.append(path)
        if self.sandbox.max_particles and path.is_file():
            try:
                self.sandbox.check_document(etree.parse(str(path), safe_parser()).getroot(), str(path))
            except XsdError as exc:
                self.sandbox.too_wide = self.sandbox.too_wide or exc
                raise URLError(str(exc)) from None
            except etree.XMLSyntaxError:
                pass  # xmlschema says what is wrong with it
        return super().file_open(req)


_GROUP, _COMPLEX, _EXTENSION = f"{_XS}group", f"{_XS}complexType", f"{_XS}extension"
_PARTICLES = (f"{_XS}element", f"{_XS}any")
_NOT_MODEL = (f"{_XS}annotation", f"{_XS}attribute", f"{_XS}attributeGroup", f"{_XS}anyAttribute",
              f"{_XS}assert", f"{_XS}openContent")


class ModelSizes:
    """The element and wildcard particles of the content models of schema documents (lxml
    roots), with those reached through ``xs:group ref`` and a ``complexContent`` extension's
    base counted in, as xmlschema expands them before checking a model. Each global group and
    type is counted once (memoised): groups referring twice to the one below, 40 deep, are
    2**40 particles, counted in 40 steps. A reference to a component not (yet) read counts 0."""

    def __init__(self) -> None:
        self.groups: dict[tuple[str, str], Any] = {}
        self.types: dict[tuple[str, str], Any] = {}
        self.roots: list[Any] = []
        self.memo: dict[Any, int] = {}

    def add(self, root: Any) -> None:
        """A schema document's global groups and complex types (its target namespace's)."""
        tns = root.get("targetNamespace") or ""
        for child in root:
            name = child.get("name") if isinstance(child.tag, str) else None
            if name and child.tag == _GROUP:
                self.groups.setdefault((tns, name), child)
            elif name and child.tag == _COMPLEX:
                self.types.setdefault((tns, name), child)
        self.roots.append(root)
        self.memo.clear()  # a reference counted 0 before may name a component of this one

    def _global(self, table: dict[tuple[str, str], Any], elem: Any, qname: str) -> Any:
        prefix, _, local = qname.strip().rpartition(":")
        namespace = elem.nsmap.get(prefix or None) or ""
        found = table.get((namespace, local))
        return found if found is not None else table.get(("", local))  # ("", ...): a chameleon include

    def size(self, model: Any) -> int:
        """The particles of ``model`` (an ``xs:complexType`` or named ``xs:group``)."""
        if model in self.memo:
            return self.memo[model]
        self.memo[model] = 0  # a circular definition (xmlschema refuses it) adds nothing
        count = 0
        stack = list(model)
        while stack:
            elem = stack.pop()
            tag = elem.tag
            if not isinstance(tag, str) or tag in _NOT_MODEL:
                continue
            if tag in _PARTICLES:
                count += 1  # a local element's own type is a model of its own
                continue
            if tag == _GROUP and elem.get("ref"):
                group = self._global(self.groups, elem, elem.get("ref"))
                count += self.size(group) if group is not None else 0
                continue
            if tag == _EXTENSION and elem.get("base") and elem.getparent().tag == f"{_XS}complexContent":
                base = self._global(self.types, elem, elem.get("base"))
                count += self.size(base) if base is not None and base is not model else 0
            stack.extend(elem)
        self.memo[model] = count
        return count

    def widest(self, roots: Iterable[Any] | None = None) -> tuple[Any, int]:
        """The widest model of ``roots`` (default: every document added), and its particles."""
        widest: tuple[Any, int] = (None, 0)
        for root in self.roots if roots is None else roots:
            for model in root.iter(_COMPLEX, _GROUP):
                if model.tag == _GROUP and not model.get("name"):
                    continue
                count = self.size(model)
                if count > widest[1]:
                    widest = (model, count)
        return widest


def widest_model(root: Any) -> tuple[Any, int]:
    """The ``xs:complexType`` (or named ``xs:group``) of a schema document with the most element
    and wildcard particles in its content model (nested groups, groups it refers to and the
    bases it extends counted in: :class:`ModelSizes`; the types of local elements are models of
    their own), and that number."""
    sizes = ModelSizes()
    sizes.add(root)
    return sizes.widest()


def check_model_size(root: Any, source: str, limit: int, line_offset: int = 0,
                     sizes: ModelSizes | None = None) -> None:
    """Refuse a schema document one of whose content models has more than ``limit`` particles
    (:data:`MAX_MODEL_PARTICLES`): xmlschema would take minutes to check it. ``sizes``: the
    documents read with it, whose groups and types it may refer to (``root`` is added)."""
    if not limit:
        return
    sizes = sizes if sizes is not None else ModelSizes()
    sizes.add(root)
    model, count = sizes.widest([root])
    refuse_wide(model, count, source, limit, line_offset)


def refuse_wide(model: Any, count: int, source: str, limit: int, line_offset: int = 0) -> None:
    """The refusal of ``model`` (of the document ``source``) when its ``count`` is over ``limit``."""
    if not limit or count <= limit:
        return
    name = model.get("name") or next((a.get("name") for a in model.iterancestors(f"{_XS}element") if a.get("name")), None)
    kind = "xs:group" if model.tag == f"{_XS}group" else "xs:complexType"
    what = f"{kind} {name!r}" if name else kind
    raise XsdError(
        f"the content model of {what} has {count} particles, more than {limit}: xmlschema checks a content "
        "model pair by pair (Unique Particle Attribution), minutes at this size",
        where=f"{source}:{(model.sourceline or 1) + line_offset}",
        hint=f"to load it anyway, raise the limit above {count}: max_model_particles in the adapter's options, "
             "--max-model-particles on the command line (0: no limit)")


_INCLUSIONS = tuple(f"{{http://www.w3.org/2001/XMLSchema}}{kind}" for kind in ("include", "import", "redefine", "override"))


def _same_file(a: Path, b: Path) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


def _naming(target: Path, files: list[Path], sandbox: SchemaSandbox) -> tuple[str, str, str] | None:
    """(what, location, FILE:LINE) of the first inclusion among ``files`` that names ``target``."""
    for file in dict.fromkeys(files):
        try:
            root = etree.parse(str(file), safe_parser()).getroot()
        except (etree.XMLSyntaxError, OSError):
            continue
        for elem in root.iter(*_INCLUSIONS):
            location = (elem.get("schemaLocation") or "").strip()
            if not location:
                continue
            resolved = sandbox.uri_mapper(location)
            if resolved.startswith("file:"):
                candidate = Path(url_to_path(resolved))
            else:
                candidate = file.parent / resolved
            if _same_file(candidate, target):
                return f"xs:{str(elem.tag).rpartition('}')[2]}", location, f"{file}:{elem.sourceline}"
    return None


def load_schema(path: str | Path, *, catalog: Any = None, lax: list[str] | None = None,
                roots: Iterable[str | Path] | None = None,
                max_model_particles: int = MAX_MODEL_PARTICLES) -> xmlschema.XMLSchema:
    """Load an XSD, resolving imports and includes relative to it (or through ``catalog``, an
    :class:`~coupler.translators.xml.catalog.XmlCatalog`), never over the network, reading
    local files under the schema's directory and the directories ``roots`` only
    (:class:`SchemaSandbox`). With ``lax`` (a list), errors in the schema's own constructs (an
    attribute XSD does not allow where a toolkit wrote it) do not stop the load: each is
    appended to ``lax`` as one line ``FILE[:LINE]: message``, as zeep and .NET read such schemas.
    A content model of more than ``max_model_particles`` particles is refused (0: no limit; see
    :data:`MAX_MODEL_PARTICLES`)."""
    path = Path(path)
    sandbox = SchemaSandbox([*own_directories(path), *(roots or [])], catalog, max_particles=max_model_particles)
    try:
        return load_sandboxed(path, sandbox, lax=lax)
    finally:
        sandbox.close()


def own_directories(path: Path) -> list[Path]:
    """The directory of the schema (or WSDL) given, and that of the file it links to."""
    return list(dict.fromkeys([path.parent.resolve(), Path(os.path.realpath(path)).parent]))


def load_sandboxed(path: Path, sandbox: SchemaSandbox, *, lax: list[str] | None = None) -> xmlschema.XMLSchema:
    """:func:`load_schema` with the sandbox given (a WSDL's, shared by the schemas it imports)."""
    import xmlschema  # here: every coupler command imports this module, few load a schema

    if not path.is_file():
        raise XsdError(f"schema file not found: {path}", hint="check the path")
    sandbox.check(path, str(path), str(path), "the schema")
    options = sandbox.options()
    if lax is not None:
        options["validation"] = "lax"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            # built once every document is read and no content model is over the bound
            schema = xmlschema.XMLSchema(str(path), build=False, **options)
            sandbox.check_models()
            schema.build()
        except XsdError:
            raise
        except xmlschema.XMLSchemaException as exc:
            sandbox.raise_refused(path)
            _raise_blocked(caught, path)
            _raise_not_a_schema(path)
            raise XsdError(_first_line(str(exc)).rstrip(":").rstrip(), where=str(path)) from exc
        except OSError as exc:
            sandbox.raise_refused(path)
            raise XsdError(f"cannot read the schema: {exc}", where=str(path)) from exc
        except RecursionError:  # xmlschema checks nested declarations recursively (a few hundred deep)
            raise XsdError("the schema nests its declarations too deeply to be loaded", where=str(path),
                           hint="declare the inner types as named global types") from None
        except Exception as exc:  # noqa: BLE001 - xmlschema tripping on a construct it did not foresee
            sandbox.raise_refused(path)
            _raise_blocked(caught, path)
            _raise_not_a_schema(path)
            raise XsdError(f"xmlschema cannot load it: {type(exc).__name__}: {one_line(_first_line(str(exc)))[:200]}",
                           where=str(path), hint="check the schema against the XSD specification") from None
    sandbox.raise_refused(path)
    _raise_blocked(caught, path)
    if lax is not None:
        for component in schema.maps.iter_schemas():
            url = getattr(component, "url", None)
            for error in component.all_errors:
                where = url_to_path(url) if url and url.startswith("file:") else str(path)
                lax.append(schema_error_line(error, where, element_line(where, error)))
    return schema


def element_line(path: str, error: Any) -> int | None:
    """The line of the element a schema error names, in the file it came from: xmlschema reads
    files with ElementTree (no line numbers), so the element is found by its position."""
    elem = getattr(error, "elem", None)
    root = getattr(getattr(error, "source", None), "root", None)
    if elem is None or root is None:
        return None
    position = next((n for n, e in enumerate(root.iter()) if e is elem), None)
    if position is None:
        return None
    try:
        own = etree.parse(path, etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False)).getroot()
    except (etree.XMLSyntaxError, OSError):
        return None
    elements = list(own.iter(etree.Element))
    return elements[position].sourceline if position < len(elements) else None


def url_to_path(url: str) -> str:
    """The local path of a ``file:`` URL (as xmlschema names the schemas it loaded)."""
    from urllib.request import url2pathname

    return url2pathname(url[5:].removeprefix("//"))


def schema_error_line(error: Any, where: str, line: int | None = None) -> str:
    """One line for a schema error collected in lax mode: ``WHERE[:LINE]: message``."""
    line = line if line is not None else getattr(getattr(error, "elem", None), "sourceline", None)
    message = _first_line(getattr(error, "message", None) or str(error)).rstrip(":").rstrip()
    return f"{where}:{line}: {message}" if line else f"{where}: {message}"


def _raise_blocked(caught: list[warnings.WarningMessage], path: Path) -> None:
    for warning in caught:
        text = str(warning.message)
        if text.startswith(("Import of", "Include of", "Redefine of", "Override of")) or (
            "block access" in text
        ):
            raise XsdError(
                _first_line(text),
                where=str(path),
                hint="imports and includes are resolved relative to the schema file, never over "
                "the network; download the imported schema next to it and point schemaLocation there",
            )


def _raise_not_a_schema(path: Path) -> None:
    """An XSD error naming what the file is when it is not an ``xs:schema`` (an XML instance
    given where the schema goes: xmlschema's own message ends in a colon)."""
    try:
        _, root = next(etree.iterparse(str(path), events=("start",), resolve_entities=False, no_network=True,
                                       load_dtd=False))
    except (etree.XMLSyntaxError, OSError, StopIteration):
        return
    if root.tag != "{http://www.w3.org/2001/XMLSchema}schema":
        name = str(root.tag).rpartition("}")[2]  # not QName: a prefix bound nowhere leaves "xs:s", no QName
        raise XsdError(
            f"not an XSD: its root element is <{name}>, not <xs:schema>",
            where=str(path),
            hint="give the .xsd file that describes the documents first, then the XML documents",
        )


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else text
