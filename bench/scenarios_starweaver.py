"""PERF.md scenarios on starweaver. `python scenarios_starweaver.py <scenario>` prints one
JSON measurement; bench/run.py runs it in fresh processes beside the pydantic-ai twin."""

from __future__ import annotations

import asyncio
import json
import time
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

from starweaver import Hooks, Tool, ToolCall, ToolContext, ToolDefinition, ToolResult, create_agent, tool
from starweaver.testing import FunctionModel, Messages, TestModel
from starweaver.types import FunctionModelInfo


def one_response(count: int) -> FunctionModel:
    calls = {"tool_calls": [{"id": f"c{i}", "name": "add", "arguments": {"a": i, "b": 1}} for i in range(count)]}

    def model(messages: Messages, info: FunctionModelInfo) -> dict[str, object]:
        return calls if info["step"] == 1 else {"text": "done"}

    return FunctionModel(model)


@tool
async def add(a: int, b: int) -> int:
    return a + b


@tool(name="add")
def add_sync(a: int, b: int) -> int:
    return a + b


def p1() -> None:
    agent = create_agent(model=one_response(CALLS), tools=[add])
    report(timed(lambda: agent.run("go")) / CALLS * 1e6)


class Audit(Hooks):
    """P13's hooks: one sync `before_call` and one sync `after_call` that read the call, as
    an audit hook would."""

    def before_call(self, ctx: ToolContext, call: ToolCall) -> None:
        assert call.name == "add"

    def after_call(self, ctx: ToolContext, call: ToolCall, result: ToolResult) -> None:
        assert call.id


def p13() -> None:
    """P1 with the hooks on the agent, and what they add per call over P1 without them
    (both agents timed in turn, best of 5 runs each, so both see the same machine)."""
    plain = create_agent(model=one_response(CALLS), tools=[add])
    hooked = create_agent(model=one_response(CALLS), tools=[add], hooks=[Audit()])
    without = min(timed(lambda: plain.run("go")) for _ in range(5)) / CALLS * 1e6
    with_hooks = min(timed(lambda: hooked.run("go")) for _ in range(5)) / CALLS * 1e6
    report(with_hooks, without=without, added=with_hooks - without)


def p14() -> None:
    """µs per run that ends in an `Invoice` through the output tool, and what that adds
    over a run that ends in text (both timed in turn, best of 5, so both see one machine)."""
    answer = {"tool_calls": [{"id": "c1", "name": "final_result", "arguments": INVOICE}]}
    typed = create_agent(model=FunctionModel(lambda messages, info: answer), output_type=Invoice)
    text = create_agent(model=FunctionModel(lambda messages, info: {"text": "done"}))

    async def runs(agent: Any) -> None:
        for _ in range(RUNS):
            result = await agent.run("go")
            assert result.status == "completed"

    plain = min(timed(lambda: runs(text)) for _ in range(5)) / RUNS * 1e6
    structured = min(timed(lambda: runs(typed)) for _ in range(5)) / RUNS * 1e6
    report(structured, text=plain, added=structured - plain)


def p3() -> None:
    agent = create_agent(model=one_response(CALLS), tools=[add_sync])
    report(timed(lambda: agent.run("go")) / CALLS * 1e6)


def steps_model(steps: int) -> FunctionModel:
    def model(messages: Messages, info: FunctionModelInfo) -> dict[str, object]:
        step = info["step"]
        if step > steps:
            return {"text": "done"}
        return {"tool_calls": [{"id": f"c{step}", "name": "add", "arguments": {"a": step, "b": 1}}]}

    return FunctionModel(model)


def p2() -> None:
    # The 100-step run warms up the 1,000-step one (which is minutes long on pydantic-ai).
    per_step = {}
    for steps in STEPS:
        agent = create_agent(model=steps_model(steps), tools=[add], max_steps=steps + 1)
        per_step[steps] = timed(lambda: agent.run("go"), warm_up=False) / steps * 1e6  # noqa: B023 (timed here)
    report(per_step[STEPS[-1]], growth=per_step[STEPS[-1]] / per_step[STEPS[0]])


def p5() -> None:
    definition_cost(lambda fn: tool(fn).definition.parameters)


def p6() -> None:
    def sleeper(i: int) -> object:
        async def nap() -> None:
            await asyncio.sleep(0.05)

        return tool(name=f"nap_{i}")(nap)

    tools = [sleeper(i) for i in range(SLEEPERS)]
    calls = {"tool_calls": [{"id": f"c{i}", "name": f"nap_{i}", "arguments": {}} for i in range(SLEEPERS)]}

    def model(messages: Messages, info: FunctionModelInfo) -> dict[str, object]:
        return calls if info["step"] == 1 else {"text": "done"}

    agent = create_agent(model=FunctionModel(model), tools=tools)
    report(timed(lambda: agent.run("go")) * 1e3)


