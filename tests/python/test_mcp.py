"""DESIGN.md §14, the MCP client: an MCP server on the official Python SDK
(mcp_servers/echo_server.py) as a toolset of an agent on the test model."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import call, calls_then_text, loose, returns

from starweaver import Hooks, ToolCall, ToolContext, ToolDefinition, ToolsetError, create_agent, tool
from starweaver.content import Image, from_dict
from starweaver.elicitation import Declined, Sampled
from starweaver.mcp import MCPServerStdio
from starweaver.providers import PROVIDERS, render
from starweaver.testing import TestModel
from starweaver.types import SamplingMessageDict

SERVER = str(Path(__file__).parent / "mcp_servers" / "echo_server.py")


def echo(*flags: str) -> MCPServerStdio:
    return MCPServerStdio("echo", sys.executable, args=[SERVER, *flags])


def test_an_mcp_servers_tools_are_listed_and_called_through_the_scheduler() -> None:
    async def scenario() -> None:
        model = TestModel.responses(
            [
                TestModel.tool_call_response(
                    [
                        call("c1", "add", {"left": 2, "right": 3}),
                        call("c2", "shout", {"text": "hi"}),
                        call("c3", "refuse"),
                    ]
                ),
                {"text": "done"},
            ]
        )
        async with echo() as server:
            result = await create_agent(model=model, toolsets=[server]).run("go")
        got = returns(result.messages)
        # The SDK sends structured content for typed returns; that is what the model sees.
        assert [r["content"] for r in got[:2]] == [{"result": 5}, {"result": "HI"}]
        assert got[2]["is_error"] is True and "the vault is locked" in str(got[2]["content"])
        tools = {t["name"]: t for t in model.requests[0]["tools"]}
        assert set(tools) == {"add", "shout", "refuse", "grow", "slow", "copy", "greet"}
        assert tools["add"]["description"] == "Add two integers."
        add_schema = tools["add"]["parameters"]
        assert isinstance(add_schema, dict) and add_schema["required"] == ["left", "right"]

    asyncio.run(scenario())


def test_an_mcp_servers_instructions_are_sent_with_the_agents_while_its_tools_are_offered() -> None:
    """DESIGN.md §18, toolset instructions: an MCP server's `instructions` (from its
    `initialize` result) go with the agent's in each request that offers its tools."""

    async def scenario() -> None:
        model = calls_then_text([call("c1", "add", {"left": 2, "right": 3})])
        async with echo() as server:
            result = await create_agent(model=model, instructions="Be brief.", toolsets=[server]).run("go")
            assert server.instructions == "Use `add` for arithmetic; never guess a sum."
        assert result.status == "completed"
        sent = [request.get("toolset_instructions") for request in model.requests]
        assert sent == [["Use `add` for arithmetic; never guess a sum."]] * 2
        first = model.requests[0]["messages"][0]
        assert first["kind"] == "request" and first["parts"][0] == {"kind": "system_prompt", "text": "Be brief."}

    asyncio.run(scenario())


def test_an_mcp_servers_instructions_stay_from_the_model_with_use_instructions_false() -> None:
    async def scenario() -> None:
        model = calls_then_text([call("c1", "add", {"left": 2, "right": 3})])
        server = MCPServerStdio("echo", sys.executable, args=[SERVER], use_instructions=False)
        async with server:
            result = await create_agent(model=model, toolsets=[server]).run("go")
            assert server.instructions is None
        assert result.status == "completed"
        assert [request.get("toolset_instructions", []) for request in model.requests] == [[], []]

    asyncio.run(scenario())


def test_a_servers_output_schemas_become_our_definitions_return_schemas() -> None:
    async def scenario() -> None:
        seen: dict[str, ToolDefinition] = {}

        def keep(definition: ToolDefinition) -> bool:
            seen[definition.name] = definition
            return True

        model = TestModel.responses([{"text": "done"}])
        async with echo() as server:
            await create_agent(model=model, toolsets=[server.filtered(keep)]).run("go")
        # The SDK wraps an `int` return as `{"result": ...}`; we keep its schema as it is.
        add = seen["add"].return_schema
        assert add is not None and loose(add["properties"])["result"]["type"] == "integer", add
        assert add["required"] == ["result"]
        # The canonical request keeps the whole definition; no provider format carries it.
        assert all("result" not in str(render(seen["add"], provider)) for provider in PROVIDERS)

    asyncio.run(scenario())


