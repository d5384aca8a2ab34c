"""DESIGN.md §16 as properties over generated inputs, from Python: tool arguments,
decisions, restored states, explicit schemas and renders, and values crossing into Rust
(those run under the crash supervisor). ``STARWEAVER_FUZZ_EXAMPLES`` sets how many inputs
each property tries (a few dozen in ``make test``; ``make fuzz`` runs a long campaign);
``STARWEAVER_FUZZ_COUNTS`` names a file each property appends its count to."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from conftest import call, returns
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from supervisor import run_isolated

from starweaver import (
    ApprovalRequired,
    RegistrationError,
    RenderError,
    StarweaverError,
    ToolContext,
    ToolsetError,
    create_agent,
    tool,
)
from starweaver.mcp import MCPServerStdio
from starweaver.providers import PROVIDERS, check
from starweaver.testing import TestModel
from starweaver.types import SessionState

EXAMPLES = int(os.environ.get("STARWEAVER_FUZZ_EXAMPLES", "40"))
PROPERTY = settings(
    max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck), derandomize=False
)

KEYS = st.sampled_from(["id", "approved", "status", "value", "error", "n", "kind", "type", "properties", "required"])
SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=12)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS | st.text(max_size=6), inner, max_size=4),
    max_leaves=24,
)

tried: dict[str, int] = {}


def count(name: str) -> None:
    tried[name] = tried.get(name, 0) + 1


@pytest.fixture(scope="module", autouse=True)
def report_counts() -> Iterator[None]:
    yield
    path = os.environ.get("STARWEAVER_FUZZ_COUNTS")
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps({f"python: {name}": n for name, n in tried.items()}) + "\n")


@tool
async def typed(n: int) -> int:
    assert type(n) is int, "the tool only ever sees what its signature allows"
    return n


@tool
async def gated(ctx: ToolContext, n: int) -> int:
    if ctx.approval is None:
        raise ApprovalRequired("ask")
    return n


@PROPERTY
@given(arguments=JSON)
def test_any_arguments_get_one_return_and_the_tool_sees_only_valid_ones(arguments: object) -> None:
    count("tool arguments")
    try:
        model = TestModel.responses(
            [TestModel.tool_call_response([{"id": "c", "name": "typed", "arguments": arguments}]), {"text": "ok"}]
        )
    except StarweaverError:
        return  # a value JSON cannot carry exactly is refused by name
    run = asyncio.run(create_agent(model=model, tools=[typed]).run("go"))
    assert run.status in ("completed", "failed")
    assert len(returns(run.messages)) == 1


@PROPERTY
@given(decision=JSON, deferred=JSON)
def test_any_decision_applies_or_is_refused_and_a_refusal_keeps_the_session_waiting(
    decision: object, deferred: object
) -> None:
    count("decisions")

    async def scenario() -> None:
        model = TestModel.responses([TestModel.tool_call_response([call("c", "gated", {"n": 1})]), {"text": "ok"}])
        session = create_agent(model=model, tools=[gated]).session()
        waiting = await session.run("go")
        pending_id = waiting.hitl.approvals[0].id
        candidates: list[object] = [
            decision,
            {"id": pending_id, "approved": decision},
            {"id": decision, "approved": True},
        ]
        for candidate in candidates:
            try:
                done = await session.hitl.resume(approvals=[candidate], deferred_results=[deferred])  # type: ignore[list-item]
            except StarweaverError:
                pending = session.pending
                assert pending is not None and pending.approvals[0].id == pending_id
            else:
                assert done.status != "waiting"
                return

    asyncio.run(scenario())


@PROPERTY
@given(path=st.integers(0, 6), replacement=JSON, key=st.text(min_size=1, max_size=8))
def test_any_restored_state_restores_or_is_refused_by_name(path: int, replacement: object, key: str) -> None:
    count("restored states")

    async def exported() -> SessionState:
        model = TestModel.responses([TestModel.tool_call_response([call("c", "gated", {"n": 1})]), {"text": "ok"}])
        session = create_agent(model=model, tools=[gated]).session()
        await session.run("go")
        return session.export_state()

    state = asyncio.run(exported())
    # Corrupted as plain dicts: the point is to break the shapes the TypedDicts promise.
    targets: list[dict[str, Any]] = [cast("dict[str, Any]", state)]
    for message in state["history"]:
        targets.append(cast("dict[str, Any]", message))
        targets.extend(cast("list[dict[str, Any]]", message["parts"]))
    target = targets[path % len(targets)]
    target[key if path % 2 else next(iter(target), key)] = replacement
    agent = create_agent(model=TestModel.responses([{"text": "ok"}]), tools=[gated])
    try:
        agent.session(state=state)
    except StarweaverError:
        pass


@PROPERTY
@given(
    schema=JSON
    | st.dictionaries(st.text(min_size=1, max_size=6), JSON, max_size=4).map(
        lambda props: {"type": "object", "properties": props}
    )
)
def test_any_explicit_schema_registers_or_is_refused_and_renders_pass_the_provider_check(schema: object) -> None:
    count("explicit schemas and renders")
    try:
        defined = tool(parameters_schema=schema, description="A tool.")(lambda args: args)  # type: ignore[call-overload]
    except RegistrationError:
        return
    for provider in PROVIDERS:
        try:
            rendered = defined.definition.render(provider)
        except RenderError:
            continue
        assert check(provider, rendered) == [], (provider, rendered)


CROSSING = """
import asyncio, os, json
from hypothesis import given, settings, HealthCheck, strategies as st
from starweaver import StarweaverError, ToolResult, create_agent, tool
from starweaver.testing import TestModel

