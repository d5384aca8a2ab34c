"""DESIGN.md §20 from Python: deferred tools and toolsets, found by ``search_tools``, loaded
for the next request after the always-loaded tools, kept with the session."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from conftest import call, returns

from starweaver import Toolset, create_agent, tool
from starweaver.mcp import MCPServerStdio
from starweaver.testing import TestModel

SERVER = str(Path(__file__).parent / "mcp_servers" / "echo_server.py")


@tool
def status() -> str:
    """Report the service status."""
    return "green"


@tool(defer_loading=True)
def get_weather(city: str) -> str:
    """Forecast for a city."""
    return f"sunny in {city}"


@tool
def send_email(to: str) -> str:
    """Send an email to a recipient."""
    return f"sent to {to}"


def tool_names(model: TestModel, request: int) -> list[str]:
    return [str(t["name"]) for t in model.requests[request]["tools"]]


def search(call_id: str, query: str) -> dict[str, object]:
    return TestModel.tool_call_response([call(call_id, "search_tools", {"query": query})])


def test_a_search_loads_tools_for_the_next_request_after_the_always_loaded_ones() -> None:
    assert get_weather.definition.defer_loading
    assert get_weather.definition.to_dict()["defer_loading"] is True
    model = TestModel.responses(
        [
            search("s1", "weather"),
            TestModel.tool_call_response([call("c1", "get_weather", {"city": "Oslo"})]),
            search("s2", "email recipient"),
            {"text": "done"},
        ]
    )
    agent = create_agent(model=model, tools=[status, get_weather], toolsets=[Toolset("mail", [send_email]).deferred()])
    result = agent.run_sync("go")
    assert result.status == "completed"
    assert tool_names(model, 0) == ["status", "search_tools"]
    assert tool_names(model, 1) == ["status", "search_tools", "get_weather"]
    assert tool_names(model, 3) == ["status", "search_tools", "get_weather", "send_email"]
    found = returns(result.messages)
    assert found[0]["content"] == {"tools": [{"name": "get_weather", "description": "Forecast for a city."}]}
    assert found[1]["content"] == "sunny in Oslo"
    loaded = [e for e in result.events if e["type"] == "tools_loaded"]
    assert [(e["names"], e["query"]) for e in loaded] == [
        (["get_weather"], "weather"),
        (["send_email"], "email recipient"),
    ]
    assert [span.kind for span in result.trace.spans].count("tool_search") == 2


def test_a_deferred_tool_called_by_name_runs_and_an_unknown_name_lists_nothing() -> None:
    model = TestModel.responses(
        [
            TestModel.tool_call_response([call("c1", "get_weather", {"city": "Rome"}), call("c2", "get_wether")]),
            {"text": "done"},
        ]
    )
    agent = create_agent(model=model, tools=[status, get_weather])
    result = agent.run_sync("go")
    found = returns(result.messages)
    assert found[0]["content"] == "sunny in Rome"
    assert "get_weather" not in str(found[1]["content"]) and "status" not in str(found[1]["content"])
    loaded = [e for e in result.events if e["type"] == "tools_loaded"]
    assert [(e["names"], e["query"]) for e in loaded] == [(["get_weather"], None)]


def test_loaded_tools_are_exported_and_restored_with_the_session() -> None:
    model = TestModel.responses([search("s1", "weather"), {"text": "found"}, {"text": "again"}])
    agent = create_agent(model=model, tools=[get_weather])
    session = agent.session()
    session.run_sync("find")
    state = session.export_state()
    assert state.get("loaded") == ["get_weather"]
    restored = agent.session(state)
    restored.run_sync("more")
    assert tool_names(model, 2) == ["search_tools", "get_weather"]


def test_an_mcp_server_toolset_can_be_deferred() -> None:
    async def main() -> list[list[str]]:
        found = TestModel.tool_call_response([call("s1", "search_tools", {"query": "upper case", "limit": 1})])
        model = TestModel.responses([found, {"text": "done"}])
        server = MCPServerStdio("echo", sys.executable, args=[SERVER]).deferred()
        agent = create_agent(model=model, tools=[], toolsets=[server])
        await agent.run("go")
        return [tool_names(model, 0), tool_names(model, 1)]

    before, after = asyncio.run(main())
    assert before == ["search_tools"]
    assert after == ["search_tools", "shout"]
