"""A module imported when one of its names is first used, not when the adapter is.

Every ``coupler`` command loads the adapter plugins (their types and options), but only a
site that runs a SOAP or SFTP adapter needs aiohttp or paramiko: imported eagerly they cost
each command about half a second of start-up. Use as::

    if TYPE_CHECKING:
        import paramiko
    else:
        paramiko = lazy_module("paramiko")
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any


class _LazyModule:
    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        module: ModuleType = importlib.import_module(self._name)
        return getattr(module, attr)

    def __repr__(self) -> str:
        return f"<lazy module {self._name!r}>"


def lazy_module(name: str) -> Any:
    """A stand-in for module ``name`` that imports it on the first attribute access."""
    return _LazyModule(name)
