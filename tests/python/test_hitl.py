"""DESIGN.md §8 from Python: waiting, decisions, resumes, policies and every refusal."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from conftest import call, calls_then_text, returns

from starweaver import (
    Agent,
    ApprovalRequired,
    DecisionError,
    RunResult,
    SessionStateError,
    ToolContext,
    create_agent,
    tool,
)
from starweaver.testing import TestModel
from starweaver.types import ToolOptions

runs: list[str] = []


@tool
async def deploy(ctx: ToolContext, env: str) -> dict[str, object]:
    if ctx.approval is None:
        raise ApprovalRequired("deploy production", metadata={"risk": "high"})
    runs.append(f"{env} by {ctx.approval.decided_by}")
    return {"deployed": env}


def agent_for(*calls: dict[str, object], **options: Any) -> Agent:  # noqa: ANN401 (create_agent's options)
    model = TestModel.responses([TestModel.tool_call_response(list(calls)), {"text": "done"}] * 3)
    return create_agent(model=model, tools=[deploy], **options)


def test_waiting_runs_list_pending_approvals_under_canonical_ids() -> None:
    async def go() -> None:
        session = agent_for(call("call_1", "deploy", {"env": "prod"})).session()
        waiting = await session.run("deploy")
        assert waiting.status == "waiting" and waiting.output is None
        pending = waiting.hitl.approvals[0]
        assert pending.id == f"{waiting.run_id}:call_1"
        assert (pending.tool_name, pending.arguments, pending.reason, pending.metadata) == (
            "deploy",
            {"env": "prod"},
            "deploy production",
            {"risk": "high"},
        )
        assert session.pending is not None

    asyncio.run(go())


def test_approve_reinvokes_with_the_decision_and_override_arguments() -> None:
    async def go() -> RunResult:
        runs.clear()
        session = agent_for(call("call_1", "deploy", {"env": "prod"})).session()
        waiting = await session.run("deploy")
        decision = waiting.hitl.approvals[0].approve(decided_by="ui", override_arguments={"env": "staging"})
        return await session.hitl.resume(approvals=[decision])

    result = asyncio.run(go())
    assert result.status == "completed"
    assert runs == ["staging by ui"]


def test_deny_returns_the_denial_and_never_runs_the_tool() -> None:
    async def go() -> RunResult:
        runs.clear()
        session = agent_for(call("call_1", "deploy", {"env": "prod"})).session()
        waiting = await session.run("deploy")
        return await session.hitl.resume(approvals=[waiting.hitl.approvals[0].deny("change freeze")])

    result = asyncio.run(go())
    assert runs == []
    part = returns(result.messages)[0]
    assert part["content"] == {"kind": "approval_denied", "message": "change freeze", "success": False}


def test_a_failed_deferred_call_is_a_deferred_failed_error_for_the_model() -> None:
    from starweaver import CallDeferred

    @tool
    async def export(rows: int) -> int:
        raise CallDeferred("queued")

    async def go() -> RunResult:
        session = create_agent(model=calls_then_text([call("c1", "export", {"rows": 3})]), tools=[export]).session()
        waiting = await session.run("export")
        return await session.resume(deferred_results=[waiting.hitl.deferred[0].fail("disk full")])

    part = returns(asyncio.run(go()).messages)[0]
    assert part["is_error"] is True
    assert part["content"] == {"kind": "deferred_failed", "message": "disk full", "success": False}


def test_decisions_serialise_to_canonical_json() -> None:
    async def go() -> None:
        session = agent_for(call("call_1", "deploy", {"env": "prod"})).session()
        waiting = await session.run("deploy")
        pending = waiting.hitl.approvals[0]
        decision = pending.approve(decided_by="ui", metadata={"ticket": "CHG-1"})
        assert decision.to_dict() == {
            "id": pending.id,
            "approved": True,
            "decided_by": "ui",
            "arguments": {"env": "prod"},
            "metadata": {"ticket": "CHG-1"},
        }
        assert pending.deny().to_dict() == {"id": pending.id, "approved": False, "reason": "the call was denied"}
        result = await session.resume_after_hitl(approvals=[decision.to_dict()])
        assert result.status == "completed"

    asyncio.run(go())


def test_bare_ids_and_canonical_json_decisions_are_accepted() -> None:
    async def go() -> RunResult:
        runs.clear()
        session = agent_for(call("call_1", "deploy", {"env": "prod"})).session()
        await session.run("deploy")
        return await session.resume_after_hitl(approvals=[{"id": "call_1", "approved": True, "decided_by": "cli"}])

    assert asyncio.run(go()).status == "completed"
    assert runs == ["prod by cli"]


def test_policy_gated_tools_never_run_before_their_decision() -> None:
    seen: list[str] = []

    @tool
    async def wire(amount: int) -> int:
        seen.append("ran")
        return amount

    async def go() -> None:
        for rule in ("wire", "*", {"kind": "payment"}):
            seen.clear()
            options: ToolOptions = {"metadata": {"kind": "payment"}} if isinstance(rule, dict) else {}
            gated = tool(**options)(wire.__wrapped__) if options else wire
            model = calls_then_text([call("c1", "wire", {"amount": 5})])
            session = create_agent(model=model, tools=[gated], approval_required_tools=[rule]).session()
            waiting = await session.run("pay")
            assert waiting.status == "waiting" and seen == []
            await session.hitl.resume(approvals=[waiting.hitl.approvals[0].approve()])
            assert seen == ["ran"]

    asyncio.run(go())


def test_refused_decisions_are_clear_errors_and_leave_the_session_waiting() -> None:
    async def go() -> None:
        runs.clear()
        session = agent_for(call("call_1", "deploy", {"env": "prod"})).session()
        other = agent_for(call("call_1", "deploy", {"env": "prod"})).session()
        waiting = await session.run("deploy")
        foreign = await other.run("deploy")
        with pytest.raises(DecisionError, match="unknown decision id `nope`"):
            await session.hitl.resume(approvals=[{"id": "nope", "approved": True}])
        with pytest.raises(DecisionError, match="missing decision"):
            await session.hitl.resume()
        with pytest.raises(DecisionError, match="belongs to run"):
            await session.hitl.resume(approvals=[foreign.hitl.approvals[0].approve()])
        pending = waiting.hitl.approvals[0]
        with pytest.raises(DecisionError, match="two decisions"):
            await session.hitl.resume(approvals=[pending.approve(), pending.deny()])
        stale = waiting.hitl.approvals[0].approve().to_dict() | {"arguments": {"env": "staging"}}
        with pytest.raises(DecisionError, match="approved arguments"):
            await session.hitl.resume(approvals=[stale])
        with pytest.raises(DecisionError, match="invalid decisions"):
            await session.hitl.resume(approvals=[{"id": "call_1", "approved": "yes"}])
        with pytest.raises(SessionStateError, match="waiting on run"):
            await session.run("something else")
        assert runs == []
        decision = waiting.hitl.approvals[0].approve()
        await session.hitl.resume(approvals=[decision])
        with pytest.raises(SessionStateError, match="not waiting"):
            await session.hitl.resume(approvals=[decision])
        again = await session.run("deploy again")
        with pytest.raises(DecisionError, match="already applied"):
            await session.hitl.resume(approvals=[decision])
        assert again.status == "waiting"

    asyncio.run(go())


def test_a_session_runs_one_run_at_a_time() -> None:
    @tool
    async def slow() -> None:
        await asyncio.sleep(0.05)

    async def go() -> None:
        session = create_agent(model=calls_then_text([call("c1", "slow")]), tools=[slow]).session()
        first = asyncio.ensure_future(session.run("one"))
        await asyncio.sleep(0.01)
        with pytest.raises(SessionStateError, match="this session is running"):
            await session.run("two")
        with pytest.raises(SessionStateError, match="this session is running"):
            _ = session.messages
        assert (await first).status == "completed"
        prompt = session.messages[0]["parts"][0]
        assert prompt["kind"] == "user_prompt" and prompt["text"] == "one"

    asyncio.run(go())


def test_sessions_keep_history_across_runs() -> None:
    async def go() -> None:
        model = TestModel.responses([{"text": "first"}, {"text": "second"}])
        async with create_agent(model=model, instructions="Be brief.") as agent, agent.session() as session:
            await session.run("one")
            result = await session.run("two")
        assert result.output == "second"
        assert [m["kind"] for m in model.requests[1]["messages"]] == ["request", "response", "request"]
        assert model.requests[1]["messages"][0]["parts"][0] == {"kind": "system_prompt", "text": "Be brief."}

    asyncio.run(go())


def test_events_are_ordered_and_numbered() -> None:
    async def go() -> None:
        session = agent_for(call("call_1", "deploy", {"env": "prod"})).session()
        waiting = await session.run("deploy")
        types = [e["type"] for e in waiting.events]
        assert types == ["run_start", "model_request", "model_response", "tool_call", "approval_requested", "waiting"]
        assert [e["seq"] for e in waiting.events] == list(range(len(types)))
        assert {e["run_id"] for e in waiting.events} == {waiting.run_id}

    asyncio.run(go())
