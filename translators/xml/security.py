"""Safe XML and XSD loading: no external entities, no entity expansion, no network.

Documents are parsed by lxml with entity resolution and DTD loading off and the network
disabled; a document whose DTD declares entities (the vehicle of XXE, billion laughs and
quadratic blow-up) or references an external DTD is refused outright. Schemas are loaded by
xmlschema with ``allow="local"`` (imports and includes are resolved relative to the schema
file) and ``defuse="always"``; an import that would need the network is an error naming it.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

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


def load_schema(path: str | Path, *, catalog: Any = None, lax: list[str] | None = None) -> xmlschema.XMLSchema:
    """Load an XSD, resolving imports and includes relative to it (or through ``catalog``, an
    :class:`~coupler.translators.xml.catalog.XmlCatalog`), never over the network. With
    ``lax`` (a list), errors in the schema's own constructs (an attribute XSD does not allow
    where a toolkit wrote it) do not stop the load: each is appended to ``lax`` as one line
    ``FILE[:LINE]: message``, as zeep and .NET read such schemas."""
    import xmlschema  # here: every coupler command imports this module, few load a schema

    path = Path(path)
    if not path.is_file():
        raise XsdError(f"schema file not found: {path}", hint="check the path")
    options: dict[str, Any] = {"allow": "local", "defuse": "always"}
    if catalog is not None:
        options["uri_mapper"] = catalog.uri_mapper
    if lax is not None:
        options["validation"] = "lax"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            schema = xmlschema.XMLSchema(str(path), **options)
        except xmlschema.XMLSchemaException as exc:
            _raise_blocked(caught, path)
            _raise_not_a_schema(path)
            raise XsdError(_first_line(str(exc)).rstrip(":").rstrip(), where=str(path)) from exc
        except OSError as exc:
            raise XsdError(f"cannot read the schema: {exc}", where=str(path)) from exc
        except RecursionError:  # xmlschema checks nested declarations recursively (a few hundred deep)
            raise XsdError("the schema nests its declarations too deeply to be loaded", where=str(path),
                           hint="declare the inner types as named global types") from None
        except Exception as exc:  # noqa: BLE001 - xmlschema tripping on a construct it did not foresee
            _raise_blocked(caught, path)
            _raise_not_a_schema(path)
            raise XsdError(f"xmlschema cannot load it: {type(exc).__name__}: {one_line(_first_line(str(exc)))[:200]}",
                           where=str(path), hint="check the schema against the XSD specification") from None
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
