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
from collections.abc import Callable
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


def lazy_exports(package: str, exports: dict[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` (PEP 562) for ``package``: ``exports`` maps a name to the
    submodule defining it (``{"SftpAdapter": "adapter"}``), imported at the first
    ``from package import SftpAdapter``, not with the package (an adapter plugin's package is
    imported by every ``coupler`` command that loads the plugins; its adapter class is
    contributed as ``"package.adapter:SftpAdapter"``, imported when a site names its type)."""

    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{exports[name]}"), name)

    return __getattr__
