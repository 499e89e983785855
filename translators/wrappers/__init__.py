"""Envelope Wrappers beyond SOAP, and wrapper chains (Pipes and Filters).

- :class:`Headers` the envelope headers a legacy envelope carries (correlation id, reply-to,
  message id, properties); :class:`Wrapper` the protocol: ``wrap(payload, headers)`` and
  ``unwrap(data) -> (payload, headers)``;
- :class:`~.record.CopybookHeader` a fixed-width header described by a copybook;
  :class:`~.xml.XmlWrapper` an XML envelope described by an XSD;
  :class:`~.soap.SoapWrapper` SOAP 1.1/1.2 with WS-Addressing;
  :class:`~.framing.FramingWrapper` the stream framings of :mod:`coupler.translators.framing`
  (length prefix, MLLP, ...);
- :class:`WrapperChain` and :func:`build_chain` (from an adapter's ``wrappers`` in site.toml).
"""

from .base import Headers, Wrapper, WrapperError
from .chain import WrapperChain, build_chain, builtin_types

__all__ = ["Headers", "Wrapper", "WrapperChain", "WrapperError", "build_chain", "builtin_types"]
