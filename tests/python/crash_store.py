"""SIGKILL crash test of the SQLite session store.

A child process runs sessions against one database file without pause: each run waits
for an approval (a commit), then is resumed and completes (another commit), and every new
life first resumes the waiting sessions the last one left. After each commit the child
prints ``<session id> <revision>``. The parent kills it with SIGKILL at a random moment,
then checks the file: every session loads and restores, and no committed run is lost
(each printed revision is still there, or a later one).

``python tests/python/crash_store.py --kills 50`` prints the figures; the test runs fewer.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from starweaver import Agent, ApprovalRequired, ToolContext, create_agent_runtime, tool
from starweaver.testing import FunctionModel, Messages
from starweaver.types import FunctionModelInfo


@tool
async def deploy(ctx: ToolContext, env: str) -> dict[str, str]:
    """Deploy to ``env``."""
    if ctx.approval is None:
        raise ApprovalRequired(f"deploy {env}")
    await asyncio.sleep(0.001)
    return {"deployed": env}


def answer(messages: Messages, info: FunctionModelInfo) -> dict[str, object]:
    """Calls ``deploy`` for a new prompt, then answers once its return is in."""
    last = messages[-1]["parts"][-1]
    if last["kind"] == "tool_return":
        return {"text": "deployed"}
    return {"tool_calls": [{"id": f"c{len(messages)}", "name": "deploy", "arguments": {"env": "prod"}}]}


def make_agent(db: Path | None) -> Agent:
    """The deploy agent on the SQLite store at ``db``, or in memory for ``None``."""
    return create_agent_runtime(
        model=FunctionModel(answer),
        tools=[deploy],
        approval_required_tools=["deploy"],
        session_store=str(db) if db is not None else None,
    )


async def child(db: Path) -> None:
    agent = make_agent(db)

    def committed(session_id: str) -> None:
        # One write per line, so a kill cannot split it (a torn last line is ignored anyway).
        sys.stdout.write(f"{session_id} {agent.session_store.revision(session_id)}\n")
        sys.stdout.flush()

    async def finish(session_id: str) -> None:
        session = agent.session(session_id=session_id)
        pending = session.pending
        if pending is not None:
            await session.hitl.resume(approvals=[a.approve(decided_by="crash-test") for a in pending.approvals])
            committed(session_id)

    for session_id in agent.session_store.ids():
        await finish(session_id)
    n = 0
    while True:
        n += 1
        session_id = f"s-{os.getpid()}-{n}"
        await agent.session(session_id=session_id).run("deploy prod")
        committed(session_id)
        await finish(session_id)


@dataclass
class Figures:
    kills: int = 0
    commits_seen: int = 0
    states_recovered: int = 0
    runs_lost: int = 0
    waiting_resumed: int = 0
    unloadable: list[str] = field(default_factory=list)


def check(db: Path, committed: dict[str, int], figures: Figures) -> None:
    """Every session in the file restores; every committed revision survived."""
    agent = make_agent(db)
    store = agent.session_store
    figures.states_recovered = 0
    for session_id in store.ids():
        try:
            agent.session(session_id=session_id)
        except Exception as error:  # noqa: BLE001 - each failure is counted and reported
            figures.unloadable.append(f"{session_id}: {error}")
        else:
            figures.states_recovered += 1
    for session_id, revision in committed.items():
        if store.revision(session_id) < revision:
            figures.runs_lost += 1


def trial(db: Path, kills: int, seed: int = 0) -> Figures:
    rng = random.Random(seed)
    figures = Figures()
    committed: dict[str, int] = {}
    for _ in range(kills):
        proc = subprocess.Popen(
            [sys.executable, __file__, "--child", str(db)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        assert proc.stdout is not None
        wanted = rng.randint(1, 40)
        seen = 0
        while seen < wanted:
            line = proc.stdout.readline()
            if not line:
                _, err = proc.communicate()
                raise RuntimeError(f"the child exited early ({proc.returncode}): {err}")
            record(committed, figures, line)
            seen += 1
        time.sleep(rng.uniform(0, 0.01))
        proc.send_signal(signal.SIGKILL)
        rest, _ = proc.communicate()
        # Only whole lines were acknowledged: a kill may tear the last one.
        for line in rest.splitlines(keepends=True):
            if line.endswith("\n"):
                record(committed, figures, line)
        figures.kills += 1
        check(db, committed, figures)
    figures.waiting_resumed = asyncio.run(resume_all(db))
    return figures


def record(committed: dict[str, int], figures: Figures, line: str) -> None:
    """Takes one acknowledged commit, ``<session id> <revision>``."""
    figures.commits_seen += 1
    session_id, revision = line.split()
    committed[session_id] = max(committed.get(session_id, 0), int(revision))


async def resume_all(db: Path) -> int:
    """Resumes every session left waiting; each must complete. Returns how many there were."""
    agent = make_agent(db)
    resumed = 0
    for session_id in agent.session_store.ids():
        session = agent.session(session_id=session_id)
        pending = session.pending
        if pending is None:
            continue
        result = await session.hitl.resume(approvals=[a.approve(decided_by="after-crash") for a in pending.approvals])
        if result.status != "completed":
            raise RuntimeError(f"{session_id} ended {result.status} after the crashes: {result.error}")
        resumed += 1
    return resumed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kills", type=int, default=50)
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        asyncio.run(child(args.child))
        return
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        figures = trial(Path(tmp) / "sessions.db", args.kills)
    print(f"kills tried: {figures.kills}")
    print(f"commits acknowledged by the child: {figures.commits_seen}")
    print(f"states recovered: {figures.states_recovered} (unloadable: {len(figures.unloadable)})")
    print(f"runs lost: {figures.runs_lost}")
    print(f"waiting runs resumed to completion after the last kill: {figures.waiting_resumed}")
    for problem in figures.unloadable:
        print(f"  {problem}")


if __name__ == "__main__":
    main()
