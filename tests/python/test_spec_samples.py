# mypy: disable-error-code="no-redef,no-untyped-def"
# (The samples are the specification's code, verbatim: one redefines `deploy`, one leaves a
# parameter unannotated.)
"""Every sample of spec/python-tools.md, as written, run against the package.

Each test holds one sample verbatim (between the ``# --- sample`` markers) and then uses
what it defines the way the specification describes.
"""

from __future__ import annotations

import asyncio

import pytest
from conftest import call, calls_then_text, returns

# --- sample: Function Tools
import asyncio

from starweaver import create_agent, tool
from starweaver.testing import TestModel


@tool
async def add(left: int, right: int) -> dict[str, int]:
    await asyncio.sleep(0)
    return {"total": left + right}


async def main() -> None:
    model = TestModel.responses(
        [
            TestModel.tool_call_response(
                [{"id": "call_add", "name": "add", "arguments": {"left": 2, "right": 3}}]
            ),
            {"text": "done"},
        ]
    )
    result = await create_agent(model=model, tools=[add]).run("Add two numbers")
    assert result.output == "done"
# --- end sample


def test_function_tools_sample() -> None:
    asyncio.run(main())


def test_raw_callables_go_through_the_same_inference_path() -> None:
    async def multiply(left: int, right: int) -> int:
        return left * right

    async def go() -> None:
        agent = create_agent(model=calls_then_text([call("c1", "multiply", {"left": 6, "right": 7})]), tools=[multiply])
        result = await agent.run("multiply")
        assert returns(result.messages)[0]["content"] == 42
        assert agent.definitions[0].parameters == tool(multiply).definition.parameters

    asyncio.run(go())


# --- sample: Argument Styles (typed keyword parameters)
@tool
async def lookup(ticket_id: str, include_history: bool = False) -> dict[str, object]:
    return {"ticket_id": ticket_id, "include_history": include_history}
# --- end sample

# --- sample: Argument Styles (a single Pydantic model)
from pydantic import BaseModel

from starweaver import tool


class TicketArgs(BaseModel):
    ticket_id: str
    include_history: bool = False


@tool
async def fetch_ticket(args: TicketArgs) -> dict[str, object]:
    return {"ticket_id": args.ticket_id, "include_history": args.include_history}
# --- end sample

# --- sample: Argument Styles (a dynamic shape)
@tool(parameters_schema={"type": "object", "additionalProperties": True})
async def inspect_payload(args: dict[str, object]) -> dict[str, object]:
    return {"keys": sorted(args)}
# --- end sample


def test_argument_styles_samples() -> None:
    async def go() -> None:
        model = calls_then_text(
            [
                call("c1", "lookup", {"ticket_id": "T-1"}),
                call("c2", "fetch_ticket", {"ticket_id": "T-2", "include_history": True}),
                call("c3", "inspect_payload", {"zeta": 1, "alpha": 2}),
            ]
        )
        result = await create_agent(model=model, tools=[lookup, fetch_ticket, inspect_payload]).run("go")
        assert [r["content"] for r in returns(result.messages)] == [
            {"ticket_id": "T-1", "include_history": False},
            {"ticket_id": "T-2", "include_history": True},
            {"keys": ["alpha", "zeta"]},
        ]

    asyncio.run(go())
    assert lookup.definition.parameters["required"] == ["ticket_id"]
    assert fetch_ticket.definition.parameters["properties"] == TicketArgs.model_json_schema()["properties"] | {
        "ticket_id": {"type": "string"},
        "include_history": {"default": False, "type": "boolean"},
    }
    assert inspect_payload.definition.parameters == {"type": "object", "additionalProperties": True}


