"""The stages the daemon runs between an adapter and its channel (DESIGN.md's shape)::

    legacy system -> inbound adapter -> envelope unwrapper -> translator (legacy -> canonical@v) -> channel
    channel -> translator (canonical@v -> legacy) -> envelope wrapper -> outbound adapter -> legacy system

An adapter only moves bytes of its transport; what the bytes mean is declared per adapter in
site.toml (``wrappers``, ``mapping``, ``format``, ``translator``) and applied here, so the same
mapping works behind a file drop, an SFTP box or a socket:

* :class:`InboundTranslation` runs on every ``context.publish`` of an inbound adapter: the
  wrapper chain unwraps the body (headers it carries go to the envelope), then the mapping's
  legacy side reads the record (:class:`~coupler.translators.mapping.legacy.LegacyReader`:
  the record's bytes, or JSON), ``to_canonical`` maps it, and the body becomes the canonical
  entity in Avro binary with the format indicator ``NAME@V`` (the mapping's entity; the
  adapter's ``format`` may name another version of it, converted by the schema registry).
  The property ``coupler.legacy-format`` keeps the format the adapter published.
* The outbound side is :class:`coupler.bus.runtime.translation.OutboundTranslation` (version,
  mapping ``to_legacy``, legacy writer), then :class:`OutboundWrapping` (the wrapper chain
  wraps the translated body, with the envelope's headers).

What a stage cannot translate is an invalid message: inbound, the context moves it to the
Invalid Message Channel and ``publish`` raises :class:`~coupler.bus.api.InvalidMessage`;
outbound, a :class:`~coupler.bus.api.CommandFault` ``invalid`` (a fault reply to a command,
the Invalid Message Channel for a channel message).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from coupler.bus.config.loader import AdapterConfig, ConfigError, site_schema_roots
from coupler.bus.model.commands import CommandFault, Document
from coupler.canonical import Envelope, FormatIndicator
from coupler.canonical.errors import CouplerError, UnitError

#: property of a translated message: the format the inbound adapter published
PROP_LEGACY = "coupler.legacy-format"
_AVRO = "avro/binary"


def _site_path(site_dir: Path, path: str) -> Path:
    p = Path(path).expanduser()
    return p if p.is_absolute() else site_dir / p


def wrapper_chain(config: AdapterConfig, site_dir: Path, schema_dirs: Sequence[Path] = ()) -> Any:
    """The adapter's wrapper chain (None without ``wrappers``); options' files relative to site.toml,
    an envelope's XSD reading the site's schema roots (:func:`site_schema_roots`: ``site_dir``
    and ``schema_dirs``, the ``[schemas] paths``)."""
    if not config.wrappers:
        return None
    from coupler.translators.wrappers import build_chain

    try:
        return build_chain([w.model_dump() for w in config.wrappers], base_dir=site_dir, where=f"{config.key_path}.wrappers",
                           schema_roots=site_schema_roots(site_dir, schema_dirs))
    except CouplerError as exc:  # its where names the key path (adapters[0].wrappers[1].options.size)
        raise ConfigError([f"{exc.where or config.key_path + '.wrappers'}: {exc.message}"], hint=exc.hint) from None


class InboundTranslation:
    """Unwrap, then legacy -> canonical, for what one inbound adapter publishes."""

    def __init__(self, adapter: str, *, chain: Any = None, mapping: Any = None, registry: Any = None,
                 publishes: FormatIndicator | None = None, mapping_name: str | None = None):
        self.adapter = adapter
        self.chain = chain
        self.mapping = mapping
        #: the mapping as site.toml names it (journaled with what it made: the trace shows it)
        self.mapping_name = (mapping_name or str(mapping.file)) if mapping is not None else None
        self.registry = registry
        self.reader: Any = None
        self.maps: FormatIndicator | None = None
        self.publishes = publishes
        if mapping is not None:
            from coupler.translators.mapping.legacy import LegacyReader

            self.reader = LegacyReader(mapping)
            self.to_canonical = mapping.direction("to_canonical")
            self.maps = FormatIndicator.parse(mapping.canonical_ref, _AVRO)
            self.publishes = (publishes or self.maps).with_content_type(_AVRO)

    @classmethod
    def for_adapter(cls, config: AdapterConfig, registry: Any, site_dir: Path,
                    functions: dict[str, Any] | None = None,
                    schema_dirs: Sequence[Path] = ()) -> InboundTranslation | None:
        """The stage of one inbound adapter, or None when its entry declares neither
        ``wrappers`` nor ``mapping``. The XSD of an ``xml:`` legacy spec may read files under
        its directory and the site's schema roots (:func:`site_schema_roots`: ``site_dir`` and
        ``schema_dirs``, the ``[schemas] paths``), as an envelope wrapper's XSD does."""
        chain = wrapper_chain(config, site_dir, schema_dirs)
        mapping = None
        publishes = FormatIndicator.parse(config.format) if config.format else None
        if config.mapping:
            from coupler.translators.mapping import load_mapping

            try:
                mapping = load_mapping(_site_path(site_dir, config.mapping), registry=registry, functions=functions,
                                       schema_roots=site_schema_roots(site_dir, schema_dirs))
                mapping.direction("to_canonical")
            except CouplerError as exc:
                raise ConfigError([f"{config.key_path}.mapping: {exc}"]) from None
            if not mapping.canonical_ref:
                raise ConfigError([f"{config.key_path}.mapping: {mapping.file} names no canonical entity (canonical = \"NAME@V\")"])
            maps = FormatIndicator.parse(mapping.canonical_ref)
            if publishes is not None and publishes.name != maps.name:
                raise ConfigError([f"{config.key_path}.format: the adapter publishes {publishes.ref} but its mapping "
                                   f"maps {maps.ref}"])
            if publishes is not None:
                try:
                    registry.get(publishes.name, publishes.version)
                except CouplerError as exc:
                    raise ConfigError([f"{config.key_path}.format: {exc.message}"]) from None
        if chain is None and mapping is None:
            return None
        try:
            return cls(config.name, chain=chain, mapping=mapping, registry=registry, publishes=publishes,
                       mapping_name=config.mapping)
        except CouplerError as exc:
            raise ConfigError([f"{config.key_path}: {exc}"]) from None

    def __call__(self, envelope: Envelope) -> Envelope:
        """``envelope`` as it goes on the channel; :class:`CouplerError` when it cannot be."""
        if self.chain is not None:
            payload, headers = self.chain.unwrap(envelope.body)
            envelope = headers.apply(envelope.replace(body=payload))
        if self.mapping is None:
            return envelope
        assert self.maps is not None and self.publishes is not None
        props = envelope.properties
        # where the record came from, as its file has it (numbered from 1, file byte offsets)
        label = props.get("file.path") or f"message {envelope.message_id}"
        number = int(props.get("record.number") or 1) - 1
        offset = int(props.get("record.offset") or 0)
        decoded = self.reader.decode(envelope.body, envelope.format.content_type, label=label, record=number, offset=offset)
        record = self.to_canonical.apply(decoded)
        if self.publishes.version != self.maps.version:
            record = self.registry.convert(record, self.maps, self.publishes)
        body = self.registry.encode(record, self.publishes.ref)
        properties = {**envelope.properties, PROP_LEGACY: str(envelope.format)}
        return envelope.replace(format=self.publishes, body=body, properties=properties)


class OutboundWrapping:
    """The wrapper chain around what one outbound adapter is handed (after the translation)."""

    def __init__(self, adapter: str, chain: Any):
        self.adapter = adapter
        self.chain = chain

    def _wrap(self, body: bytes, headers: Any, what: str) -> bytes:
        try:
            return self.chain.wrap(body, headers)
        except Exception as exc:  # any exception: this message is the unit that failed
            raise CommandFault(f"adapter {self.adapter!r} cannot wrap {what}: {UnitError.of(exc)}", code="invalid") from None

    def envelope(self, envelope: Envelope) -> Envelope:
        from coupler.translators.wrappers import Headers

        body = self._wrap(envelope.body, Headers.from_envelope(envelope), envelope.format.ref)
        return envelope.replace(body=body)

    def document(self, document: Document, command: Envelope) -> Document:
        """A command's document, wrapped with the command's headers and the document's properties."""
        from coupler.translators.wrappers import Headers

        headers = Headers.from_envelope(command)
        headers.properties = {**headers.properties, **document.properties}
        return Document(document.format, self._wrap(document.body, headers, document.format.ref), dict(document.properties))
