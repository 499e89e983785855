"""The OpenAPI 3.1 document of the http adapter's server, generated from its endpoints' formats."""

from __future__ import annotations

from typing import Any

_PRIMITIVES: dict[str, dict[str, Any]] = {
    "null": {"type": "null"},
    "boolean": {"type": "boolean"},
    "int": {"type": "integer", "format": "int32"},
    "long": {"type": "integer", "format": "int64"},
    "float": {"type": "number", "format": "float"},
    "double": {"type": "number", "format": "double"},
    "bytes": {"type": "string", "contentEncoding": "base64"},
    "string": {"type": "string"},
}


def json_schema(avro: Any, named: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """The JSON Schema of the JSON form of an Avro schema (records, enums, arrays, maps, unions)."""
    named = {} if named is None else named
    if isinstance(avro, str):
        return dict(_PRIMITIVES.get(avro) or named.get(avro) or named.get(avro.rsplit(".", 1)[-1]) or {})
    if isinstance(avro, list):
        return {"anyOf": [json_schema(a, named) for a in avro]}
    kind = avro.get("type")
    out: dict[str, Any]
    if kind == "record":
        out = {
            "type": "object",
            "properties": {f["name"]: {**json_schema(f["type"], named), **({"description": f["doc"]} if "doc" in f else {})}
                           for f in avro.get("fields", [])},
            "required": [f["name"] for f in avro.get("fields", []) if "default" not in f],
        }
        named[avro["name"]] = out
    elif kind == "enum":
        out = {"type": "string", "enum": list(avro.get("symbols", []))}
        named[avro["name"]] = out
    elif kind == "array":
        out = {"type": "array", "items": json_schema(avro["items"], named)}
    elif kind == "map":
        out = {"type": "object", "additionalProperties": json_schema(avro["values"], named)}
    elif kind == "fixed":
        out = {"type": "string"}
    else:
        out = json_schema(kind, named)
    if "doc" in avro and kind in ("record", "enum"):
        out["description"] = avro["doc"]
    return out


def document(title: str, server_url: str, endpoints: list[dict[str, Any]], auth: str) -> dict[str, Any]:
    """The OpenAPI document. Each endpoint: ``path``, ``name``, ``format``, ``avro`` (or None),
    ``kinds`` (json/xml), ``exchange``."""
    paths: dict[str, Any] = {}
    for e in endpoints:
        content: dict[str, Any] = {}
        if "json" in e["kinds"]:
            content["application/json"] = {"schema": json_schema(e["avro"]) if e["avro"] is not None else {}}
        if "xml" in e["kinds"]:
            content["application/xml"] = {"schema": {"type": "string", "description": "an XML document"}}
        responses: dict[str, Any] = {
            "400": {"description": "not well-formed"},
            "413": {"description": "the body is larger than the limit"},
            "415": {"description": "a Content-Type not accepted"},
            "422": {"description": f"not a valid {e['format']}"},
            "429": {"description": "too many requests (Retry-After)"},
        }
        if e["exchange"] == "one-way":
            responses["202"] = {"description": "accepted: the message is durable on the bus",
                                "content": {"application/json": {"schema": {
                                    "type": "object", "properties": {"message_id": {"type": "string"}}}}}}
        else:
            responses["200"] = {"description": "the answer"}
            responses["504"] = {"description": "no answer in time"}
        if auth != "none":
            responses["401"] = {"description": "authentication required"}
        paths[e["path"]] = {"post": {
            "operationId": e["name"],
            "summary": f"{'Send' if e['exchange'] == 'one-way' else 'Ask'} a {e['format']}",
            "parameters": [
                {"name": "Idempotency-Key", "in": "header", "required": False, "schema": {"type": "string"},
                 "description": "a request sent again with the same key is accepted once"},
                {"name": "traceparent", "in": "header", "required": False, "schema": {"type": "string"},
                 "description": "W3C Trace Context, continued on the bus"},
            ],
            "requestBody": {"required": True, "content": content},
            "responses": responses,
        }}
    doc: dict[str, Any] = {"openapi": "3.1.0", "info": {"title": title, "version": "1"},
                           "servers": [{"url": server_url}], "paths": paths}
    if auth == "bearer":
        doc["components"] = {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}}
        doc["security"] = [{"bearer": []}]
    elif auth == "basic":
        doc["components"] = {"securitySchemes": {"basic": {"type": "http", "scheme": "basic"}}}
        doc["security"] = [{"basic": []}]
    return doc
