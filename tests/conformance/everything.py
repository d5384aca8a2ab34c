"""The "everything" server of the MCP conformance suite, as far as starweaver serves it
today: `python -m starweaver serve-mcp tests/conformance/everything.py --http HOST:PORT`.

The suite's server scenarios call tools, read resources and get prompts by fixed names
(`test_simple_text`, `test://static-text`, `test_simple_prompt`, ...), each written here
with our public API; a scenario we cannot pass yet is listed, with its reason, in
`expected-failures.txt`.
"""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Annotated, Any

from pydantic import Field

from starweaver import ToolContext, UserError, tool
from starweaver.content import Audio, Image, Resource, Text
from starweaver.elicitation import Accepted, Elicited
from starweaver.mcp import PromptMessage, prompt, resource, resource_template


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


def _described(answer: Elicited[Any]) -> str:
    content = answer.data if isinstance(answer, Accepted) else None
    return f"action={answer.action}, content={content}"


@tool
async def test_elicitation(ctx: ToolContext, message: str) -> str:
    """Asks the user for a username and an email, with the caller's message."""
    schema = {
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"},
        },
        "required": ["username", "email"],
    }
    return f"User response: {_described(await ctx.elicit(message, schema))}"


@tool
async def test_elicitation_sep1034_defaults(ctx: ToolContext) -> str:
    """Asks for a value of every primitive type, each with a default (SEP-1034)."""
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "score": {"type": "number", "default": 95.5},
            "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
            "verified": {"type": "boolean", "default": True},
        },
    }
    return f"Elicitation completed: {_described(await ctx.elicit('Confirm your details', schema))}"


@tool
async def test_elicitation_sep1330_enums(ctx: ToolContext) -> str:
    """Asks with every kind of enum schema (SEP-1330)."""
    titled = [{"const": "value1", "title": "First Option"}, {"const": "value2", "title": "Second Option"}]
    schema = {
        "type": "object",
        "properties": {
            "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
            "titledSingle": {"type": "string", "oneOf": titled},
            "legacyEnum": {
                "type": "string",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"],
            },
            "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
            "titledMulti": {
                "type": "array",
                "items": {
                    "anyOf": [
                        {"const": "value1", "title": "First Choice"},
                        {"const": "value2", "title": "Second Choice"},
                    ]
                },
            },
        },
    }
    return f"Elicitation completed: {_described(await ctx.elicit('Pick your options', schema))}"


@tool
async def test_sampling(ctx: ToolContext, prompt: str) -> str:
    """Asks the client's model to answer `prompt`."""
    sampled = await ctx.sample(prompt, max_tokens=100)
    return f"LLM response: {sampled.text}"


# Resources (`resources-*` scenarios): text, a blob, a template, and one to subscribe to.


@resource("test://static-text", name="static-text", mime_type="text/plain")
def static_text() -> str:
    """A static text resource for testing."""
    return "This is the content of the static text resource."


@resource("test://static-binary", name="static-binary", mime_type="image/png")
def static_binary() -> bytes:
    """A static binary resource (image) for testing."""
    return PNG


@resource_template("test://template/{id}/data", name="template", mime_type="application/json")
def template_data(id: str) -> str:  # noqa: A002 (the suite names the variable `id`)
    """A resource template with parameter substitution."""
    return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})


@resource("test://watched-resource", name="watched-resource", mime_type="text/plain")
def watched_resource() -> str:
    """A resource clients may subscribe to."""
    return "Watched resource content"


# Prompts (`prompts-*` scenarios) and completions (`completion-complete`: a prompt's
# argument without a completer completes to no values).


@prompt
def test_simple_prompt() -> str:
    """A simple prompt without arguments."""
    return "This is a simple prompt for testing."


@prompt
def test_prompt_with_arguments(
    arg1: Annotated[str, Field(description="First test argument")],
    arg2: Annotated[str, Field(description="Second test argument")],
) -> str:
    """A prompt with required arguments."""
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@prompt
def test_prompt_with_embedded_resource(
    resourceUri: Annotated[str, Field(description="URI of the resource to embed")],
) -> list[Resource | str]:
    """A prompt that includes an embedded resource."""
    embedded = Resource(resourceUri, text="Embedded resource content for testing.", media_type="text/plain")
    return [embedded, "Please process the embedded resource above."]


@prompt
def test_prompt_with_image() -> list[PromptMessage]:
    """A prompt that includes image content."""
    return [
        PromptMessage("user", Image(data=PNG, media_type="image/png")),
        PromptMessage("user", "Please analyze the image above."),
    ]
