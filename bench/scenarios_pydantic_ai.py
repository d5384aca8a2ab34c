"""The same PERF.md scenarios on pydantic-ai (FunctionModel, no network), for bench/run.py."""

from __future__ import annotations

import asyncio
from typing import Any

from _common import (
    CALLS,
    INVOICE,
    MEMORY_CALLS,
    RUNS,
    SLEEPERS,
    STEPS,
    Invoice,
    cpu_per_chunk,
    definition_cost,
    main,
    peak_rss_growth,
    report,
    sse_server,
    timed,
)
from pydantic_ai import Agent, RunContext, Tool
from pydantic_ai.capabilities import Hooks
from pydantic_ai.capabilities.abstract import RawToolArgs, ValidatedToolArgs
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.usage import UsageLimits

UNLIMITED = UsageLimits(request_limit=None, tool_calls_limit=None)


def one_response(count: int, name: str = "add") -> FunctionModel:
    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart(name, {"a": i, "b": 1}, f"c{i}") for i in range(count)])
        return ModelResponse(parts=[TextPart("done")])

    return FunctionModel(model)


async def add(a: int, b: int) -> int:
    return a + b


def add_sync(a: int, b: int) -> int:
    return a + b


def p1() -> None:
    agent = Agent(one_response(CALLS), tools=[Tool(add, name="add")])
    report(timed(lambda: agent.run("go", usage_limits=UNLIMITED)) / CALLS * 1e6)


def p14() -> None:
    """P14's twin: the same scripted run ending in an `Invoice` through pydantic-ai's output
    tool (`output_type=Invoice`), and a run ending in text."""
    answer = ModelResponse(parts=[ToolCallPart("final_result", INVOICE, "c1")])
    typed = Agent(FunctionModel(lambda messages, info: answer), output_type=Invoice)
    text = Agent(FunctionModel(lambda messages, info: ModelResponse(parts=[TextPart("done")])))

    async def runs(agent: Any) -> None:
        for _ in range(RUNS):
            await agent.run("go")

    plain = min(timed(lambda: runs(text)) for _ in range(5)) / RUNS * 1e6
    structured = min(timed(lambda: runs(typed)) for _ in range(5)) / RUNS * 1e6
    report(structured, text=plain, added=structured - plain)


def p13() -> None:
    """P1 with pydantic-ai's equivalent of one `before_call` and one `after_call` hook: a
    `pydantic_ai.capabilities.Hooks` capability with `before_tool_validate` (before the
    arguments are validated, where starweaver's `before_call` runs) and `after_tool_execute`
    hooks, sync, reading the call as P13's starweaver hooks do."""
    hooks: Hooks[None] = Hooks()

    @hooks.on.before_tool_validate
    def before(
        ctx: RunContext[None], /, *, call: ToolCallPart, tool_def: ToolDefinition, args: RawToolArgs
    ) -> RawToolArgs:
        assert call.tool_name == "add"
        return args

    @hooks.on.after_tool_execute
    def after(
        ctx: RunContext[None], /, *, call: ToolCallPart, tool_def: ToolDefinition, args: ValidatedToolArgs, result: Any
    ) -> Any:  # noqa: ANN401 (the hook's own signature)
        assert call.tool_call_id
        return result

    plain = Agent(one_response(CALLS), tools=[Tool(add, name="add")])
    hooked = Agent(one_response(CALLS), tools=[Tool(add, name="add")], capabilities=[hooks])
    without = min(timed(lambda: plain.run("go", usage_limits=UNLIMITED)) for _ in range(5)) / CALLS * 1e6
    with_hooks = min(timed(lambda: hooked.run("go", usage_limits=UNLIMITED)) for _ in range(5)) / CALLS * 1e6
    report(with_hooks, without=without, added=with_hooks - without)


def p3() -> None:
    agent = Agent(one_response(CALLS), tools=[Tool(add_sync, name="add")])
    report(timed(lambda: agent.run("go", usage_limits=UNLIMITED)) / CALLS * 1e6)


def steps_model(steps: int) -> FunctionModel:
    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        step = (len(messages) + 1) // 2
        if step > steps:
            return ModelResponse(parts=[TextPart("done")])
        return ModelResponse(parts=[ToolCallPart("add", {"a": step, "b": 1}, f"c{step}")])

    return FunctionModel(model)


def p2() -> None:
    # The 100-step run warms up the 1,000-step one (which is minutes long on pydantic-ai).
    per_step = {}
    for steps in STEPS:
        agent = Agent(steps_model(steps), tools=[Tool(add, name="add")])
        per_step[steps] = timed(lambda: agent.run("go", usage_limits=UNLIMITED), warm_up=False) / steps * 1e6  # noqa: B023 (timed here)
    report(per_step[STEPS[-1]], growth=per_step[STEPS[-1]] / per_step[STEPS[0]])


def p5() -> None:
    definition_cost(lambda fn: Tool(fn).function_schema.json_schema)


def p6() -> None:
    def sleeper(i: int) -> Tool[None]:
        async def nap() -> None:
            await asyncio.sleep(0.05)

        return Tool(nap, name=f"nap_{i}")

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart(f"nap_{i}", {}, f"c{i}") for i in range(SLEEPERS)])
        return ModelResponse(parts=[TextPart("done")])

    agent = Agent(FunctionModel(model), tools=[sleeper(i) for i in range(SLEEPERS)])
    report(timed(lambda: agent.run("go", usage_limits=UNLIMITED)) * 1e3)


def p8() -> None:
    agent = Agent(one_response(MEMORY_CALLS), tools=[Tool(add, name="add")])
    report(peak_rss_growth(lambda: agent.run("go", usage_limits=UNLIMITED)))


def p9() -> None:
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider
    from sse_server import CHUNKS

    def echo(text: str) -> int:
        return len(text)

    with sse_server() as url:
        model = OpenAIChatModel("bench", provider=OpenAIProvider(base_url=url, api_key="bench"))
        agent = Agent(model, tools=[Tool(echo, takes_ctx=False)])

        async def run() -> None:
            output = None
            async with agent.run_stream_events("go") as events:
                async for event in events:
                    output = getattr(event, "result", output)
            assert output is not None and output.output == "done"

        cpu_per_chunk(run, CHUNKS)


if __name__ == "__main__":
    main({"p1": p1, "p2": p2, "p3": p3, "p13": p13, "p14": p14, "p5": p5, "p6": p6, "p8": p8, "p9": p9})
