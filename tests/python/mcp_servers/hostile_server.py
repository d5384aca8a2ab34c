"""A raw JSON-RPC MCP server over stdio that misbehaves as its script says, for the
client's hostile-peer tests and properties; otherwise it serves one tool, `echo`.

    python hostile_server.py SCRIPT [PID_FILE]

SCRIPT is a mode named in `MODES`, or a JSON object in their form: for `initialize`,
`tools/list` and `tools/call`, what to do at each request of that method (the n-th
request gets the n-th behaviour; the last one repeats), and `stderr`, how many bytes that
are not UTF-8 to write to stderr at each request. The behaviours:

- `ok`: a proper answer.
- `hang`: no answer at all.
- `error`: a JSON-RPC error.
- `wrong-id`: a proper answer to another id.
- `half-line`: half a message, then the line ends.
- `junk`: a line that is not JSON.
- `wrong-type`: a result that is a string, not an object.
- `exit`: the process exits (status 3).
- `endless-pages` (listing): one tool and a cursor to a next page, every time.
- `deep-schema` (listing): a schema nested 3,000 levels, past `json`'s recursion limit.
- `bad-tool` (listing): a tool with an invalid name and a duplicate beside `echo`.
- `tool-error` (call): an `isError` result.
- `hung` (call): writes its pid to PID_FILE, ignores SIGTERM and stdin's end, sleeps.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from typing import Any

MODES: dict[str, dict[str, Any]] = {
    "init-error": {"initialize": ["error"]},
    "init-hang": {"initialize": ["hang"]},
    "list-hang": {"tools/list": ["hang"]},
    "wrong-id": {"tools/list": ["wrong-id"]},
    "half-line": {"tools/list": ["half-line"]},
    "endless-pages": {"tools/list": ["endless-pages"]},
    "deep-schema": {"tools/list": ["deep-schema"]},
    "bad-tool": {"tools/list": ["bad-tool"]},
    "hang-second-call": {"tools/call": ["ok", "hang", "ok"]},
    "hung": {"tools/call": ["hung"]},
    "noisy": {"stderr": 256 * 1024},
}
SCRIPT: dict[str, Any] = MODES.get(sys.argv[1]) or json.loads(sys.argv[1])
TOOL = {"name": "echo", "description": "Echo.", "inputSchema": {"type": "object", "properties": {}}}


def write(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def answer(id_: Any, result: Any) -> None:
    write(json.dumps({"jsonrpc": "2.0", "id": id_, "result": result}))


def deep_schema(levels: int) -> str:
    """A tool list whose one schema nests `levels` deep."""
    schema = '{"type": "object", "properties": {"a": ' * levels + "{}" + "}}" * levels
    return '{"tools": [{"name": "deep", "inputSchema": %s}]}' % schema


def proper(method: str, message: dict[str, Any]) -> Any:
    """What a well-behaved server answers to `method`."""
    if method == "initialize":
        version = message["params"]["protocolVersion"]
        info = {"name": "hostile", "version": "0"}
        return {"protocolVersion": version, "capabilities": {"tools": {}}, "serverInfo": info}
    if method == "tools/list":
        return {"tools": [TOOL]}
    return {"content": [{"type": "text", "text": "echoed"}]}


def behave(behaviour: str, method: str, message: dict[str, Any]) -> None:
    id_ = message["id"]
    if behaviour == "hang":
        return
    if behaviour == "exit":
        sys.exit(3)
    if behaviour == "hung":
        with open(sys.argv[2], "w") as pid_file:
            pid_file.write(str(os.getpid()))
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        time.sleep(3600)
    if behaviour == "error":
        write(json.dumps({"jsonrpc": "2.0", "id": id_, "error": {"code": -32603, "message": "cannot do that"}}))
    elif behaviour == "wrong-id":
        answer(id_ + 1000, proper(method, message))
    elif behaviour == "half-line":
        write('{"jsonrpc": "2.0", "id": %d, "resu' % id_)
    elif behaviour == "junk":
        write("this line is not JSON")
    elif behaviour == "wrong-type":
        answer(id_, "a result that is not an object")
    elif behaviour == "endless-pages":
        answer(id_, {"tools": [TOOL], "nextCursor": f"page-{id_}"})
    elif behaviour == "deep-schema":
        write('{"jsonrpc": "2.0", "id": %d, "result": %s}' % (id_, deep_schema(3000)))
    elif behaviour == "bad-tool":
        answer(id_, {"tools": [{"name": "no spaces allowed", "inputSchema": {"type": "object"}}, TOOL, TOOL]})
    elif behaviour == "tool-error":
        answer(id_, {"content": [{"type": "text", "text": "the tool failed"}], "isError": True})
    else:
        answer(id_, proper(method, message))


seen: dict[str, int] = {}
for line in sys.stdin:
    message = json.loads(line)
    method, id_ = message.get("method"), message.get("id")
    if id_ is None or method is None:
        continue
    if SCRIPT.get("stderr"):
        os.write(2, bytes(range(128, 256)) * (SCRIPT["stderr"] // 128))
    if method not in ("initialize", "tools/list", "tools/call"):
        write(json.dumps({"jsonrpc": "2.0", "id": id_, "error": {"code": -32601, "message": method}}))
        continue
    behaviours = SCRIPT.get(method, ["ok"])
    n = seen[method] = seen.get(method, 0) + 1
    behave(behaviours[min(n, len(behaviours)) - 1], method, message)
