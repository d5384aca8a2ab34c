"""Deliberate misuse: every line marked `# error` must be rejected by both mypy --strict
and pyright (strict), and no other line may be. Checked by check_misuse.py; never run."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel

from starweaver import ToolContext, ToolDefinition, create_agent, tool
from starweaver.providers import render
from starweaver.testing import TestModel


@tool
async def add(left: int, right: int) -> int:
    return left + right


@tool(sequential=True)
def shout(ctx: ToolContext, text: str) -> str:
    return text.upper()


class Invoice(BaseModel):
    number: str


@dataclass
class MyDeps:
    url: str


@tool
def reads(ctx: ToolContext[MyDeps]) -> int:
    return ctx.deps.port  # error


async def misuse() -> None:
    await add("1", 2)  # error
    await add(1)  # error
    await add(1, 2, 3)  # error
    await add(left=1, rite=2)  # error
    shout("not a context", "x")  # error
    doubled: str = await add(1, 2)  # error
    definition: ToolDefinition = add.definition
    definition.name = "renamed"  # error
    create_agent(model=42, tools=[add])  # error
    create_agent(model=TestModel([]), tools=[add], max_steps="ten")  # error
    tool(sequential="yes")(add)  # error
    await create_agent(model=TestModel([])).run(42)  # error
    result = await create_agent(model=TestModel([])).run("go")
    result.hitl.approvals[0].approve("ui")  # error
    message: str = result.error  # error
    pending = create_agent(model=TestModel([])).session().hitl.pending  # error
    render(add, "openai")  # error
    create_agent(model=TestModel([]), session_store=42)  # error
    create_agent(model=TestModel([]), tool_search="remote")  # error
    ctx = ToolContext.detached("t")
    ctx.log("loud", "an unknown level")  # error
    await ctx.report_progress(1)  # error
    typed = create_agent(model=TestModel([]), tools=[reads], deps_type=MyDeps)
    await typed.run("go", deps="not the deps")  # error
    typed.session().run_sync("go", deps=MyDeps)  # error
    await typed.session().hitl.resume(deps=1)  # error
    create_agent(model=TestModel([]), deps=MyDeps("u")).run_stream("go", deps="inferred from deps=")  # error
    answer: str = (await typed.run("go", deps=MyDeps("u"))).output  # error
    untyped_ctx: ToolContext = ToolContext.detached("t")
    url: str = untyped_ctx.deps.url  # error
    invoice = (await create_agent(model=TestModel([]), output_type=Invoice).run("go")).output
    if invoice is not None:
        print(invoice.total)  # error
    own = (await create_agent(model=TestModel([])).run("go", output_type=Invoice)).output
    if own is not None:
        print(own.total)  # error
    del doubled, result, message, pending, answer, url
