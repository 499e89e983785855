"""Testing an adapter without a daemon: a real embedded bus in a folder of its own.

For plugin authors' tests (and Coupler's own adapter suites)::

    from coupler.bus.testing import EmbeddedBus
    from coupler.canonical import Envelope, FormatIndicator

    def test_deliver_writes_a_file(tmp_path):
        with EmbeddedBus(tmp_path) as bus:
            adapter = bus.adapter(MyAdapter, "out", {"directory": "out"}, channel="notes")
            bus.deliver(adapter, Envelope(FormatIndicator("acme.Note", 1, "text/plain"), b"hi"))
            assert (tmp_path / "out").iterdir()

:class:`EmbeddedBus` opens the SQLite store the daemon uses (``store/`` under its folder) and
gives each adapter the context the daemon gives it (:class:`~coupler.bus.runtime.context.BusContext`):
``publish`` puts real messages on real channels, ``invalid`` real entries in the Invalid
Message Channel, ``file_state`` and ``remember`` real tables. :meth:`EmbeddedBus.adapter`
builds the adapter as the daemon does (options checked against the type's
``options_model`` as the site loader checks them, ``path_options`` made absolute against the
folder, which stands for site.toml's directory, the ``[[adapters]]`` attributes set) and
starts it; :meth:`published` and :meth:`invalid` read what it produced.

What the daemon adds around an adapter is not here: no worker threads (call
:meth:`deliver` or ``adapter.handle`` yourself), no site ``wrappers`` / ``mapping`` stages
and no redelivery (an exception from ``deliver`` reaches the test).

Adapters never import this module (``make lint`` checks it); their tests do.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, TypeVar, cast

from coupler.bus.model.adapter import Adapter, resolve_path_options
from coupler.bus.runtime.context import BusContext, Statistics, build_adapter
from coupler.bus.transport.base import DeadLetter
from coupler.bus.transport.sqlite.transport import SqliteTransport
from coupler.canonical import Envelope, FormatIndicator
from coupler.canonical.options import validate_options

__all__ = ["EmbeddedBus"]

A = TypeVar("A", bound=Adapter)

#: the consumer name :meth:`EmbeddedBus.published` receives as
_READER = "coupler.testing"


class EmbeddedBus:
    """The embedded store of a test site in ``root`` (a new temporary folder if None), and
    adapters on it. Use it as a context manager, or call :meth:`close`."""

    def __init__(self, root: Path | str | None = None):
        self.root = Path(root) if root is not None else Path(tempfile.mkdtemp(prefix="coupler-test-"))
        self.root.mkdir(parents=True, exist_ok=True)
        self.transport = SqliteTransport(self.root / "store", synchronous="NORMAL").open()
        self.statistics = Statistics()
        self._started: list[Adapter] = []

    # -- adapters ----------------------------------------------------------------------------

    def context(self, name: str, channel: str | None = None, type_name: str = "test",
                config: dict[str, Any] | None = None) -> BusContext:
        """The context the daemon gives adapter ``name`` (its data directory is
        ``adapters/NAME`` under the root, relative paths resolve against the root)."""
        data_dir = self.root / "adapters" / name
        data_dir.mkdir(parents=True, exist_ok=True)
        self.statistics.add(name, type_name)
        return BusContext(
            name=name, config=dict(config or {}), data_dir=data_dir, transport=self.transport,
            statistics=self.statistics, channel=channel, site_dir=self.root,
        )

    def adapter(
        self,
        cls: type[A],
        name: str = "test",
        options: dict[str, Any] | None = None,
        *,
        direction: str | None = None,
        channel: str | None = None,
        targets: tuple[str, ...] = (),
        identity: dict[str, str] | None = None,
        format: str | None = None,
        start: bool = True,
    ) -> A:
        """An adapter of type ``cls`` named ``name``, built and (unless ``start=False``) started
        as the daemon does it. Options that do not validate raise the
        :class:`~coupler.canonical.options.OptionsError` the site loader would report;
        ``direction`` defaults to the type's one direction (``both`` when it has two)."""
        options = dict(options or {})
        if cls.options_model is not None:
            validate_options(cls.options_model, options, prefix=f"adapters[{name}].options")
        options = resolve_path_options(options, tuple(cls.path_options), self.root)
        if direction is None:
            direction = cls.directions[0] if len(cls.directions) == 1 else "both"
        context = self.context(name, channel, cls.type_name, options)
        adapter = build_adapter(cls, name, options, context, direction=direction, targets=targets,
                                identity=identity, channel=channel, format=format)
        if start:
            adapter.start()
            self._started.append(adapter)
        return cast(A, adapter)

    def deliver(self, adapter: Adapter, envelope: Envelope | bytes,
                format: str = "test.Document@1;application/octet-stream") -> None:
        """Hand one document to an outbound adapter as its delivery worker does, counting it
        (IN, and OUT when ``deliver`` returns); bytes are wrapped in an envelope of ``format``.
        An exception from ``deliver`` is counted as failed and raised to the test."""
        if not isinstance(envelope, Envelope):
            envelope = Envelope(FormatIndicator.parse(format), bytes(envelope))
        self.statistics.count(adapter.name, "received")
        try:
            adapter.deliver(envelope)
        except Exception:
            self.statistics.count(adapter.name, "failed")
            raise
        self.statistics.count(adapter.name, "sent")

    def counters(self, name: str) -> dict[str, Any]:
        """``in``, ``out``, ``failed`` (and ``state``) of adapter ``name``, as ``ctl adapters --json``."""
        return next(row for row in self.statistics.snapshot() if row["name"] == name)

    # -- what the adapters produced ------------------------------------------------------------

    def put(self, channel: str, envelope: Envelope) -> str:
        """Put a message on ``channel`` (as ``coupler channel put`` does); returns its id."""
        (message_id,) = self.transport.send(channel, envelope, component="test")
        return message_id

    def published(self, channel: str) -> list[Envelope]:
        """Every message waiting on ``channel``, received and acknowledged, in order."""
        out: list[Envelope] = []
        while batch := self.transport.receive(channel, _READER, max=100):
            self.transport.ack(batch)
            out.extend(d.envelope for d in batch)
        return out

    def invalid(self, channel: str | None = None) -> list[DeadLetter]:
        """The Invalid Message Channel (of messages of ``channel``, or all), oldest first:
        each entry has the ``reason``, the ``component`` and the ``envelope`` or ``raw`` bytes."""
        letters = self.transport.dead_letters(kind="invalid", limit=10_000)
        return [d for d in reversed(letters) if channel is None or d.channel == channel]

    # -- the end -------------------------------------------------------------------------------

    def close(self) -> None:
        """Stop the adapters it started (newest first) and close the store."""
        while self._started:
            self._started.pop().stop()
        self.transport.close()

    def __enter__(self) -> EmbeddedBus:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