def test_an_mcp_servers_progress_and_logs_are_events_of_the_call() -> None:
    async def scenario() -> None:
        model = TestModel.responses(
            [TestModel.tool_call_response([call("c1", "copy", {"files": 2})]), {"text": "done"}]
        )
        async with echo() as server:
            stream = create_agent(model=model, toolsets=[server]).run_stream("go")
            live = [event async for event in stream]
            result = await stream.result()
        progress = [(e["progress"], e.get("total"), e.get("message")) for e in live if e["type"] == "tool_progress"]
        assert progress == [(0, 2, "0 of 2"), (1, 2, "1 of 2"), (2, 2, "2 of 2")]
        assert [e["tool_call_id"] for e in live if e["type"] == "tool_progress"] == ["c1"] * 3
        logs = [(e["tool_call_id"], e["level"], e["message"]) for e in result.events if e["type"] == "tool_log"]
        assert logs == [("c1", "info", "copying"), ("c1", "warning", "one file was empty")]
        kinds = [e["type"] for e in result.events]
        # Over stdio the server's notifications keep their place: all before the return.
        assert kinds.index("tool_return") > max(i for i, k in enumerate(kinds) if k in ("tool_log", "tool_progress"))
        assert kinds.count("tool_progress") == 1, "the kept log holds the call's last progress"

    asyncio.run(scenario())


def greeting_model() -> TestModel:
    """Calls the server's `greet`, answers its sampling request, then ends."""
    return TestModel.responses(
        [TestModel.tool_call_response([call("c1", "greet")]), {"text": "Nice to meet you."}, {"text": "done"}]
    )


def test_a_servers_questions_go_to_the_agents_handler_and_model_with_defaults_filled() -> None:
    asked: list[tuple[str, str, list[str]]] = []

    def handler(ctx: ToolContext, message: str, schema: dict[str, Any]) -> dict[str, Any]:
        asked.append((ctx.tool_call_id, message, sorted(schema["properties"])))
        return {"name": "Ada"}  # the greeting left to its default

    async def scenario() -> None:
        async with echo() as server:
            agent = create_agent(model=greeting_model(), toolsets=[server], elicitation_handler=handler)
            result = await agent.run("greet someone")
        assert returns(result.messages)[0]["content"] == {"result": "Hello, Ada! Nice to meet you."}

    asyncio.run(scenario())
    assert asked == [("c1", "Whom shall I greet?", ["greeting", "name"])]


def test_without_a_handler_a_servers_question_waits_and_the_tool_is_called_again_with_the_answer() -> None:
    async def scenario() -> None:
        async with echo() as server:
            session = create_agent(model=greeting_model(), toolsets=[server]).session()
            waiting = await session.run("greet someone")
            (question,) = waiting.hitl.elicitations
            assert (question.tool_name, question.message) == ("greet", "Whom shall I greet?")
            done = await session.hitl.resume(elicitations=[question.accept({"name": "Grace", "greeting": "Hi"})])
        assert done.status == "completed"
        assert [r["content"] for r in returns(done.messages)] == [{"result": "Hi, Grace! Nice to meet you."}]

    asyncio.run(scenario())


def test_a_servers_own_handlers_answer_first_even_for_direct_calls() -> None:
    sampled: list[tuple[str, list[SamplingMessageDict], int]] = []

    async def sample(
        ctx: ToolContext,
        messages: list[SamplingMessageDict],
        /,
        *,
        max_tokens: int,
        system_prompt: str | None,
        temperature: float | None,
    ) -> Sampled:
        sampled.append((ctx.tool_name, messages, max_tokens))
        return Sampled("Hi there.", "canned", None)

    async def scenario() -> None:
        declining = MCPServerStdio(
            "echo", sys.executable, args=[SERVER], elicitation_handler=lambda ctx, message, schema: Declined()
        )
        async with declining:
            assert await declining.call_tool("greet") == {"result": "nobody greeted: decline"}
        answering = MCPServerStdio(
            "echo",
            sys.executable,
            args=[SERVER],
            elicitation_handler=lambda ctx, message, schema: {"name": "Ada"},
            sampling_handler=sample,
        )
        async with answering:
            assert await answering.call_tool("greet") == {"result": "Hello, Ada! Hi there."}
        with pytest.raises(ToolsetError, match="outside any run, and the server has no handler to answer"):
            async with echo() as alone:
                await alone.call_tool("greet")

    asyncio.run(scenario())
    assert sampled == [("greet", [{"role": "user", "content": "A line for Ada"}], 30)]


