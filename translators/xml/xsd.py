"""An XSD loaded and compiled, with the decoders and encoders of its global elements.

:class:`XsdModel` is the translator's entry point: the analysis of the schema
(:class:`~coupler.translators.xml.model.SchemaModel`) plus one cached
:class:`~coupler.translators.xml.decoder.Decoder` and
:class:`~coupler.translators.xml.encoder.Encoder` per global element. The model module
imports neither, so the three modules form no import cycle.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import xmlschema

from .decoder import Decoder
from .encoder import Encoder
from .model import SchemaModel
from .security import MAX_MODEL_PARTICLES, load_schema


class XsdModel(SchemaModel):
    """An XSD loaded and compiled: Avro schemas, decoders and encoders for its global elements."""

    def __init__(self, schema: xmlschema.XMLSchema, source: str = "<schema>", *, keep_simple_xsi_types: bool = False):
        super().__init__(schema, source, keep_simple_xsi_types=keep_simple_xsi_types)
        self._decoders: dict[str, Decoder] = {}
        self._encoders: dict[str, Encoder] = {}

    @classmethod
    def load(cls, path: str | Path, *, keep_simple_xsi_types: bool = False,
             schema_roots: Iterable[str | Path] | None = None,
             max_model_particles: int = MAX_MODEL_PARTICLES) -> XsdModel:
        """The schema at ``path``; its includes and imports may read files under its directory
        and the directories ``schema_roots`` (:class:`~coupler.translators.xml.security.SchemaSandbox`);
        a content model of more than ``max_model_particles`` particles is refused (0: no limit)."""
        schema = load_schema(path, roots=schema_roots, max_model_particles=max_model_particles)
        return cls(schema, str(path), keep_simple_xsi_types=keep_simple_xsi_types)

    def decoder(self, name: str | None = None) -> Decoder:
        key = self.element(name).name
        if key not in self._decoders:
            self._decoders[key] = Decoder(self, key)
        return self._decoders[key]

    def encoder(self, name: str | None = None) -> Encoder:
        key = self.element(name).name
        if key not in self._encoders:
            self._encoders[key] = Encoder(self, key)
        return self._encoders[key]
