"""aiohttp's server log through OneLineServerLog: a client's malformed request or lost
connection is one WARNING line, a bug one ERROR line naming the code; the traceback only at
DEBUG."""

from __future__ import annotations

import logging

import pytest

from coupler.canonical.serverlog import OneLineServerLog


class BadHttpMessage(Exception):  # the shape of aiohttp.http_exceptions.BadHttpMessage
    code = 400


@pytest.mark.parametrize("exc", [BadHttpMessage("400, message:\n  Chunk size overflow"),
                                 ConnectionResetError("Connection lost")])
def test_a_clients_fault_is_one_warning_line(exc: Exception, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    log = OneLineServerLog(logging.getLogger("coupler.test"), "adapters[in]")
    log.exception("Error handling request from %s", "10.0.0.1", exc_info=exc)
    warning, debug = caplog.records
    assert warning.levelno == logging.WARNING and warning.exc_info is None
    assert warning.getMessage().startswith(f"adapters[in]: Error handling request from 10.0.0.1: {type(exc).__name__}: ")
    assert "\n" not in warning.getMessage()
    assert debug.levelno == logging.DEBUG and debug.exc_info is not None


def test_a_bug_is_one_error_line_naming_the_code(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    log = OneLineServerLog(logging.getLogger("coupler.test"), "console")
    try:
        1 / 0  # noqa: B018
    except ZeroDivisionError:
        log.exception("Error handling request from %s", "10.0.0.1")
    (error,) = caplog.records
    assert error.levelno == logging.ERROR and error.exc_info is None
    assert "ZeroDivisionError: division by zero (raised at test_serverlog.py:" in error.getMessage()
    log.info("other records pass %s", "unchanged")
    assert caplog.records[-1].getMessage() == "other records pass unchanged"
