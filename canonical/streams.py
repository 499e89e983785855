"""Reading files whose contents claim their own lengths.

A length field read from a damaged file (an Avro string or block size of 2^60 bytes) is
passed by readers such as fastavro straight to ``read(n)``, which allocates ``n`` bytes
before it reads: a ``MemoryError``, or gigabytes taken for a file of a few kilobytes.
:class:`CappedReads` hands such a reader the same file with every read capped at the bytes
the file has left, so the claim ends in a short read, which the reader reports as a
truncated file (``EOFError``).

:func:`avro_container` reads an Avro object container file a hostile hand may have written:
its lengths capped so; its counts of items that take no bytes refused (a block of 2^62 empty
records, an array of 2^60 nulls: endless work or memory from a few bytes); its compressed
blocks inflated no further than :data:`AVRO_BLOCK_BYTES`; a schema nested too deeply to parse
refused. Each refusal is a ``ValueError`` (one line), as fastavro's own for a damaged file.
"""

from __future__ import annotations

import bz2
import io
import lzma
import os
import zlib
from collections.abc import Iterator
from typing import IO, Any, cast


class CappedReads:
    """``f`` (a binary file open for reading), with ``read(n)`` asking for no more than the
    bytes between the position and the end of the file as it was when wrapped."""

    def __init__(self, f: IO[bytes]):
        self._f = f
        self._size = os.fstat(f.fileno()).st_size

    def read(self, n: int | None = -1) -> bytes:
        if n is None or n < 0:
            return self._f.read()
        return self._f.read(min(n, max(0, self._size - self._f.tell())))

    def __getattr__(self, name: str) -> Any:  # seek, tell, name... of the file itself
        return getattr(self._f, name)


def capped_reads(f: IO[bytes]) -> IO[bytes]:
    """``f`` wrapped in :class:`CappedReads`, typed as the file it stands for (every other
    attribute is the file's own)."""
    return cast(IO[bytes], CappedReads(f))


#: the most one block of an Avro container may hold once inflated (writers' blocks are 16 KB to 1 MB)
AVRO_BLOCK_BYTES = 16 * 1024 * 1024


def _long(fo: Any) -> int:
    """A zig-zag varint, as Avro writes a block's length."""
    shift = value = 0
    while True:
        byte = fo.read(1)
        if not byte:
            raise EOFError("the file ends inside a block length")
        value |= (byte[0] & 0x7F) << shift
        if not byte[0] & 0x80:
            return (value >> 1) ^ -(value & 1)
        shift += 7
        if shift > 63:
            raise ValueError("a block length of more than 64 bits")


def _block(source: Any) -> bytes:
    if hasattr(source, "read_bytes"):  # fastavro's pure-Python reader hands its decoder
        return bytes(source.read_bytes())
    size = _long(source)
    if size < 0:
        raise ValueError(f"a block of {size} bytes")
    data = source.read(size)
    if len(data) < size:
        raise EOFError(f"expected {size} bytes, read {len(data)}")
    return bytes(data)


def _bounded(name: str, inflater: Any, data: bytes) -> io.BytesIO:
    try:
        out = inflater.decompress(data, AVRO_BLOCK_BYTES + 1) if name == "deflate" else inflater.decompress(
            data, max_length=AVRO_BLOCK_BYTES + 1)
    except (zlib.error, lzma.LZMAError, OSError, EOFError) as exc:  # bz2: OSError
        raise ValueError(f"a {name} block cannot be inflated: {exc}") from None
    if len(out) > AVRO_BLOCK_BYTES:
        raise ValueError(f"a {name} block inflates to more than {AVRO_BLOCK_BYTES} bytes (AVRO_BLOCK_BYTES)")
    return io.BytesIO(out)


def _deflate_block(source: Any) -> io.BytesIO:
    return _bounded("deflate", zlib.decompressobj(-15), _block(source))


def _bzip2_block(source: Any) -> io.BytesIO:
    return _bounded("bzip2", bz2.BZ2Decompressor(), _block(source))


def _xz_block(source: Any) -> io.BytesIO:
    return _bounded("xz", lzma.LZMADecompressor(), _block(source))


def _min_bytes(schema: Any, names: dict[str, Any], seen: frozenset[str], where: str) -> int:
    """The fewest bytes a value of ``schema`` (as fastavro parses it) takes; refuses an array
    of items that take none (its count would be unbounded by the file's size)."""
    if isinstance(schema, str):
        fixed = {"null": 0, "boolean": 1, "int": 1, "long": 1, "float": 4, "double": 8, "bytes": 1, "string": 1}
        if schema in fixed:
            return fixed[schema]
        if schema in seen or schema not in names:
            return 1  # a recursive reference is reached through a union or an array: 1 byte at least
        return _min_bytes(names[schema], names, seen | {schema}, schema)
    if isinstance(schema, list):
        return 1 + min((_min_bytes(s, names, seen, where) for s in schema), default=0)
    if not isinstance(schema, dict):
        return 1
    kind = schema.get("type")
    if kind == "record" or kind == "error":
        seen = seen | {str(schema.get("name"))}
        return sum(_min_bytes(f.get("type"), names, seen, f"{schema.get('name')}.{f.get('name')}")
                   for f in schema.get("fields", []))
    if kind == "array":
        if _min_bytes(schema.get("items"), names, seen, where) == 0:
            raise ValueError(f"{where}: an array of items that take no bytes (its count could be any number)")
        return 1
    if kind == "map":
        _min_bytes(schema.get("values"), names, seen, where)
        return 1
    if kind == "fixed":
        return int(schema.get("size", 0))
    if kind == "enum":
        return 1
    return _min_bytes(kind, names, seen, where)


def _named(schema: Any, names: dict[str, Any]) -> dict[str, Any]:
    if isinstance(schema, list):
        for s in schema:
            _named(s, names)
    elif isinstance(schema, dict):
        if schema.get("type") in ("record", "error", "enum", "fixed") and "name" in schema:
            names[str(schema["name"])] = schema
        for f in schema.get("fields", []):
            _named(f.get("type"), names)
        for key in ("items", "values"):
            if key in schema:
                _named(schema[key], names)
    return names


def avro_container(f: IO[bytes], reader_schema: Any = None) -> tuple[Any, Iterator[Any]]:
    """fastavro's reader of the container file ``f`` (for its metadata) and its records, read
    as the module says; every refusal a ``ValueError`` or ``EOFError``."""
    import fastavro
    import fastavro.read

    for name, reader in (("deflate", _deflate_block), ("bzip2", _bzip2_block), ("xz", _xz_block)):
        fastavro.read.BLOCK_READERS[name] = reader  # fastavro's extension point for codecs: bounded ones
    try:
        container = fastavro.reader(capped_reads(f), reader_schema=reader_schema)
        writer = container.writer_schema
        if _min_bytes(writer, _named(writer, {}), frozenset(), "the schema") == 0:
            raise ValueError("its records take no bytes (a block could claim any number of them)")
    except RecursionError:
        raise ValueError("its schema is nested too deeply to read") from None

    def records() -> Iterator[Any]:
        try:
            yield from container
        except RecursionError:
            raise ValueError("a record is nested too deeply to read") from None
        except OverflowError as exc:  # a timestamp or date beyond what Python's datetime holds
            raise ValueError(f"a value out of range: {exc}") from None

    return container, records()


__all__ = ["AVRO_BLOCK_BYTES", "CappedReads", "avro_container", "capped_reads"]
