"""DESIGN.md §17 from Python: ``create_agent(output_type=...)`` answers with a validated
value of that type, given by an output tool call; failures go back to the model, at most
``output_retries`` times; output validators and end strategies."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from typing import Generic, Literal, TypeVar

import pytest
from conftest import call, loose, returns
from pydantic import BaseModel
from snapshot import assert_snapshot
from typing_extensions import TypedDict

from starweaver import (
    ModelRetry,
    NativeOutput,
    OutputValidationError,
    PromptedOutput,
    RegistrationError,
    ToolContext,
    create_agent,
    tool,
)
from starweaver.testing import FunctionModel, Messages, TestModel
from starweaver.types import FunctionModelInfo


class Invoice(BaseModel):
    """An invoice read from a document."""

    number: str
    total_cents: int


class Refusal(BaseModel):
    reason: str


def answers(*calls: dict[str, object]) -> TestModel:
    """A model that makes each call in its own response, in order."""
    return TestModel.responses([TestModel.tool_call_response([c]) for c in calls])


def final(arguments: dict[str, object], name: str = "final_result", call_id: str = "c") -> dict[str, object]:
    return call(call_id, name, arguments)


def test_a_model_output_is_the_validated_instance() -> None:
    model = answers(final({"number": "A-7", "total_cents": 1250}))
    agent = create_agent(model=model, output_type=Invoice)
    result = agent.run_sync("read it")
    assert result.status == "completed"
    assert result.output == Invoice(number="A-7", total_cents=1250)
    assert isinstance(result.output, Invoice)
    assert result.output_tool == "final_result"
    ret = returns(result.messages)[0]
    assert ret["content"] == "Final result processed."
    assert ret.get("value") == {"number": "A-7", "total_cents": 1250}
    [offered] = model.requests[0]["tools"]
    assert offered["description"] == "An invoice read from a document."
    assert offered["parameters"]["required"] == ["number", "total_cents"]


def test_a_failed_validation_names_the_field_and_past_the_retries_the_run_fails() -> None:
    model = answers(final({"number": "A-7", "total_cents": "lots"}), final({"number": "A-7", "total_cents": 5}))
    result = create_agent(model=model, output_type=Invoice).run_sync("read it")
    assert result.output == Invoice(number="A-7", total_cents=5)
    first = returns(result.messages)[0]
    assert first["is_error"]
    assert "total_cents" in json.dumps(first["content"])

    bad = final({"number": 7})
    result = create_agent(model=answers(bad, bad, bad), output_type=Invoice, output_retries=1).run_sync("go")
    assert result.status == "failed"
    assert isinstance(result.error, OutputValidationError)
    assert result.error.max_retries == 1
    assert "total_cents" in str(result.error)
    assert result.output is None


@dataclasses.dataclass
class Point:
    x: int
    y: int


class Address(TypedDict):
    city: str
    zip: str


@pytest.mark.parametrize(
    ("output_type", "arguments", "expected"),
    [
        (Point, {"x": 1, "y": 2}, Point(1, 2)),
        (Address, {"city": "Oslo", "zip": "0150"}, {"city": "Oslo", "zip": "0150"}),
        (int, {"response": 42}, 42),
        (list[str], {"response": ["a", "b"]}, ["a", "b"]),
        (dict[str, int], {"response": {"a": 1}}, {"a": 1}),
        (Literal["yes", "no"], {"response": "no"}, "no"),
    ],
)
def test_every_kind_of_type_can_be_the_output(
    output_type: object, arguments: dict[str, object], expected: object
) -> None:
    model = answers(final(arguments))
    result = create_agent(model=model, output_type=output_type).run_sync("go")
    assert result.status == "completed", result.error
    assert result.output == expected
    assert type(result.output) is type(expected)


def test_a_union_offers_one_tool_per_member_and_str_lets_text_answer() -> None:
    model = answers(final({"reason": "not an invoice"}, name="final_result_Refusal"))
    agent = create_agent(model=model, output_type=Invoice | Refusal)
    assert [d.name for d in agent.definitions] == ["final_result_Invoice", "final_result_Refusal"]
    result = agent.run_sync("read it")
    assert result.output == Refusal(reason="not an invoice")
    assert result.output_tool == "final_result_Refusal"

    text = create_agent(model=TestModel.responses([{"text": "nothing to read"}]), output_type=Invoice | str)
    assert text.run_sync("read it").output == "nothing to read"


def test_text_is_refused_when_the_output_does_not_take_it() -> None:
    model = TestModel.responses(
        [{"text": "A-7"}, TestModel.tool_call_response([final({"number": "A-7", "total_cents": 1})])]
    )
    result = create_agent(model=model, output_type=Invoice).run_sync("read it")
    assert result.output == Invoice(number="A-7", total_cents=1)
    assert "final_result" in json.dumps(model.requests[1]["messages"][-1])


def test_an_output_function_gives_its_return_and_may_ask_again() -> None:
    seen: list[object] = []

    def weather(ctx: ToolContext, city: str, celsius: float) -> Point:
        """A weather report."""
        seen.append(ctx.deps)
        if celsius < -90:
            raise ModelRetry("no city is that cold")
        return Point(round(celsius), len(city))

    model = answers(final({"city": "Oslo", "celsius": -120}), final({"city": "Oslo", "celsius": -3}))
    result = create_agent(model=model, output_type=weather, deps="deps").run_sync("weather")
    assert result.output == Point(-3, 4)
    assert seen == ["deps", "deps"]
    assert loose(returns(result.messages)[0]["content"])["kind"] == "model_retry"


def test_validators_sync_async_and_decorated_may_change_the_output_or_ask_again() -> None:
    def positive(ctx: ToolContext, output: Invoice) -> Invoice:
        if output.total_cents == 0:
            raise ModelRetry("an invoice's total is never 0")
        return output

    model = answers(final({"number": "a-7", "total_cents": 0}), final({"number": "a-7", "total_cents": 9}))
    agent = create_agent(model=model, output_type=Invoice, output_validators=[positive])

    @agent.output_validator
    async def upper(ctx: ToolContext, output: Invoice) -> Invoice:
        await asyncio.sleep(0)
        return output.model_copy(update={"number": output.number.upper()})

    result = agent.run_sync("read it")
    assert result.output == Invoice(number="A-7", total_cents=9)
    assert "never 0" in json.dumps(returns(result.messages)[0]["content"])

    with pytest.raises(RegistrationError, match="output_type"):
        create_agent(model=TestModel.responses([])).output_validator(positive)  # type: ignore[arg-type]


@pytest.mark.parametrize(("end_strategy", "runs"), [("early", 0), ("exhaustive", 1)])
def test_the_end_strategy_says_whether_the_other_calls_run(
    end_strategy: Literal["early", "exhaustive"], runs: int
) -> None:
    ran: list[str] = []

    @tool
    def notify() -> str:
        """Sends a notice."""
        ran.append("notify")
        return "sent"

    response = TestModel.tool_call_response([call("n", "notify"), final({"number": "A", "total_cents": 1})])
    agent = create_agent(
        model=TestModel.responses([response]), tools=[notify], output_type=Invoice, end_strategy=end_strategy
    )
    result = agent.run_sync("go")
    assert result.output == Invoice(number="A", total_cents=1)
    assert len(ran) == runs
    assert len(returns(result.messages)) == 2


def test_a_stream_and_a_resumed_session_end_with_the_typed_output() -> None:
    async def streamed() -> None:
        agent = create_agent(model=answers(final({"number": "S", "total_cents": 2})), output_type=Invoice)
        stream = agent.run_stream("go")
        kinds = [event["type"] async for event in stream]
        assert kinds[-1] == "run_complete"
        assert (await stream.result()).output == Invoice(number="S", total_cents=2)

    asyncio.run(streamed())

    @tool
    def deploy(env: str) -> str:
        """Deploys."""
        return env

    model = TestModel.responses(
        [
            TestModel.tool_call_response([call("d", "deploy", {"env": "prod"})]),
            TestModel.tool_call_response([final({"number": "H", "total_cents": 3})]),
        ]
    )
    agent = create_agent(model=model, tools=[deploy], output_type=Invoice, approval_required_tools=["deploy"])
    session = agent.session()
    waiting = session.run_sync("deploy")
    assert waiting.status == "waiting"
    restored = agent.session(session.export_state())
    assert restored.pending is not None
    done = asyncio.run(restored.hitl.resume(approvals=[restored.pending.approvals[0].approve()]))
    assert done.output == Invoice(number="H", total_cents=3)


def test_the_output_tools_definitions_are_snapshotted() -> None:
    def report(city: str, celsius: float) -> str:
        """Reads the weather into a report; the model fills the parameters."""
        return f"{city}: {celsius}"

    for label, output_type in [("model", Invoice), ("union", Invoice | Refusal | list[str]), ("function", report)]:
        agent = create_agent(model=TestModel.responses([]), output_type=output_type)
        body = json.dumps([d.to_dict() for d in agent.definitions], indent=2, ensure_ascii=False)
        assert_snapshot(f"python__output_tool_{label}", body, "tests/python/test_output.py")


def test_native_and_prompted_output_read_the_answer_as_the_type() -> None:
    model = TestModel.responses([{"text": "A-7"}, {"text": '{"number": "A-7", "total_cents": 5}'}])
    result = create_agent(model=model, output_type=NativeOutput(Invoice)).run_sync("read it")
    assert result.output == Invoice(number="A-7", total_cents=5)
    assert result.output_tool is None
    assert model.requests[0]["tools"] == []
    assert model.requests[0]["output"]["name"] == "final_result"

    model = TestModel.responses([{"text": '```json\n{"number": "P", "total_cents": 2}\n```'}])
    agent = create_agent(model=model, instructions="Read invoices.", output_type=PromptedOutput(Invoice))
    assert agent.run_sync("read it").output == Invoice(number="P", total_cents=2)
    system = json.dumps(model.requests[0]["messages"][0])
    assert "Read invoices." in system and "total_cents" in system

    with pytest.raises(RegistrationError, match="anthropic"):
        create_agent(model="anthropic:claude-sonnet-4-5", output_type=NativeOutput(Invoice))


def test_validators_check_a_text_answer_too() -> None:
    def shout(ctx: ToolContext, text: str) -> str:
        if text != text.upper():
            raise ModelRetry("shout it")
        return text + "!"

    model = TestModel.responses([{"text": "hello"}, {"text": "HELLO"}])
    agent = create_agent(model=model, output_validators=[shout])
    assert agent.run_sync("greet").output == "HELLO!"


class City(BaseModel):
    name: str


def test_a_run_may_ask_for_its_own_output_type_and_the_agents_runs_keep_theirs() -> None:
    model = answers(final({"name": "Lyon"}), final({"number": "A-7", "total_cents": 5}))
    agent = create_agent(model=model, output_type=Invoice)

    seen: list[Invoice] = []

    @agent.output_validator
    def record(ctx: ToolContext, output: Invoice) -> Invoice:
        seen.append(output)
        return output

    result = agent.run_sync("where?", output_type=City)
    assert result.output == City(name="Lyon")
    [offered] = model.requests[0]["tools"]
    assert offered["parameters"]["required"] == ["name"]
    assert seen == [], "the agent's validators check only the agent's own output type"
    assert agent.run_sync("read it").output == Invoice(number="A-7", total_cents=5)
    assert seen == [Invoice(number="A-7", total_cents=5)]


def test_a_sessions_run_may_ask_for_prompted_output_and_its_next_run_answers_in_text() -> None:
    model = TestModel.responses([{"text": '{"name": "Oslo"}'}, {"text": "plain"}])
    session = create_agent(model=model, instructions="Be brief.").session()
    result = session.run_sync("where?", output_type=PromptedOutput(City))
    assert result.output == City(name="Oslo")
    system = model.requests[0]["messages"][0]["parts"][0]
    assert system["kind"] == "system_prompt" and '"name"' in system["text"], system
    assert session.run_sync("and now?").output == "plain"


def test_a_streamed_run_gives_its_own_output_type() -> None:
    async def main() -> object:
        stream = create_agent(model=answers(final({"response": [1, 2]}))).run_stream("go", output_type=list[int])
        async for _ in stream:
            pass
        return (await stream.result()).output

    assert asyncio.run(main()) == [1, 2]


def test_a_runs_own_output_type_is_checked_before_the_run_starts() -> None:
    model = TestModel.responses([{"text": "never asked"}])
    with pytest.raises(RegistrationError, match="NativeOutput takes types, without text"):
        create_agent(model=model).run_sync("go", output_type=NativeOutput(Invoice | str))
    assert model.requests == []


def union_answer(kind: str, data: dict[str, object]) -> dict[str, object]:
    """A native or prompted union's answer: the member's name and its data."""
    return {"text": json.dumps({"result": {"kind": kind, "data": data}})}


@pytest.mark.parametrize(
    "asked",
    [
        NativeOutput(Invoice | Refusal),
        NativeOutput([Invoice, Refusal]),
        PromptedOutput(Invoice | Refusal),
        PromptedOutput([Invoice, Refusal]),
    ],
    ids=["native-union", "native-list", "prompted-union", "prompted-list"],
)
def test_a_native_or_prompted_union_answers_with_the_member_the_model_chose(asked: object) -> None:
    script = iter(
        [
            union_answer("Refusal", {"reason": "blank page"}),
            union_answer("Invoice", {"number": "A-7", "total_cents": 5}),
        ]
    )
    asks: list[tuple[str, str]] = []

    def respond(messages: Messages, info: FunctionModelInfo) -> dict[str, object]:
        # What asks for the output: the response format, or the instructions.
        if "output" in info:
            asks.append(("format", json.dumps(info["output"]["parameters"])))
        else:
            asks.append(("instructions", json.dumps(messages[0])))
        return next(script)

    seen: list[tuple[str, type]] = []

    def record(ctx: ToolContext, output: Invoice | Refusal) -> Invoice | Refusal:
        seen.append((ctx.tool_name, type(output)))
        return output

    agent = create_agent(model=FunctionModel(respond), output_type=asked, output_validators=[record])
    refused = agent.run_sync("read it")
    assert refused.output == Refusal(reason="blank page")
    assert isinstance(refused.output, Refusal)
    assert refused.output_tool == "final_result_Refusal"
    invoice = agent.run_sync("read it")
    assert invoice.output == Invoice(number="A-7", total_cents=5)
    assert invoice.output_tool == "final_result_Invoice"
    assert seen == [("final_result_Refusal", Refusal), ("final_result_Invoice", Invoice)]
    # One schema asks for either member, by name: as the response format (native), or in
    # the instructions (prompted).
    where, schema = asks[0]
    assert where == ("format" if isinstance(asked, NativeOutput) else "instructions")
    assert "anyOf" in schema and "Refusal" in schema and "total_cents" in schema, schema


T = TypeVar("T")


class Page(BaseModel, Generic[T]):
    items: list[T]


def test_a_union_member_of_a_generic_type_is_found_by_the_name_the_runtime_gives_it() -> None:
    """`Page[int]`'s tool and kind are `Page_int_`, in the runtime and in the decoder."""
    by_tool = create_agent(
        model=answers(final({"items": [1, 2]}, name="final_result_Page_int_")), output_type=Page[int] | Refusal
    ).run_sync("list")
    assert by_tool.output == Page[int](items=[1, 2])
    native = create_agent(
        model=TestModel.responses([union_answer("Page_int_", {"items": [3]})]),
        output_type=NativeOutput([Page[int], Refusal]),
    ).run_sync("list")
    assert native.output == Page[int](items=[3])
    assert native.output_tool == "final_result_Page_int_"


