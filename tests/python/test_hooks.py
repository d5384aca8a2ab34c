"""DESIGN.md §18 from Python: hooks around every call (sync and async), their order, what
each may return or raise, approval bound to rewritten arguments, and serve-mcp's hooks."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from conftest import call, calls_then_text, loose, returns

from starweaver import (
    DecisionError,
    Hooks,
    ModelRetry,
    ToolCall,
    ToolContext,
    ToolDefinition,
    ToolResult,
    Toolset,
    create_agent,
    tool,
)
from starweaver.types import Event

ran: list[str] = []


@tool
async def deploy(env: str) -> str:
    ran.append(env)
    return f"deployed to {env}"


@tool
def admin_drop() -> str:
    ran.append("dropped")
    return "dropped"


class ToProd(Hooks):
    def before_call(self, ctx: ToolContext, call: ToolCall) -> dict[str, Any]:
        return {**call.arguments, "env": "prod"}


class Logged(Hooks):
    def __init__(self, label: str, log: list[str]) -> None:
        self.name = label
        self.log = log

    async def before_call(self, ctx: ToolContext, call: ToolCall) -> None:
        self.log.append(f"{self.name} before {call.name} {call.arguments}")

    def after_call(self, ctx: ToolContext, call: ToolCall, result: ToolResult) -> None:
        self.log.append(f"{self.name} after {result.value}")


def tool_call_events(events: list[Event]) -> list[dict[str, object]]:
    return [{k: v for k, v in e.items() if k not in ("seq", "run_id")} for e in events if e["type"] == "tool_call"]


def test_hooks_run_run_agent_toolset_in_and_reverse_out_sync_and_async() -> None:
    ran.clear()
    log: list[str] = []
    toolset = Toolset("ops", [deploy]).with_hooks(Logged("toolset", log))
    agent = create_agent(
        model=calls_then_text([call("c1", "deploy", {"env": "dev"})]), toolsets=[toolset], hooks=[Logged("agent", log)]
    )
    result = agent.run_sync("go", hooks=[Logged("run", log)])
    assert result.status == "completed"
    args = "{'env': 'dev'}"
    assert log == [
        f"run before deploy {args}",
        f"agent before deploy {args}",
        f"toolset before deploy {args}",
        "toolset after deployed to dev",
        "agent after deployed to dev",
        "run after deployed to dev",
    ]
    assert tool_call_events(result.events) == [{"type": "tool_call", "tool_call_id": "c1", "name": "deploy"}]


def test_a_rewritten_and_a_short_circuited_call_in_one_event_stream() -> None:
    ran.clear()

    class Cached(Hooks):
        name = "cache"

        async def before_call(self, ctx: ToolContext, call: ToolCall) -> ToolResult | None:
            if call.id == "c2":
                return ToolResult("from cache")
            return None

    agent = create_agent(
        model=calls_then_text([call("c1", "deploy", {"env": "staging"}), call("c2", "deploy", {"env": "dev"})]),
        tools=[deploy],
        hooks=[ToProd(), Cached()],
    )
    result = agent.run_sync("go")
    assert ran == ["prod"]
    assert [r["content"] for r in returns(result.messages)] == ["deployed to prod", "from cache"]
    assert tool_call_events(result.events) == [
        {
            "type": "tool_call",
            "tool_call_id": "c1",
            "name": "deploy",
            "arguments": {"env": "prod"},
            "rewritten_by": "ToProd",
        },
        {
            "type": "tool_call",
            "tool_call_id": "c2",
            "name": "deploy",
            "arguments": {"env": "prod"},
            "rewritten_by": "ToProd",
            "answered_by": "cache",
        },
    ]


def test_rewritten_arguments_are_validated_against_the_schema() -> None:
    class Bad:
        def before_call(self, ctx: ToolContext, call: ToolCall) -> dict[str, Any]:
            return {"env": 7}

    agent = create_agent(model=calls_then_text([call("c1", "deploy", {"env": "dev"})]), tools=[deploy], hooks=[Bad()])
    [returned] = returns(agent.run_sync("go").messages)
    assert loose(returned["content"])["kind"] == "invalid_arguments"


def test_a_hook_raising_a_starweaver_exception_keeps_its_meaning() -> None:
    class Strict(Hooks):
        def before_call(self, ctx: ToolContext, call: ToolCall) -> None:
            raise ModelRetry("ask for dev first")

    agent = create_agent(model=calls_then_text([call("c1", "deploy", {"env": "x"})]), tools=[deploy], hooks=[Strict()])
    [returned] = returns(agent.run_sync("go").messages)
    assert (loose(returned["content"])["kind"], loose(returned["content"])["message"]) == (
        "model_retry",
        "ask for dev first",
    )


def test_an_unexpected_exception_in_a_hook_fails_the_call_not_the_run() -> None:
    ran.clear()

    class Broken(Hooks):
        async def after_call(self, ctx: ToolContext, call: ToolCall, result: ToolResult) -> None:
            raise KeyError("oops")

    agent = create_agent(model=calls_then_text([call("c1", "deploy", {"env": "x"})]), tools=[deploy], hooks=[Broken()])
    result = agent.run_sync("go")
    assert result.status == "completed"
    [returned] = returns(result.messages)
    assert loose(returned["content"])["kind"] == "execution"
    assert loose(returned["content"])["message"].startswith("hook `Broken` failed in `after_call`: ")
    assert ran == ["x"], "the tool ran once: a hook's failure is not retried"


class Keeps(Hooks):
    """Keeps the context and the call each method is handed, reading nothing of them."""

    def __init__(self, label: str, seen: list[tuple[str, ToolContext, ToolCall]]) -> None:
        self.name = label
        self.seen = seen

    def before_call(self, ctx: ToolContext, call: ToolCall) -> None:
        self.seen.append((f"{self.name} before", ctx, call))

    def after_call(self, ctx: ToolContext, call: ToolCall, result: ToolResult) -> None:
        self.seen.append((f"{self.name} after", ctx, call))


def test_one_calls_hooks_are_handed_one_context_and_one_call_while_its_arguments_stand() -> None:
    seen: list[tuple[str, ToolContext, ToolCall]] = []
    agent = create_agent(
        model=calls_then_text([call("c1", "deploy", {"env": "dev"}), call("c2", "deploy", {"env": "qa"})]),
        tools=[deploy],
        hooks=[Keeps("agent", seen)],
    )
    assert agent.run_sync("go", hooks=[Keeps("run", seen)]).status == "completed"
    by_call: dict[str, list[tuple[ToolContext, ToolCall]]] = {}
    for _, ctx, tool_call in seen:
        by_call.setdefault(ctx.tool_call_id, []).append((ctx, tool_call))
    assert sorted(by_call) == ["c1", "c2"]
    for call_id, handed in by_call.items():
        assert len(handed) == 4, call_id
        assert all(ctx is handed[0][0] for ctx, _ in handed), call_id
        assert all(tool_call is handed[0][1] for _, tool_call in handed), call_id
        assert handed[0][1].id == call_id
    assert by_call["c1"][0][0] is not by_call["c2"][0][0]
    assert by_call["c1"][0][1].arguments == {"env": "dev"}
    assert by_call["c2"][0][1].arguments == {"env": "qa"}


def test_a_call_whose_arguments_were_rewritten_is_handed_anew_with_the_arguments_it_has() -> None:
    seen: list[tuple[str, ToolContext, ToolCall]] = []

    class Reads(Hooks):
        def before_call(self, ctx: ToolContext, call: ToolCall) -> None:
            call.arguments["env"] = "changed in place, which changes nothing"

    ran.clear()
    agent = create_agent(model=calls_then_text([call("c1", "deploy", {"env": "dev"})]), tools=[deploy])
    result = agent.run_sync("go", hooks=[Keeps("outer", seen), Reads(), ToProd(), Keeps("inner", seen)])
    assert result.status == "completed"
    assert ran == ["prod"]
    handed = {label: (ctx, tool_call) for label, ctx, tool_call in seen}
    assert handed["outer before"][1].arguments == {"env": "dev"}
    for label in ("inner before", "inner after", "outer after"):
        assert handed[label][1].arguments == {"env": "prod"}, label
        assert handed[label][1] is not handed["outer before"][1], label
    assert len({id(ctx) for ctx, _ in handed.values()}) == 1


def test_a_rewrite_to_an_equal_looking_value_is_still_shown_as_rewritten() -> None:
    seen: list[tuple[str, ToolContext, ToolCall]] = []

    class Negates(Hooks):
        def before_call(self, ctx: ToolContext, call: ToolCall) -> dict[str, Any]:
            return {"x": -0.0}

    @tool
    def measure(x: float) -> str:
        return repr(x)

    agent = create_agent(model=calls_then_text([call("c1", "measure", {"x": 0.0})]), tools=[measure])
    result = agent.run_sync("go", hooks=[Keeps("outer", seen), Negates(), Keeps("inner", seen)])
    assert [r["content"] for r in returns(result.messages)] == ["-0.0"]
    handed = {label: tool_call for label, _, tool_call in seen}
    assert repr(handed["outer before"].arguments["x"]) == "0.0"
    assert repr(handed["inner before"].arguments["x"]) == "-0.0"


def test_a_result_a_hook_or_a_tool_keeps_stays_whole_for_them_and_for_the_model() -> None:
    kept: list[ToolResult] = []

    @tool
    def report() -> ToolResult:
        made = ToolResult({"rows": 3}, metadata={"source": "db"})
        kept.append(made)
        return made

    class KeepsResults(Hooks):
        def after_call(self, ctx: ToolContext, call: ToolCall, result: ToolResult) -> None:
            kept.append(result)

    agent = create_agent(model=calls_then_text([call("c1", "report")]), tools=[report], hooks=[KeepsResults()])
    result = agent.run_sync("go")
    assert [r["content"] for r in returns(result.messages)] == [{"rows": 3}]
    assert [(r.value, r.metadata) for r in kept] == [({"rows": 3}, {"source": "db"})] * 2


def test_a_result_after_call_gives_back_or_lets_through_reaches_the_model_whole() -> None:
    kept: list[ToolResult] = []

    @tool
    def report() -> ToolResult:
        return ToolResult({"rows": 3}, metadata={"source": "db"}, app_value={"cached": True})

    class GivesBack(Hooks):
        def after_call(self, ctx: ToolContext, call: ToolCall, result: ToolResult) -> ToolResult:
            return result

    class LetsThrough(Hooks):
        async def after_call(self, ctx: ToolContext, call: ToolCall, result: ToolResult) -> None:
            await asyncio.sleep(0)

    class KeepsAndGivesBack(Hooks):
        async def after_call(self, ctx: ToolContext, call: ToolCall, result: ToolResult) -> ToolResult:
            kept.append(result)
            return result

    for hooks in ([GivesBack()], [LetsThrough()], [KeepsAndGivesBack()], [GivesBack(), LetsThrough(), GivesBack()]):
        kept.clear()
        agent = create_agent(model=calls_then_text([call("c1", "report")]), tools=[report], hooks=hooks)
        result = agent.run_sync("go")
        assert [(r["content"], r["metadata"], r.get("app_value")) for r in returns(result.messages)] == [
            ({"rows": 3}, {"source": "db"}, {"cached": True})
        ], hooks
        keepers = sum(isinstance(hook, KeepsAndGivesBack) for hook in hooks)
        assert [(r.value, r.metadata, r.app_value) for r in kept] == [
            ({"rows": 3}, {"source": "db"}, {"cached": True})
        ] * keepers


def test_after_call_and_on_error_replace_the_result() -> None:
    @tool(max_retries=0)
    def flaky() -> str:
        raise RuntimeError("down")

    class Redact(Hooks):
        def after_call(self, ctx: ToolContext, call: ToolCall, result: ToolResult) -> str:
            return str(result.value).replace("prod", "***")

        def on_error(self, ctx: ToolContext, call: ToolCall, error: Exception) -> ToolResult:
            return ToolResult({"fallback": type(error).__name__})

    agent = create_agent(
        model=calls_then_text([call("c1", "deploy", {"env": "prod"}), call("c2", "flaky")]),
        tools=[deploy, flaky],
        hooks=[Redact()],
    )
    contents = [r["content"] for r in returns(agent.run_sync("go").messages)]
    assert contents == ["deployed to ***", {"fallback": "Execution"}]


def test_prepare_tools_filters_what_the_model_sees_and_can_call() -> None:
    ran.clear()

    class HideAdmin(Hooks):
        def prepare_tools(self, ctx: ToolContext, definitions: list[ToolDefinition]) -> list[ToolDefinition]:
            return [d for d in definitions if not d.name.startswith("admin_")]

    model = calls_then_text([call("c1", "admin_drop")])
    agent = create_agent(model=model, tools=[deploy, admin_drop], hooks=[HideAdmin()])
    [returned] = returns(agent.run_sync("go").messages)
    assert loose(returned["content"])["kind"] == "not_found"
    assert [t["name"] for t in model.requests[0]["tools"]] == ["deploy"]
    assert ran == []


def test_approval_shows_and_is_bound_to_the_arguments_a_hook_rewrote() -> None:
    """Issue 22's required test: `staging` rewritten to `prod` makes the pending approval
    show `prod`, and a decision made for `staging` does not run the call."""

    async def go() -> None:
        ran.clear()
        agent = create_agent(
            model=calls_then_text([call("c1", "deploy", {"env": "staging"})]),
            tools=[deploy],
            hooks=[ToProd()],
            approval_required_tools=["deploy"],
        )
        session = agent.session()
        waiting = await session.run("deploy")
        assert waiting.status == "waiting"
        pending = waiting.hitl.approvals[0]
        assert pending.arguments == {"env": "prod"}
        for_staging = pending.approve().to_dict() | {"arguments": {"env": "staging"}}
        with pytest.raises(DecisionError, match="approved arguments"):
            await session.hitl.resume(approvals=[for_staging])
        assert ran == []
        done = await session.hitl.resume(approvals=[pending.approve()])
        assert done.status == "completed"
        assert ran == ["prod"]

    asyncio.run(go())


def test_a_run_hooks_rewrite_needs_the_same_hooks_on_resume() -> None:
    """A run's own hooks are the resume's too only when given again: resumed with them,
    the approved call runs with the arguments they rewrote; without them, the call would
    run with other arguments than were approved, so it does not run."""

    async def go(resume_hooks: list[ToProd]) -> list[str]:
        ran.clear()
        agent = create_agent(
            model=calls_then_text([call("c1", "deploy", {"env": "staging"})]),
            tools=[deploy],
            approval_required_tools=["deploy"],
        )
        session = agent.session()
        waiting = await session.run("deploy", hooks=[ToProd()])
        pending = waiting.hitl.approvals[0]
        assert pending.arguments == {"env": "prod"}
        done = await session.resume_after_hitl(approvals=[pending.approve()], hooks=resume_hooks)
        assert done.status == "completed"
        return [loose(r["content"])["kind"] if isinstance(r["content"], dict) else "ok" for r in returns(done.messages)]

    assert asyncio.run(go([ToProd()])) == ["ok"]
    assert ran == ["prod"]
    assert asyncio.run(go([])) == ["approval_denied"]
    assert ran == []


def test_an_object_with_no_hook_methods_is_refused_by_name() -> None:
    class Nothing:
        pass

    with pytest.raises(TypeError, match="hook `Nothing` has none of `before_call`"):
        create_agent(model=calls_then_text([]), hooks=[Nothing()])
