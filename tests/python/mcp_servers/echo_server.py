"""An MCP server on the official Python SDK, for the client tests: plain tools, a tool
error, a slow tool (for cancellation), a tool that changes the tool list, one that
reports, and one that asks the client (elicitation, then sampling).

    python echo_server.py [--crash-on-call] [--garbage] [--http PORT]
"""

from __future__ import annotations

import asyncio
import os
import sys

from mcp import types
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel

if "--garbage" in sys.argv:
    print("this is not JSON-RPC", flush=True)
    sys.exit(3)

server = MCPServer("echo", instructions="Use `add` for arithmetic; never guess a sum.")


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
async def grow(ctx: Context) -> str:
    """Adds the tool `extra` and tells the client its tool list changed."""

    def extra() -> str:
        """A tool that was not there at first."""
        return "new"

    server.add_tool(extra)
    await ctx.session.send_tool_list_changed()
    return "grown"


@server.tool()
async def slow(seconds: float) -> str:
    """Sleep, then answer."""
    await asyncio.sleep(seconds)
    return "slept"


@server.tool()
async def copy(files: int, ctx: Context) -> str:
    """Copies `files` files, reporting progress after each and logging as it goes."""
    await ctx.info("copying")
    for done in range(files + 1):
        await ctx.report_progress(done, files, f"{done} of {files}")
    await ctx.warning("one file was empty")
    return f"copied {files}"


class Recipient(BaseModel):
    name: str
    greeting: str = "Hello"


@server.tool()
async def greet(ctx: Context) -> str:
    """Asks the user whom to greet (by elicitation), then the client's model for a line."""
    answer = await ctx.elicit("Whom shall I greet?", Recipient)
    if answer.action != "accept":
        return f"nobody greeted: {answer.action}"
    line = await ctx.session.create_message(
        [
            types.SamplingMessage(
                role="user", content=types.TextContent(type="text", text=f"A line for {answer.data.name}")
            )
        ],
        max_tokens=30,
    )
    text = line.content.text if isinstance(line.content, types.TextContent) else "?"
    return f"{answer.data.greeting}, {answer.data.name}! {text}"


if __name__ == "__main__":
    if "--http" in sys.argv:
        port = int(sys.argv[sys.argv.index("--http") + 1])
        server.run("streamable-http", host="127.0.0.1", port=port)
    else:
        server.run()
