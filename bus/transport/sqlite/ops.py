"""The write transaction of the embedded SQLite store (:class:`StoreTx`) and its hot paths.

A message is two rows with the same rowid (see :mod:`coupler.bus.transport.sqlite.schema`): its state in
``messages`` and its serialised envelope in ``bodies``. Sending inserts both (rowids assigned
here, under the write lock); a lease grant rewrites only the state row; an acknowledgement
deletes both by rowid. Envelopes are encoded before the write lock is taken and decoded after
it is released (:func:`prepare`, :class:`Leased`), so that the lock, which one producer and
its consumers share, is held for SQL only.
"""

from __future__ import annotations

import logging
import sqlite3
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from coupler.bus.model.selectors import Selector, as_selector
from coupler.bus.transport import policy
from coupler.bus.transport.base import (
    ChannelConfig,
    DeadKind,
    Delivery,
    LeaseLostError,
    TransactionOps,
    TransportError,
    check_channel_name,
    envelope_list,
    error_text,
)
from coupler.bus.transport.codec import decode, encode, encode_many
from coupler.bus.transport.sql_filters import journal_trace
from coupler.canonical import Envelope
from coupler.canonical.claimcheck import CLAIM_PROPERTY as FILE_CLAIM_PROPERTY
from coupler.canonical.claimcheck import claimed_file
from coupler.canonical.envelope import HistoryEntry
from coupler.canonical.errors import CouplerError

if TYPE_CHECKING:
    from coupler.bus.transport.sqlite.transport import SqliteTransport

log = logging.getLogger("coupler.bus.transport.sqlite.transport")

CLAIM_PROPERTY = "coupler.claim"
#: the ``claim`` of a message referring to a claimed file of the site (a dropped or put file
#: over ``claim_check_bytes``, :mod:`coupler.canonical.claimcheck`): ``file:`` and its path
#: under the data directory, counted like the store's own claims, so the file goes when the
#: last message referring to it is settled
FILE_CLAIM = "file:"

#: a message row with its envelope: (id, channel, attempt, claim, envelope, message_id)
_ROW = "m.id, m.channel, m.attempt, m.claim, b.envelope, m.message_id"
_ROW_FROM = "messages m LEFT JOIN bodies b ON b.id = m.id"
_IN_CHUNK = 500

Prepared = tuple[Envelope, bytes, "str | None"]


def prepare(
    t: SqliteTransport, channel: str, envs: list[Envelope], component: str
) -> tuple[list[Prepared], list[Path]]:
    """Serialise envelopes for storage (with the send hop); large bodies become claim checks.

    ``envs`` are checked already (:func:`~coupler.bus.transport.base.envelope_list`).
    """
    hop = HistoryEntry(component, f"send {channel}")
    paths: list[Path] = []
    threshold = t.claim_threshold
    if not any(len(env.body) > threshold or FILE_CLAIM_PROPERTY in env.properties for env in envs):  # the common case: the batch's shared headers encoded once
        return [(env, blob, None) for env, blob in zip(envs, encode_many(envs, hop), strict=True)], paths
    prepared: list[Prepared] = []
    for env in envs:
        if len(env.body) > threshold:
            claim, path = t._store_claim(env.body)
            paths.append(path)
            props = {**env.properties, CLAIM_PROPERTY: claim}
            prepared.append((env, encode(env, extra_hop=hop, body=b"", properties=props), claim))
        else:
            rel = claimed_file(t.data_dir, env.properties)
            prepared.append((env, encode(env, extra_hop=hop), FILE_CLAIM + rel if rel else None))
    return prepared, paths


#: rows of one multi-row ``INSERT`` (a statement of up to 700 parameters): a third less CPU
#: than ``executemany`` row by row for the messages and bodies of a batch (the journal, whose
#: key SQLite assigns, is faster with ``executemany``)
_ROWS_PER_INSERT = 100


def insert_rows(conn: sqlite3.Connection, into: str, rows: list[tuple[Any, ...]], *, verb: str = "INSERT") -> None:
    """``verb INTO into VALUES (...), (...)...``: ``rows`` (tuples of one width) in multi-row
    statements of :data:`_ROWS_PER_INSERT` rows (the statements are the same from one batch to
    the next: prepared once, kept in the connection's statement cache)."""
    if not rows:
        return
    one = "(" + ", ".join("?" * len(rows[0])) + ")"
    for start in range(0, len(rows), _ROWS_PER_INSERT):
        part = rows[start:start + _ROWS_PER_INSERT]
        conn.execute(f"{verb} INTO {into} VALUES {', '.join([one] * len(part))}", list(chain.from_iterable(part)))


