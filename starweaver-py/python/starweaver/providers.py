"""Tool definitions in each provider's format, and the checker of each provider's rules.

The renderers are the Rust ones (``starweaver::render``), so a Python tool and a Rust tool
with the same signature render identically::

    from starweaver.providers import check, render

    rendered = render(my_tool, "openai-chat")          # strict when the schema allows it
    assert check("openai-chat", rendered) == []
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Literal, TypeAlias, cast

from ._native import PROVIDERS as _PROVIDERS
from ._native import ToolDefinition, check_rendered
from .tools import BaseTool, Tool

if TYPE_CHECKING:
    from .types import JsonObject

__all__ = ["PROVIDERS", "Provider", "check", "definition_of", "render", "render_tools"]

Provider: TypeAlias = Literal["openai-chat", "openai-responses", "anthropic", "gemini"]
# The runtime's list (Rust's `Provider::ALL`); the Literal above spells it out for type
# checkers, and tests/python/test_providers.py keeps the two equal.
PROVIDERS: tuple[Provider, ...] = tuple(cast("list[Provider]", _PROVIDERS))

ToolLike: TypeAlias = "Tool[..., object] | BaseTool | ToolDefinition"


def definition_of(tool: ToolLike) -> ToolDefinition:
    """The ``ToolDefinition`` of a ``@tool`` function, a ``BaseTool`` or a definition."""
    return tool if isinstance(tool, ToolDefinition) else tool.definition


def render(tool: ToolLike, provider: Provider, *, strict: bool | None = None) -> JsonObject:
    """``tool`` in ``provider``'s format. ``strict=None`` follows the definition (unset:
    strict when the schema can be made strict); ``True`` forces strict, ``False`` lax.
    Raises ``RenderError`` naming what stands in the way."""
    return definition_of(tool).render(provider, strict=strict)


def render_tools(tools: Iterable[ToolLike], provider: Provider, *, strict: bool | None = None) -> list[JsonObject]:
    """``render`` for each tool, in order: what a request's ``tools`` holds."""
    return [render(tool, provider, strict=strict) for tool in tools]


def check(provider: Provider, rendered: Mapping[str, object]) -> list[str]:
    """Every way ``rendered`` breaks ``provider``'s documented rules, each naming its JSON
    Pointer; empty when it meets them all."""
    return check_rendered(provider, dict(rendered))
