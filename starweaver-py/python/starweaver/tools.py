"""``@tool``, ``Tool`` and ``BaseTool``: Python callables as starweaver tools.

Every form goes through one inference path (``_schema.inspect_callable``) and produces a
native ``ToolDefinition``, the same one ``#[tool]`` produces in Rust.
"""

from __future__ import annotations

import contextvars
import functools
import importlib
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal, ParamSpec, TypeVar, cast, overload

from ._native import NativeTool, ToolContext, ToolDefinition
from .exceptions import RegistrationError

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from . import _schema
    from .types import ToolDefinitionOptions
    from .types import ToolOptions as ToolOptions


def __getattr__(name: str) -> object:
    # `ToolOptions` lives with the other TypedDicts, which (with typing_extensions) stay out
    # of `import starweaver`; it is still importable from here at run time.
    if name == "ToolOptions":
        from .types import ToolOptions

        return ToolOptions
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["BaseTool", "Tool", "tool"]

P = ParamSpec("P")
Invoke = Callable[[ToolContext, bytes], Awaitable[object]]
RunSync = Callable[[ToolContext, bytes, contextvars.Context], object]
R = TypeVar("R")
# A tool that returns an `int` is a tool that returns an `object`: `list[Tool[..., object]]`
# holds any tools.
R_co = TypeVar("R_co", covariant=True)


_OWN_OPTIONS = ("name", "parameters_schema", "return_schema")


def _own_options(
    options: Mapping[str, object],
) -> tuple[str | None, Mapping[str, object] | None, Mapping[str, object] | Literal[False] | None]:
    """The three options this layer reads itself (``name`` and the two schemas), checked:
    callers the type checker has not seen may pass anything."""
    name, schema, returns = options.get("name"), options.get("parameters_schema"), options.get("return_schema")
    if name is not None and not isinstance(name, str):
        raise RegistrationError(f"tool option `name` must be a string, got {name!r}")
    if schema is not None and not isinstance(schema, Mapping):
        raise RegistrationError(f"tool option `parameters_schema` must be a dict (a JSON Schema), got {schema!r}")
    if returns is not None and returns is not False and not isinstance(returns, Mapping):
        raise RegistrationError(
            f"tool option `return_schema` must be a dict (a JSON Schema) or False (none), got {returns!r}"
        )
    return (
        name,
        cast("Mapping[str, object] | None", schema),
        cast("Mapping[str, object] | Literal[False] | None", returns),
    )


class Tool(Generic[P, R_co]):
    """A callable turned into a tool. Calling it calls the function, unchanged, so tools
    can be unit-tested directly; ``definition`` is what models are sent."""

    definition: ToolDefinition
    __wrapped__: Callable[P, R_co]
    """The decorated function, as ``functools.wraps`` leaves it."""
    native: NativeTool
    """The runtime's handle for this tool: what ``create_agent`` registers."""

    def __init__(
        self, fn: Callable[P, R_co], *, localns: Mapping[str, object] | None = None, **options: Unpack[ToolOptions]
    ) -> None:
        if not callable(fn):
            raise RegistrationError(f"a tool must be callable, got {fn!r}")
        name, schema, returns = _own_options(options)
        # The rest are the definition's own options, checked by the runtime.
        rest = {key: value for key, value in options.items() if key not in _OWN_OPTIONS}
        definition_options = cast("ToolDefinitionOptions", rest)
        # pydantic loads with the first tool, not with `import starweaver`.
        from . import _schema

        tool_name = name or getattr(fn, "__name__", None) or type(fn).__name__
        spec = _schema.inspect_callable(
            fn, name=tool_name, parameters_schema=schema, localns=localns, derive_return=returns is None
        )
        if definition_options.get("description") is None:
            definition_options["description"] = spec.description
        self._fn = fn
        return_schema = spec.returns if returns is None else returns or None
        self.definition = ToolDefinition(tool_name, spec.parameters, return_schema=return_schema, **definition_options)
        invoke, run_sync = _invoker(fn, spec)
        self.native = NativeTool(self.definition, invoke, run_sync=run_sync)
        functools.update_wrapper(self, fn)

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R_co:
        return self._fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Tool({self.definition.name!r})"


def _is_async(fn: Callable[..., object]) -> bool:
    import inspect  # loaded by pydantic with the first tool; kept out of `import starweaver`

    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))  # noqa: B004 (its `__call__` method, not a callability test)