@dataclass
class Leased:
    """Messages leased in a transaction, not decoded yet (decoding needs no lock).

    ``rows`` are ``(id, attempt, claim, message_id, envelope bytes)`` in delivery order.
    """

    channel: str
    consumer: str
    token: int
    until: float
    rows: list[tuple[int, int, str | None, str, bytes | None]]

    def deliveries(self, t: SqliteTransport) -> tuple[list[Delivery], list[tuple[Any, ...]]]:
        """The deliveries, and the rows whose bytes are not an envelope (with the error)."""
        hop = HistoryEntry(self.consumer, f"receive {self.channel}")  # frozen: shared by all
        out: list[Delivery] = []
        bad: list[tuple[Any, ...]] = []
        channel, consumer, token, until = self.channel, self.consumer, self.token, self.until
        for id_, attempt, claim, message_id, blob in self.rows:
            try:
                if blob is None:
                    raise TransportError(f"message {message_id} has no stored envelope")
                env = decode(blob)
            except CouplerError as exc:
                bad.append((id_, attempt, claim, message_id, blob, str(exc)))
                continue
            env.attempt = attempt
            if claim is not None:
                t._restore_claim(env, claim)
            env.history.append(hop)
            out.append(Delivery(channel, consumer, env, id_, token, attempt, until, claim))
        return out, bad