def test_a_chatty_server_beside_a_chatty_sync_tool_never_deadlocks_the_run() -> None:
    """The server's reports are made on the run's own task, never on rmcp's: there, waking
    the stream's reader (which takes the interpreter lock) while the run's event log was
    held by a sync tool's report, which holds the interpreter lock, hung the run."""

    @tool
    def busy(ctx: ToolContext) -> str:
        for done in range(20_000):
            sum(range(50))
            ctx.report_progress(done)
        return "busy"

    async def scenario() -> None:
        model = TestModel.responses(
            [TestModel.tool_call_response([call("c1", "copy", {"files": 2_000}), call("c2", "busy")]), {"text": "done"}]
        )
        async with echo() as server:
            stream = create_agent(model=model, toolsets=[server], tools=[busy]).run_stream("go")
            reports = sum([event["type"] == "tool_progress" async for event in stream])
            result = await stream.result()
        assert result.status == "completed"
        assert reports == 2_001 + 20_000

    asyncio.run(asyncio.wait_for(scenario(), timeout=120))


def test_an_approval_policy_on_an_mcp_toolset_waits_then_runs() -> None:
    async def scenario() -> None:
        model = TestModel.responses(
            [TestModel.tool_call_response([call("c1", "echo_add", {"left": 1, "right": 1})]), {"text": "done"}]
        )
        async with echo() as server:
            agent = create_agent(model=model, toolsets=[server.prefixed("echo_")], approval_required_tools=["echo"])
            session = agent.session()
            waiting = await session.run("go")
            assert waiting.status == "waiting", waiting.error
            done = await session.hitl.resume(approvals=[waiting.hitl.approvals[0].approve()])
        assert returns(done.messages)[0]["content"] == {"result": 2}

    asyncio.run(scenario())


def test_a_timeout_or_a_cancel_stops_the_call_and_the_server_keeps_working() -> None:
    async def scenario() -> None:
        model = TestModel.responses(
            [
                TestModel.tool_call_response([call("c1", "slow", {"seconds": 30})]),
                {"text": "done"},
                TestModel.tool_call_response([call("c2", "slow", {"seconds": 30})]),
                TestModel.tool_call_response([call("c3", "add", {"left": 2, "right": 2})]),
                {"text": "done"},
            ]
        )
        server = MCPServerStdio("echo", sys.executable, args=[SERVER], timeout_ms=2_000)
        async with server:
            agent = create_agent(model=model, toolsets=[server])
            timed_out = await asyncio.wait_for(agent.run("go"), timeout=20)
            content = returns(timed_out.messages)[0]["content"]
            assert isinstance(content, dict) and content["kind"] == "timeout"
            task = asyncio.ensure_future(agent.run("go"))
            await asyncio.sleep(0.2)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            after = await asyncio.wait_for(agent.run("go"), timeout=20)
        assert returns(after.messages)[0]["content"] == {"result": 4}

    asyncio.run(scenario())


def test_a_server_that_never_starts_or_answers_garbage_is_named_with_its_stderr() -> None:
    async def scenario() -> None:
        with pytest.raises(ToolsetError, match="MCP server `ghost` failed to start"):
            await MCPServerStdio("ghost", "/nonexistent/server").__aenter__()
        with pytest.raises(ToolsetError, match="MCP server `echo` did not complete the MCP handshake"):
            await echo("--garbage").__aenter__()

    asyncio.run(scenario())


