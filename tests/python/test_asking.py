"""DESIGN.md §19 from Python: a tool asks mid-call. In an agent run the agent's
`elicitation_handler` asks the user (the answer validated into the type the tool asked
for), or without one the run waits for the answer; the agent's own model answers
`ctx.sample`. (Over MCP the client answers: see
test_mcp_server.py.)"""

from __future__ import annotations

import asyncio
import dataclasses
import re
from typing import Any

import pytest
from conftest import call, calls_then_text, loose, returns
from pydantic import BaseModel
from typing_extensions import TypedDict

from starweaver import DecisionError, ElicitationRequired, PendingElicitation, ToolContext, create_agent, tool
from starweaver.elicitation import Accepted, Cancelled, Declined, Elicited, Sampled
from starweaver.testing import FunctionModel, Messages
from starweaver.types import FunctionModelInfo


class Target(BaseModel):
    env: str
    replicas: int = 1


@dataclasses.dataclass
class Window:
    start: str


class Reason(TypedDict):
    why: str


@tool
async def deploy(ctx: ToolContext) -> str:
    """Deploys where the user says."""
    match await ctx.elicit("Where to?", Target):
        case Accepted(data=target):
            assert isinstance(target, Target)
            return f"deployed to {target.env} x{target.replicas}"
        case Declined():
            return "declined"
        case Cancelled():
            return "cancelled"
    raise AssertionError("unreachable")


def run_deploy(handler: Any) -> str:
    agent = create_agent(model=calls_then_text([call("c1", "deploy")]), tools=[deploy], elicitation_handler=handler)
    result = agent.run_sync("go")
    content = returns(result.messages)[0]["content"]
    assert isinstance(content, str | dict)
    return content if isinstance(content, str) else str(content["message"])


def test_a_sync_or_async_handler_answers_and_the_answer_is_validated_into_the_asked_type() -> None:
    asked: list[tuple[str, str, dict[str, Any]]] = []

    def accept(ctx: ToolContext, message: str, schema: dict[str, Any]) -> Elicited[Any]:
        asked.append((ctx.tool_call_id, message, schema))
        return Accepted({"env": "prod", "replicas": "3"})

    async def decline(ctx: ToolContext, message: str, schema: dict[str, Any]) -> Elicited[Any]:
        await asyncio.sleep(0)
        return Declined()

    assert run_deploy(accept) == "deployed to prod x3"
    assert asked[0][:2] == ("c1", "Where to?")
    assert asked[0][2]["required"] == ["env"] and asked[0][2]["properties"]["replicas"]["default"] == 1
    assert run_deploy(decline) == "declined"
    assert run_deploy(lambda ctx, message, schema: Cancelled()) == "cancelled"
    assert run_deploy(lambda ctx, message, schema: {"env": "staging"}) == "deployed to staging x1", "a dict accepts"


def test_an_answer_that_does_not_fit_or_a_handler_that_fails_is_the_calls_error() -> None:
    assert "validation error" in run_deploy(lambda ctx, message, schema: {"replicas": 2})

    def broken(ctx: ToolContext, message: str, schema: dict[str, Any]) -> Elicited[Any]:
        raise RuntimeError("the UI is gone")

    assert "the elicitation handler failed: RuntimeError: the UI is gone" in run_deploy(broken)
    assert "must return Accepted(data), Declined(), Cancelled() or a dict, got int" in run_deploy(
        lambda ctx, message, schema: 42
    )


def test_without_a_handler_the_run_waits_and_the_answer_reaches_the_tool_called_again() -> None:
    invoked: list[str] = []

    @tool
    async def careful(ctx: ToolContext, service: str) -> str:
        """Deploys a service where the user says, once they confirm."""
        invoked.append(service)
        target = await ctx.elicit("Where to?", Target)
        assert isinstance(target, Accepted)
        sure: Elicited[dict[str, Any]] = await ctx.elicit(
            f"Deploy {service} to {target.data.env}?", {"properties": {"sure": {"type": "boolean"}}}
        )
        return f"{service} -> {target.data.env} x{target.data.replicas}: {type(sure).__name__}"

    model = calls_then_text([call("c1", "careful", {"service": "api"})])
    agent = create_agent(model=model, tools=[careful])
    session = agent.session()
    first = session.run_sync("go")
    assert first.status == "waiting"
    assert first.hitl.approvals == [] and first.hitl.deferred == []
    (asked,) = first.hitl.elicitations
    assert isinstance(asked, PendingElicitation)
    assert (asked.id, asked.tool_name, asked.arguments) == (f"{first.run_id}:c1", "careful", {"service": "api"})
    assert asked.message == asked.reason == "Where to?"
    assert asked.schema["required"] == ["env"]
    assert asked.to_dict()["message"] == "Where to?"
    requested, waiting = (e for e in first.events if e["type"] in ("elicitation_requested", "waiting"))
    assert requested["type"] == "elicitation_requested" and requested["schema"] == asked.schema
    assert waiting["type"] == "waiting"
    assert (waiting["approvals"], waiting["deferred"], waiting.get("elicitations")) == (0, 0, 1)

    # A pydantic model is an answer too; the second question waits in turn.
    second = asyncio.run(session.hitl.resume(elicitations=[asked.accept(Target(env="prod", replicas=2))]))
    (confirm,) = second.hitl.elicitations
    assert confirm.message == "Deploy api to prod?"
    answer = confirm.cancel()
    assert (answer.id, answer.action, answer.content) == (confirm.id, "cancel", None)
    done = asyncio.run(session.resume_after_hitl(elicitations=[answer.to_dict()]))
    assert done.status == "completed"
    assert returns(done.messages)[0]["content"] == "api -> prod x2: Cancelled"
    assert invoked == ["api", "api", "api"], "invoked again after each answer"


