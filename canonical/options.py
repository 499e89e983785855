"""Typed options: the base of every options model, and the problems a validation finds.

The site (``bus/config/models.py``), each adapter type and each translator declare their
options once, as pydantic models deriving from :class:`OptionsModel`: unknown keys are
errors, values are checked as TOML and JSON type them (``"10"`` is not a number, ``1`` is
not ``true``; an integer is a number). :func:`problems` turns a pydantic
``ValidationError`` into :class:`Problem`\\ s, each with its key path, a message in the words
of a site file ("unknown key (did you mean 'store'?)", "required key is missing",
"'in' is not one of inbound, outbound, both") and no pydantic jargon, so that every
component reports its options the same way and all problems are reported together.
"""

from __future__ import annotations

import difflib
import types
import typing
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    AllowInfNan,
    BaseModel,
    ConfigDict,
    Field,
    Strict,
    StrictBool,
    StrictStr,
    ValidationError,
)
from pydantic.fields import FieldInfo

from coupler.canonical.errors import OptionsError, Problem

__all__ = [
    "Bool",
    "Int",
    "Num",
    "OptionsError",
    "OptionsModel",
    "Problem",
    "Str",
    "describe_value",
    "key_path",
    "option",
    "problems",
    "validate_options",
]

Str = StrictStr
Int = Annotated[int, Strict()]
#: strict still takes an integer for a number; TOML's inf and nan are refused (a lease, a delay,
#: a timeout of inf never ends; nan compares false with every bound)
Num = Annotated[float, Strict(), AllowInfNan(False)]
Bool = StrictBool
_M = TypeVar("_M", bound=BaseModel)


