"""Agents and sessions: ``create_agent(...)``, ``agent.run(...)``, ``agent.session()``."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeAlias, TypedDict, TypeVar, cast, overload

from ._native import (
    ApprovalDecision,
    ConcurrencyLimit,
    DeferredResult,
    ElicitationResponse,
    Hitl,
    NativeAgent,
    NativeHooks,
    NativeOutputSpec,
    NativeSession,
    NativeTool,
    NativeToolset,
    RunResult,
    RunStream,
    SessionStore,
    SqliteSessionStore,
    ToolContext,
    ToolDefinition,
    UsageLimits,
)
from .exceptions import DecisionError, FormatError, RegistrationError
from .hooks import HookLike, native_hooks
from .models import ProviderModel, infer_model
from .testing import FunctionModel, TestModel
from .tools import ToolLike, native_tool
from .toolsets import Toolset

if TYPE_CHECKING:
    from typing_extensions import Self, Unpack

    from ._output import OutputSpec, OutputValidator
    from .elicitation import Elicited
    from .output import NativeOutput, PromptedOutput
    from .types import DepsT, Message, OutputT, RunOptions, SessionState
else:
    # The type checkers' TypeVars, with their defaults, are `starweaver.types`'s, which
    # loads typing_extensions; `Generic` needs only plain ones, so `import starweaver` stays cheap.
    DepsT = TypeVar("DepsT")
    OutputT = TypeVar("OutputT")

#: A run's own ``output_type``'s type.
RunOutputT = TypeVar("RunOutputT")

#: What ``output_type`` takes besides a union or ``Literal``: a type, ``NativeOutput(T)``,
#: ``PromptedOutput(T)`` or an output function.
OutputTypeOf: TypeAlias = "type[RunOutputT] | NativeOutput[RunOutputT] | PromptedOutput[RunOutputT] | Callable[..., Awaitable[RunOutputT]] | Callable[..., RunOutputT]"

__all__ = [
    "Agent",
    "AgentOptions",
    "AgentSession",
    "ElicitationHandler",
    "HitlControls",
    "create_agent",
    "create_agent_runtime",
]

ApprovalRule = str | Mapping[str, object]
Decision = ApprovalDecision | Mapping[str, object]
DeferredDecision = DeferredResult | Mapping[str, object]
ElicitationAnswer = ElicitationResponse | Mapping[str, object]


class _NativeRunOptions(TypedDict):
    deps: object
    tools: list[NativeTool]
    toolsets: list[NativeToolset]
    usage_limits: UsageLimits | None
    hooks: list[NativeHooks]
    output: NativeOutputSpec | None


class _Runs:
    """What every run of an agent (and of its sessions) checks and takes: when the agent
    has no deps of its own but a ``deps_type``, every run must bring some; a run's own
    ``output_type`` takes the agent's ``output_retries`` and ``end_strategy``."""

    def __init__(
        self,
        deps_type: object,
        has_deps: bool,
        output_retries: int | None,
        end_strategy: Literal["early", "exhaustive"],
    ) -> None:
        self.required = deps_type is not None and not has_deps
        self.deps_type = deps_type
        self.output_retries = output_retries
        self.end_strategy: Literal["early", "exhaustive"] = end_strategy

    def options(self, output_type: object, options: RunOptions[Any]) -> _NativeRunOptions:
        """A run's options for the native layer; a run without the deps its agent's
        ``deps_type`` promises its tools is refused, before it starts."""
        deps = options.get("deps")
        if deps is None and self.required:
            name = getattr(self.deps_type, "__name__", repr(self.deps_type))
            raise TypeError(f"this agent's tools take `deps_type={name}`: pass `deps=` to the run or to `create_agent`")
        output = None
        if output_type is not None:
            from ._output import OutputSpec  # only then: importing starweaver stays cheap

            output = OutputSpec(output_type, []).native(self.output_retries, self.end_strategy)
        return {
            "deps": deps,
            "tools": [native_tool(item) for item in options.get("tools", ())],
            "toolsets": [t.native for t in options.get("toolsets", ())],
            "usage_limits": options.get("usage_limits"),
            "hooks": native_hooks(options.get("hooks", ())),
            "output": output,
        }


