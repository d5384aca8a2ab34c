"""The main job, in Python: tools (one taking a Pydantic model) and an approval that is
granted, on the built-in test model. Run with `make run` (or `python examples/quickstart.py`
once the package is installed).

On a real model instead: `STARWEAVER_MODEL=openai:<name>` with `OPENAI_BASE_URL` pointing
at any OpenAI-compatible server (or `OPENAI_API_KEY` for OpenAI itself)."""

from __future__ import annotations

import asyncio
import json
import os

from pydantic import BaseModel

from starweaver import ApprovalRequired, ToolContext, create_agent, tool
from starweaver.testing import TestModel


@tool
async def add(left: int, right: int) -> dict[str, int]:
    """Add two integers.

    Args:
        left: The first addend.
        right: The second addend.
    """
    return {"total": left + right}


class ReleaseArgs(BaseModel):
    """What to release, and where."""

    version: str
    environment: str = "staging"


@tool(metadata={"risk": "high"})
async def release(ctx: ToolContext, args: ReleaseArgs) -> dict[str, object]:
    """Release a version; a human must approve it first."""
    if ctx.approval is None:
        raise ApprovalRequired(f"release {args.version} to {args.environment}", metadata={"risk": "high"})
    return {"released": args.version, "to": args.environment, "approved_by": ctx.approval.decided_by}


def scripted() -> TestModel:
    """The built-in test model: it adds, then releases, then answers."""
    return TestModel.responses(
        [
            TestModel.tool_call_response(
                [
                    {"id": "call_add", "name": "add", "arguments": {"left": 2, "right": 3}},
                    {
                        "id": "call_release",
                        "name": "release",
                        "arguments": {"version": "1.4.0", "environment": "production"},
                    },
                ]
            ),
            {"text": "2 + 3 = 5, and 1.4.0 is live in production."},
        ]
    )


async def main() -> None:
    model = os.environ.get("STARWEAVER_MODEL") or scripted()
    async with create_agent(model=model, tools=[add, release], instructions="You are a release assistant.") as agent:
        async with agent.session() as session:
            result = await session.run("Add 2 and 3, then release 1.4.0 to production.")
            while result.status == "waiting":
                for pending in result.hitl.approvals:
                    print(f"run {result.run_id} is waiting: {pending.tool_name} ({pending.reason})")
                decisions = [pending.approve(decided_by="release-manager") for pending in result.hitl.approvals]
                result = await session.hitl.resume(approvals=decisions)
    print(f"status: {result.status}")
    print(f"output: {result.output}")
    print(f"usage: {result.usage}")
    print("tool definitions:")
    for definition in agent.definitions:
        print(f"  {definition.to_json()}")
    print("history:")
    print(json.dumps(result.messages, indent=2))
    result.raise_for_status()
    assert result.status == "completed"


if __name__ == "__main__":
    asyncio.run(main())