def p9() -> None:
    from sse_server import CHUNKS

    from starweaver.models import OpenAIChatModel

    @tool
    async def echo(text: str) -> int:
        return len(text)

    with sse_server() as url:
        agent = create_agent(model=OpenAIChatModel("bench", base_url=url, api_key="bench"), tools=[echo])

        async def run() -> None:
            stream = agent.run_stream("go")
            async for _ in stream:
                pass
            assert (await stream.result()).output == "done"

        cpu_per_chunk(run, CHUNKS)


def p8() -> None:
    agent = create_agent(model=one_response(MEMORY_CALLS), tools=[add])
    report(peak_rss_growth(lambda: agent.run("go")))


REPORTS = 10_000


def p15() -> None:
    """µs per `ctx.report_progress` of a sync Python tool in a streamed run: the tool's
    own time per report, and the whole streamed run's (every event read by `async for`)
    over the same run with a tool that reports nothing, per report."""
    spent: list[float] = []

    def reporter(reports: int) -> Any:
        @tool(name="index")
        def index(ctx: ToolContext) -> str:
            started = time.perf_counter()
            for done in range(reports):
                ctx.report_progress(done, total=reports)
            spent.append(time.perf_counter() - started)
            return "indexed"

        return index

    def model(messages: Messages, info: FunctionModelInfo) -> dict[str, object]:
        call = {"id": "c1", "name": "index", "arguments": {}}
        return {"tool_calls": [call]} if info["step"] == 1 else {"text": "done"}

    async def streamed(reports: int) -> float:
        agent = create_agent(model=FunctionModel(model), tools=[reporter(reports)])
        started = time.perf_counter()
        stream = agent.run_stream("go")
        live = sum([event["type"] == "tool_progress" async for event in stream])
        result = await stream.result()
        elapsed = time.perf_counter() - started
        kept = sum(event["type"] == "tool_progress" for event in result.events)
        assert (live, kept) == (reports, min(reports, 1)), (live, kept)
        return elapsed

    async def go() -> tuple[float, float]:
        await streamed(REPORTS)
        await streamed(0)
        spent.clear()
        with_reports = min([await streamed(REPORTS) for _ in range(3)])
        tool_side = min(spent)
        without = min([await streamed(0) for _ in range(3)])
        return tool_side, with_reports - without

    tool_side, end_to_end = asyncio.run(go())
    report(tool_side / REPORTS * 1e6, end_to_end_us=end_to_end / REPORTS * 1e6, kept=1)


def catalog(count: int) -> list[Tool[..., str]]:
    """``count`` deferred tools, each with a name, a description and one parameter."""

    def item(i: int) -> Tool[..., str]:
        def fetch(key: str) -> str:
            return f"{key} of item {i}"

        return Tool(fetch, name=f"fetch_item_{i}", description=f"Fetch a field of item {i}.", defer_loading=True)

    return [item(i) for i in range(count)]


def rendered_bytes(tools: list[Any]) -> int:
    """The bytes of ``tools`` (definition dicts) as Anthropic's request renders them."""
    definitions = [ToolDefinition(t["name"], t["parameters"], description=t.get("description")) for t in tools]
    return sum(len(json.dumps(d.render("anthropic"), separators=(",", ":"))) for d in definitions)


def p12() -> None:
    """1,000 deferred tools: rendered tool bytes of the largest request of a run that
    searches, then calls the tool found, against sending all 1,000; and the time of one
    search over 10,000 deferred tools (its trace span, the index already built)."""
    tools = catalog(1_000)
    model = TestModel.responses(
        [
            TestModel.tool_call_response([{"id": "s1", "name": "search_tools", "arguments": {"query": "item 500"}}]),
            TestModel.tool_call_response([{"id": "c1", "name": "fetch_item_500", "arguments": {"key": "k"}}]),
            {"text": "done"},
        ]
    )
    result = create_agent(model=model, tools=tools).run_sync("go")
    assert result.status == "completed", result.exception
    deferred = max(rendered_bytes(request["tools"]) for request in model.requests)
    everything = sum(len(json.dumps(t.definition.render("anthropic"), separators=(",", ":"))) for t in tools)
    search = {"id": "s1", "name": "search_tools", "arguments": {"query": "fetch item 7321 field", "limit": 5}}
    scripted = [TestModel.tool_call_response([search]), {"text": "done"}] * 6
    big = create_agent(model=TestModel.responses(scripted), tools=catalog(10_000))
    spans = []
    for _ in range(6):
        trace = big.run_sync("find").trace
        spans += [span.duration_us for span in trace.spans if span.kind == "tool_search"]
    report(everything / deferred, deferred_bytes=deferred, all_bytes=everything, search_us=min(spans[1:]))


if __name__ == "__main__":
    main(
        {
            "p12": p12,
            "p1": p1,
            "p2": p2,
            "p3": p3,
            "p13": p13,
            "p14": p14,
            "p5": p5,
            "p6": p6,
            "p8": p8,
            "p9": p9,
            "p15": p15,
        }
    )
