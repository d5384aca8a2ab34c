"""DESIGN.md §20 from Python: deferred tools and toolsets, found by ``search_tools``, loaded
for the next request after the always-loaded tools, kept with the session."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from conftest import call, returns
from provider_server import Reply, serving

from starweaver import RegistrationError, Toolset, create_agent, tool
from starweaver.mcp import MCPServerStdio
from starweaver.models import AnthropicModel, GeminiModel, OpenAIChatModel
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


def test_native_tool_search_is_refused_by_name_where_the_model_has_none() -> None:
    cases: list[tuple[OpenAIChatModel | GeminiModel | TestModel, str]] = [
        (OpenAIChatModel("gpt-4.1-mini", api_key="k"), "the `openai-chat` protocol"),
        (GeminiModel("gemini-2.5-flash", api_key="k"), "the `gemini` protocol"),
        (TestModel.responses([]), "this model"),
    ]
    for model, name in cases:
        with pytest.raises(RegistrationError, match=f"{name} has no native tool search") as refused:
            create_agent(model=model, tools=[get_weather], tool_search="native")
        assert 'tool_search="local"' in str(refused.value)
    with pytest.raises(ValueError, match='`tool_search` must be "local" or "native", got "remote"'):
        create_agent(model=TestModel.responses([]), tool_search="remote")  # type: ignore[call-overload]


def test_native_tool_search_hands_the_deferred_tools_to_anthropic_and_loads_what_it_found() -> None:
    with serving(Reply.of("anthropic", "tool_search.json"), Reply.of("anthropic", "text.json")) as server:
        model = AnthropicModel("claude-sonnet-4-5", base_url=server.url, api_key="k")
        agent = create_agent(model=model, tools=[status, get_weather], tool_search="native")
        session = agent.session()
        result = session.run_sync("weather in Oslo?")
    assert (result.status, result.output) == ("completed", "The total is 5."), result.error
    assert [r["content"] for r in returns(result.messages)] == ["sunny in Oslo"]
    loaded = [(e["names"], e["query"]) for e in result.events if e["type"] == "tools_loaded"]
    assert loaded == [(["get_weather"], "weather forecast for a city")]
    assert session.export_state()["loaded"] == ["get_weather"]
    parts = result.messages[1]["parts"]
    assert [p["kind"] for p in parts] == ["text", "provider_item", "provider_item", "tool_call"]
    first, second = server.seen
    assert first.headers["anthropic-beta"] == "advanced-tool-use-2025-11-20"
    tools = first.body["tools"]
    assert isinstance(tools, list)
    assert [t.get("name") for t in tools] == ["status", "tool_search_tool_bm25", "get_weather"]
    assert tools[2]["defer_loading"] is True
    replayed = second.body["messages"]
    assert isinstance(replayed, list)
    assert replayed[1]["content"][1:3] == [p["item"] for p in parts if p["kind"] == "provider_item"]
