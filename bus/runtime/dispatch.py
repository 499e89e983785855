"""Command dispatch: which adapters a common command goes to (Message Dispatcher)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Servant:
    """What the dispatcher knows of an adapter: the commands it serves and for which targets."""

    name: str
    commands: tuple[str, ...]
    targets: tuple[str, ...] = ()

    def serves(self, command: str, target: str) -> bool:
        return command in self.commands and (target == self.name or target in self.targets)


class Dispatcher:
    """Message Dispatcher of the common command set: which adapters a command goes to.

    A command goes to every adapter that declares the command for the target (its name or
    one of its ``targets``). When none does, ``resolve_identity`` (Application Identity
    addressing) may name adapters whose identity matches the target.
    """

    def __init__(
        self,
        servants: Callable[[], Iterable[Servant]],
        resolve_identity: Callable[[str], list[str]] | None = None,
    ):
        self._servants = servants
        self._resolve_identity = resolve_identity

    def recipients(self, command: str, target: str) -> list[str]:
        servants = list(self._servants())
        names = [s.name for s in servants if s.serves(command, target)]
        if names or self._resolve_identity is None:
            return names
        by_name = {s.name: s for s in servants}
        return [n for n in self._resolve_identity(target) if n in by_name and command in by_name[n].commands]

    def unserved_reason(self, command: str, target: str) -> str:
        servants = list(self._servants())
        for_target = [s.name for s in servants if target == s.name or target in s.targets]
        if for_target:
            return (
                f"no adapter serves {command!r} for target {target!r} "
                f"(adapters for that target: {', '.join(for_target)}; none declares {command!r})"
            )
        known = sorted({t for s in servants for t in (s.name, *s.targets)})
        return f"no adapter serves {command!r} for target {target!r} (known targets: {', '.join(known) or 'none'})"
