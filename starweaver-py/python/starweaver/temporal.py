"""Durable agent runs on Temporal (``pip install 'starweaver-tools[temporal]'``).

A run is a workflow that drives the run's state machine (``NativeDurableRun``, no I/O of
its own); each model request and each tool call is an activity (model requests local ones
by default), so tool code runs on any worker sharing the task queue, and a worker killed mid-call loses nothing: the call is
started again elsewhere, and no finished model request is repeated. An agent with dynamic
toolsets (an MCP server's) lists their tools at each step in an activity of its own (local
like model requests), whose result the workflow records: a replay lists nothing, and a
server's changed tool list takes effect at the next step. Approvals and deferred
results arrive as the workflow update ``decide``, checked like any decision (a forged,
replayed or stale one is rejected and the run keeps waiting); ``pending`` and ``events``
are queries.

    temporal_agent = TemporalAgent(agent, name="support")
    worker = temporal_agent.worker(client, task_queue="agents")        # on every worker
    handle = await temporal_agent.start(client, "Deploy it", id="ticket-42", task_queue="agents")
    await decide(handle, approvals=[...])                              # from any process
    result = await handle.result()                                     # a dict: status, output, messages

The workflow code is deterministic without the sandbox: the state machine does no I/O and
reads no clock or randomness; the run id comes from the workflow. Model-facing outcomes
(``ModelRetry``, ``InvalidArguments``, timeouts, tool errors) are activity results, never
Temporal retries; Temporal starts a call again only when its worker was lost.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from typing import Any, Literal

from temporalio import activity, workflow
from temporalio.client import Client, WorkflowHandle
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError
from temporalio.worker import Worker
from typing_extensions import assert_never

from ._native import (
    AwaitCalls,
    CheckOutput,
    Done,
    ListTools,
    NativeDurableRun,
    RequestModel,
    RunResult,
    StartCalls,
)
from .agent import Agent, decision_list
from .types import Event

__all__ = ["TemporalAgent", "decide"]

#: Started calls are reported as they end; this bounds how long a lost worker goes unnoticed.
DEFAULT_HEARTBEAT = timedelta(seconds=10)


class TemporalAgent:
    """``agent``'s runs as Temporal workflows named ``name`` (the workflow type; its
    activities are ``{name}.list_tools``, ``{name}.request_model``, ``{name}.check_output`` and
    ``{name}.run_call``).

    ``model_timeout`` bounds one model request; ``call_timeout`` bounds a call of a tool
    without ``timeout_ms`` (a tool's own ``timeout_ms`` sets its activity's timeout);
    ``heartbeat`` is how soon a lost worker is noticed.

    Model requests are local activities by default (``model_requests="local"``): they run on
    the worker running the workflow, and their results are recorded with the workflow's
    next task, which saves two server round trips per step; a worker lost mid-request has
    the request made again by the worker that takes the run over. ``"activity"`` makes them
    ordinary activities, for requests that should run on any worker. The listings of
    dynamic toolsets' tools (MCP servers') go the same way as model requests. Tool calls
    are always ordinary activities; a worker finds a dynamic toolset's tool among what the
    toolset lists for the call's step."""

    def __init__(
        self,
        agent: Agent[Any, Any],
        *,
        name: str = "starweaver_agent",
        model_timeout: timedelta = timedelta(minutes=5),
        call_timeout: timedelta = timedelta(minutes=10),
        heartbeat: timedelta = DEFAULT_HEARTBEAT,
        model_requests: Literal["local", "activity"] = "local",
    ) -> None:
        self.agent = agent
        self.name = name
        native = agent._native  # pyright: ignore[reportPrivateUsage]

        @activity.defn(name=f"{name}.list_tools")
        async def list_tools(task: dict[str, Any]) -> dict[str, Any]:
            return await native.list_tools(task)

        @activity.defn(name=f"{name}.request_model")
        async def request_model(task: dict[str, Any]) -> dict[str, Any]:
            return await native.request_model(task)

        @activity.defn(name=f"{name}.check_output")
        async def check_output(task: dict[str, Any]) -> dict[str, Any]:
            return await native.check_output(task)

        @activity.defn(name=f"{name}.run_call")
        async def run_call(run_id: str, task: dict[str, Any]) -> dict[str, Any]:
            reports = _Reports()
            beating = asyncio.ensure_future(_heartbeat(heartbeat / 3, reports))
            try:
                return await native.run_call(run_id, task, reports.heard)
            finally:
                beating.cancel()

        self.activities: list[Callable[..., Any]] = [list_tools, request_model, check_output, run_call]
        if model_requests not in ("local", "activity"):
            raise ValueError(f"model_requests must be 'local' or 'activity', got {model_requests!r}")
        config = _Config(name, native, model_timeout, call_timeout, heartbeat, model_requests == "local")
        self.workflow = _workflow_class(config)

    def output(self, result: Mapping[str, Any]) -> Any:  # noqa: ANN401 (the agent's output type)
        """The typed output of a workflow's result dict (``await handle.result()``): the
        workflow carries the output as JSON, validated here into the agent's
        ``output_type`` (text as is); ``None`` unless the run completed."""
        output = self.agent._output  # pyright: ignore[reportPrivateUsage]
        if output is None or result.get("output") is None:
            return result.get("output")
        return output.decode(result.get("output_tool"), result["output"])

    def worker(self, client: Client, *, task_queue: str, **options: Any) -> Worker:
        """A worker that runs this agent's workflows and activities on ``task_queue``."""
        return Worker(client, task_queue=task_queue, workflows=[self.workflow], activities=self.activities, **options)

    async def start(
        self,
        client: Client,
        prompt: str,
        *,
        id: str,  # noqa: A002 (Temporal's workflow id)
        task_queue: str,
        **options: Any,
    ) -> WorkflowHandle[Any, dict[str, Any]]:
        """Starts a run of ``prompt`` as workflow ``id``; ``await handle.result()`` gives its
        result dict (``status``, ``output``, ``error``, ``messages``, ``finish_reason``,
        ``usage``)."""
        return await client.start_workflow(
            self.name, {"prompt": prompt}, id=id, task_queue=task_queue, result_type=dict, **options
        )


