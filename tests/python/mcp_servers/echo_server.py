"""An MCP server on the official Python SDK, for the client tests: plain tools, a tool
error, a slow tool (for cancellation), and a tool that changes the tool list.

    python echo_server.py [--crash-on-call] [--garbage]
"""

from __future__ import annotations

import asyncio
import os
import sys

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

if "--garbage" in sys.argv:
    print("this is not JSON-RPC", flush=True)
    sys.exit(3)

server = MCPServer("echo")


@server.tool()
def add(left: int, right: int) -> int:
    """Add two integers."""
    return left + right


@server.tool()
def shout(text: str) -> str:
    """Upper-case a text."""
    if "--crash-on-call" in sys.argv:
        print("about to crash", file=sys.stderr, flush=True)
        os._exit(7)  # dies at once, mid-call (sys.exit in a tool would only end its thread)
    return text.upper()


@server.tool()
def refuse() -> str:
    """Always fails."""
    raise ToolError("the vault is locked")


@server.tool()
async def slow(seconds: float) -> str:
    """Sleep, then answer."""
    await asyncio.sleep(seconds)
    return "slept"


if __name__ == "__main__":
    server.run()