def test_a_server_that_dies_mid_call_is_an_error_return_and_restarts_on_next_use() -> None:
    async def scenario() -> None:
        model = TestModel.responses(
            [
                TestModel.tool_call_response([call("c1", "shout", {"text": "x"})]),
                TestModel.tool_call_response([call("c2", "add", {"left": 1, "right": 2})]),
                {"text": "done"},
            ]
        )
        server = echo("--crash-on-call")
        result = await create_agent(model=model, toolsets=[server]).run("go")
        got = returns(result.messages)
        assert got[0]["is_error"] is True and "MCP server `echo`" in str(got[0]["content"])
        assert "about to crash" in str(got[0]["content"]), "the tail of its stderr"
        assert got[1]["content"] == {"result": 3}, "the server was started again"
        await server.server.close()

    asyncio.run(scenario())


def test_the_tool_list_is_refreshed_when_the_server_says_it_changed() -> None:
    async def scenario() -> None:
        model = TestModel.responses(
            [
                TestModel.tool_call_response([call("c1", "grow")]),
                TestModel.tool_call_response([call("c2", "extra")]),
                {"text": "done"},
            ]
        )
        async with echo() as server:
            result = await create_agent(model=model, toolsets=[server]).run("go")
        assert "extra" not in {t["name"] for t in model.requests[0]["tools"]}
        assert "extra" in {t["name"] for t in model.requests[1]["tools"]}
        assert [r["content"] for r in returns(result.messages)] == [{"result": "grown"}, {"result": "new"}]

    asyncio.run(scenario())


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def test_a_server_over_streamable_http_is_a_toolset_too() -> None:
    import subprocess
    import time

    from starweaver.mcp import MCPServerHTTP

    port = free_port()
    process = subprocess.Popen([sys.executable, SERVER, "--http", str(port)], stderr=subprocess.DEVNULL)
    try:

        async def scenario() -> None:
            model = TestModel.responses(
                [TestModel.tool_call_response([call("c1", "add", {"left": 4, "right": 5})]), {"text": "done"}]
            )
            server = MCPServerHTTP("remote", f"http://127.0.0.1:{port}/mcp", headers={"x-team": "tools"})
            for _ in range(300):  # the server takes a moment to listen (up to 30 s on a loaded machine)
                try:
                    await server.__aenter__()
                    break
                except ToolsetError:
                    time.sleep(0.1)
            result = await create_agent(model=model, toolsets=[server]).run("go")
            await server.__aexit__(None, None, None)
            assert returns(result.messages)[0]["content"] == {"result": 9}

        asyncio.run(scenario())
    finally:
        process.kill()
        process.wait()


def test_a_tool_can_be_called_directly_outside_any_run() -> None:
    async def scenario() -> None:
        async with MCPServerStdio("echo", sys.executable, args=[SERVER], timeout_ms=2_000) as server:
            assert await server.call_tool("add", {"left": 2, "right": 3}) == {"result": 5}
            with pytest.raises(ToolsetError, match="the vault is locked"):
                await server.call_tool("refuse")
            with pytest.raises(ToolsetError, match="MCP server `echo` did not answer `slow` within 2000 ms"):
                await server.call_tool("slow", {"seconds": 30})
            assert await server.call_tool("shout", {"text": "still here"}) == {"result": "STILL HERE"}

    asyncio.run(scenario())


HOSTILE = str(Path(__file__).parent / "mcp_servers" / "hostile_server.py")


def hostile(mode: str, *more: str, timeout_ms: int = 400) -> MCPServerStdio:
    return MCPServerStdio("hostile", sys.executable, args=[HOSTILE, mode, *more], timeout_ms=timeout_ms)


