"""P9's loopback server (127.0.0.1, its own process so its CPU is not counted): an
OpenAI-compatible `/v1/chat/completions` that streams one answer of `CHUNKS` SSE chunks
(text deltas, then one tool call whose arguments arrive in pieces) and, once the tool's
return is in the conversation, a short final answer.

    python sse_server.py   # prints the port, serves until killed
"""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CHUNKS = 2_000
BASE = {"id": "chatcmpl-p9", "object": "chat.completion.chunk", "created": 1, "model": "bench"}


def chunk(delta: dict[str, object], finish: str | None = None) -> bytes:
    body = {**BASE, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps(body).encode() + b"\n\n"


def long_answer() -> bytes:
    half = CHUNKS // 2
    parts = [chunk({"role": "assistant", "content": ""})]
    parts += [chunk({"content": f"word{i} "}) for i in range(half - 1)]
    parts.append(
        chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "echo", "arguments": '{"text": "'},
                    }
                ]
            }
        )
    )
    parts += [chunk({"tool_calls": [{"index": 0, "function": {"arguments": f"p{i}"}}]}) for i in range(half - 2)]
    parts.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"}'}}]}, "tool_calls"))
    return b"".join(parts) + b"data: [DONE]\n\n"


def final_answer() -> bytes:
    return chunk({"role": "assistant", "content": "done"}) + chunk({}, "stop") + b"data: [DONE]\n\n"


LONG, FINAL = long_answer(), final_answer()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))))
        answered = any(m.get("role") == "tool" for m in body.get("messages", []))
        data = FINAL if answered else LONG
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (http.server's name)
        return None


if __name__ == "__main__":
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()