tried = 0

def build(shape, depth, leaf):
    value = leaf
    for _ in range(depth):
        value = [value] if shape == "list" else {"k": value}
    if shape == "cycle":
        value = [value]
        value.append(value)
    return value

@settings(max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(shape=st.sampled_from(["list", "dict", "cycle"]), depth=st.integers(0, 20_000),
       leaf=st.none() | st.integers() | st.floats() | st.text())
def crossing(shape, depth, leaf):
    global tried
    tried += 1
    value = build(shape, depth, leaf)
    for attempt in (lambda: ToolResult(value), lambda: TestModel.responses([{"text": "x", "parts": value}])):
        try:
            attempt()
        except StarweaverError:
            pass

crossing()
result = tried
"""


def test_any_python_value_crossing_into_rust_converts_or_is_refused_never_crashes() -> None:
    outcome = run_isolated(CROSSING.replace("EXAMPLES", str(EXAMPLES)), timeout=600)
    assert isinstance(outcome["result"], int)
    tried["values crossing into Rust (supervised)"] = outcome["result"]


HOSTILE = str(Path(__file__).parent / "mcp_servers" / "hostile_server.py")
# What a server may do at each request: answer, or one way of not answering properly
# (`hostile_server.py` says what each does). Half the draws are proper answers.
MISBEHAVIOURS = ["hang", "error", "wrong-id", "half-line", "junk", "wrong-type", "exit"]


def behaviours(*extra: str) -> st.SearchStrategy[list[str]]:
    return st.lists(st.just("ok") | st.sampled_from([*MISBEHAVIOURS, *extra]), min_size=1, max_size=3)


# Each input starts a server process and may wait out `timeout_ms`: an eighth as many.
@settings(max_examples=max(EXAMPLES // 8, 4), deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(
    script=st.fixed_dictionaries(
        {
            "initialize": behaviours(),
            "tools/list": behaviours("endless-pages", "deep-schema", "bad-tool"),
            "tools/call": behaviours("tool-error"),
            "stderr": st.sampled_from([0, 1024, 64 * 1024]),
        }
    )
)
def test_whatever_an_mcp_server_does_the_client_answers_or_fails_by_name_within_its_timeout(
    script: dict[str, Any],
) -> None:
    count("mcp client against a scripted server")
    server = MCPServerStdio("hostile", sys.executable, args=[HOSTILE, json.dumps(script)], timeout_ms=300)
    model = TestModel.responses([TestModel.tool_call_response([call("c1", "echo")]), {"text": "done"}])

    async def run() -> object:
        result = await create_agent(model=model, toolsets=[server]).run("go")
        if result.status == "failed":
            # A listing that fails after the first step ends the run, naming the server.
            return ToolsetError(str(result.error))
        assert result.status == "completed", result.error
        return returns(result.messages)[0]["content"]

    async def scenario() -> list[object]:
        outcomes: list[object] = []
        for attempt in (run, lambda: server.call_tool("echo")):
            try:
                outcomes.append(await attempt())
            except ToolsetError as error:
                outcomes.append(error)
        await server.server.close()
        return outcomes

    # Far past every timeout the script can meet: only a hang reaches it.
    outcomes = asyncio.run(asyncio.wait_for(scenario(), timeout=60))
    for error in (o for o in outcomes if isinstance(o, ToolsetError)):
        # The server's failure, named; or the tool's own (an `isError` result).
        assert "MCP server `hostile`" in str(error) or str(error) == "the tool failed", error
    if all(behaviour == "ok" for method in ("initialize", "tools/list", "tools/call") for behaviour in script[method]):
        assert outcomes == ["echoed", "echoed"]
