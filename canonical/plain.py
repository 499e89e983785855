"""Plain value classes: what ``@dataclass`` gives, without compiling source at import.

``@dataclass`` writes the ``__init__``, ``__repr__``, ``__eq__``, ``__hash__`` and (frozen)
``__setattr__`` / ``__delattr__`` of a class as source text and compiles it with ``exec``
every time the module is imported: 0.7-0.9 M instructions a method, 3-5 M a frozen class.
The 25 dataclasses of the copybook parser, layout, options and decoder (110 methods) made
~15 % of the instructions of ``coupler copybook decode``'s start-up (docs/performance.md, h137). A :class:`Plain` subclass
writes its ``__init__`` by hand (compiled into the module's bytecode like any function) and
gets the rest from here, generic and the same as a dataclass's:

* the fields are the class's annotations in order, after its bases' (a name starting with
  ``_`` is private state that ``__init__`` sets, not a field);
* ``repr``: ``Name(a=1, b='x')``, the fields in order, less those named in ``hidden``;
* ``eq=True`` (the default): equal to an instance of the very same class with equal fields
  (less those named in ``uncompared``); ``eq=False``: identity, as ``object``;
* ``frozen=True``: assigning or deleting an attribute raises
  :class:`dataclasses.FrozenInstanceError`, ``__init__`` sets them through ``self.__dict__``;
  hashable by its compared fields. An ``eq=True`` class that is not frozen is unhashable;
* :meth:`Plain._replace` is ``dataclasses.replace``; ``_fields`` is what
  ``dataclasses.fields`` named; pickling and ``copy`` work on the instance's ``__dict__``.

``tests/canonical/test_plain.py`` checks every subclass's ``__init__`` against its fields
(names, order, defaults), so that a field added without its parameter fails there.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any, ClassVar, Self


class _New:
    def __repr__(self) -> str:
        return "NEW"


#: the default of an ``__init__`` parameter whose field starts as a new empty list or dict
#: (``children: list[Item] = NEW`` then ``self.children = [] if children is NEW else children``)
NEW: Any = _New()


def _frozen_setattr(self: Plain, name: str, value: Any) -> None:
    from dataclasses import FrozenInstanceError

    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _frozen_delattr(self: Plain, name: str) -> None:
    from dataclasses import FrozenInstanceError

    raise FrozenInstanceError(f"cannot delete field {name!r}")


class Plain:
    """Base of a value class with a hand-written ``__init__`` (see the module's documentation):
    ``class Token(Plain, frozen=True): ...``."""

    #: the fields, in order (the annotations of the class and of its bases)
    _fields: ClassVar[tuple[str, ...]] = ()
    _shown: ClassVar[tuple[str, ...]] = ()
    #: the values ``==`` and ``hash`` compare (a class without fields: its instances are equal)
    _key: ClassVar[attrgetter[Any]] = attrgetter("__class__")
    __match_args__: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, *, frozen: bool = False, eq: bool = True, hidden: tuple[str, ...] = (),
                          uncompared: tuple[str, ...] = (), **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = [name for name, kind in cls.__dict__.get("__annotations__", {}).items()
               if not name.startswith("_") and not str(kind).startswith(("ClassVar", "typing.ClassVar"))]
        fields = (*cls._fields, *(name for name in own if name not in cls._fields))
        cls._fields = fields
        cls._shown = tuple(name for name in fields if name not in hidden)
        compared = tuple(name for name in fields if name not in uncompared)
        cls._key = attrgetter(*compared) if compared else Plain._key
        if "__match_args__" not in cls.__dict__:
            cls.__match_args__ = fields  # type: ignore[misc]
        if not eq:
            cls.__eq__ = object.__eq__  # type: ignore[method-assign]
            cls.__hash__ = object.__hash__  # type: ignore[method-assign]
        elif not frozen and "__hash__" not in cls.__dict__:
            cls.__hash__ = None  # type: ignore[assignment]
        if frozen:
            cls.__setattr__ = _frozen_setattr  # type: ignore[method-assign,assignment]
            cls.__delattr__ = _frozen_delattr  # type: ignore[method-assign,assignment]

    def __repr__(self) -> str:
        cls = type(self)
        return f"{cls.__qualname__}({', '.join(f'{name}={getattr(self, name)!r}' for name in cls._shown)})"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return bool(self._key(self) == self._key(other))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._key(self))

    def _replace(self, **changes: Any) -> Self:
        """A new instance with ``changes`` (through ``__init__``, as ``dataclasses.replace``)."""
        return type(self)(**{**{name: getattr(self, name) for name in self._fields}, **changes})