class StoreTx(TransactionOps):
    """One open write transaction (``BEGIN IMMEDIATE``) on one connection."""

    def __init__(self, transport: SqliteTransport, conn: sqlite3.Connection, *, durable: bool):
        self.t = transport
        self.conn = conn
        self.now = transport.clock()
        #: whether the commit must be on disk before the call returns (synchronous=FULL):
        #: as asked by the caller, and always once the transaction adds a message
        self.durable = durable
        self.written_claims: list[Path] = []
        self.unreferenced_claims: list[str] = []
        #: channels where this transaction made a message ready (announced to this process's
        #: waiting receivers when it commits: ``receive_wait``)
        self.arrived: set[str] = set()
        #: statistics counted by this transaction, ``(channel, counter) -> n``
        self.counts: dict[tuple[str, str], int] = {}
        #: add every pending statistic of the transport to ``counters`` at commit
        self.write_all_counts = False

    # -- bookkeeping -----------------------------------------------------------------------

    def journal(self, channel: str | None, message_id: str | None, event: str, detail: str | None = None) -> None:
        self.conn.execute(
            "INSERT INTO journal (at, channel, message_id, event, detail) VALUES (?, ?, ?, ?, ?)",
            (self.now, channel, message_id, event, detail),
        )

    def journal_many(self, rows: Iterable[tuple[Any, ...]]) -> None:
        self.conn.executemany(
            "INSERT INTO journal (at, channel, message_id, event, detail) VALUES (?, ?, ?, ?, ?)",
            rows,
        )

    def journal_sent(self, channel: str, envs: Iterable[Envelope], event: str, detail: str | None) -> None:
        """Journal rows of messages stored on ``channel``, with their trace id and search keys
        (the message trace of the console and ``coupler ctl trace``)."""
        now = self.now
        self.conn.executemany(
            "INSERT INTO journal (at, channel, message_id, event, detail, trace_id, keys) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [(now, channel, e.message_id, event, detail, *journal_trace(e)) for e in envs],
        )

    def count(self, channel: str, counter: str, n: int = 1) -> None:
        """Add to a channel's statistics: kept by the transport after this transaction commits
        and written to ``counters`` by a later one (:meth:`write_counts`)."""
        key = (channel, counter)
        self.counts[key] = self.counts.get(key, 0) + n

    def write_counts(self, pending: dict[tuple[str, str], int]) -> None:
        """Add ``pending`` counts (``(channel, counter) -> n``) to the ``counters`` table."""
        for (channel, counter), n in pending.items():
            self.conn.execute(
                f"INSERT INTO counters (channel, {counter}) VALUES (?, ?) "
                f"ON CONFLICT (channel) DO UPDATE SET {counter} = {counter} + excluded.{counter}",
                (channel, n),
            )

    def release_claims(self, claims: Iterable[str]) -> None:
        """Schedule claim files no row refers to any more for deletion after commit."""
        for ref in set(claims):
            used = self.conn.execute(
                "SELECT 1 FROM messages WHERE claim = ? UNION ALL "
                "SELECT 1 FROM dead_letters WHERE claim = ? LIMIT 1",
                (ref, ref),
            ).fetchone()
            if used is None:
                self.unreferenced_claims.append(ref)

    def rows(self, where: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        """Message rows with their envelope: ``(id, channel, attempt, claim, envelope, message_id)``."""
        return self.conn.execute(f"SELECT {_ROW} FROM {_ROW_FROM} WHERE {where}", args).fetchall()

    def leased_row(self, delivery: Delivery) -> tuple[Any, ...] | None:
        found = self.rows("m.id = ? AND m.lease_token = ?", (delivery.tag, delivery.token))
        return found[0] if found else None

    def bodies(self, ids: list[int]) -> dict[int, bytes]:
        out: dict[int, bytes] = {}
        for i in range(0, len(ids), _IN_CHUNK):
            chunk = ids[i : i + _IN_CHUNK]
            marks = ",".join("?" * len(chunk))
            out.update(self.conn.execute(f"SELECT id, envelope FROM bodies WHERE id IN ({marks})", chunk))
        return out

    def delete(self, ids: list[int]) -> None:
        pairs = [(i,) for i in ids]
        self.conn.executemany("DELETE FROM messages WHERE id = ?", pairs)
        self.conn.executemany("DELETE FROM bodies WHERE id = ?", pairs)

    # -- send ------------------------------------------------------------------------------

    def send(self, channel: str, envelopes: Envelope | Iterable[Envelope], *, component: str = "bus") -> list[str]:
        check_channel_name(channel)
        envs = envelope_list(channel, envelopes)
        prepared, paths = prepare(self.t, channel, envs, component)
        self.written_claims.extend(paths)
        return self.send_prepared(channel, envs, prepared, component)

    def send_prepared(
        self, channel: str, envs: list[Envelope], prepared: list[Prepared], component: str
    ) -> list[str]:
        if not prepared:
            return []
        subs = self.conn.execute(
            "SELECT channel, selector FROM subscriptions WHERE topic = ?", (channel,)
        ).fetchall()
        if subs or self.t._kind(channel) == "topic":
            self.count(channel, "sent", len(prepared))
            self.journal_sent(channel, (e for e, _, _ in prepared), policy.PUBLISHED, component)
            for sub_channel, selector in subs:
                sel = Selector.parse(selector) if selector else None
                chosen = [p for p in prepared if sel is None or sel(p[0])]
                if chosen:
                    self.insert(sub_channel, chosen, event_detail=f"from {channel}")
            if not subs:
                log.info("topic %s has no subscriptions; %d message(s) dropped", channel, len(prepared))
            return [env.message_id for env in envs]
        self.insert(channel, prepared, event_detail=component)
        return [env.message_id for env in envs]

    def insert(self, channel: str, prepared: list[Prepared], event_detail: str | None = None) -> None:
        """Store messages: a state row and an envelope row each, with the same new rowid."""
        self.durable = True  # a new message: on disk before the call returns (FULL)
        self.arrived.add(channel)
        now = self.now
        # rowids are max + 1, max + 2...: the write lock is held, nobody else inserts now
        base = self.conn.execute("SELECT max(id) FROM messages").fetchone()[0] or 0
        ids = range(base + 1, base + 1 + len(prepared))
        insert_rows(
            self.conn, "messages (id, channel, message_id, visible_at, enqueued_at, expires_at, claim)",
            [
                (
                    id_, channel, env.message_id, now, now,
                    env.expires_at.timestamp() if env.expires_at is not None else None, claim,
                )
                for id_, (env, _, claim) in zip(ids, prepared, strict=True)
            ],
        )
        # OR REPLACE: a body row left behind by an older writer must not block the send
        insert_rows(self.conn, "bodies (id, envelope)", [(id_, blob) for id_, (_, blob, _) in zip(ids, prepared, strict=True)],
                    verb="INSERT OR REPLACE")
        self.journal_sent(channel, (env for env, _, _ in prepared), policy.SENT, event_detail)
        self.count(channel, "sent", len(prepared))

    # -- receive ---------------------------------------------------------------------------

    def receive(
        self,
        channel: str,
        consumer: str,
        *,
        max: int = 1,
        lease_seconds: float | None = None,
        selector: Selector | str | None = None,
    ) -> list[Delivery]:
        check_channel_name(channel)
        sel = as_selector(selector)
        leased = self.lease(channel, consumer, max=max, lease_seconds=lease_seconds, selector=sel)
        if leased is None:
            return []
        if not isinstance(leased, Leased):  # decoded and matched against the selector already
            return leased
        got, bad = leased.deliveries(self.t)
        if bad:
            self.dead_undecodable(channel, leased.token, bad)
        return got

    def lease(
        self,
        channel: str,
        consumer: str,
        *,
        max: int = 1,
        lease_seconds: float | None = None,
        selector: Selector | None = None,
    ) -> Leased | list[Delivery] | None:
        """Lease up to ``max`` ready messages of ``channel``, oldest first.

        Expired messages met on the way are dead-lettered, and so are messages whose lease
        expired after the last attempt. Without a selector the envelopes are returned
        undecoded (:class:`Leased`); with one, they are decoded to be matched and the
        deliveries are returned. None when nothing was leased.
        """
        if max < 1:
            return None
        cfg = self.t.channel_config(channel)
        lease = policy.lease_for(lease_seconds, cfg, self.t.lease_seconds)
        backoff = policy.backoff_for(cfg, self.t.backoff)
        now = self.now
        token = self.t._rng.getrandbits(62)
        until = now + lease
        taken: list[tuple[int, int, str | None, str]] = []
        matched: list[Delivery] = []
        cursor: tuple[float, int] = (float("-inf"), -1)
        page = max if selector is None else 200
        while len(taken) < max:
            rows = self.conn.execute(
                "SELECT id, visible_at, attempt, expires_at, lease_token, claim, message_id "
                "FROM messages WHERE channel = ? AND visible_at <= ? AND (visible_at, id) > (?, ?) "
                "ORDER BY visible_at, id LIMIT ?",
                (channel, now, cursor[0], cursor[1], page),
            ).fetchall()
            if not rows:
                break
            cursor = (rows[-1][1], rows[-1][0])
            if selector is not None:
                blobs = self.bodies([r[0] for r in rows])
            for id_, _vis, attempt, expires_at, lease_token, claim, message_id in rows:
                verdict = policy.undeliverable(backoff, expired=expires_at is not None and expires_at <= now,
                                        lease_lost=lease_token is not None, attempts=attempt)
                if verdict is not None:
                    self.dead_by_id(id_, "dead", *verdict, policy.TRANSPORT)
                    continue
                if selector is not None:
                    one = Leased(channel, consumer, token, until,
                                 [(id_, attempt + 1, claim, message_id, blobs.get(id_))])
                    got, bad = one.deliveries(self.t)
                    if bad:
                        self.dead_undecodable(channel, None, bad)
                        continue
                    if not selector(got[0].envelope):
                        continue
                    matched.extend(got)
                taken.append((id_, attempt + 1, claim, message_id))
                if len(taken) >= max:
                    break
        if not taken:
            return None
        self.conn.executemany(
            "UPDATE messages SET visible_at = ?, attempt = ?, lease_token = ?, lease_owner = ? WHERE id = ?",
            [(until, attempt, token, consumer, id_) for id_, attempt, _, _ in taken],
        )
        self.journal_many((now, channel, mid, policy.RECEIVED, consumer) for _, _, _, mid in taken)
        self.count(channel, "received", len(taken))
        if selector is not None:
            return matched
        blobs = self.bodies([r[0] for r in taken])
        return Leased(channel, consumer, token, until,
                      [(id_, attempt, claim, mid, blobs.get(id_)) for id_, attempt, claim, mid in taken])

    def dead_undecodable(self, channel: str, token: int | None, bad: list[tuple[Any, ...]]) -> None:
        """Move leased rows whose bytes are not an envelope to the Invalid Message Channel."""
        for id_, attempt, claim, message_id, blob, error in bad:
            if token is not None and self.conn.execute(
                "SELECT 1 FROM messages WHERE id = ? AND lease_token = ?", (id_, token)
            ).fetchone() is None:
                continue  # settled meanwhile by someone else
            self.delete([id_])
            self._dead_row(channel, message_id, "invalid", "undecodable envelope", error,
                           policy.TRANSPORT, attempt, claim, None, blob)

    # -- settle ----------------------------------------------------------------------------

    def ack(self, deliveries: Delivery | Iterable[Delivery]) -> None:
        ds = [deliveries] if isinstance(deliveries, Delivery) else list(deliveries)
        if not ds:
            return
        before = self.conn.total_changes
        self.conn.executemany(
            "DELETE FROM messages WHERE id = ? AND lease_token = ?", [(d.tag, d.token) for d in ds]
        )
        settled = self.conn.total_changes - before
        if settled != len(ds):
            raise LeaseLostError(
                f"cannot acknowledge {len(ds) - settled} of {len(ds)} message(s) on "
                f"{ds[0].channel}: the lease expired and another consumer took it, or it was "
                "already settled",
                hint="acknowledge within lease_seconds or use a longer lease",
            )
        self.conn.executemany("DELETE FROM bodies WHERE id = ?", [(d.tag,) for d in ds])
        by_channel = Counter(d.channel for d in ds)
        for channel, n in by_channel.items():
            self.count(channel, "acked", n)
        now = self.now
        self.journal_many((now, d.channel, d.envelope.message_id, policy.ACKED, d.ack_detail) for d in ds)
        refs = [d.claim for d in ds if d.claim]
        if refs:
            self.release_claims(refs)

    def nack(
        self,
        delivery: Delivery,
        error: str | BaseException,
        component: str,
        *,
        delay: float | None = None,
        dead: bool = False,
    ) -> Literal["retry", "dead"]:
        text = error_text(error)
        row = self.leased_row(delivery)
        if row is None:
            raise LeaseLostError(
                f"cannot reject message {delivery.message_id} on {delivery.channel}: the lease "
                "expired and another consumer took it, or it was already settled",
                hint="settle within lease_seconds or use a longer lease",
            )
        backoff = policy.backoff_for(self.t.channel_config(delivery.channel), self.t.backoff)
        decision = policy.nack_decision(backoff, delivery.attempt, dead=dead, delay=delay, rng=self.t._rng)
        self.count(delivery.channel, "failed")
        if decision.outcome == "dead":
            self.dead(row, "dead", decision.reason, text, component)
            return "dead"
        self.conn.execute(
            "UPDATE messages SET visible_at = ?, lease_token = NULL, lease_owner = NULL WHERE id = ?",
            (self.now + decision.wait, delivery.tag),
        )
        self.arrived.add(delivery.channel)
        policy.record_nacked(self, delivery, component, text, decision.wait)
        return "retry"

    def dead_by_id(self, id_: int, kind: DeadKind, reason: str, error: str, component: str) -> None:
        [row] = self.rows("m.id = ?", (id_,))
        self.dead(row, kind, reason, error, component)

    def dead(self, row: tuple[Any, ...], kind: DeadKind, reason: str, error: str, component: str) -> None:
        """Move message row ``(id, channel, attempt, claim, envelope, message_id)`` to its
        dead-letter queue."""
        id_, channel, attempt, claim, blob, message_id = row
        self.delete([id_])
        self._dead_row(channel, message_id, kind, reason, error, component, attempt, claim, blob, None)

    def _dead_row(
        self, channel: str | None, message_id: str | None, kind: DeadKind, reason: str,
        error: str, component: str, attempts: int, claim: str | None, blob: bytes | None,
        raw: bytes | None,
    ) -> int:
        cfg = self.t.channel_config(channel) if channel else ChannelConfig()
        queue = policy.dead_letter_queue(cfg, kind, dead_letter=self.t.dead_letter_default, invalid=self.t.invalid_default)
        cur = self.conn.execute(
            "INSERT INTO dead_letters (kind, queue, channel, message_id, reason, error, component, "
            "attempts, dead_at, claim, envelope, raw) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (kind, queue, channel, message_id, reason, error, component, attempts, self.now,
             claim, blob, raw),
        )
        policy.record_dead(self, channel, message_id, queue=queue, kind=kind, reason=reason, error=error,
                    component=component, attempts=attempts)
        return int(cur.lastrowid or 0)

    def invalid(
        self,
        envelope: Envelope | bytes,
        reason: str,
        component: str,
        *,
        channel: str | None = None,
        delivery: Delivery | None = None,
    ) -> int:
        if delivery is not None:
            row = self.leased_row(delivery)
            if row is None:
                raise LeaseLostError(
                    f"cannot move message {delivery.message_id} to the invalid channel: its lease "
                    "expired and another consumer took it, or it was already settled"
                )
            id_, row_channel, attempt, claim, blob, _ = row
            self.delete([id_])
            return self._dead_row(row_channel, delivery.message_id, "invalid", reason, reason,
                                  component, attempt, claim, blob, None)
        if isinstance(envelope, Envelope):
            rel = claimed_file(self.t.data_dir, envelope.properties)
            return self._dead_row(channel, envelope.message_id, "invalid", reason, reason,
                                  component, envelope.attempt, FILE_CLAIM + rel if rel else None,
                                  envelope.to_bytes(), None)
        return self._dead_row(channel, None, "invalid", reason, reason, component, 0, None, None,
                              bytes(envelope))

    def purge(self, channel: str) -> int:
        claims = [
            r[0]
            for r in self.conn.execute(
                "SELECT DISTINCT claim FROM messages WHERE channel = ? AND claim IS NOT NULL", (channel,)
            )
        ]
        self.conn.execute(
            "DELETE FROM bodies WHERE id IN (SELECT id FROM messages WHERE channel = ?)", (channel,)
        )
        n = self.conn.execute("DELETE FROM messages WHERE channel = ?", (channel,)).rowcount
        self.release_claims(claims)
        self.journal(channel, None, policy.PURGED, f"{n} message(s)")
        return n

    # -- idempotency -----------------------------------------------------------------------

    def seen(self, consumer: str, keys: Iterable[str]) -> set[str]:
        keys = list(keys)
        found: set[str] = set()
        for i in range(0, len(keys), _IN_CHUNK):
            chunk = keys[i : i + _IN_CHUNK]
            marks = ",".join("?" * len(chunk))
            found.update(
                r[0]
                for r in self.conn.execute(
                    f"SELECT key FROM seen WHERE consumer = ? AND key IN ({marks})", (consumer, *chunk)
                )
            )
        return found

    def remember(self, scope: str, key: str, ttl: float) -> bool:
        """See :meth:`coupler.bus.transport.base.Transport.remember`."""
        now = self.now
        cursor = self.conn.execute(
            "INSERT INTO seen (consumer, key, seen_at) VALUES (?, ?, ?) "
            "ON CONFLICT (consumer, key) DO UPDATE SET seen_at = excluded.seen_at WHERE seen.seen_at < ?",
            (scope, key, now, now - ttl),
        )
        return cursor.rowcount == 1

    # -- step state (see Transport.get_state) ----------------------------------------------

    def get_state(self, scope: str, keys: Iterable[str] | None = None, *, lock: bool = False) -> dict[str, bytes]:
        # the write transaction (BEGIN IMMEDIATE) already excludes every other writer: lock is implied
        sql = "SELECT key, value FROM state WHERE scope = ? AND (expires_at IS NULL OR expires_at > ?)"
        if keys is None:
            return {k: bytes(v) for k, v in self.conn.execute(sql, (f"step:{scope}", self.now))}
        found: dict[str, bytes] = {}
        keys = list(keys)
        for i in range(0, len(keys), _IN_CHUNK):
            chunk = keys[i : i + _IN_CHUNK]
            rows = self.conn.execute(f"{sql} AND key IN ({','.join('?' * len(chunk))})",
                                     (f"step:{scope}", self.now, *chunk))
            found.update((k, bytes(v)) for k, v in rows)
        return found

    def put_state(self, scope: str, values: dict[str, bytes | None], *, expires_at: float | None = None) -> None:
        gone = [(f"step:{scope}", k) for k, v in values.items() if v is None]
        if gone:
            self.conn.executemany("DELETE FROM state WHERE scope = ? AND key = ?", gone)
        kept = [(f"step:{scope}", k, v, expires_at) for k, v in values.items() if v is not None]
        if kept:
            self.conn.executemany(
                "INSERT INTO state (scope, key, value, expires_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (scope, key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at",
                kept,
            )

    def mark_seen(self, consumer: str, keys: Iterable[str]) -> None:
        now = self.now
        self.conn.executemany(
            "INSERT INTO seen (consumer, key, seen_at) VALUES (?, ?, ?) "
            "ON CONFLICT (consumer, key) DO UPDATE SET seen_at = excluded.seen_at",
            [(consumer, k, now) for k in keys],
        )
