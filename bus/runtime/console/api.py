"""The console's JSON API: what each operation accepts, checked before it runs, and the
OpenAPI description built from the same models (served at ``/api/openapi.json``; a copy is
``docs/console-openapi.json``).

Every input (query parameters, path parameters, JSON bodies) is validated by a pydantic
model; a bad one is answered ``400`` with ``{"error": ..., "problems": [...]}`` naming each
parameter, never a ``500``. An empty query parameter means "not given" (the console's forms
send empty fields). Text parameters are short enough (200 characters) that a request with
every parameter at its longest still fits aiohttp's 8 kB request line.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from coupler.bus.model.names import CHANNEL_NAME
from coupler.canonical.errors import CouplerError

_NAME = CHANNEL_NAME.pattern.strip("^$")
ChannelName = Annotated[str, Field(pattern=f"^{_NAME}$", description="a channel name")]
QueueName = Annotated[str, Field(pattern=f"^{_NAME}(#{_NAME})?$", description="a channel or TOPIC#SUBSCRIPTION")]
#: the largest id SQLite and PostgreSQL store (a signed 64-bit integer)
MAX_ID = 2**63 - 1


class ApiInputError(CouplerError):
    """An API request whose parameters or body are not what the operation takes (400)."""

    def __init__(self, message: str, problems: list[str]):
        super().__init__(message)
        self.problems = problems


class DeadLettersQuery(BaseModel):
    """``GET /api/dead-letters``: filters of the dead letters listed."""

    model_config = ConfigDict(extra="forbid")
    queue: QueueName | Literal[""] = Field("", description="only those of this queue")
    kind: Literal["dead", "invalid", ""] = Field("", description="dead letters or invalid messages")
    limit: int = Field(200, ge=1, le=10_000, description="at most this many (newest first)")
    channel: QueueName | Literal[""] = Field("", description="only those that were on this channel")
    q: str = Field("", max_length=200, description="text found in the reason, error, id, component or format")


class TraceQuery(BaseModel):
    """``GET /api/trace``: the messages of a trace."""

    model_config = ConfigDict(extra="forbid")
    q: str = Field(min_length=1, max_length=200, pattern=r"\S",
                   description="a message id, trace id, correlation id or business key")


class ReplayBody(BaseModel):
    """``POST /api/dead-letters/{id}/replay``: where to, and an edited body."""

    model_config = ConfigDict(extra="forbid")
    channel: ChannelName | Literal[""] | None = Field(None, description="replay onto this channel (default: its own)")
    body: str | None = Field(None, description="the edited body, as dead-letters/{id} decoded it")


class PurgeBody(BaseModel):
    """``POST /api/dead-letters/purge``: which dead letters to delete (none given: all)."""

    model_config = ConfigDict(extra="forbid")
    queue: QueueName | Literal[""] | None = None
    kind: Literal["dead", "invalid", ""] | None = None


class DetourQuery(BaseModel):
    """``GET|POST /api/routes/{route}/detour[/{state}]``: one detour step of the route by name."""

    model_config = ConfigDict(extra="forbid")
    step: ChannelName | Literal[""] | None = Field(None, description="the detour step's name (default: every detour of the route)")


class GroupBody(BaseModel):
    """``POST /api/groups/{complete|discard}``: one open group of a route's aggregate step."""

    model_config = ConfigDict(extra="forbid")
    route: str = Field(min_length=1, max_length=200, description="the route")
    step: str = Field(min_length=1, max_length=200, description="the aggregate step's name")
    key: str = Field(min_length=1, max_length=10_000, description="the group's correlation key")


class TestMessageBody(BaseModel):
    """``POST /api/routes/{route}/test``: a Test Message through the route (nothing is stored)."""

    model_config = ConfigDict(extra="forbid")
    body: str = Field(max_length=10_000_000, description="the message body (text)")
    format: str = Field("test.Message@1;text/plain", max_length=300,
                        description="its format indicator NAME@V[;content-type]")
    properties: dict[str, str] = Field(default_factory=dict, description="its properties")


