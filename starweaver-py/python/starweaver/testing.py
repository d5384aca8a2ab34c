"""Models for tests: a scripted ``TestModel`` and a callback-driven ``FunctionModel``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, TypeAlias, cast

from ._native import ApprovalDecision, Messages, NativeFunctionModel, NativeTestModel, ToolContext, ToolDefinitions

if TYPE_CHECKING:
    from .types import DepsT, FunctionModelInfo, ModelRequestRecord

__all__ = ["FunctionModel", "Messages", "ModelResponse", "TestModel", "ToolDefinitions", "tool_context"]

ModelResponse: TypeAlias = Mapping[str, object]
"""A scripted response: ``{"text": ...}``, ``{"tool_calls": [...]}`` or ``{"parts": [...]}``."""


class TestModel:
    """A model that answers with a script, one response per request, and records every
    request exactly as a provider would have received it."""

    __test__ = False  # not a pytest test class

    def __init__(self, script: Sequence[ModelResponse]) -> None:
        self.native = NativeTestModel([dict(item) for item in script])

    @classmethod
    def responses(cls, responses: Sequence[ModelResponse]) -> TestModel:
        """A model that answers with ``responses`` in order; running out is a clear error."""
        return cls(responses)

    @staticmethod
    def tool_call_response(calls: Sequence[Mapping[str, object]]) -> dict[str, object]:
        """A response calling tools: each call is ``{"id", "name", "arguments"}``."""
        return {"tool_calls": [dict(call) for call in calls]}

    @property
    def requests(self) -> list[ModelRequestRecord]:
        """Every request so far: ``{"messages": [...], "tools": [...]}`` (model-facing view)."""
        return self.native.requests


ModelFunction: TypeAlias = "Callable[[Messages, FunctionModelInfo], ModelResponse | Awaitable[ModelResponse]]"


class FunctionModel:
    """A model whose answers come from ``function(messages, info)`` (sync or async).

    ``messages`` is a read-only sequence of canonical message dicts; ``info`` holds
    ``tools`` (a read-only sequence of definition dicts), ``toolset_instructions``,
    ``step`` and ``run_id``, and ``output`` when the run asks for native output."""

    def __init__(self, function: ModelFunction) -> None:
        self.native = NativeFunctionModel(function)


def tool_context(
    tool_name: str = "tool", *, deps: DepsT | None = None, approval: ApprovalDecision | bool | str | None = None
) -> ToolContext[DepsT]:
    """A ``ToolContext`` outside any run, to call a tool's function directly in a unit
    test: ``ctx.deps`` is ``deps`` (typed as given: ``ToolContext[MyDeps]``); ``ctx.approval``
    is ``approval`` (a decision, ``True``, or the name of who approved), or ``None``.

    >>> ctx = tool_context(deps={"db": "test"}, approval="alice")
    >>> (ctx.deps, ctx.approval.decided_by if ctx.approval else None)
    ({'db': 'test'}, 'alice')
    """
    context = ToolContext.detached(tool_name, deps=deps, approval=approval)
    return cast("ToolContext[DepsT]", context)  # `detached` gives back the `deps` it was given
