"""The Application Repository of the embedded store (table ``identities``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from coupler.bus.model.identities import Identity, IdentityError, IdentityRepository, Registration

if TYPE_CHECKING:
    from coupler.bus.transport.sqlite.transport import SqliteTransport


class SqliteIdentityRepository(IdentityRepository):
    """The Application Repository in the embedded store's ``identities`` table."""

    def __init__(self, transport: SqliteTransport):
        self._t = transport

    def register(self, identity: Identity | str, channel: str, *, adapter: str | None = None) -> Registration:
        ident = Identity.parse(identity) if isinstance(identity, str) else identity
        if ident.cls is None:
            raise IdentityError("an application identity needs at least its class", where=str(ident))
        with self._t.transaction() as tx:
            conn = tx.conn  # type: ignore[attr-defined]
            conn.execute(
                "DELETE FROM identities WHERE class = ? AND provider IS ? AND name IS ? "
                "AND version IS ? AND channel = ?",
                (ident.cls, ident.provider, ident.name, ident.version, channel),
            )
            now = self._t.clock()
            cur = conn.execute(
                "INSERT INTO identities (class, provider, name, version, channel, adapter, registered_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (ident.cls, ident.provider, ident.name, ident.version, channel, adapter, now),
            )
            tx.journal(channel, None, "identity registered", str(ident))  # type: ignore[attr-defined]
            return Registration(int(cur.lastrowid or 0), ident, channel, adapter, now)

    def unregister(self, *, adapter: str | None = None, identity: Identity | str | None = None) -> int:
        """Remove the registrations of an adapter and/or of one exact identity."""
        clauses: list[str] = []
        args: list[str | None] = []
        if adapter is not None:
            clauses.append("adapter = ?")
            args.append(adapter)
        if identity is not None:
            ident = Identity.parse(identity) if isinstance(identity, str) else identity
            clauses.append("class = ? AND provider IS ? AND name IS ? AND version IS ?")
            args += [ident.cls, ident.provider, ident.name, ident.version]
        if not clauses:
            raise IdentityError("unregister needs an adapter or an identity")
        with self._t.transaction() as tx:
            return tx.conn.execute(  # type: ignore[attr-defined]
                f"DELETE FROM identities WHERE {' AND '.join(clauses)}", args
            ).rowcount

    def list(self) -> list[Registration]:
        conn = self._t._conn()
        rows = conn.execute(
            "SELECT id, class, provider, name, version, channel, adapter, registered_at "
            "FROM identities ORDER BY class, provider, name, version, id"
        ).fetchall()
        return [Registration(r[0], Identity(r[1], r[2], r[3], r[4]), r[5], r[6], r[7]) for r in rows]
