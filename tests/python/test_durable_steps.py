"""DESIGN.md §15: a run driven one step at a time, as `starweaver.temporal` drives it in a
workflow, here in process: the steps are small classes to `match` on, positionally or by
keyword, and the run ends as the in-process run does."""

from __future__ import annotations

import asyncio
from typing import Any

from starweaver import Agent, ApprovalRequired, RunResult, ToolContext, create_agent, tool
from starweaver._native import AwaitCalls, Done, NativeDurableRun, RequestModel, StartCalls
from starweaver.testing import TestModel


@tool
async def double(n: int) -> int:
    """Double a number."""
    await asyncio.sleep(0)
    return n * 2


@tool
async def deploy(ctx: ToolContext, env: str) -> str:
    """Deploy, once a human approves."""
    if ctx.approval is None:
        raise ApprovalRequired(f"deploy to {env}")
    return f"deployed to {env}"


def doubling_agent() -> Agent:
    calls = [{"id": f"c{n}", "name": "double", "arguments": {"n": n}} for n in (1, 2)]
    model = TestModel.responses([TestModel.tool_call_response(calls), {"text": "2 and 4"}])
    return create_agent(model=model, tools=[double])


async def drive(agent: Agent, run: NativeDurableRun, run_id: str) -> tuple[list[str], RunResult]:
    """Runs each step's I/O in process; returns the steps seen and the run's result."""
    native = agent._native  # pyright: ignore[reportPrivateUsage]
    seen: list[str] = []
    running: list[tuple[int, asyncio.Future[dict[str, Any]]]] = []
    while True:
        match run.next_step():
            case RequestModel(task):
                seen.append("request_model")
                run.model_answered(await native.request_model(task))
            case StartCalls(tasks):
                seen.append(f"start_calls {[task['call']['id'] for task in tasks]}")
                running += [(task["index"], asyncio.ensure_future(native.run_call(run_id, task))) for task in tasks]
            case AwaitCalls():
                seen.append("await_calls")
                index, call = running.pop(0)
                run.call_finished(index, await call)
            case Done(result):
                seen.append(f"done {result.status}")
                return seen, result


def test_steps_match_by_position_and_the_run_ends_as_in_process() -> None:
    async def scenario() -> None:
        agent = doubling_agent()
        seen, result = await drive(agent, NativeDurableRun.start(agent._native, "double", "run_1"), "run_1")  # pyright: ignore[reportPrivateUsage]
        # Two calls of one tool run one at a time, in model order (DESIGN.md §6).
        assert seen == [
            "request_model",
            "start_calls ['c1']",
            "await_calls",
            "start_calls ['c2']",
            "await_calls",
            "request_model",
            "done completed",
        ]
        local = await doubling_agent().run("double")
        assert (result.status, result.output, result.messages) == (local.status, local.output, local.messages)

    asyncio.run(scenario())


def test_steps_name_their_fields_for_keyword_patterns_and_repr() -> None:
    agent = doubling_agent()
    run = NativeDurableRun.start(agent._native, "double", "run_1")  # pyright: ignore[reportPrivateUsage]
    step = run.next_step()
    assert (RequestModel.__match_args__, StartCalls.__match_args__) == (("task",), ("tasks",))
    assert (AwaitCalls.__match_args__, Done.__match_args__) == ((), ("result",))
    match step:
        case RequestModel(task=task):
            assert task["run_id"] == "run_1" and task["step"] == 1
            assert repr(step).startswith("RequestModel(task={")
        case other:
            raise AssertionError(f"the first step requests the model, not {other!r}")


def test_a_waiting_run_is_done_waiting_and_resumes_to_done() -> None:
    async def scenario() -> None:
        call = {"id": "c1", "name": "deploy", "arguments": {"env": "prod"}}
        model = TestModel.responses([TestModel.tool_call_response([call]), {"text": "shipped"}])
        agent = create_agent(model=model, tools=[deploy])
        run = NativeDurableRun.start(agent._native, "ship", "run_1")  # pyright: ignore[reportPrivateUsage]
        seen, waiting = await drive(agent, run, "run_1")
        assert (seen[-1], waiting.status) == ("done waiting", "waiting")
        assert run.pending is not None and run.pending.approvals[0].reason == "deploy to prod"
        run.resume(approvals=[run.pending.approvals[0].approve()])
        seen, done = await drive(agent, run, "run_1")
        assert (seen[-1], done.output) == ("done completed", "shipped")
        assert run.pending is None

    asyncio.run(scenario())