def route_name(text: str) -> str:
    """A route's name from the path (the name rule of channels)."""
    if not CHANNEL_NAME.match(text):
        raise ApiInputError(f"route {text!r} is not a valid route name", ["route: not a valid name"])
    return text


def parse(model: type[BaseModel], data: Any, where: str, *, strict: bool = True) -> Any:
    """``data`` validated by ``model``, or :class:`ApiInputError` naming every problem (an
    unknown parameter is one, unless not ``strict``: the console's pages ignore them)."""
    if hasattr(data, "getall"):  # a request's query (a MultiDict): each parameter given once
        repeated = sorted({k for k in data if len(data.getall(k)) > 1})
        if repeated and strict:
            problems = [f"{k}: given more than once" for k in repeated]
            raise ApiInputError(f"{where}: " + "; ".join(problems), problems)
        data = dict(data)
    if not strict and isinstance(data, dict):
        data = {k: v for k, v in data.items() if k in model.model_fields}
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = []
        for err in exc.errors(include_url=False, include_input=False):
            loc = ".".join(str(p) for p in err["loc"]) or where
            problems.append(f"{loc}: {err['msg']}")
        raise ApiInputError(f"{where}: " + "; ".join(problems), problems) from None


def dead_letter_id(text: str) -> int:
    """A dead letter's id from the path (digits by the route), within what a store holds."""
    value = int(text)
    if not 1 <= value <= MAX_ID:
        raise ApiInputError(f"dead letter id {text} is out of range (1 to {MAX_ID})", ["id: out of range"])
    return value


def none_if_empty(value: str | None) -> str | None:
    return value or None


# -- OpenAPI ------------------------------------------------------------------------------

_MODELS: list[type[BaseModel]] = [DeadLettersQuery, TraceQuery, ReplayBody, PurgeBody, DetourQuery, TestMessageBody,
                                  GroupBody]
_REF = "#/components/schemas/{model}"


def _json(schema: dict[str, Any] | None = None, description: str = "") -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema or {}}}}


def _responses(ok: dict[str, Any], *codes: int) -> dict[str, Any]:
    out: dict[str, Any] = {"200": _json(ok, "the result"),
                           "401": _json({"$ref": "#/components/schemas/Error"}, "no valid token")}
    reasons = {400: "invalid parameters or body", 404: "no such dead letter, adapter, route or group",
               415: "the body is not JSON"}
    for code in codes:
        out[str(code)] = _json({"$ref": "#/components/schemas/Error"}, reasons[code])
    return out


def _query(model: type[BaseModel]) -> list[dict[str, Any]]:
    schema = model.model_json_schema(ref_template=_REF)
    required = set(schema.get("required", []))
    return [{"name": name, "in": "query", "required": name in required, "schema": prop,
             "description": prop.get("description", "")}
            for name, prop in schema["properties"].items()]


def _body(model: type[BaseModel]) -> dict[str, Any]:
    return {"required": True, "content": {"application/json": {"schema": {"$ref": _REF.format(model=model.__name__)}}}}


_ID = {"name": "id", "in": "path", "required": True,
       "schema": {"type": "integer", "minimum": 1, "maximum": MAX_ID}, "description": "the dead letter's id"}
_ROUTE = {"name": "route", "in": "path", "required": True, "schema": {"type": "string", "pattern": f"^{_NAME}$"},
          "description": "the route's name"}
_OBJECT = {"type": "object"}
_LIST = {"type": "array", "items": {"type": "object"}}