async def decide(
    handle: WorkflowHandle[Any, Any],
    *,
    approvals: Sequence[object] = (),
    deferred_results: Sequence[object] = (),
    elicitations: Sequence[object] = (),
) -> None:
    """Sends decisions to a waiting run (decision objects or canonical JSON dicts). Raises
    ``temporalio.client.WorkflowUpdateFailedError`` when they are refused (forged,
    replayed, stale or incomplete); the run keeps waiting."""
    # By name: the update is the workflow's, whose class the caller need not import.
    await handle.execute_update(  # pyright: ignore[reportUnknownMemberType]
        "decide",
        {
            "approvals": [_as_json(d) for d in decision_list(approvals, "approvals")],
            "deferred_results": [_as_json(d) for d in decision_list(deferred_results, "deferred_results")],
            "elicitations": [_as_json(d) for d in decision_list(elicitations, "elicitations")],
        },
    )


def _as_json(decision: object) -> object:
    to_dict = getattr(decision, "to_dict", None)
    return to_dict() if callable(to_dict) else decision


class _Reports:
    """What a running call reported (``tool_progress``, ``tool_log``) since the last
    heartbeat: its log messages and its latest progress. Heard on the tool's own thread;
    the heartbeat, which must run in the activity's context, takes them."""

    def __init__(self) -> None:
        self.logs: list[Event] = []
        self.progress: Event | None = None
        # The tool's thread hears while the activity's takes.
        self.lock = threading.Lock()

    def heard(self, event: Event) -> None:
        with self.lock:
            if event["type"] == "tool_progress":
                self.progress = event
            else:
                self.logs.append(event)

    def take(self) -> list[Event]:
        with self.lock:
            taken = self.logs + ([self.progress] if self.progress is not None else [])
            self.logs, self.progress = [], None
        return taken


