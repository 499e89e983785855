"""Avro container files written by an encoder generated per schema (issue 32).

fastavro's writer interprets the schema for every datum: it walks the parsed schema, looks
its keys up and resolves each union by validating the datum against the branches, about a
microsecond per field (55 µs for an order of ``benchmarks/xml_translate.py``, as long as
decoding the XML). Here the schema is turned once into Python source (one function per named
record, compiled with ``compile``/``exec`` and cached per schema) that writes a record's
fields in order, with the union branch, enum index and small integers taken from tables: the
Avro binary encoding, byte for byte what ``fastavro.schemaless_writer`` writes for the same
record (property-tested in ``tests/translators/xml/test_compiled.py``).

fastavro stays the oracle and the error path: a record the generated code does not handle
(a value of an unexpected type, a union without its ``-type`` branch name, a decimal finer
than its scale...) is written again by ``fastavro.schemaless_writer``, which writes it as it
always did or raises its own error.
"""

from __future__ import annotations

import io
import json
import os
import struct
import time as _time
import zlib
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, date, datetime, time
from decimal import Decimal
from typing import IO, Any

from .codecache import compiled

#: zig-zag varints of -_SMALL .. _SMALL - 1, taken from a table
_SMALL = 8192
_BLOCK_BYTES = 64 * 1024
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_DAYS_SHIFT = date(1970, 1, 1).toordinal()
_PRIMITIVES = {"null", "boolean", "int", "long", "float", "double", "bytes", "string"}


class _Fallback(Exception):
    """The generated code does not handle this datum: fastavro writes it (or refuses it)."""


def _varint(n: int) -> bytes:
    z = (n << 1) ^ (n >> 63) if -(2**63) <= n < 2**63 else _too_long(n)
    if z < 0x200000:  # up to 3 bytes (days since 1970 of this century's dates)
        if z < 0x4000:
            return bytes((z & 0x7F | 0x80, z >> 7)) if z > 0x7F else bytes((z,))
        return bytes((z & 0x7F | 0x80, z >> 7 & 0x7F | 0x80, z >> 14))
    if z < 0x100000000000000:  # up to 8 bytes (microseconds since 1970): each 7 bits to its byte, no loop
        size = (z.bit_length() + 6) // 7
        return ((z & 0x7F | (z & 0x3F80) << 1 | (z & 0x1FC000) << 2 | (z & 0xFE00000) << 3 | (z & 0x7F0000000) << 4
                 | (z & 0x3F800000000) << 5 | (z & 0x1FC0000000000) << 6 | (z & 0xFE000000000000) << 7)
                | _CONTINUED[size]).to_bytes(size, "little")
    out = []
    while z > 0x7F:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


#: the continuation bit of every byte of an n-byte varint but its last
_CONTINUED = tuple(sum(0x80 << (8 * i) for i in range(n - 1)) for n in range(9))


def _too_long(n: int) -> int:
    raise _Fallback(f"{n} does not fit an Avro long")




def _small_table() -> tuple[bytes, ...]:
    """The zig-zag varints of -_SMALL .. _SMALL - 1 (what ``_varint`` gives each), built
    without calling it 16,384 times: the varint of every zig-zag value z < 2 * _SMALL (one
    byte below 128, two above), then the negative numbers (z = 2|n| - 1, from the largest
    down) and the others (z = 2n). A third of the CPU of importing this module before, which
    every Spark worker paid in its first XML split (issue 32)."""
    by_z = [bytes((z,)) for z in range(0x80)]
    by_z += [bytes((low | 0x80, high)) for high in range(1, 2 * _SMALL >> 7) for low in range(0x80)]
    return (*by_z[-1:0:-2], *by_z[0::2])


_TABLE = _small_table()


def _long(n: int) -> bytes:
    """The zig-zag varint of an int (``int`` and ``long`` are encoded alike)."""
    if type(n) is not int:
        raise _Fallback("not an int")
    return _TABLE[n + _SMALL] if -_SMALL <= n < _SMALL else _varint(n)


