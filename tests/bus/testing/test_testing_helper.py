"""``coupler.bus.testing.EmbeddedBus``, the plugin authors' test helper, on an inbound adapter:
what it publishes and what it rejects land on the real store, as in a daemon."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from coupler.bus.api import Adapter, OptionsModel, Str, option
from coupler.bus.testing import EmbeddedBus
from coupler.canonical import Envelope, FormatIndicator
from coupler.canonical.options import OptionsError

LINE = FormatIndicator("test.Line", 1, "text/plain")


class ReaderOptions(OptionsModel):
    source: Str = option("The file whose lines are published.")


class LineReader(Adapter):
    """Publishes each line of its ``source`` file; a line that is not ASCII is invalid."""

    type_name = "line-reader"
    directions = ("inbound",)
    path_options = ("source",)
    options_model = ReaderOptions

    def __init__(self, name: str, options: dict[str, Any], context: Any = None):
        super().__init__(name, options, context)
        self.source = Path(self.parse_options(name, self.options).source)

    def start(self) -> None:
        assert self.context is not None
        for raw in self.source.read_bytes().splitlines():
            if raw.isascii():
                self.context.publish(Envelope(LINE, raw))
            else:
                self.context.invalid(raw, "not ASCII")


def test_published_and_invalid_messages_are_read_back_from_the_store(tmp_path: Path) -> None:
    (tmp_path / "lines.txt").write_bytes(b"one\ncaf\xc3\xa9\ntwo\n")
    with EmbeddedBus(tmp_path) as bus:
        bus.adapter(LineReader, "reader", {"source": "lines.txt"}, channel="lines")  # relative: the folder
        published = bus.published("lines")
        assert [e.body for e in published] == [b"one", b"two"]
        assert {e.origin for e in published} == {"reader"}
        assert bus.published("lines") == []  # taken
        (invalid,) = bus.invalid("lines")
        assert (invalid.raw, invalid.reason, invalid.component) == ("café".encode(), "not ASCII", "adapter:reader")
        assert bus.counters("reader")["out"] == 2 and bus.counters("reader")["failed"] == 1


def test_options_are_checked_as_the_site_loader_checks_them(tmp_path: Path) -> None:
    with EmbeddedBus(tmp_path) as bus, pytest.raises(OptionsError) as raised:
        bus.adapter(LineReader, "reader", {"sauce": "lines.txt"})
    assert "adapters[reader].options.sauce: unknown key (did you mean 'source'?)" in str(raised.value)
