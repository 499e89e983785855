"""An adapter that misbehaves in ``deliver()`` as buggy plugins do, for the supervision and
drain tests (``COUPLER_EXTRA_PLUGINS=tests.bus.plugin_faulty``).

``faulty`` (outbound) appends each body to ``OUT/delivered.txt`` (option ``directory``),
except: ``exit`` raises SystemExit, ``interrupt`` raises KeyboardInterrupt, ``hang`` blocks
for ever on its first attempt (writing ``OUT/hanging`` first) and is delivered on the next.
"""

from __future__ import annotations

import threading
from pathlib import Path

from coupler.bus.api import Adapter
from coupler.bus.plugins.hookspecs import hookimpl
from coupler.canonical import Envelope


class FaultyAdapter(Adapter):
    type_name = "faulty"
    directions = ("outbound",)

    def deliver(self, envelope: Envelope) -> None:
        out = Path(self.options["directory"])
        out.mkdir(parents=True, exist_ok=True)
        body = envelope.body.decode()
        if body == "exit":
            raise SystemExit(3)
        if body == "interrupt":
            raise KeyboardInterrupt
        if body == "hang" and envelope.attempt <= 1:
            with open(out / "hanging", "a") as f:
                f.write(f"{envelope.message_id}\n")
            threading.Event().wait()
        with open(out / "delivered.txt", "a") as f:
            f.write(body + "\n")


@hookimpl
def coupler_adapter_types() -> dict[str, type]:
    return {"faulty": FaultyAdapter}
