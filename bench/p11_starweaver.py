"""P11, starweaver: one agent step with 10 tool calls as a Temporal workflow (a worker in
this process, the dev server at ADDRESS). Prints {"value": ms per run} (the step's model
request, its 10 calls, and the final answer), mean over the measured runs.

    python p11_starweaver.py ADDRESS
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from typing import Any

from _common import mean_ms, report
from temporalio.client import Client

from starweaver import create_agent, tool
from starweaver.temporal import TemporalAgent
from starweaver.testing import FunctionModel


async def fetch(i: int) -> int:
    """Fetch one thing."""
    return i


# Ten tools: calls to one tool run one at a time by the specification (§6), which
# pydantic-ai does not do; distinct tools run side by side in both.
TOOLS = [tool(name=f"fetch{n}")(fetch) for n in range(10)]


def respond(messages: Any, info: Any) -> dict[str, Any]:
    if info["step"] == 1:
        return {"tool_calls": [{"id": f"c{i}", "name": f"fetch{i}", "arguments": {"i": i}} for i in range(10)]}
    return {"text": "ten"}


bench = TemporalAgent(create_agent(model=FunctionModel(respond), tools=TOOLS), name="p11_starweaver")


async def main(address: str) -> None:
    client = await Client.connect(address)

    async def run(n: int) -> None:
        handle = await bench.start(client, "go", id=f"p11-sw-{time.time_ns()}-{n}", task_queue="p11-starweaver")
        assert (await handle.result())["output"] == "ten"

    async with bench.worker(client, task_queue="p11-starweaver"):
        report(await mean_ms(run))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
    # Temporal's client can abort a finalizing interpreter (temporalio/sdk-python#300).
    os._exit(0)
