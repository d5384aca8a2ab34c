"""DESIGN.md §18 from Python: concurrency limits beside the agent's cap. ``max_concurrency``
on a tool, a toolset or an agent takes a number (a limit of its own) or a shared
``ConcurrencyLimit``, which every tool, toolset and agent of the process naming it shares.
Calls that find a limit full queue, in model order, and their ``tool_call`` event says so."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from conftest import call, calls_then_text, returns
from typing_extensions import Unpack

from starweaver import ConcurrencyLimit, RegistrationError, create_agent, tool
from starweaver.toolsets import Toolset
from starweaver.types import Event, ToolOptions


class Flight:
    """How many calls are inside the tools at once, at most, and the order they started."""

    def __init__(self) -> None:
        self.now = 0
        self.peak = 0
        self.started: list[str] = []

    def tool(self, tool_name: str, **options: Unpack[ToolOptions]) -> Any:
        flight = self
        options["name"] = tool_name

        @tool(**options)
        async def sleeper(tag: str = tool_name) -> str:
            """Takes a moment."""
            flight.started.append(tag)
            flight.now += 1
            flight.peak = max(flight.peak, flight.now)
            await asyncio.sleep(0.02)
            flight.now -= 1
            return tag

        return sleeper


def queued_for(events: list[Event]) -> dict[str, list[str]]:
    return {e["tool_call_id"]: e.get("queued_for", []) for e in events if e["type"] == "tool_call"}


def test_a_tools_own_limit_holds_across_concurrent_runs() -> None:
    flight = Flight()
    search = flight.tool("search", max_concurrency=2)
    assert search.definition.max_concurrency == 2
    assert search.definition.to_dict()["max_concurrency"] == 2

    async def runs() -> None:
        agents = [create_agent(model=calls_then_text([call("c", "search")]), tools=[search]) for _ in range(5)]
        results = await asyncio.gather(*(agent.run("go") for agent in agents))
        assert all(result.status == "completed" for result in results)

    asyncio.run(runs())
    assert flight.peak == 2


def test_a_shared_limit_holds_across_tools_and_the_queued_call_says_so() -> None:
    flight = Flight()
    api = ConcurrencyLimit("py-test-api", 1)
    assert (api.name, api.max_running) == ("py-test-api", 1)
    fetch, lookup = flight.tool("fetch", max_concurrency=api), flight.tool("lookup", max_concurrency=api)
    assert fetch.definition.max_concurrency == api
    assert fetch.definition.to_dict()["max_concurrency"] == {"name": "py-test-api", "max_running": 1}
    model = calls_then_text([call("c1", "fetch"), call("c2", "lookup")])
    result = create_agent(model=model, tools=[fetch, lookup]).run_sync("go")
    assert result.status == "completed"
    assert flight.peak == 1
    assert queued_for(result.events) == {"c1": [], "c2": ["py-test-api"]}


def test_a_toolsets_limit_caps_its_calls_together_and_queued_calls_start_in_model_order() -> None:
    flight = Flight()
    members = [flight.tool(name) for name in ("a", "b", "c", "d")]
    model = calls_then_text([call(f"call_{n}", n) for n in ("d", "a", "c", "b")])
    ops = Toolset("ops", members, max_concurrency=2)
    result = create_agent(model=model, toolsets=[ops]).run_sync("go")
    assert flight.peak == 2
    assert flight.started == ["d", "a", "c", "b"]
    waited = {call_id: limits for call_id, limits in queued_for(result.events).items() if limits}
    assert waited == {"call_c": ["toolset:ops"], "call_b": ["toolset:ops"]}
    assert [r["tool_call_id"] for r in returns(result.messages)] == ["call_d", "call_a", "call_c", "call_b"]


def test_with_max_concurrency_limits_a_toolset_it_wraps() -> None:
    flight = Flight()
    model = calls_then_text([call(f"c{i}", f"t{i}") for i in range(4)])
    ops = Toolset("ops", [flight.tool(f"t{i}") for i in range(4)]).prefixed("").with_max_concurrency(1)
    create_agent(model=model, toolsets=[ops]).run_sync("go")
    assert flight.peak == 1


def test_a_shared_limit_on_agents_caps_their_runs_together() -> None:
    flight = Flight()

    async def runs() -> None:
        agents = [
            create_agent(
                model=calls_then_text([call("c", f"t{i}")]),
                tools=[flight.tool(f"t{i}")],
                max_concurrency=ConcurrencyLimit("py-test-agents", 1),
            )
            for i in range(3)
        ]
        await asyncio.gather(*(agent.run("go") for agent in agents))

    asyncio.run(runs())
    assert flight.peak == 1


def test_bad_limits_are_refused_by_name() -> None:
    with pytest.raises(ValueError, match="must let at least 1 call run"):
        ConcurrencyLimit("py-test-zero", 0)
    held = ConcurrencyLimit("py-test-sizes", 2)
    assert ConcurrencyLimit("py-test-sizes", 2) == held, "one name, one limit"
    assert {held, ConcurrencyLimit("py-test-sizes", 2)} == {held}, "equal limits hash alike"
    with pytest.raises(ValueError, match="`py-test-sizes` is 2 in this process already"):
        ConcurrencyLimit("py-test-sizes", 2**40)
    with pytest.raises(ValueError, match="`py-test-sizes` is 2 in this process already"):
        ConcurrencyLimit("py-test-sizes", 3)
    with pytest.raises(RegistrationError, match="`max_concurrency` must be at least 1"):
        tool(name="t", max_concurrency=0)(lambda: None)
    with pytest.raises(RegistrationError, match="max_concurrency"):
        create_agent(model=calls_then_text([]), max_concurrency=0)
    with pytest.raises(TypeError, match="max_concurrency"):
        create_agent(model=calls_then_text([]), max_concurrency="four")  # type: ignore[call-overload]
    # A toolset refuses a limit of 0 at once, as it refuses `max_return_chars=0`.
    with pytest.raises(ValueError, match="`max_concurrency` must be at least 1"):
        Toolset("ops", []).with_max_concurrency(0)
    with pytest.raises(ValueError, match="`max_return_chars` must be at least 1"):
        Toolset("ops", []).with_max_return_chars(0)
