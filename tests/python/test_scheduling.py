"""DESIGN.md §6 from Python: concurrency, barriers, same-name ordering, model order, caps."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Coroutine
from typing import Any

from conftest import call, calls_then_text, returns

from typing_extensions import Unpack

from starweaver import Tool, create_agent, tool
from starweaver.tools import ToolOptions


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
