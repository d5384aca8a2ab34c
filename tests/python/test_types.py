"""`starweaver.types` describes the dicts the runtime hands out: each validates against its
TypedDict, and dumping it back loses nothing (so no key is undeclared)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from conftest import call
from pydantic import TypeAdapter

from starweaver import ApprovalRequired, ModelRetry, ToolContext, ToolDefinition, ToolResult, create_agent, tool
from starweaver.testing import TestModel
from starweaver.types import Event, Message, ModelRequestRecord, PendingItem, SessionState, ToolDefinitionDict


@tool
def report(ctx: ToolContext, n: int) -> ToolResult:
    """Reports, after one retry."""
    if ctx.retry == 0:
        raise ModelRetry("again")
    return ToolResult(n, model_content={"n": n}, app_value=1, user_content="u", private_metadata={"p": 1})


@tool
def deploy(ctx: ToolContext) -> str:
    """Deploys once approved."""
    if ctx.approval is None:
        raise ApprovalRequired("deploys need a human")
    return "deployed"


def exactly(adapter: TypeAdapter[Any], value: Any) -> None:
    assert adapter.dump_python(adapter.validate_python(value), exclude_unset=True) == value


def test_every_handed_out_shape_matches_its_typed_dict() -> None:
    async def scenario() -> None:
        model = TestModel.responses(
            [
                TestModel.tool_call_response([call("c1", "report", {"n": 1})]),
                TestModel.tool_call_response([call("c2", "report", {"n": 2}), call("c3", "deploy")]),
                {"text": "done"},
            ]
        )
        session = create_agent(model=model, tools=[report, deploy]).session()
        waiting = await session.run("go")
        exactly(TypeAdapter(list[Event]), waiting.events)
        exactly(TypeAdapter(SessionState), session.export_state())
        exactly(TypeAdapter(PendingItem), waiting.hitl.approvals[0].to_dict())
        done = await session.hitl.resume(approvals=[waiting.hitl.approvals[0].approve()])
        exactly(TypeAdapter(list[Message]), done.messages)
        exactly(TypeAdapter(list[Event]), done.events)
        exactly(TypeAdapter(list[ModelRequestRecord]), model.requests)
        exactly(TypeAdapter(ToolDefinitionDict), report.definition.to_dict())
        kinds = {e["type"] for e in waiting.events + done.events}
        assert {"tool_return", "approval_requested", "waiting", "run_resumed", "run_complete"} <= kinds

    asyncio.run(scenario())


def test_the_definition_options_are_the_definitions_fields_past_name_and_parameters() -> None:
    """`ToolDefinitionOptions` lists what `ToolDefinition(...)` takes; the runtime reads them
    by name, so a field the TypedDict misses would be untyped for users."""
    from starweaver.types import ToolDefinitionOptions

    full = ToolDefinition(
        "t",
        {"type": "object", "properties": {}},
        description="d",
        strict=False,
        sequential=True,
        defer_loading=True,
        timeout_ms=5,
        max_return_chars=100,
        max_retries=1,
        max_uses=2,
        max_concurrency=2,
        metadata={"k": 1},
    )
    assert set(full.to_dict()) - {"name", "parameters"} == set(ToolDefinitionOptions.__annotations__)
    assert (full.sequential, full.timeout_ms, full.max_retries, full.metadata) == (True, 5, 1, {"k": 1})
    assert ToolDefinition("t", {"type": "object"}, metadata=None).metadata == {}
    by_keyword = ToolDefinition(name="t", parameters={"type": "object", "properties": {}}, timeout_ms=5)
    assert (by_keyword.name, by_keyword.timeout_ms) == ("t", 5)


def test_import_starweaver_leaves_the_typing_helpers_and_pydantic_for_later() -> None:
    """P7: `import starweaver` loads what a run needs, not the TypedDicts (with
    typing_extensions and inspect) nor pydantic, which come with the first use."""
    import subprocess
    import sys

    probe = "import sys, starweaver; print(sorted(m for m in ('typing_extensions', 'inspect', 'pydantic', 'starweaver.types') if m in sys.modules))"
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "[]"
    from starweaver.tools import ToolOptions  # still importable from where it was
    from starweaver.types import ToolOptions as Canonical

    assert ToolOptions is Canonical


def test_json_value_comes_from_starweaver_too_on_first_use() -> None:
    import starweaver
    from starweaver.types import JsonValue

    assert starweaver.JsonValue is JsonValue
    with pytest.raises(AttributeError, match="no attribute 'JsonValues'"):
        starweaver.JsonValues  # noqa: B018
