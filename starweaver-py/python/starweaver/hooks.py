"""Hooks: the application's code around every tool call (DESIGN.md §18).

A hook is any object with some of ``before_call``, ``after_call``, ``on_error`` and
``prepare_tools``, each sync or async; subclass ``Hooks`` to have them type-checked. Attach
hooks to an agent (``create_agent(hooks=[...])``), a toolset (``toolset.with_hooks(...)``),
one run (``agent.run(..., hooks=[...])``) or a served module (``hooks = [...]`` beside its
tools, for ``serve-mcp``). On the way in the run's run first, then the agent's, then the
toolset's; on the way out, the reverse.
"""

from __future__ import annotations

from collections.abc import Awaitable, Iterable
from typing import TYPE_CHECKING, Any, TypeAlias

from ._native import NativeHooks, ToolCall, ToolContext, ToolDefinition, ToolResult

__all__ = ["AfterCallResult", "BeforeCallResult", "Hooks", "ToolCall", "native_hooks"]

#: What ``before_call`` returns: ``None`` (unchanged), a dict (the new arguments, checked
#: against the tool's schema) or a ``ToolResult`` (the answer: the tool does not run).
BeforeCallResult: TypeAlias = "dict[str, Any] | ToolResult | None"
#: What ``after_call`` and ``on_error`` return: ``None`` (unchanged), a ``ToolResult`` or
#: any JSON value (the result).
AfterCallResult: TypeAlias = "ToolResult | Any | None"


class Hooks:
    """A base class for hooks: override any of the methods below (sync or async). Only the
    methods a subclass defines run; the rest cost nothing per call.

    - ``before_call(ctx, call)``: after the arguments parse as JSON, before the tool's
      schema checks them and before the approval gate. Raise any starweaver exception
      (``ModelRetry``, ``UserError``, ``ApprovalRequired``, ...) for its usual meaning; any
      other exception fails the call (kind ``execution``), never the run.
    - ``after_call(ctx, call, result)``: ``result`` is a ``ToolResult``; return a new one,
      or a value, to replace it.
    - ``on_error(ctx, call, error)``: ``error`` is the call's failure as its exception,
      after the call's own retries; return a result to answer with it instead.
    - ``prepare_tools(ctx, definitions)``: once per step, the definitions the model is
      offered (drop some, or change descriptions); a dropped tool cannot be called in that
      step. ``ctx`` names no call here.

    ``name`` (the class name unless set) is what the ``tool_call`` event's
    ``rewritten_by`` / ``answered_by`` give.
    """

    name: str

    if TYPE_CHECKING:

        def before_call(self, ctx: ToolContext, call: ToolCall) -> BeforeCallResult | Awaitable[BeforeCallResult]: ...

        def after_call(
            self, ctx: ToolContext, call: ToolCall, result: ToolResult
        ) -> AfterCallResult | Awaitable[AfterCallResult]: ...

        def on_error(
            self, ctx: ToolContext, call: ToolCall, error: Exception
        ) -> AfterCallResult | Awaitable[AfterCallResult]: ...

        def prepare_tools(
            self, ctx: ToolContext, definitions: list[ToolDefinition]
        ) -> list[ToolDefinition] | Awaitable[list[ToolDefinition] | None] | None: ...

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "name" not in cls.__dict__:
            cls.name = cls.__name__


#: What ``hooks=`` takes: hook objects (anything with some of the hook methods).
HookLike: TypeAlias = "Hooks | object"


def native_hooks(hooks: Iterable[HookLike]) -> list[NativeHooks]:
    """The hooks as the runtime runs them; raises ``TypeError`` naming an object with none
    of the hook methods."""
    return [hook if isinstance(hook, NativeHooks) else NativeHooks(hook) for hook in hooks]