async def _heartbeat(every: timedelta, reports: _Reports) -> None:
    """Beats while the call runs, each beat carrying what the call reported since the
    last (Temporal keeps the last beat's details, and throttles what it sends)."""
    while True:
        activity.heartbeat(*reports.take())
        await asyncio.sleep(every.total_seconds())


def _result(result: RunResult) -> dict[str, Any]:
    usage = result.usage
    return {
        "run_id": result.run_id,
        "status": result.status,
        # A durable run's output is its JSON (`TemporalAgent.output` gives the typed value).
        "output": result.output,
        "output_tool": result.output_tool,
        "error": None if result.error is None else str(result.error),
        "messages": result.messages,
        "finish_reason": result.finish_reason,
        "usage": {
            "requests": usage.requests,
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "cached_tokens": usage.cached_tokens,
        },
    }


def _cause(error: ActivityError) -> str:
    """What ended an activity for good, for the model or the run's error."""
    cause = error.cause
    return f"the activity failed: {cause if cause is not None else error}"


class _Config:
    """What a workflow class needs of its ``TemporalAgent``."""

    def __init__(
        self,
        name: str,
        native: Any,
        model_timeout: timedelta,
        call_timeout: timedelta,
        heartbeat: timedelta,
        local_model_requests: bool,
    ) -> None:
        self.name, self.native = name, native
        self.model_timeout, self.call_timeout, self.heartbeat = model_timeout, call_timeout, heartbeat
        self.local_model_requests = local_model_requests


class _AgentRun:
    """The workflow: drives a ``NativeDurableRun``; every I/O is an activity. Each
    ``TemporalAgent`` gets a subclass carrying its ``_config`` (see ``_workflow_class``)."""

    _config: _Config

    def __init__(self) -> None:
        self.durable: NativeDurableRun | None = None
        self.resumed = False
        # The events of the run's earlier legs (before each resume).
        self.past_events: list[Event] = []

    async def drive(self, start: dict[str, Any]) -> dict[str, Any]:
        config = self._config
        run_id = start.get("run_id") or f"run_{workflow.uuid4().hex}"
        state = start.get("state")
        if state is not None:
            self.durable = NativeDurableRun.restore(config.native, state, run_id)
        else:
            self.durable = NativeDurableRun.start(config.native, start["prompt"], run_id)
        run = self.durable
        running: dict[asyncio.Task[dict[str, Any]], int] = {}
        while True:
            step = run.next_step()
            match step:
                case ListTools(task=task):
                    try:
                        listing = await self._model_side("list_tools", task)
                    except ActivityError as error:
                        run.tools_lost(_cause(error))
                    else:
                        run.tools_listed(listing)
                case RequestModel(task=task):
                    try:
                        answer = await self._model_side("request_model", task)
                    except ActivityError as error:
                        run.model_lost(_cause(error))
                    else:
                        run.model_answered(answer)
                case CheckOutput(task=task):
                    try:
                        checked = await self._model_side("check_output", task)
                    except ActivityError as error:
                        checked = {"refused": _cause(error)}
                    run.output_checked(checked)
                case StartCalls(tasks=tasks):
                    for call in tasks:
                        running[self._start_call(run_id, call)] = call["index"]
                case AwaitCalls():
                    done, _ = await workflow.wait(list(running), return_when=asyncio.FIRST_COMPLETED)
                    # In model order, so a replay reports them as the first run did.
                    for finished in sorted(done, key=lambda t: running[t]):
                        index = running.pop(finished)
                        try:
                            run.call_finished(index, finished.result())
                        except ActivityError as error:
                            run.call_lost(index, _cause(error))
                case Done(result=result):
                    if result.status != "waiting":
                        return _result(result)
                    self.resumed = False
                    await workflow.wait_condition(
                        lambda: self.resumed or workflow.info().is_continue_as_new_suggested()
                    )
                    if not self.resumed:
                        workflow.continue_as_new({"state": run.export_state(), "run_id": run_id})
                case _:
                    assert_never(step)

    async def _model_side(self, activity_name: str, task: dict[str, Any]) -> dict[str, Any]:
        """A listing or model request: a local activity unless the agent's model requests
        are ordinary ones, retried a few times before the run gives up on it."""
        config = self._config
        execute = workflow.execute_local_activity if config.local_model_requests else workflow.execute_activity
        result: dict[str, Any] = await execute(
            f"{config.name}.{activity_name}",
            task,
            start_to_close_timeout=config.model_timeout,
            retry_policy=RetryPolicy(maximum_attempts=3),
            result_type=dict,
        )
        return result

    def _start_call(self, run_id: str, task: dict[str, Any]) -> asyncio.Task[dict[str, Any]]:
        config = self._config
        timeout_ms = task.get("timeout_ms")
        attempts = int(task["max_retries"]) + 1
        # The tool's own timeout bounds each of its internal attempts.
        timeout = (
            timedelta(milliseconds=timeout_ms * attempts) + config.heartbeat if timeout_ms else config.call_timeout
        )
        return workflow.start_activity(
            f"{config.name}.run_call",
            args=[run_id, task],
            start_to_close_timeout=timeout,
            heartbeat_timeout=config.heartbeat,
            retry_policy=RetryPolicy(maximum_attempts=attempts),
            result_type=dict,
        )

    def apply(self, decisions: dict[str, Any]) -> None:
        assert self.durable is not None, "the validator let no decision through before the run started"
        self.past_events.extend(self.durable.events())
        self.durable.resume(
            approvals=decisions.get("approvals"),
            deferred_results=decisions.get("deferred_results"),
            elicitations=decisions.get("elicitations"),
        )
        self.resumed = True

    def validate(self, decisions: dict[str, Any]) -> None:
        if self.durable is None:
            raise ValueError("the run has not started")
        self.durable.resume(
            approvals=decisions.get("approvals"),
            deferred_results=decisions.get("deferred_results"),
            elicitations=decisions.get("elicitations"),
            check_only=True,
        )

    def all_events(self) -> list[Event]:
        return self.past_events + (self.durable.events() if self.durable is not None else [])

    def pending_items(self) -> dict[str, Any] | None:
        hitl = self.durable.pending if self.durable is not None else None
        if hitl is None:
            return None
        return {
            "approvals": [a.to_dict() for a in hitl.approvals],
            "deferred": [d.to_dict() for d in hitl.deferred],
            "elicitations": [e.to_dict() for e in hitl.elicitations],
        }