class OptionsModel(BaseModel):
    """Base of an options model: unknown keys are errors, values are immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


def option(text: str, example: str | None = None, **kwargs: Any) -> Any:
    """A field with its documentation (and a TOML example of it in use)."""
    extra: dict[str, Any] | None = {"example": example} if example else None
    return Field(description=text, json_schema_extra=extra, **kwargs)


def key_path(loc: Sequence[str | int], prefix: str = "") -> str:
    """``prefix`` and ``loc`` as one key path: ``adapters[sftp-in].options.tls.cert``, ``to[1]``."""
    out = prefix
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out = f"{out}.{part}" if out else str(part)
    return out


def validate_options(
    model: type[_M], values: Any, *, prefix: str = "", error: type[OptionsError] = OptionsError
) -> _M:
    """``values`` as ``model``, or ``error`` listing every problem with its key path under ``prefix``."""
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        found = problems(exc, model, values, render=lambda loc: key_path(loc, prefix))
        raise error(found) from None


def problems(
    exc: ValidationError,
    model: type[BaseModel],
    data: Any = None,
    *,
    render: Callable[[tuple[str | int, ...]], str] = key_path,
) -> list[Problem]:
    """The problems of ``exc`` (a validation of ``data`` against ``model``), in file order."""
    out: list[Problem] = []
    for err in exc.errors(include_url=False):
        loc = tuple(p for p in err["loc"] if isinstance(p, int | str))
        if err["type"] != "extra_forbidden":
            loc = _strip_tags(model, loc)
        out.append(Problem(render(loc), _message(err, model, loc), loc))
    return out


def _strip_tags(model: type[BaseModel], loc: tuple[str | int, ...]) -> tuple[str | int, ...]:
    """``loc`` without the names pydantic inserts for union members and validator functions."""
    kept: list[str | int] = []
    ann: Any = model
    for part in loc:
        nxt = _child(ann, part)
        if nxt is _NOWHERE:
            continue  # a union member tag such as 'str' or 'function-after[...]'
        kept.append(part)
        ann = nxt
    return tuple(kept)


def _message(err: Any, model: type[BaseModel], loc: tuple[str | int, ...]) -> str:
    kind, value, ctx = err["type"], err.get("input"), err.get("ctx") or {}
    if kind == "extra_forbidden":
        parent = _annotation_at(model, loc[:-1])
        known = sorted(_keys(parent))
        key = str(loc[-1]) if loc else "?"
        close = difflib.get_close_matches(key, known, n=1)
        hint = f"did you mean {close[0]!r}?" if close else f"known keys: {', '.join(known) or 'none'}"
        return f"unknown key ({hint})"
    if kind == "missing":
        info = _field_at(model, loc)
        about = f" ({info.description.split('. ')[0].rstrip('.')})" if info is not None and info.description else ""
        return f"required key is missing{about}"
    if kind == "literal_error":
        choices = _choices(_annotation_at(model, loc))
        return f"{value!r} is not one of {', '.join(str(c) for c in choices)}"
    if kind in ("greater_than_equal", "greater_than"):
        bound = ctx.get("ge", ctx.get("gt"))
        word = "less than the minimum" if kind == "greater_than_equal" else "not greater than"
        return f"{value} is {word} {bound:g}"
    if kind in ("less_than_equal", "less_than"):
        bound = ctx.get("le", ctx.get("lt"))
        word = "more than the maximum" if kind == "less_than_equal" else "not less than"
        return f"{value} is {word} {bound:g}"
    if kind == "finite_number":
        return f"{value} is not a finite number"
    if kind in ("value_error", "assertion_error"):
        return str(ctx.get("error", err["msg"]))
    if kind.endswith("_type") or kind in ("model_attributes_type", "is_instance_of"):
        return f"expected {_expected(_annotation_at(model, loc), loc)}, got {describe_value(value)}"
    if kind in ("too_short", "too_long"):
        return err["msg"].replace("List", "array").replace("Tuple", "array")
    return str(err["msg"])


def describe_value(value: Any) -> str:
    """How a value reads in a message: ``a string ('10')``, ``an array``."""
    names = {str: "a string", bool: "a boolean", int: "an integer", float: "a number", list: "an array",
             tuple: "an array", dict: "a table"}
    name = names.get(type(value), type(value).__name__)
    return name if isinstance(value, dict | list | tuple) else f"{name} ({value!r})"


# -- walking a model's annotations ----------------------------------------------------------

_NOWHERE: Any = object()


def _unwrap(ann: Any) -> Any:
    """``ann`` without ``Annotated``, ``Optional`` and one-member unions."""
    while True:
        origin = typing.get_origin(ann)
        if origin is Annotated:
            ann = typing.get_args(ann)[0]
        elif origin in (typing.Union, types.UnionType):
            args = [a for a in typing.get_args(ann) if a is not type(None)]
            if len(args) != 1:
                return ann
            ann = args[0]
        else:
            return ann


def _fields(ann: Any) -> dict[str, FieldInfo]:
    ann = _unwrap(ann)
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return {(info.alias or name): info for name, info in ann.model_fields.items()}
    return {}


def _keys(ann: Any) -> list[str]:
    return list(_fields(ann))


def _child(ann: Any, part: str | int) -> Any:
    ann = _unwrap(ann)
    if isinstance(part, str):
        info = _fields(ann).get(part)
        if info is not None:
            return info.annotation
        if typing.get_origin(ann) is dict:
            return typing.get_args(ann)[1] if typing.get_args(ann) else Any
        if ann is Any:
            return Any
        return _NOWHERE
    origin = typing.get_origin(ann)
    if origin in (list, tuple, Sequence):
        args = typing.get_args(ann)
        return args[0] if args else Any
    if ann is Any:
        return Any
    return _NOWHERE


def _annotation_at(model: type[BaseModel], loc: Sequence[str | int]) -> Any:
    ann: Any = model
    for part in loc:
        ann = _child(ann, part)
        if ann is _NOWHERE:
            return Any
    return ann


def _field_at(model: type[BaseModel], loc: Sequence[str | int]) -> FieldInfo | None:
    if not loc or not isinstance(loc[-1], str):
        return None
    return _fields(_annotation_at(model, loc[:-1])).get(loc[-1])


def _choices(ann: Any) -> tuple[Any, ...]:
    ann = _unwrap(ann)
    return typing.get_args(ann) if typing.get_origin(ann) is Literal else ()


def _expected(ann: Any, loc: Sequence[str | int]) -> str:
    ann = _unwrap(ann)
    origin = typing.get_origin(ann)
    if origin in (list, tuple, Sequence):
        item = _unwrap(typing.get_args(ann)[0]) if typing.get_args(ann) else Any
        if isinstance(item, type) and issubclass(item, BaseModel):
            name = ".".join(str(p) for p in loc if isinstance(p, str))
            return f"an array of tables ([[{name}]])"
        return f"an array of {_plural(item)}"
    return _singular(ann)


_NAMES = {str: ("a string", "strings"), int: ("an integer", "integers"), float: ("a number", "numbers"),
          bool: ("true or false", "booleans"), dict: ("a table", "tables")}


def _singular(ann: Any) -> str:
    ann = _unwrap(ann)
    if isinstance(ann, type) and issubclass(ann, BaseModel) or typing.get_origin(ann) is dict:
        return "a table"
    if typing.get_origin(ann) is Literal:
        return "one of " + ", ".join(str(a) for a in typing.get_args(ann))
    return _NAMES.get(ann, (getattr(ann, "__name__", str(ann)), ""))[0]


def _plural(ann: Any) -> str:
    ann = _unwrap(ann)
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return "tables"
    return _NAMES.get(ann, ("", "values"))[1] or "values"
