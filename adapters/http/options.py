"""The http adapter's options (``[adapters.options]`` of site.toml), checked on load."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, Strict, ValidationInfo, field_validator

from coupler.adapters.common.tls import TLSOptions
from coupler.bus.api import DEFAULT_MAX_CONNECTIONS, Int, Num, OptionsModel, Str, option

Positive = Annotated[float, Strict(), Field(gt=0)]
PositiveInt = Annotated[int, Strict(), Field(gt=0)]


class EndpointOptions(OptionsModel):
    """``[adapters.options.endpoints.NAME]``: one REST resource of the server."""

    path: Str | None = option("The URL path (default: `/NAME`).", default=None)
    format: Str = option("The format indicator (NAME@V) of the documents it takes.")
    schema_file: Str | None = option(
        "JSON bodies: the Avro schema (.avsc) they are validated against (default: the format's schema in the "
        "site's registry, `[schemas] paths` included, when it has one).", default=None)
    xsd: Str | None = option("XML bodies: the XSD they are validated against (default: well-formed only).",
                             default=None)
    content_types: list[Literal["json", "xml"]] = option("The bodies accepted.", default_factory=lambda: ["json"])
    exchange: Literal["one-way", "request-reply"] = option(
        "`one-way`: published on `channel` (202 Accepted once durable); `request-reply`: a `request` command "
        "for `target`, the reply's document is the response.", default="one-way")
    channel: Str | None = option("one-way: the channel (default: the adapter's).", default=None)
    target: Str | None = option("request-reply: the command target.", default=None, validate_default=True)
    operation: Str = option("request-reply: the operation named in the command (default: the endpoint's name).",
                            default="")
    timeout: Positive = option("request-reply: seconds to wait for the reply (then 504).", default=30.0)

    @field_validator("target")
    @classmethod
    def _target_for_request_reply(cls, target: str | None, info: ValidationInfo) -> str | None:
        if info.data.get("exchange") == "request-reply" and not target:
            raise ValueError('exchange = "request-reply" needs target (who answers)')
        return target


class OAuth2Options(OptionsModel):
    """``[adapters.options.oauth2]``: client credentials grant (RFC 6749 section 4.4)."""

    token_url: Str = option("The token endpoint.")
    client_id: Str = option("The client id.")
    client_secret_env: Str | None = option("The environment variable holding the client secret.", default=None)
    client_secret_file: Str | None = option("A file holding it, readable by the site's user only.", default=None)
    scope: Str | None = option("The scope asked for.", default=None, validate_default=True)

    @field_validator("scope")
    @classmethod
    def _a_secret(cls, scope: str | None, info: ValidationInfo) -> str | None:
        if (info.data.get("client_secret_env") is None) == (info.data.get("client_secret_file") is None):
            raise ValueError("set one of client_secret_env and client_secret_file")
        return scope


class HttpOptions(OptionsModel):
    """``[adapters.options]`` of ``type = "http"`` (docs/adapters/http.md)."""

    mode: Literal["server", "client"] = option("`server`: REST endpoints (inbound); `client`: calls a partner's "
                                               "API (outbound).")
    # -- server ---------------------------------------------------------------------------------
    host: Str = option("Server: the address to listen on.", default="127.0.0.1")
    port: Int = option("Server: the TCP port (0: any free one).", default=0, ge=0, le=65535)
    endpoints: dict[str, EndpointOptions] = option("Server: the resources, by name (see `endpoints.NAME.*`).",
                                                   default_factory=dict)
    schema_roots: list[Str] = option(
        "Server: directories (relative to site.toml) the endpoints' XSDs may include and import from besides "
        "their own directory, the site's folder (the directory of site.toml) and its `[schemas] paths`; a "
        "location elsewhere is refused, not opened.", default_factory=list)
    auth: Literal["none", "bearer", "basic"] = option(
        "Server: how callers authenticate (mutual TLS: `tls.client_auth`); client: what it sends.", default="none")
    tokens_env: Str | None = option("bearer: the environment variable holding the token(s), comma-separated.",
                                    default=None)
    tokens_file: Str | None = option("bearer: a file of tokens, one a line, readable by the site's user only.",
                                     default=None)
    users_file: Str | None = option(
        "Server, basic: a file of `user:password` lines, readable by the site's user only.", default=None)
    max_body_bytes: PositiveInt = option("Server: larger bodies are refused (413) without being read whole.",
                                         default=1024 * 1024)
    read_timeout: Positive = option("Server: seconds to receive a whole body, however slowly it comes (then 408).",
                                    default=30.0)
    keepalive_timeout: Positive = option(
        "Server: seconds a connection may stay open without a request in progress: a new one to send its "
        "request line and headers, however slowly they come, a kept-alive one between requests (then closed; "
        "aiohttp's `web.run_app` default).", default=75.0)
    max_connections: PositiveInt = option(
        "Server: connections open at once; a new one beyond is answered 503 and closed at once, so the "
        "clients connected go on being served (one WARNING line every 10 s while it lasts).", default=DEFAULT_MAX_CONNECTIONS)
    rate_limit: Num | None = option("Server: requests per second allowed per client address (then 429).",
                                    default=None, gt=0)
    rate_burst: PositiveInt = option("Server: requests a client may send at once above the rate.", default=20)
    max_in_flight: PositiveInt = option("Server: requests waiting for the bus at once (others queue).", default=32)
    idempotency_ttl: Positive = option("Server: seconds an `Idempotency-Key` is remembered.", default=86400.0)
    # -- client ---------------------------------------------------------------------------------
    url: Str | None = option(
        "Client: the URL called, a template: `{message_id}`, `{correlation_id}`, `{prop.NAME}` (a property), "
        "`{field.NAME}` (a field of a JSON body), URL-quoted.", default=None, validate_default=True)
    method: Literal["POST", "PUT", "PATCH", "DELETE"] = option("Client: the HTTP method.", default="POST")
    headers: dict[str, Str] = option("Client: extra headers, templates as `url`.", default_factory=dict)
    timeout: Positive = option("Client: seconds per call in all (connecting, sending, the whole answer however "
                                        "slowly it comes).", default=30.0)
    retries: Int = option("Client: attempts after a 5xx, 408, 425, 429 or a connection error.", default=4, ge=0)
    max_response_bytes: PositiveInt = option(
        "Client: the largest answer body read (a `request` command's reply, after gzip/deflate are inflated); "
        "a larger one fails the call without being read whole.", default=10 * 1024 * 1024)
    backoff: Positive = option("Client: seconds before the first retry, doubled after each.", default=0.5)
    max_backoff: Positive = option("Client: the longest wait between retries.", default=30.0)
    username: Str | None = option("Client, basic: the user.", default=None)
    password_env: Str | None = option("Client, basic: the environment variable holding the password.",
                                      default=None)
    oauth2: OAuth2Options | None = option("Client: OAuth2 client-credentials tokens (see `oauth2.*`).",
                                          default=None)
    tls: TLSOptions | None = option("TLS: HTTPS server (`tls.cert`, `tls.key`, mutual TLS with `tls.ca` and "
                                    "`tls.client_auth`) or client settings (see `tls.*`).", default=None)

    @field_validator("url")
    @classmethod
    def _fits_the_mode(cls, url: str | None, info: ValidationInfo) -> str | None:
        mode = info.data.get("mode")
        if mode == "client" and not url:
            raise ValueError("a client needs url (the partner's endpoint)")
        if mode == "server" and not info.data.get("endpoints"):
            raise ValueError("a server needs endpoints (at least one)")
        if mode == "server" and info.data.get("auth") == "bearer" and not (
                info.data.get("tokens_env") or info.data.get("tokens_file")):
            raise ValueError('auth = "bearer" needs tokens_env or tokens_file')
        if mode == "server" and info.data.get("auth") == "basic" and not info.data.get("users_file"):
            raise ValueError('auth = "basic" needs users_file')
        return url
