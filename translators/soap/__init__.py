"""SOAP Envelope Wrapper/Unwrapper (1.1 and 1.2), faults, WS-Addressing, WS-Security
UsernameToken, and WSDL 1.1 reading.

- :func:`wrap` / :func:`unwrap` (``envelope``) put a payload into a SOAP envelope and take it out;
- :class:`SoapFault` (``faults``) both versions, and error replies on the bus;
- :class:`Addressing` (``addressing``) WS-Addressing headers <-> envelope headers;
- :class:`UsernameToken` (``wssecurity``) text and digest passwords;
- :func:`read_wsdl` (``wsdl``) services, ports, bindings and operations.
"""

from .addressing import Addressing
from .envelope import SOAP11, SOAP12, SoapError, SoapMessage, unwrap, wrap
from .faults import SoapFault
from .wsdl import read_wsdl
from .wssecurity import UsernameToken

__all__ = [
    "SOAP11",
    "SOAP12",
    "Addressing",
    "SoapError",
    "SoapFault",
    "SoapMessage",
    "UsernameToken",
    "read_wsdl",
    "unwrap",
    "wrap",
]
