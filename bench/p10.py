"""P10: MCP `tools/call` over stdio on a trivial tool. Prints one JSON line:

- server: the official Python client calling our server (`python -m starweaver serve-mcp`)
  and the official Python server, one call at a time (ms per call) and 100 in flight
  (calls per second);
- client: our client (`MCPServerStdio.call_tool`, the direct path) and the official
  client, both against the official server. Both clients wait on the same Python
  server, which bounds what any client can gain.

    python p10.py
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

HERE = Path(__file__).resolve().parent
TOOLS = str(HERE / "mcp_tools.py")
OURS = StdioServerParameters(command=sys.executable, args=["-m", "starweaver", "serve-mcp", TOOLS])
SDK = StdioServerParameters(command=sys.executable, args=[TOOLS, "--sdk"])
SEQUENTIAL, PARALLEL = 200, 100


async def timed(call: Callable[[dict[str, str]], Awaitable[object]]) -> tuple[float, float]:
    """ms per `echo` call one at a time, and calls per second with PARALLEL in flight."""
    await call({"text": "warm"})
    started = time.perf_counter()
    for i in range(SEQUENTIAL):
        await call({"text": str(i)})
    latency_ms = (time.perf_counter() - started) / SEQUENTIAL * 1e3
    started = time.perf_counter()
    await asyncio.gather(*(call({"text": str(i)}) for i in range(PARALLEL)))
    return latency_ms, PARALLEL / (time.perf_counter() - started)


async def official_client(params: StdioServerParameters) -> tuple[float, float]:
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        return await timed(lambda arguments: session.call_tool("echo", arguments))


async def our_client() -> tuple[float, float]:
    from starweaver.mcp import MCPServerStdio

    async with MCPServerStdio("bench", sys.executable, args=[TOOLS, "--sdk"]) as server:
        return await timed(lambda arguments: server.call_tool("echo", arguments))


async def main() -> None:
    ours_server, sdk_server = await official_client(OURS), await official_client(SDK)
    ours_client, sdk_client = await our_client(), await official_client(SDK)
    print(
        json.dumps(
            {
                "server_latency_ms": [ours_server[0], sdk_server[0]],
                "server_throughput": [ours_server[1], sdk_server[1]],
                "client_latency_ms": [ours_client[0], sdk_client[0]],
                "client_throughput": [ours_client[1], sdk_client[1]],
            }
        )
    )


if __name__ == "__main__":
    asyncio.run(main())
