"""The "everything" server of the MCP conformance suite, as far as starweaver serves it
today: `python -m starweaver serve-mcp tests/conformance/everything.py --http HOST:PORT`.

The suite's server scenarios call tools by fixed names (`test_simple_text`,
`test_error_handling`, ...). Only the tools our public API can write are here; the
scenarios that need what serve-mcp does not offer yet (sampling,
elicitation from a tool, resources, prompts, completions) are listed, each with its
reason, in `expected-failures.txt`.
"""

from __future__ import annotations

import asyncio
import base64

from starweaver import ToolContext, UserError, tool
from starweaver.content import Audio, Image, Resource, Text


@tool
def test_simple_text() -> str:
    """Returns a simple text response."""
    return "This is a simple text response for testing."


@tool
def test_error_handling() -> str:
    """Always fails, so the client sees an error result."""
    raise UserError("This tool intentionally returns an error for testing")


# What the content scenarios expect back: a 1x1 red PNG and a minimal WAV file.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
WAV = base64.b64decode("UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=")


@tool
def test_image_content() -> Image:
    """Returns an image."""
    return Image(data=PNG, media_type="image/png")


@tool
def test_audio_content() -> Audio:
    """Returns audio."""
    return Audio(data=WAV, media_type="audio/wav")


@tool
def test_embedded_resource() -> Resource:
    """Returns an embedded resource."""
    return Resource("test://embedded-resource", text="This is an embedded resource content.", media_type="text/plain")


@tool
def test_multiple_content_types() -> list[Text | Image | Resource]:
    """Returns text, an image and an embedded resource."""
    return [
        Text("Multiple content types test:"),
        Image(data=PNG, media_type="image/png"),
        Resource(
            "test://mixed-content-resource",
            text='{"test": "data", "value": 123}',
            media_type="application/json",
        ),
    ]


# The schema the `json-schema-2020-12` scenario expects to be listed as is (SEP-1613).
JSON_SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
    "additionalProperties": False,
}


@tool
def test_reconnection() -> str:
    """Answers a call the `server-sse-polling` scenario makes over SSE (SEP-1699).

    The scenario's own server closes the SSE stream mid-call and answers after the client
    reconnects; a served tool cannot do that, so this one answers on the stream, and the
    suite checks what serve-mcp does on its own (the priming event and the `retry`
    field), noting that the stream was not closed mid-call."""
    return "Reconnection test completed successfully"


@tool(name="json_schema_2020_12_tool", parameters_schema=JSON_SCHEMA_2020_12)
def json_schema_2020_12_tool(name: str | None = None, address: dict[str, str] | None = None) -> str:
    """Tool with JSON Schema 2020-12 features."""
    return f"name={name} address={address}"


@tool
async def test_tool_with_logging(ctx: ToolContext) -> str:
    """Logs three messages while it runs, with pauses between them."""
    ctx.log("info", "Tool execution started")
    await asyncio.sleep(0.05)
    ctx.log("info", "Tool processing data")
    await asyncio.sleep(0.05)
    ctx.log("info", "Tool execution completed")
    return "Tool with logging executed successfully"


@tool
async def test_tool_with_progress(ctx: ToolContext) -> str:
    """Reports progress 0, 50 and 100 of 100, with pauses between."""
    for done in (0, 50, 100):
        ctx.report_progress(done, total=100)
        if done < 100:
            await asyncio.sleep(0.05)
    return "Tool with progress executed successfully"