def _typed(result: RunResult) -> RunResult[Any]:
    """The native result with the run's output type (its overload says which): the native
    layer hands the output out as Python made it, but does not know its annotation."""
    return cast("RunResult[Any]", result)


def _typed_stream(stream: RunStream) -> RunStream[Any]:
    """The native stream with the run's output type (as ``_typed``)."""
    return cast("RunStream[Any]", stream)


def _run_sync(run: Coroutine[object, object, RunResult[Any]]) -> RunResult[Any]:
    """Runs ``run`` on a fresh event loop; refused by name inside a running one, where
    blocking would stall every other task on it."""
    import asyncio  # loads `inspect`; kept out of `import starweaver`

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(run)
    run.close()
    raise RuntimeError("run_sync() cannot be called from a running event loop: use `await agent.run(...)`")


class _AsyncContext:
    """``async with`` support; nothing to open or close today, so both ends are no-ops."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        return None


class _Runner(_AsyncContext, Generic[DepsT, OutputT]):
    """What an agent and a session share: their runs (``Agent`` says what a run's own
    options do). ``async with`` is supported."""

    def __init__(self, runner: NativeAgent | NativeSession, runs: _Runs) -> None:
        self._runner = runner
        self._runs = runs

    @overload
    async def run(
        self, prompt: str, *, output_type: None = None, **options: Unpack[RunOptions[DepsT]]
    ) -> RunResult[OutputT]: ...

    @overload
    async def run(
        self, prompt: str, *, output_type: OutputTypeOf[RunOutputT], **options: Unpack[RunOptions[DepsT]]
    ) -> RunResult[RunOutputT]: ...

    @overload
    async def run(
        # A union (`A | B`) or `Literal[...]`, which mypy cannot take as a type yet (PEP 747).
        self,
        prompt: str,
        *,
        output_type: object,
        **options: Unpack[RunOptions[DepsT]],
    ) -> RunResult[Any]: ...

    async def run(
        self, prompt: str, *, output_type: object = None, **options: Unpack[RunOptions[DepsT]]
    ) -> RunResult[Any]:
        """Runs ``prompt``: an agent's run in a fresh session (to resume a waiting run, use a
        session), a session's continuing its conversation."""
        return _typed(await self._runner.run(prompt, **self._runs.options(output_type, options)))

    @overload
    def run_sync(
        self, prompt: str, *, output_type: None = None, **options: Unpack[RunOptions[DepsT]]
    ) -> RunResult[OutputT]: ...

    @overload
    def run_sync(
        self, prompt: str, *, output_type: OutputTypeOf[RunOutputT], **options: Unpack[RunOptions[DepsT]]
    ) -> RunResult[RunOutputT]: ...

    @overload
    def run_sync(
        # A union (`A | B`) or `Literal[...]`, which mypy cannot take as a type yet (PEP 747).
        self,
        prompt: str,
        *,
        output_type: object,
        **options: Unpack[RunOptions[DepsT]],
    ) -> RunResult[Any]: ...

    def run_sync(
        self, prompt: str, *, output_type: object = None, **options: Unpack[RunOptions[DepsT]]
    ) -> RunResult[Any]:
        """``run`` for code without an event loop (scripts, notebooks' plain cells): runs
        ``prompt`` to its end on a loop of its own. Inside a running loop, ``await run(...)``."""
        return _run_sync(self.run(prompt, output_type=output_type, **options))

    @overload
    def run_stream(
        self, prompt: str, *, output_type: None = None, **options: Unpack[RunOptions[DepsT]]
    ) -> RunStream[OutputT]: ...

    @overload
    def run_stream(
        self, prompt: str, *, output_type: OutputTypeOf[RunOutputT], **options: Unpack[RunOptions[DepsT]]
    ) -> RunStream[RunOutputT]: ...

    @overload
    def run_stream(
        # A union (`A | B`) or `Literal[...]`, which mypy cannot take as a type yet (PEP 747).
        self,
        prompt: str,
        *,
        output_type: object,
        **options: Unpack[RunOptions[DepsT]],
    ) -> RunStream[Any]: ...

    def run_stream(
        self, prompt: str, *, output_type: object = None, **options: Unpack[RunOptions[DepsT]]
    ) -> RunStream[Any]:
        """Runs ``prompt`` as ``run`` does: ``async for event in ...`` yields the events as
        they happen; ``await stream.result()`` then gives the ``RunResult``."""
        return _typed_stream(self._runner.run_stream(prompt, **self._runs.options(output_type, options)))


