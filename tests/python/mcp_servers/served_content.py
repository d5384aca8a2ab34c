"""Tools returning content parts, served by `python -m starweaver serve-mcp` to the
official client's rich-content test."""

from __future__ import annotations

from starweaver import ToolResult, tool
from starweaver.content import Audio, Document, Image, Resource, ResourceLink, Text


@tool
def picture() -> Image:
    """Returns a PNG."""
    return Image(data=b"\x89PNG", media_type="image/png")


@tool
def everything() -> ToolResult:
    """Returns every kind of part, keeping a host-only value beside them."""
    return ToolResult(
        {"host": "only"},
        model_content=[
            Text("a picture"),
            Image(url="https://example.com/a.png"),
            Audio(data=b"RIFF", media_type="audio/wav"),
            Document(data=b"%PDF-", media_type="application/pdf", filename="r.pdf"),
            ResourceLink("file:///a.txt", "a", description="A", media_type="text/plain"),
            Resource("file:///b.txt", text="bee"),
            Resource("file:///c.bin", blob=b"\x00\x01", media_type="application/octet-stream"),
        ],
    )
