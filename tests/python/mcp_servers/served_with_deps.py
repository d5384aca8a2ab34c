"""Served by the tests with `serve-mcp`: tools that read `ctx.deps`, and a pydantic model
parameter whose schema has `$defs`."""

from __future__ import annotations

from pydantic import BaseModel

from starweaver import ToolContext, tool

deps = {"team": "ops"}


def other_deps() -> dict[str, str]:
    """A factory for `--deps served_with_deps.py:other_deps`."""
    return {"team": "sre"}


def broken_deps() -> dict[str, str]:
    raise RuntimeError("no database")


@tool
def team(ctx: ToolContext) -> str:
    """The team the server runs for."""
    assert isinstance(ctx.deps, dict)
    return str(ctx.deps["team"])


class Address(BaseModel):
    street: str
    city: str


class Person(BaseModel):
    name: str
    home: Address


@tool
def greet(person: Person) -> str:
    """Greet someone at home."""
    return f"hello {person.name} of {person.home.city}"