class Agent(_Runner[DepsT, OutputT]):
    """A model, tools, instructions and an approval policy. ``async with`` is supported.

    ``Agent[DepsT, OutputT]``: its tools see ``ctx.deps`` as ``DepsT`` (``None`` for an agent
    without deps), and its runs' ``output`` is an ``OutputT`` (``str`` by default).

    A run's keyword arguments (``RunOptions``) are its own: ``deps`` replace the agent's,
    ``tools``, ``toolsets`` and ``hooks`` are added for that run only (the agent is
    unchanged), ``usage_limits`` replace the agent's, and ``output_type`` (anything
    ``create_agent`` takes) replaces the agent's output for that run, with the agent's
    ``output_retries`` and ``end_strategy`` but not its output validators (they check the
    agent's own output type)."""

    def __init__(self, native: NativeAgent, runs: _Runs, output: OutputSpec | None = None) -> None:
        super().__init__(native, runs)
        self._native = native
        self._output = output

    def output_validator(
        self, validator: Callable[[ToolContext[DepsT], OutputT], OutputT | Awaitable[OutputT]]
    ) -> Callable[[ToolContext[DepsT], OutputT], OutputT | Awaitable[OutputT]]:
        """Adds an output validator (a decorator): ``(ctx, output)``, sync or async, giving
        the output (changed or not) or raising ``ModelRetry`` to have the model correct it.
        Validators run in the order added, after ``create_agent(output_validators=...)``'s,
        on every output of the agent's ``output_type``."""
        if self._output is None:
            raise RegistrationError(
                "this agent checks no output: give `create_agent` its `output_type` or `output_validators`, "
                "then add more with `@agent.output_validator`"
            )
        self._output.validators.append(validator)
        return validator

    def session(
        self, state: Mapping[str, object] | None = None, *, session_id: str | None = None
    ) -> AgentSession[DepsT, OutputT]:
        """A conversation that keeps its history across runs and can wait for humans.

        With ``state`` (from ``session.export_state()``), that conversation restored, here
        or in another process. With ``session_id``, the session kept under that id in the
        agent's session store (a new one if none is); it is written back, in one
        transaction, each time a run or resume returns. The agent must have the tools the
        session was using."""
        if state is not None and not isinstance(cast(object, state), Mapping):
            raise FormatError(f"session state must be a dict from `export_state()`, got {type(state).__name__}")
        native = self._native.session(dict(state) if state is not None else None, session_id=session_id)
        return AgentSession(native, self._runs)

    @property
    def session_store(self) -> SessionStore:
        """Where ``session(session_id=...)`` keeps sessions."""
        return self._native.session_store

    @property
    def definitions(self) -> list[ToolDefinition]:
        """The tool definitions models are sent."""
        return self._native.definitions


