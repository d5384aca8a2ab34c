"""Tools that `python -m starweaver serve-mcp` serves in the MCP server tests."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from starweaver import ToolContext, ToolResult, Toolset, UserError, tool
from starweaver.elicitation import Accepted, Elicited


@tool(metadata={"readOnlyHint": True})
async def add(left: int, right: int) -> int:
    """Add two integers."""
    await asyncio.sleep(0.01)
    return left + right


@tool
def refuse() -> str:
    """Always fails."""
    raise UserError("the vault is locked")


@tool(timeout_ms=200)
async def slow(seconds: float) -> str:
    """Sleep, then answer."""
    await asyncio.sleep(seconds)
    return "slept"


@tool
async def report() -> ToolResult:
    """What the model sees, and what only the host does."""
    return ToolResult({"raw": 1}, model_content={"summary": "ok"}, private_metadata={"secret": "host-only"})


@tool
def shout(text: str) -> str:
    """Upper-case a text."""
    return text.upper()


loud = Toolset("loud", [shout]).prefixed("loud_")


@tool
async def waits(ctx: ToolContext, marker: str) -> str:
    """Waits to be cancelled, then leaves `marker` as a file."""
    await ctx.cancelled()
    Path(marker).write_text("cancelled")
    return "cancelled"


@tool
async def sleeps(seconds: float, marker: str) -> str:
    """Sleeps, then leaves in `marker` how the sleep ended."""
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        Path(marker).write_text("interrupted")
        raise
    Path(marker).write_text("done")
    return "slept"


@tool
def chatty() -> str:
    """Prints, as tools and the libraries they use do, then answers."""
    print("a tool's print")
    os.write(1, b"a library's write to fd 1\n")
    return "quiet"


def _wipe(path: str) -> str:
    """Wipes a path (it only says so)."""
    return f"wiped {path}"


guarded = Toolset("guarded", [tool(name="wipe")(_wipe)]).approval_required()


@tool
async def copy(ctx: ToolContext, files: int) -> str:
    """Copies `files` files, reporting progress after each, with a log message at each level
    it passes."""
    ctx.log("debug", "planning")
    for done in range(files + 1):
        ctx.report_progress(done, total=files, message=f"{done} of {files}")
        await asyncio.sleep(0)
    ctx.log("warning", "one file was empty", data={"file": "b.txt"})
    return f"copied {files}"


class Contact(BaseModel):
    name: str
    age: int = Field(default=30, ge=0)
    newsletter: bool = False


@tool
async def sign_up(ctx: ToolContext) -> str:
    """Asks the user for their contact details, validated into `Contact`."""
    match await ctx.elicit("Who is signing up?", Contact):
        case Accepted(data=contact):
            return f"signed up {contact.name} ({contact.age}, newsletter={contact.newsletter})"
        case other:
            return f"not signed up: {other.action}"


@tool
async def pick_theme(ctx: ToolContext) -> str:
    """Asks with a bare schema dict that leaves its `type` out."""
    answer: Elicited[dict[str, Any]] = await ctx.elicit("Which theme?", {"properties": {"theme": {"type": "string"}}})
    return f"theme {answer.data['theme']}" if isinstance(answer, Accepted) else "no theme"


@tool
async def haiku(ctx: ToolContext, topic: str) -> str:
    """Asks the client's model for a haiku."""
    sampled = await ctx.sample([f"A haiku about {topic}"], max_tokens=60, system_prompt="Five, seven, five.")
    return f"{sampled.text} ({sampled.model}, {sampled.stop_reason})"


class Forecast(BaseModel):
    """The weather in one city."""

    city: str
    celsius: float


@tool
def forecast(city: str) -> Forecast:
    """Forecast the weather: a return annotation, so an output schema and structured content."""
    return Forecast(city=city, celsius=21.5)


ROWS = {"type": "object", "properties": {"rows": {"type": "array", "items": {"type": "integer"}}}, "required": ["rows"]}


@tool(return_schema=ROWS)
def rows() -> dict[str, list[object]]:
    """Returns a value its own return schema does not allow."""
    return {"rows": [1, "two"]}