async def listing_error(server: MCPServerStdio) -> str:
    """Why an agent run on `server` could not list its tools (within 10 s in any case)."""
    model = TestModel.responses([{"text": "done"}])
    with pytest.raises(ToolsetError) as raised:
        await asyncio.wait_for(create_agent(model=model, toolsets=[server]).run("go"), timeout=10)
    return str(raised.value)


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("init-hang", "did not complete the MCP handshake within 400 ms"),
        ("list-hang", "did not list its tools within 400 ms"),
    ],
)
def test_a_server_that_never_finishes_answering_fails_within_timeout_ms(mode: str, expected: str) -> None:
    async def scenario() -> None:
        server = hostile(mode)
        message = await listing_error(server)
        assert "MCP server `hostile`" in message and expected in message, message
        await server.server.close()

    asyncio.run(scenario())


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("wrong-id", "answered request id"),
        ("half-line", "sent a message that cannot be read"),
        ("deep-schema", "sent a message that cannot be read"),
        ("endless-pages", "listed more than 100 pages of tools"),
    ],
)
def test_an_answer_the_client_cannot_read_fails_at_once_naming_the_server(mode: str, expected: str) -> None:
    async def scenario() -> None:
        # A long timeout: the failure must come from reading the answer, not from waiting.
        server = hostile(mode, timeout_ms=60_000)
        message = await listing_error(server)
        assert "MCP server `hostile`" in message and expected in message, message
        await server.server.close()

    asyncio.run(scenario())


def test_a_call_that_hangs_after_one_that_worked_fails_within_timeout_ms() -> None:
    async def scenario() -> None:
        async with hostile("hang-second-call") as server:
            assert await server.call_tool("echo") == "echoed"
            with pytest.raises(ToolsetError, match="MCP server `hostile` did not answer `echo` within 400 ms"):
                await asyncio.wait_for(server.call_tool("echo"), timeout=10)

    asyncio.run(scenario())


def test_close_stops_a_hung_server_process(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"

    async def scenario() -> None:
        server = hostile("hung", str(pid_file))
        with pytest.raises(ToolsetError, match="within 400 ms"):
            await server.call_tool("echo")
        await asyncio.wait_for(server.server.close(), timeout=10)

    asyncio.run(scenario())
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)


def test_a_server_flooding_stderr_with_bytes_that_are_not_utf8_keeps_working() -> None:
    async def scenario() -> None:
        async with hostile("noisy", timeout_ms=10_000) as server:
            for _ in range(4):
                assert await server.call_tool("echo") == "echoed"

    asyncio.run(scenario())


def test_a_bad_tool_is_refused_by_name_and_the_servers_other_tools_are_offered() -> None:
    async def scenario() -> None:
        model = TestModel.responses([TestModel.tool_call_response([call("c1", "echo")]), {"text": "done"}])
        async with hostile("bad-tool") as server:
            result = await create_agent(model=model, toolsets=[server]).run("go")
        assert result.status == "completed", result.error
        assert [t["name"] for t in model.requests[0]["tools"]] == ["echo"]
        assert returns(result.messages)[0]["content"] == "echoed"
        refused = [e for e in result.events if e["type"] == "tool_refused"]
        assert [(e["step"], e["toolset"], e["tool"]) for e in refused] == [
            (1, "hostile", "no spaces allowed"),
            (1, "hostile", "echo"),
            (2, "hostile", "no spaces allowed"),
            (2, "hostile", "echo"),
        ]
        assert "lists `echo` twice" in refused[1]["reason"]

    asyncio.run(scenario())


def test_a_failed_or_cancelled_handshake_is_a_named_error_every_time_never_a_panic() -> None:
    async def scenario() -> None:
        failing = hostile("init-error")
        for _ in range(2):
            with pytest.raises(ToolsetError, match="MCP server `hostile` did not complete the MCP handshake"):
                await failing.__aenter__()
        hanging = hostile("init-hang", timeout_ms=60_000)
        for _ in range(2):
            connecting = asyncio.ensure_future(hanging.__aenter__())
            await asyncio.sleep(0.2)
            connecting.cancel()
            with pytest.raises(asyncio.CancelledError):
                await connecting
        await hanging.server.close()

    asyncio.run(scenario())


USE_AND_EXIT = """
import asyncio, sys
from starweaver.mcp import MCPServerStdio
from starweaver.providers import PROVIDERS, render

async def main() -> None:
    async with MCPServerStdio("echo", sys.executable, args=[sys.argv[1]], timeout_ms=20_000) as closed:
        print(await closed.call_tool("add", {"left": 1, "right": 2}))
    # Left open: it stops with the process.
    print(await MCPServerStdio("echo", sys.executable, args=[sys.argv[1]], timeout_ms=20_000).call_tool("add", {"left": 2, "right": 2}))

asyncio.run(main())
"""


