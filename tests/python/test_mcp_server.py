"""DESIGN.md §14, the MCP server: the official Python `mcp` client against
`python -m starweaver serve-mcp`, over stdio and over streamable HTTP."""

from __future__ import annotations

import asyncio
import base64
import json
import queue
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

SERVED = str(Path(__file__).parent / "mcp_servers" / "served_tools.py")
SERVE = [sys.executable, "-m", "starweaver", "serve-mcp", SERVED]

Scenario = Callable[[ClientSession], Awaitable[None]]
WithClient = Callable[..., None]


@pytest.fixture(params=["stdio", "http"])
def with_client(request: pytest.FixtureRequest) -> Iterator[WithClient]:
    """Runs a scenario against our server over stdio, or over HTTP (a server process per test)."""
    server: subprocess.Popen[str] | None = None
    url = ""
    if request.param == "http":
        server = subprocess.Popen([*SERVE, "--http", "127.0.0.1:0"], stderr=subprocess.PIPE, text=True)
        assert server.stderr is not None
        announced = server.stderr.readline()
        assert "serving MCP at " in announced, announced
        url = announced.rsplit(" ", 1)[-1].strip()

    @asynccontextmanager
    async def transport() -> AsyncIterator[Any]:
        if server is None:
            async with stdio_client(StdioServerParameters(command=SERVE[0], args=SERVE[1:])) as streams:
                yield streams
        else:
            async with streamable_http_client(url) as streams:
                yield streams

    def run(scenario: Scenario, **session_options: Any) -> None:
        async def main() -> None:
            async with transport() as (read, write), ClientSession(read, write, **session_options) as session:
                await session.initialize()
                await scenario(session)

        asyncio.run(main())

    yield run
    if server is not None:
        server.terminate()
        server.wait(timeout=10)


def text_of(result: object) -> str:
    content = getattr(result, "content")  # noqa: B009 (`result` is an `object` to the type checkers)
    return " ".join(getattr(block, "text", "") for block in content)


def test_the_official_client_lists_and_calls_our_tools(with_client: WithClient) -> None:
    async def scenario(session: ClientSession) -> None:
        listed = await session.list_tools()
        tools = {t.name: t for t in listed.tools}
        served = {
            "add",
            "refuse",
            "slow",
            "report",
            "loud_shout",
            "waits",
            "sleeps",
            "chatty",
            "wipe",
            "copy",
            "sign_up",
            "pick_theme",
            "haiku",
            "touch",
        }
        served |= {"forecast", "rows"}
        assert set(tools) == served, "a tool in a served toolset is served once, as the toolset shows it"
        assert tools["add"].description == "Add two integers."
        assert tools["add"].input_schema["required"] == ["left", "right"]
        assert tools["add"].annotations is not None and tools["add"].annotations.read_only_hint is True
        added = await session.call_tool("add", {"left": 2, "right": 3})
        assert (added.is_error, text_of(added)) == (False, "5")
        shouted = await session.call_tool("loud_shout", {"text": "hi"})
        assert text_of(shouted) == "HI"

    with_client(scenario)


def test_return_schemas_are_output_schemas_and_values_structured_content_once_checked(with_client: WithClient) -> None:
    async def scenario(session: ClientSession) -> None:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert tools["forecast"].output_schema == {
            "description": "The weather in one city.",
            "properties": {"city": {"type": "string"}, "celsius": {"type": "number"}},
            "required": ["city", "celsius"],
            "type": "object",
        }
        # A value that is not an object is served as the official SDK serves it: wrapped.
        assert tools["add"].output_schema == {
            "type": "object",
            "properties": {"result": {"type": "integer"}},
            "required": ["result"],
        }
        assert tools["report"].output_schema is None, "a `ToolResult` says nothing about a structured value"
        # The official client checks structured content against the output schema itself.
        forecast = await session.call_tool("forecast", {"city": "Oslo"})
        assert (forecast.is_error, forecast.structured_content) == (False, {"city": "Oslo", "celsius": 21.5})
        added = await session.call_tool("add", {"left": 2, "right": 3})
        assert (text_of(added), added.structured_content) == ("5", {"result": 5})
        broken = await session.call_tool("rows", {})
        assert broken.is_error, text_of(broken)
        assert text_of(broken).startswith("the tool's return value does not match its return schema at `/rows/1`: ")
        assert broken.structured_content is not None and broken.structured_content["kind"] == "execution"

    with_client(scenario)


