"""Every way to start a run takes the same arguments and reports the same things: `run`,
`run_sync` and `run_stream`, on an agent and on a session."""

from __future__ import annotations

import asyncio

import pytest
from conftest import call, calls_then_text, returns

from starweaver import RunResult, ToolContext, create_agent, tool
from starweaver.testing import FunctionModel, Messages, TestModel, tool_context
from starweaver.types import FunctionModelInfo


@tool
def add(left: int, right: int) -> int:
    """Add two integers."""
    return left + right


def test_run_sync_runs_a_script_to_its_end_and_refuses_a_running_loop() -> None:
    agent = create_agent(model=calls_then_text([call("c", "add", {"left": 2, "right": 3})], "5"))
    result = agent.run_sync("2 + 3?", tools=[add])
    assert (result.status, result.output) == ("completed", "5")
    assert returns(result.messages)[0]["content"] == 5
    assert agent.definitions == [], "the run's tools were for that run only"

    session = create_agent(model=TestModel.responses([{"text": "one"}, {"text": "two"}])).session()
    assert [session.run_sync("a").output, session.run_sync("b").output] == ["one", "two"]

    async def inside_a_loop() -> None:
        with pytest.raises(RuntimeError, match=r"cannot be called from a running event loop: use `await agent.run"):
            agent.run_sync("again")

    asyncio.run(inside_a_loop())


@pytest.mark.parametrize("where", ["agent", "session"])
def test_run_stream_takes_tools_and_toolsets_for_its_run_only(where: str) -> None:
    agent = create_agent(model=calls_then_text([call("c", "add", {"left": 2, "right": 3})], "5"))

    async def main() -> tuple[list[str], RunResult]:
        owner = agent if where == "agent" else agent.session()
        stream = owner.run_stream("2 + 3?", tools=[add])
        kinds: list[str] = [event["type"] async for event in stream]
        return kinds, await stream.result()

    kinds, result = asyncio.run(main())
    assert result.status == "completed", result.error
    assert returns(result.messages)[0]["content"] == 5
    assert kinds == [
        "run_start",
        "model_request",
        "model_response",
        "tool_call",
        "tool_return",
        "model_request",
        "model_response",
        "run_complete",
    ], kinds


def test_usage_counts_every_request_of_a_test_model() -> None:
    agent = create_agent(model=calls_then_text([call("c", "add", {"left": 1, "right": 1})]), tools=[add])
    assert agent.run_sync("go").usage.requests == 2


def test_an_answer_cut_at_the_token_limit_says_so_and_its_last_call_is_not_run() -> None:
    ran: list[int] = []

    @tool
    def record(n: int) -> int:
        ran.append(n)
        return n

    def answer(messages: Messages, info: FunctionModelInfo) -> dict[str, object]:
        if messages[-1]["parts"][-1]["kind"] == "tool_return":
            return {"text": "The answer is", "finish_reason": "length"}
        calls = [call("a", "record", {"n": 1}), call("b", "record", {"n": 2})]
        return {"tool_calls": calls, "finish_reason": "length"}

    result = create_agent(model=FunctionModel(answer), tools=[record]).run_sync("go")
    assert (result.status, result.finish_reason) == ("completed", "length")
    assert ran == [1], "the call being written at the cut never ran"
    cut = returns(result.messages)[1]["content"]
    assert isinstance(cut, dict) and cut["kind"] == "invalid_arguments" and "token limit" in str(cut["message"])
    reasons = [event.get("finish_reason") for event in result.events if event["type"] == "model_response"]
    assert reasons == ["length", "length"]
    assert create_agent(model=TestModel.responses([{"text": "ok"}])).run_sync("go").finish_reason is None


def test_a_tool_context_for_unit_tests_carries_deps_and_an_approval() -> None:
    @tool
    def deploy(ctx: ToolContext[dict[str, str]], env: str) -> str:
        """Deploy; needs an approval."""
        assert ctx.approval is not None
        return f"{ctx.deps['team']} deployed {env}, approved by {ctx.approval.decided_by}"

    ctx = tool_context("deploy", deps={"team": "ops"}, approval="alice")
    assert deploy(ctx, "prod") == "ops deployed prod, approved by alice"
    bare = tool_context()
    assert (bare.deps, bare.approval, bare.tool_name, bare.is_cancelled()) == (None, None, "tool", False)
    assert tool_context(approval=True).approval is not None
    assert tool_context(approval=False).approval is None
    with pytest.raises(TypeError, match="`approval` must be an ApprovalDecision, a bool or who approved"):
        tool_context(approval=3)  # type: ignore[arg-type]


def test_a_function_models_info_offers_the_tools_as_a_sequence_of_definition_dicts() -> None:
    seen: list[tuple[int, str, str, list[str], list[str]]] = []

    def answer(messages: Messages, info: FunctionModelInfo) -> dict[str, object]:
        tools = info["tools"]
        names = [definition["name"] for definition in tools.to_list()]
        with pytest.raises(IndexError, match="tool index out of range"):
            tools[len(tools)]
        seen.append((len(tools), tools[0]["name"], tools[-1]["name"], names, sorted(tools[0]["parameters"])))
        if info["step"] == 1:
            return {"tool_calls": [call("c", "add", {"left": 1, "right": 2})]}
        return {"text": "3"}

    result = create_agent(model=FunctionModel(answer), tools=[add]).run_sync("1 + 2?")
    assert result.output == "3"
    keys = sorted(add.definition.parameters)
    assert seen == [(1, "add", "add", ["add"], keys)] * 2, "each request offers the same definitions"
