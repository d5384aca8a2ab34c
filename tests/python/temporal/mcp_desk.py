"""An MCP server (on the official Python SDK) for the Temporal tests' MCP agent: a lookup,
and a call that leaves its worker's pid (the server's parent) in
$STARWEAVER_HANG_MARKER, then takes its time."""

from __future__ import annotations

import asyncio
import os

from mcp.server.mcpserver import MCPServer

server = MCPServer("desk")


@server.tool()
def lookup(order: int) -> str:
    """Look up an order."""
    return f"order {order}: shipped"


@server.tool()
async def hang() -> str:
    """Takes three seconds."""
    worker = os.getppid()
    marker = os.environ.get("STARWEAVER_HANG_MARKER")
    if marker:
        with open(marker, "a") as out:
            out.write(f"{worker}\n")
    await asyncio.sleep(3)
    return f"finished under {worker}"


if __name__ == "__main__":
    server.run()