def test_errors_are_is_error_results_with_the_model_facing_message(with_client: WithClient) -> None:
    async def scenario(session: ClientSession) -> None:
        invalid = await session.call_tool("add", {"left": "two", "right": 3})
        assert invalid.is_error and "left" in text_of(invalid), text_of(invalid)
        refused = await session.call_tool("refuse", {})
        assert refused.is_error and text_of(refused) == "the vault is locked"
        timed_out = await session.call_tool("slow", {"seconds": 5})
        assert timed_out.is_error and "timed out" in text_of(timed_out)
        unknown = await session.call_tool("nope", {})
        assert unknown.is_error and "unknown tool `nope`" in text_of(unknown)

    with_client(scenario)


def test_host_only_fields_never_leave(with_client: WithClient) -> None:
    async def scenario(session: ClientSession) -> None:
        result = await session.call_tool("report", {})
        assert result.structured_content == {"summary": "ok"}
        assert "host-only" not in result.model_dump_json()

    with_client(scenario)


async def logged(received: list[types.LoggingMessageNotificationParams], count: int) -> None:
    """Waits (up to 10 s) for `count` log messages: over HTTP they ride the session's own
    stream, which may deliver them after the call's answer."""
    for _ in range(1000):
        if len(received) >= count:
            return
        await asyncio.sleep(0.01)


# MCP logging is deprecated by SEP-2577 (the SDK warns); clients and servers still use it.
@pytest.mark.filterwarnings("ignore:The logging capability is deprecated")
def test_progress_goes_to_the_client_that_asked_and_logs_respect_its_level(with_client: WithClient) -> None:
    received: list[types.LoggingMessageNotificationParams] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        received.append(params)

    async def scenario(session: ClientSession) -> None:
        reports: list[tuple[float, float | None, str | None]] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            reports.append((progress, total, message))

        copied = await session.call_tool("copy", {"files": 2}, progress_callback=on_progress)
        assert text_of(copied) == "copied 2"
        assert reports == [(0, 2, "0 of 2"), (1, 2, "1 of 2"), (2, 2, "2 of 2")]
        await logged(received, 2)
        assert [(r.level, r.logger, r.data) for r in received] == [
            ("debug", "copy", "planning"),
            ("warning", "copy", {"message": "one file was empty", "data": {"file": "b.txt"}}),
        ]
        received.clear()
        await session.set_logging_level("warning")
        await session.call_tool("copy", {"files": 1})
        await logged(received, 1)
        assert [r.level for r in received] == ["warning"], "the debug message is below the level set"

    with_client(scenario, logging_callback=on_log)


def test_fifty_calls_in_flight_all_answer(with_client: WithClient) -> None:
    async def scenario(session: ClientSession) -> None:
        results = await asyncio.gather(*(session.call_tool("add", {"left": i, "right": 1}) for i in range(50)))
        assert [text_of(r) for r in results] == [str(i + 1) for i in range(50)]

    with_client(scenario)


def cancelled_after(delay: float, tool: str, arguments: dict[str, Any], marker: Path) -> Scenario:
    """Calls `tool`, cancels the call after `delay` seconds (the client sends
    notifications/cancelled), then waits up to 30 s for the tool to write `marker`."""

    async def scenario(session: ClientSession) -> None:
        call = asyncio.ensure_future(session.call_tool(tool, {**arguments, "marker": str(marker)}))
        await asyncio.sleep(delay)
        call.cancel()
        for _ in range(300):
            if marker.exists():
                return
            await asyncio.sleep(0.1)

    return scenario


def test_a_clients_cancel_reaches_the_tool(with_client: WithClient, tmp_path: Path) -> None:
    marker = tmp_path / "cancelled"
    with_client(cancelled_after(0.5, "waits", {}, marker))
    assert marker.read_text() == "cancelled", "the tool saw ctx.cancelled() resolve"


def test_a_clients_cancel_interrupts_a_tool_that_does_not_stop_by_itself(
    with_client: WithClient, tmp_path: Path
) -> None:
    marker = tmp_path / "ended"
    with_client(cancelled_after(0.2, "sleeps", {"seconds": 30}, marker))
    assert marker.read_text() == "interrupted", "the coroutine got CancelledError"


