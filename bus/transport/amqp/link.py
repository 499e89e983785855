"""One AMQP connection, driven by whichever thread needs it.

pika's ``BlockingConnection`` is not thread-safe, and it answers heartbeats only while
someone calls it. :class:`Link` serialises every use of it with one lock (``io``): the
thread that wants the connection -- to publish, acknowledge, consume, declare -- takes the
lock and does the I/O itself, so that a send or an acknowledgement costs no hand-off to
another thread (profiled: the hand-off, two thread wake-ups and a socket write per
operation, was most of the transport's CPU per message). A thread of the link's own keeps
the connection alive while nobody else uses it: it reads what the broker sends (deliveries,
confirms, heartbeats) when the socket has data, runs a periodic ``tick`` (lease expiry,
housekeeping) and reconnects when the broker goes away.

Publisher confirms are tracked here. :meth:`Link.send` (any thread) publishes a batch and
waits for the broker to confirm its last message, reading the connection itself while it
waits; the lock is free in between, so the batches of several threads are in flight
together (pipelined confirms). :meth:`Link.publish` (with the lock held) publishes a batch
and waits for its confirms on the spot (the rare paths: dead letters, redeliveries).

Connection loss: every delivery received on the lost connection is back in its queue on the
broker (its ``generation`` is over, so acknowledging it raises ``LeaseLostError`` in the
transport). An operation interrupted by the loss runs again on the new connection when it
was called with ``retry=True`` (publishes, gets), so a send that was not confirmed is sent
again: delivery is at least once, as always with AMQP; the Idempotent Receiver drops the
duplicates.
"""

from __future__ import annotations

import contextlib
import logging
import math
import select
import socket
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from functools import partial
from typing import Any, TypeVar

import pika
import pika.exceptions as px
from pika.adapters.blocking_connection import _IoloopTimerContext
from pika.adapters.utils.io_services_utils import _AsyncPlaintextTransport as _PLAINTEXT

from coupler.bus.transport.amqp.frames import tolerate_undecodable_headers
from coupler.bus.transport.base import TransportError

log = logging.getLogger(__name__)
T = TypeVar("T")

#: seconds after another thread used the connection before the link's thread reads it
_QUIET = 0.02

#: failures of the connection (the job may run again on a new one)
CONNECTION_ERRORS = (px.AMQPConnectionError, px.ConnectionWrongStateError, px.StreamLostError, OSError)
#: failures of the channel (the broker refused an operation; the channel is reopened)
CHANNEL_ERRORS = (px.AMQPChannelError, px.ChannelWrongStateError)


def _readable(socks: list[Any], timeout: float) -> list[Any]:
    """Those of ``socks`` with something to read (or closed, or failed) within ``timeout``
    seconds. poll(2), not select(2): select refuses a descriptor of 1024 or more, which a
    daemon whose open-files limit was raised at start hands out once it holds that many
    (bus/runtime/openfiles.py). ValueError or OSError for a socket already closed."""
    poller = select.poll()
    by_fd = {}
    for sock in socks:
        fd = sock.fileno()
        by_fd[fd] = sock
        poller.register(fd, select.POLLIN)
    return [by_fd[fd] for fd, _events in poller.poll(timeout * 1000)]


class BrokerRefusedError(TransportError):
    """The broker refused an operation (nacked a publish, closed the channel)."""


class _Window:
    """The confirms one published batch waits for (published in one or more chunks: done
    when it is ``sealed``, its last chunk published, and every confirm is in)."""

    __slots__ = ("left", "done", "refused", "chunks", "error", "sealed")

    def __init__(self, left: int = 0):
        self.left = left
        self.done = threading.Event()
        self.refused: list[int] = []  # the delivery tags the broker nacked
        self.chunks: list[tuple[int, list[Any]]] = []  # (first delivery tag, messages) as published
        self.error: BaseException | None = None
        self.sealed = False

    @property
    def nacked(self) -> int:
        return len(self.refused)

    def refused_messages(self) -> list[Any]:
        """The messages of the tags the broker nacked, in the order they were published."""
        out = []
        for tag in sorted(self.refused):
            for first, messages in self.chunks:
                if first <= tag < first + len(messages):
                    out.append(messages[tag - first])
                    break
        return out

    def fail(self, exc: BaseException | None) -> None:
        self.error = exc
        self.done.set()


