"""The agent the Temporal tests run, in-process and on workers (the same definition in every
process). Its model plays a script chosen by the prompt, answering by step, and logs each
request to $STARWEAVER_MODEL_LOG so a test can see that none was repeated."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from starweaver import ApprovalRequired, ModelRetry, NativeOutput, PromptedOutput, ToolContext, create_agent, tool
from starweaver.elicitation import Accepted, Elicited
from starweaver.mcp import MCPServerStdio
from starweaver.temporal import TemporalAgent
from starweaver.testing import FunctionModel
from starweaver.toolsets import Toolset

TASK_QUEUE = "starweaver-tests"


def _call(call_id: str, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"id": call_id, "name": name, "arguments": arguments or {}}


SCRIPTS: dict[str, list[dict[str, Any]]] = {
    "schedule": [
        {
            "tool_calls": [
                _call("c1", "read", {"path": "a"}),
                _call("c2", "fetch"),
                _call("c3", "read", {"path": "b"}),
                _call("c4", "write"),
                _call("c5", "flaky"),
            ]
        },
        {"tool_calls": [_call("c6", "flaky")]},
        {"text": "scheduled"},
    ],
    "failures": [{"tool_calls": [_call("c1", "slow"), _call("c2", "broken")]}, {"text": "failed well"}],
    "approve": [{"tool_calls": [_call("c1", "deploy", {"env": "prod"})]}, {"text": "deployed"}],
    "approve twice": [
        {"tool_calls": [_call("c1", "deploy", {"env": "staging"})]},
        {"tool_calls": [_call("c2", "deploy", {"env": "prod"})]},
        {"text": "deployed twice"},
    ],
    "hang": [{"tool_calls": [_call("c1", "hang")]}, {"text": "survived"}],
    "ten": [{"tool_calls": [_call(f"c{i}", "fetch", {"i": i}) for i in range(10)]}, {"text": "ten"}],
    "survey": [{"tool_calls": [_call("c1", "survey", {"sites": 3})]}, {"text": "surveyed"}],
    "rollout": [{"tool_calls": [_call("c1", "rollout")]}, {"text": "rolled out"}],
    # Fifty calls over ten tools, which a limit of three lets run three at a time.
    "fifty": [{"tool_calls": [_call(f"c{i}", f"probe_{i % 10}") for i in range(50)]}, {"text": "fifty"}],
    # A typed answer the model gets right at its second try.
    "invoice": [
        {"tool_calls": [_call("c1", "final_result", {"number": 7})]},
        {"tool_calls": [_call("c2", "final_result", {"number": "T-1", "total_cents": 5})]},
    ],
    # A call to a tool the hooks' `prepare_tools` dropped, then one to a tool they kept.
    "prepared": [
        {"tool_calls": [_call("c1", "admin_wipe"), _call("c2", "fetch", {"i": 3})]},
        {"text": "prepared"},
    ],
    # A search that loads a deferred tool, then a call of it.
    "catalog": [
        {"tool_calls": [_call("c1", "search_tools", {"query": "forecast weather"})]},
        {"tool_calls": [_call("c2", "forecast", {"city": "Oslo"})]},
        {"text": "catalogued"},
    ],
    # A prompted answer whose first try is not JSON.
    "prompted": [{"text": "P-2, one cent"}, {"text": '{"number": "P-2", "total_cents": 1}'}],
    # A native union's answer, of its second member.
    "union": [{"text": '{"result": {"kind": "Refusal", "data": {"reason": "blank page"}}}'}],
    "desk": [
        {"tool_calls": [_call("c1", "lookup", {"order": 7})]},
        {"tool_calls": [_call("c2", "hang")]},
        {"text": "desk done"},
    ],
}


def _respond(messages: Any, info: Any) -> dict[str, Any]:
    prompt = next(p["text"] for m in messages for p in m["parts"] if p["kind"] == "user_prompt")
    log = os.environ.get("STARWEAVER_MODEL_LOG")
    if log:
        with open(log, "a") as out:
            out.write(f"{prompt} {info['step']}\n")
    if prompt in ("prepared", "catalog") and log:
        with open(log, "a") as out:
            out.write(f"offered {','.join(d['name'] for d in info['tools'])}\n")
    if prompt == "model fails":
        raise RuntimeError("the model is down")
    step: int = info["step"]
    return SCRIPTS[prompt][step - 1]


@tool
async def read(path: str) -> str:
    """Read a path."""
    await asyncio.sleep(0.01)
    return f"read {path}"


@tool
async def fetch(i: int = 0) -> int:
    """Fetch something."""
    return i


@tool(sequential=True)
async def write() -> str:
    """Write, alone."""
    return "written"


@tool(max_retries=1)
def flaky(ctx: ToolContext) -> int:
    """Fails the first time."""
    if ctx.retry == 0:
        raise ModelRetry("once more")
    return ctx.retry


@tool(timeout_ms=200)
async def slow() -> str:
    """Too slow."""
    await asyncio.sleep(5)
    return "never"


@tool(max_retries=0)
def broken() -> str:
    """Always breaks."""
    raise RuntimeError("the disk is full")


@tool
def deploy(ctx: ToolContext, env: str) -> str:
    """Deploy, once approved."""
    if ctx.approval is None:
        raise ApprovalRequired(f"deploy {env}")
    return f"deployed {env}"


@tool(max_retries=2)
async def hang() -> str:
    """Leaves its worker's pid in $STARWEAVER_HANG_MARKER, then takes its time."""
    marker = os.environ.get("STARWEAVER_HANG_MARKER")
    if marker:
        with open(marker, "a") as out:
            out.write(f"{os.getpid()}\n")
    await asyncio.sleep(3)
    return f"finished in {os.getpid()}"


