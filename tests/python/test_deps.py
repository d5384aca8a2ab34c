"""Dependencies (DESIGN.md §17): one spelling, `deps`, on the agent and on each run; a
tool's context annotated `ToolContext[MyDeps]`, evaluated or as a string."""

from __future__ import annotations

import asyncio
import dataclasses
import typing
from collections.abc import Mapping

import pytest
from conftest import call, calls_then_text, loose, returns

from starweaver import ApprovalRequired, RunResult, RunStream, ToolContext, create_agent, tool
from starweaver.testing import TestModel, tool_context


@dataclasses.dataclass
class Db:
    url: str


@tool
def which_db(ctx: ToolContext[Db]) -> str:
    return ctx.deps.url


def ask(url: str | None = None) -> str:
    """The `url` a run with `deps=Db(url)` (or without, for `None`) hands its tool."""
    agent = create_agent(model=calls_then_text([call("c1", "which_db")]), tools=[which_db], deps=Db("agent"))
    deps = Db(url) if url is not None else None
    return str(returns(agent.run_sync("go", deps=deps).messages)[0]["content"])


def test_a_run_s_deps_replace_the_agent_s_for_that_run_only() -> None:
    assert ask() == "agent"
    assert ask("run") == "run"


def test_every_way_to_run_takes_deps() -> None:
    both_runs: list[Mapping[str, object]] = [
        TestModel.tool_call_response([call("c1", "which_db")]),
        {"text": "done"},
    ] * 2
    agent = create_agent(model=TestModel.responses(both_runs), tools=[which_db], deps_type=Db)

    async def streamed() -> str:
        stream = agent.run_stream("go", deps=Db("stream"))
        async for _ in stream:
            pass
        return str(returns((await stream.result()).messages)[0]["content"])

    assert asyncio.run(streamed()) == "stream"
    session = agent.session()
    assert returns(session.run_sync("go", deps=Db("session")).messages)[0]["content"] == "session"


def test_a_resume_takes_the_run_s_deps() -> None:
    @tool
    def guarded(ctx: ToolContext[Db]) -> str:
        if ctx.approval is None:
            raise ApprovalRequired("which database?")
        return ctx.deps.url

    agent = create_agent(model=calls_then_text([call("c1", "guarded")]), tools=[guarded], deps_type=Db)

    async def go() -> object:
        session = agent.session()
        waiting = await session.run("go", deps=Db("first"))
        decision = waiting.hitl.approvals[0].approve()
        done = await session.hitl.resume(approvals=[decision], deps=Db("resumed"))
        return returns(done.messages)[0]["content"]

    assert asyncio.run(go()) == "resumed"


def test_an_agent_declaring_deps_type_refuses_a_run_without_deps() -> None:
    agent = create_agent(model=calls_then_text([]), deps_type=Db)
    with pytest.raises(TypeError, match=r"deps_type=Db.*pass `deps=`"):
        agent.run_sync("go")
    with pytest.raises(TypeError, match="deps_type=Db"):
        agent.session().run_stream("go")


def test_deps_of_another_type_than_deps_type_are_refused() -> None:
    with pytest.raises(TypeError, match=r"`deps` must be a Db .*got str"):
        create_agent(model=calls_then_text([]), deps_type=Db, deps="postgres://db")


def test_a_subscripted_context_is_a_context_evaluated_or_as_a_string() -> None:
    def evaluated(ctx: ToolContext[Db], n: int) -> str:
        return f"{ctx.deps.url}:{n}"

    def as_string(ctx: ToolContext[Db], n: int) -> str:
        return f"{ctx.deps.url}:{n}"

    # Under `from __future__ import annotations` both are strings: evaluate one.
    evaluated.__annotations__["ctx"] = ToolContext[Db]
    for fn in (evaluated, as_string):
        wrapped = tool(fn)
        assert list(loose(wrapped.definition.parameters["properties"])) == ["n"]
        assert wrapped(tool_context(deps=Db("d")), 2) == "d:2"


def test_the_generic_classes_subscript_at_runtime() -> None:
    origins = [typing.get_origin(ToolContext[Db]), typing.get_origin(RunResult[str]), typing.get_origin(RunStream[str])]
    assert origins == [ToolContext, RunResult, RunStream]
