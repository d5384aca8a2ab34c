"""DESIGN.md §9 from Python: `async for event in agent.run_stream(...)` yields events live,
each numbered and tagged with the run id, and the final result comes from the stream."""

from __future__ import annotations

import asyncio

import pytest
from conftest import call, calls_then_text

from starweaver import SessionStateError, ToolResult, create_agent, tool


def test_events_arrive_live_before_a_slow_tool_finishes() -> None:
    release = asyncio.Event()

    @tool
    async def slow() -> str:
        await release.wait()
        return "finished"

    async def go() -> None:
        stream = create_agent(model=calls_then_text([call("c1", "slow")]), tools=[slow]).run_stream("go")
        seen: list[str] = []
        async for event in stream:
            seen.append(event["type"])
            if event["type"] == "tool_call":
                # The tool is still waiting: had events arrived only at the end, this
                # loop would never get here and the run would never finish.
                release.set()
        assert seen == [
            "run_start",
            "model_request",
            "model_response",
            "tool_call",
            "tool_return",
            "model_request",
            "model_response",
            "run_complete",
        ]
        result = await stream.result()
        assert result.output == "done"
        assert [e["seq"] for e in result.events] == list(range(len(seen)))
        assert {e["run_id"] for e in result.events} == {result.run_id}

    asyncio.run(asyncio.wait_for(go(), timeout=10))


def test_a_session_streams_and_can_wait() -> None:
    @tool
    async def deploy() -> str:
        return "deployed"

    async def go() -> None:
        model = calls_then_text([call("c1", "deploy")])
        session = create_agent(model=model, tools=[deploy], approval_required_tools=["deploy"]).session()
        stream = session.run_stream("deploy")
        types = [event["type"] async for event in stream]
        assert types[-2:] == ["approval_requested", "waiting"]
        waiting = await stream.result()
        assert waiting.status == "waiting"
        done = await session.hitl.resume(approvals=[waiting.hitl.approvals[0].approve()])
        assert done.output == "done"

    asyncio.run(go())


def test_a_session_is_held_while_its_streamed_run_is_in_flight() -> None:
    release = asyncio.Event()

    @tool
    async def slow() -> None:
        await release.wait()

    async def go() -> None:
        session = create_agent(model=calls_then_text([call("c1", "slow")]), tools=[slow]).session()
        stream = session.run_stream("go")
        assert (await stream.__anext__())["type"] == "run_start"
        with pytest.raises(SessionStateError, match="this session is running"):
            session.run_stream("again")
        release.set()
        assert [event["type"] async for event in stream][-1] == "run_complete"
        assert (await session.run("again")).status == "failed"  # the script has run out: the session is free

    asyncio.run(asyncio.wait_for(go(), timeout=10))


def test_private_metadata_is_in_events_but_never_in_model_requests() -> None:
    @tool
    async def traced() -> ToolResult:
        return ToolResult(1, private_metadata={"trace_id": "secret-7"})

    async def go() -> None:
        model = calls_then_text([call("c1", "traced")])
        stream = create_agent(model=model, tools=[traced]).run_stream("go")
        events = [event async for event in stream]
        assert any(e.get("private_metadata") == {"trace_id": "secret-7"} for e in events)
        assert "secret-7" not in repr(model.requests)

    asyncio.run(go())
