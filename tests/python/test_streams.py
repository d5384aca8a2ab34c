"""DESIGN.md §9 from Python: `async for event in agent.run_stream(...)` yields events live,
each numbered and tagged with the run id, and the final result comes from the stream."""

from __future__ import annotations

import asyncio

import pytest
from conftest import call, calls_then_text

from starweaver import SessionStateError, ToolContext, ToolResult, create_agent, tool


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


def test_sync_and_async_tools_report_progress_and_log_as_events() -> None:
    @tool
    def index(ctx: ToolContext, files: int) -> str:
        ctx.log("info", "indexing", data={"files": files})
        for done in range(1, files + 1):
            ctx.report_progress(done, total=files)
        return "indexed"

    @tool
    async def fetch(ctx: ToolContext) -> str:
        for done in (25.5, 75.0):
            ctx.report_progress(done, message="fetching")
            await asyncio.sleep(0)
        ctx.log("error", "one page failed")
        return "fetched"

    async def go() -> None:
        calls = [call("c1", "index", {"files": 100}), call("c2", "fetch")]
        stream = create_agent(model=calls_then_text(calls), tools=[index, fetch]).run_stream("go")
        live = [event async for event in stream]
        result = await stream.result()
        reported = [e for e in live if e["type"] == "tool_progress"]
        assert [e["progress"] for e in reported if e["tool_call_id"] == "c1"] == list(range(1, 101))
        assert [(e["progress"], e.get("total"), e.get("message")) for e in reported if e["name"] == "fetch"] == [
            (25.5, None, "fetching"),
            (75.0, None, "fetching"),
        ]
        kept = [e for e in result.events if e["type"] == "tool_progress"]
        assert sorted((e["tool_call_id"], e["progress"]) for e in kept) == [("c1", 100), ("c2", 75.0)]
        assert [e["seq"] for e in result.events] == sorted(e["seq"] for e in result.events)
        logs = [e for e in result.events if e["type"] == "tool_log"]
        assert [(e["name"], e["level"], e["message"], e.get("data")) for e in logs] == [
            ("index", "info", "indexing", {"files": 100}),
            ("fetch", "error", "one page failed", None),
        ]
        span = next(s for s in result.trace.spans if s.tool_call_id == "c1")
        assert [e["name"] for e in span.events] == ["tool_log", "tool_progress"]
        assert span.events[1]["attributes"] == {"progress": 100.0, "total": 100.0}
        assert "indexing" not in str(result.messages), "what a tool reports never reaches the model"

    asyncio.run(asyncio.wait_for(go(), timeout=20))


def test_bad_reports_raise_in_the_tool_naming_what_is_wrong() -> None:
    ctx = ToolContext.detached("t")
    with pytest.raises(ValueError, match="progress `progress` must be a finite number, got NaN"):
        ctx.report_progress(float("nan"))
    with pytest.raises(ValueError, match="progress `total` must be a finite number, got inf"):
        ctx.report_progress(1, total=float("inf"))
    with pytest.raises(ValueError, match="unknown log level `loud`; the levels are debug, info, notice"):
        ctx.log("loud", "hi")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="data"):
        ctx.log("info", "hi", data={"when": object()})
    ctx.report_progress(1, total=2, message="outside any run, nobody listens")
    ctx.log("info", "and that is fine")
