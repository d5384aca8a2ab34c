"""DESIGN.md §16 from Python: each hole outside testing found, kept closed. Cases that once
killed the interpreter run under the crash supervisor (a child process)."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable
from typing import cast

import pytest
from conftest import call, calls_then_text, loose, returns
from supervisor import run_isolated

from starweaver import (
    Agent,
    DecisionError,
    FormatError,
    RegistrationError,
    RenderError,
    Tool,
    ToolContext,
    create_agent,
    tool,
)
from starweaver.testing import FunctionModel, Messages, TestModel
from starweaver.types import FunctionModelInfo

DEEP = """
def nested(depth):
    value = 0
    for _ in range(depth):
        value = [value]
    return value

def cyclic():
    value = []
    value.append(value)
    return value
"""


@pytest.mark.parametrize("make", ["nested(10_000)", "cyclic()", "{'a': nested(100_000)}"])
def test_a_deep_or_cyclic_tool_return_is_an_execution_error_not_a_crash(make: str) -> None:
    outcome = run_isolated(
        DEEP
        + f"""
import asyncio
from starweaver import create_agent, tool
from starweaver.testing import TestModel

calls = []

@tool
async def t() -> object:
    calls.append(1)
    return {make}

model = TestModel.responses([TestModel.tool_call_response([{{"id": "c", "name": "t", "arguments": {{}}}}]), {{"text": "ok"}}])
run = asyncio.run(create_agent(model=model, tools=[t]).run("go"))
content = run.messages[2]["parts"][0]["content"]
result = [run.status, content["kind"], content["message"], len(calls)]
"""
    )
    assert isinstance(outcome["result"], list)
    status, kind, message, calls = outcome["result"]
    assert (status, kind, calls) == ("completed", "execution", 1)
    assert "levels deep" in message or "contains itself" in message


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        (
            "TestModel.responses([TestModel.tool_call_response([{'id': 'c', 'name': 't', 'arguments': {'x': BAD}}])])",
            "FormatError",
        ),
        (
            "FunctionModel(lambda messages, info: {'tool_calls': [{'id': 'c', 'name': 't', 'arguments': {'x': BAD}}]})",
            "model",
        ),
        ("tool(parameters_schema={'type': 'object', 'properties': {'x': BAD}})(lambda args: 1)", "RegistrationError"),
        ("DECISION", "DecisionError"),
    ],
)
@pytest.mark.parametrize("bad", ["nested(10_000)", "cyclic()"])
def test_deep_and_cyclic_values_are_named_errors_on_every_path(where: str, expected: str, bad: str) -> None:
    code = (
        DEEP
        + """
import asyncio
from starweaver import ApprovalRequired, StarweaverError, ToolContext, create_agent, tool
from starweaver.testing import FunctionModel, Messages, TestModel

BAD = """
        + bad
        + """

@tool
async def t(ctx: ToolContext) -> int:
    if ctx.approval is None:
        raise ApprovalRequired("ask")
    return 1

async def main():
    if WHERE == "DECISION":
        model = TestModel.responses([TestModel.tool_call_response([{"id": "c", "name": "t", "arguments": {}}])])
        session = create_agent(model=model, tools=[t]).session()
        waiting = await session.run("go")
        waiting.hitl.approvals[0].approve(metadata={"note": BAD})
        return "accepted"
    made = eval(WHERE)
    if isinstance(made, FunctionModel):
        run = await create_agent(model=made, tools=[t]).run("go")
        return [run.status, str(run.error)]
    return "accepted"

try:
    result = asyncio.run(main())
except StarweaverError as error:
    result = [type(error).__name__, str(error)]