class HitlControls(Generic[DepsT, OutputT]):
    """``session.hitl``: resuming a waiting run (``session.pending`` says what it waits for)."""

    def __init__(self, native: NativeSession, runs: _Runs) -> None:
        self._native = native
        self._runs = runs

    @overload
    async def resume(
        self,
        *,
        approvals: Sequence[Decision] = (),
        deferred_results: Sequence[DeferredDecision] = (),
        elicitations: Sequence[ElicitationAnswer] = (),
        output_type: None = None,
        **options: Unpack[RunOptions[DepsT]],
    ) -> RunResult[OutputT]: ...

    @overload
    async def resume(
        self,
        *,
        approvals: Sequence[Decision] = (),
        deferred_results: Sequence[DeferredDecision] = (),
        elicitations: Sequence[ElicitationAnswer] = (),
        output_type: OutputTypeOf[RunOutputT],
        **options: Unpack[RunOptions[DepsT]],
    ) -> RunResult[RunOutputT]: ...

    @overload
    async def resume(
        # A union (`A | B`) or `Literal[...]`, which mypy cannot take as a type yet (PEP 747).
        self,
        *,
        approvals: Sequence[Decision] = (),
        deferred_results: Sequence[DeferredDecision] = (),
        elicitations: Sequence[ElicitationAnswer] = (),
        output_type: object,
        **options: Unpack[RunOptions[DepsT]],
    ) -> RunResult[Any]: ...

    async def resume(
        self,
        *,
        approvals: Sequence[Decision] = (),
        deferred_results: Sequence[DeferredDecision] = (),
        elicitations: Sequence[ElicitationAnswer] = (),
        output_type: object = None,
        **options: Unpack[RunOptions[DepsT]],
    ) -> RunResult[Any]:
        """Continues the waiting run with one decision per pending item (decision objects,
        or canonical JSON dicts): approval decisions, deferred results, and answers to
        pending elicitations (``pending.accept(value)``, ``.decline()``, ``.cancel()``).
        The run's own options (``deps``, ``tools``, ``toolsets``, ``usage_limits``,
        ``hooks`` and ``output_type``) are the resumed run's, as ``run``'s are: give those
        the run started with, so its calls meet the same ones."""
        resumed = await self._native.resume(
            approvals=decision_list(approvals, "approvals"),
            deferred_results=decision_list(deferred_results, "deferred_results"),
            elicitations=decision_list(elicitations, "elicitations"),
            **self._runs.options(output_type, options),
        )
        return _typed(resumed)

    #: ``resume``'s older name, which a session (a ``HitlControls`` too) also answers to.
    resume_after_hitl = resume


def decision_list(items: object, what: str) -> list[object]:
    """A resume's decisions as a list; anything but a sequence of them is a ``DecisionError``."""
    kind = type(items).__name__
    if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Sequence):
        raise DecisionError(f"`{what}` must be a list of decisions, got {kind}")
    return list(cast("Sequence[object]", items))


class AgentSession(_Runner[DepsT, OutputT], HitlControls[DepsT, OutputT]):
    """A conversation with an agent (``AgentSession[DepsT, OutputT]``, as its ``Agent``).
    ``async with`` is supported. A run's own options are as ``Agent.run``'s;
    ``session.resume(...)`` (and ``resume_after_hitl``) is ``session.hitl.resume(...)``."""

    def __init__(self, native: NativeSession, runs: _Runs) -> None:
        super().__init__(native, runs)
        self._native = native
        self.hitl: HitlControls[DepsT, OutputT] = HitlControls(native, runs)

    def export_state(self) -> SessionState:
        """The session as canonical JSON: history (host-only fields included), decisions
        already applied, and a waiting run's pending approvals, deferred calls and state."""
        return self._native.export_state()

    @property
    def pending(self) -> Hitl | None:
        """What the waiting run needs (its approvals and deferred calls), or ``None`` when
        no run waits; the same ``Hitl`` the waiting run's ``result.hitl`` gave."""
        return self._native.pending

    @property
    def messages(self) -> list[Message]:
        """The conversation so far as canonical message dicts, host-only fields included."""
        return self._native.messages

    @property
    def session_id(self) -> str | None:
        """The id the session is stored under, or ``None`` when not opened by id."""
        return self._native.session_id


