"""The one option dictionary of the copybook translator (CLI, Python API, Spark).

Option names are Cobrix's, so that Cobrix users bring theirs unchanged; values arrive as
strings (``-o KEY=VALUE`` on the command line, Spark ``.option(...)``) or as Python values
(the Python API) and are parsed into a frozen :class:`CopybookOptions`. Defaults are
Cobrix's, except the EBCDIC code page (``cp037`` instead of Cobrix's ``common``).

Keys are case-insensitive and ``-`` equals ``_`` (``redefine-segment-id-map:1``). An
unknown key is an :class:`OptionsError` that suggests the nearest known names; a bad value
names the option and the values it accepts.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterable, Mapping
from typing import Any

from coupler.canonical.errors import OptionsError as CanonicalOptionsError
from coupler.canonical.plain import Plain
from coupler.translators.copybook.codepages import CodePageError, code_page_name
from coupler.translators.copybook.errors import CopybookError
from coupler.translators.copybook.picture import DecodeContext

__all__ = ["CopybookOptions", "OptionsError", "parse_key_values"]


class OptionsError(CopybookError, CanonicalOptionsError):
    """An unknown option or a value an option does not accept: the options error of every
    options model (:class:`coupler.canonical.options.OptionsError`, which catches both) and a
    :class:`CopybookError`."""


_RECORD_FORMATS = ("F", "FB", "V", "VB", "D")
_ENCODINGS = ("ebcdic", "ascii")
_TRIMMING = ("both", "left", "right", "none", "keep_all")
_FLOATS = ("IBM", "IBM_little_endian", "IEEE754", "IEEE754_little_endian")
_RETENTION = ("collapse_root", "keep_original")
_FILLER_NAMING = ("sequence_numbers", "previous_field_name")
_DEBUG = ("none", "hex", "raw", "binary", "string")


class CopybookOptions(Plain, frozen=True):
    """Typed copybook options; build with :meth:`from_mapping` or :meth:`from_pairs`.

    Every value goes through the option's parser (strings or Python values, Cobrix's
    spellings), unknown keys are errors, and all bad values are reported together. A frozen
    plain class (:mod:`coupler.canonical.plain`), neither a pydantic model nor a dataclass:
    `copybook decode` builds one on every start-up, and importing pydantic took about a third
    of the 0.3 s start-up budget, compiling the methods of this class as a dataclass 2 % (docs/performance.md).
    """

    copybook: str | None = None
    record_format: str = "F"
    record_length: int | None = None
    encoding: str = "ebcdic"
    ebcdic_code_page: str = "cp037"
    ascii_charset: str | None = None
    is_rdw_big_endian: bool = False
    rdw_adjustment: int = 0
    is_rdw_part_of_record_length: bool = False
    record_length_field: str | None = None
    file_start_offset: int = 0
    file_end_offset: int = 0
    record_start_offset: int = 0
    record_end_offset: int = 0
    segment_field: str | None = None
    segment_filter: tuple[str, ...] = ()
    #: (redefine field name, segment ids) pairs from ``redefine_segment_id_map:N``
    redefine_segment_id_map: tuple[tuple[str, tuple[str, ...]], ...] = ()
    #: (parent segment redefine, child segment redefines) pairs from ``segment-children:N``
    #: (hierarchical records: the children's records nest as arrays in their parent's group)
    segment_children: tuple[tuple[str, tuple[str, ...]], ...] = ()
    segment_id_levels: tuple[str, ...] = ()
    segment_id_prefix: str = ""
    segment_id_root: str | None = None
    string_trimming_policy: str = "both"
    floating_point_format: str = "IBM"
    variable_size_occurs: bool = False
    #: (OCCURS item, ((counter value, count), ...)) pairs from the ``occurs_mappings`` JSON
    occurs_mappings: tuple[tuple[str, tuple[tuple[str, int], ...]], ...] = ()
    improved_null_detection: bool = True
    schema_retention_policy: str = "collapse_root"
    generate_record_id: bool = False
    drop_group_fillers: bool = False
    drop_value_fillers: bool = True
    filler_naming_policy: str = "sequence_numbers"
    strict_sign_overpunching: bool = True
    strict_integral_precision: bool = False
    debug: str = "none"
    pedantic: bool = False
    input_split_records: int | None = None
    #: COMP integers beyond their PICTURE: kept (``bin``, Cobrix's behaviour) or bad (``std``)
    trunc: str = "bin"
    #: sign overpunch the encoder writes in ASCII zoned decimals: ``ibm`` or ``gnucobol``
    ascii_sign_convention: str = "ibm"
    #: bytes of USAGE POINTER / PROCEDURE-POINTER / FUNCTION-POINTER items: 4 (IBM 31-bit) or 8
    pointer_size: int = 4
    #: REDEFINES branches the encoder writes when present, before the first present one
    encode_branches: tuple[str, ...] = ()

    def __init__(
        self, copybook: str | None = None, record_format: str = "F", record_length: int | None = None,
        encoding: str = "ebcdic", ebcdic_code_page: str = "cp037", ascii_charset: str | None = None,
        is_rdw_big_endian: bool = False, rdw_adjustment: int = 0, is_rdw_part_of_record_length: bool = False,
        record_length_field: str | None = None, file_start_offset: int = 0, file_end_offset: int = 0,
        record_start_offset: int = 0, record_end_offset: int = 0, segment_field: str | None = None,
        segment_filter: tuple[str, ...] = (), redefine_segment_id_map: tuple[tuple[str, tuple[str, ...]], ...] = (),
        segment_children: tuple[tuple[str, tuple[str, ...]], ...] = (), segment_id_levels: tuple[str, ...] = (),
        segment_id_prefix: str = "", segment_id_root: str | None = None, string_trimming_policy: str = "both",
        floating_point_format: str = "IBM", variable_size_occurs: bool = False,
        occurs_mappings: tuple[tuple[str, tuple[tuple[str, int], ...]], ...] = (),
        improved_null_detection: bool = True, schema_retention_policy: str = "collapse_root",
        generate_record_id: bool = False, drop_group_fillers: bool = False, drop_value_fillers: bool = True,
        filler_naming_policy: str = "sequence_numbers", strict_sign_overpunching: bool = True,
        strict_integral_precision: bool = False, debug: str = "none", pedantic: bool = False,
        input_split_records: int | None = None, trunc: str = "bin", ascii_sign_convention: str = "ibm",
        pointer_size: int = 4, encode_branches: tuple[str, ...] = (),
    ) -> None:
        self.__dict__.update(
            copybook=copybook, record_format=record_format, record_length=record_length, encoding=encoding,
            ebcdic_code_page=ebcdic_code_page, ascii_charset=ascii_charset, is_rdw_big_endian=is_rdw_big_endian,
            rdw_adjustment=rdw_adjustment, is_rdw_part_of_record_length=is_rdw_part_of_record_length,
            record_length_field=record_length_field, file_start_offset=file_start_offset,
            file_end_offset=file_end_offset, record_start_offset=record_start_offset,
            record_end_offset=record_end_offset, segment_field=segment_field, segment_filter=segment_filter,
            redefine_segment_id_map=redefine_segment_id_map, segment_children=segment_children,
            segment_id_levels=segment_id_levels, segment_id_prefix=segment_id_prefix,
            segment_id_root=segment_id_root, string_trimming_policy=string_trimming_policy,
            floating_point_format=floating_point_format, variable_size_occurs=variable_size_occurs,
            occurs_mappings=occurs_mappings, improved_null_detection=improved_null_detection,
            schema_retention_policy=schema_retention_policy, generate_record_id=generate_record_id,
            drop_group_fillers=drop_group_fillers, drop_value_fillers=drop_value_fillers,
            filler_naming_policy=filler_naming_policy, strict_sign_overpunching=strict_sign_overpunching,
            strict_integral_precision=strict_integral_precision, debug=debug, pedantic=pedantic,
            input_split_records=input_split_records, trunc=trunc, ascii_sign_convention=ascii_sign_convention,
            pointer_size=pointer_size, encode_branches=encode_branches,
        )
        self.__post_init__()

    # ------------------------------------------------------------------ construction

    @classmethod
    def from_mapping(
        cls, options: Mapping[str, Any] | None = None, *, ignore: Iterable[str] = ()
    ) -> CopybookOptions:
        """Parse Cobrix-named options (string or Python values) into typed options.

        Keys listed in ``ignore`` (for example Spark's ``path``) are skipped. Every unknown key
        and bad value is reported, together in one :class:`OptionsError`.
        """
        skip = {_norm_key(k) for k in ignore}
        values: dict[str, Any] = {}
        levels: dict[int, str] = {}
        redefines: dict[int, tuple[str, tuple[str, ...]]] = {}
        children: dict[int, tuple[str, tuple[str, ...]]] = {}
        found: list[OptionsError] = []
        for raw_key, raw_value in (options or {}).items():
            key = _norm_key(raw_key)
            if key in skip:
                continue
            try:
                m = re.fullmatch(r"segment_id_level(\d+)", key)
                if m:
                    levels[int(m.group(1))] = _text(raw_key, raw_value)
                    continue
                m = re.fullmatch(r"redefine_segment_id_map(?::(\d+))?", key)
                if m:
                    redefines[int(m.group(1) or 0)] = _redefine_map(raw_key, raw_value)
                    continue
                m = re.fullmatch(r"segment_children(?::(\d+))?", key)
                if m:
                    children[int(m.group(1) or 0)] = _segment_children(raw_key, raw_value)
                    continue
            except OptionsError as exc:
                found.append(exc)
                continue
            if key not in _PARSERS:
                found.append(_unknown(raw_key))
                continue
            try:
                values[key] = _PARSERS[key](raw_key, raw_value)
            except OptionsError as exc:
                found.append(exc)
        if levels:
            if sorted(levels) != list(range(len(levels))):
                raise OptionsError(
                    "segment_id_level options must be numbered 0, 1, 2, ... without gaps",
                    where="option segment_id_level" + ",".join(str(n) for n in sorted(levels)),
                )
            values["segment_id_levels"] = tuple(levels[n] for n in sorted(levels))
        if redefines:
            values["redefine_segment_id_map"] = tuple(redefines[n] for n in sorted(redefines))
        if children:
            values["segment_children"] = tuple(children[n] for n in sorted(children))
        if found:
            raise found[0] if len(found) == 1 else OptionsError(
                f"{len(found)} problems: " + "; ".join(str(e) for e in found))
        return cls(**values)

    @classmethod
    def from_pairs(cls, pairs: Iterable[str], *, ignore: Iterable[str] = ()) -> CopybookOptions:
        """Parse ``KEY=VALUE`` strings (the CLI's ``-o`` arguments)."""
        return cls.from_mapping(parse_key_values(pairs), ignore=ignore)

    def with_options(self, options: Mapping[str, Any]) -> CopybookOptions:
        """These options with some replaced (same parsing and checks as :meth:`from_mapping`)."""
        parsed = CopybookOptions.from_mapping(options)
        given = {_norm_key(k) for k in options}
        changes = {
            name: getattr(parsed, name)
            for name in _FIELDS
            if name in given
            or (
                name == "segment_id_levels"
                and any(k.startswith("segment_id_level") for k in given)
            )
            or (
                name == "redefine_segment_id_map"
                and any(k.startswith("redefine_segment_id_map") for k in given)
            )
            or (name == "segment_children" and any(k.startswith("segment_children") for k in given))
        }
        return self._replace(**changes)

    def __post_init__(self) -> None:
        """The checks across options (each value was checked by its parser)."""
        if self.record_format == "D" and self.encoding != "ascii":
            raise OptionsError(
                "record_format D (text lines) needs encoding=ascii",
                where="option record_format",
                hint="set -o encoding=ascii, or use record_format F/V for EBCDIC files",
            )
        if self.segment_children:
            where = "option segment-children"
            seen: dict[str, str] = {}
            for parent, kids in self.segment_children:
                for kid in kids:
                    if seen.get(kid.upper(), parent.upper()) != parent.upper():
                        raise OptionsError(
                            f"duplicate child {kid!r} for parents {seen[kid.upper()]} and {parent}",
                            where=where, hint="give each child segment one parent",
                        )
                    seen[kid.upper()] = parent.upper()
        if self.record_length is not None and self.record_length_field:
            raise OptionsError(
                "record_length and record_length_field are mutually exclusive",
                where="option record_length",
            )

    def replace(self, **changes: Any) -> CopybookOptions:
        """These options with ``changes`` (typed values, checked again)."""
        return self._replace(**changes)

    # ------------------------------------------------------------------ views

    def decode_context(self) -> DecodeContext:
        """The :class:`DecodeContext` the field codecs read with these options."""
        return DecodeContext.from_options(self)

    @property
    def segment_redefines(self) -> dict[str, str]:
        """Segment id -> the REDEFINES field it populates (from ``redefine_segment_id_map``)."""
        return {sid: name for name, ids in self.redefine_segment_id_map for sid in ids}

    @property
    def occurs_mapping(self) -> dict[str, dict[str, int]]:
        """OCCURS DEPENDING ON item -> {counter value: element count} (from ``occurs_mappings``)."""
        return {name: dict(pairs) for name, pairs in self.occurs_mappings}

    def to_dict(self) -> dict[str, str]:
        """The options as Cobrix-named strings (non-default values only), for Spark and logs."""
        default = CopybookOptions()
        out: dict[str, str] = {}
        for name in _FIELDS:
            value = getattr(self, name)
            if value == getattr(default, name):
                continue
            if name == "segment_id_levels":
                for i, level in enumerate(value):
                    out[f"segment_id_level{i}"] = level
            elif name == "redefine_segment_id_map":
                for i, (name, ids) in enumerate(value):
                    out[f"redefine_segment_id_map:{i}"] = f"{name} => {','.join(ids)}"
            elif name == "segment_children":
                for i, (parent, kids) in enumerate(value):
                    out[f"segment-children:{i}"] = f"{parent} => {','.join(kids)}"
            elif name == "occurs_mappings":
                import json  # this option alone needs it (start-up: docs/performance.md)

                out[name] = json.dumps({n: dict(p) for n, p in value})
            elif name in ("segment_filter", "encode_branches"):
                out[name] = ",".join(value)
            elif isinstance(value, bool):
                out[name] = "true" if value else "false"
            else:
                out[name] = str(value)
        return out


# ---------------------------------------------------------------------- value parsers


def parse_key_values(pairs: Iterable[str]) -> dict[str, str]:
    """``["a=1", "b = x"]`` -> ``{"a": "1", "b": "x"}``; a pair without ``=`` is an error."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise OptionsError(
                f"option {pair!r} is not KEY=VALUE", hint="write it as -o record_format=V"
            )
        out[key.strip()] = value.strip()
    return out


def _norm_key(key: str) -> str:
    return str(key).strip().lower().replace("-", "_")


def _known_names() -> list[str]:
    return sorted(
        [*_PARSERS, "segment_id_level0", "redefine_segment_id_map:0", "redefine-segment-id-map:0",
         "segment-children:0", "segment_children:0"]
    )


def _unknown(key: str) -> OptionsError:
    import difflib  # for a misspelt option only (start-up)

    close = difflib.get_close_matches(_norm_key(key), _known_names(), n=3, cutoff=0.6)
    hint = f"did you mean {' or '.join(close)}?" if close else "see the option list in the docs"
    return OptionsError(f"unknown option {key!r}", where=f"option {key}", hint=hint)


def _bad(key: str, value: Any, accepted: str) -> OptionsError:
    return OptionsError(
        f"bad value {value!r}", where=f"option {key}", hint=f"use {accepted}"
    )


def _text(key: str, value: Any) -> str:
    if value is None:
        raise _bad(key, value, "a text value")
    return str(value).strip()


def _optional_text(key: str, value: Any) -> str | None:
    if value is None:
        return None
    text = str(value).strip()
    return text or None


def _bool(key: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "yes", "y", "1", "on"):
        return True
    if text in ("false", "no", "n", "0", "off"):
        return False
    raise _bad(key, value, "true or false")


def _int(key: str, value: Any, *, minimum: int | None = 0) -> int:
    if isinstance(value, bool):
        raise _bad(key, value, "an integer")
    try:
        n = int(str(value).strip()) if not isinstance(value, int) else value
    except ValueError:
        raise _bad(key, value, "an integer") from None
    if minimum is not None and n < minimum:
        raise _bad(key, value, f"an integer >= {minimum}")
    return n


def _choice(choices: tuple[str, ...]) -> Any:
    folded = {c.lower(): c for c in choices}

    def parse(key: str, value: Any) -> str:
        text = str(value).strip().lower()
        if text in folded:
            return folded[text]
        raise _bad(key, value, "one of " + ", ".join(choices))

    return parse


def _record_format(key: str, value: Any) -> str:
    text = str(value).strip().upper()
    if text in _RECORD_FORMATS:
        return text
    raise _bad(key, value, "one of " + ", ".join(_RECORD_FORMATS))


def _code_page(key: str, value: Any) -> str:
    try:
        return code_page_name(str(value))
    except CodePageError as exc:
        raise OptionsError(f"{exc.message}", where=f"option {key}", hint=exc.hint) from None


def _charset(key: str, value: Any) -> str | None:
    text = _optional_text(key, value)
    if text is None:
        return None
    try:
        codecs.lookup(text)
    except LookupError:
        raise _bad(
            key, value, "a character set such as us-ascii, latin-1, utf-8 or cp1252"
        ) from None
    return text


def _debug(key: str, value: Any) -> str:
    if isinstance(value, bool):
        return "hex" if value else "none"
    text = str(value).strip().lower()
    if text in ("true", "yes", "1"):
        return "hex"
    if text in ("false", "no", "0", ""):
        return "none"
    if text in _DEBUG:
        return text
    raise _bad(key, value, "true, false, hex, raw, binary or string")


def _list(key: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, (list, tuple)):
        return tuple(str(v).strip() for v in value)
    return tuple(v.strip() for v in str(value).split(",") if v.strip())


def _redefine_map(key: str, value: Any) -> tuple[str, tuple[str, ...]]:
    name, sep, ids = str(value).partition("=>")
    id_list = tuple(v.strip() for v in ids.split(",") if v.strip())
    if not sep or not name.strip() or not id_list:
        raise _bad(key, value, '"REDEFINE-FIELD => ID1,ID2"')
    return name.strip(), id_list


def _segment_children(key: str, value: Any) -> tuple[str, tuple[str, ...]]:
    name, sep, kids = str(value).partition("=>")
    kid_list = tuple(v.strip() for v in kids.split(",") if v.strip())
    if not sep or not name.strip() or not kid_list or "=>" in kids:
        raise _bad(key, value, '"PARENT => CHILD1,CHILD2"')
    return name.strip(), kid_list


def _occurs_mappings(key: str, value: Any) -> tuple[tuple[str, tuple[tuple[str, int], ...]], ...]:
    import json  # this option alone needs it (start-up: docs/performance.md)

    data = value
    if isinstance(value, str):
        try:
            data = json.loads(value)
        except json.JSONDecodeError as exc:
            raise _bad(
                key, value, f'JSON like {{"FIELD": {{"A": 1, "B": 2}}}} ({exc.msg})'
            ) from None
    if not isinstance(data, Mapping) or not all(isinstance(v, Mapping) for v in data.values()):
        raise _bad(key, value, 'JSON like {"FIELD": {"A": 1, "B": 2}}')
    out = []
    for name, mapping in data.items():
        pairs = []
        for k, n in mapping.items():
            if isinstance(n, bool) or not isinstance(n, int) or n < 0:
                raise OptionsError(
                    f"{name}: {k!r} maps to {n!r}, which is not an element count",
                    where=f"option {key}", hint="counts are integers >= 0, e.g. {\"A\": 0, \"B\": 1}",
                )
            pairs.append((str(k), n))
        out.append((str(name), tuple(pairs)))
    return tuple(out)


def _optional_int(minimum: int) -> Any:
    def parse(key: str, value: Any) -> int | None:
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
        return _int(key, value, minimum=minimum)

    return parse


_PARSERS: dict[str, Any] = {
    "copybook": _optional_text,
    "record_format": _record_format,
    "record_length": _optional_int(1),
    "encoding": _choice(_ENCODINGS),
    "ebcdic_code_page": _code_page,
    "ascii_charset": _charset,
    "is_rdw_big_endian": _bool,
    "rdw_adjustment": lambda k, v: _int(k, v, minimum=None),
    "is_rdw_part_of_record_length": _bool,
    "record_length_field": _optional_text,
    "file_start_offset": _int,
    "file_end_offset": _int,
    "record_start_offset": _int,
    "record_end_offset": _int,
    "segment_field": _optional_text,
    "segment_filter": _list,
    "segment_id_prefix": lambda k, v: "" if v is None else str(v).strip(),
    "segment_id_root": _optional_text,
    "string_trimming_policy": _choice(_TRIMMING),
    "floating_point_format": _choice(_FLOATS),
    "variable_size_occurs": _bool,
    "occurs_mappings": _occurs_mappings,
    "improved_null_detection": _bool,
    "schema_retention_policy": _choice(_RETENTION),
    "generate_record_id": _bool,
    "drop_group_fillers": _bool,
    "drop_value_fillers": _bool,
    "filler_naming_policy": _choice(_FILLER_NAMING),
    "strict_sign_overpunching": _bool,
    "strict_integral_precision": _bool,
    "debug": _debug,
    "pedantic": _bool,
    "input_split_records": _optional_int(1),
    "trunc": _choice(("bin", "std")),
    "ascii_sign_convention": _choice(("ibm", "gnucobol")),
    "pointer_size": lambda k, v: int(_choice(("4", "8"))(k, v)),
    "encode_branches": _list,
}

#: the options' names, in declaration order
_FIELDS = CopybookOptions._fields
