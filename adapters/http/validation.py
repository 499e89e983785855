"""Request bodies of an endpoint: parsed and validated against the endpoint's schema.

JSON bodies are checked against the Avro schema of the endpoint's format (a ``schema_file``
or the site's registry, ``[schemas] paths`` included), the way fastavro validates a record; XML bodies are parsed with the
hardened parser (no DTDs, no entities, no network) and checked against the endpoint's XSD.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from coupler.canonical import FormatIndicator
from coupler.canonical.errors import CouplerError

JSON_TYPES = ("application/json", "text/json")
XML_TYPES = ("application/xml", "text/xml")


class BodyError(CouplerError):
    """A body that is not of an accepted type, not well-formed or not valid (answered 4xx)."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


class BodyValidator:
    """Checks the bodies of one endpoint."""

    def __init__(self, fmt: FormatIndicator, kinds: list[str], schema_file: str | None, xsd: str | None,
                 where: str, registry: Any, *, schema_roots: Sequence[str | Path] = ()):
        """``registry``: the site's, for the format's schema when no ``schema_file`` is given;
        ``schema_roots``: directories the XSD's includes and imports may read besides its own."""
        self.format = fmt
        self.kinds = kinds
        self.avro: Any = None
        if schema_file is not None:
            try:
                self.avro = json.loads(Path(schema_file).read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise CouplerError(f"cannot read the schema {schema_file}: {exc}", where=f"{where}.schema_file") from None
        else:
            try:
                self.avro = registry.resolve(fmt).parsed
            except CouplerError:
                self.avro = None  # no schema: JSON bodies are checked for well-formedness only
        self.parsed_avro: Any = None
        if self.avro is not None:
            import fastavro

            try:
                self.parsed_avro = fastavro.parse_schema(self.avro)
            except Exception as exc:  # noqa: BLE001 - fastavro raises several kinds for a bad schema
                raise CouplerError(f"the schema of {fmt.ref} is not a valid Avro schema: {exc}",
                                   where=f"{where}.schema_file") from None
        self.xsd: Any = None
        if xsd is not None:
            from coupler.translators.xml.security import load_schema

            self.xsd = load_schema(xsd, roots=schema_roots)

    def content_type(self, header: str) -> str:
        """The accepted body kind (``json`` or ``xml``) of a Content-Type; 415 otherwise."""
        ct = header.split(";", 1)[0].strip().lower()
        if ct in JSON_TYPES or ct.endswith("+json"):
            kind = "json"
        elif ct in XML_TYPES or ct.endswith("+xml"):
            kind = "xml"
        else:
            kind = ""
        if kind not in self.kinds:
            accepted = ", ".join(JSON_TYPES[0] if k == "json" else XML_TYPES[0] for k in self.kinds)
            raise BodyError(f"Content-Type {ct or '(none)'} is not accepted here (send {accepted})", 415)
        return kind

    def check(self, body: bytes, kind: str) -> Any:
        """The parsed body (a JSON value, or an XML tree); :class:`BodyError` when it is bad."""
        if kind == "json":
            try:
                record = json.loads(body)
            except RecursionError:
                raise BodyError("the body's JSON is nested too deeply") from None
            except (ValueError, UnicodeDecodeError) as exc:
                raise BodyError(f"the body is not JSON: {exc}") from None
            if self.parsed_avro is not None:
                from fastavro.validation import ValidationError, validate

                try:  # a valid body checked without raising: raise_errors=True makes fastavro build
                    # and catch an exception for every union branch that does not match
                    if not validate(record, self.parsed_avro, raise_errors=False):
                        validate(record, self.parsed_avro, raise_errors=True)  # raises, saying why
                except ValidationError as exc:
                    raise BodyError(f"the body is not a valid {self.format.ref}: " + "; ".join(map(str, exc.errors)),
                                    422) from None
            return record
        from coupler.translators.xml.security import parse_document

        try:
            tree = parse_document(body, name="the body")
        except CouplerError as exc:
            raise BodyError(f"the body is not well-formed XML: {exc.message}") from None
        if self.xsd is not None:
            from coupler.translators.xml.decoder import first_validation_error

            # the first error only: all of them cost time growing with the square of a hostile
            # body's unexpected attributes (3,000 on one element: half a minute)
            error = first_validation_error(self.xsd, tree)
            if error is not None:
                reason = (str(error.reason or error.message).strip().splitlines() or ["invalid"])[0]
                raise BodyError(f"the body is not valid against its XSD: {reason}", 422)
        return tree
