"""Typed agents (DESIGN.md §17): the types of `ctx.deps` and `result.output` follow from
`create_agent(...)` with no cast. `mypy --strict` and `pyright` (strict) must accept it
and agree with each `assert_type`. Run by `make lint-python`; never executed."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel
from typing_extensions import assert_type

from starweaver import (
    Agent,
    AgentSession,
    NativeOutput,
    PromptedOutput,
    RunResult,
    RunStream,
    ToolContext,
    create_agent,
    tool,
)
from starweaver.testing import TestModel, tool_context
from starweaver.types import Event


@dataclass
class MyDeps:
    url: str


@tool
async def query(ctx: ToolContext[MyDeps], sql: str) -> str:
    assert_type(ctx.deps, MyDeps)
    assert_type(ctx.deps.url, str)
    return ctx.deps.url + sql


@tool
def untyped(ctx: ToolContext, text: str) -> str:
    # A bare `ToolContext` is `ToolContext[None]`: a tool that reads no deps.
    assert_type(ctx.deps, None)
    return text


async def default_agent(model: TestModel) -> None:
    agent = create_agent(model=model, tools=[query, untyped])
    assert_type(agent, Agent[None, str])
    result = await agent.run("go")
    assert_type(result, RunResult[str])
    assert_type(result.output, str | None)
    assert_type(agent.run_sync("go").output, str | None)
    stream = agent.run_stream("go")
    assert_type(stream, RunStream[str])
    assert_type(await stream.result(), RunResult[str])
    session = agent.session()
    assert_type(session, AgentSession[None, str])
    assert_type((await session.run("again")).output, str | None)
    assert_type((await session.hitl.resume()).output, str | None)


async def agent_with_deps(model: TestModel) -> None:
    agent = create_agent(model=model, tools=[query], deps=MyDeps("postgres://db"))
    assert_type(agent, Agent[MyDeps, str])
    assert_type(await agent.run("go", deps=MyDeps("postgres://other")), RunResult[str])


async def agent_with_deps_type(model: TestModel) -> None:
    agent = create_agent(model=model, tools=[query], deps_type=MyDeps)
    assert_type(agent, Agent[MyDeps, str])
    deps = MyDeps("postgres://db")
    result = await agent.run("go", deps=deps)
    assert_type(result.output, str | None)
    assert_type(agent.run_sync("go", deps=deps), RunResult[str])
    assert_type(agent.run_stream("go", deps=deps), RunStream[str])
    session = agent.session()
    assert_type(session, AgentSession[MyDeps, str])
    assert_type(await session.run("go", deps=deps), RunResult[str])
    assert_type(session.run_sync("go", deps=deps), RunResult[str])
    stream = session.run_stream("go", deps=deps)
    async for event in stream:
        assert_type(event, Event)
    assert_type(await stream.result(), RunResult[str])
    assert_type(await session.hitl.resume(deps=deps), RunResult[str])
    assert_type(await session.resume_after_hitl(deps=deps), RunResult[str])


def generic_helpers(agent: Agent[MyDeps, str], result: RunResult[str]) -> str | None:
    # The generics spell out in signatures as they read in `assert_type`.
    assert_type(agent.session(), AgentSession[MyDeps, str])
    return result.output


def unit_test_context() -> None:
    ctx = tool_context(deps=MyDeps("postgres://test"))
    assert_type(ctx, ToolContext[MyDeps])
    assert_type(ctx.deps, MyDeps)
    assert_type(tool_context().deps, None)


class Invoice(BaseModel):
    number: str


def weather(ctx: ToolContext, city: str) -> float:
    return float(len(city))


async def typed_output(model: TestModel) -> None:
    agent = create_agent(model=model, output_type=Invoice)
    assert_type(agent, Agent[None, Invoice])
    result = await agent.run("go")
    assert_type(result, RunResult[Invoice])
    assert_type(result.output, Invoice | None)
    assert_type(create_agent(model=model, output_type=weather).run_sync("go").output, float | None)
    assert_type(create_agent(model=model, output_type=int, deps_type=MyDeps), Agent[MyDeps, int])

    @agent.output_validator
    def uppercase(ctx: ToolContext, output: Invoice) -> Invoice:
        return output.model_copy(update={"number": output.number.upper()})


async def a_runs_own_output_type(model: TestModel) -> None:
    agent = create_agent(model=model, output_type=Invoice, deps_type=MyDeps)
    deps = MyDeps(url="https://example.com")
    assert_type((await agent.run("go", deps=deps, output_type=int)).output, int | None)
    assert_type(agent.run_sync("go", deps=deps, output_type=weather).output, float | None)
    assert_type(agent.run_stream("go", deps=deps, output_type=PromptedOutput(Invoice)), RunStream[Invoice])
    assert_type((await agent.run("go", deps=deps)).output, Invoice | None)
    session = agent.session()
    assert_type((await session.run("go", deps=deps, output_type=str)).output, str | None)
    assert_type((await session.hitl.resume(deps=deps, output_type=int)).output, int | None)
    assert_type((await session.resume_after_hitl(deps=deps)).output, Invoice | None)
    assert_type((await session.resume(deps=deps, output_type=float)).output, float | None)


class Refusal(BaseModel):
    reason: str


async def a_native_or_prompted_union(model: TestModel) -> None:
    assert_type(NativeOutput(Invoice), NativeOutput[Invoice])
    # A list of members (mypy names their join, pyright their union) and `A | B` (which
    # mypy cannot take as a type yet, PEP 747) both type-check; the output narrows by
    # `isinstance` to the member the model chose.
    agent = create_agent(model=model, output_type=NativeOutput([Invoice, Refusal]))
    output = (await agent.run("go")).output
    if isinstance(output, Refusal):
        assert_type(output, Refusal)
    create_agent(model=model, output_type=NativeOutput(Invoice | Refusal)).run_sync("go")
    agent.run_sync("go", output_type=PromptedOutput([Invoice, Refusal]))
    agent.run_sync("go", output_type=PromptedOutput(Invoice | Refusal))
