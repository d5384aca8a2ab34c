"""A loopback HTTP server (127.0.0.1 only) that plays provider responses in order and
records every request, for the model tests and the P9 benchmark."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "providers"


def fixture(protocol: str, name: str) -> str:
    return (FIXTURES / protocol / name).read_text()


@dataclass
class Reply:
    """One response: a status, a body and headers (SSE when the body is a stream)."""

    body: str
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, protocol: str, name: str, status: int = 200, /, **headers: str) -> Reply:
        kind = "text/event-stream" if name.endswith(".sse") else "application/json"
        return cls(fixture(protocol, name), status, {"content-type": kind, **headers})


@dataclass
class Seen:
    """A request as the server received it."""

    path: str
    headers: dict[str, str]
    body: dict[str, object]


class ProviderServer:
    def __init__(self, replies: list[Reply]) -> None:
        self.replies = list(replies)
        self.seen: list[Seen] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                length = int(self.headers.get("content-length", "0"))
                raw = self.rfile.read(length)
                with server.lock:
                    server.seen.append(
                        Seen(self.path, {k.lower(): v for k, v in self.headers.items()}, json.loads(raw or b"{}"))
                    )
                    reply = server.replies.pop(0) if server.replies else Reply('{"error": "no reply left"}', 500)
                data = reply.body.encode()
                self.send_response(reply.status)
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (http.server's name)
                return None

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}"

    def add(self, *replies: Reply) -> None:
        with self.lock:
            self.replies.extend(replies)


@contextmanager
def serving(*replies: Reply) -> Iterator[ProviderServer]:
    server = ProviderServer(list(replies))
    thread = threading.Thread(target=server.http.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.http.shutdown()
        server.http.server_close()
