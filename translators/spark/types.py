"""Avro schemas as Arrow and Spark schemas.

The copybook translator describes a record layout as an Avro schema (records, arrays,
nullable unions, ``decimal`` logical types); the Spark data sources need the same shape as
an Arrow schema (for the record batches they yield) and a Spark ``StructType`` (for
``DataSource.schema``). Both are derived here from the Avro schema, so the three never drift.

Spark limits decimals to 38 digits: a wider Avro decimal becomes ``decimal(38, scale)``.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from coupler.canonical.errors import CouplerError

#: the widest decimal Spark holds
MAX_DECIMAL_PRECISION = 38

_PRIMITIVES: dict[str, pa.DataType] = {
    "null": pa.null(),
    "boolean": pa.bool_(),
    "int": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "bytes": pa.binary(),
    "string": pa.string(),
}


class SchemaMappingError(CouplerError):
    """An Avro schema has a type the Spark data sources cannot represent."""


def arrow_schema(avro_schema: dict[str, Any]) -> pa.Schema:
    """The Arrow schema of the records described by an Avro ``record`` schema."""
    if not isinstance(avro_schema, dict) or avro_schema.get("type") != "record":
        raise SchemaMappingError(
            "the Avro schema of a data set must be a record",
            where=str(avro_schema.get("name", "<schema>")) if isinstance(avro_schema, dict) else "<schema>",
        )
    named: dict[str, Any] = {}
    struct = _arrow_type(avro_schema, named, avro_schema.get("name", "record"))
    return pa.schema(list(struct))


def _arrow_type(schema: Any, named: dict[str, Any], where: str) -> pa.DataType:
    if isinstance(schema, str):
        if schema in _PRIMITIVES:
            return _PRIMITIVES[schema]
        if schema in named:
            return _arrow_type(named[schema], named, where)
        raise SchemaMappingError(f"unknown Avro type {schema!r}", where=where)
    if isinstance(schema, list):
        branches = [s for s in schema if s != "null"]
        if len(branches) != 1:
            raise SchemaMappingError(
                "only unions of null and one type map to Spark columns",
                where=where,
                hint="model alternatives as separate nullable fields (as REDEFINES branches are)",
            )
        return _arrow_type(branches[0], named, where)
    kind = schema.get("type")
    logical = schema.get("logicalType")
    if logical == "decimal":
        precision = int(schema["precision"])
        scale = int(schema.get("scale", 0))
        return pa.decimal128(min(precision, MAX_DECIMAL_PRECISION), scale)
    if logical == "date" and kind == "int":
        return pa.date32()
    if logical in ("timestamp-millis", "timestamp-micros") and kind == "long":
        return pa.timestamp("us", tz="UTC")
    if kind == "record":
        if schema.get("name"):
            named[schema["name"]] = schema
            if schema.get("namespace"):
                named[f"{schema['namespace']}.{schema['name']}"] = schema
        fields = [
            pa.field(f["name"], _arrow_type(f["type"], named, f"{where}.{f['name']}"), nullable=True)
            for f in schema.get("fields", [])
        ]
        return pa.struct(fields)
    if kind == "array":
        return pa.list_(_arrow_type(schema["items"], named, f"{where}[]"))
    if kind == "enum":
        return pa.string()
    if kind == "fixed":
        return pa.binary()
    if kind == "map":
        return pa.map_(pa.string(), _arrow_type(schema["values"], named, f"{where}{{}}"))
    if isinstance(kind, str | list | dict):
        return _arrow_type(kind, named, where)
    raise SchemaMappingError(f"unsupported Avro schema {schema!r}", where=where)


def spark_schema(schema: pa.Schema) -> Any:
    """The Spark ``StructType`` of an Arrow schema."""
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(schema)


def avro_schema_of_spark(struct: Any, name: str = "Record", namespace: str | None = None) -> dict[str, Any]:
    """An Avro record schema for a Spark ``StructType`` (every field nullable).

    Used when a data set is written as Avro without a registered canonical schema.
    """
    counter = [0]

    def convert(dt: Any, field_name: str) -> Any:
        from pyspark.sql import types as t

        if isinstance(dt, t.StructType):
            counter[0] += 1
            return {
                "type": "record",
                "name": f"{field_name}_{counter[0]}" if counter[0] > 1 else field_name,
                "fields": [
                    {"name": f.name, "type": ["null", convert(f.dataType, f.name)], "default": None}
                    for f in dt.fields
                ],
            }
        if isinstance(dt, t.ArrayType):
            return {"type": "array", "items": ["null", convert(dt.elementType, field_name)]}
        if isinstance(dt, t.MapType):
            return {"type": "map", "values": ["null", convert(dt.valueType, field_name)]}
        if isinstance(dt, t.DecimalType):
            return {"type": "bytes", "logicalType": "decimal", "precision": dt.precision, "scale": dt.scale}
        simple = {
            t.StringType: "string", t.BooleanType: "boolean", t.ByteType: "int", t.ShortType: "int",
            t.IntegerType: "int", t.LongType: "long", t.FloatType: "float", t.DoubleType: "double",
            t.BinaryType: "bytes",
        }
        for cls, avro in simple.items():
            if isinstance(dt, cls):
                return avro
        if isinstance(dt, t.DateType):
            return {"type": "int", "logicalType": "date"}
        if isinstance(dt, t.TimestampType | t.TimestampNTZType):
            return {"type": "long", "logicalType": "timestamp-micros"}
        raise SchemaMappingError(f"Spark type {dt.simpleString()} has no Avro equivalent", where=field_name)

    schema = convert(struct, name)
    if namespace:
        schema["namespace"] = namespace
    return schema