def test_explicit_schemas_are_checked_as_the_spec_lists() -> None:
    from starweaver import RegistrationError

    cases: dict[str, tuple[dict[str, object], str]] = {
        "top level": ({"type": "array"}, "/type"),
        "properties": ({"type": "object", "properties": {"a": 1}}, "/properties/a"),
        "required": ({"type": "object", "properties": {}, "required": ["a"]}, "/required/0"),
        "additionalProperties": ({"type": "object", "additionalProperties": "yes"}, "/additionalProperties"),
    }
    for label, (schema, path) in cases.items():
        with pytest.raises(RegistrationError, match=f"at `{path}`"):

            @tool(parameters_schema=schema)
            async def bad(args: dict[str, object]) -> None: ...

        assert label
    with pytest.raises(RegistrationError, match="not JSON-serialisable"):

        @tool(parameters_schema={"type": "object", "default": object()})
        async def unserialisable(args: dict[str, object]) -> None: ...


# --- sample: Tool Context
from starweaver import ToolContext, tool


@tool(parameters_schema={"type": "object", "properties": {}})
async def deploy(ctx: ToolContext, args: dict[str, object]) -> dict[str, bool]:
    return {"ok": not ctx.is_cancelled()}
# --- end sample

context_deploy = deploy  # the approval sample below defines its own `deploy`


def test_tool_context_sample() -> None:
    async def go() -> None:
        result = await create_agent(model=calls_then_text([call("c1", "deploy")]), tools=[context_deploy]).run("go")
        assert returns(result.messages)[0]["content"] == {"ok": True}

    asyncio.run(go())


def test_a_business_parameter_named_context_is_ordinary() -> None:
    @tool
    async def annotate(context: str) -> str:
        return context.upper()

    assert annotate.definition.parameters["required"] == ["context"]


def test_tool_context_must_precede_business_arguments() -> None:
    from starweaver import RegistrationError

    with pytest.raises(RegistrationError, match="`ToolContext` must be the first parameter"):

        @tool
        async def late(name: str, ctx: ToolContext) -> None: ...


# --- sample: Class Tools
from starweaver import BaseTool, ToolContext


class DeployTool(BaseTool):
    name = "deploy"
    description = "Deploy the current release."

    def __init__(self) -> None:
        super().__init__(
            parameters_schema={"type": "object", "properties": {}, "additionalProperties": False}
        )

    async def call(self, ctx: ToolContext, args: dict[str, object]) -> dict[str, bool]:
        return {"ok": not ctx.is_cancelled()}
# --- end sample


def test_class_tools_sample() -> None:
    async def go() -> None:
        tool_object = DeployTool()
        assert tool_object.definition.description == "Deploy the current release."
        result = await create_agent(model=calls_then_text([call("c1", "deploy")]), tools=[tool_object]).run("go")
        assert returns(result.messages)[0]["content"] == {"ok": True}

    asyncio.run(go())


# --- sample: Parallel Execution
@tool(sequential=True)
async def append_audit_line(line: str) -> dict[str, bool]:
    return {"written": True}
# --- end sample


def test_parallel_execution_sample() -> None:
    assert append_audit_line.definition.sequential is True

    async def go() -> None:
        model = calls_then_text([call("c1", "append_audit_line", {"line": "a"}), call("c2", "append_audit_line", {"line": "b"})])
        result = await create_agent(model=model, tools=[append_audit_line]).run("go")
        assert [r["tool_call_id"] for r in returns(result.messages)] == ["c1", "c2"]

    asyncio.run(go())


def test_strict_tools_need_a_description_at_registration() -> None:
    from starweaver import RegistrationError

    with pytest.raises(RegistrationError, match="strict tools need a description"):

        @tool(strict=True)
        async def undocumented(x: int) -> int:
            return x

    @tool(strict=True)
    async def documented(x: int) -> int:
        """Echo x."""
        return x

    assert documented.definition.strict is True


# --- sample: Structured Results
from starweaver import ToolResult, tool


@tool(parameters_schema={"type": "object", "properties": {}})
async def inspect_release(args: dict[str, object]) -> ToolResult:
    return ToolResult(
        {"raw": "application record"},
        metadata={"audit": "release"},
        app_value={"release_id": 42},
        model_content={"summary": "release is ready"},
        user_content={"markdown": "**Ready**"},
        private_metadata={"trace_id": "host-only"},
    )
# --- end sample