def test_a_native_unions_members_are_described_as_their_docstrings_say() -> None:
    asked: list[object] = []

    def respond(messages: Messages, info: FunctionModelInfo) -> dict[str, object]:
        asked.append(info["output"]["parameters"])
        return union_answer("Refusal", {"reason": "blank page"})

    create_agent(model=FunctionModel(respond), output_type=NativeOutput([Invoice, Refusal])).run_sync("read it")
    members = asked[0]["properties"]["result"]["anyOf"]  # type: ignore[index]
    # `Refusal` has no docstring, so nothing describes it.
    assert [member.get("description") for member in members] == ["An invoice read from a document.", None]


def test_a_prompted_union_shows_its_schema_and_an_unknown_kind_is_sent_back() -> None:
    model = TestModel.responses(
        [union_answer("Receipt", {"reason": "?"}), union_answer("Refusal", {"reason": "blank page"})]
    )
    agent = create_agent(model=model, instructions="Read invoices.", output_type=PromptedOutput([Invoice, Refusal]))
    result = agent.run_sync("read it")
    assert result.output == Refusal(reason="blank page")
    system = json.dumps(model.requests[0]["messages"][0]["parts"][0])
    assert "Read invoices." in system and '\\"anyOf\\"' in system and '\\"const\\":\\"Refusal\\"' in system, system
    told = json.dumps(model.requests[1]["messages"][-1])
    assert "unknown `result.kind`" in told and "Receipt" in told, told
