"""A client sending faster than the bus answers is throttled, over plain TCP and over TLS: the
server stops reading while a frame waits for the bus, so TCP flow control pushes back on the
sender, its memory stays bounded whatever the client offers, and every frame is handled, in
order, once the bus catches up.

Under TLS the stream's pause reaches the raw socket beneath asyncio's SSL transport (after
``start_tls`` the StreamReader still pauses the socket's transport, and the SSL protocol resumes
only what it paused itself): with the StreamReader's limit lifted in server.py both cases take
all 48 MiB."""

from __future__ import annotations

import asyncio
import ssl
import threading
import time
import tracemalloc
from typing import Any

import pytest

from coupler.adapters.socket import SocketAdapter
from coupler.bus.api import Adapter, Command, Document, Reply
from coupler.translators.framing import LengthPrefixed
from tests.adapters.pki import make_pki
from tests.bus.site_helpers import wait_for

FRAME = 256 * 1024
FRAMES = 192  # 48 MiB offered; the kernel's socket buffers on loopback took 4-6 MiB of it unread
NUMBER = 8  # each frame starts with its number


class Gate(Adapter):
    """A slow system behind the bus: holds every request until opened, answers with its number."""

    type_name = "gate"
    commands = ("request",)

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.opened = threading.Event()
        self.seen: list[bytes] = []

    def on_request(self, command: Command) -> Reply:
        assert command.document is not None
        number = command.document.body[:NUMBER]
        self.seen.append(number)
        if not self.opened.wait(25):  # within the server's reply_timeout (30 s)
            raise AssertionError("the gate was never opened")
        return Reply(documents=[Document(command.document.format, number)])


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return make_pki(tmp_path_factory.mktemp("pki"))


class Client:
    """Sends FRAMES length-prefixed frames as fast as the server takes them (own event loop in a
    thread), reading the answers meanwhile; ``sent``: the bytes the server has taken so far."""

    def __init__(self, address: tuple[str, int], context: ssl.SSLContext | None):
        self.address, self.context = address, context
        self.sent = 0
        self.answers: list[bytes] = []
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._main, daemon=True)
        self.thread.start()

    def _main(self) -> None:
        try:
            asyncio.run(asyncio.wait_for(self._run(), 120))  # a hang guard, not a speed check
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.error = exc

    async def _run(self) -> None:
        framing = LengthPrefixed()
        reader, writer = await asyncio.open_connection(
            *self.address, ssl=self.context, server_hostname="127.0.0.1" if self.context else None)

        async def read() -> None:
            decoder = framing.decoder()
            while len(self.answers) < FRAMES:
                data = await reader.read(65536)
                assert data, f"closed after {len(self.answers)} answers"
                self.answers.extend(decoder.feed(data))

        answers = asyncio.create_task(read())
        filler = b"x" * (FRAME - NUMBER)
        for i in range(FRAMES):
            writer.write(framing.encode(b"%0*d" % (NUMBER, i) + filler))
            await writer.drain()  # waits while the server does not read
            self.sent += FRAME
        await answers
        writer.close()

    def stalled_for(self, seconds: float) -> Any:
        """A check for wait_for: true once ``sent`` has not grown for ``seconds``."""
        last = [self.sent, time.monotonic()]

        def check() -> bool:
            if self.sent != last[0]:
                last[:] = [self.sent, time.monotonic()]
            return time.monotonic() - last[1] >= seconds

        return check


@pytest.mark.parametrize("tls", [False, True], ids=["plain", "tls"])
def test_a_client_sending_faster_than_the_bus_answers_is_throttled_and_loses_nothing(bus, pki, tls):
    gate = Gate("gate", {}, bus.context("gate"))
    gate.targets = ("slow",)
    bus.add(gate)
    options: dict[str, Any] = {"mode": "server", "host": "127.0.0.1", "port": 0, "framing": "length",
                               "exchange": "request-reply", "target": "slow"}
    if tls:
        options["tls"] = {"cert": pki["server"][0], "key": pki["server"][1]}
    server = SocketAdapter("fast-in", options, bus.context("fast-in"))
    bus.add(server)
    context = ssl.create_default_context(cafile=pki["ca"]) if tls else None
    try:
        client = throttled_client(server, gate, context)
    finally:
        gate.opened.set()  # the bus catches up: every frame is handled and answered, in order
    client.thread.join(120)
    assert client.error is None, client.error
    numbers = [b"%0*d" % (NUMBER, i) for i in range(FRAMES)]
    assert gate.seen == numbers
    assert client.answers == numbers


def throttled_client(server: SocketAdapter, gate: Gate, context: ssl.SSLContext | None) -> Client:
    """A client sending to ``server`` while ``gate`` holds the first frame, once it is held back."""
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        client = Client(("127.0.0.1", server.address[1]), context)
        wait_for(lambda: gate.seen, "the first frame at the gate")
        # the server reads no further while the frame waits: the client is held back ...
        wait_for(client.stalled_for(1.0), "the client to be held back")
        held = client.sent
        _, peak = tracemalloc.get_traced_memory()
        assert client.error is None, client.error
        assert held < FRAMES * FRAME // 2, f"{held} bytes taken while the bus answered nothing"
        # ... and the server held a few frames of it, not what the client offered (0.8 MiB
        # traced in all plain, 1.8 MiB with TLS: asyncio's SSL buffer of 256 KiB included)
        assert peak - before < 8 * 1024 * 1024, f"{peak - before} bytes traced with {held} bytes sent"
        assert len(gate.seen) == 1
    finally:
        tracemalloc.stop()
    return client
