"""DESIGN.md §14 from Python: toolsets, static and dynamic, their combinators, snapshots of
what they define, and tools a run adds for itself."""

from __future__ import annotations

import asyncio
import json

import pytest
from conftest import call, returns
from snapshot import assert_snapshot

from starweaver import DynamicToolset, RegistrationError, RunFailedError, Tool, Toolset, create_agent, tool
from starweaver.testing import TestModel
from starweaver.toolsets import ToolsetContext

ran: list[str] = []


@tool
async def deploy(env: str = "staging") -> str:
    """Deploy the current release."""
    ran.append(f"deploy {env}")
    return f"deployed {env}"


@tool
def status() -> str:
    """Report the service status."""
    ran.append("status")
    return "green"


@tool
async def secret() -> str:
    """Never shown."""
    return "hidden"


def tool_names(model: TestModel, request: int) -> list[str]:
    tools = model.requests[request]["tools"]
    return [str(t["name"]) for t in tools]


def test_combinators_shape_what_the_model_sees_and_calls_reach_the_tools() -> None:
    ran.clear()
    ops = (
        Toolset("ops", [deploy, status, secret], id="ops-v1")
        .filtered(lambda d: d.name != "secret")
        .renamed({"status": "health"})
        .prefixed("ops_")
    )
    assert (ops.name, ops.id) == ("ops", "ops-v1")
    definitions = ops.definitions
    assert definitions is not None
    assert [d.name for d in definitions] == ["ops_deploy", "ops_health"]
    for definition in definitions:
        assert_snapshot(f"python__toolset_{definition.name}", definition.to_json())
    model = TestModel.responses(
        [
            TestModel.tool_call_response([call("c1", "ops_health"), call("c2", "ops_deploy", {"env": "prod"})]),
            {"text": "done"},
        ]
    )
    result = asyncio.run(create_agent(model=model, toolsets=[ops]).run("go"))
    assert [r["content"] for r in returns(result.messages)] == ["green", "deployed prod"]
    assert sorted(ran) == ["deploy prod", "status"]


def test_a_dynamic_toolset_lists_its_tools_at_every_step() -> None:
    asked: list[int] = []

    async def phases(ctx: ToolsetContext) -> list[Tool[..., object]]:
        asked.append(ctx["step"])
        return [status] if ctx["step"] == 1 else [deploy]

    model = TestModel.responses(
        [
            TestModel.tool_call_response([call("c1", "status")]),
            TestModel.tool_call_response([call("c2", "deploy")]),
            {"text": "done"},
        ]
    )
    result = asyncio.run(create_agent(model=model, toolsets=[DynamicToolset("phases", phases)]).run("go"))
    assert result.status == "completed"
    assert asked == [1, 2, 3]
    assert (tool_names(model, 0), tool_names(model, 1)) == (["status"], ["deploy"])


def test_a_dynamic_toolset_that_raises_fails_the_run_naming_it() -> None:
    def broken(ctx: ToolsetContext) -> list[Tool[..., object]]:
        if ctx["step"] > 1:
            raise ConnectionError("the server is gone")
        return [status]

    model = TestModel.responses([TestModel.tool_call_response([call("c1", "status")]), {"text": "done"}])
    result = asyncio.run(create_agent(model=model, toolsets=[DynamicToolset("remote", broken)]).run("go"))
    assert result.status == "failed"
    error = str(result.error)
    assert isinstance(result.error, RunFailedError) and "toolset `remote`" in error and "the server is gone" in error


def test_collisions_name_both_sources() -> None:
    with pytest.raises(RegistrationError, match="given by both the agent's tools and toolset `ops`"):
        create_agent(model=TestModel.responses([]), tools=[deploy], toolsets=[Toolset("ops", [deploy])])


def test_an_approval_required_toolset_waits_and_resumes() -> None:
    async def scenario() -> None:
        model = TestModel.responses([TestModel.tool_call_response([call("c1", "deploy")]), {"text": "done"}])
        agent = create_agent(model=model, toolsets=[Toolset("ops", [deploy]).approval_required()])
        session = agent.session()
        waiting = await session.run("go")
        assert waiting.status == "waiting" and "toolset `ops`" in waiting.hitl.approvals[0].reason
        done = await session.hitl.resume(approvals=[waiting.hitl.approvals[0].approve()])
        assert done.status == "completed"

    asyncio.run(scenario())


def test_tools_a_run_adds_leave_the_agent_unchanged() -> None:
    async def scenario() -> None:
        model = TestModel.responses(
            [
                TestModel.tool_call_response([call("c1", "status")]),
                {"text": "done"},
                TestModel.tool_call_response([call("c2", "status")]),
                {"text": "done"},
            ]
        )
        agent = create_agent(model=model, tools=[deploy])
        first = await agent.run("go", tools=[status], toolsets=[Toolset("more", [secret])])
        assert returns(first.messages)[0]["content"] == "green"
        assert tool_names(model, 0) == ["deploy", "status", "secret"]
        second = await agent.session().run("go")
        content = returns(second.messages)[0]["content"]
        assert isinstance(content, dict) and content["kind"] == "not_found"
        assert [d.name for d in agent.definitions] == ["deploy"]

    asyncio.run(scenario())


def test_toolset_instructions_are_sent_with_the_agents_while_their_tools_are_offered() -> None:
    """DESIGN.md §18, toolset instructions: static and dynamic toolsets' instructions go
    with the agent's in each request that offers at least one of their tools (each text
    once); a dynamic toolset that offers no tool at a step sends none then. Snapshot: the
    requests the model got."""

    @tool
    def late() -> str:
        """Runs last."""
        return "late"

    ops = Toolset("ops", [deploy], instructions="Deploy only on green.")
    twin = Toolset("twin", [status]).with_instructions("Deploy only on green.")
    phased = DynamicToolset("phased", lambda ctx: [late] if ctx["step"] >= 2 else [], instructions="Use `late` last.")
    assert (ops.instructions, twin.instructions, phased.instructions) == (
        "Deploy only on green.",
        "Deploy only on green.",
        "Use `late` last.",
    )
    model = TestModel.responses([TestModel.tool_call_response([call("c1", "status")]), {"text": "done"}])
    agent = create_agent(model=model, instructions="Be brief.", toolsets=[ops, twin, phased])
    assert agent.run_sync("go").status == "completed"
    sent = [request.get("toolset_instructions") for request in model.requests]
    assert sent == [["Deploy only on green."], ["Deploy only on green.", "Use `late` last."]]
    requests = [
        {
            "messages": r["messages"],
            "tools": [t["name"] for t in r["tools"]],
            "toolset_instructions": r.get("toolset_instructions", []),
        }
        for r in model.requests
    ]
    body = json.dumps(requests, indent=2, ensure_ascii=False)
    assert_snapshot("python__toolset_instructions_requests", body, "tests/python/test_toolsets.py")