@tool
def survey(ctx: ToolContext, sites: int) -> str:
    """Surveys `sites` sites, reporting progress and logging as it goes."""
    ctx.log("info", "surveying", data={"sites": sites})
    for done in range(sites + 1):
        ctx.report_progress(done, total=sites)
    return f"surveyed {sites}"


@tool
async def rollout(ctx: ToolContext) -> str:
    """Rolls out to the share of hosts the user gives."""
    answer: Elicited[dict[str, Any]] = await ctx.elicit(
        "What share of hosts?", {"properties": {"percent": {"type": "integer"}}}
    )
    if not isinstance(answer, Accepted):
        return "not rolled out"
    return f"rolled out to {answer.data['percent']}%"


agent = create_agent(
    model=FunctionModel(_respond), tools=[read, fetch, write, flaky, slow, broken, deploy, hang, survey, rollout]
)
# A lost worker is noticed within two seconds.
temporal_agent = TemporalAgent(agent, name="starweaver_tests", heartbeat=timedelta(seconds=2))
# The same agent with model requests as ordinary activities.
temporal_agent_remote_model = TemporalAgent(agent, name="starweaver_tests_remote_model", model_requests="activity")
TEMPORAL_AGENTS = [temporal_agent, temporal_agent_remote_model]

# An agent whose tools are an MCP server's (a dynamic toolset): each worker starts the
# server for itself when it first lists or calls.
desk = MCPServerStdio("desk", sys.executable, args=[str(Path(__file__).with_name("mcp_desk.py"))])
mcp_agent = create_agent(model=FunctionModel(_respond), tools=[], toolsets=[desk])
temporal_mcp_agent = TemporalAgent(mcp_agent, name="starweaver_tests_mcp", heartbeat=timedelta(seconds=2))


def _probe(n: int) -> Any:
    @tool(name=f"probe_{n}")
    async def probe() -> int:
        """Takes a moment, noting in $STARWEAVER_MODEL_LOG.probes when it ran."""
        started = time.time()
        await asyncio.sleep(0.1)
        with open(os.environ["STARWEAVER_MODEL_LOG"] + ".probes", "a") as out:
            out.write(f"{started} {time.time()}\n")
        return n

    return probe


# Ten tools whose calls run at most three at a time, wherever they run.
probes = Toolset("probes", [_probe(n) for n in range(10)], max_concurrency=3)
limited_agent = create_agent(model=FunctionModel(_respond), toolsets=[probes])
temporal_limited_agent = TemporalAgent(limited_agent, name="starweaver_tests_limited", heartbeat=timedelta(seconds=2))


class Invoice(BaseModel):
    number: str
    total_cents: int


# An agent whose runs answer with an `Invoice`.
typed_agent = create_agent(model=FunctionModel(_respond), output_type=Invoice)
temporal_typed_agent = TemporalAgent(typed_agent, name="starweaver_tests_typed")
# The same output asked for in the instructions: the answer's text is checked in an activity.
prompted_agent = create_agent(model=FunctionModel(_respond), output_type=PromptedOutput(Invoice))
temporal_prompted_agent = TemporalAgent(prompted_agent, name="starweaver_tests_prompted")


class Refusal(BaseModel):
    reason: str


# A native union: the checked answer names its member, which the result's `output_tool` keeps.
union_agent = create_agent(model=FunctionModel(_respond), output_type=NativeOutput([Invoice, Refusal]))
temporal_union_agent = TemporalAgent(union_agent, name="starweaver_tests_union")


@tool
async def admin_wipe() -> str:
    """Wipe everything."""
    return "wiped"


class HideAdmin:
    """Offers the model no `admin_*` tool."""

    def prepare_tools(self, ctx: ToolContext, definitions: list[Any]) -> list[Any]:
        return [d for d in definitions if not d.name.startswith("admin_")]


# An agent whose hooks hide a tool: its workflow lists each step's tools in an activity.
prepared_agent = create_agent(model=FunctionModel(_respond), tools=[fetch, admin_wipe], hooks=[HideAdmin()])
temporal_prepared_agent = TemporalAgent(prepared_agent, name="starweaver_tests_prepared")


@tool(defer_loading=True)
async def forecast(city: str) -> str:
    """The weather forecast for a city."""
    return f"sunny in {city}"


# An agent with a deferred tool: what a search loads is session state the workflow keeps.
catalog_agent = create_agent(model=FunctionModel(_respond), tools=[fetch, forecast])
temporal_catalog_agent = TemporalAgent(catalog_agent, name="starweaver_tests_catalog")
# What the workers run.
WORKER_AGENTS = [
    *TEMPORAL_AGENTS,
    temporal_mcp_agent,
    temporal_limited_agent,
    temporal_typed_agent,
    temporal_prompted_agent,
    temporal_union_agent,
    temporal_prepared_agent,
    temporal_catalog_agent,
]
