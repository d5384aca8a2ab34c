"""An MCP server of the 2025-11-25 revision and no later, by hand on stdio: it knows
`initialize`, `tools/list` and `tools/call` (one tool, `add`), and answers any other
request, `server/discover` included, with "method not found"."""

from __future__ import annotations

import json
import sys

ADD = {
    "name": "add",
    "description": "Add two integers.",
    "inputSchema": {
        "type": "object",
        "properties": {"left": {"type": "integer"}, "right": {"type": "integer"}},
        "required": ["left", "right"],
    },
}


def answer(request: dict[str, object]) -> dict[str, object]:
    method, params = request.get("method"), request.get("params") or {}
    assert isinstance(params, dict)
    if method == "initialize":
        return {
            "result": {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "legacy", "version": "1"},
            }
        }
    if method == "tools/list":
        return {"result": {"tools": [ADD]}}
    if method == "tools/call":
        total = params["arguments"]["left"] + params["arguments"]["right"]
        return {"result": {"content": [{"type": "text", "text": str(total)}]}}
    if method == "ping":
        return {"result": {}}
    return {"error": {"code": -32601, "message": f"method not found: {method}"}}


for line in sys.stdin:
    message = json.loads(line)
    if "id" in message and "method" in message:
        print(json.dumps({"jsonrpc": "2.0", "id": message["id"], **answer(message)}), flush=True)
