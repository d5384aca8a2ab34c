"""An MCP server on the official Python SDK whose one tool returns every kind of content
block, for the client's rich-content test.

    python media_server.py
"""

from __future__ import annotations

from mcp import types
from mcp.server.mcpserver import MCPServer

server = MCPServer("media")


@server.tool(structured_output=False)
def media() -> list[types.ContentBlock]:
    """Returns text, an image, audio, a resource link and two embedded resources."""
    return [
        types.TextContent(type="text", text="a picture"),
        types.ImageContent(type="image", data="iVBORw==", mime_type="image/png"),
        types.AudioContent(type="audio", data="UklGRg==", mime_type="audio/wav"),
        types.ResourceLink(type="resource_link", uri="file:///a.txt", name="a", description="A"),
        types.EmbeddedResource(
            type="resource",
            resource=types.TextResourceContents(uri="file:///b.txt", mime_type="text/plain", text="bee"),
        ),
        types.EmbeddedResource(
            type="resource",
            resource=types.BlobResourceContents(uri="file:///r.pdf", mime_type="application/pdf", blob="JVBERi0="),
        ),
    ]


if __name__ == "__main__":
    server.run()
