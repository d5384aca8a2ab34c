"""Our client driver for the MCP conformance suite's client scenarios, on starweaver's
public API alone (`MCPServerHTTP`, `call_tool`, an agent on a `TestModel`).

The suite runs `python tests/conformance/client.py URL` once per scenario, with the
scenario's name in `MCP_CONFORMANCE_SCENARIO`; each scenario's server then checks what
the client did. This driver does what the scenario's description asks of a client and
exits 0, or prints what failed and exits 1.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import urllib.error
import urllib.request
from collections.abc import Awaitable, Callable

from starweaver import create_agent
from starweaver.mcp import MCPServerHTTP, OAuth
from starweaver.testing import TestModel

# Each scenario ends well within the suite's own timeout (30 s by default).
TIMEOUT_S = 20.0
REQUEST_TIMEOUT_MS = 10_000
# The suite's authorization servers approve at once and redirect here with the code; its
# CIMD scenario expects this client id metadata URL.
REDIRECT_URI = "http://localhost:3000/callback"
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"


async def list_through_a_run(server: MCPServerHTTP) -> list[str]:
    """The server's tools as an agent's model is offered them (a `tools/list`)."""
    model = TestModel.responses([{"text": "listed"}])
    result = await create_agent(model=model, toolsets=[server]).run("which tools are there?")
    assert result.output == "listed", result.output
    return [tool["name"] for tool in model.requests[0]["tools"]]


async def initialize(server: MCPServerHTTP) -> None:
    """The handshake (`initialize`, then `notifications/initialized`) with our name and
    version, then a listing."""
    await list_through_a_run(server)


async def tools_call(server: MCPServerHTTP) -> None:
    """The model calls the server's `add_numbers`; the run ends with the server's answer."""
    model = TestModel.responses(
        [
            TestModel.tool_call_response([{"id": "c1", "name": "add_numbers", "arguments": {"a": 5, "b": 3}}]),
            {"text": "done"},
        ]
    )
    result = await create_agent(model=model, toolsets=[server]).run("add 5 and 3")
    returned = result.messages[2]["parts"][0]
    assert returned["kind"] == "tool_return" and not returned["is_error"], returned
    assert "8" in str(returned["content"]), returned


async def elicitation_defaults(server: MCPServerHTTP) -> None:
    """A tool that asks the client by elicitation with defaults for every field, called in
    a run: the agent's elicitation handler accepts without changing anything, and the
    client fills in the defaults."""
    call = {"id": "c1", "name": "test_client_elicitation_defaults", "arguments": {}}
    model = TestModel.responses([TestModel.tool_call_response([call]), {"text": "done"}])
    agent = create_agent(model=model, toolsets=[server], elicitation_handler=lambda ctx, message, schema: {})
    result = await agent.run("answer the form")
    returned = result.messages[2]["parts"][0]
    assert "Elicitation completed" in str(returned["content"]), returned


# How long the `sse-retry` driver lets the client's standalone GET stream open before it
# calls the tool (see `sse_retry`).
STANDALONE_STREAM_S = 1.0


async def sse_retry(server: MCPServerHTTP) -> None:
    """A tool call whose SSE stream the server closes before answering: the client
    reconnects with GET and `Last-Event-ID` after the `retry` the server set.

    The client opens its standalone GET stream (for the server's own messages) right after
    the handshake, beside whatever it sends next. The scenario's server answers a pending
    call on whichever GET reaches it first, so a standalone GET delayed past the call (a
    loaded machine) takes the answer before the stream closes, and the scenario sees no
    reconnection at all. A client connected for a moment has its stream open: the driver
    waits that moment, so what the scenario checks is the reconnection it is about."""
    await asyncio.sleep(STANDALONE_STREAM_S)
    print(await server.call_tool("test_reconnection", {}))


async def authorized(server: MCPServerHTTP) -> None:
    """An OAuth-protected server: the client discovers the authorization server, gets a
    token, and then lists and calls `test-tool`."""
    await list_through_a_run(server)
    print(await server.call_tool("test-tool", {}))


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


def _follow_authorization(url: str) -> str:
    """What a browser would do: GET the authorization URL; the suite's server approves at
    once and answers with a redirect to our redirect URI, carrying the code."""
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(url, timeout=10) as response:
            raise RuntimeError(f"the authorization server answered {response.status}, not a redirect")
    except urllib.error.HTTPError as redirect:
        location = redirect.headers.get("Location")
        if redirect.code not in (301, 302, 303, 307, 308) or not location:
            raise RuntimeError(f"the authorization server answered {redirect.code} without a redirect") from None
        return str(location)


async def approve(url: str) -> str:
    return await asyncio.to_thread(_follow_authorization, url)


def oauth() -> OAuth:
    """OAuth as the scenario's context says: pre-registered credentials when it gives
    them, else a metadata document URL or dynamic registration, as the server supports."""
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    return OAuth(
        redirect_uri=REDIRECT_URI,
        on_authorize=approve,
        client_id=context.get("client_id"),
        client_secret=context.get("client_secret"),
        client_metadata_url=CLIENT_METADATA_URL,
        client_name="starweaver conformance client",
    )


SCENARIOS: dict[str, Callable[[MCPServerHTTP], Awaitable[None]]] = {
    "initialize": initialize,
    "tools_call": tools_call,
    "elicitation-sep1034-client-defaults": elicitation_defaults,
    "sse-retry": sse_retry,
}


async def drive(scenario: str, url: str) -> None:
    step = SCENARIOS.get(scenario) or (authorized if scenario.startswith("auth/") else None)
    if step is None:
        raise SystemExit(f"client.py: no driver for scenario {scenario!r}")
    auth = oauth() if scenario.startswith("auth/") else None
    async with MCPServerHTTP("conformance", url, timeout_ms=REQUEST_TIMEOUT_MS, auth=auth) as server:
        await step(server)


def main(argv: list[str]) -> int:
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    if len(argv) < 2 or not scenario:
        print("usage: MCP_CONFORMANCE_SCENARIO=NAME client.py SERVER_URL", file=sys.stderr)
        return 2
    try:
        asyncio.run(asyncio.wait_for(drive(scenario, argv[-1]), TIMEOUT_S))
    except Exception as error:  # noqa: BLE001 (any failure is the scenario's, reported and exit 1)
        print(f"client.py: {scenario}: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
