"""Uses every public name; `mypy --strict` and `pyright` (strict) must accept it and agree
with each `assert_type`. Run by `make lint-python`; never executed."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel
from typing_extensions import assert_type

import starweaver
from starweaver import (
    Agent,
    AgentSession,
    ApprovalDecision,
    ApprovalRequired,
    BaseTool,
    CallDeferred,
    Cancelled,
    DecisionError,
    DeferredResult,
    Execution,
    Feedback,
    FormatError,
    Hitl,
    InvalidArguments,
    MemorySessionStore,
    ModelRetry,
    PendingApproval,
    PendingDeferred,
    RegistrationError,
    RenderError,
    RunResult,
    RunStream,
    SessionConflictError,
    SessionStateError,
    SessionStore,
    SessionStoreError,
    SqliteSessionStore,
    StarweaverError,
    Timeout,
    Tool,
    ToolContext,
    ToolDefinition,
    ToolError,
    ToolResult,
    Trace,
    TraceSpan,
    UserError,
    create_agent,
    create_agent_runtime,
    elicitation,
    tool,
)
from starweaver.content import Audio, Document, Image, Part, Resource, ResourceLink, Text, from_dict
from starweaver.mcp import MCPServerHTTP, MCPServerStdio, OAuth
from starweaver.models import (
    AnthropicModel,
    AzureOpenAIModel,
    GeminiModel,
    OpenAIChatModel,
    OpenAIResponsesModel,
    infer_model,
)
from starweaver.otel import export_trace
from starweaver.providers import PROVIDERS, Provider, check, render, render_tools
from starweaver.testing import FunctionModel, Messages, TestModel, tool_context
from starweaver.toolsets import DynamicToolset, Toolset, ToolsetContext
from starweaver.types import (
    AudioContent,
    ContentPart,
    DocumentContent,
    Event,
    FunctionModelInfo,
    ImageContent,
    JsonObject,
    JsonValue,
    LogLevel,
    Message,
    ModelRequestRecord,
    ProviderItemPart,
    RequestPart,
    ResourceContent,
    ResourceLinkContent,
    ResponsePart,
    SessionState,
    SpanEvent,
    TextContent,
    ToolDefinitionDict,
    ToolDefinitionOptions,
    ToolProgressEvent,
)


@dataclasses.dataclass
class Window:
    start: str


@tool
async def add(left: int, right: int) -> dict[str, int]:
    return {"total": left + right}


@tool(sequential=True, timeout_ms=5_000, max_retries=1, metadata={"risk": "low"})
def shout(ctx: ToolContext, text: str) -> str:
    return text.upper() + ctx.tool_call_id


class TicketArgs(BaseModel):
    ticket_id: str


@tool(name="fetch", description="Fetch a ticket.", strict=True)
async def fetch_ticket(args: TicketArgs) -> ToolResult:
    return ToolResult({"id": args.ticket_id}, model_content="found", private_metadata={"trace": 1})


class DeployTool(BaseTool):
    name = "deploy"
    description = "Deploy."

    async def call(self, ctx: ToolContext, args: dict[str, object]) -> dict[str, bool]:
        if ctx.approval is None:
            raise ApprovalRequired("deploy production", metadata={"risk": "high"})
        return {"ok": not ctx.is_cancelled()}


def scripted(messages: Messages, info: FunctionModelInfo) -> dict[str, object]:
    return {"text": f"{len(messages)} messages"}


async def typed_usage() -> None:
    # The decorator keeps the call signature (ParamSpec): names, types and return.
    as_function: Callable[[int, int], Coroutine[Any, Any, dict[str, int]]] = add
    as_sync_function: Callable[[ToolContext, str], str] = shout
    assert_type(await add(1, 2), dict[str, int])
    assert_type(await add(left=1, right=2), dict[str, int])
    assert_type(add.definition, ToolDefinition)
    assert_type(add.definition.name, str)
    assert_type(add.definition.to_dict(), ToolDefinitionDict)
    assert_type(DeployTool().definition, ToolDefinition)
    original: Callable[[int, int], Coroutine[Any, Any, dict[str, int]]] = add.__wrapped__
    # Tools are covariant in what they return, so a list of any tools is a list of tools.
    any_tools: list[Tool[..., object]] = [add, shout]
    assert_type(any_tools[0].definition, ToolDefinition)
    options: ToolDefinitionOptions = {"timeout_ms": 5_000, "metadata": {"risk": "low"}}
    assert_type(ToolDefinition("t", {"type": "object"}, **options), ToolDefinition)
    assert_type(add.definition.return_schema, JsonObject | None)
    typed = ToolDefinition("t", {"type": "object"}, return_schema={"type": "integer"})
    assert_type(typed, ToolDefinition)

    model = TestModel.responses(
        [TestModel.tool_call_response([{"id": "c", "name": "add", "arguments": {}}]), {"text": "ok"}]
    )
    assert_type(model.requests, list[ModelRequestRecord])
    agent = create_agent(
        model=model,
        tools=[add, shout, fetch_ticket, DeployTool(), len],
        approval_required_tools=["deploy", {"risk": "high"}, "*"],
    )
    assert_type(agent, Agent)
    assert_type(create_agent_runtime(model=FunctionModel(scripted)), Agent)
    result = await agent.run("go")
    assert_type(result, RunResult)
    stream = agent.run_stream("go")
    events = [event async for event in stream]
    assert_type(events, list[Event])
    assert_type(await stream.result(), RunResult)
    assert_type(result.status, Literal["completed", "waiting", "failed", "cancelled"])
    assert_type(result.finish_reason, Literal["stop", "tool_calls", "length"] | None)
    assert_type(agent.run_stream("go", tools=[shout]), RunStream)
    assert_type(agent.session().run_stream("go", toolsets=[]), RunStream)
    ctx = tool_context(deps={"db": 1}, approval="alice")
    assert_type(ctx, ToolContext[dict[str, int]])
    assert_type(tool_context(approval=True).approval, ApprovalDecision | None)
    assert_type(result.output, str | None)
    assert_type(result.hitl, Hitl)
    assert_type(result.messages, list[Message])
    assert_type(result.events, list[Event])
    for event in result.events:
        if event["type"] == "tool_progress":
            assert_type(event, ToolProgressEvent)
            assert_type(event["progress"], float)
        elif event["type"] == "tool_log":
            assert_type(event["level"], LogLevel)
    assert_type(ctx.report_progress(1, total=2, message="half"), None)
    assert_type(ctx.log("warning", "slow", data={"ms": 900}), None)
    answer = await ctx.elicit("Where to?", Window)
    assert_type(answer, elicitation.Accepted[Window] | elicitation.Declined | elicitation.Cancelled)
    if isinstance(answer, elicitation.Accepted):
        assert_type(answer.data, Window)
    assert_type(await ctx.sample("hi", max_tokens=10), elicitation.Sampled)
    assert_type(result.trace.spans[0].events, list[SpanEvent])
    first = result.messages[0]
    if first["kind"] == "request":
        assert_type(first["parts"], list[RequestPart])
    for part in result.messages[-1]["parts"]:
        if part["kind"] == "tool_call":
            assert_type(part["arguments"], JsonObject)
    async with agent as same, same.session() as session:
        assert_type(session, AgentSession)
        waiting = await session.run("deploy")
        pending = waiting.hitl.approvals[0]
        assert_type(pending, PendingApproval)
        decision = pending.approve(decided_by="ui", override_arguments={"a": 1}, metadata={"why": "ok"})
        assert_type(decision, ApprovalDecision)
        assert_type(pending.deny("no"), ApprovalDecision)
        deferred = waiting.hitl.deferred[0]
        assert_type(deferred, PendingDeferred)
        assert_type(deferred.complete({"rows": 1}), DeferredResult)
        assert_type(deferred.fail("boom"), DeferredResult)
        assert_type(await session.hitl.resume(approvals=[decision]), RunResult)
        assert_type(await session.resume_after_hitl(approvals=[{"id": "x", "approved": True}]), RunResult)
        assert_type(session.pending, Hitl | None)
        assert_type(session.export_state(), SessionState)
        assert_type(session.messages, list[Message])
        session_stream = session.run_stream("again")
        assert_type(session_stream, RunStream)
        async for event in session_stream:
            assert_type(event, Event)
            if event["type"] == "run_complete":
                assert_type(event["output"], JsonValue)
        assert_type(await session_stream.result(), RunResult)
        assert_type(same.session(state=session.export_state()), AgentSession)

    # Session stores: one argument selects SQLite (a path) or any store object.
    stored = create_agent_runtime(model=FunctionModel(scripted), session_store="sessions.db")
    assert_type(create_agent_runtime(model=FunctionModel(scripted), session_store=MemorySessionStore()), Agent)
    sqlite_store = SqliteSessionStore("sessions.db")
    assert_type(sqlite_store.path, Path)
    assert_type(stored.session_store, SessionStore)
    kept = stored.session(session_id="ticket-42")
    assert_type(kept.session_id, str | None)
    assert_type(stored.session_store.load("ticket-42"), SessionState | None)
    assert_type(stored.session_store.revision("ticket-42"), int)
    assert_type(stored.session_store.ids(), list[str])
    assert_type(stored.session_store.delete("ticket-42"), bool)

    # Traces.
    trace = result.trace
    assert_type(trace, Trace)
    assert_type(trace.duration_ms, float)
    assert_type(trace.started_at_unix_us, int)
    span = trace.spans[0]
    assert_type(span, TraceSpan)
    assert_type(span.kind, str)
    assert_type(span.parent, int | None)
    assert_type(span.outcome, str | None)
    assert_type(str(trace), str)
    export_trace(trace)

    # Provider formats and their checker.
    provider: Provider = PROVIDERS[0]
    rendered = render(add, provider, strict=None)
    assert_type(rendered, JsonObject)
    assert_type(add.definition.render("gemini", strict=True), JsonObject)
    assert_type(render_tools([add, DeployTool()], "anthropic"), list[JsonObject])
    assert_type(check("openai-responses", rendered), list[str])
    assert_type(create_agent(model=model, tools=[add], require_parameter_descriptions=True), Agent)

    errors: list[type[StarweaverError]] = [
        ToolError,
        InvalidArguments,
        ModelRetry,
        Feedback,
        UserError,
        Execution,
        ApprovalRequired,
        CallDeferred,
        Cancelled,
        Timeout,
        RegistrationError,
        DecisionError,
        FormatError,
        SessionStateError,
        SessionConflictError,
        SessionStoreError,
        RenderError,
    ]
    assert_type(errors, list[type[StarweaverError]])
    assert_type(starweaver.__version__, str)

    chat = OpenAIChatModel("gpt-4.1-mini", base_url="http://127.0.0.1:1/v1", temperature=0.0, tool_choice="required")
    models = [
        chat,
        OpenAIResponsesModel("gpt-4.1-mini", max_retries=4, extra_body={"user": "u"}),
        AnthropicModel("claude-sonnet-4-5", max_tokens=1024, tool_choice={"tool": "add"}),
        GeminiModel("gemini-2.5-flash", timeout=30.0, headers={"x": "y"}, query={"alt": "sse"}, api_key_header="x-k"),
        AzureOpenAIModel("gpt-4.1-mini", api_version="2024-10-21", base_url="https://x/openai/deployments/y"),
        infer_model("anthropic:claude-sonnet-4-5"),
    ]
    assert_type(chat.name, str)
    assert_type(create_agent(model=models[0], tools=[add]), Agent)
    assert_type(create_agent(model="openai:gpt-4.1-mini"), Agent)
    assert_type(create_agent(model="anthropic:claude-sonnet-4-5", tool_search="native"), Agent)
    searched: ProviderItemPart = {"kind": "provider_item", "protocol": "anthropic", "item": {"type": "server_tool_use"}}
    response_part: ResponsePart = searched
    assert response_part["kind"] == "provider_item"
    ran = await create_agent(model=model).run("hi")
    assert_type(ran.usage, starweaver.Usage)
    assert_type(ran.usage.output_tokens, int)
    assert_type(ran.error, starweaver.RunFailedError | None)
    assert_type(ran.exception, starweaver.RunFailedError | None)
    ran.raise_for_status()
    model_errors: list[type[starweaver.ModelError]] = [
        starweaver.MissingApiKeyError,
        starweaver.ModelConnectionError,
        starweaver.ModelTimeoutError,
        starweaver.ModelHTTPError,
        starweaver.QuotaExhaustedError,
        starweaver.RefusalError,
        starweaver.ContentFilterError,
        starweaver.UnknownFinishReasonError,
        starweaver.InvalidResponseError,
        starweaver.StreamInterruptedError,
    ]
    assert_type(model_errors, list[type[starweaver.ModelError]])
    assert issubclass(starweaver.ModelError, starweaver.RunFailedError)

    async def listed(ctx: ToolsetContext) -> list[Tool[..., object]]:
        assert_type(ctx["step"], int)
        return []

    ops = Toolset("ops", [add], id="ops-v1").prefixed("ops_").filtered(lambda d: d.name != "x").approval_required()
    assert_type(ops, Toolset)
    assert_type(ops.definitions, list[ToolDefinition] | None)
    dynamic = DynamicToolset("phases", listed)
    with_sets = create_agent(model=model, tools=[add], toolsets=[ops, dynamic.renamed({"a": "b"})])
    assert_type(await with_sets.run("go", tools=[shout], toolsets=[dynamic]), RunResult)
    assert_type(await with_sets.session().run("go", toolsets=[ops]), RunResult)
    assert issubclass(starweaver.ToolsetError, StarweaverError)
    echo = MCPServerStdio("echo", "python", args=["server.py"], env={"X": "1"}, cwd=Path("."), timeout_ms=5_000)
    assert_type(echo.prefixed("echo_"), Toolset)
    async with echo as connected:
        assert_type(connected, MCPServerStdio)
        assert_type(create_agent(model=model, toolsets=[connected]), Agent)

    # OAuth for HTTP servers: a callback gets the authorization URL, returns the redirect.
    async def approve(url: str) -> str:
        return url

    oauth = OAuth(
        redirect_uri="http://localhost:3000/callback", on_authorize=approve, scopes=["read"], store="tokens.db"
    )
    remote = MCPServerHTTP("docs", "https://mcp.example.com/mcp", auth=oauth)
    assert_type(remote.auth, OAuth | None)
    assert_type(OAuth.client_credentials("id", "secret", store=sqlite_store), OAuth)
    assert_type(CallDeferred("later", metadata={"q": 1}).metadata, dict[str, object])
    assert_type(Tool(len).definition, ToolDefinition)
    del as_function, as_sync_function, original


def sync_usage() -> None:
    agent = create_agent(model=TestModel.responses([{"text": "ok"}]))
    assert_type(agent.run_sync("go"), RunResult)
    assert_type(agent.session().run_sync("go", tools=[shout]), RunResult)


@tool
def chart() -> list[Part]:
    return [Text("the chart"), Image(data=b"png", media_type="image/png"), Image(url="https://e.com/a.png")]


def content_usage() -> None:
    pdf = Document(data=b"%PDF", media_type="application/pdf", title="t", filename="f.pdf")
    assert_type(ToolResult({"id": 1}, model_content=[pdf, Resource("file:///c", blob=b"c")]), ToolResult)
    assert_type(Text("a").to_dict(), TextContent)
    assert_type(Image(url="u").to_dict(), ImageContent)
    assert_type(Audio(data=b"", media_type="audio/wav").to_dict(), AudioContent)
    assert_type(Document(url="u").to_dict(), DocumentContent)
    assert_type(ResourceLink("u", "n", description="d", media_type="text/plain").to_dict(), ResourceLinkContent)
    assert_type(Resource("u", text="t", media_type="text/plain").to_dict(), ResourceContent)
    as_dict: ContentPart = pdf.to_dict()
    assert_type(from_dict(as_dict), Part)
    assert_type(Image(data=b"png", media_type="image/png").data, bytes | None)


class Audit(starweaver.Hooks):
    """Overrides type-check against the base class's signatures, sync or async."""

    def before_call(self, ctx: starweaver.ToolContext, call: starweaver.ToolCall) -> dict[str, Any] | None:
        assert_type(call.arguments, JsonObject)
        assert_type(call.name, str)
        return None

    async def after_call(
        self, ctx: starweaver.ToolContext, call: starweaver.ToolCall, result: ToolResult
    ) -> ToolResult | None:
        return result

    def prepare_tools(
        self, ctx: starweaver.ToolContext, definitions: list[starweaver.ToolDefinition]
    ) -> list[starweaver.ToolDefinition]:
        return definitions[:1]


def hooks_usage(model: TestModel) -> None:
    agent = create_agent(model=model, hooks=[Audit()])
    assert_type(agent.run_sync("go", hooks=[Audit()]), RunResult)
    assert_type(starweaver.Toolset("ops").with_hooks(Audit()), starweaver.Toolset)
