"""A worker process for the Temporal tests: `python worker.py ADDRESS` runs the test agent's
workflows and activities on its task queue until killed."""

from __future__ import annotations

import asyncio
import sys

from agents import TASK_QUEUE, WORKER_AGENTS
from temporalio.client import Client
from temporalio.worker import Worker


async def main(address: str) -> None:
    client = await Client.connect(address)
    workflows = [agent.workflow for agent in WORKER_AGENTS]
    activities = [activity for agent in WORKER_AGENTS for activity in agent.activities]
    async with Worker(client, task_queue=TASK_QUEUE, workflows=workflows, activities=activities):
        print("worker ready", flush=True)
        await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
