"""The step contract: :class:`Step`, what it is built with (:class:`StepSetup`) and what it
handles a message with (:class:`StepContext`). See the package docstring for how to write one."""

from __future__ import annotations

import abc
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, TypeVar, cast

from coupler.bus.config.loader import ConfigError
from coupler.bus.model.selectors import BodyReader, Expression, Selector
from coupler.bus.transport.base import Delivery, TransactionOps, Transport
from coupler.canonical import Envelope
from coupler.canonical.errors import CouplerError
from coupler.canonical.options import OptionsModel

from .outcomes import Outcome


class StepError(CouplerError):
    """A message a step cannot handle (a body that cannot be read, a missing field): the
    delivery goes to the Invalid Message Channel with this reason."""


class NoOptions(OptionsModel):
    """A step type without keys of its own."""


class Switches:
    """Run-time on/off switches of steps (Detour), set from the Control Bus: ``route/step`` -> on."""

    def __init__(self) -> None:
        self._on: dict[str, bool] = {}
        self._lock = threading.Lock()

    def get(self, key: str, default: bool) -> bool:
        with self._lock:
            return self._on.get(key, default)

    def set(self, key: str, on: bool) -> None:
        with self._lock:
            self._on[key] = on

    def known(self) -> dict[str, bool]:
        with self._lock:
            return dict(self._on)


@dataclass
class StepSetup:
    """What a step type is built with (once, when the daemon starts or checks the site)."""

    route: str
    index: int
    key_path: str
    site_dir: Path = Path(".")
    #: the site's schema registry, loaded on first use
    registry: Callable[[], Any] = field(default=lambda: None)
    #: the transport (for what a stateful step prepares once); None in a dry check
    transport: Transport | None = None
    switches: Switches = field(default_factory=Switches)
    #: the step's name (``name = ...``, default ``TYPE-INDEX``)
    name: str = ""
    #: the site's plugin manager (translator types, mapping functions), None in unit tests
    plugins: Any = None
    #: outbound adapter name -> the channel it delivers (a Dynamic Router by identity)
    adapter_channels: dict[str, str] = field(default_factory=dict)
    #: the site's ``[schemas] paths`` (absolute): with :attr:`site_dir`, the directories the XSD of
    #: a step's mapping may read (``coupler.bus.config.loader.site_schema_roots``)
    schema_dirs: tuple[Path, ...] = ()

    def site_path(self, path: str) -> Path:
        """A file named in the step's keys: relative to site.toml."""
        p = Path(path).expanduser()
        return p if p.is_absolute() else self.site_dir / p

    @property
    def state_scope(self) -> str:
        """The key of this step's state in the store: ``route/step``."""
        return f"{self.route}/{self.name}"

    def body_reader(self) -> BodyReader:
        return BodyReader(self.registry)

    def condition(self, text: str, key: str = "when") -> Selector:
        """A condition of the expression language (headers, properties, ``body.x.y``,
        ``xpath('...')``); a bad one is a :class:`ConfigError` naming the key."""
        try:
            return Selector.parse(text, body=self.body_reader())
        except CouplerError as exc:
            raise self.problem(key, str(exc)) from None

    def expression(self, text: str, key: str) -> Expression:
        """A value of the expression language (a field: ``body.customer.id``, ``properties.x``,
        ``xpath('/order/@id')``)."""
        try:
            return Expression.parse(text, body=self.body_reader())
        except CouplerError as exc:
            raise self.problem(key, str(exc)) from None

    def problem(self, key: str, message: str) -> ConfigError:
        return ConfigError([f"{self.key_path}.{key}: {message}"])


T = TypeVar("T")


