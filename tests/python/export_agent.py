"""The agent of the export tests, importable from the test and from its second process."""

from __future__ import annotations

from collections.abc import Mapping

from starweaver import Agent, ApprovalRequired, CallDeferred, ToolContext, create_agent, tool
from starweaver.testing import TestModel

SCRIPT: list[Mapping[str, object]] = [
    TestModel.tool_call_response(
        [
            {"id": "c_add", "name": "add", "arguments": {"left": 2, "right": 3}},
            {"id": "c_deploy", "name": "deploy", "arguments": {"env": "prod"}},
            {"id": "c_job", "name": "job", "arguments": {}},
        ]
    ),
    {"text": "all done"},
]


@tool
async def add(left: int, right: int) -> int:
    return left + right


@tool
async def deploy(ctx: ToolContext, env: str) -> dict[str, object]:
    if ctx.approval is None:
        raise ApprovalRequired(f"deploy {env}", metadata={"risk": "high"})
    return {"deployed": env, "by": ctx.approval.decided_by}


@tool
async def job() -> None:
    raise CallDeferred("queued")


def make_agent(script_from: int = 0) -> Agent:
    """``script_from``: where this process's model picks up the script."""
    return create_agent(model=TestModel.responses(SCRIPT[script_from:]), tools=[add, deploy, job])
