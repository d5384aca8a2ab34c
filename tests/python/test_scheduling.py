"""DESIGN.md §6 from Python: concurrency, barriers, same-name ordering, model order, caps."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
from collections.abc import Coroutine
from typing import Any

import pytest
from conftest import call, calls_then_text, returns
from typing_extensions import Unpack

from starweaver import Agent, ModelRetry, RunResult, Tool, ToolContext, create_agent, tool
from starweaver.types import ToolOptions


def make_sleeper(
    tool_name: str,
    log: list[str],
    in_flight: list[int],
    peak: list[int],
    seconds: float = 0.05,
    **options: Unpack[ToolOptions],
) -> Tool[[str], Coroutine[Any, Any, str]]:
    options["name"] = tool_name

    @tool(**options)
    async def sleeper(tag: str = tool_name) -> str:
        log.append(f"{tag} start")
        in_flight[0] += 1
        peak[0] = max(peak[0], in_flight[0])
        await asyncio.sleep(seconds)
        in_flight[0] -= 1
        log.append(f"{tag} end")
        return tag

    return sleeper


def test_calls_of_one_response_run_concurrently() -> None:
    log: list[str] = []
    in_flight, peak = [0], [0]
    tools = [make_sleeper(f"t{i}", log, in_flight, peak) for i in range(5)]
    model = calls_then_text([call(f"c{i}", f"t{i}") for i in range(5)])
    asyncio.run(create_agent(model=model, tools=tools).run("go"))
    assert peak[0] == 5


def test_a_sequential_call_is_a_barrier() -> None:
    log: list[str] = []
    in_flight, peak = [0], [0]
    slow = make_sleeper("slow", log, in_flight, peak)
    audit = make_sleeper("audit", log, in_flight, peak, seconds=0.01, sequential=True)
    fast = make_sleeper("fast", log, in_flight, peak, seconds=0.001)
    model = calls_then_text([call("1", "slow"), call("2", "audit"), call("3", "fast")])
    asyncio.run(create_agent(model=model, tools=[slow, audit, fast]).run("go"))
    assert log == ["slow start", "slow end", "audit start", "audit end", "fast start", "fast end"]


def test_same_name_calls_run_in_model_order_while_other_tools_overlap() -> None:
    log: list[str] = []
    writes, write_peak = [0], [0]
    reads, read_peak = [0], [0]
    write = make_sleeper("write", log, writes, write_peak, seconds=0.02)
    read = make_sleeper("read", log, reads, read_peak, seconds=0.05)
    model = calls_then_text(
        [call("1", "write", {"tag": "w1"}), call("2", "read", {"tag": "r1"}), call("3", "write", {"tag": "w2"})]
    )
    result = asyncio.run(create_agent(model=model, tools=[write, read]).run("go"))
    assert write_peak[0] == 1
    assert log.index("w1 end") < log.index("w2 start")
    assert log.index("r1 start") < log.index("w1 end"), "the unrelated read overlapped the writes"
    assert [r["tool_call_id"] for r in returns(result.messages)] == ["1", "2", "3"], "results in model order"


def test_a_concurrency_cap_limits_calls_in_flight() -> None:
    log: list[str] = []
    in_flight, peak = [0], [0]
    tools = [make_sleeper(f"t{i}", log, in_flight, peak, seconds=0.01) for i in range(6)]
    model = calls_then_text([call(f"c{i}", f"t{i}") for i in range(6)])
    asyncio.run(create_agent(model=model, tools=tools, max_concurrency=2).run("go"))
    assert peak[0] == 2


def test_a_hundred_sleeping_tools_really_overlap() -> None:
    log: list[str] = []
    in_flight, peak = [0], [0]
    tools = [make_sleeper(f"t{i}", log, in_flight, peak, seconds=0.05) for i in range(100)]
    model = calls_then_text([call(f"c{i}", f"t{i}") for i in range(100)])
    started = time.perf_counter()
    asyncio.run(create_agent(model=model, tools=tools).run("go"))
    assert peak[0] == 100
    assert time.perf_counter() - started < 5, "deadlock guard, not a timing target"


# A run of calls to one sync tool runs ahead on a worker thread of its own (`bridge/ahead.rs`):
# each call starts once the one before it succeeded. What the runtime promises is unchanged.


def test_a_chain_of_sync_calls_runs_one_at_a_time_with_its_events_in_order() -> None:
    log: list[tuple[int, int]] = []
    busy = threading.Lock()

    @tool
    def step(n: int) -> int:
        assert busy.acquire(blocking=False), "two calls overlapped"
        log.append((n, threading.get_ident()))
        time.sleep(0.001)
        busy.release()
        return n

    model = calls_then_text([call(f"c{n}", "step", {"n": n}) for n in range(20)])
    result = asyncio.run(create_agent(model=model, tools=[step]).run("go"))
    assert [n for n, _ in log] == list(range(20))
    threads = {thread for _, thread in log}
    assert len(threads) == 1 and threading.get_ident() not in threads, "one worker thread, not the loop's"
    assert [r["content"] for r in returns(result.messages)] == list(range(20))
    calls_and_returns = [
        (e["type"], e["tool_call_id"]) for e in result.events if e["type"] in ("tool_call", "tool_return")
    ]
    assert calls_and_returns == [(kind, f"c{n}") for n in range(20) for kind in ("tool_call", "tool_return")]


def test_a_failure_stops_the_chain_so_retries_and_model_retries_come_first() -> None:
    log: list[str] = []
    failed: set[str] = set()

    @tool
    def step(ctx: ToolContext, n: int) -> int:
        log.append(f"{n}: attempt {ctx.attempt}, retry {ctx.retry}")
        if n == 1 and "execution" not in failed:
            failed.add("execution")
            raise ConnectionError("flaky")  # an execution error: retried at once
        if n == 2 and "model" not in failed:
            failed.add("model")
            raise ModelRetry("not that one")  # back to the model, counted for the tool
        return n

    model = calls_then_text([call(f"c{n}", "step", {"n": n}) for n in range(4)])
    result = asyncio.run(create_agent(model=model, tools=[step]).run("go"))
    assert log == [
        "0: attempt 1, retry 0",
        "1: attempt 1, retry 0",
        "1: attempt 2, retry 0",
        "2: attempt 1, retry 0",
        "3: attempt 1, retry 1",
    ]
    assert [r["is_error"] for r in returns(result.messages)] == [False, False, True, False]


def test_cancelling_the_run_stops_the_chain() -> None:
    started: list[int] = []
    gate = threading.Event()

    @tool
    def step(n: int) -> int:
        started.append(n)
        gate.wait(5)
        return n

    async def scenario() -> None:
        agent = create_agent(model=calls_then_text([call(f"c{n}", "step", {"n": n}) for n in range(50)]), tools=[step])
        task = asyncio.ensure_future(agent.run("go"))
        while not started:
            await asyncio.sleep(0.001)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        gate.set()

    asyncio.run(scenario())
    time.sleep(0.05)
    assert started == [0], "nothing after the running call starts once the run is cancelled"


def test_chained_calls_see_the_callers_context_variables_and_not_each_others() -> None:
    request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="none")
    seen: list[str] = []

    @tool
    def step(n: int) -> None:
        seen.append(request_id.get())
        request_id.set(f"changed by {n}")

    async def scenario() -> None:
        request_id.set("req-1")
        await create_agent(
            model=calls_then_text([call(f"c{n}", "step", {"n": n}) for n in range(3)]), tools=[step]
        ).run("go")

    asyncio.run(scenario())
    assert seen == ["req-1", "req-1", "req-1"]


def test_two_runs_chaining_one_tool_with_the_same_call_ids_keep_their_own_outcomes() -> None:
    @tool
    def echo(tag: str) -> str:
        time.sleep(0.001)
        return tag

    def agent(prefix: str) -> Agent:
        model = calls_then_text([call(f"c{n}", "echo", {"tag": f"{prefix}{n}"}) for n in range(10)])
        return create_agent(model=model, tools=[echo])

    async def scenario() -> tuple[RunResult, RunResult]:
        return await asyncio.gather(agent("a").run("go"), agent("b").run("go"))

    first, second = asyncio.run(scenario())
    assert [r["content"] for r in returns(first.messages)] == [f"a{n}" for n in range(10)]
    assert [r["content"] for r in returns(second.messages)] == [f"b{n}" for n in range(10)]
