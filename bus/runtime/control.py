"""The Control Bus: the daemon's control endpoint on a Unix socket in the data directory.

Protocol: one JSON object per line. A request is ``{"op": NAME, "args": {...}}``; the
answer is ``{"ok": true, "result": ...}`` or ``{"ok": false, "error": MESSAGE}``. One
request per connection. The socket is created with mode 0600: only the site's owner may
control it.

Operations: ``status``, ``channels``, ``adapters``, ``identities``, ``dlq.list``,
``dlq.show``, ``dlq.replay``, ``dlq.purge``, ``trace``, ``pause``, ``resume``, ``ping``,
``command``, ``stop``, and the channel tools ``channel.put``, ``channel.get``,
``channel.purge`` (envelopes travel as base64 of :meth:`Envelope.to_bytes`). The operator
console (:mod:`coupler.bus.runtime.console`) calls the same service in the daemon.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import os
import socket
import socketserver
import threading
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pydantic

from coupler.bus.messaging.request_reply import request_reply
from coupler.bus.model.commands import COMMON_COMMANDS, Document, command_envelope, parse_reply
from coupler.canonical import Envelope, FormatIndicator
from coupler.canonical.claimcheck import CLAIM_PROPERTY, CLAIM_SIZE_PROPERTY, claim_path
from coupler.canonical.envelope import utc_now
from coupler.canonical.errors import CouplerError, UnitError

if TYPE_CHECKING:
    from coupler.bus.config.loader import SiteConfig
    from coupler.bus.runtime.daemon import Daemon

log = logging.getLogger("coupler.control")

#: Linux limit of a Unix socket path (sun_path) including the terminating NUL
_MAX_SOCKET_PATH = 107
CONTROL_REPLY_CHANNEL = "coupler.replies.control"
#: the longest request line the endpoint takes (and the longest answer ``ControlClient`` reads).
#: Requests carry whole documents: ``coupler send send FILE`` and ``ctl test --file`` a file
#: (base64 in JSON, a third larger), ``channel put`` batches of bodies up to ``[store]
#: claim_check_bytes`` each (cut at PUT_BATCH_BYTES). So it stays this large; only the site's
#: user can connect (the socket is 0600), and a request over it is refused in one line, by the
#: client before it sends and by the endpoint once that many bytes have come.
MAX_REQUEST_BYTES = 256 * 1024 * 1024
#: ``channel put`` ends a batch before its envelopes pass this many bytes (or half the limit)
PUT_BATCH_BYTES = 64 * 1024 * 1024


def too_large(size: int | None = None) -> str:
    """What a request over MAX_REQUEST_BYTES is told, in one line."""
    told = f"{size} bytes, " if size is not None else ""
    return (f"the control request is {told}larger than {MAX_REQUEST_BYTES} bytes, the most the control endpoint "
            "takes; send a document that large through an adapter (a file drop) instead")


#: the "consumer" whose idempotency records say which message ids ``channel put`` put on a
#: channel (followed by the channel's name): a re-run of a batch with reproducible ids skips them
PUT_PRODUCER = "coupler.put:"


class ControlError(CouplerError):
    """The control endpoint cannot be reached, or refused a request."""


def encode_envelope(env: Envelope) -> str:
    return base64.b64encode(env.to_bytes()).decode("ascii")


def decode_envelope(text: str) -> Envelope:
    return Envelope.from_bytes(base64.b64decode(text))


_CHECKED: dict[tuple[type, str], Callable[..., Any]] = {}


def _checked(service: type, name: str) -> Callable[..., Any]:
    """Operation ``name`` of ``service`` with its arguments validated against its annotations
    (made once per operation)."""
    checked = _CHECKED.get((service, name))
    if checked is None:
        checked = _CHECKED[(service, name)] = pydantic.validate_call(getattr(service, name))
    return checked


class StoreService:
    """Control operations that need only the store: they also work without a daemon.

    With ``site``, ``status`` reports the site as ``stopped``: its configured adapters and the
    store's channel statistics.
    """

    def __init__(self, transport: Any, site: SiteConfig | None = None):
        self._transport = transport
        self._site = site

    @property
    def transport(self) -> Any:
        return self._transport

    @property
    def site(self) -> SiteConfig | None:
        return self._site

    def registry(self) -> Any:
        """The site's schema registry (decoding and encoding Avro bodies)."""
        if getattr(self, "_registry", None) is None:
            from coupler.canonical.registry import SchemaRegistry

            self._registry = SchemaRegistry.default(self.site.schema_paths if self.site else ())
        return self._registry

    def call(self, op: str, **args: Any) -> Any:
        """Run operation ``op`` with ``args``, checked against the operation's signature
        (names and types, as a JSON client sends them) before it runs: a wrong one is a
        ControlError naming each argument and what it should be."""
        name = "op_" + op.replace(".", "_").replace("-", "_")
        if not callable(getattr(self, name, None)):
            raise ControlError(f"unknown control operation {op!r}")
        try:
            return _checked(type(self), name)(self, **args)
        except pydantic.ValidationError as exc:
            wrong = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in exc.errors())
            raise ControlError(f"bad arguments for {op!r}: {wrong}") from None

    def op_channels(self) -> list[dict[str, Any]]:
        return [s.to_json() for s in self.transport.stats()]

    def op_status(self) -> dict[str, Any]:
        site = self._site
        if site is None:
            raise ControlError("unknown control operation 'status'")
        from coupler.bus.batch.schedule import recorded_runs

        return {
            "site": site.name,
            "site_file": str(site.path),
            "data_dir": str(site.data_dir),
            "pid": None,
            "state": "stopped",
            "started_at": None,
            "uptime_seconds": None,
            "transport": repr(self.transport),
            "adapters": [
                {"name": a.name, "type": a.type, "state": "stopped" if a.enabled else "disabled",
                 "in": None, "out": None, "failed": None, "last_heartbeat_age": None, "error": None,
                 "health": None}
                for a in site.adapters
            ],
            "routes": [r.name for r in site.routes],
            "command_channel": site.command_channel,
            "commands": list(COMMON_COMMANDS),
            "alerts": [],
            "channels": self.op_channels(),
            "batch": recorded_runs(site),
        }

    def op_identities(self) -> list[dict[str, Any]]:
        return [r.to_json() for r in self.transport.identities.list()]

    def op_dlq_list(self, queue: str | None = None, kind: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
        return [d.to_json() for d in self.transport.dead_letters(queue, kind=kind, limit=limit)]

    def op_dlq_show(self, id: int) -> dict[str, Any]:
        """One dead letter: its record, the envelope (base64), and the body decoded through
        its format indicator (``decoded``: as, text, error)."""
        from coupler.bus.runtime.bodies import decode_body

        dl = self.transport.dead_letter(int(id))
        data = dl.to_json()
        data["envelope"] = encode_envelope(dl.envelope) if dl.envelope else None
        data["raw"] = base64.b64encode(dl.raw).decode("ascii") if dl.raw else None
        env = dl.envelope
        if env is None:
            env = Envelope(format=FormatIndicator.parse("coupler.Raw@1", "application/octet-stream"), body=dl.raw or b"")
        else:
            data["headers"] = {
                "kind": env.kind.value, "origin": env.origin, "correlation_id": env.correlation_id,
                "timestamp": env.timestamp.isoformat(), "properties": dict(env.properties),
                "history": [f"{h.timestamp.isoformat()} {h.component}: {h.action}" for h in env.history],
            }
        data["decoded"] = decode_body(env, self.site, self.registry() if env.format.content_type == "avro/binary" else None)
        return data

    def op_dlq_replay(self, id: int, channel: str | None = None, body: str | None = None) -> dict[str, Any]:
        """Replay a dead letter; with ``body`` (the text of the body as ``dlq.show`` decoded
        it, edited), encoded back to the message's format first (edit and replay). A record
        an inbound adapter's mapping refused (Invalid Message Channel) goes back to its channel
        through that mapping again (``mapped``: the mapping), as if the adapter published it
        now; one the mapping still refuses stays where it is."""
        dl = self.transport.dead_letter(int(id))
        data: bytes | None = None
        if body is not None:
            from coupler.bus.runtime.bodies import encode_body

            if dl.envelope is None:
                raise ControlError(f"dead letter {id} has no envelope to edit", hint="purge it")
            fmt = dl.envelope.format
            data = encode_body(fmt, body, self.registry() if fmt.content_type == "avro/binary" else None, self.site,
                               original=dl.envelope)
        found = self._refused_by_mapping(dl) if channel in (None, "", dl.channel) else None
        if found is None:
            return {"message_id": self.transport.replay(int(id), channel, body=data)}
        adapter, stage = found
        assert dl.envelope is not None
        record = dl.envelope if data is None else dl.envelope.replace(body=data)
        try:
            mapped = stage(record)
        except Exception as exc:  # any exception: this record is the unit that failed
            raise ControlError(f"dead letter {id}: adapter {adapter}'s mapping {stage.mapping_name} still refuses it: "
                               f"{UnitError.of(exc)}", hint=f"edit it and replay again (`coupler ctl dlq show {id}`)") from None
        mapped.record_hop(f"adapter:{adapter}", f"mapping {stage.mapping_name} (replay {id})")
        return {"message_id": self.transport.replay(int(id), channel, envelope=mapped), "mapped": stage.mapping_name}

    def _refused_by_mapping(self, dl: Any) -> tuple[str, Any] | None:
        """``(adapter, its inbound stage)`` when ``dl`` is a record the mapping of an inbound
        adapter refused (it was never translated), else None."""
        from coupler.bus.runtime.stages import PROP_LEGACY

        env = dl.envelope
        adapter = dl.component.removeprefix("adapter:")
        if (dl.kind != "invalid" or env is None or not dl.component.startswith("adapter:") or env.origin != adapter
                or PROP_LEGACY in env.properties):
            return None
        stage = self.inbound_stage(adapter)
        if stage is None or getattr(stage, "mapping", None) is None or env.format.name == stage.publishes.name:
            return None  # not what the adapter published: a canonical message its outbound side refused
        return adapter, stage

    def inbound_stage(self, adapter: str) -> Any:
        """The inbound stage (unwrap, mapping) of ``adapter`` as site.toml declares it, or None."""
        site = self.site
        config = next((a for a in site.adapters if a.name == adapter), None) if site is not None else None
        if site is None or config is None or not config.mapping or config.direction not in ("inbound", "both"):
            return None
        from coupler.bus.config.loader import ConfigError
        from coupler.bus.plugins.manager import mapping_functions, site_plugin_manager
        from coupler.bus.runtime.stages import InboundTranslation

        try:
            return InboundTranslation.for_adapter(config, self.registry(), site.path.parent,
                                                  mapping_functions(site_plugin_manager()), schema_dirs=site.schema_paths)
        except ConfigError as exc:
            raise ControlError(f"adapter {adapter}: {'; '.join(str(p) for p in exc.problems)}", where=str(site.path)) from None

    def op_trace(self, query: str, limit: int = 5000) -> dict[str, Any]:
        """Every hop of the messages of the trace(s) ``query`` names (bus/runtime/trace.py)."""
        from coupler.bus.runtime.trace import trace

        return trace(self.transport, query, limit=int(limit))

    def op_dlq_purge(self, queue: str | None = None, kind: str | None = None) -> dict[str, Any]:
        return {"purged": self.transport.purge_dead_letters(queue, kind=kind)}

    def op_channel_put(self, channel: str, envelopes: list[str], skip_put: bool = False) -> dict[str, Any]:
        """Send ``envelopes`` in one transaction. ``skip_put``: leave out those whose message id
        was put on ``channel`` before (recorded with them: a re-run of a reproducible batch).
        The ids are checked and recorded in one step (``mark_new``): two puts of one batch at
        once (two daemons' endpoints) put each message once; a put that fails records none."""
        envs = [decode_envelope(e) for e in envelopes]
        if not skip_put:
            return {"message_ids": self.transport.send(channel, envs, component="cli"), "skipped": 0}
        producer = PUT_PRODUCER + channel
        with self.transport.transaction() as tx:
            new = tx.mark_new(producer, [e.message_id for e in envs])
            fresh: dict[str, Envelope] = {}
            for env in envs:
                if env.message_id in new:
                    fresh.setdefault(env.message_id, env)
            sent = tx.send(channel, list(fresh.values()), component="cli") if fresh else []
        return {"message_ids": sent, "skipped": len(envs) - len(sent)}

    def op_channel_get(self, channel: str, max: int = 1, wait: float = 0.0, peek: bool = False) -> list[str]:
        return [encode_envelope(e) for e in channel_get(self.transport, channel, max=max, wait=wait, peek=peek)]

    def op_channel_purge(self, channel: str) -> dict[str, Any]:
        return {"purged": self.transport.purge(channel)}


class ControlService(StoreService):
    """Every operation of the control endpoint, over a running :class:`Daemon`."""

    def __init__(self, daemon: Daemon):
        self.daemon = daemon

    @property
    def transport(self) -> Any:
        assert self.daemon.transport is not None
        return self.daemon.transport

    @property
    def site(self) -> SiteConfig:
        return self.daemon.site

    def registry(self) -> Any:
        return self.daemon.registry()

    def inbound_stage(self, adapter: str) -> Any:
        """The running adapter's inbound stage (its mapping as loaded at start)."""
        ra = self.daemon.adapters.get(adapter)
        return ra.context.inbound_stage if ra is not None else None

    def op_status(self) -> dict[str, Any]:
        status = self.daemon.status()
        status["channels"] = self.op_channels()
        return status

    def op_adapters(self) -> list[dict[str, Any]]:
        out = []
        snapshot = {s["name"]: s for s in self.daemon.adapter_rows()}
        for name, ra in self.daemon.adapters.items():
            row = dict(snapshot.get(name, {}))
            row.update(
                direction=ra.config.direction,
                channel=ra.config.channel,
                commands=list(ra.servant().commands),
                targets=[name, *ra.config.targets],
                identity=ra.config.identity_dict,
                paused=ra.paused.is_set(),
            )
            out.append(row)
        return out

    def op_groups(self) -> list[dict[str, Any]]:
        """The open groups of the routes' stateful steps (Aggregator, Resequencer, Enricher)."""
        from coupler.bus.runtime.steps.groups import open_groups

        return open_groups(self.daemon.pipelines, self.transport)

    def op_group_complete(self, route: str, step: str, key: str) -> dict[str, Any]:
        from coupler.bus.runtime.steps.groups import force_complete

        return force_complete(self.daemon.pipelines, self.transport, route, step, key)

    def op_group_discard(self, route: str, step: str, key: str) -> dict[str, Any]:
        from coupler.bus.runtime.steps.groups import discard

        return discard(self.daemon.pipelines, self.transport, route, step, key)

    def op_pause(self, adapter: str) -> dict[str, Any]:
        self.daemon.pause(adapter)
        return {"adapter": adapter, "paused": True}

    def op_resume(self, adapter: str) -> dict[str, Any]:
        self.daemon.resume(adapter)
        return {"adapter": adapter, "paused": False}

    def op_ping(self, target: str, timeout: float | None = None) -> list[dict[str, Any]]:
        return self.op_command("ping", target, timeout=timeout, payload="ctl ping")

    def op_command(
        self,
        command: str,
        target: str,
        *,
        document: str | None = None,
        query: dict[str, str] | None = None,
        max: int | None = None,
        operation: str = "",
        payload: str = "",
        timeout: float | None = None,
    ) -> list[dict[str, Any]]:
        """Issue a common command through the bus and return its replies (JSON).

        ``document`` is an envelope (base64) whose format, body and properties the command
        carries.
        """
        if command not in COMMON_COMMANDS:
            raise ControlError(f"unknown command {command!r}", hint=f"use one of {', '.join(COMMON_COMMANDS)}")
        timeout = self.daemon.site.reply_timeout if timeout is None else float(timeout)
        doc = Document.from_envelope(decode_envelope(document)) if document is not None else None
        env = command_envelope(
            command,
            target,
            document=doc,
            query=query,
            max=max,
            operation=operation,
            payload=payload,
            origin="control",
            expires_at=utc_now() + timedelta(seconds=max_(timeout, 1.0)),
        )
        replies = request_reply(
            self.transport,
            env,
            self.daemon.site.command_channel,
            reply_channel=CONTROL_REPLY_CHANNEL,
            consumer="control",
            timeout=timeout,
            component="control",
            count=None,
            stopping=self.daemon.stopping,
        )
        return [parse_reply(r).to_json() for r in replies]

    def op_routes(self) -> list[dict[str, Any]]:
        """Every route pipeline: input channel, steps, end, what its steps dropped."""
        return self.daemon.pipelines.rows()

    def op_detour(self, route: str, step: str | None = None, on: bool | None = None) -> list[dict[str, Any]]:
        """The Detour switches of ``route`` (one step, or all its detours), switched ``on`` or off
        when given; each ``{"route", "step", "on"}``."""
        return self.daemon.detour(route, step, on)

    def op_test(self, route: str, envelope: str) -> dict[str, Any]:
        """Test Message: run ``envelope`` (base64) through ``route``; nothing is stored or delivered."""
        return self.daemon.test_message(route, decode_envelope(envelope))

    def op_stop(self) -> dict[str, Any]:
        self.daemon.request_stop()
        return {"stopping": True}


def max_(a: float, b: float) -> float:
    return a if a > b else b


def channel_get(transport: Any, channel: str, *, max: int, wait: float, peek: bool) -> list[Envelope]:
    """Receive and acknowledge up to ``max`` messages (``peek``: look without receiving)."""
    if peek:
        return [_claimed_body(e) for e in transport.peek(channel, max)]
    deliveries = transport.receive_wait(channel, "cli", max=max, wait=wait)
    envelopes = [_claimed_body(d.envelope) for d in deliveries]  # read before the ack may remove the file
    if deliveries:
        transport.ack(deliveries)
    return envelopes


def _claimed_body(env: Envelope) -> Envelope:
    """``env`` with the body of the claimed file it refers to (Claim Check of whole files),
    as the one who gets it from a channel expects; unchanged when the file is gone."""
    try:
        claim = claim_path(env.properties)
    except ValueError as exc:
        log.warning("message %s: %s: its body is not read", env.message_id, exc)
        return env
    if claim is None:
        return env
    try:
        env.body = claim.read_bytes()
    except OSError as exc:
        log.warning("message %s: its claimed body %s cannot be read: %s", env.message_id, claim, exc.strerror)
        return env
    env.properties.pop(CLAIM_PROPERTY, None)
    env.properties.pop(CLAIM_SIZE_PROPERTY, None)
    return env


def _int64(text: str) -> int:
    """An integer of a request, within what the store keeps (64-bit signed)."""
    value = int(text)
    if not -(2**63) <= value < 2**63:
        raise ControlError(f"bad control request: the number {text[:30]} is outside 64-bit integers")
    return value


def _request(line: bytes) -> dict[str, Any]:
    """A request line read: a JSON object with a string ``op`` and an object ``args`` (or
    none); else a ControlError saying what is wrong with it, in one line."""
    try:
        request = json.loads(line, parse_int=_int64)
    except ControlError:
        raise
    except RecursionError:
        raise ControlError("bad control request: its JSON is nested too deeply") from None
    except ValueError as exc:
        raise ControlError(f"bad control request: not JSON ({exc})") from None
    if not isinstance(request, dict) or not isinstance(request.get("op"), str):
        raise ControlError('bad control request: not an object with a string "op"',
                           hint='send {"op": "status", "args": {}} as one line')
    if not isinstance(request.get("args") or {}, dict):
        raise ControlError('bad control request: "args" is not an object of named arguments')
    return request


class _TooLarge(Exception):  # noqa: N818 - a request line over MAX_REQUEST_BYTES
    pass


class _Handler(socketserver.StreamRequestHandler):
    server: _Server

    def handle(self) -> None:
        timeout = self.server.request_timeout
        try:
            line = self._read_line(timeout)
        except _TooLarge:
            log.warning("control: a request refused: %s", too_large())
            self._answer({"ok": False, "error": too_large()})
            return
        except TimeoutError:
            log.warning("control: a connection sent no complete request within %g s; closed (control.request_timeout)",
                        timeout)
            self._answer({"ok": False, "error": f"no complete request line within {timeout:g} s; closed "
                                                "(control.request_timeout)"})
            return
        except OSError as exc:  # the client went away (reset) before its request was read
            log.info("control: a connection was lost before its request was read: %s", exc)
            return
        try:
            request = _request(line)
            result = self.server.service.call(request["op"], **request.get("args") or {})
            answer: dict[str, Any] = {"ok": True, "result": result}
        except CouplerError as exc:
            answer = {"ok": False, "error": str(exc)}
        except (ValueError, KeyError, TypeError) as exc:
            answer = {"ok": False, "error": f"bad control request: {exc!r}"}
        except Exception as exc:  # the endpoint must keep serving
            log.exception("control request failed")
            answer = {"ok": False, "error": f"internal error: {type(exc).__name__}: {exc}"}
        self._answer(answer)

    def _read_line(self, timeout: float) -> bytes:
        """The request line (up to ``MAX_REQUEST_BYTES`` bytes, else _TooLarge), which must be
        complete within ``timeout`` seconds of connecting however slowly its bytes come;
        TimeoutError if not."""
        sock, deadline, line = self.connection, time.monotonic() + timeout, bytearray()
        while len(line) < MAX_REQUEST_BYTES:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            sock.settimeout(remaining)
            chunk = sock.recv(min(1 << 16, MAX_REQUEST_BYTES - len(line)))
            if not chunk:
                break
            end = chunk.find(b"\n")
            if end >= 0:
                line += chunk[: end + 1]
                break
            line += chunk
        else:
            raise _TooLarge
        return bytes(line)

    def _answer(self, answer: dict[str, Any]) -> None:
        """Write the answer line; a client that does not read it within the request timeout, or
        that went away, is left (nothing else depends on it)."""
        with contextlib.suppress(OSError):
            self.connection.settimeout(self.server.request_timeout)
            self.wfile.write(json.dumps(answer).encode("utf-8") + b"\n")
            self.wfile.flush()


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    allow_reuse_address = False
    #: connections waiting to be accepted (socketserver's default, 5, refused a burst of clients
    #: with EAGAIN)
    request_queue_size = socket.SOMAXCONN

    def __init__(self, path: str, service: ControlService, request_timeout: float):
        self.service = service
        self.request_timeout = request_timeout
        super().__init__(path, _Handler, bind_and_activate=False)


class ControlServer:
    """The control endpoint of a daemon, serving in a thread of its own."""

    def __init__(self, path: Path, service: ControlService, *, request_timeout: float = 30.0):
        self.path = path
        check_socket_path(path)
        with contextlib.suppress(FileNotFoundError):
            path.unlink()  # a stale socket of a daemon that was killed (we hold the lock)
        self._server = _Server(str(path), service, request_timeout)
        try:
            self._server.server_bind()
            os.chmod(path, 0o600)  # before listen(): nobody can connect before this
            self._server.server_activate()
        except OSError as exc:
            self._server.server_close()
            raise ControlError(f"cannot create the control socket: {exc.strerror}", where=str(path)) from exc
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.2}, name="control", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()


