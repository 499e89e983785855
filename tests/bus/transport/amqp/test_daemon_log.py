"""The daemon's log holds the site's lines, not pika's connection workflow at INFO."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from coupler.bus.runtime.logs import configure_logging
from tests.bus.transport.amqp.broker import amqp_transport, cleanup, servers_or_fail
from tests.bus.transport.contract.support import doc


@pytest.fixture
def restore_logging():
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    logging.getLogger("pika").setLevel(logging.NOTSET)


@pytest.mark.parametrize("level", ["INFO", "DEBUG"])
def test_pika_info_lines_stay_out_of_the_daemon_log_unless_debug(
    level: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], restore_logging: None
) -> None:
    servers_or_fail()
    configure_logging(level)
    transport = amqp_transport(tmp_path)
    try:
        transport.send("log-test", doc(b"x"))
        logging.getLogger("coupler.daemon").info("the site's own line")
    finally:
        cleanup(transport)
    err = capsys.readouterr().err
    assert "the site's own line" in err
    pika_lines = [line for line in err.splitlines() if " pika." in line or line.startswith("pika")]
    if level == "INFO":
        assert pika_lines == [], pika_lines
    else:  # asked for: the connection workflow is there
        assert pika_lines
