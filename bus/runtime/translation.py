"""The translation stage in front of an outbound adapter (site.toml ``format``, ``mapping``,
``translator`` of an ``[[adapters]]`` entry).

DESIGN.md's outbound path is *channel -> translator (canonical@v -> legacy) -> envelope
unwrapper -> outbound adapter -> legacy system*. The daemon runs this stage on every document
an adapter is handed: the document of a ``send``/``request`` command and each message of its
channel.

1. **Version.** When the adapter declares the version it reads (``format = "NAME@V"``, or the
   ``canonical`` entity of its mapping) and the document is another version of that entity,
   the schema registry converts it (Avro binary and JSON bodies).
2. **Mapping.** With ``mapping`` the canonical record becomes the legacy record
   (:mod:`coupler.translators.mapping`, ``to_legacy``), written as ``translator`` says:

   * ``copybook``: the fixed-width record bytes, by the copybook encoder, from the mapping's
     ``legacy = "copybook:FILE.cpy"`` and ``legacy_options`` (``application/x-cobol-record``);
   * ``xml``: an XML document of the mapping's ``legacy = "xml:FILE.xsd#ELEMENT"``, validated
     against the XSD (``application/xml``);
   * ``json``: the legacy record as JSON, for adapters that encode it themselves (the SOAP
     client through its WSDL, the socket adapter's copybook translator).

   The default is the kind of the mapping's legacy side. The translator types are those the
   plugins register through the hook ``coupler_translator_types`` (Coupler's own three come
   from its built-in plugin, :mod:`coupler.translators.mapping.writers`). The translated document's format is
   ``legacy.<mapping file stem>@1`` with that content type; the property
   ``coupler.canonical-format`` keeps the canonical format it came from.

A document that cannot be translated is a :class:`~coupler.bus.api.CommandFault` ``invalid``
(a command gets a fault reply; a channel message goes to the Invalid Message Channel with the
reason). Documents of other entities pass through untouched.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from coupler.bus.config.loader import AdapterConfig, ConfigError, site_schema_roots
from coupler.bus.model.commands import CommandFault, Document
from coupler.canonical import Envelope, FormatIndicator
from coupler.canonical.errors import CouplerError, UnitError

PROP_CANONICAL = "coupler.canonical-format"
_AVRO, _JSON = "avro/binary", "application/json"


class OutboundTranslation:
    """Canonical documents -> what one outbound adapter takes (see the module docstring)."""

    def __init__(self, adapter: str, reads: FormatIndicator | None, registry: Any, mapping: Any = None,
                 translator: Any = None, mapping_name: str | None = None):
        self.adapter = adapter
        self.reads = reads
        self.registry = registry
        self.mapping = mapping
        #: the mapping as site.toml names it (journaled with the delivery: the trace shows it)
        self.mapping_name = (mapping_name or str(mapping.file)) if mapping is not None else None
        #: the translator type (``coupler_translator_types``) writing mapped records
        self.translator = translator
        self._encode: Any = None
        self.format: FormatIndicator | None = None
        if mapping is not None:
            assert translator is not None
            self._encode = translator(mapping)
            stem = "".join(c if c.isalnum() else "_" for c in Path(mapping.file).stem)
            self.format = FormatIndicator(f"legacy.{stem}", 1, translator.content_type)

    @classmethod
    def for_adapter(cls, config: AdapterConfig, registry: Any, site_dir: Path,
                    translators: Mapping[str, Any], schema_dirs: Sequence[Path] = ()) -> OutboundTranslation | None:
        """The stage of one adapter, or None when its entry asks for no translation.

        ``translators`` are the translator types of the installed plugins (``{name: type}``).
        The XSD of an ``xml:`` legacy spec may read files under its directory and the site's
        schema roots (:func:`site_schema_roots`: ``site_dir`` and ``schema_dirs``, the
        ``[schemas] paths``).
        """
        if config.translator is not None and config.translator not in translators and config.mapping is not None:
            raise ConfigError(
                [f"{config.key_path}.translator: {config.translator!r} is not a translator of mapped documents "
                 f"(installed: {', '.join(sorted(translators))})"]
            )
        reads = FormatIndicator.parse(config.format) if config.format else None
        mapping = None
        if config.mapping:
            from coupler.translators.mapping import load_mapping

            path = Path(config.mapping).expanduser()
            path = path if path.is_absolute() else site_dir / path
            try:
                mapping = load_mapping(path, registry=registry, schema_roots=site_schema_roots(site_dir, schema_dirs))
                mapping.direction("to_legacy")
            except CouplerError as exc:
                raise ConfigError([f"{config.key_path}.mapping: {exc}"]) from exc
            if mapping.canonical_ref:
                canonical = FormatIndicator.parse(mapping.canonical_ref)
                if reads is not None and reads.name != canonical.name:
                    raise ConfigError(
                        [f"{config.key_path}.mapping: maps {canonical.ref} but the adapter reads {reads.ref}"]
                    )
                reads = reads or canonical
        if reads is None and mapping is None:
            return None
        name = config.translator if config.translator in translators else None
        if mapping is not None and name is None:
            name = (mapping.legacy_spec or "json").partition(":")[0]
            name = name if name in translators else "json"
        try:
            return cls(config.name, reads, registry, mapping, translators.get(name) if name else None,
                       mapping_name=config.mapping)
        except CouplerError as exc:
            raise ConfigError([f"{config.key_path}: {exc}"]) from exc

    # -- the stage -------------------------------------------------------------------------------

    def document(self, doc: Document) -> Document:
        """``doc`` as the adapter takes it (unchanged when it is not the adapter's entity)."""
        if self.reads is None or doc.format.name != self.reads.name:
            return doc
        try:
            return self._translate(doc)
        except CommandFault:
            raise
        except Exception as exc:  # any exception: this document is the unit that failed
            error = UnitError.of(exc)
            raise CommandFault(f"adapter {self.adapter!r} cannot take {doc.format.ref}: {error}", code="invalid",
                               hint=error.hint) from None

    def mapped(self, env: Envelope) -> bool:
        """Whether :meth:`envelope` runs ``env`` through the mapping."""
        return self.mapping is not None and self.reads is not None and env.format.name == self.reads.name

    def envelope(self, env: Envelope) -> Envelope:
        doc = self.document(Document.from_envelope(env))
        if doc.format == env.format and doc.body == env.body:
            return env
        return env.replace(format=doc.format, body=doc.body, properties=doc.properties)

    def _translate(self, doc: Document) -> Document:
        assert self.reads is not None
        fmt, body = doc.format, doc.body
        if self.mapping is None and fmt.version == self.reads.version:
            return doc
        if fmt.content_type not in (_AVRO, _JSON):
            raise CommandFault(f"content type {fmt.content_type} of {fmt.ref} cannot be translated (avro/binary or application/json)",
                               code="invalid")
        target = FormatIndicator(fmt.name, self.reads.version, fmt.content_type)
        if self.mapping is None:
            if fmt.content_type == _AVRO:
                body = self.registry.convert_body(body, fmt, target)
            else:
                body = json.dumps(self.registry.convert(_json_record(body, fmt), fmt, target), sort_keys=True).encode()
            return Document(target, body, {**doc.properties, PROP_CANONICAL: str(fmt)})
        if fmt.content_type == _AVRO:
            record = self.registry.decode(body, fmt)
        else:
            record = _json_record(body, fmt)
        if fmt.version != self.reads.version:
            record = self.registry.convert(record, fmt, target)
        legacy = self.mapping.to_legacy(record)
        assert self.format is not None
        return Document(self.format, self._encode(legacy), {**doc.properties, PROP_CANONICAL: str(target)})


def _json_record(body: bytes, fmt: FormatIndicator) -> dict[str, Any]:
    try:
        record = json.loads(body)
    except ValueError as exc:
        raise CommandFault(f"document {fmt.ref} is not JSON: {exc}", code="invalid") from None
    if not isinstance(record, dict):
        raise CommandFault(f"document {fmt.ref} is not a JSON object", code="invalid")
    return record
