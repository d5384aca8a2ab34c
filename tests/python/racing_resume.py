"""One of two processes racing to resume the same stored waiting session: it opens the
session, says so, waits for the go-ahead file, resumes, and prints how it ended. The
approved tool appends a line to RUNS each time it really runs.

    python racing_resume.py DB RUNS GO
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

from starweaver import Agent, ApprovalRequired, SessionConflictError, SessionStateError, ToolContext, create_agent, tool
from starweaver.testing import TestModel

DB, RUNS, GO = (Path(arg) for arg in sys.argv[1:4])


@tool
async def deploy(ctx: ToolContext, env: str) -> str:
    if ctx.approval is None:
        raise ApprovalRequired("deploys need a human")
    with RUNS.open("a") as runs:
        runs.write(f"deployed {env}\n")
    return "deployed"


def agent(starting: bool) -> Agent:
    # The process that starts the run is asked for the call; a resuming one, after it.
    call = TestModel.tool_call_response([{"id": "c1", "name": "deploy", "arguments": {"env": "prod"}}])
    model = TestModel.responses([call] if starting else [{"text": "done"}])
    return create_agent(model=model, tools=[deploy], session_store=DB)


async def main() -> None:
    starting = "--start" in sys.argv
    session = agent(starting).session(session_id="ticket")
    if starting:
        await session.run("deploy")
        return
    pending = session.pending
    assert pending is not None
    print("loaded", flush=True)
    while not GO.exists():
        time.sleep(0.01)
    try:
        result = await session.hitl.resume(approvals=[pending.approvals[0].approve()])
        print(f"resumed {result.status}", flush=True)
    except (SessionConflictError, SessionStateError) as error:
        print(f"refused {type(error).__name__}", flush=True)


if __name__ == "__main__":
    asyncio.run(main())