class TxScope:
    """What the steps keep for the rest of one transaction, and their writes left for its end
    (:meth:`StepContext.defer`): a step that reads and rewrites the same state for every
    delivery of a batch (an Aggregator's group header) reads it once and writes it once."""

    def __init__(self) -> None:
        self._kept: dict[str, Any] = {}
        self._flushes: list[Callable[[], None]] = []

    def get(self, name: str, make: Callable[[], T], flush: Callable[[T], None]) -> T:
        if name not in self._kept:
            it = self._kept[name] = make()
            self._flushes.append(lambda: flush(it))
        return cast(T, self._kept[name])

    def kept(self, name: str) -> Any:
        """The object ``name`` if :meth:`get` made it already in this transaction, else None."""
        return self._kept.get(name)

    def flush(self) -> None:
        """Write what the steps left for the end of the transaction (before it commits)."""
        for f in self._flushes:
            f()
        self._flushes.clear()
        self._kept.clear()


@dataclass
class StepContext:
    """What a step handles one message with."""

    #: the consume-and-produce transaction: what is sent and state written through it commits
    #: with the acknowledgement of the delivery
    tx: TransactionOps
    route: str
    delivery: Delivery | None = None
    #: a Test Message run (``coupler ctl test``): nothing is committed
    test: bool = False
    #: ``(step label, counter)`` -> messages dropped on purpose in this transaction (counted once
    #: it commits: a delivery rolled back and redelivered is not counted twice)
    dropped: Counter[tuple[str, str]] = field(default_factory=Counter)
    #: what a step counts once this transaction commits (an aggregate's completion reason)
    committed: list[Callable[[], None]] = field(default_factory=list)
    #: ``(step, reason)`` of each message a step discarded, journaled with the acknowledgement
    #: of the delivery (the trace shows why the message ended)
    discarded: list[tuple[str, str]] = field(default_factory=list)
    #: messages the route sent on (to its channels) in this transaction
    sent: int = 0
    #: the deliveries of one transaction (a route worker's batch) share this: what a step keeps
    #: for the rest of the transaction, and the writes it left for its end (:meth:`defer`);
    #: None (a timer, an operator's action, a Test Message): a step writes at once
    scope: TxScope | None = None

    def defer(self, name: str, make: Callable[[], T], flush: Callable[[T], None]) -> T | None:
        """The object ``name`` this transaction keeps for a step (``make()`` on first use,
        ``flush(it)`` run once before the commit, after the last delivery); None when the
        context has no transaction scope (the step then writes at once)."""
        if self.scope is None:
            return None
        return self.scope.get(name, make, flush)

    def send(self, channel: str, message: Envelope, component: str | None = None) -> None:
        """Send ``message`` to ``channel`` in the transaction (a Wire Tap's copy)."""
        self.tx.send(channel, message, component=component or f"route:{self.route}")


class Step(abc.ABC):
    """A step type: one job on one message at a time."""

    #: the name site.toml's ``type = "..."`` refers to
    type_name: ClassVar[str] = ""
    #: its keys in ``[[routes.steps]]`` (besides ``type`` and ``name``)
    options_model: ClassVar[type[OptionsModel]] = NoOptions
    #: keeps state in the store (see the package docstring)
    stateful: ClassVar[bool] = False
    #: call :meth:`on_timer` this often (0: never); a step may set it from its options
    timer_seconds: float = 0.0

    def __init__(self, options: Any, setup: StepSetup):
        self.options = options
        self.setup = setup

    @property
    def label(self) -> str:
        label: str | None = self.__dict__.get("_label")
        if label is None:
            label = self.__dict__["_label"] = f"step {self.setup.index} {self.type_name}"
        return label

    @abc.abstractmethod
    def process(self, message: Envelope, ctx: StepContext) -> Outcome:
        """One message in, its outcome out."""

    def on_timer(self, ctx: StepContext) -> Outcome | None:
        """Time-driven work (``timer_seconds``); what it returns continues after this step."""
        return None

    def wake_at(self) -> float | None:
        """When (``time.time()``) this step knows its :meth:`on_timer` has work, if sooner than
        its next ``timer_seconds`` tick: an Aggregator's earliest time-out of the groups this
        process wrote. None: nothing known (the ticks go on)."""
        return None


__all__ = ["NoOptions", "Step", "StepContext", "StepError", "StepSetup", "Switches", "TxScope"]
