"""DESIGN.md §8's last bullet: a waiting session exported to JSON resumes in another process
and ends exactly as it would have in-process."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import loose
from export_agent import make_agent

from starweaver import FormatError
from starweaver.types import SessionState

HERE = Path(__file__).parent

RESUME_ELSEWHERE = textwrap.dedent(
    """
    import asyncio, json, sys
    from export_agent import make_agent

    async def main() -> None:
        state = json.loads(open(sys.argv[1]).read())
        session = make_agent(script_from=1).session(state=state)
        pending = session.pending
        result = await session.hitl.resume(
            approvals=[pending.approvals[0].approve(decided_by="ops")],
            deferred_results=[pending.deferred[0].complete({"rows": 2})],
        )
        print(json.dumps({"status": result.status, "output": result.output, "messages": result.messages}))

    asyncio.run(main())
    """
)


def test_a_waiting_session_resumes_in_another_process_exactly_as_in_process(tmp_path: Path) -> None:
    async def in_process() -> tuple[SessionState, dict[str, object]]:
        session = make_agent().session()
        waiting = await session.run("go")
        assert waiting.status == "waiting"
        state = session.export_state()
        result = await session.hitl.resume(
            approvals=[waiting.hitl.approvals[0].approve(decided_by="ops")],
            deferred_results=[waiting.hitl.deferred[0].complete({"rows": 2})],
        )
        return state, {"status": result.status, "output": result.output, "messages": result.messages}

    state, expected = asyncio.run(in_process())
    state_file = tmp_path / "state.json"
    state_file.write_text(json.dumps(state))
    run = subprocess.run(
        [sys.executable, "-c", RESUME_ELSEWHERE, str(state_file)], capture_output=True, text=True, cwd=HERE, check=False
    )
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout) == expected
    assert expected["status"] == "completed"


def test_state_is_canonical_json_with_pending_items() -> None:
    async def go() -> SessionState:
        session = make_agent().session()
        await session.run("go")
        return session.export_state()

    state = asyncio.run(go())
    assert json.loads(json.dumps(state)) == state
    waiting = state["waiting"]
    assert isinstance(waiting, dict)
    slots = loose(waiting["slots"])
    assert [slot["state"] for slot in slots] == ["done", "approval", "deferred"]
    assert slots[1]["metadata"] == {"risk": "high"}


def test_malformed_state_and_scripts_are_clear_errors() -> None:
    from starweaver.testing import TestModel

    with pytest.raises(FormatError, match="session state: version 9 is not supported"):
        make_agent().session(state={"version": 9, "history": [], "decided": [], "waiting": None})
    with pytest.raises(FormatError, match="response 0"):
        TestModel.responses([{"txt": "typo"}])
