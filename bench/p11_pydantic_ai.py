"""P11, pydantic-ai: the same step (10 tool calls, then the answer) on its Temporal
integration (TemporalDurability), a worker in this process, the dev server at ADDRESS.
Prints {"value": ms per run}.

    python p11_pydantic_ai.py ADDRESS
"""

from __future__ import annotations

import asyncio
import os
import sys
import time

from _common import mean_ms, report
from pydantic_ai import Agent, Tool
from pydantic_ai.durable_exec.temporal import PydanticAIPlugin, PydanticAIWorkflow, TemporalDurability
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from temporalio import workflow
from temporalio.client import Client
from temporalio.worker import Worker


def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    if len(messages) == 1:
        return ModelResponse(parts=[ToolCallPart(f"fetch{i}", {"i": i}, tool_call_id=f"c{i}") for i in range(10)])
    return ModelResponse(parts=[TextPart("ten")])


async def fetch(i: int) -> int:
    """Fetch one thing."""
    return i


# Ten tools, as on the starweaver side.
agent = Agent(
    FunctionModel(respond),
    name="p11_pydantic_ai",
    tools=[Tool(fetch, name=f"fetch{n}") for n in range(10)],
    capabilities=[TemporalDurability()],
)


@workflow.defn
class P11Workflow(PydanticAIWorkflow):
    __pydantic_ai_agents__ = [agent]  # noqa: RUF012 (pydantic-ai reads it from the class)

    @workflow.run
    async def run(self, prompt: str) -> str:
        return (await agent.run(prompt)).output


async def main(address: str) -> None:
    client = await Client.connect(address, plugins=[PydanticAIPlugin()])

    async def run(n: int) -> None:
        output = await client.execute_workflow(
            P11Workflow.run, "go", id=f"p11-pa-{time.time_ns()}-{n}", task_queue="p11-pydantic-ai"
        )
        assert output == "ten"

    async with Worker(client, task_queue="p11-pydantic-ai", workflows=[P11Workflow]):
        report(await mean_ms(run))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
    # Temporal's client can abort a finalizing interpreter (temporalio/sdk-python#300).
    os._exit(0)
