"""What the daemon's network servers log when clients misbehave: the logger handed to aiohttp's
HTTP servers (the http and SOAP adapters, the console), and the exception handler of the event
loops they and the socket adapter run on (:func:`quiet_accept_errors`).

aiohttp logs what it cannot hand to a handler - a malformed request (a bad request line, an
overflowing chunk size), a connection lost in the middle of a body - with ``logger.exception``:
an ERROR record with a traceback for what is an ordinary client's misbehaviour. Through
:class:`OneLineServerLog` that is one WARNING line naming the place, the client and what was
wrong (the traceback at DEBUG); anything else aiohttp reports is one ERROR line naming the
exception and the code that raised it.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from collections.abc import MutableMapping
from typing import Any

from .errors import describe_exception


def client_fault(exc: BaseException) -> bool:
    """Whether ``exc`` is the client's doing: a malformed request (aiohttp's
    HttpProcessingError subclasses carry a 4xx ``code``; its RequestPayloadError, a body not
    in its Content-Encoding, has such an error as its cause) or a connection lost or reset."""
    seen: BaseException | None = exc
    for _ in range(4):  # the exception and its causes
        if seen is None:
            return False
        if isinstance(seen, ConnectionError | asyncio.CancelledError | asyncio.IncompleteReadError | EOFError):
            return True
        code = getattr(seen, "code", None)
        if isinstance(code, int) and 400 <= code < 500:
            return True
        seen = seen.__cause__
    return False


class OneLineServerLog(logging.LoggerAdapter):
    """A server's log (``where``: the adapter or console it belongs to) without tracebacks."""

    def __init__(self, logger: logging.Logger, where: str):
        super().__init__(logger, {})
        self.where = where

    def process(self, msg: Any, kwargs: MutableMapping[str, Any]) -> tuple[Any, MutableMapping[str, Any]]:
        return msg, kwargs

    def log(self, level: int, msg: object, *args: object, **kwargs: Any) -> None:
        exc_info = kwargs.pop("exc_info", None)
        exc = sys.exc_info()[1] if exc_info is True else exc_info[1] if isinstance(exc_info, tuple) else exc_info
        if not isinstance(exc, BaseException) or level < logging.ERROR:
            self.logger.log(level, msg, *args, exc_info=exc_info, **kwargs)
            return
        text = str(msg) % args if args else str(msg)
        cause = " ".join(str(exc).split()) or type(exc).__name__
        if client_fault(exc):
            self.logger.warning("%s: %s: %s: %s", self.where, text, type(exc).__name__, cause[:300],
                                **kwargs)
        else:
            self.logger.error("%s: %s: %s", self.where, text, describe_exception(exc)[:500], **kwargs)
        self.logger.debug("%s: the error above in full", self.where, exc_info=exc)


#: how often a server's lasting refusals (no file descriptor left, too many connections) are
#: reported while they last
ACCEPT_REPORT_SECONDS = 10.0


class Throttled:
    """When to report something that happens many times a second while it lasts: the first
    time, then at most once every ``seconds``."""

    def __init__(self, seconds: float = ACCEPT_REPORT_SECONDS):
        self.seconds = seconds
        self.last = -seconds
        self.more = 0

    def due(self) -> int | None:
        """None if this time goes unreported; else how many went unreported since the last report."""
        now = time.monotonic()
        if now - self.last < self.seconds:
            self.more += 1
            return None
        more, self.last, self.more = self.more, now, 0
        return more


def quiet_accept_errors(loop: asyncio.AbstractEventLoop, logger: logging.Logger, where: str) -> None:
    """Report what asyncio's servers on ``loop`` cannot help in one line, not a traceback each.

    When the process has no file descriptor left (``ulimit -n``), asyncio logs
    "socket.accept() out of system resource" with a traceback for every connection waiting in
    the listen queue and tries again a second later (thousands a second under a flood of
    connections), and at shutdown each retry still pending logs a ValueError of the closed
    socket. The first becomes one WARNING line every ``ACCEPT_REPORT_SECONDS`` saying what to
    do, the second a DEBUG line; anything else goes to asyncio's default handler.
    """
    report = Throttled()

    def handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        message = str(context.get("message", ""))
        if isinstance(exc, OSError) and "out of system resource" in message:
            more = report.due()
            if more is None:
                return
            since = f"; {more} more refusals since the last report" if more else ""
            logger.warning("%s: cannot accept connections: %s (no file descriptor left); trying again every "
                           "second%s. Raise the open-files limit (ulimit -n, systemd LimitNOFILE) or find the "
                           "client holding so many connections", where, exc.strerror or exc, since)
            return
        if isinstance(exc, ValueError) and "_start_serving" in str(context.get("handle", "")):
            logger.debug("%s: a retry to accept connections on a closed server: %s", where, exc)
            return
        loop.default_exception_handler(context)

    loop.set_exception_handler(handler)
