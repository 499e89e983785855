"""Sites of the console tests: a file drop in, a channel, a file drop out, the console on."""

from __future__ import annotations

from pathlib import Path

from tests.bus.site_helpers import write_site


def console_site(tmp_path: Path, *, listen: str = "127.0.0.1:0", extra: str = "") -> Path:
    """``drop-in`` (directory ``in``) -> channel ``orders`` -> ``drop-out`` (directory ``out``)."""
    for d in ("in", "out"):
        (tmp_path / d).mkdir(parents=True, exist_ok=True)
    return write_site(tmp_path, f"""
[site]
name = "console-test"
[http]
listen = "{listen}"
[monitor]
interval_seconds = 0.2
[store.redelivery]
max_attempts = 1

[[adapters]]
name = "drop-in"
type = "filedrop"
direction = "inbound"
channel = "orders"
format = "acme.Order@1"
[adapters.options]
directory = "{tmp_path / 'in'}"
stable_seconds = 0
poll_interval = 0.1
max_poll_interval = 0.2

[[adapters]]
name = "drop-out"
type = "filedrop"
direction = "outbound"
channel = "orders"
[adapters.options]
directory = "{tmp_path / 'out'}"
file_name = "{{prop.file.name}}"
{extra}
""")