def check_socket_path(path: Path) -> None:
    if len(os.fsencode(str(path))) > _MAX_SOCKET_PATH:
        raise ControlError(
            f"control socket path is {len(os.fsencode(str(path)))} bytes, longer than the {_MAX_SOCKET_PATH} a Unix socket allows",
            where=str(path),
            hint="set control.socket in site.toml to a shorter absolute path",
        )


class ControlClient:
    """Talks to a daemon's control endpoint."""

    def __init__(self, path: Path, timeout: float = 60.0):
        self.path = path
        self.timeout = timeout

    def _connect(self, sock: socket.socket) -> None:
        """Connect, waiting (up to the timeout) while the endpoint's queue of connections is full
        (a Unix socket refuses with EAGAIN then, where TCP would wait)."""
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                sock.connect(str(self.path))
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.02)  # a free place in the queue has no event to wait for

    def call(self, op: str, **args: Any) -> Any:
        check_socket_path(self.path)
        request = json.dumps({"op": op, "args": args}).encode("utf-8") + b"\n"
        if len(request) > MAX_REQUEST_BYTES:
            raise ControlError(too_large(len(request)), where=str(self.path))
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            try:
                self._connect(sock)
            except (FileNotFoundError, ConnectionRefusedError) as exc:
                raise ControlError(
                    f"no daemon answers on {self.path}",
                    hint="start it with `coupler daemon --site SITE.toml`",
                ) from exc
            except PermissionError as exc:
                raise ControlError(f"not allowed to use the control socket {self.path}", hint="run as the site's owner") from exc
            try:
                sock.sendall(request)
            except (BrokenPipeError, ConnectionResetError):
                pass  # refused and closed while it was sent: what the endpoint said is read below
            with sock.makefile("rb") as f:
                line = f.readline(MAX_REQUEST_BYTES)
        except TimeoutError as exc:
            raise ControlError(f"the daemon did not answer {op!r} within {self.timeout:g} s", where=str(self.path)) from exc
        except BlockingIOError as exc:
            raise ControlError(f"the daemon's control endpoint stayed busy for {self.timeout:g} s (its queue of "
                               "connections is full)", where=str(self.path), hint="try again") from exc
        except OSError as exc:
            raise ControlError(f"the connection to the daemon failed while asking {op!r}: {exc.strerror or exc}",
                               where=str(self.path)) from exc
        finally:
            sock.close()
        if not line:
            raise ControlError(f"the daemon closed the connection without answering {op!r}", where=str(self.path))
        answer = json.loads(line)
        if not answer.get("ok"):
            raise ControlError(answer.get("error", "unknown error"))
        return answer.get("result")


@contextlib.contextmanager
def site_service(site: SiteConfig, *, need_daemon: bool = False) -> Iterator[ControlClient | StoreService]:
    """The running daemon's control endpoint, or, when none runs, the store itself.

    ``need_daemon``: operations only a daemon can do (pause, commands) fail with a clear
    message when none runs.
    """
    from coupler.bus.runtime.site import daemon_running
    from coupler.bus.transport.factory import open_transport

    if daemon_running(site):
        yield ControlClient(site.control_socket)
        return
    if need_daemon:
        raise ControlError(
            f"no daemon runs for site {site.path}",
            hint=f"start it with `coupler daemon --site {site.path}`",
        )
    transport = open_transport(site)
    try:
        yield StoreService(transport, site)
    finally:
        transport.close()
