"""DESIGN.md §14, the MCP server: the official Python `mcp` client against
`python -m starweaver serve-mcp` over stdio."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

SERVED = str(Path(__file__).parent / "mcp_servers" / "served_tools.py")


def with_client(scenario: Callable[[ClientSession], Awaitable[None]]) -> None:
    async def run() -> None:
        params = StdioServerParameters(command=sys.executable, args=["-m", "starweaver", "serve-mcp", SERVED])
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            await scenario(session)

    asyncio.run(run())


def text_of(result: object) -> str:
    content = getattr(result, "content")
    return " ".join(getattr(block, "text", "") for block in content)


def test_the_official_client_lists_and_calls_our_tools() -> None:
    async def scenario(session: ClientSession) -> None:
        listed = await session.list_tools()
        tools = {t.name: t for t in listed.tools}
        assert set(tools) == {"add", "refuse", "slow", "report", "shout", "loud_shout", "waits"}
        assert tools["add"].description == "Add two integers."
        assert tools["add"].input_schema["required"] == ["left", "right"]
        assert tools["add"].annotations is not None and tools["add"].annotations.read_only_hint is True
        added = await session.call_tool("add", {"left": 2, "right": 3})
        assert (added.is_error, text_of(added)) == (False, "5")
        shouted = await session.call_tool("loud_shout", {"text": "hi"})
        assert text_of(shouted) == "HI"

    with_client(scenario)


def test_errors_are_is_error_results_with_the_model_facing_message() -> None:
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


def test_host_only_fields_never_leave() -> None:
    async def scenario(session: ClientSession) -> None:
        result = await session.call_tool("report", {})
        assert result.structured_content == {"summary": "ok"}
        assert "host-only" not in result.model_dump_json()

    with_client(scenario)


def test_fifty_calls_in_flight_all_answer() -> None:
    async def scenario(session: ClientSession) -> None:
        results = await asyncio.gather(*(session.call_tool("add", {"left": i, "right": 1}) for i in range(50)))
        assert [text_of(r) for r in results] == [str(i + 1) for i in range(50)]

    with_client(scenario)


def test_a_clients_cancel_reaches_the_tool(tmp_path: Path) -> None:
    marker = tmp_path / "cancelled"

    async def scenario(session: ClientSession) -> None:
        call = asyncio.ensure_future(session.call_tool("waits", {"marker": str(marker)}))
        await asyncio.sleep(0.5)
        call.cancel()  # the client sends notifications/cancelled
        for _ in range(300):
            if marker.exists():
                return
            await asyncio.sleep(0.1)

    with_client(scenario)
    assert marker.read_text() == "cancelled", "the tool saw ctx.cancelled() resolve"
