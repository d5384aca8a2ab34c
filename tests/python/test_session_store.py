"""Issue 6, item 2: session stores. Sessions opened by id are written back after every run
and resume; an SQLite store survives the process, even one killed with SIGKILL."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from crash_store import make_agent, trial

from starweaver import (
    FormatError,
    MemorySessionStore,
    RegistrationError,
    SessionConflictError,
    SessionStoreError,
    SqliteSessionStore,
)


def test_a_path_selects_sqlite_and_a_waiting_session_resumes_from_another_agent(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"

    async def first_process() -> str:
        session = make_agent(db).session(session_id="ticket-42")
        assert session.session_id == "ticket-42"
        waiting = await session.run("deploy prod")
        assert waiting.status == "waiting"
        return waiting.hitl.approvals[0].id

    approval_id = asyncio.run(first_process())

    async def second_process() -> None:
        agent = make_agent(db)
        assert isinstance(agent.session_store, SqliteSessionStore)
        assert agent.session_store.ids() == ["ticket-42"]
        session = agent.session(session_id="ticket-42")
        pending = session.pending
        assert pending is not None and pending.approvals[0].id == approval_id
        done = await session.hitl.resume(approvals=[pending.approvals[0].approve(decided_by="ops")])
        assert (done.status, done.output) == ("completed", "deployed")
        # One write claims the decision before the tool runs, one records the finished run.
        assert agent.session_store.revision("ticket-42") == 3
        stored = agent.session_store.load("ticket-42")
        assert stored is not None and stored["waiting"] is None and stored["history"] == done.messages

    asyncio.run(second_process())


def test_the_default_store_is_in_memory_and_sessions_without_an_id_are_not_stored() -> None:
    async def scenario() -> None:
        agent = make_agent(None)
        assert isinstance(agent.session_store, MemorySessionStore)
        await agent.session().run("deploy prod")
        assert agent.session_store.ids() == []
        await agent.session(session_id="a").run("deploy prod")
        assert agent.session_store.ids() == ["a"]
        assert agent.session_store.delete("a") and agent.session_store.load("a") is None

    asyncio.run(scenario())


def test_two_processes_resuming_one_session_cannot_both_commit(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"

    async def scenario() -> None:
        waiting = await make_agent(db).session(session_id="s").run("deploy prod")
        one = make_agent(db).session(session_id="s")
        two = make_agent(db).session(session_id="s")
        decision = [waiting.hitl.approvals[0].approve()]
        await one.hitl.resume(approvals=decision)
        with pytest.raises(
            SessionConflictError, match=r"session `s` changed in its store .*expected revision 1, found 3"
        ):
            await two.hitl.resume(approvals=decision)

    asyncio.run(scenario())


def test_bad_stores_and_ids_get_named_errors(tmp_path: Path) -> None:
    not_a_db = tmp_path / "notes.txt"
    not_a_db.write_text("these are notes, not a database; long enough to have a header")
    with pytest.raises(SessionStoreError, match=r"session store `.*notes.txt`: open failed: file is not a database"):
        make_agent(not_a_db)
    with pytest.raises(SessionStoreError, match="open failed"):
        SqliteSessionStore(tmp_path / "missing-dir" / "sessions.db")
    agent = make_agent(tmp_path / "ok.db")
    with pytest.raises(RegistrationError, match="`session_id`: must not be empty"):
        agent.session(session_id="")
    with pytest.raises(TypeError, match="give `state` or `session_id`, not both"):
        agent.session({"version": 1}, session_id="x")


def test_a_stored_state_that_does_not_fit_is_a_format_error_naming_the_session(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"

    async def scenario() -> None:
        await make_agent(db).session(session_id="s").run("deploy prod")

    asyncio.run(scenario())
    import sqlite3

    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE starweaver_sessions SET state = '{\"version\": 1}'")
    with pytest.raises(FormatError, match=r"stored session `s`: at `.`: missing field `history`"):
        make_agent(db).session(session_id="s")


def test_sigkill_at_random_points_loses_no_committed_run(tmp_path: Path) -> None:
    figures = trial(tmp_path / "sessions.db", kills=8, seed=6)
    print(
        f"kills={figures.kills} commits={figures.commits_seen} recovered={figures.states_recovered} "
        f"lost={figures.runs_lost} resumed_after={figures.waiting_resumed}"
    )
    assert figures.kills == 8
    assert figures.commits_seen >= 8
    assert figures.unloadable == []
    assert figures.runs_lost == 0
    assert figures.states_recovered > 0


def test_two_processes_racing_to_resume_run_the_approved_tool_once(tmp_path: Path) -> None:
    import subprocess
    import sys

    script = str(Path(__file__).with_name("racing_resume.py"))
    db, runs, go = tmp_path / "sessions.db", tmp_path / "runs.txt", tmp_path / "go"
    args = [sys.executable, script, str(db), str(runs), str(go)]
    subprocess.run([*args, "--start"], check=True)
    racers = [subprocess.Popen(args, stdout=subprocess.PIPE, text=True) for _ in range(2)]
    for racer in racers:
        assert racer.stdout is not None and racer.stdout.readline().strip() == "loaded"
    go.touch()  # both hold the waiting session now: release them together
    outcomes = sorted(racer.communicate(timeout=60)[0].strip() for racer in racers)
    assert outcomes == ["refused SessionConflictError", "resumed completed"], outcomes
    assert runs.read_text() == "deployed prod\n", "the loser was refused before its tool ran"