""".replace("WHERE", repr(where))
    )
    outcome = run_isolated(code)["result"]
    assert isinstance(outcome, list), outcome
    if expected == "model":
        assert outcome[0] == "failed" and "not JSON" in outcome[1], outcome
    else:
        assert outcome[0] == expected, outcome
    assert "levels deep" in outcome[1] or "contains itself" in outcome[1], outcome


def test_a_restored_state_missing_kinds_is_a_format_error_not_a_panic() -> None:
    agent = create_agent(model=TestModel.responses([{"text": "x"}]))
    with pytest.raises(FormatError, match="message 0"):
        agent.session(state={"version": 1, "history": [{"parts": [{}]}], "decided": []})
    with pytest.raises(FormatError, match="message 0"):
        agent.session(state={"version": 1, "history": [{"kind": "request", "parts": [{}]}], "decided": []})


def test_a_restored_history_that_cannot_be_sent_is_refused_naming_message_and_part() -> None:
    agent = create_agent(model=TestModel.responses([{"text": "x"}]))
    prompt = {"kind": "request", "parts": [{"kind": "user_prompt", "text": "go"}]}
    dangling = {"kind": "response", "parts": [{"kind": "tool_call", "id": "c1", "name": "t", "arguments": {}}]}
    orphan = {
        "kind": "request",
        "parts": [{"kind": "tool_return", "tool_call_id": "c9", "name": "t", "content": 1, "is_error": False}],
    }
    with pytest.raises(FormatError, match=r"message 1, part 0: tool call `c1` \(`t`\) has no return"):
        agent.session(state={"version": 1, "history": [prompt, dangling], "decided": [], "waiting": None})
    with pytest.raises(FormatError, match=r"message 2, part 0: tool return `c9` answers no tool call"):
        agent.session(state={"version": 1, "history": [prompt, dangling, orphan], "decided": []})


def test_integers_beyond_64_bits_are_refused_never_rounded() -> None:
    with pytest.raises(FormatError, match=r"arguments\.n.*outside the 64-bit range"):
        TestModel.responses([TestModel.tool_call_response([call("c", "t", {"n": 10**30})])])

    @tool
    async def huge() -> int:
        return 10**30

    run = asyncio.run(create_agent(model=calls_then_text([call("c", "huge")]), tools=[huge]).run("go"))
    content = returns(run.messages)[0]["content"]
    assert isinstance(content, dict) and content["kind"] == "execution"
    assert "64-bit" in str(content["message"])
    assert "1e+30" not in str(run.messages)

    # The widest exact integers still cross unchanged, both ways.
    @tool
    async def echo(a: int, b: int) -> list[int]:
        return [a, b]

    model = calls_then_text([call("c", "echo", {"a": 2**64 - 1, "b": -(2**63)})])
    run = asyncio.run(create_agent(model=model, tools=[echo]).run("go"))
    assert returns(run.messages)[0]["content"] == [2**64 - 1, -(2**63)]


@pytest.mark.parametrize("bad", [math.nan, math.inf, "\ud800", 10**30])
def test_values_without_exact_json_in_decisions_are_decision_errors(bad: object) -> None:
    @tool
    async def ask(ctx: ToolContext) -> int:
        from starweaver import ApprovalRequired, CallDeferred

        if ctx.tool_call_id == "a" and ctx.approval is None:
            raise ApprovalRequired("ask")
        raise CallDeferred("later")

    async def scenario() -> None:
        model = TestModel.responses([TestModel.tool_call_response([call("a", "ask"), call("d", "ask")])])
        session = create_agent(model=model, tools=[ask]).session()
        waiting = await session.run("go")
        with pytest.raises(DecisionError):
            waiting.hitl.approvals[0].approve(metadata={"x": bad})
        with pytest.raises(DecisionError):
            waiting.hitl.approvals[0].approve(override_arguments={"x": bad})
        with pytest.raises(DecisionError):
            waiting.hitl.deferred[0].complete({"x": bad})
        with pytest.raises(DecisionError):
            await session.hitl.resume(deferred_results=[{"id": "d", "status": "completed", "value": bad}])
        assert session.pending is not None, "still waiting after refused decisions"

    asyncio.run(scenario())


def test_resume_and_restore_with_the_wrong_shapes_are_named_errors() -> None:
    agent = create_agent(model=TestModel.responses([{"text": "x"}]))
    with pytest.raises(FormatError, match="session state must be a dict"):
        agent.session(state=0)  # type: ignore[arg-type]
    session = agent.session()

    async def scenario() -> None:
        with pytest.raises(DecisionError, match="`approvals` must be a list"):
            await session.hitl.resume(approvals=5)  # type: ignore[call-overload]
        with pytest.raises(DecisionError, match="`deferred_results` must be a list"):
            await session.hitl.resume(deferred_results={"id": "x"})  # type: ignore[call-overload]

    asyncio.run(scenario())


def _named() -> int:
    return 1


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"timeout": 5}, "unknown tool option `timeout`"),
        ({"timeout_ms": -1}, "timeout_ms"),
        ({"timeout_ms": 0}, "timeout_ms"),
        ({"max_retries": -1}, "max_retries"),
        ({"max_retries": 2**32}, "max_retries"),
        ({"metadata": "x"}, "metadata"),
        ({"name": 5}, "name"),
        ({"strict": "yes"}, "strict"),
        ({"sequential": None}, "sequential"),
        ({"timeout_ms": True}, "timeout_ms"),
        ({"parameters_schema": {"type": "object", "properties": {1: {"type": "string"}}}}, "not a string"),
    ],
)
def test_bad_tool_options_are_registration_errors_naming_the_option(options: dict[str, object], named: str) -> None:
    with pytest.raises(RegistrationError, match=named):
        tool(**options)(_named)  # type: ignore[call-overload]


@pytest.mark.parametrize("annotation", ["Callable[[int], int]", "type"])
def test_annotations_without_a_json_schema_are_registration_errors_naming_the_parameter(annotation: str) -> None:
    namespace: dict[str, object] = {"Callable": Callable}
    exec(f"def f(x: {annotation}) -> int:\n    return 1", namespace)
    with pytest.raises(RegistrationError, match="parameter `x`"):
        tool(cast("Callable[..., object]", namespace["f"]))


def test_one_typed_parameter_with_an_explicit_schema_receives_its_field() -> None:
    @tool(parameters_schema={"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})
    async def one(n: int) -> int:
        return n * 7

    run = asyncio.run(create_agent(model=calls_then_text([call("c", "one", {"n": 6})]), tools=[one]).run("go"))
    assert returns(run.messages)[0]["content"] == 42


def test_args_dict_alone_is_the_whole_argument_object() -> None:
    @tool
    async def inspect_payload(args: dict[str, object]) -> list[str]:
        return sorted(args)

    assert inspect_payload.definition.parameters == {"additionalProperties": True, "type": "object"}
    model = calls_then_text([call("c", "inspect_payload", {"b": 1, "a": 2})])
    run = asyncio.run(create_agent(model=model, tools=[inspect_payload]).run("go"))
    assert returns(run.messages)[0]["content"] == ["a", "b"]


def test_a_none_parameter_is_a_render_error_for_gemini_not_an_invalid_schema() -> None:
    @tool
    async def nothing(x: None) -> int:
        return 1

    with pytest.raises(RenderError, match="only null"):
        nothing.definition.render("gemini")


def test_a_return_value_that_cannot_be_serialised_runs_once() -> None:
    calls: list[int] = []

    @tool
    async def opaque() -> object:
        calls.append(1)
        return object()

    run = asyncio.run(create_agent(model=calls_then_text([call("c", "opaque")]), tools=[opaque]).run("go"))
    assert calls == [1]
    assert not [e for e in run.events if e["type"] == "tool_retry"]
    content = returns(run.messages)[0]["content"]
    assert isinstance(content, dict) and "not JSON-serialisable" in str(content["message"])


# Names of the slow tools that have started, so a test cancels only once they run.
running: list[str] = []


def slow_tools(seen: list[str]) -> tuple[Tool[..., object], Tool[..., object]]:
    running.clear()

    @tool
    async def waits(ctx: ToolContext) -> int:
        running.append("waits")
        try:
            await asyncio.sleep(30)
        finally:
            await ctx.cancelled()
            seen.append(f"async saw cancel: {ctx.is_cancelled()}")
        return 1

    @tool
    def blocks(ctx: ToolContext) -> int:
        running.append("blocks")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if ctx.is_cancelled():
                seen.append("sync saw cancel")
                return 0
            time.sleep(0.005)
        seen.append("sync never saw cancel")
        return 1

    return waits, blocks


def streaming_agent(seen: list[str]) -> Agent:
    waits, blocks = slow_tools(seen)
    model = TestModel.responses(
        [TestModel.tool_call_response([call("a", "waits"), call("b", "blocks")]), {"text": "x"}, {"text": "y"}]
    )
    return create_agent(model=model, tools=[waits, blocks])


async def wait_for(seen: list[str], count: int) -> None:
    """Waits (up to 30 s, so a loaded machine cannot fail it) until ``seen`` has ``count`` entries."""
    for _ in range(6000):
        if len(seen) >= count:
            return
        await asyncio.sleep(0.005)


@pytest.mark.parametrize("how", ["iterate directly", "bound stream", "await result"])
def test_cancelling_a_task_that_reads_a_stream_cancels_the_run_and_its_tools(how: str) -> None:
    seen: list[str] = []

    async def scenario() -> None:
        session = streaming_agent(seen).session()

        async def reader() -> None:
            if how == "iterate directly":
                async for _ in session.run_stream("go"):
                    pass
            elif how == "bound stream":
                stream = session.run_stream("go")
                async for _ in stream:
                    pass
            else:
                await session.run_stream("go").result()

        task = asyncio.ensure_future(reader())
        await wait_for(running, 2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await wait_for(seen, 2)
        assert sorted(seen) == ["async saw cancel: True", "sync saw cancel"]
        kinds = [loose(r["content"])["kind"] for r in returns(session.messages)]
        assert kinds == ["cancelled", "cancelled"]
        assert (await session.run("again")).status == "completed", "the session is free"

    asyncio.run(scenario())


def test_breaking_out_of_a_stream_ends_the_run_cancelled_at_once() -> None:
    seen: list[str] = []

    async def scenario() -> None:
        session = streaming_agent(seen).session()
        async for event in session.run_stream("go"):
            if event["type"] == "tool_call":
                break
        # No garbage collection, no await: the session is free now.
        assert session.pending is None
        kinds = [loose(r["content"])["kind"] for r in returns(session.messages)]
        assert kinds == ["cancelled", "cancelled"]
        await wait_for(seen, 2)
        assert sorted(seen) == ["async saw cancel: True", "sync saw cancel"]

    asyncio.run(scenario())


def test_sync_tools_see_cancellation_when_the_run_task_is_cancelled() -> None:
    seen: list[str] = []
    _, blocks = slow_tools(seen)

    async def scenario() -> None:
        agent = create_agent(model=calls_then_text([call("b", "blocks")]), tools=[blocks])
        task = asyncio.ensure_future(agent.run("go"))
        await wait_for(running, 1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await wait_for(seen, 1)
        assert seen == ["sync saw cancel"]

    asyncio.run(scenario())


def test_a_function_model_call_with_an_integer_beyond_64_bits_is_the_models_to_correct() -> None:
    seen: list[object] = []

    @tool
    async def keep(args: dict[str, object]) -> str:
        seen.append(args)
        return "kept"

    def answer(messages: Messages, info: FunctionModelInfo) -> dict[str, object]:
        if messages[-1]["parts"][-1]["kind"] == "tool_return":
            return {"text": "done"}
        return {
            "tool_calls": [
                {"id": "wide", "name": "keep", "arguments": {"n": {"items": [10**23]}}},
                {"id": "fine", "name": "keep", "arguments": {"n": 2**64 - 1}},
            ]
        }

    run = asyncio.run(create_agent(model=FunctionModel(answer), tools=[keep]).run("go"))
    assert run.status == "completed", run.error
    wide, fine = returns(run.messages)
    assert isinstance(wide["content"], dict) and loose(wide["content"])["kind"] == "invalid_arguments"
    assert loose(wide["content"])["message"] == (
        "`n.items[0]`: the integer 100000000000000000000000 does not fit in 64 bits (send it as a string)"
    )
    assert fine["content"] == "kept"
    assert seen == [{"n": 2**64 - 1}]


@pytest.mark.parametrize(
    ("bad_call", "named"),
    [
        (
            {"id": "c1", "name": "keep", "arguments": {}, "extra": 1},
            "`tool_calls` at `[1].extra`: unknown field `extra`",
        ),
        ({"id": 7, "name": "keep", "arguments": {}}, "`tool_calls` at `[1].id`: invalid type: integer `7`"),
        ({"id": "c1", "name": "keep"}, "`tool_calls` at `[1]`: missing field `arguments`"),
    ],
)
def test_a_function_model_answer_with_a_call_that_is_not_plain_fails_naming_it(
    bad_call: dict[str, object], named: str
) -> None:
    # The first call is plain, read straight from its dict; the second is not, and the
    # whole answer is read, and refused, as any answer would be.
    @tool
    def keep(n: int = 0) -> int:
        return n

    plain = {"id": "c0", "name": "keep", "arguments": {"n": 1}}
    model = FunctionModel(lambda messages, info: {"tool_calls": [plain, bad_call]})
    run = create_agent(model=model, tools=[keep]).run_sync("go")
    assert run.status == "failed"
    assert f"invalid model response: {named}" in str(run.error), run.error


def test_a_function_model_calls_arguments_are_held_to_the_nesting_bound_of_the_whole_answer() -> None:
    # 998 dicts inside the answer, its list and its call are 1,001 containers deep.
    arguments: dict[str, object] = {}
    for _ in range(997):
        arguments = {"a": arguments}
    model = FunctionModel(lambda messages, info: {"tool_calls": [{"id": "c", "name": "t", "arguments": arguments}]})

    @tool
    def t(a: object = None) -> str:
        return "ran"

    run = create_agent(model=model, tools=[t]).run_sync("go")
    assert run.status == "failed"
    assert "nested more than 1000 levels deep" in str(run.error), run.error


def test_a_function_model_answers_calls_to_several_tools_in_any_order_by_their_own_names() -> None:
    # Plain calls read from their dicts share a name with the call before when it is the
    # same; a different name, or the same name after another, is each call's own.
    @tool
    def first(n: int) -> str:
        return f"first {n}"

    @tool
    def second(n: int) -> str:
        return f"second {n}"

    names = ["first", "first", "second", "first", "second", "second"]
    calls = [{"id": f"c{i}", "name": name, "arguments": {"n": i}} for i, name in enumerate(names)]
    model = FunctionModel(lambda messages, info: {"tool_calls": calls} if info["step"] == 1 else {"text": "done"})
    run = create_agent(model=model, tools=[first, second]).run_sync("go")
    assert run.status == "completed", run.error
    assert [(r["tool_call_id"], r["name"], r["content"]) for r in returns(run.messages)] == [
        (f"c{i}", name, f"{name} {i}") for i, name in enumerate(names)
    ]