def test_a_process_that_used_mcp_clients_exits_cleanly_every_time() -> None:
    """Background tasks woke Python wakers while the interpreter finalized (SIGABRT): a
    few processes side by side, each must exit with status 0."""
    import subprocess

    runs = [
        subprocess.Popen(
            [sys.executable, "-c", USE_AND_EXIT, SERVER], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(6)
    ]
    for run in runs:
        stdout, stderr = run.communicate(timeout=60)
        assert (run.returncode, stdout.split()) == (0, ["{'result':", "3}", "{'result':", "4}"]), stderr


MEDIA = str(Path(__file__).parent / "mcp_servers" / "media_server.py")


def test_an_mcp_servers_content_blocks_become_content_parts() -> None:
    async def scenario() -> None:
        async with MCPServerStdio("media", sys.executable, args=[MEDIA]) as server:
            content = await server.call_tool("media")
        assert content == [
            {"kind": "text", "text": "a picture"},
            {"kind": "image", "data": "iVBORw==", "media_type": "image/png"},
            {"kind": "audio", "data": "UklGRg==", "media_type": "audio/wav"},
            {"kind": "resource_link", "uri": "file:///a.txt", "name": "a", "description": "A"},
            {"kind": "resource", "uri": "file:///b.txt", "media_type": "text/plain", "text": "bee"},
            {"kind": "resource", "uri": "file:///r.pdf", "media_type": "application/pdf", "blob": "JVBERi0="},
        ]
        assert [type(from_dict(part)).__name__ for part in content] == [
            "Text",
            "Image",
            "Audio",
            "ResourceLink",
            "Resource",
            "Resource",
        ]
        assert from_dict(content[1]) == Image(data=b"\x89PNG", media_type="image/png")

    asyncio.run(scenario())


def test_the_client_speaks_the_stateless_revision_to_servers_that_have_it_and_falls_back_when_asked() -> None:
    """DESIGN.md §21: `server/discover` (2026-07-28) with our own server; `"auto"` opens
    a session with a server that only knows `initialize`; `"discover"` alone does not,
    and says so."""
    served = str(Path(__file__).parent / "mcp_servers" / "served_tools.py")
    legacy = [str(Path(__file__).parent / "mcp_servers" / "legacy_server.py")]

    async def scenario() -> None:
        ours = MCPServerStdio(
            "ours", sys.executable, args=["-m", "starweaver", "serve-mcp", served], protocol="discover"
        )
        async with ours:
            assert await ours.call_tool("add", {"left": 2, "right": 5}) == {"result": 7}
        async with MCPServerStdio("legacy", sys.executable, args=legacy, protocol="auto") as older:
            assert await older.call_tool("add", {"left": 2, "right": 5}) == "7"
        async with MCPServerStdio("legacy", sys.executable, args=legacy) as older:
            assert await older.call_tool("add", {"left": 2, "right": 5}) == "7"
        with pytest.raises(ToolsetError, match="server `legacy` did not complete the MCP handshake"):
            async with MCPServerStdio("legacy", sys.executable, args=legacy, protocol="discover"):
                pass

    asyncio.run(scenario())
    with pytest.raises(ValueError, match="protocol must be 'initialize', 'discover' or 'auto', got \"v2\""):
        MCPServerStdio("echo", sys.executable, args=[SERVER], protocol="v2")  # type: ignore[arg-type]


def test_an_mcp_server_toolset_with_hooks_runs_its_calls_through_them() -> None:
    class Doubled(Hooks):
        def before_call(self, ctx: ToolContext, call: ToolCall) -> dict[str, Any]:
            return {"left": loose(call.arguments["left"]) * 2, "right": call.arguments["right"]}

    async def scenario() -> None:
        model = TestModel.responses(
            [TestModel.tool_call_response([call("c1", "add", {"left": 2, "right": 3})]), {"text": "done"}]
        )
        async with echo() as server:
            result = await create_agent(model=model, toolsets=[server.with_hooks(Doubled())]).run("go")
        assert [r["content"] for r in returns(result.messages)] == [{"result": 7}]

    asyncio.run(scenario())