def _decimal_bytes(scale: int, precision: int) -> Callable[[Any], bytes]:
    factor = 10**scale
    limit = 10**precision

    def encode(value: Any) -> bytes:
        if type(value) is not Decimal or not value.is_finite():
            raise _Fallback("not a finite Decimal")
        # exact, in lowest terms: the value is a whole number of 1/factor when the
        # denominator divides factor (faster than reading the digits of str(value))
        numerator, denominator = value.as_integer_ratio()
        if denominator == 1:
            unscaled = numerator * factor
        else:
            multiple, rest = divmod(factor, denominator)
            if rest:
                raise _Fallback("finer than the scale")  # fastavro refuses it
            unscaled = numerator * multiple
        if -limit >= unscaled or unscaled >= limit:
            raise _Fallback("beyond the precision")  # fastavro refuses it
        return unscaled.to_bytes((unscaled.bit_length() + 8) // 8, "big", signed=True)

    return encode


def _timestamp_micros(value: Any) -> int:
    if type(value) is not datetime:
        raise _Fallback("not a datetime")
    if value.tzinfo is not None:
        delta = value - _EPOCH
        return (delta.days * 86400 + delta.seconds) * 1000000 + delta.microseconds
    return int(_time.mktime(value.timetuple())) * 1000000 + value.microsecond  # as fastavro: local time


def _date_days(value: Any) -> int:
    if type(value) is not date:
        raise _Fallback("not a date")
    return value.toordinal() - _DAYS_SHIFT


def _time_micros(value: Any) -> int:
    if type(value) is not time:
        raise _Fallback("not a time")
    return ((value.hour * 60 + value.minute) * 60 + value.second) * 1000000 + value.microsecond


class EncodedRecord(bytearray):
    """A record's Avro binary encoding, made by the XML decoder itself
    (``Decoder.iter_records(..., avro_schema=...)``): :func:`write_container` copies it."""

    __slots__ = ()


#: the Avro "type" of a field whose value is an element the XML decoder's generated code
#: converts straight to Avro (``{"type": ENCODED, "function": name}``: ``name(elem, out)``
#: appends the element's encoding, see ``translators/xml/decoder.py``)
ENCODED = "-encoded"


class _Generator:
    """Python source of the encoder of one schema: one function per named record. Its global
    names (functions, constants) start with ``prefix``, so that another generated module (the
    XML decoder's) can hold them too."""

    def __init__(self, prefix: str = "") -> None:
        self.prefix = prefix
        self.functions: dict[str, str] = {}  # record fullname -> function name
        self.sources: list[str] = []
        self.named: dict[str, Any] = {}  # fullname -> schema of named types
        self.constants: dict[str, Any] = {}
        self.counter = 0

    def constant(self, value: Any, prefix: str = "c") -> str:
        self.counter += 1
        name = f"{self.prefix}{prefix}{self.counter}"
        self.constants[name] = value
        return name

    def var(self, prefix: str = "v") -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    @staticmethod
    def fullname(schema: dict[str, Any], namespace: str | None) -> str:
        name = schema["name"]
        if "." in name:
            return str(name)
        ns = schema.get("namespace", namespace)
        return f"{ns}.{name}" if ns else str(name)

    def define(self, schema: Any, namespace: str | None) -> Any:
        """The schema with named types registered (a name refers to its definition)."""
        if isinstance(schema, str):
            if schema in _PRIMITIVES:
                return schema
            full = schema if "." in schema or schema in self.named else (f"{namespace}.{schema}" if namespace else schema)
            if full not in self.named:
                raise _Fallback(f"unknown named type {schema}")
            return self.named[full]
        if isinstance(schema, list):
            return [self.define(s, namespace) for s in schema]
        kind = schema["type"]
        if kind in ("record", "error", "enum", "fixed"):
            full = self.fullname(schema, namespace)
            self.named[full] = schema
            schema["__full"] = full
            if kind in ("record", "error"):
                inner_ns = full.rpartition(".")[0] or None
                for f in schema["fields"]:
                    f["type"] = self.define(f["type"], inner_ns)
            return schema
        if kind == "array":
            schema["items"] = self.define(schema["items"], namespace)
        elif kind == "map":
            schema["values"] = self.define(schema["values"], namespace)
        elif isinstance(kind, dict | list):
            return self.define(kind, namespace)
        return schema

    def record_function(self, schema: dict[str, Any]) -> str:
        full = schema["__full"]
        name = self.functions.get(full)
        if name is not None:
            return name
        name = self.functions[full] = f"{self.prefix}w{len(self.functions)}"
        lines = [f"def {name}(d, out):"]
        for f in schema["fields"]:
            value = self.var()
            lines.append(f"    {value} = d[{f['name']!r}]")
            lines += self.emit(f["type"], value, 1)
        if len(lines) == 1:
            lines.append("    pass")
        self.sources.append("\n".join(lines))
        return name

    @staticmethod
    def length(raw: str, pad: str) -> list[str]:
        """The length of a bytes value, as a long (a table entry for the short ones)."""
        size = raw.replace("b", "n", 1)
        return [f"{pad}{size} = len({raw})", f"{pad}out += T[{size} + {_SMALL}] if {size} < {_SMALL} else L({size})"]

    def count(self, value: str, pad: str) -> list[str]:
        """The item count of an array or map block, as a long (a table entry for the short ones)."""
        size = self.var("n")
        return [f"{pad}{size} = len({value})", f"{pad}out += T[{size} + {_SMALL}] if {size} < {_SMALL} else L({size})"]

    def emit(self, schema: Any, value: str, depth: int) -> list[str]:  # noqa: C901 - one branch per Avro type
        pad = "    " * depth
        if isinstance(schema, list):
            return self.emit_union(schema, value, depth)
        if isinstance(schema, dict) and schema["type"] == ENCODED:
            return [f"{pad}{schema['function']}({value}, out)"]
        kind = schema if isinstance(schema, str) else schema["type"]
        logical = None if isinstance(schema, str) else schema.get("logicalType")
        if logical == "decimal" and kind == "bytes":
            encode = self.constant(_decimal_bytes(int(schema.get("scale", 0)), int(schema["precision"])), "dec")
            raw = self.var("b")
            return [f"{pad}{raw} = {encode}({value})", *self.length(raw, pad), f"{pad}out += {raw}"]
        if logical is not None and kind in ("int", "long"):
            convert = {("int", "date"): "DAYS", ("long", "timestamp-micros"): "TSMICROS",
                       ("long", "time-micros"): "TMICROS"}.get((kind, logical))
            if convert is None:
                return [f"{pad}raise Fallback({logical!r})"]
            number = self.var("n")  # an int: the table, else the varint
            return [f"{pad}{number} = {convert}({value})",
                    f"{pad}out += T[{number} + {_SMALL}] if -{_SMALL} <= {number} < {_SMALL} else VARINT({number})"]
        if kind == "null":
            return [f"{pad}if {value} is not None: raise Fallback('not null')"]
        if kind == "boolean":
            return [f"{pad}out += b'\\x01' if {value} else b'\\x00'"]
        if kind in ("int", "long"):
            return [f"{pad}out += T[{value} + {_SMALL}] if -{_SMALL} <= {value} < {_SMALL} else L({value})"]
        if kind == "float":
            return [f"{pad}out += PACK_F({value})"]
        if kind == "double":
            return [f"{pad}out += PACK_D({value})"]
        if kind == "string":
            raw = self.var("b")
            return [f"{pad}{raw} = {value}.encode()", *self.length(raw, pad), f"{pad}out += {raw}"]
        if kind == "bytes":
            size = self.var("n")
            return [f"{pad}if type({value}) is not bytes: raise Fallback('not bytes')",
                    f"{pad}{size} = len({value})", f"{pad}out += T[{size} + {_SMALL}] if {size} < {_SMALL} else L({size})",
                    f"{pad}out += {value}"]
        if kind == "enum":
            table = self.constant({s: _long(i) for i, s in enumerate(schema["symbols"])}, "enum")
            return [f"{pad}out += {table}[{value}]"]
        if kind in ("record", "error"):
            return [f"{pad}{self.record_function(schema)}({value}, out)"]
        if kind == "array":
            item = self.var("x")
            return [f"{pad}if {value}:", *self.count(value, pad + "    "), f"{pad}    for {item} in {value}:",
                    *self.emit(schema["items"], item, depth + 2), f"{pad}out += b'\\x00'"]
        if kind == "map":
            key, item = self.var("k"), self.var("x")
            return [f"{pad}if {value}:", *self.count(value, pad + "    "),
                    f"{pad}    for {key}, {item} in {value}.items():",
                    *self.emit("string", key, depth + 2), *self.emit(schema["values"], item, depth + 2),
                    f"{pad}out += b'\\x00'"]
        return [f"{pad}raise Fallback({str(kind)!r})"]  # fixed and what else fastavro knows

    def emit_union(self, branches: list[Any], value: str, depth: int) -> list[str]:
        pad = "    " * depth
        null = next((i for i, b in enumerate(branches) if b == "null"), None)
        others = [(i, b) for i, b in enumerate(branches) if b != "null"]
        lines = []
        if null is not None:
            lines += [f"{pad}if {value} is None:", f"{pad}    out += {_long(null)!r}"]
        if len(others) == 1:
            index, branch = others[0]
            lines += [f"{pad}{'else' if null is not None else 'if True'}:", f"{pad}    out += {_long(index)!r}",
                      *self.emit(branch, value, depth + 1)]
            return lines
        if all(isinstance(b, dict) and b.get("type") in ("record", "error") for _, b in others):
            # the decoder names the branch of a polymorphic element in the record's "-type"
            tag = self.var("t")
            lines += [f"{pad}{'else' if null is not None else 'if True'}:", f"{pad}    {tag} = {value}.get('-type')"]
            inner = "if"
            for index, branch in others:
                lines += [f"{pad}    {inner} {tag} == {branch['__full']!r}:", f"{pad}        out += {_long(index)!r}",
                          *self.emit(branch, value, depth + 2)]
                inner = "elif"
            lines += [f"{pad}    else: raise Fallback('no -type')"]
            return lines
        lines += [f"{pad}{'else' if null is not None else 'if True'}: raise Fallback('union')"]
        return lines


_CACHE: dict[str, Callable[[Any, bytearray], None]] = {}


def _always_fallback(datum: Any, out: bytearray) -> None:
    raise _Fallback("not a record schema")


#: the globals the generated code refers to besides its constants
NAMESPACE: dict[str, Any] = {
    "L": _long, "VARINT": _varint, "T": _TABLE, "Fallback": _Fallback, "PACK_F": struct.Struct("<f").pack,
    "PACK_D": struct.Struct("<d").pack, "DAYS": _date_days, "TSMICROS": _timestamp_micros, "TMICROS": _time_micros,
}


def compile_encoder(schema: Any) -> Callable[[Any, bytearray], None]:
    """The generated function appending the Avro binary encoding of a datum of ``schema`` (a
    record schema as JSON data) to a bytearray; raises ``_Fallback`` for what it does not handle.
    Cached per schema."""
    key = json.dumps(schema, sort_keys=True)
    known = _CACHE.get(key)
    if known is not None:
        return known
    generator = _Generator()
    root = generator.define(json.loads(key), None)
    if not isinstance(root, dict) or root.get("type") not in ("record", "error"):
        return _always_fallback  # a union of records (a polymorphic root): fastavro writes each
    entry = generator.record_function(root)
    namespace: dict[str, Any] = {**NAMESPACE, **generator.constants}
    source = "\n\n".join(generator.sources)
    exec(compiled(source, f"<avro encoder {root['__full']}>"), namespace)  # noqa: S102 - generated above
    function: Any = namespace[entry]
    function.source = source  # for reading and debugging
    if len(_CACHE) < 64:
        _CACHE[key] = function
    return function


#: the codecs :func:`write_container` writes
CODECS = ("null", "deflate")


def write_container(
    out: IO[bytes], schema: Any, records: Iterable[dict[str, Any]], *, codec: str = "null",
    metadata: dict[str, str] | None = None,
) -> int:
    """Write ``records`` as an Avro object container file (``codec`` null or deflate, the
    file's ``metadata`` besides the schema and codec); returns how many. A record the
    generated encoder does not handle goes through fastavro."""
    writer = ContainerWriter(out, schema, codec=codec, metadata=metadata)
    for record in records:
        writer.write(record)
    return writer.close()


class ContainerWriter:
    """An Avro object container file written record by record (:meth:`write`) or from records
    encoded elsewhere (:meth:`write_encoded`: another process's, ``xml decode --jobs``), cut
    into blocks of at least 64 KB after the same records whichever way they came: the file
    of the same records is the same bytes but for its random sync marker.

    The generated encoder and fastavro's parsed schema (which also checks the schema) are
    built only once a record comes that the XML decoder did not encode itself: a record it
    encoded proves the schema is the record's own. Not built, nor fastavro imported,
    otherwise (5 ms and 10 ms of CPU that every Spark worker paid in its first XML split:
    issue 32); a file of no record has its schema checked when it is closed."""

    def __init__(self, out: IO[bytes], schema: Any, *, codec: str = "null",
                 metadata: dict[str, str] | None = None) -> None:
        if codec not in CODECS:
            raise ValueError(f"codec {codec!r}: null or deflate")
        self.out, self.codec, self.schema = out, codec, schema
        self.encode: Callable[[Any, bytearray], Any] | None = None
        self.parsed: Any = None
        self.proven = False
        self.sync = os.urandom(16)
        header = bytearray(b"Obj\x01")
        meta = {**{k: v.encode() for k, v in (metadata or {}).items()},
                "avro.codec": codec.encode(), "avro.schema": json.dumps(schema).encode()}
        header += _long(len(meta))
        for key, value in meta.items():
            header += _long(len(key)) + key.encode() + _long(len(value)) + value
        header += b"\x00" + self.sync
        out.write(header)
        self.block = bytearray()
        self.count = self.total = 0

    def _flush(self) -> None:
        data = bytes(self.block) if self.codec == "null" else _deflate(self.block)
        self.out.write(_long(self.count) + _long(len(data)))
        self.out.write(data)
        self.out.write(self.sync)
        self.total += self.count
        self.block.clear()
        self.count = 0

    def write(self, record: Any) -> None:
        """Append one record (a dict, or an :class:`EncodedRecord` of this schema)."""
        if type(record) is EncodedRecord:  # encoded by the XML decoder for this schema
            self.block += record
            self.proven = True
        else:
            if self.encode is None:
                self.encode, self.parsed = compile_encoder(self.schema), _parsed(self.schema)
                self.proven = True
            append_encoded(self.block, record, self.encode, self.parsed)
        self.count += 1
        if len(self.block) >= _BLOCK_BYTES:
            self._flush()

    def write_encoded(self, data: bytes | bytearray | memoryview, ends: Sequence[int]) -> None:
        """Append records encoded back to back in ``data`` (:func:`encode_records`), record
        ``i`` ending at ``ends[i]``; the blocks end after the records :meth:`write` would end them."""
        pos, i, n = 0, 0, len(ends)
        if n:
            self.proven = True  # encoded for this schema by :func:`encode_records`
        while i < n:
            # the first record whose end brings the block to _BLOCK_BYTES ends the block
            j = bisect_left(ends, pos + _BLOCK_BYTES - len(self.block), i)
            if j >= n:
                self.block += data[pos:]
                self.count += n - i
                return
            self.block += data[pos:ends[j]]
            self.count += j - i + 1
            self._flush()
            pos, i = ends[j], j + 1

    def close(self) -> int:
        """Write the last block; how many records the file holds."""
        if self.count:
            self._flush()
        if not self.proven:
            _parsed(self.schema)  # no record: the schema checked as before
        return self.total


def append_encoded(block: bytearray, record: Any, encode: Callable[[Any, bytearray], Any], parsed: Any) -> None:
    """Append ``record``'s Avro encoding to ``block``: an :class:`EncodedRecord` as it is, a
    dict by ``encode`` (:func:`compile_encoder`), or by fastavro, which writes what the
    generated code does not handle or raises its own error."""
    if type(record) is EncodedRecord:  # encoded by the XML decoder for this schema
        block += record
        return
    mark = len(block)
    try:
        encode(record, block)
    except Exception:  # noqa: BLE001 - the oracle writes it, or raises its own error
        del block[mark:]
        import fastavro

        buffer = io.BytesIO()
        fastavro.schemaless_writer(buffer, parsed, record)
        block += buffer.getvalue()


def encode_records(schema: Any, records: Iterable[Any]) -> tuple[bytearray, array]:
    """``records`` encoded back to back for ``schema`` and the offset where each ends, for
    :meth:`ContainerWriter.write_encoded` (a worker process encodes, its parent writes the file);
    the generated encoder built only for a record the XML decoder did not encode itself."""
    encode: Callable[[Any, bytearray], Any] | None = None
    parsed: Any = None
    data = bytearray()
    ends = array("q")
    for record in records:
        if type(record) is EncodedRecord:
            data += record
        else:
            if encode is None:
                encode, parsed = compile_encoder(schema), _parsed(schema)
            append_encoded(data, record, encode, parsed)
        ends.append(len(data))
    return data, ends


def _parsed(schema: Any) -> Any:
    """fastavro's parsed ``schema`` (its errors for a schema that is not one), fastavro
    imported only when needed."""
    import fastavro

    return fastavro.parse_schema(schema)


def _deflate(data: bytearray) -> bytes:
    compressor = zlib.compressobj(wbits=-15)
    return compressor.compress(data) + compressor.flush()
