"""OASIS XML catalogs: remote schema and WSDL locations resolved to local files.

A WSDL or XSD that imports ``https://…`` locations can be read without the network when an
OASIS XML catalog (the format of libxml2's ``xmlcatalog``, Apache XML Commons, Eclipse and
Oxygen; OASIS Standard "XML Catalogs" 1.1) maps them to local copies, as XML tools do::

    <catalog xmlns="urn:oasis:names:tc:entity:xmlns:xml:catalog">
      <uri name="http://docs.oasis-open.org/wsn/b-2.xsd" uri="oasis/b-2.xsd"/>
      <rewriteURI uriStartString="http://www.w3.org/2005/08/addressing/" rewritePrefix="w3c/"/>
    </catalog>

Entries read: ``uri``, ``system``, ``rewriteURI``, ``rewriteSystem``, ``uriSuffix``,
``systemSuffix`` and ``nextCatalog`` (``group`` elements and ``xml:base`` are honoured);
relative ``uri``/``rewritePrefix`` values are relative to the catalog file. An exact entry wins
over a rewrite, the longest matching prefix or suffix over shorter ones. Fetching stays off:
a location the catalog does not map is still an error naming it.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urljoin
from urllib.request import url2pathname

from .errors import XsdError
from .security import parse_document

CATALOG_NS = "urn:oasis:names:tc:entity:xmlns:xml:catalog"
_XML_BASE = "{http://www.w3.org/XML/1998/namespace}base"
_MAX_NESTING = 16
_EMPTY_AUTHORITY = re.compile(r"([A-Za-z][A-Za-z0-9+.-]+):///")


class XmlCatalog:
    """The entries of one catalog file (and the catalogs it chains with ``nextCatalog``)."""

    def __init__(self, path: str | Path, _depth: int = 0):
        self.path = Path(path)
        self.exact: dict[str, str] = {}
        self.prefixes: list[tuple[str, str]] = []  # (start string, rewrite prefix as a URL)
        self.suffixes: list[tuple[str, str]] = []  # (end string, target URL)
        self.next: list[XmlCatalog] = []
        if not self.path.is_file():
            raise XsdError(f"XML catalog not found: {self.path}", hint="give the path of an OASIS XML catalog file")
        root = parse_document(self.path).getroot()
        if root.tag != f"{{{CATALOG_NS}}}catalog":
            raise XsdError(f"{self.path} is not an OASIS XML catalog (root {root.tag})",
                           hint=f"the root element is <catalog xmlns=\"{CATALOG_NS}\">")
        self._read(root, self.path.resolve().as_uri(), _depth)

    def _read(self, elem: object, base: str, depth: int) -> None:
        for child in elem:  # type: ignore[attr-defined]
            if not isinstance(child.tag, str) or not child.tag.startswith(f"{{{CATALOG_NS}}}"):
                continue
            here = urljoin(base, child.get(_XML_BASE)) if child.get(_XML_BASE) else base
            kind = child.tag.split("}", 1)[1]
            if kind == "group":
                self._read(child, here, depth)
            elif kind in ("uri", "system"):
                key = child.get("name" if kind == "uri" else "systemId")
                target = child.get("uri")
                if key and target:
                    self.exact.setdefault(key, urljoin(here, target))
            elif kind in ("rewriteURI", "rewriteSystem"):
                start = child.get("uriStartString" if kind == "rewriteURI" else "systemIdStartString")
                prefix = child.get("rewritePrefix")
                if start and prefix:
                    self.prefixes.append((start, urljoin(here, prefix)))
            elif kind in ("uriSuffix", "systemSuffix"):
                end = child.get("uriSuffix" if kind == "uriSuffix" else "systemIdSuffix")
                target = child.get("uri")
                if end and target:
                    self.suffixes.append((end, urljoin(here, target)))
            elif kind == "nextCatalog" and child.get("catalog"):
                if depth >= _MAX_NESTING:
                    raise XsdError("XML catalogs chain too deeply (nextCatalog)", where=str(self.path))
                target = urljoin(here, child.get("catalog"))
                self.next.append(XmlCatalog(_local_path(target), depth + 1))
        self.prefixes.sort(key=lambda p: -len(p[0]))
        self.suffixes.sort(key=lambda s: -len(s[0]))

    def resolve(self, location: str) -> Path | None:
        """The local file a location maps to, or None when the catalog does not map it."""
        url = self._lookup(location)
        return _local_path(url) if url is not None else None

    def _lookup(self, location: str) -> str | None:
        if location in self.exact:
            return self.exact[location]
        for start, prefix in self.prefixes:
            if location.startswith(start):
                return prefix + location[len(start):]
        for end, target in self.suffixes:
            if location.endswith(end):
                return target
        for nxt in self.next:
            found = nxt._lookup(location)
            if found is not None:
                return found
        return None

    def directories(self) -> list[Path]:
        """The local directories the catalog maps locations into (of its chained catalogs too):
        the folders of its entries' files and its rewrite prefixes. A schema loaded through the
        catalog may read files there (its mapped schemas include their siblings by relative
        locations)."""
        found: list[Path] = []
        targets = [*self.exact.values(), *(target for _, target in self.suffixes)]
        for url in targets:
            if url.startswith("file:"):
                found.append(_local_path(url).parent)
        for _, prefix in self.prefixes:
            if prefix.startswith("file:"):
                path = _local_path(prefix)
                found.append(path if prefix.endswith("/") else path.parent)
        for nxt in self.next:
            found += nxt.directories()
        return list(dict.fromkeys(found))

    def uri_mapper(self, location: str) -> str:
        """For xmlschema's ``uri_mapper``: the local file's URL, else the location unchanged.
        xmlschema writes a location with a scheme and a path but no authority (Oracle MDS's
        ``oramds:/apps/x.xsd``) with an empty one (``oramds:///apps/x.xsd``): the catalog is
        asked for the location as the schema wrote it too."""
        local = self.resolve(location)
        if local is None:
            empty_authority = _EMPTY_AUTHORITY.match(location)
            if empty_authority and empty_authority.group(1).lower() != "file":
                local = self.resolve(f"{empty_authority.group(1)}:/{location[empty_authority.end():]}")
        return local.as_uri() if local is not None else location


def _local_path(url: str) -> Path:
    if url.startswith("file:"):
        return Path(url2pathname(url[5:].removeprefix("//")))
    if "://" in url:
        raise XsdError(f"XML catalog entry {url!r} is not a local file", hint="map remote locations to local files")
    return Path(url)


def load_catalog(path: str | Path | None) -> XmlCatalog | None:
    return XmlCatalog(path) if path else None