def _invoker(fn: Callable[..., Any], spec: _schema.CallSpec) -> tuple[Invoke, RunSync | None]:
    """What the runtime calls for each attempt: validate, then start the call. Async tools
    return their coroutine (stepped on the event loop); sync tools run in the default
    executor, with the caller's context variables, so they never block the loop. A sync
    tool also gets ``run_sync``, which validates and calls it on the current thread inside a
    given context: the runtime's worker thread, for a chain of calls to it."""
    decode, takes_context = spec.decode, spec.takes_context
    if _is_async(fn):

        def invoke_async(ctx: ToolContext, raw: bytes) -> Awaitable[object]:
            args, kwargs = decode(raw)
            coroutine: Awaitable[object] = fn(ctx, *args, **kwargs) if takes_context else fn(*args, **kwargs)
            return coroutine

        return invoke_async, None

    def bound(ctx: ToolContext, raw: bytes) -> Callable[[], object]:
        args, kwargs = decode(raw)
        if takes_context:
            args = (ctx, *args)
        return functools.partial(fn, *args, **kwargs)

    def invoke_sync(ctx: ToolContext, raw: bytes) -> Awaitable[object]:
        import asyncio  # already loaded by the running loop; kept out of `import starweaver`

        call = functools.partial(contextvars.copy_context().run, bound(ctx, raw))
        return asyncio.get_running_loop().run_in_executor(None, call)

    def run_sync(ctx: ToolContext, raw: bytes, context: contextvars.Context) -> object:
        return context.run(bound(ctx, raw))

    return invoke_sync, run_sync


@overload
def tool(fn: Callable[P, R], /) -> Tool[P, R]: ...


@overload
def tool(**options: Unpack[ToolOptions]) -> Callable[[Callable[P, R]], Tool[P, R]]: ...


def tool(
    fn: Callable[P, R] | None = None, /, **options: Unpack[ToolOptions]
) -> Tool[P, R] | Callable[[Callable[P, R]], Tool[P, R]]:
    """Turns a function into a tool: ``@tool`` or ``@tool(name=..., sequential=True, ...)``.

    Annotations are resolved now, including names local to the function that applies the
    decorator (so models defined inside a function, and ``from __future__ import
    annotations``, work).
    """
    import inspect  # loaded by pydantic with the first tool; kept out of `import starweaver`

    frame = inspect.currentframe()
    caller = frame.f_back if frame is not None else None
    localns = caller.f_locals if caller is not None else None  # the decorating frame, as validate_call does

    def decorate(function: Callable[P, R]) -> Tool[P, R]:
        return Tool(function, localns=localns, **options)

    return decorate(fn) if fn is not None else decorate


class BaseTool:
    """A tool as a class: set ``name`` (and ``description``), implement ``call``.

    ``call`` takes the same parameters a ``@tool`` function would (optionally a first
    ``ToolContext``)."""

    name: ClassVar[str]
    description: ClassVar[str | None] = None

    def __init__(self, **options: Unpack[ToolOptions]) -> None:
        if not getattr(type(self), "name", None):
            raise RegistrationError(f"{type(self).__name__} must set the class attribute `name`")
        merged: ToolOptions = {"name": self.name, "description": self.description}
        merged.update(options)
        self._tool: Tool[..., object] = Tool(
            self.call, localns=vars(importlib.import_module(type(self).__module__)), **merged
        )

    @property
    def definition(self) -> ToolDefinition:
        """The tool's definition."""
        return self._tool.definition

    @property
    def native(self) -> NativeTool:
        """The runtime's handle for this tool: what ``create_agent`` registers."""
        return self._tool.native

    def call(self, *args: Any, **kwargs: Any) -> object:  # noqa: ANN401 (subclasses narrow it)
        """The tool's work; subclasses override it (``async def`` or ``def``)."""
        raise NotImplementedError(f"{type(self).__name__} must implement `call`")


ToolLike = Tool[..., object] | BaseTool | Callable[..., object]
"""Anything ``create_agent(tools=...)`` takes: a ``@tool``, a ``BaseTool``, or a raw callable."""


def native_tool(item: ToolLike) -> NativeTool:
    """The runtime's handle for any tool-like: a raw callable goes through the same
    inference path as ``@tool``."""
    if isinstance(item, (Tool, BaseTool)):
        return item.native
    return Tool(item).native
