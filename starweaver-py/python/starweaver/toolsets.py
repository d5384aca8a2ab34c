"""Toolsets: named groups of tools with an id, static (a list) or dynamic (listed again at
every step), with combinators, the same as Rust's.

    ops = Toolset("ops", [deploy, status], instructions="Check status before deploying.")
    ops = ops.prefixed("ops_").approval_required().with_max_return_chars(2000)
    agent = create_agent(model=model, toolsets=[ops])
    await agent.run("...", tools=[extra], toolsets=[more])   # for this run only

A toolset's ``instructions`` are sent with the agent's in every request that offers at
least one of its tools; ``max_return_chars`` cuts the model-facing content of its tools'
returns (a tool's own limit wins, and either wins over the agent's).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import TypedDict

from ._native import ConcurrencyLimit, NativeTool, NativeToolset, ToolDefinition
from .hooks import HookLike, native_hooks
from .tools import ToolLike, native_tool

__all__ = ["DynamicToolset", "Toolset", "ToolsetContext"]


class ToolsetContext(TypedDict):
    """What a dynamic toolset is told at each step."""

    run_id: str
    step: int


class Toolset:
    """A named group of tools; ``id`` defaults to the name. Approval rules
    (``approval_required_tools``) may name the toolset or its id."""

    native: NativeToolset
    members: tuple[ToolLike, ...] = ()
    """The tool objects it was made of (none for a dynamic one or an MCP server's), whatever
    its prefix, filter or names: ``serve-mcp`` serves these through the toolset alone."""

    def __init__(
        self,
        name: str,
        tools: Iterable[ToolLike] = (),
        *,
        id: str | None = None,  # noqa: A002 (the toolset's id)
        instructions: str | None = None,
        max_return_chars: int | None = None,
        max_concurrency: int | ConcurrencyLimit | None = None,
    ) -> None:
        self.members = tuple(tools)
        native = NativeToolset.of_tools(name, [native_tool(tool) for tool in self.members], id=id)
        self.native = configured(native, instructions, max_return_chars, max_concurrency)

    def _wrap(self, native: NativeToolset) -> Toolset:
        """A toolset derived from this one: its native form, the same members."""
        toolset = Toolset.__new__(Toolset)
        toolset.native = native
        toolset.members = self.members
        return toolset

    @property
    def name(self) -> str:
        return self.native.name

    @property
    def id(self) -> str:
        return self.native.id

    @property
    def instructions(self) -> str | None:
        """The instructions sent with the agent's while its tools are offered (an MCP
        server's are known once it has started)."""
        return self.native.instructions

    @property
    def max_return_chars(self) -> int | None:
        """The return-size limit of its tools that set none of their own."""
        return self.native.max_return_chars

    @property
    def definitions(self) -> list[ToolDefinition] | None:
        """The tools' definitions, for a static toolset (``None`` for a dynamic one)."""
        return self.native.definitions

    def prefixed(self, prefix: str) -> Toolset:
        """The same tools, each name with ``prefix`` in front."""
        return self._wrap(self.native.prefixed(prefix))

    def filtered(self, keep: Callable[[ToolDefinition], bool]) -> Toolset:
        """Only the tools ``keep(definition)`` accepts."""
        return self._wrap(self.native.filtered(keep))

    def renamed(self, names: Mapping[str, str]) -> Toolset:
        """The same tools, renamed by ``names`` (old name → new name)."""
        return self._wrap(self.native.renamed(dict(names)))

    def deferred(self) -> Toolset:
        """The same tools, deferred: the model sees none of them until ``search_tools``
        finds it (or it calls one by name); found tools stay loaded for the session."""
        return self._wrap(self.native.deferred())

    def approval_required(self) -> Toolset:
        """The same tools, each call needing a human decision first."""
        return self._wrap(self.native.approval_required())

    def with_instructions(self, instructions: str) -> Toolset:
        """The same tools, with ``instructions`` sent to the model with the agent's while any
        of them is offered (in place of the toolset's own, such as an MCP server's)."""
        return self._wrap(self.native.with_instructions(instructions))

    def with_max_return_chars(self, max_return_chars: int) -> Toolset:
        """The same tools, each return's model-facing content cut to ``max_return_chars``
        characters (with a marker saying how many were cut) unless the tool sets its own
        limit; the whole value stays host-only. Raises ``ValueError`` for 0."""
        return self._wrap(self.native.with_max_return_chars(max_return_chars))

    def with_hooks(self, *hooks: HookLike) -> Toolset:
        """The same tools, each call running through ``hooks`` too (``starweaver.hooks``),
        after the run's and the agent's hooks."""
        return self._wrap(self.native.with_hooks(native_hooks(hooks)))

    def with_max_concurrency(self, limit: int | ConcurrencyLimit) -> Toolset:
        """The same tools, at most ``limit`` of their calls running at once (together, in
        every run): a number (a limit of this toolset's own) or a shared ``ConcurrencyLimit``.
        Raises ``ValueError`` for a number below 1."""
        return self._wrap(self.native.with_max_concurrency(limit))

    def __repr__(self) -> str:
        return repr(self.native)


def configured(
    native: NativeToolset,
    instructions: str | None = None,
    max_return_chars: int | None = None,
    max_concurrency: int | ConcurrencyLimit | None = None,
) -> NativeToolset:
    """``native`` with the options given to a toolset's constructor (each left as it is when ``None``)."""
    if instructions is not None:
        native = native.with_instructions(instructions)
    if max_return_chars is not None:
        native = native.with_max_return_chars(max_return_chars)
    if max_concurrency is not None:
        native = native.with_max_concurrency(max_concurrency)
    return native


ListTools = Callable[[ToolsetContext], "Sequence[ToolLike] | Awaitable[Sequence[ToolLike]]"]


class DynamicToolset(Toolset):
    """A toolset whose tools ``list_tools(ctx)`` gives at every step (sync or async)."""

    def __init__(
        self,
        name: str,
        list_tools: ListTools,
        *,
        id: str | None = None,  # noqa: A002 (the toolset's id)
        instructions: str | None = None,
        max_return_chars: int | None = None,
        max_concurrency: int | ConcurrencyLimit | None = None,
    ) -> None:
        async def listed(ctx: ToolsetContext) -> list[NativeTool]:
            tools = list_tools(ctx)
            import inspect  # loaded by pydantic with the first tool

            if inspect.isawaitable(tools):
                tools = await tools
            return [native_tool(tool) for tool in tools]

        native = NativeToolset.dynamic(name, listed, id=id)
        self.native = configured(native, instructions, max_return_chars, max_concurrency)