class AgentOptions(TypedDict, total=False):
    """The keyword arguments of ``create_agent`` besides ``model``, ``deps_type``, ``deps``
    and ``output_type``; see ``create_agent``."""

    tools: Iterable[ToolLike]
    toolsets: Iterable[Toolset]
    instructions: str | None
    approval_required_tools: Iterable[ApprovalRule] | None
    max_concurrency: int | ConcurrencyLimit | None
    max_steps: int | None
    session_store: SessionStore | str | os.PathLike[str] | None
    require_parameter_descriptions: bool
    elicitation_handler: ElicitationHandler | None
    usage_limits: UsageLimits | None
    hooks: Iterable[HookLike]
    max_return_chars: int | None
    output_retries: int | None
    output_validators: Iterable[OutputValidator]
    end_strategy: Literal["early", "exhaustive"]
    tool_search: Literal["local", "native"]


ModelLike: TypeAlias = "str | ProviderModel | TestModel | FunctionModel"


@overload
def create_agent(
    *,
    model: ModelLike,
    deps_type: type[DepsT] | None = None,
    deps: DepsT | None = None,
    **options: Unpack[AgentOptions],
) -> Agent[DepsT, str]: ...


@overload
def create_agent(
    *,
    model: ModelLike,
    output_type: type[OutputT]
    | NativeOutput[OutputT]
    | PromptedOutput[OutputT]
    | Callable[..., Awaitable[OutputT]]
    | Callable[..., OutputT],
    deps_type: type[DepsT] | None = None,
    deps: DepsT | None = None,
    **options: Unpack[AgentOptions],
) -> Agent[DepsT, OutputT]: ...


@overload
def create_agent(
    *,
    model: ModelLike,
    # A union (`A | B`) or `Literal[...]`, which mypy cannot take as a type yet (PEP 747).
    output_type: object,
    deps_type: type[DepsT] | None = None,
    deps: DepsT | None = None,
    **options: Unpack[AgentOptions],
) -> Agent[DepsT, Any]: ...