def openapi(version: str = "") -> dict[str, Any]:
    """The OpenAPI 3.1 description of the console's JSON API."""
    schemas: dict[str, Any] = {
        "Error": {"type": "object", "required": ["error"],
                  "properties": {"error": {"type": "string"}, "problems": {"type": "array", "items": {"type": "string"}}}},
    }
    for model in _MODELS:
        schema = model.model_json_schema(ref_template=_REF)
        schemas.update(schema.pop("$defs", {}))
        schemas[model.__name__] = schema
    get = "get"
    paths: dict[str, Any] = {
        "/api/status": {get: {"summary": "the site's status (ctl status)", "responses": _responses(_OBJECT)}},
        "/api/adapters": {get: {"summary": "every adapter with its statistics and health", "responses": _responses(_LIST)}},
        "/api/channels": {get: {"summary": "every channel's depth, age and rates", "responses": _responses(_LIST)}},
        "/api/identities": {get: {"summary": "the application identities", "responses": _responses(_LIST)}},
        "/api/batch": {get: {"summary": "the [[batch]] jobs", "responses": _responses(_LIST)}},
        "/api/dead-letters": {get: {"summary": "dead letters and invalid messages", "parameters": _query(DeadLettersQuery),
                                    "responses": _responses(_LIST, 400)}},
        "/api/dead-letters/{id}": {get: {"summary": "one dead letter with its decoded body", "parameters": [_ID],
                                         "responses": _responses(_OBJECT, 400, 404)}},
        "/api/dead-letters/{id}/replay": {"post": {
            "summary": "replay a dead letter (edited: with body)", "parameters": [_ID], "requestBody": _body(ReplayBody),
            "responses": _responses(_OBJECT, 400, 404, 415)}},
        "/api/dead-letters/purge": {"post": {"summary": "delete dead letters", "requestBody": _body(PurgeBody),
                                             "responses": _responses(_OBJECT, 400, 415)}},
        "/api/adapters/{name}/{action}": {"post": {
            "summary": "pause or resume an adapter",
            "requestBody": {"required": True, "content": {"application/json": {"schema": _OBJECT}}},
            "parameters": [{"name": "name", "in": "path", "required": True, "schema": {"type": "string", "pattern": f"^{_NAME}$"}},
                           {"name": "action", "in": "path", "required": True, "schema": {"enum": ["pause", "resume"]}}],
            "responses": _responses(_OBJECT, 400, 404, 415)}},
        "/api/routes/{route}/detour": {get: {
            "summary": "the Detour steps of a route and whether each is on (ctl detour)",
            "parameters": [_ROUTE, *_query(DetourQuery)], "responses": _responses(_LIST, 400, 404)}},
        "/api/routes/{route}/detour/{state}": {"post": {
            "summary": "switch a route's Detour steps on or off",
            "requestBody": {"required": True, "content": {"application/json": {"schema": _OBJECT}}},
            "parameters": [_ROUTE, {"name": "state", "in": "path", "required": True, "schema": {"enum": ["on", "off"]}},
                           *_query(DetourQuery)],
            "responses": _responses(_LIST, 400, 404, 415)}},
        "/api/routes/{route}/test": {"post": {
            "summary": "a Test Message through a route: what each step did (ctl test); nothing stored or delivered",
            "parameters": [_ROUTE], "requestBody": _body(TestMessageBody),
            "responses": _responses(_OBJECT, 400, 404, 415)}},
        "/api/groups": {get: {
            "summary": "the groups the routes' stateful steps hold in the store (aggregation groups, resequencer "
                       "streams and batches, messages waiting for an enricher's answer, process instances): route, "
                       "step, type, key, size, age_seconds (ctl groups list)",
            "responses": _responses(_LIST)}},
        "/api/groups/{action}": {"post": {
            "summary": "complete an aggregation group now (reason forced: its aggregate goes on from the next step) "
                       "or discard it with the messages it holds (ctl groups complete / discard)",
            "parameters": [{"name": "action", "in": "path", "required": True,
                            "schema": {"enum": ["complete", "discard"]}}],
            "requestBody": _body(GroupBody),
            "responses": _responses(_OBJECT, 400, 404, 415)}},
        "/api/trace": {get: {"summary": "every hop of the messages of a trace", "parameters": _query(TraceQuery),
                             "responses": _responses(_OBJECT, 400)}},
        "/api/openapi.json": {get: {"summary": "this description", "responses": _responses(_OBJECT)}},
    }
    return {
        "openapi": "3.1.0",
        "info": {"title": "Coupler console API", "version": version or "1",
                 "description": "The Control Bus operations of a running site as JSON (docs/operations.md)."},
        "components": {"schemas": schemas,
                       "securitySchemes": {"token": {"type": "http", "scheme": "bearer",
                                                     "description": "the site's console token (coupler ctl console)"}}},
        "security": [{"token": []}],
        "paths": paths,
    }
