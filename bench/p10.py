"""P10: MCP `tools/call` over stdio on a trivial tool (`echo` in mcp_tools.py). Prints one
JSON line, each key a pair [ours, the official Python SDK's]:

- server: CPU µs of the server process per call, the official client driving our server
  (`python -m starweaver serve-mcp`) and the official server (`mcp_tools.py --sdk`) in
  turn, one call at a time (`server_cpu_us`) and 100 in flight (`server_cpu_us_parallel`);
- client: CPU µs of the client process per call, our client (`MCPServerStdio.call_tool`,
  the direct path) and the official client, both against the official server
  (`client_cpu_us`, `client_cpu_us_parallel`);
- pair: our client with our server against the official client with its server, ms per
  call one at a time (`pair_latency_ms`) and calls per second with 100 in flight
  (`pair_throughput`).

Each session starts its server, warms up (a few calls one at a time and one round in
flight), then runs SEQUENTIAL calls one at a time and ROUNDS rounds of PARALLEL calls in
flight, reading three clocks around each phase: wall time, the client's CPU time
(`time.process_time`: every thread of this process, no children) and the server's CPU
time (its process CPU-time clock, read by pid: every thread, to the nanosecond). Start-up,
handshake and warm-up are outside every figure.

    python p10.py
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

HERE = Path(__file__).resolve().parent
TOOLS = str(HERE / "mcp_tools.py")
OURS = StdioServerParameters(command=sys.executable, args=["-m", "starweaver", "serve-mcp", TOOLS])
SDK = StdioServerParameters(command=sys.executable, args=[TOOLS, "--sdk"])
SEQUENTIAL, PARALLEL, ROUNDS, WARM_UP = 2_000, 100, 20, 20

Call = Callable[[dict[str, str]], Awaitable[object]]


def server_pid() -> int:
    """The pid of the one server this process has running. Neither client hands out its
    child's pid, so it is found by parentage: each session runs one server at a time."""
    me = os.getpid()
    children = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                # Fields after the parenthesised command name (which may hold spaces): state, ppid.
                state, ppid = stat.read().rpartition(")")[2].split()[:2]
        except (OSError, ValueError):
            continue  # exited while listed
        # A previous session's server, exited but not yet reaped, is no longer running.
        if int(ppid) == me and state != "Z":
            children.append(int(entry))
    if len(children) != 1:
        raise RuntimeError(f"expected one server process, found {children}")
    return children[0]


def cpu_clock(pid: int) -> Callable[[], float]:
    """The CPU seconds `pid` has used, all its threads, from its process CPU-time clock
    (what `clock_getcpuclockid(pid)` returns in C: Linux encodes the pid as `~pid << 3 |
    CPUCLOCK_SCHED`). /proc/<pid>/stat counts clock ticks (10 ms here), too coarse for
    microseconds per call; getrusage(RUSAGE_CHILDREN) sees the server only once it has
    exited, with its start-up in the sum."""
    clock_id = (~pid << 3) | 2
    return lambda: time.clock_gettime(clock_id)


@dataclass
class Phase:
    """One phase's figures per call."""

    wall_ms: float
    client_cpu_us: float
    server_cpu_us: float


async def measure(call: Call, server_cpu: Callable[[], float]) -> tuple[Phase, Phase]:
    """The sequential phase and the in-flight phase of one session, warm-up excluded."""
    for i in range(WARM_UP):
        await call({"text": f"warm {i}"})
    # The first round in flight grows buffers and queues the sequential calls never need.
    await asyncio.gather(*(call({"text": str(i)}) for i in range(PARALLEL)))

    async def sequential() -> None:
        for i in range(SEQUENTIAL):
            await call({"text": str(i)})

    async def in_flight() -> None:
        for _ in range(ROUNDS):
            await asyncio.gather(*(call({"text": str(i)}) for i in range(PARALLEL)))

    phases = []
    for run, calls in ((sequential, SEQUENTIAL), (in_flight, ROUNDS * PARALLEL)):
        wall, client, server = time.perf_counter(), time.process_time(), server_cpu()
        await run()
        phases.append(
            Phase(
                (time.perf_counter() - wall) / calls * 1e3,
                (time.process_time() - client) / calls * 1e6,
                (server_cpu() - server) / calls * 1e6,
            )
        )
    return phases[0], phases[1]


async def official_client(params: StdioServerParameters) -> tuple[Phase, Phase]:
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        return await measure(lambda arguments: session.call_tool("echo", arguments), cpu_clock(server_pid()))


async def our_client(params: StdioServerParameters) -> tuple[Phase, Phase]:
    from starweaver.mcp import MCPServerStdio

    async with MCPServerStdio("bench", params.command, args=params.args) as server:
        return await measure(lambda arguments: server.call_tool("echo", arguments), cpu_clock(server_pid()))


async def main() -> None:
    # Every session is measured the same way; the rows take the figures each compares.
    # The official pair (official client, official server) serves three rows: the server
    # side, the client side and the pair.
    ours_server = await official_client(OURS)
    sdk_pair = await official_client(SDK)
    ours_client = await our_client(SDK)
    ours_pair = await our_client(OURS)
    print(
        json.dumps(
            {
                "server_cpu_us": [ours_server[0].server_cpu_us, sdk_pair[0].server_cpu_us],
                "server_cpu_us_parallel": [ours_server[1].server_cpu_us, sdk_pair[1].server_cpu_us],
                "client_cpu_us": [ours_client[0].client_cpu_us, sdk_pair[0].client_cpu_us],
                "client_cpu_us_parallel": [ours_client[1].client_cpu_us, sdk_pair[1].client_cpu_us],
                "pair_latency_ms": [ours_pair[0].wall_ms, sdk_pair[0].wall_ms],
                "pair_throughput": [1e3 / ours_pair[1].wall_ms, 1e3 / sdk_pair[1].wall_ms],
            }
        )
    )


if __name__ == "__main__":
    asyncio.run(main())
