"""Tools that `python -m starweaver serve-mcp` serves in the MCP server tests."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from starweaver import ToolContext, ToolResult, Toolset, UserError, tool
from starweaver.content import Image, Resource
from starweaver.elicitation import Accepted, Elicited
from starweaver.mcp import PromptMessage, prompt, resource, resource_template, resource_updated


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
    """Prints and reads stdin, as tools and the libraries they use do, then answers."""
    print("a tool's print")
    os.write(1, b"a library's write to fd 1\n")
    read = os.read(0, 100)
    return "quiet" if read == b"" else f"read {read!r} of the protocol"


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


# Resources, a template and prompts (DESIGN.md §21), and a tool that says a resource changed.

PNG = b"\x89PNG\r\n"


@resource("notes://today", mime_type="text/markdown")
def today() -> str:
    """Today's notes."""
    return "# Today"


@resource("notes://logo", name="logo", mime_type="image/png")
async def logo_bytes() -> bytes:
    """The logo."""
    return PNG


@resource("notes://broken")
def broken() -> str:
    """Always fails."""
    raise RuntimeError("the disk is on fire")


@resource_template("notes://{day}/lines/{n}", complete={"day": ["today", "tomorrow", "yesterday"]})
async def line(day: str, n: int) -> list[Resource]:
    """One line of a day's notes."""
    return [Resource(f"notes://{day}/lines/{n}", text=f"line {n + 1} of {day}", media_type="text/plain")]


def _languages(typed: str) -> list[str]:
    return [language for language in ("python", "rust", "go") if language.startswith(typed)]


@prompt(complete={"language": _languages})
def review(code: str, language: str = "python") -> list[PromptMessage]:
    """Asks for a code review.

    Args:
        code: The code to review.
        language: Its language.
    """
    return [PromptMessage("user", f"Review this {language} code:\n{code}"), PromptMessage("assistant", "On it.")]


@prompt(name="chart", title="A chart")
async def chart_prompt(points: int) -> list[Image | Resource | str]:
    """Shows a chart of `points` points."""
    return [Image(data=PNG, media_type="image/png"), Resource("notes://data", text="1,2,3"), f"{points} points"]


@prompt
def failing() -> str:
    """Always fails."""
    raise RuntimeError("no prompt today")


@tool
def touch(uri: str) -> str:
    """Says that the resource at `uri` changed."""
    resource_updated(uri)
    return "touched"
