"""One AMQP connection owned by a thread of its own.

pika's ``BlockingConnection`` may only be used by one thread, and it answers heartbeats only
while someone calls it. :class:`Link` gives it a thread that does nothing else: it keeps the
connection alive, runs the jobs other threads submit (:meth:`Link.call`), runs a periodic
``tick`` (lease expiry, housekeeping) and reconnects when the broker goes away.

Publisher confirms are tracked here. :meth:`Link.send` (any thread) hands a batch to the
connection thread, which publishes it and goes on with other work; the confirms of every
batch in flight arrive pipelined, and the caller wakes when the broker confirmed the last
message of its batch. :meth:`Link.publish` (in the connection thread) publishes a batch and
waits for its confirms on the spot (the rare paths: dead letters, redeliveries).

Connection loss: every delivery received on the lost connection is back in its queue on the
broker (its ``generation`` is over, so acknowledging it raises ``LeaseLostError`` in the
transport). A job interrupted by the loss runs again on the new connection when it was
submitted with ``retry=True`` (publishes, gets), so a send that was not confirmed is sent
again: delivery is at least once, as always with AMQP; the Idempotent Receiver drops the
duplicates.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from functools import partial
from typing import Any, TypeVar

import pika
import pika.exceptions as px

from coupler.bus.transport.base import TransportError

log = logging.getLogger(__name__)
T = TypeVar("T")

#: failures of the connection (the job may run again on a new one)
CONNECTION_ERRORS = (px.AMQPConnectionError, px.ConnectionWrongStateError, px.StreamLostError, OSError)
#: failures of the channel (the broker refused an operation; the channel is reopened)
CHANNEL_ERRORS = (px.AMQPChannelError, px.ChannelWrongStateError)


class BrokerRefusedError(TransportError):
    """The broker refused an operation (nacked a publish, closed the channel)."""


class _Window:
    """The confirms one published batch waits for."""

    __slots__ = ("left", "done", "nacked", "error")

    def __init__(self, left: int):
        self.left = left
        self.done = threading.Event()
        self.nacked = 0
        self.error: BaseException | None = None

    def fail(self, exc: BaseException | None) -> None:
        self.error = exc
        self.done.set()


def _fail_on_error(fut: Future[Any], window: _Window) -> None:
    """The publishing job of ``window`` failed (the connection broke before it ran)."""
    exc = fut.exception()
    if exc is not None:
        window.fail(exc)


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
        self.conn: pika.BlockingConnection | None = None
        self.ch: Any = None
        #: increases with every new channel; deliveries of an older generation are gone
        self.generation = 0
        self._jobs: deque[tuple[Callable[[Link], Any], Future[Any], bool, float]] = deque()
        self._jobs_lock = threading.Lock()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
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

    def start(self) -> Link:
        """Connect (fails fast when the broker cannot be reached) and start the thread."""
        try:
            self._connect()
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
        self._fail_all(TransportError("the AMQP connection was closed"))
        self._fail_windows(px.ConnectionWrongStateError("the AMQP connection was closed"))
        self._close()

    @property
    def in_io_thread(self) -> bool:
        return threading.current_thread() is self._thread

    # -- jobs ------------------------------------------------------------------------------

    def call(self, fn: Callable[[Link], T], *, retry: bool = True, timeout: float | None = None) -> T:
        """Run ``fn(link)`` in the connection's thread and return its result.

        ``retry``: run it again after a reconnection when the connection broke under it.
        Waits up to ``timeout`` (default: the reconnect timeout plus the confirm timeout).
        """
        if self.in_io_thread:
            return fn(self)
        if self._thread is None:
            raise TransportError("the AMQP transport is not open", hint="call open() first")
        fut: Future[Any] = Future()
        limit = timeout if timeout is not None else self.reconnect_timeout + self.confirm_timeout
        with self._jobs_lock:
            self._jobs.append((fn, fut, retry, time.monotonic() + limit))
        self.wake()
        try:
            return fut.result(timeout=limit + 5)
        except TimeoutError as exc:
            raise TransportError(
                f"RabbitMQ did not answer within {limit:g} s ({self._last_error or 'no error'})",
                where=f"{self.params.host}:{self.params.port}",
                hint="check the broker; the operation may or may not have happened",
            ) from exc

    def submit(self, fn: Callable[[Link], Any]) -> Future[Any]:
        """Run ``fn(link)`` in the connection's thread soon; do not wait for it (a job lost
        with the connection is dropped: its future gets the error)."""
        fut: Future[Any] = Future()
        if self.in_io_thread:
            fut.set_result(fn(self))
            return fut
        if self._thread is None:
            raise TransportError("the AMQP transport is not open", hint="call open() first")
        with self._jobs_lock:
            self._jobs.append((fn, fut, False, time.monotonic() + self.reconnect_timeout))
        self.wake()
        return fut

    def wake(self) -> None:
        """Make the connection thread's ``process_data_events`` return (from any thread)."""
        conn = self.conn
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.add_callback_threadsafe(lambda: None)

    def _run(self) -> None:
        next_tick = 0.0
        while not self._stopping.is_set():
            if self.conn is None:
                self._reconnect_step()
                continue
            try:
                self.conn.process_data_events(time_limit=0.2)
                self._run_jobs()
                now = time.monotonic()
                if self._tick is not None and now >= next_tick:
                    next_tick = now + 0.05
                    self._tick(self)
            except CONNECTION_ERRORS as exc:
                self._lost(exc)
            except CHANNEL_ERRORS as exc:
                self._channel_lost(exc)
            except Exception:  # noqa: BLE001 - a bug in a tick must not kill the connection
                log.exception("AMQP connection thread %s: unexpected error", self.name)
                time.sleep(0.1)

    def _run_jobs(self) -> None:
        while True:
            with self._jobs_lock:
                if not self._jobs:
                    return
                fn, fut, retry, deadline = self._jobs.popleft()
            if fut.cancelled():
                continue
            try:
                fut.set_result(fn(self))
            except CONNECTION_ERRORS as exc:
                if retry and time.monotonic() < deadline:
                    with self._jobs_lock:
                        self._jobs.appendleft((fn, fut, retry, deadline))
                else:
                    fut.set_exception(self._connection_error(exc))
                raise
            except CHANNEL_ERRORS as exc:
                fut.set_exception(BrokerRefusedError(f"RabbitMQ refused the operation: {exc!r}"))
                raise
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                fut.set_exception(exc)

    def _connection_error(self, exc: BaseException) -> TransportError:
        return TransportError(
            f"lost the connection to RabbitMQ at {self.params.host}:{self.params.port}: {exc!r}",
            hint="the broker went away; the operation may have to be repeated",
        )

    def _fail_all(self, exc: BaseException, *, expired_only: bool = False) -> None:
        now = time.monotonic()
        with self._jobs_lock:
            keep: deque[tuple[Callable[[Link], Any], Future[Any], bool, float]] = deque()
            for job in self._jobs:
                if expired_only and now < job[3]:
                    keep.append(job)
                elif not job[1].done():
                    job[1].set_exception(exc)
            self._jobs = keep

    # -- connection ------------------------------------------------------------------------

    def _connect(self) -> None:
        self.conn = pika.BlockingConnection(self.params)
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
        self._fail_all(self._connection_error(Exception(self._last_error)), expired_only=True)
        try:
            self._connect()
            log.info("AMQP connection %s re-established", self.name)
        except CONNECTION_ERRORS as exc:
            self._last_error = repr(exc)
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
            self.wake()  # process_data_events returns: the publisher looks at what is left
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
                w.nacked += 1
            w.left -= 1
            if w.left == 0:
                w.done.set()

    def _fail_windows(self, exc: BaseException) -> None:
        waiting, self._waiting = self._waiting, {}
        for w in set(waiting.values()):
            w.fail(exc)

    def send(self, messages: list[tuple[str, str, bytes, pika.BasicProperties]]) -> None:
        """Publish ``(exchange, routing_key, body, properties)`` from any thread and return
        when the broker has confirmed every message (persisted, routed to its queues).

        The connection thread publishes the batch and goes on; the confirms of all batches
        in flight arrive pipelined. When the connection breaks before the confirms, the
        batch is published again on the new one (at least once) until the reconnect
        timeout runs out.
        """
        if not messages:
            return
        if self.in_io_thread:
            self.publish(messages)
            return
        deadline = time.monotonic() + self.reconnect_timeout
        while True:
            window = _Window(len(messages))
            # no waiting for the job itself: the caller wakes once, when the confirms are in
            self.submit(partial(Link._publish_window, messages=messages, window=window)).add_done_callback(
                partial(_fail_on_error, window=window))
            if not window.done.wait(self.confirm_timeout + self.reconnect_timeout):
                raise BrokerRefusedError(
                    f"RabbitMQ did not confirm {len(messages)} message(s) within {self.confirm_timeout:g} s",
                    hint="the broker may be overloaded or out of disk",
                )
            if window.error is None:
                break
            if time.monotonic() >= deadline or self._stopping.is_set():
                raise self._connection_error(window.error)
        if window.nacked:
            raise BrokerRefusedError(
                f"RabbitMQ refused {len(messages)} message(s) (publisher nack)",
                hint="a queue may be full (x-overflow reject-publish) or the broker short of resources",
            )

    def _publish_window(
        self, messages: list[tuple[str, str, bytes, pika.BasicProperties]], window: _Window
    ) -> None:
        impl = self.ch._impl
        first = self._seq + 1
        for t in range(first, first + len(messages)):
            self._waiting[t] = window
        for exchange, key, body, props in messages:
            impl.basic_publish(exchange=exchange, routing_key=key, body=body, properties=props)
            self._seq += 1

    def publish(self, messages: list[tuple[str, str, bytes, pika.BasicProperties]]) -> None:
        """Publish ``(exchange, routing_key, body, properties)`` and wait for every confirm.

        Runs in the connection's thread (call it from a job).
        """
        if not messages:
            return
        assert self.conn is not None
        first = self._seq + 1
        impl = self.ch._impl
        for exchange, key, body, props in messages:
            impl.basic_publish(exchange=exchange, routing_key=key, body=body, properties=props)
            self._seq += 1
            self._pending.add(self._seq)
        mine = range(first, self._seq + 1)
        deadline = time.monotonic() + self.confirm_timeout
        while any(t in self._pending for t in mine):
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrokerRefusedError(
                    f"RabbitMQ confirmed only part of {len(messages)} message(s) within "
                    f"{self.confirm_timeout:g} s", hint="the broker may be overloaded or out of disk",
                )
            self.conn.process_data_events(time_limit=min(left, 0.5))
        refused = self._nacked.intersection(mine)
        if refused:
            self._nacked -= refused
            raise BrokerRefusedError(
                f"RabbitMQ refused {len(refused)} of {len(messages)} message(s) (publisher nack)",
                hint="a queue may be full (x-overflow reject-publish) or the broker short of resources",
            )
