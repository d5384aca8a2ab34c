"""P10's trivial tool, served by `python -m starweaver serve-mcp` (ours) and by the official
Python SDK's server (`python mcp_tools.py --sdk`)."""

from __future__ import annotations

import sys

if "--sdk" in sys.argv:
    from mcp.server.mcpserver import MCPServer

    sdk = MCPServer("bench")

    @sdk.tool()
    def echo(text: str) -> str:
        """Echo the text."""
        return text

    sdk.run()
else:
    from starweaver import tool

    @tool
    def echo(text: str) -> str:
        """Echo the text."""
        return text
