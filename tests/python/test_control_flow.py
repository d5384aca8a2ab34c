"""DESIGN.md §7 from Python: what each tool outcome makes the runtime do and the model see."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

import pytest
from conftest import call, calls_then_text, loose, returns
from pydantic import BaseModel

from starweaver import (
    Cancelled,
    Execution,
    Feedback,
    InvalidArguments,
    ModelError,
    ModelRetry,
    RegistrationError,
    RunFailedError,
    RunResult,
    Timeout,
    Tool,
    ToolContext,
    ToolResult,
    UserError,
    create_agent,
    tool,
)
from starweaver.testing import TestModel
from starweaver.types import ToolReturnPart

T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


async def one_call(t: Tool[..., object], name: str, arguments: dict[str, object] | None = None) -> ToolReturnPart:
    result = await create_agent(model=calls_then_text([call("c1", name, arguments)]), tools=[t]).run("go")
    return returns(result.messages)[0]


def test_values_pydantic_models_and_dataclasses_are_serialised() -> None:
    import dataclasses
    import datetime

    class Out(BaseModel):
        when: datetime.date

    @dataclasses.dataclass
    class Point:
        x: int

    @tool
    async def model_out() -> Out:
        return Out(when=datetime.date(2026, 1, 2))

    @tool
    def dataclass_out() -> Point:
        return Point(3)

    assert run(one_call(model_out, "model_out"))["content"] == {"when": "2026-01-02"}
    assert run(one_call(dataclass_out, "dataclass_out"))["content"] == {"x": 3}


def test_a_value_that_is_not_json_serialisable_is_an_execution_error() -> None:
    @tool(max_retries=0)
    async def opaque() -> object:
        return object()

    ret = run(one_call(opaque, "opaque"))
    assert loose(ret["content"])["kind"] == "execution"
    assert "not JSON-serialisable" in loose(ret["content"])["message"]


def test_invalid_arguments_name_the_field_and_count_a_retry() -> None:
    seen: list[int] = []

    @tool
    async def add(ctx: ToolContext, left: int, right: int) -> int:
        seen.append(ctx.retry)
        return left + right

    async def go() -> list[ToolReturnPart]:
        model = TestModel.responses(
            [
                TestModel.tool_call_response([call("c1", "add", {"left": "two", "right": 1})]),
                TestModel.tool_call_response([call("c2", "add", {"left": 1})]),
                TestModel.tool_call_response([call("c3", "add", {"left": 1, "right": 1, "extra": 0})]),
                TestModel.tool_call_response([call("c4", "add", {"left": 1, "right": 1})]),
                {"text": "done"},
            ]
        )
        result = await create_agent(model=model, tools=[add]).run("go")
        assert result.status == "completed"
        return returns(result.messages)

    rets = run(go())
    assert [loose(r["content"])["message"] for r in rets[:3]] == [
        "`left`: Input should be a valid integer, unable to parse string as an integer",
        "`right`: Field required",
        "`extra`: Extra inputs are not permitted",
    ]
    assert all(loose(r["content"])["kind"] == "invalid_arguments" for r in rets[:3])
    assert seen == [3], "the valid call saw the three retries spent before it"


def test_raised_invalid_arguments_and_model_retry_exhaust_the_budget_and_fail_the_run() -> None:
    for exc in (InvalidArguments("bad"), ModelRetry("try a positive number")):

        @tool(max_retries=1)
        async def picky(n: int) -> int:
            raise exc  # noqa: B023 (the tool runs within this iteration)

        async def go() -> RunResult:
            model = TestModel.responses(
                [
                    TestModel.tool_call_response([call("c1", "picky", {"n": 1})]),
                    TestModel.tool_call_response([call("c2", "picky", {"n": 2})]),
                    {"text": "unreachable"},
                ]
            )
            return await create_agent(model=model, tools=[picky]).run("go")

        result = run(go())
        assert result.status == "failed"
        assert type(result.error) is RunFailedError and result.error is result.exception
        assert str(result.error) == f"tool `picky` exceeded its retry budget of 1; last error: {exc.message}"


def test_feedback_is_guidance_not_an_error() -> None:
    @tool(max_retries=0)
    async def read(path: str) -> str:
        raise Feedback(f"no such file: {path}", metadata={"path": path})

    ret = run(one_call(read, "read", {"path": "notes.txt"}))
    assert ret["is_error"] is False
    assert ret["content"] == {"kind": "feedback", "message": "no such file: notes.txt", "success": False}
    assert ret["metadata"] == {"path": "notes.txt"}


def test_user_error_is_never_retried() -> None:
    attempts: list[int] = []

    @tool
    async def needs_wiring(ctx: ToolContext) -> None:
        attempts.append(ctx.attempt)
        raise UserError("missing runtime dependency")

    ret = run(one_call(needs_wiring, "needs_wiring"))
    assert (ret["is_error"], loose(ret["content"])["kind"], attempts) == (True, "user_error", [1])


def test_unexpected_exceptions_are_retried_then_shown_with_attempts_and_a_private_traceback() -> None:
    attempts: list[int] = []

    @tool
    async def flaky(ctx: ToolContext) -> str:
        attempts.append(ctx.attempt)
        raise ValueError("backend on fire")

    async def go() -> RunResult:
        return await create_agent(model=calls_then_text([call("c1", "flaky")]), tools=[flaky]).run("go")

    result = run(go())
    part = returns(result.messages)[0]
    assert attempts == [1, 2, 3, 4]
    assert loose(part["content"])["kind"] == "execution"
    assert loose(part["content"])["attempts"] == 4
    assert loose(part["content"])["message"] == "ValueError: backend on fire (failed after 4 attempt(s))"
    assert "Traceback" in loose(part["private_metadata"])["traceback"]
    assert "Traceback" not in repr({k: v for k, v in part.items() if k != "private_metadata"})


def test_execution_errors_recover_on_a_later_attempt() -> None:
    @tool(max_retries=2)
    async def eventually(ctx: ToolContext) -> int:
        if ctx.attempt < 3:
            raise Execution("not yet")
        return ctx.attempt

    assert run(one_call(eventually, "eventually"))["content"] == 3


def test_sync_tools_run_in_worker_threads() -> None:
    loop_thread: list[int] = []

    @tool
    def where() -> bool:
        return threading.get_ident() != loop_thread[0]

    async def go() -> ToolReturnPart:
        loop_thread.append(threading.get_ident())
        return await one_call(where, "where")

    assert run(go())["content"] is True


def test_a_timeout_cancels_the_coroutine() -> None:
    seen: list[str] = []

    @tool(timeout_ms=20)
    async def slow() -> str:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise
        return "never"

    ret = run(one_call(slow, "slow"))
    assert ret["content"] == {"kind": "timeout", "message": "tool `slow` timed out after 20 ms", "success": False}
    assert seen == ["cancelled"]


def test_wakes_from_the_runtime_reach_each_loop_a_thread_runs_and_loops_that_cannot_watch_a_pipe() -> None:
    """A timeout's timer fires on the runtime's thread, which wakes the waiting loop through
    that loop's doorbell, or through `call_soon_threadsafe` where the loop cannot watch a
    pipe. A lost wake would leave the run waiting: `wait_for` turns that into a failure."""

    @tool(timeout_ms=20)
    async def slow() -> str:
        await asyncio.sleep(10)
        return "never"

    async def timed_out() -> str:
        ret = await asyncio.wait_for(one_call(slow, "slow"), 5)
        return str(loose(ret["content"])["kind"])

    def cannot_watch_pipes(*args: Any) -> None:
        raise NotImplementedError

    first, second, plain = asyncio.new_event_loop(), asyncio.new_event_loop(), asyncio.new_event_loop()
    vars(plain)["add_reader"] = cannot_watch_pipes
    # Two loops taking turns on one thread, each with a run left waiting when the other starts.
    left = first.create_task(timed_out())
    first.run_until_complete(asyncio.sleep(0.005))
    assert second.run_until_complete(timed_out()) == "timeout"
    assert first.run_until_complete(left) == "timeout"
    assert [loop.run_until_complete(timed_out()) for loop in (second, first, plain)] == ["timeout"] * 3

    # The doorbell is a pipe each loop watches besides its own; the plain loop has none.
    def watched(loop: asyncio.AbstractEventLoop) -> int:
        return len(vars(loop)["_selector"].get_map())

    fresh = asyncio.new_event_loop()
    assert [watched(loop) - watched(fresh) for loop in (first, second, plain)] == [1, 1, 0]
    for loop in (first, second, plain, fresh):
        loop.close()
    elsewhere: list[str] = []
    thread = threading.Thread(target=lambda: elsewhere.append(asyncio.run(timed_out())))
    thread.start()
    thread.join()
    assert [asyncio.run(timed_out()), *elsewhere] == ["timeout", "timeout"]


def test_tools_raising_cancelled_or_timeout_map_to_those_kinds() -> None:
    for exc, kind in ((Cancelled("stopped"), "cancelled"), (Timeout("too slow"), "timeout")):

        @tool
        async def gives_up() -> None:
            raise exc  # noqa: B023 (the tool runs within this iteration)

        ret = run(one_call(gives_up, "gives_up"))
        assert (loose(ret["content"])["kind"], ret["is_error"]) == (kind, True)


def test_cancelling_the_awaiting_task_cancels_running_tools() -> None:
    observed: list[str] = []

    @tool
    async def waits(ctx: ToolContext) -> None:
        observed.append(f"cancelled before: {ctx.is_cancelled()}")
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            observed.append(f"CancelledError, is_cancelled: {ctx.is_cancelled()}")
            raise

    @tool
    async def watches(ctx: ToolContext) -> None:
        await ctx.cancelled()
        observed.append("cancelled() completed")

    async def go() -> None:
        agent = create_agent(
            model=calls_then_text([call("c1", "waits"), call("c2", "watches")]), tools=[waits, watches]
        )
        task = asyncio.ensure_future(agent.run("go"))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run(go())
    assert observed[:2] == ["cancelled before: False", "CancelledError, is_cancelled: True"]


def test_ctx_cancelled_completes_when_the_run_is_cancelled() -> None:
    waiters: list[asyncio.Future[None]] = []

    @tool
    async def watcher(ctx: ToolContext) -> None:
        waiters.append(ctx.cancelled())
        await asyncio.sleep(10)

    async def go() -> None:
        agent = create_agent(model=calls_then_text([call("c1", "watcher")]), tools=[watcher])
        task = asyncio.ensure_future(agent.run("go"))
        await asyncio.sleep(0.02)
        assert not waiters[0].done()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.wait_for(waiters[0], timeout=5)

    run(go())
    assert waiters[0].done()


def test_an_unknown_tool_is_a_not_found_return() -> None:
    @tool
    async def known() -> None: ...

    ret = run(one_call(known, "unknown"))
    assert loose(ret["content"])["kind"] == "not_found"
    assert loose(ret["content"])["message"] == "unknown tool `unknown`; available tools: `known`"


def test_tool_results_and_dependencies() -> None:
    class Db:
        url = "postgres://db"

    @tool
    async def query(ctx: ToolContext[Db]) -> ToolResult:
        return ToolResult(ctx.deps.url, model_content="connected", private_metadata={"pool": 1})

    async def go() -> ToolReturnPart:
        agent = create_agent(model=calls_then_text([call("c1", "query")]), tools=[query], deps=Db())
        return returns((await agent.run("go")).messages)[0]

    part = run(go())
    assert (part["content"], part["value"], part["private_metadata"]) == ("connected", "postgres://db", {"pool": 1})


def test_bad_registrations_are_clear_errors() -> None:
    @tool
    async def twin() -> None: ...

    with pytest.raises(RegistrationError, match="duplicate tool name `twin`"):
        create_agent(model=TestModel.responses([]), tools=[twin, twin])
    with pytest.raises(RegistrationError, match=r"names must match"):
        tool(name="has space")(twin)
    with pytest.raises(RegistrationError, match="invalid approval rule"):
        create_agent(model=TestModel.responses([]), tools=[twin], approval_required_tools=[""])
    with pytest.raises(RegistrationError, match="must be an ordinary keyword parameter"):

        @tool
        async def variadic(*names: str) -> None: ...

    with pytest.raises(TypeError, match="`model` must be a starweaver model"):
        create_agent(model=object(), tools=[])  # type: ignore[call-overload]


def test_a_script_that_runs_out_fails_the_run_clearly() -> None:
    async def go() -> RunResult:
        return await create_agent(model=TestModel.responses([]), tools=[]).run("go")

    result = run(go())
    assert result.status == "failed"
    assert isinstance(result.error, ModelError) and "TestModel script exhausted" in str(result.error)