class _Held:
    """``with link._held():`` holds the connection (the re-entrant I/O lock) in this thread
    (a class, not a generator: it is entered on every operation)."""

    __slots__ = ("link",)

    def __init__(self, link: Link):
        self.link = link

    def __enter__(self) -> None:
        link = self.link
        link._io.acquire()
        if link._io_depth == 0:
            link._io_owner = threading.get_ident()
        link._io_depth += 1

    def __exit__(self, *exc: object) -> None:
        link = self.link
        link._io_depth -= 1
        if link._io_depth == 0:
            link._io_owner = None
            if threading.current_thread() is not link._thread:
                link._used_at = time.monotonic()
        link._io.release()


class Link:
    """An AMQP connection, its confirm-mode channel and the thread that drives them."""

    def __init__(
        self,
        url: str,
        *,
        name: str = "coupler",
        reconnect_timeout: float = 60.0,
        confirm_timeout: float = 30.0,
        tick: Callable[[Link], None] | None = None,
        on_new_channel: Callable[[Link], None] | None = None,
        on_deferred: Callable[[Link], None] | None = None,
    ):
        try:
            self.params = pika.URLParameters(url)
        except Exception as exc:  # noqa: BLE001 - pika raises many kinds for a bad URL
            raise TransportError(
                f"bad AMQP URL {url!r}: {exc}", where="store.amqp.url",
                hint="use amqp://USER:PASSWORD@HOST:5672/VHOST",
            ) from exc
        self.params.client_properties = {"connection_name": name}
        if self.params.heartbeat is None:
            self.params.heartbeat = 30
        self.params.blocked_connection_timeout = 300
        self.url = url
        self.name = name
        self.reconnect_timeout = reconnect_timeout
        self.confirm_timeout = confirm_timeout
        self._tick = tick
        self._on_new_channel = on_new_channel
        #: deferred work (the transport's coalesced acknowledgements), run holding the
        #: connection when ``_deferred_due`` (monotonic) has passed or with the next operation
        self._on_deferred = on_deferred
        self._deferred_due = math.inf
        self.conn: pika.BlockingConnection | None = None
        self.ch: Any = None
        #: increases with every new channel; deliveries of an older generation are gone
        self.generation = 0
        #: every use of ``conn`` and ``ch`` holds this lock (re-entrant: operations nest)
        self._io = threading.RLock()
        self._io_owner: int | None = None
        self._io_depth = 0
        self._holder = _Held(self)
        #: the marshalled Basic.Publish method frame per (channel, exchange, routing key)
        self._publish_frames: dict[tuple[int, str, str], bytes] = {}
        #: threads reading the connection while they wait (thread id -> its wake-up socket)
        self._drivers: dict[int, socket.socket] = {}
        self._drivers_lock = threading.Lock()
        self._local = threading.local()
        #: wakes the link's own thread (stop, a new driver, ...)
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        #: when another thread last used the connection: the link's thread leaves the reading
        #: to the threads that use it (no thread switch per message) until they are quiet
        self._used_at = 0.0
        #: confirms received so far (a reader wakes the other readers when it got some)
        self._confirms = 0
        self._pending: set[int] = set()
        self._nacked: set[int] = set()
        #: delivery tag -> the batch published by :meth:`send` that waits for its confirm
        self._waiting: dict[int, _Window] = {}
        self._seq = 0
        self._down_since: float | None = None
        self._last_error: str = ""
        #: the channel's current basic.qos prefetch count (0: unlimited)
        self.prefetch = 0

    # -- lifecycle -------------------------------------------------------------------------

    def start(self, setup: Callable[[Link], Any] | None = None) -> Link:
        """Connect (fails fast when the broker cannot be reached), run ``setup(link)`` (before
        the first ``tick``) and start the thread."""
        try:
            with self._held():
                self._connect()
                if setup is not None:
                    setup(self)
                    self._flush()
        except CONNECTION_ERRORS as exc:
            raise TransportError(
                f"cannot connect to RabbitMQ at {self.params.host}:{self.params.port}: {exc!r}",
                where="store.amqp.url",
                hint="check that the broker runs (rabbitmqctl status) and the URL and credentials",
            ) from exc
        self._thread = threading.Thread(target=self._run, name=f"amqp-{self.name}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self.wake()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=10)
        self._thread = None
        with self._held():
            self._fail_windows(px.ConnectionWrongStateError("the AMQP connection was closed"))
            self._close()

    @property
    def in_io_thread(self) -> bool:
        """Whether this thread holds the connection (runs an operation on it)."""
        return self._io_owner == threading.get_ident()

    def _held(self) -> _Held:
        """Hold the connection (the I/O lock) in this thread (a context manager)."""
        return self._holder

    # -- operations ------------------------------------------------------------------------

    def call(self, fn: Callable[[Link], T], *, retry: bool = True, timeout: float | None = None) -> T:
        """Run ``fn(link)`` holding the connection (in this thread) and return its result.

        ``retry``: run it again after a reconnection when the connection broke under it.
        Waits up to ``timeout`` (default: the reconnect timeout plus the confirm timeout)
        for a connection.
        """
        if self.in_io_thread:
            return fn(self)
        limit = timeout if timeout is not None else self.reconnect_timeout + self.confirm_timeout
        deadline = time.monotonic() + limit
        while True:
            if self._thread is None or self._stopping.is_set():
                raise TransportError("the AMQP transport is not open", hint="call open() first")
            with self._held():
                if self.conn is not None:
                    try:
                        self._run_deferred(force=True)
                        result = fn(self)
                        self._flush()
                        return result
                    except CONNECTION_ERRORS as exc:
                        self._lost(exc)
                        if not retry or time.monotonic() >= deadline:
                            raise self._connection_error(exc) from exc
                    except CHANNEL_ERRORS as exc:
                        self._channel_lost(exc)
                        raise BrokerRefusedError(f"RabbitMQ refused the operation: {exc!r}") from exc
            if time.monotonic() >= deadline:
                raise TransportError(
                    f"RabbitMQ did not answer within {limit:g} s ({self._last_error or 'no error'})",
                    where=f"{self.params.host}:{self.params.port}",
                    hint="check the broker; the operation may or may not have happened",
                )
            self._stopping.wait(0.05)  # the link's thread reconnects

    def submit(self, fn: Callable[[Link], Any]) -> Future[Any]:
        """Run ``fn(link)`` holding the connection, now, without retrying it after a lost
        connection (its future gets the error) and without reading the broker's answers."""
        fut: Future[Any] = Future()
        try:
            fut.set_result(self.call(fn, retry=False))
        except TransportError as exc:
            fut.set_exception(exc)
        return fut

    def defer(self, due: float) -> None:
        """Run the deferred work (``on_deferred``) at the monotonic time ``due`` at the
        latest: a thread waiting for the broker runs it then, and every operation
        (:meth:`call`) runs it first. When nobody uses the connection, the link's own
        thread runs it at its next turn (at most 50 ms later)."""
        if due < self._deferred_due:
            self._deferred_due = due

    def _run_deferred(self, *, force: bool = False) -> bool:
        """Run the deferred work when it is due (or now: ``force``), holding the connection."""
        if self._on_deferred is None or self._deferred_due == math.inf:
            return False
        if not force and time.monotonic() < self._deferred_due:
            return False
        self._deferred_due = math.inf
        self._on_deferred(self)
        return True

    def wake(self) -> None:
        """Make the link's thread look at the connection now (from any thread)."""
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")

    def pump(self, time_limit: float = 0.0, done: Callable[[], bool] | None = None) -> None:
        """Send what is buffered and process what the broker sent (callbacks run here), for up
        to ``time_limit`` seconds or until ``done()`` or a delivery. Holding the connection."""
        conn = self.conn
        assert conn is not None and self.in_io_thread
        confirms = self._confirms
        with conn._acquire_event_dispatch() as dispatch:

            def ready() -> bool:
                return bool(dispatch and (conn._channels_pending_dispatch or conn._ready_events)) or (
                    done is not None and done())

            with _IoloopTimerContext(time_limit, conn._impl) as timer:
                conn._flush_output(timer.is_ready, ready)
        delivered = bool(conn._channels_pending_dispatch)
        if conn._ready_events:
            conn._dispatch_connection_events()
        if conn._channels_pending_dispatch:
            conn._dispatch_channel_events()
        if delivered or confirms != self._confirms:
            self._wake_drivers()

    def _flush(self) -> None:
        """Send what the operations buffered (acks, publishes) now: in one ``send`` when the
        socket takes it (pika's transport would send each frame by itself, after a turn of
        its event loop); when it does not take it all, :meth:`pump` sends the rest."""
        conn = self.conn
        transport = conn._impl._transport if conn is not None else None
        if transport is None:
            return
        buffers = getattr(transport, "_tx_buffers", None)
        if not buffers:
            if conn is not None and conn._impl._get_write_buffer_size():
                self.pump(0.0)
            return
        data = buffers[0] if len(buffers) == 1 else b"".join(buffers)
        buffers.clear()
        buffers.append(data)
        sock = getattr(transport, "_sock", None)
        if sock is None or transport._state != transport._STATE_ACTIVE or not isinstance(transport, _PLAINTEXT):
            # TLS (or closing): pika's transport sends (or aborts the connection)
            transport._on_socket_writable()
            if transport._state != transport._STATE_ACTIVE or transport._tx_buffers:
                self.pump(0.0)  # raises the connection's error; or sends the rest when it can
            return
        try:
            sent = sock.send(data)
        except (BlockingIOError, InterruptedError):
            sent = 0
        except OSError:
            transport._on_socket_writable()  # aborts the connection with the socket's error
            self.pump(0.0)  # raises the connection's error
            return
        buffers.clear()
        transport._tx_buffered_byte_count = len(data) - sent
        if sent < len(data):  # the socket is full: pika's event loop sends the rest
            buffers.append(data[sent:])
            transport._nbio.set_writer(sock.fileno(), transport._on_socket_writable)
            self.pump(0.0)
            return
        # all sent: a writer pika registered for frames it buffered (acks) has nothing to do
        watcher = getattr(transport._nbio, "_watchers", {}).get(sock.fileno())
        if watcher is None or watcher.writer is not None:
            transport._nbio.remove_writer(sock.fileno())

    def _read(self, done: Callable[[], bool] | None) -> None:
        """Process what the socket has (it was readable): callbacks run here. Timers
        (heartbeats) are left to :meth:`pump`, which the link's thread calls every turn."""
        conn = self.conn
        transport = conn._impl._transport if conn is not None else None
        if transport is None or not hasattr(transport, "_on_socket_readable"):
            self.pump(0.0, done)
            return
        assert conn is not None
        confirms = self._confirms
        transport._on_socket_readable()
        if transport._state != transport._STATE_ACTIVE or conn._impl._get_write_buffer_size():
            self.pump(0.0, done)  # a closed connection raises; what is buffered goes out
            return
        delivered = bool(conn._channels_pending_dispatch)
        if conn._ready_events:
            conn._dispatch_connection_events()
        if delivered:
            conn._dispatch_channel_events()
        if delivered or confirms != self._confirms:
            self._wake_drivers()

    def _wake_drivers(self) -> None:
        """Another thread waiting for the broker may wait for what this thread just read."""
        me = threading.get_ident()
        with self._drivers_lock:
            others = [w for t, w in self._drivers.items() if t != me]
        for w in others:
            with contextlib.suppress(OSError):
                w.send(b"x")

    def _socket(self) -> Any:
        conn = self.conn
        transport = conn._impl._transport if conn is not None else None
        return getattr(transport, "_sock", None)

    def wait_io(self, timeout: float, done: Callable[[], bool]) -> bool:
        """Read the connection in this thread until ``done()`` or ``timeout`` seconds passed
        (returns ``done()``). The lock is held only while reading, not while waiting: other
        threads publish and read meanwhile (and wake this one when they read for it)."""
        deadline = time.monotonic() + timeout
        if self.in_io_thread:
            while not done():
                left = deadline - time.monotonic()
                if left <= 0 or self.conn is None:
                    return done()
                self.pump(min(left, 0.05), done)
            return True
        pair = getattr(self._local, "wake", None)
        if pair is None:
            pair = self._local.wake = socket.socketpair()
            for s in pair:
                s.setblocking(False)
        me = threading.get_ident()
        with self._drivers_lock:
            self._drivers[me] = pair[1]
        try:
            while not done():
                left = deadline - time.monotonic()
                if left <= 0:
                    return done()
                sock = self._socket()
                if sock is None:  # reconnecting
                    self._stopping.wait(min(left, 0.05))
                    continue
                readable: list[Any] = []
                due = max(0.0, self._deferred_due - time.monotonic())
                with contextlib.suppress(OSError, ValueError):
                    readable = _readable([sock, pair[0]], min(left, 0.5, due))
                    if pair[0] in readable:
                        with contextlib.suppress(OSError):
                            pair[0].recv(4096)
                if done():
                    break
                with self._held():
                    if self.conn is None:
                        continue
                    try:
                        if self._run_deferred():
                            self._flush()
                        if sock in readable:
                            self._read(done)
                        else:
                            self.pump(0.0, done)
                    except CONNECTION_ERRORS as exc:
                        self._lost(exc)
                    except CHANNEL_ERRORS as exc:
                        self._channel_lost(exc)
            return True
        finally:
            with self._drivers_lock:
                self._drivers.pop(me, None)

    def _run(self) -> None:
        next_tick = 0.0
        while not self._stopping.is_set():
            if self.conn is None:
                self._reconnect_step()
                continue
            # wait for the broker's data only while no other thread reads it (no double wake-up)
            # and the threads that use the connection are quiet (they read it when they need to)
            quiet = time.monotonic() - self._used_at - _QUIET
            sock = None if self._drivers or quiet < 0 else self._socket()
            rlist = [self._wake_r] if sock is None else [self._wake_r, sock]
            timeout = min(next_tick - time.monotonic(), 0.05, -quiet if quiet < 0 else 0.05,
                          self._deferred_due - time.monotonic())
            readable: list[Any] = []
            with contextlib.suppress(OSError, ValueError):
                readable = _readable(rlist, max(0.0, timeout))
                if self._wake_r in readable:
                    with contextlib.suppress(OSError):
                        self._wake_r.recv(4096)
            if self._stopping.is_set():
                return
            with self._held():
                if self.conn is None:
                    continue
                try:
                    if self._run_deferred():
                        self._flush()
                    if sock is not None and sock in readable:
                        self._read(None)
                    now = time.monotonic()
                    if now >= next_tick:  # timers (heartbeats), then the transport's tick
                        next_tick = now + 0.05
                        self.pump(0.0)
                        if self._tick is not None:
                            self._tick(self)
                            self._flush()
                except CONNECTION_ERRORS as exc:
                    self._lost(exc)
                except CHANNEL_ERRORS as exc:
                    self._channel_lost(exc)
                except Exception:  # noqa: BLE001 - a bug in a tick must not kill the connection
                    log.exception("AMQP connection thread %s: unexpected error", self.name)
                    time.sleep(0.1)

    def _connection_error(self, exc: BaseException) -> TransportError:
        return TransportError(
            f"lost the connection to RabbitMQ at {self.params.host}:{self.params.port}: {exc!r}",
            hint="the broker went away; the operation may have to be repeated",
        )

    # -- connection ------------------------------------------------------------------------

    def _connect(self) -> None:
        # a message whose content header pika cannot decode is delivered with the cause
        # (codec.from_amqp refuses it: the transport files it as invalid), not a lost connection
        self.conn = tolerate_undecodable_headers(pika.BlockingConnection(self.params))
        self._open_channel()
        self._down_since = None

    def _open_channel(self) -> None:
        assert self.conn is not None
        self.ch = self.conn.channel()
        self.generation += 1
        self._fail_windows(px.ChannelWrongStateError("the channel was reopened"))
        self._pending.clear()
        self._nacked.clear()
        self._seq = 0
        self.prefetch = 0
        ready: list[bool] = []
        self.ch._impl.confirm_delivery(ack_nack_callback=self._on_confirm, callback=lambda _f: ready.append(True))
        deadline = time.monotonic() + self.confirm_timeout
        while not ready:
            if time.monotonic() > deadline:
                raise px.AMQPConnectionError("no Confirm.SelectOk from the broker")
            self.conn.process_data_events(time_limit=0.05)
        if self._on_new_channel is not None:
            self._on_new_channel(self)

    def _close(self) -> None:
        conn, self.conn, self.ch = self.conn, None, None
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()

    def _lost(self, exc: BaseException) -> None:
        if not self._stopping.is_set():
            log.warning("AMQP connection %s lost: %r; reconnecting", self.name, exc)
        self._last_error = repr(exc)
        self._fail_windows(exc)
        self._close()
        self.generation += 1
        self._down_since = time.monotonic()

    def _channel_lost(self, exc: BaseException) -> None:
        log.warning("AMQP channel of %s closed by the broker: %r; reopening", self.name, exc)
        self._last_error = repr(exc)
        try:
            if self.conn is None or not self.conn.is_open:
                raise px.ConnectionWrongStateError("connection closed")
            self._open_channel()
        except CONNECTION_ERRORS as err:
            self._lost(err)

    def _reconnect_step(self) -> None:
        try:
            with self._held():
                if self.conn is not None:
                    return
                self._connect()
            log.info("AMQP connection %s re-established", self.name)
        except CONNECTION_ERRORS as exc:
            self._last_error = repr(exc)
            with self._held():
                self._close()
            self._stopping.wait(0.5)

    # -- publisher confirms ----------------------------------------------------------------

    def _on_confirm(self, frame: Any) -> None:
        method = frame.method
        tag, multiple = method.delivery_tag, method.multiple
        nack = isinstance(method, pika.spec.Basic.Nack)
        if self._pending:
            done = {t for t in self._pending if t <= tag} if multiple else {tag}
            self._pending -= done
            if nack:
                self._nacked |= done
        self._confirms += 1
        waiting = self._waiting
        if not waiting:
            return
        if multiple:
            tags = []
            for t in waiting:
                if t > tag:
                    break
                tags.append(t)
        else:
            tags = [tag] if tag in waiting else []
        for t in tags:
            w = waiting.pop(t)
            if nack:
                w.refused.append(t)
            w.left -= 1
            if w.left == 0 and w.sealed:
                w.done.set()

    def _fail_windows(self, exc: BaseException) -> None:
        waiting, self._waiting = self._waiting, {}
        for w in set(waiting.values()):
            w.fail(exc)

    def send(self, chunks: Iterable[tuple[list[tuple[str, str, bytes, pika.BasicProperties]], bool]], *,
             generation: int | None = None) -> None:
        """Publish ``(exchange, routing_key, body, properties)`` from any thread and return
        when the broker has confirmed every message (persisted, routed to its queues).

        The messages come in chunks, ``(messages, last)``, each published and sent as soon as
        it is there: the broker stores the first while the caller encodes the next. This
        thread then reads the connection until the confirms are in, without holding it in
        between: the batches of every thread are in flight together, their confirms arrive
        pipelined. When the connection breaks before the confirms, the batch is published
        again on the new one (at least once) until the reconnect timeout runs out. When the
        broker nacks part of it (it refused responsibility: a quorum queue whose leader is not
        elected yet, a queue full with ``x-overflow reject-publish``), the messages it nacked
        (not those it confirmed) are published again after a pause growing from 50 ms to 1 s,
        as RabbitMQ's confirms documentation lets a publisher do, until the same timeout; then
        :class:`BrokerRefusedError`. ``generation``: the channel the caller's deliveries came
        on; the batch is published on that channel only, and a broken connection fails the
        send at once (the deliveries went back to their queues with it: a transaction's
        commit fails then, and its inputs come again).
        """
        pending = iter(chunks)
        if self.in_io_thread:
            self.publish([m for chunk, _last in pending for m in chunk])
            return
        sent: list[tuple[list[tuple[str, str, bytes, pika.BasicProperties]], bool]] = []
        deadline = time.monotonic() + self.reconnect_timeout
        pause = 0.05  # before publishing a nacked batch again
        while True:
            window = _Window()

            def publish(chunk: list[tuple[str, str, bytes, pika.BasicProperties]], last: bool,
                        window: _Window = window) -> bool:
                """Publish one chunk; False when the connection broke (the window failed)."""
                try:
                    self.call(partial(Link._publish_window, messages=chunk, window=window, last=last,
                                      generation=generation), retry=False)
                except BrokerRefusedError:
                    raise
                except TransportError as exc:
                    if window.error is None:
                        window.fail(exc)
                    return False
                return True

            ok = all(publish(chunk, last) for chunk, last in sent)  # again, on a new connection
            while ok and not window.sealed:
                item = next(pending, None)  # the caller's errors (encoding them) propagate as they are
                if item is None:  # the caller named no chunk the last: seal the window now
                    ok = publish([], True)
                    break
                sent.append(item)
                ok = publish(*item)
            if not self.wait_io(self.confirm_timeout + self.reconnect_timeout, window.done.is_set):
                raise BrokerRefusedError(
                    f"RabbitMQ did not confirm {window.left} message(s) within {self.confirm_timeout:g} s",
                    hint="the broker may be overloaded or out of disk",
                )
            if window.error is None and not window.nacked:
                break
            if window.error is not None and generation is not None:
                raise self._connection_error(window.error)
            if time.monotonic() >= deadline or self._stopping.is_set():
                if window.error is not None:
                    raise self._connection_error(window.error)
                raise BrokerRefusedError(
                    f"RabbitMQ refused {window.nacked} message(s) (publisher nack) for "
                    f"{self.reconnect_timeout:g} s",
                    hint="a queue may be full (x-overflow reject-publish) or the broker short of resources",
                )
            if window.error is None:  # nacked: those messages again, after a growing pause
                log.debug("RabbitMQ nacked %d message(s) of a batch; publishing them again", window.nacked)
                sent = [(window.refused_messages(), True)]  # the rest is confirmed
                self._stopping.wait(pause)
                pause = min(pause * 2, 1.0)
            else:
                self._stopping.wait(0.05)

    def _publish_window(
        self, messages: list[tuple[str, str, bytes, pika.BasicProperties]], window: _Window, last: bool = False,
        generation: int | None = None,
    ) -> None:
        """Publish a chunk of ``window`` (``last``: its last chunk, after which it is done
        when its confirms are in) on the channel of ``generation`` (None: the current one)."""
        if generation is not None and generation != self.generation:
            raise TransportError("the channel of the deliveries being settled was lost (reconnected since)")
        impl = self.ch._impl
        first = self._seq + 1
        for t in range(first, first + len(messages)):
            self._waiting[t] = window
        window.left += len(messages)
        window.chunks.append((first, messages))
        if last:
            window.sealed = True
            if window.left == 0 and window.error is None:
                window.done.set()
        if messages:
            self._emit(impl, messages)
            self._seq += len(messages)
            self._flush()  # out now; the confirms come with a later read

    def _emit(self, impl: Any, messages: list[tuple[str, str, bytes, pika.BasicProperties]]) -> None:
        """Buffer the frames of ``messages`` (Basic.Publish, content header, body frames) on
        the connection's transport, as pika's ``basic_publish`` does, for :meth:`_flush` to
        send: the method frame of an exchange and routing key is marshalled once, and the
        frames of a whole chunk go out in one ``send`` without pika registering and
        unregistering a writer with its event loop for each (two system calls a message)."""
        impl._raise_if_not_open()  # a closed channel: ChannelWrongStateError, as basic_publish
        conn = impl.connection
        number = impl.channel_number
        body_max = conn._body_max_length
        frames = self._publish_frames
        out: list[bytes] = []
        for exchange, key, body, props in messages:
            method = frames.get((number, exchange, key))
            if method is None:
                method = frames[(number, exchange, key)] = pika.frame.Method(
                    number, pika.spec.Basic.Publish(exchange=exchange, routing_key=key)).marshal()
            out.append(method)
            out.append(pika.frame.Header(number, len(body), props).marshal())
            for start in range(0, len(body), body_max):
                out.append(pika.frame.Body(number, body[start:start + body_max]).marshal())
        data = b"".join(out)
        conn.bytes_sent += len(data)
        conn.frames_sent += len(out)
        transport = conn._transport
        if transport is None:
            raise px.ConnectionWrongStateError("the AMQP connection is closed")
        transport._tx_buffers.append(data)
        transport._tx_buffered_byte_count += len(data)

    def publish(self, messages: list[tuple[str, str, bytes, pika.BasicProperties]]) -> None:
        """Publish ``(exchange, routing_key, body, properties)`` and wait for every confirm.

        Holding the connection (call it from an operation: :meth:`call`).
        """
        if not messages:
            return
        assert self.conn is not None
        first = self._seq + 1
        self._emit(self.ch._impl, messages)
        for _ in messages:
            self._seq += 1
            self._pending.add(self._seq)
        self._flush()
        mine = range(first, self._seq + 1)
        deadline = time.monotonic() + self.confirm_timeout

        def confirmed() -> bool:
            return not any(t in self._pending for t in mine)

        while not confirmed():
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrokerRefusedError(
                    f"RabbitMQ confirmed only part of {len(messages)} message(s) within "
                    f"{self.confirm_timeout:g} s", hint="the broker may be overloaded or out of disk",
                )
            self.pump(min(left, 0.5), confirmed)
        refused = self._nacked.intersection(mine)
        if refused:
            self._nacked -= refused
            raise BrokerRefusedError(
                f"RabbitMQ refused {len(refused)} of {len(messages)} message(s) (publisher nack)",
                hint="a queue may be full (x-overflow reject-publish) or the broker short of resources",
            )
