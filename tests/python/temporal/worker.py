"""A worker process for the Temporal tests: `python worker.py ADDRESS` runs the test agent's
workflows and activities on its task queue until killed."""

from __future__ import annotations

import asyncio
import sys

from temporalio.client import Client

from agents import TASK_QUEUE, temporal_agent


async def main(address: str) -> None:
    client = await Client.connect(address)
    async with temporal_agent.worker(client, task_queue=TASK_QUEUE):
        print("worker ready", flush=True)
        await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