def test_a_waiting_question_is_exported_and_answered_in_another_session_and_bad_answers_are_refused() -> None:
    agent = create_agent(model=calls_then_text([call("c1", "deploy")]), tools=[deploy])
    session = agent.session()
    waiting = asyncio.run(session.run("go"))
    (asked,) = waiting.hitl.elicitations
    restored = agent.session(session.export_state())
    pending = restored.pending
    assert pending is not None and pending.elicitations[0].id == asked.id

    with pytest.raises(DecisionError, match=re.escape("does not match the schema the tool asked with: at `/replicas`")):
        asyncio.run(restored.hitl.resume(elicitations=[asked.accept({"env": "prod", "replicas": "many"})]))
    with pytest.raises(DecisionError, match="`content` must be a dict, got an array"):
        asked.accept([1])
    with pytest.raises(DecisionError, match="is a pending elicitation, but was given an approval decision"):
        asyncio.run(restored.hitl.resume(approvals=[{"id": asked.id, "approved": True}]))
    with pytest.raises(DecisionError, match="takes no `content`"):
        asyncio.run(restored.hitl.resume(elicitations=[{"id": asked.id, "action": "decline", "content": {}}]))

    done = asyncio.run(restored.hitl.resume(elicitations=[{"id": "c1", "action": "accept", "content": {"env": "dev"}}]))
    assert returns(done.messages)[0]["content"] == "deployed to dev x1"


def test_a_tool_that_swallows_the_wait_and_a_tool_that_raises_it_by_hand() -> None:
    @tool
    async def swallow(ctx: ToolContext) -> str:
        try:
            await ctx.elicit("Anything?", {"type": "object"})
        except ElicitationRequired as waiting:
            return f"asked {waiting.message!r} with nobody to ask"
        return "answered"

    @tool
    async def forger(ctx: ToolContext) -> str:
        raise ElicitationRequired("Where?")

    model = calls_then_text([call("c1", "swallow"), call("c2", "forger")])
    result = create_agent(model=model, tools=[swallow, forger]).run_sync("go")
    assert result.status == "completed"
    swallowed, forged = returns(result.messages)
    assert swallowed["content"] == "asked 'Anything?' with nobody to ask"
    assert loose(forged["content"])["kind"] == "user_error"
    assert "only through `ctx.elicit(...)`" in loose(forged["content"])["message"]


def test_dataclasses_typeddicts_and_schema_dicts_can_be_asked_for() -> None:
    @tool
    async def plan(ctx: ToolContext) -> str:
        window = await ctx.elicit("When?", Window)
        reason = await ctx.elicit("Why?", Reason)
        # A schema dict gives the content as it came: say what you expect.
        raw: Elicited[dict[str, Any]] = await ctx.elicit("Anything else?", {"properties": {"note": {"type": "string"}}})
        assert isinstance(window, Accepted) and isinstance(reason, Accepted) and isinstance(raw, Accepted)
        assert isinstance(window.data, Window)
        return f"{window.data.start} {reason.data['why']} {raw.data['note']}"

    answers = {"When?": {"start": "9:00"}, "Why?": {"why": "quiet"}, "Anything else?": {"note": "none"}}
    agent = create_agent(
        model=calls_then_text([call("c1", "plan")]),
        tools=[plan],
        elicitation_handler=lambda ctx, message, schema: answers[message],
    )
    assert returns(agent.run_sync("go").messages)[0]["content"] == "9:00 quiet none"


def test_sampling_in_a_run_asks_the_agents_own_model_without_tools() -> None:
    @tool
    async def summarise(ctx: ToolContext) -> str:
        sampled = await ctx.sample(
            ["The build is green.", {"role": "assistant", "content": "Noted."}, "Summarise."],
            max_tokens=50,
            system_prompt="Be brief.",
        )
        assert isinstance(sampled, Sampled)
        return sampled.text

    seen: list[tuple[int, int]] = []

    def model(messages: Messages, info: FunctionModelInfo) -> dict[str, object]:
        seen.append((len(messages), len(info["tools"])))
        if not info["tools"]:
            kinds = [messages[i]["kind"] for i in range(len(messages))]
            assert kinds == ["request", "request", "response", "request"], kinds
            return {"text": "Green."}
        return {"tool_calls": [call("c1", "summarise")]} if len(messages) == 1 else {"text": "done"}

    result = create_agent(model=FunctionModel(model), tools=[summarise]).run_sync("go")
    assert returns(result.messages)[0]["content"] == "Green."
    assert seen[1] == (4, 0)


def test_asking_outside_any_run_raises_naming_the_tool() -> None:
    ctx = ToolContext.detached("deploy")

    async def go() -> None:
        with pytest.raises(Exception, match="tool `deploy` tried to ask the user for input"):
            await ctx.elicit("Where to?", Target)
        with pytest.raises(Exception, match="tool `deploy` tried to ask a model for a completion"):
            await ctx.sample("hi")

    asyncio.run(go())


class Node(BaseModel):
    name: str
    child: Node | None = None


def test_what_cannot_be_asked_is_named_before_anything_is_sent() -> None:
    ctx = ToolContext.detached("t")
    with pytest.raises(TypeError, match="refers to itself through 'Node'"):
        ctx.elicit("A tree?", Node)
    with pytest.raises(
        TypeError,
        match=re.escape('a sampling message is a str or a {"role": "user" | "assistant", "content": str} dict'),
    ):
        ctx.sample([{"role": "user", "text": "hi"}])  # type: ignore[list-item]