def test_structured_results_sample() -> None:
    async def go() -> None:
        model = calls_then_text([call("c1", "inspect_release")])
        result = await create_agent(model=model, tools=[inspect_release]).run("go")
        part = returns(result.messages)[0]
        assert part["content"] == {"summary": "release is ready"}
        assert part["metadata"] == {"audit": "release"}
        assert part["app_value"] == {"release_id": 42}
        assert part["user_content"] == {"markdown": "**Ready**"}
        assert part["private_metadata"] == {"trace_id": "host-only"}
        sent = repr(model.requests[1])
        for host_only in ("app_value", "user_content", "private_metadata", "host-only", "application record"):
            assert host_only not in sent
        event = next(e for e in result.events if e["type"] == "tool_return")
        assert event["private_metadata"] == {"trace_id": "host-only"}

    asyncio.run(go())


# --- sample: Approval resume
from starweaver import ApprovalRequired, ToolContext, create_agent, tool


@tool(parameters_schema={"type": "object", "properties": {}})
async def deploy(ctx: ToolContext, args: dict[str, object]) -> dict[str, bool]:
    if ctx.approval is None:
        raise ApprovalRequired("deploy production", metadata={"risk": "high"})
    return {"approved": True}


async def run_with_approval(model) -> None:
    async with create_agent(model=model, tools=[deploy]) as agent:
        async with agent.session() as session:
            waiting = await session.run("deploy")
            assert waiting.status == "waiting"
            decision = waiting.hitl.approvals[0].approve(decided_by="ui")
            result = await session.hitl.resume(approvals=[decision])
    assert result.output
# --- end sample


def test_approval_resume_sample() -> None:
    asyncio.run(run_with_approval(calls_then_text([call("call_deploy", "deploy")], "deployed")))


def test_deferred_helpers_mirror_approvals() -> None:
    from starweaver import CallDeferred

    @tool
    async def batch_job(size: int) -> int:
        raise CallDeferred("queued", metadata={"queue": "nightly"})

    async def go() -> None:
        for resume in ("helper", "canonical"):
            model = calls_then_text([call("c1", "batch_job", {"size": 3})], "finished")
            async with create_agent(model=model, tools=[batch_job]) as agent, agent.session() as session:
                waiting = await session.run("go")
                pending = waiting.hitl.deferred[0]
                assert (pending.reason, pending.metadata) == ("queued", {"queue": "nightly"})
                if resume == "helper":
                    result = await session.hitl.resume(deferred_results=[pending.complete({"rows": 3})])
                else:
                    canonical = {"id": pending.id, "status": "completed", "value": {"rows": 3}}
                    result = await session.resume_after_hitl(deferred_results=[canonical])
                assert result.output == "finished"
                assert returns(result.messages)[0]["content"] == {"rows": 3}

    asyncio.run(go())


def test_approval_required_tools_policy() -> None:
    from starweaver import create_agent_runtime

    runs: list[str] = []

    @tool(metadata={"risk": "network"})
    async def fetch(url: str) -> str:
        runs.append(url)
        return "ok"

    async def go() -> None:
        for rule in ("fetch", {"risk": "network"}, "*"):
            for factory in (create_agent, create_agent_runtime):
                runs.clear()
                agent = factory(model=calls_then_text([call("c1", "fetch", {"url": "u"})]), tools=[fetch], approval_required_tools=[rule])
                session = agent.session()
                waiting = await session.run("go")
                assert waiting.status == "waiting" and runs == []
                await session.hitl.resume(approvals=[waiting.hitl.approvals[0].approve()])
                assert runs == ["u"]

    asyncio.run(go())


# --- sample: Metadata, Retry, And Timeout
@tool(
    metadata={"risk": "network"},
    timeout_ms=5_000,
    max_retries=1,
)
async def fetch_status(url: str) -> dict[str, str]:
    return {"status": "ok", "url": url}
# --- end sample


def test_metadata_retry_and_timeout_sample() -> None:
    definition = fetch_status.definition
    assert (definition.metadata, definition.timeout_ms, definition.max_retries) == ({"risk": "network"}, 5_000, 1)
    assert fetch_status.definition.to_dict()["metadata"] == {"risk": "network"}