def create_agent(
    *,
    model: ModelLike,
    output_type: object = str,
    deps_type: type[object] | None = None,
    deps: object = None,
    **options: Unpack[AgentOptions],
) -> Agent[Any, Any]:
    """Builds an agent. ``model`` is a ``"provider:model"`` name (``"openai:gpt-4.1-mini"``;
    prefixes ``openai:``, ``openai-responses:``, ``anthropic:``, ``google:``), a class from
    ``starweaver.models``, or a test model. Tools may be ``@tool`` functions, ``BaseTool`` instances or raw
    callables; ``toolsets`` are ``starweaver.toolsets.Toolset``s (static or dynamic); ``approval_required_tools`` entries are tool names, toolset names/ids, metadata
    dicts, or ``"*"``. ``deps`` is what tools see as ``ctx.deps`` (a run's own ``deps``
    replace it); ``deps_type`` declares its type (``Agent[DepsT, ...]``, and
    ``ToolContext[DepsT]`` in the tools) for an agent whose runs each bring their own: such
    a run without ``deps`` is refused, and ``deps`` must be an instance of it. ``session_store`` keeps sessions opened with
    ``agent.session(session_id=...)``: a ``SessionStore``, or a path for a
    ``SqliteSessionStore`` (in memory when unset). ``require_parameter_descriptions``
    makes a parameter without a description a registration error. ``elicitation_handler``
    answers a tool's ``await ctx.elicit(message, T)`` in a run: a function, sync or async,
    taking ``(ctx, message, schema)`` and returning ``Accepted(data)``, ``Declined()``,
    ``Cancelled()`` (``starweaver.elicitation``) or a dict (accepted). ``usage_limits``
    bound what each run may spend (a run's own replace them). ``hooks`` run around every
    call of the agent (``starweaver.hooks.Hooks``), after a run's own.
    ``max_return_chars`` cuts the model-facing content of any tool return longer than that
    (a tool's or toolset's own limit wins), ending it with ``… [N more characters cut]``;
    the whole value stays host-only. ``output_type`` makes runs answer with a value of
    that type instead of text (``result.output``): a pydantic model, a dataclass, a
    ``TypedDict``, a scalar, ``list[...]``, ``dict[str, ...]``, ``Literal[...]``, an output
    function (its return value is the output), or a union of these, with ``str`` to let
    the model answer in text too. The model gives it by calling an output tool
    (``final_result``, or ``final_result_<Name>`` per member of a union); a call that fails
    validation is sent back to it, at most ``output_retries`` times (1 unless set) before
    the run fails with ``OutputValidationError``. ``output_validators`` (and
    ``@agent.output_validator``) check each output: ``(ctx, output)``, sync or async,
    returning it (changed or not) or raising ``ModelRetry``. ``end_strategy`` says what
    becomes of a response's other calls when it calls an output tool: ``"early"`` (they do
    not run, each returning that it was not run) or ``"exhaustive"`` (they run first).
    ``tool_search`` says who searches the deferred tools (``defer_loading=True``,
    ``toolset.deferred()``): ``"local"`` (the default: the model is offered
    ``search_tools``, answered by the run) or ``"native"`` (the provider's own search:
    Anthropic's tool search tool, OpenAI Responses' ``tool_search``; any other model is
    refused with ``RegistrationError``). Raises
    ``RegistrationError`` naming what is wrong, ``SessionStoreError`` when the store cannot
    be opened, ``TypeError`` for ``deps`` that are not a ``deps_type``."""
    # Type checkers join a wrong `deps` with `deps_type` rather than refuse it, so the
    # runtime does (for a class: a generic alias such as `dict[str, int]` has no instances).
    if isinstance(deps_type, type) and deps is not None and not isinstance(deps, deps_type):
        raise TypeError(f"`deps` must be a {deps_type.__name__} (`deps_type`), got {type(deps).__name__}")
    if isinstance(model, str):
        model = infer_model(model)
    session_store = options.get("session_store")
    if isinstance(session_store, (str, os.PathLike)):
        session_store = SqliteSessionStore(session_store)
    asking = None
    elicitation_handler = options.get("elicitation_handler")
    if elicitation_handler is not None:
        from ._asking import runtime_handler  # only then: importing starweaver stays cheap

        asking = runtime_handler(elicitation_handler)
    output = None
    output_validators = list(options.get("output_validators", ()))
    retries, end_strategy = options.get("output_retries"), options.get("end_strategy", "early")
    native_output = None
    if output_type is not str or output_validators:
        from ._output import OutputSpec  # only then: importing starweaver stays cheap

        output = OutputSpec(output_type, output_validators)
        native_output = output.native(retries, end_strategy)
    elif retries is not None or end_strategy != "early":
        native_output = NativeOutputSpec([], text=True, retries=retries, end_strategy=end_strategy)
    approval_required_tools = options.get("approval_required_tools")
    native = NativeAgent(
        # Anything else reaches the native check, which names what was passed.
        getattr(model, "native", model),
        [native_tool(item) for item in options.get("tools", ())],
        toolsets=[toolset.native for toolset in options.get("toolsets", ())],
        instructions=options.get("instructions"),
        approval_required_tools=list(approval_required_tools) if approval_required_tools is not None else None,
        max_concurrency=options.get("max_concurrency"),
        max_steps=options.get("max_steps"),
        deps=deps,
        session_store=session_store,
        require_parameter_descriptions=options.get("require_parameter_descriptions", False),
        elicitation_handler=asking,
        usage_limits=options.get("usage_limits"),
        hooks=native_hooks(options.get("hooks", ())),
        max_return_chars=options.get("max_return_chars"),
        output=native_output,
        tool_search=options.get("tool_search", "local"),
    )
    return Agent(native, _Runs(deps_type, deps is not None, retries, end_strategy), output)


#: Answers a tool's question for the user: ``(ctx, message, schema)`` to an answer.
# A string, so `import starweaver` does not load `starweaver.elicitation` (and dataclasses).
_Answer: TypeAlias = "Elicited[Any] | Mapping[str, Any]"
ElicitationHandler: TypeAlias = "Callable[[ToolContext, str, dict[str, Any]], _Answer | Awaitable[_Answer]]"


create_agent_runtime = create_agent
"""The runtime entry point; today the same as ``create_agent``."""
