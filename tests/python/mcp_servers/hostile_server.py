"""A raw JSON-RPC MCP server over stdio that misbehaves in the one way its first argument
names, for the client's hostile-peer tests; otherwise it serves one tool, `echo`.

    python hostile_server.py MODE [PID_FILE]

Modes: `init-error`, `init-hang`, `list-hang`, `wrong-id`, `half-line`, `endless-pages`,
`deep-schema`, `bad-tool`, `hang-second-call`, `hung` (ignores SIGTERM and stdin's end
once called; writes its pid to PID_FILE), `noisy` (256 KiB of non-UTF-8 stderr per call).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from typing import Any

MODE = sys.argv[1]
TOOL = {"name": "echo", "description": "Echo.", "inputSchema": {"type": "object", "properties": {}}}


def write(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def answer(id_: Any, result: dict[str, Any]) -> None:
    write(json.dumps({"jsonrpc": "2.0", "id": id_, "result": result}))


def deep_schema(levels: int) -> str:
    """A tool list whose one schema nests `levels` deep (past `json`'s own recursion limit)."""
    schema = '{"type": "object", "properties": {"a": ' * levels + "{}" + "}}" * levels
    return '{"tools": [{"name": "deep", "inputSchema": %s}]}' % schema


calls = 0
for line in sys.stdin:
    message = json.loads(line)
    method, id_ = message.get("method"), message.get("id")
    if id_ is None or method is None:
        continue
    if method == "initialize":
        if MODE == "init-hang":
            continue
        if MODE == "init-error":
            write(json.dumps({"jsonrpc": "2.0", "id": id_, "error": {"code": -32603, "message": "cannot start"}}))
            continue
        version = message["params"]["protocolVersion"]
        answer(
            id_,
            {
                "protocolVersion": version,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "hostile", "version": "0"},
            },
        )
    elif method == "tools/list":
        if MODE == "list-hang":
            continue
        if MODE == "wrong-id":
            answer(id_ + 1000, {"tools": [TOOL]})
        elif MODE == "half-line":
            write('{"jsonrpc": "2.0", "id": %d, "resu' % id_)
        elif MODE == "endless-pages":
            answer(id_, {"tools": [TOOL], "nextCursor": f"page-{id_}"})
        elif MODE == "deep-schema":
            write('{"jsonrpc": "2.0", "id": %d, "result": %s}' % (id_, deep_schema(3000)))
        elif MODE == "bad-tool":
            bad = {"name": "no spaces allowed", "inputSchema": {"type": "object"}}
            answer(id_, {"tools": [bad, TOOL, TOOL]})
        else:
            answer(id_, {"tools": [TOOL]})
    elif method == "tools/call":
        calls += 1
        if MODE == "hang-second-call" and calls == 2:
            continue
        if MODE == "hung":
            with open(sys.argv[2], "w") as pid_file:
                pid_file.write(str(os.getpid()))
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            time.sleep(3600)
        if MODE == "noisy":
            os.write(2, bytes(range(128, 256)) * 2048)
        answer(id_, {"content": [{"type": "text", "text": "echoed"}]})
    else:
        write(json.dumps({"jsonrpc": "2.0", "id": id_, "error": {"code": -32601, "message": method}}))
