"""Avro names for XML names: XML namespaces -> Avro namespaces, local names -> Avro names."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

_INVALID = re.compile(r"[^A-Za-z0-9_]")
AVRO_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def avro_name(name: str) -> str:
    """``name`` as a valid Avro name: invalid characters become ``_``, a leading digit gets ``_``."""
    cleaned = _INVALID.sub("_", name) or "_"
    return f"_{cleaned}" if cleaned[0].isdigit() else cleaned


def is_avro_name(name: str) -> bool:
    return bool(AVRO_NAME.match(name))


def avro_namespace(uri: str | None) -> str | None:
    """The Avro namespace of an XML namespace URI.

    ``http://acme.example.com/orders/v1`` -> ``com.example.acme.orders.v1`` (host labels
    reversed, ``www`` dropped, then the path segments); ``urn:acme:orders`` -> ``acme.orders``;
    anything else is split on ``/`` and ``:``. Every part is made a valid Avro name.
    """
    if not uri:
        return None
    parts: list[str]
    if "://" in uri:
        split = urlsplit(uri)
        host = [p for p in (split.hostname or "").split(".") if p and p != "www"]
        parts = list(reversed(host)) + [p for p in split.path.split("/") if p]
    elif uri.lower().startswith("urn:"):
        parts = [p for p in uri[4:].split(":") if p]
    else:
        parts = [p for p in re.split(r"[/:]", uri) if p]
    names = [avro_name(p) for p in parts]
    return ".".join(names) or None


def local_name(qname: str) -> str:
    return qname.rsplit("}", 1)[-1]


def namespace_of(qname: str) -> str:
    return qname[1:].split("}", 1)[0] if qname.startswith("{") else ""
