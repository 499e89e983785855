"""Fixed-width (copybook) records over a socket, against a service that reads bytes by offset."""

from __future__ import annotations

import json
import socketserver
import threading
from pathlib import Path

from coupler.adapters.socket import SocketAdapter
from coupler.bus.api import Document
from coupler.bus.model.commands import command_envelope, parse_command
from coupler.canonical import FormatIndicator

DATA = Path(__file__).parent / "data"


class _Service(socketserver.BaseRequestHandler):
    """QUOTE-REQ (15 bytes, EBCDIC) -> QUOTE-REPLY (15 bytes): premium = 1000 + 10 x age."""

    def handle(self):
        while True:
            data = b""
            while len(data) < 15:
                chunk = self.request.recv(15 - len(data))
                if not chunk:
                    return
                data += chunk
            policy, age = data[:8].decode("cp037"), int(data[8:11].decode("cp037"))
            premium = f"{(1000 + 10 * age) * 100:07d}"
            self.request.sendall((policy + premium).encode("cp037"))


def test_request_records_described_by_copybooks(bus):
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Service)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        adapter = SocketAdapter(
            "rating",
            {
                "mode": "client", "port": server.server_address[1], "framing": "fixed", "frame_length": 15,
                "translator": "copybook", "copybook_out": str(DATA / "quote-request.cpy"),
                "copybook_in": str(DATA / "quote-reply.cpy"),
            },
            bus.context("rating"),
        )
        adapter.format = FormatIndicator("acme.QuoteRequest", 1, "application/json")
        bus.add(adapter)
        doc = Document(adapter.format, json.dumps({"POLICY_ID": "P-77", "DRIVER_AGE": 30}).encode())
        reply = adapter.handle(parse_command(command_envelope("request", "rating", document=doc)))
        assert json.loads(reply.documents[0].body) == {"POLICY_ID": "P-77", "PREMIUM": "1300.00"}
    finally:
        server.shutdown()
        server.server_close()