def elicitation(answer: types.ElicitResult, asked: list[str]) -> Any:
    async def callback(context: object, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return answer

    return callback


def recording(answer: types.ElicitResult, asked: list[types.ElicitRequestParams]) -> Any:
    async def callback(context: object, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params)
        return answer

    return callback


def saying(expected: str) -> Scenario:
    async def scenario(session: ClientSession) -> None:
        result = await session.call_tool("sign_up", {})
        assert (result.is_error, text_of(result)) == (False, expected)

    return scenario


def test_a_tool_asks_the_client_with_its_own_message_and_schema(with_client: WithClient) -> None:
    answers = [
        (
            types.ElicitResult(action="accept", content={"name": "Ada", "age": 36}),
            "signed up Ada (36, newsletter=False)",
        ),
        (types.ElicitResult(action="decline"), "not signed up: decline"),
        (types.ElicitResult(action="cancel"), "not signed up: cancel"),
    ]
    for answer, said in answers:
        asked: list[types.ElicitRequestParams] = []
        with_client(saying(said), elicitation_callback=recording(answer, asked))
        assert len(asked) == 1 and asked[0].message == "Who is signing up?"
        schema = asked[0].model_dump(by_alias=True)["requestedSchema"]
        assert schema["required"] == ["name"]
        assert schema["properties"]["age"] == {"type": "integer", "default": 30, "minimum": 0, "title": "Age"}


def test_a_schema_dict_without_its_type_is_asked_as_an_object(with_client: WithClient) -> None:
    asked: list[types.ElicitRequestParams] = []

    async def scenario(session: ClientSession) -> None:
        result = await session.call_tool("pick_theme", {})
        assert (result.is_error, text_of(result)) == (False, "theme dark")

    answer = types.ElicitResult(action="accept", content={"theme": "dark"})
    with_client(scenario, elicitation_callback=recording(answer, asked))
    schema = asked[0].model_dump(by_alias=True)["requestedSchema"]
    assert schema["type"] == "object" and schema["properties"] == {"theme": {"type": "string"}}


def test_a_tool_asks_the_clients_model_by_sampling(with_client: WithClient) -> None:
    asked: list[types.CreateMessageRequestParams] = []

    async def sample(context: object, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        asked.append(params)
        reply = types.TextContent(type="text", text="green builds rest")
        return types.CreateMessageResult(role="assistant", content=reply, model="m1", stop_reason="endTurn")

    async def scenario(session: ClientSession) -> None:
        result = await session.call_tool("haiku", {"topic": "CI"})
        assert (result.is_error, text_of(result)) == (False, "green builds rest (m1, endTurn)")

    with_client(scenario, sampling_callback=sample)
    assert [(m.role, getattr(m.content, "text", None)) for m in asked[0].messages] == [("user", "A haiku about CI")]
    assert (asked[0].max_tokens, asked[0].system_prompt) == (60, "Five, seven, five.")


def test_a_tool_that_needs_approval_asks_the_client_by_elicitation(with_client: WithClient) -> None:
    asked: list[str] = []

    async def scenario(session: ClientSession) -> None:
        result = await session.call_tool("wipe", {"path": "/tmp/x"})
        assert (result.is_error, text_of(result)) == (False, "wiped /tmp/x")

    with_client(
        scenario,
        elicitation_callback=elicitation(types.ElicitResult(action="accept", content={"approve": True}), asked),
    )
    assert len(asked) == 1 and "`wipe`" in asked[0] and "/tmp/x" in asked[0], asked


def test_a_declined_or_refused_approval_is_an_error_and_the_tool_does_not_run(with_client: WithClient) -> None:
    for answer in (
        types.ElicitResult(action="decline"),
        types.ElicitResult(action="accept", content={"approve": False}),
    ):
        asked: list[str] = []

        async def scenario(session: ClientSession) -> None:
            result = await session.call_tool("wipe", {"path": "/tmp/x"})
            assert result.is_error and text_of(result).startswith("the call was denied"), text_of(result)

        with_client(scenario, elicitation_callback=elicitation(answer, asked))
        assert len(asked) == 1


def test_without_elicitation_a_tool_that_needs_approval_says_so(with_client: WithClient) -> None:
    async def scenario(session: ClientSession) -> None:
        result = await session.call_tool("wipe", {"path": "/tmp/x"})
        assert result.is_error and text_of(result).startswith("approval is required"), text_of(result)

    with_client(scenario)


def rust_server() -> str:
    """The Rust example server (starweaver/examples/mcp_server), built now if needed."""
    root = Path(__file__).resolve().parents[2]
    subprocess.run(
        ["cargo", "build", "--quiet", "-p", "starweaver", "--features", "mcp", "--example", "mcp_server"],
        cwd=root,
        check=True,
    )
    return str(root / "target" / "debug" / "examples" / "mcp_server")


def test_the_official_client_lists_and_calls_rust_tools_from_our_rust_server() -> None:
    asked: list[str] = []

    async def main() -> None:
        params = StdioServerParameters(command=rust_server())
        callback = elicitation(types.ElicitResult(action="accept", content={"approve": True}), asked)
        async with (
            stdio_client(params) as (read, write),
            ClientSession(read, write, elicitation_callback=callback) as session,
        ):
            await session.initialize()
            tools = {t.name: t for t in (await session.list_tools()).tools}
            assert set(tools) == {"add", "deploy"}
            assert tools["add"].input_schema["properties"]["left"]["description"] == "The first addend."
            added = await session.call_tool("add", {"left": 2, "right": 3})
            assert (added.is_error, added.structured_content) == (False, {"total": 5})
            deployed = await session.call_tool("deploy", {"environment": "staging"})
            assert deployed.structured_content == {"deployed_to": "staging", "approved_by": "mcp client"}

    asyncio.run(main())
    assert len(asked) == 1 and "`deploy`" in asked[0]


class RawServer:
    """`serve-mcp` over stdio, spoken to in raw JSON-RPC lines; every line it writes to
    stdout must be JSON (a line that is not fails the test)."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            SERVE, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)

    def send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def answer(self) -> dict[str, Any]:
        line = self.lines.get(timeout=20)
        try:
            message: dict[str, Any] = json.loads(line)
        except json.JSONDecodeError:
            pytest.fail(f"stdout carried a line that is not JSON-RPC: {line!r}")
        return message

    def initialize(self) -> None:
        params = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}
        self.send(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}))
        assert self.answer()["result"]["protocolVersion"] == "2025-11-25"
        self.send('{"jsonrpc": "2.0", "method": "notifications/initialized"}')

    def call(self, id_: int, name: str, arguments: Any) -> None:
        params = {"name": name, "arguments": arguments}
        self.send(json.dumps({"jsonrpc": "2.0", "id": id_, "method": "tools/call", "params": params}))

    def close(self) -> tuple[str, int]:
        """Ends the session: its stderr and exit status."""
        _, stderr = self.process.communicate(timeout=30)
        return stderr, self.process.returncode


def test_a_tools_prints_go_to_stderr_its_stdin_is_empty_and_stdio_carries_json_rpc_alone() -> None:
    server = RawServer()
    server.initialize()
    server.call(1, "chatty", {})
    assert server.answer()["result"]["content"][0]["text"] == "quiet"
    stderr, status = server.close()
    assert "a tool's print" in stderr and "a library's write to fd 1" in stderr
    assert status == 0


def test_protocol_misuse_is_answered_with_json_rpc_errors_and_the_server_keeps_serving() -> None:
    server = RawServer()
    # A response and a notification before `initialize`: nothing to answer, no reason to stop.
    server.send('{"jsonrpc": "2.0", "id": 99, "result": {}}')
    server.send('{"jsonrpc": "2.0", "method": "notifications/initialized"}')
    server.call(1, "add", {"left": 1, "right": 2})
    early = server.answer()
    assert early["id"] == 1 and "error" in early
    server.initialize()
    server.send('{"jsonrpc": "2.0", "id": 2, "method": "tools/li')
    server.send('{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": "add"}')
    server.call(4, "add", {"left": json.loads("[" * 200 + "]" * 200)})
    answers = [server.answer() for _ in range(3)]
    assert [(a["id"], a["error"]["code"]) for a in answers] == [(None, -32700), (3, -32602), (4, -32602)]
    server.call(5, "add", {"left": 1, "right": 2})
    assert server.answer()["result"]["content"][0]["text"] == "3"
    _, status = server.close()
    assert status == 0


def test_ordinary_sessions_end_with_exit_status_zero_every_time() -> None:
    """Answers were delivered, then the process aborted at exit (a timer thread woke the
    loop while the interpreter finalized): several sessions side by side, each must end
    cleanly."""
    servers = [RawServer() for _ in range(6)]
    for server in servers:
        server.initialize()
        server.call(1, "add", {"left": 2, "right": 2})
    for server in servers:
        assert server.answer()["result"]["content"][0]["text"] == "4"
    assert [server.close()[1] for server in servers] == [0] * 6


WITH_DEPS = str(Path(__file__).parent / "mcp_servers" / "served_with_deps.py")


async def _served(args: list[str], scenario: Scenario) -> None:
    server = StdioServerParameters(command=sys.executable, args=["-m", "starweaver", "serve-mcp", *args])
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await scenario(session)


@pytest.mark.parametrize(("extra", "expected"), [([], "ops"), (["--deps", f"{WITH_DEPS}:other_deps"], "sre")])
def test_served_tools_get_the_modules_deps_or_the_factorys(extra: list[str], expected: str) -> None:
    async def scenario(session: ClientSession) -> None:
        answered = await session.call_tool("team", {})
        assert (answered.is_error, text_of(answered)) == (False, expected)

    asyncio.run(_served([WITH_DEPS, *extra], scenario))


@pytest.mark.parametrize(
    ("deps", "named"),
    [
        ("nope", "expected MODULE_OR_FILE:FACTORY"),
        (f"{WITH_DEPS}:missing", "`missing` is not a callable"),
        (f"{WITH_DEPS}:broken_deps", "the factory raised RuntimeError: no database"),
    ],
)
def test_a_deps_factory_that_cannot_give_deps_is_named(deps: str, named: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "starweaver", "serve-mcp", WITH_DEPS, "--deps", deps],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2 and named in done.stderr, done.stderr


def test_schemas_are_served_with_their_defs_inlined_so_clients_can_read_them() -> None:
    async def scenario(session: ClientSession) -> None:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        schema = tools["greet"].input_schema
        # Inlined for clients that cannot follow `$ref`; the definitions kept for those that look.
        assert "$ref" not in json.dumps(schema) and "$defs" in schema, schema
        home = schema["properties"]["home"]
        assert home["properties"]["city"]["type"] == "string", home
        greeted = await session.call_tool("greet", {"name": "Ada", "home": {"street": "x", "city": "London"}})
        assert text_of(greeted) == "hello Ada of London"

    asyncio.run(_served([WITH_DEPS], scenario))


CONTENT = str(Path(__file__).parent / "mcp_servers" / "served_content.py")


def test_content_parts_reach_the_official_client_as_the_blocks_of_their_kinds() -> None:
    async def scenario(session: ClientSession) -> None:
        picture = await session.call_tool("picture", {})
        assert picture.is_error is False
        assert [block.model_dump(exclude_none=True) for block in picture.content] == [
            {"type": "image", "data": "iVBORw==", "mime_type": "image/png"}
        ]
        everything = await session.call_tool("everything", {})
        blocks = [block.model_dump(exclude_none=True, by_alias=True) for block in everything.content]
        assert blocks == [
            {"type": "text", "text": "a picture"},
            # MCP has no image by URL, nor a document: a link to it, and an embedded blob.
            {"type": "resource_link", "uri": "https://example.com/a.png", "name": "https://example.com/a.png"},
            {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
            {
                "type": "resource",
                "resource": {"uri": "file:///r.pdf", "mimeType": "application/pdf", "blob": "JVBERi0="},
            },
            {
                "type": "resource_link",
                "uri": "file:///a.txt",
                "name": "a",
                "description": "A",
                "mimeType": "text/plain",
            },
            {"type": "resource", "resource": {"uri": "file:///b.txt", "text": "bee"}},
            {
                "type": "resource",
                "resource": {"uri": "file:///c.bin", "mimeType": "application/octet-stream", "blob": "AAE="},
            },
        ]
        # The host-only value never leaves.
        assert everything.structured_content is None

    asyncio.run(_served([CONTENT], scenario))


def test_resources_and_templates_are_listed_and_read_as_text_and_blobs(with_client: WithClient) -> None:
    async def scenario(session: ClientSession) -> None:
        capabilities = session.server_capabilities
        assert capabilities is not None and capabilities.resources is not None
        assert (capabilities.resources.subscribe, capabilities.resources.list_changed) == (True, False)
        assert capabilities.prompts is not None and capabilities.completions is not None
        resources = {r.uri: r for r in (await session.list_resources()).resources}
        assert set(resources) == {"notes://today", "notes://logo", "notes://broken"}
        assert (resources["notes://today"].name, resources["notes://today"].description) == ("today", "Today's notes.")
        assert (resources["notes://logo"].name, resources["notes://logo"].mime_type) == ("logo", "image/png")
        templates = (await session.list_resource_templates()).resource_templates
        assert [(t.uri_template, t.name) for t in templates] == [("notes://{day}/lines/{n}", "line")]
        today = (await session.read_resource("notes://today")).contents[0]
        assert isinstance(today, types.TextResourceContents)
        assert (today.uri, today.mime_type, today.text) == ("notes://today", "text/markdown", "# Today")
        logo = (await session.read_resource("notes://logo")).contents[0]
        assert isinstance(logo, types.BlobResourceContents)
        assert (logo.mime_type, base64.b64decode(logo.blob)) == ("image/png", b"\x89PNG\r\n")
        line = (await session.read_resource("notes://today/lines/2")).contents[0]
        assert isinstance(line, types.TextResourceContents)
        assert (line.text, line.mime_type) == ("line 3 of today", "text/plain"), "`n` arrives as an int"

    with_client(scenario)


async def refused(request: Awaitable[object]) -> tuple[int, str]:
    with pytest.raises(MCPError) as caught:
        await request
    return caught.value.code, caught.value.message


def test_unknown_resources_bad_arguments_and_failing_functions_are_json_rpc_errors(with_client: WithClient) -> None:
    async def scenario(session: ClientSession) -> None:
        assert await refused(session.read_resource("notes://nowhere")) == (
            -32002,
            "no resource has the URI `notes://nowhere`",
        )
        code, message = await refused(session.read_resource("notes://broken"))
        assert (code, message) == (-32603, "resource `notes://broken`: RuntimeError: the disk is on fire")
        code, message = await refused(session.read_resource("notes://today/lines/second"))
        assert code == -32602 and message.startswith("resource `notes://today/lines/second`: `n`: "), message
        assert await refused(session.get_prompt("review")) == (-32602, "prompt `review` needs the argument `code`")
        code, message = await refused(session.get_prompt("chart", {"points": "many"}))
        assert code == -32602 and message.startswith("prompt `chart`: `points`: "), message
        assert await refused(session.get_prompt("nope")) == (-32602, "no prompt named `nope`")
        assert await refused(session.get_prompt("failing")) == (
            -32603,
            "prompt `failing`: RuntimeError: no prompt today",
        )
        assert (await session.call_tool("add", {"left": 1, "right": 1})).is_error is False, "the server goes on"

    with_client(scenario)


def test_prompts_are_listed_with_their_arguments_and_filled_with_text_images_and_resources(
    with_client: WithClient,
) -> None:
    async def scenario(session: ClientSession) -> None:
        prompts = {p.name: p for p in (await session.list_prompts()).prompts}
        assert set(prompts) == {"review", "chart", "failing"}
        review = prompts["review"]
        assert review.description == "Asks for a code review."
        assert [(a.name, a.description, a.required) for a in review.arguments or []] == [
            ("code", "The code to review.", True),
            ("language", "Its language.", False),
        ]
        assert prompts["chart"].title == "A chart"
        filled = await session.get_prompt("review", {"code": "x = 1", "language": "rust"})
        assert filled.description == "Asks for a code review."
        assert [(m.role, m.content.type) for m in filled.messages] == [("user", "text"), ("assistant", "text")]
        first = filled.messages[0].content
        assert isinstance(first, types.TextContent) and first.text == "Review this rust code:\nx = 1"
        chart = await session.get_prompt("chart", {"points": "3"})
        assert [m.content.type for m in chart.messages] == ["image", "resource", "text"]
        image, embedded, text = (m.content for m in chart.messages)
        assert isinstance(image, types.ImageContent) and base64.b64decode(image.data) == b"\x89PNG\r\n"
        assert isinstance(embedded, types.EmbeddedResource) and embedded.resource.uri == "notes://data"
        assert isinstance(text, types.TextContent) and text.text == "3 points"

    with_client(scenario)


def test_completions_come_from_each_arguments_completer_or_are_empty(with_client: WithClient) -> None:
    async def scenario(session: ClientSession) -> None:
        review = types.PromptReference(name="review")
        line = types.ResourceTemplateReference(uri="notes://{day}/lines/{n}")
        language = await session.complete(review, {"name": "language", "value": "r"})
        assert (language.completion.values, language.completion.total) == (["rust"], 1)
        day = await session.complete(line, {"name": "day", "value": "to"})
        assert day.completion.values == ["today", "tomorrow"]
        assert (await session.complete(review, {"name": "code", "value": "x"})).completion.values == []
        assert (await session.complete(line, {"name": "n", "value": "1"})).completion.values == []
        unknown = session.complete(types.PromptReference(name="nope"), {"name": "a", "value": ""})
        assert await refused(unknown) == (-32602, "no prompt named `nope`")

    with_client(scenario)


class Updates:
    """The URIs of `notifications/resources/updated` a session receives."""

    def __init__(self) -> None:
        self.uris: list[str] = []

    async def __call__(self, message: object) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            self.uris.append(message.params.uri)

    async def arrive(self, uri: str) -> None:
        for _ in range(500):
            if uri in self.uris:
                return
            await asyncio.sleep(0.01)
        raise AssertionError(f"no update of {uri} arrived; got {self.uris}")


# The official client warns that revision 2026-07-28 drops subscriptions; we serve 2025-11-25.
SUBSCRIBING = pytest.mark.filterwarnings("ignore:resources/(un)?subscribe is removed")


@SUBSCRIBING
def test_a_changed_resource_is_told_to_its_subscribers_until_they_unsubscribe(with_client: WithClient) -> None:
    updates = Updates()

    async def scenario(session: ClientSession) -> None:
        await session.subscribe_resource("notes://today")
        await session.subscribe_resource("notes://today/lines/1")
        assert await refused(session.subscribe_resource("elsewhere://x")) == (
            -32002,
            "no resource has the URI `elsewhere://x`",
        )
        await session.call_tool("touch", {"uri": "notes://logo"})  # not subscribed to
        await session.call_tool("touch", {"uri": "notes://today"})
        await updates.arrive("notes://today")
        await session.unsubscribe_resource("notes://today")
        await session.call_tool("touch", {"uri": "notes://today"})
        await session.call_tool("touch", {"uri": "notes://today/lines/1"})
        await updates.arrive("notes://today/lines/1")
        assert updates.uris == ["notes://today", "notes://today/lines/1"]

    with_client(scenario, message_handler=updates)


@SUBSCRIBING
def test_over_http_only_the_sessions_that_subscribed_hear_of_a_change() -> None:
    server = subprocess.Popen([*SERVE, "--http", "127.0.0.1:0"], stderr=subprocess.PIPE, text=True)
    assert server.stderr is not None
    url = server.stderr.readline().rsplit(" ", 1)[-1].strip()
    watching, other = Updates(), Updates()

    async def main() -> None:
        async with (
            streamable_http_client(url) as (read, write),
            ClientSession(read, write, message_handler=watching) as subscriber,
            streamable_http_client(url) as (read2, write2),
            ClientSession(read2, write2, message_handler=other) as bystander,
        ):
            await subscriber.initialize()
            await bystander.initialize()
            await subscriber.subscribe_resource("notes://today")
            await bystander.call_tool("touch", {"uri": "notes://today"})
            await watching.arrive("notes://today")
            await bystander.subscribe_resource("notes://logo")
            await bystander.call_tool("touch", {"uri": "notes://logo"})
            await other.arrive("notes://logo")
        assert (watching.uris, other.uris) == (["notes://today"], ["notes://logo"])

    try:
        asyncio.run(main())
    finally:
        server.terminate()
        server.wait(timeout=10)


WITH_HOOKS = str(Path(__file__).parent / "mcp_servers" / "served_with_hooks.py")


def test_served_calls_run_through_the_modules_hooks() -> None:
    async def scenario(session: ClientSession) -> None:
        rewritten = await session.call_tool("deploy", {"env": "prod"})
        assert (rewritten.is_error, text_of(rewritten)) == (False, "deployed to staging")
        answered = await session.call_tool("deploy", {"env": "nowhere"})
        assert (answered.is_error, text_of(answered)) == (False, "nothing to deploy")

    asyncio.run(_served([WITH_HOOKS], scenario))
