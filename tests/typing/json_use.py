"""Ordinary use of the JSON the API hands out: the history, the events, a test model's
requests, tool definitions and exported session state. `make lint-python` checks it with
`mypy --strict --disallow-any-expr`, so any `Any` reaching user code here fails, and with
pyright (strict); never executed."""

from __future__ import annotations

from starweaver import JsonValue, ToolContext, create_agent, tool
from starweaver.testing import FunctionModel, Messages, TestModel
from starweaver.types import (
    FunctionModelInfo,
    JsonObject,
    Message,
    ModelRequestRecord,
    SessionState,
    ToolDefinitionDict,
)


@tool
def lookup(ctx: ToolContext, ticket: str) -> str:
    return ticket + ctx.tool_call_id


def texts(messages: list[Message]) -> list[str]:
    found: list[str] = []
    for message in messages:
        for part in message["parts"]:
            if part["kind"] == "text":
                found.append(part["text"])
            elif part["kind"] == "tool_call":
                arguments: JsonObject = part["arguments"]
                found.extend(str(value) for value in arguments.values())
            elif part["kind"] == "tool_return":
                content: JsonValue = part["content"]
                metadata: JsonObject = part["metadata"]
                found.append(f"{content} {sorted(metadata)}")
    return found


def run_and_read() -> None:
    model = TestModel.responses(
        [
            TestModel.tool_call_response([{"id": "c1", "name": "lookup", "arguments": {"ticket": "T-1"}}]),
            {"text": "done"},
        ]
    )
    agent = create_agent(model=model, tools=[lookup])
    result = agent.run_sync("look T-1 up")
    texts(result.messages)
    for event in result.events:
        if event["type"] == "tool_call" and "arguments" in event:
            rewritten: JsonObject = event["arguments"]
            del rewritten
        elif event["type"] == "tool_log" and "data" in event:
            data: JsonValue = event["data"]
            del data
        elif event["type"] == "run_complete":
            print(event["output"])
    requests: list[ModelRequestRecord] = model.requests
    for request in requests:
        texts(request["messages"])
        tools: list[ToolDefinitionDict] = request["tools"]
        print([t["parameters"] for t in tools])

    definition = lookup.definition
    as_dict: ToolDefinitionDict = definition.to_dict()
    schema: JsonObject = definition.parameters
    properties = schema.get("properties")
    if isinstance(properties, dict):
        print(sorted(properties), as_dict["name"], definition.metadata)

    session = agent.session()
    session.run_sync("again")
    state: SessionState = session.export_state()
    texts(state["history"])
    if state["waiting"] is not None:
        print(sorted(state["waiting"]))
    print(result.output)


def answer_from(messages: Messages, info: FunctionModelInfo) -> dict[str, JsonValue]:
    """A model function reading what a request offers."""
    offered: list[ToolDefinitionDict] = info["tools"].to_list()
    first: ToolDefinitionDict | None = info["tools"][0] if len(info["tools"]) else None
    last = messages[-1]
    return {"text": f"{len(offered)} {first['name'] if first else ''} {last['kind']} {info['step']}"}


def a_function_model() -> None:
    create_agent(model=FunctionModel(answer_from)).run_sync("go")