def _workflow_class(config: _Config) -> type[_AgentRun]:
    """A workflow class named ``config.name``. Temporal wants its handlers defined on the
    class itself, under the class's own qualified name."""
    cls_name = "AgentRun_" + "".join(c if c.isalnum() else "_" for c in config.name)

    async def run(self: _AgentRun, start: dict[str, Any]) -> dict[str, Any]:
        return await self.drive(start)

    async def decide(self: _AgentRun, decisions: dict[str, Any]) -> None:
        self.apply(decisions)

    def check(self: _AgentRun, decisions: dict[str, Any]) -> None:
        self.validate(decisions)

    def pending(self: _AgentRun) -> dict[str, Any] | None:
        return self.pending_items()

    def events(self: _AgentRun) -> list[Event]:
        return self.all_events()

    handlers: dict[str, Any] = {"run": run, "decide": decide, "check": check, "pending": pending, "events": events}
    for attribute, handler in handlers.items():
        handler.__qualname__ = f"{cls_name}.{attribute}"
        handler.__module__ = __name__
    update = workflow.update(name="decide")(decide)
    update.validator(check)
    namespace = {
        "_config": config,
        "run": workflow.run(run),
        "decide": update,
        "check": check,
        "pending": workflow.query(name="pending")(pending),
        "events": workflow.query(name="events")(events),
        "__module__": __name__,
        "__qualname__": cls_name,
    }
    return workflow.defn(name=config.name, sandboxed=False)(type(cls_name, (_AgentRun,), namespace))
