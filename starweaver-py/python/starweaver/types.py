"""The shapes of the runtime's canonical JSON, as ``TypedDict``s: messages and their parts,
events, model requests, tool definitions and exported session state. They describe the
dicts the runtime hands out (``result.messages``, ``result.events``, ``session.export_state()``,
``tool.definition.to_dict()``, ``TestModel.requests``); nothing is validated against them.
Any other JSON value the runtime hands out is a ``JsonValue``. ``DepsT`` and ``OutputT`` are
the type parameters of ``Agent``, ``ToolContext`` and ``RunResult``.

    from starweaver.types import Message

    def texts(messages: list[Message]) -> list[str]:
        return [p["text"] for m in messages if m["kind"] == "response" for p in m["parts"] if p["kind"] == "text"]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Generic, Literal, TypeAlias, Union

# typing_extensions.TypedDict, so pydantic can validate against these on Python < 3.12;
# its TypeVar takes a default (PEP 696) on every Python version.
from typing_extensions import NotRequired, TypeAliasType, TypedDict, TypeVar

if TYPE_CHECKING:
    from ._native import ConcurrencyLimit, ToolDefinitions, UsageLimits
    from .hooks import HookLike
    from .tools import ToolLike
    from .toolsets import Toolset

__all__ = [
    "ApprovalRequestedEvent",
    "AudioContent",
    "ConcurrencyLimitDict",
    "ContentPart",
    "DeferredRequestedEvent",
    "DepsT",
    "DocumentContent",
    "ElicitationRequestedEvent",
    "Event",
    "FunctionModelInfo",
    "ImageContent",
    "JsonObject",
    "JsonValue",
    "LogLevel",
    "Message",
    "ModelOptions",
    "ModelRequestEvent",
    "ModelRequestRecord",
    "ModelResponseEvent",
    "ModelSettings",
    "OutputT",
    "PendingItem",
    "ProviderItemPart",
    "RequestMessage",
    "RequestPart",
    "ResourceContent",
    "ResourceLinkContent",
    "ResponseMessage",
    "ResponsePart",
    "RunCancelledEvent",
    "RunCompleteEvent",
    "RunFailedEvent",
    "RunOptions",
    "RunResumedEvent",
    "RunStartEvent",
    "SamplingMessageDict",
    "SessionState",
    "SpanEvent",
    "SystemPromptPart",
    "TextContent",
    "TextDeltaEvent",
    "TextPart",
    "ToolCallDeltaEvent",
    "ToolCallEvent",
    "ToolCallPart",
    "ToolChoice",
    "ToolDefinitionDict",
    "ToolDefinitionOptions",
    "ToolLogEvent",
    "ToolOptions",
    "ToolProgressEvent",
    "ToolRefusedEvent",
    "ToolRetryEvent",
    "ToolReturnEvent",
    "ToolReturnPart",
    "ToolsLoadedEvent",
    "UsageDict",
    "UserPromptPart",
    "WaitingEvent",
]

DepsT = TypeVar("DepsT", default=None)
"""The type of an agent's dependencies, as ``ctx.deps`` gives them: ``None`` for an agent
without (``create_agent(deps_type=..., deps=...)`` sets it; a bare ``ToolContext`` is
``ToolContext[None]``)."""

OutputT = TypeVar("OutputT", default=str)
"""The type of a run's output (``RunResult.output``): ``str``, a text answer, by default."""

if TYPE_CHECKING:
    JsonValue: TypeAlias = Union[str, int, float, bool, list["JsonValue"], dict[str, "JsonValue"], None]
    """Any JSON value, as the runtime hands JSON out (objects as ``dict``, arrays as ``list``)."""
else:
    # The same alias as pydantic (validating against these TypedDicts) resolves a recursive
    # one: by name, in this module.
    JsonValue = TypeAliasType("JsonValue", "Union[str, int, float, bool, list[JsonValue], dict[str, JsonValue], None]")

JsonObject: TypeAlias = dict[str, JsonValue]
"""A JSON object: a tool's arguments, metadata, a JSON Schema."""


class SystemPromptPart(TypedDict):
    kind: Literal["system_prompt"]
    text: str


class UserPromptPart(TypedDict):
    kind: Literal["user_prompt"]
    text: str


class TextContent(TypedDict):
    """A text content part (``starweaver.content.Text``)."""

    kind: Literal["text"]
    text: str


class _MediaFields(TypedDict):
    data: NotRequired[str]
    url: NotRequired[str]
    media_type: NotRequired[str]


class ImageContent(_MediaFields):
    """An image content part: ``data`` (base64) with ``media_type``, or ``url``."""

    kind: Literal["image"]


class AudioContent(TypedDict):
    """An audio content part: ``data`` in base64."""

    kind: Literal["audio"]
    data: str
    media_type: str


class DocumentContent(_MediaFields):
    """A document content part (a PDF or another file): ``data`` (base64) with
    ``media_type``, or ``url``."""

    kind: Literal["document"]
    title: NotRequired[str]
    filename: NotRequired[str]


class ResourceLinkContent(TypedDict):
    """A link to a resource (MCP's ``resource_link``)."""

    kind: Literal["resource_link"]
    uri: str
    name: str
    description: NotRequired[str]
    media_type: NotRequired[str]


class ResourceContent(TypedDict):
    """An embedded resource: ``text``, or ``blob`` in base64."""

    kind: Literal["resource"]
    uri: str
    media_type: NotRequired[str]
    text: NotRequired[str]
    blob: NotRequired[str]


ContentPart: TypeAlias = Union[
    TextContent, ImageContent, AudioContent, DocumentContent, ResourceLinkContent, ResourceContent
]
"""One part of a tool's model-facing content; a ``tool_return``'s ``content`` may be a list of them."""


class _ToolReturnFields(TypedDict):
    tool_call_id: str
    name: str
    #: What the model sees: the tool's value, its ``model_content`` (a list of
    #: ``ContentPart`` for rich content), or for an error ``{"kind", "message", "success": False, ...}``.
    content: JsonValue
    is_error: bool
    metadata: JsonObject
    value: NotRequired[JsonValue]
    app_value: NotRequired[JsonValue]
    user_content: NotRequired[JsonValue]
    private_metadata: NotRequired[JsonValue]


class ToolReturnPart(_ToolReturnFields):
    """A tool's return. The host-only fields (``value``, ``app_value``, ``user_content``,
    ``private_metadata``) appear only in histories and events, never in a model request."""

    kind: Literal["tool_return"]


class TextPart(TypedDict):
    kind: Literal["text"]
    text: str


class ToolCallPart(TypedDict):
    kind: Literal["tool_call"]
    id: str
    name: str
    arguments: JsonObject


class ProviderItemPart(TypedDict):
    """An item of the provider's own (its tool search's call and result, with
    ``tool_search="native"``), kept as it came: the protocol that sent it (``"anthropic"``,
    ``"openai-responses"``) gets it back in later requests; other protocols leave it out."""

    kind: Literal["provider_item"]
    protocol: str
    item: JsonObject


RequestPart: TypeAlias = Union[SystemPromptPart, UserPromptPart, ToolReturnPart]
ResponsePart: TypeAlias = Union[TextPart, ToolCallPart, ProviderItemPart]


class RequestMessage(TypedDict):
    kind: Literal["request"]
    parts: list[RequestPart]


class ResponseMessage(TypedDict):
    kind: Literal["response"]
    parts: list[ResponsePart]


Message: TypeAlias = Union[RequestMessage, ResponseMessage]


class ConcurrencyLimitDict(TypedDict):
    """A shared concurrency limit in a definition's dict form."""

    name: str
    max_running: int


class ToolDefinitionDict(TypedDict):
    """``ToolDefinition.to_dict()``; model requests carry the first five keys."""

    name: str
    description: str | None
    parameters: JsonObject
    strict: bool | None
    sequential: bool
    defer_loading: NotRequired[bool]
    """Kept out of model requests until ``search_tools`` finds it (present when true)."""
    timeout_ms: NotRequired[int | None]
    max_return_chars: NotRequired[int]
    """The most characters of model-facing content a return may have, when limited."""
    max_retries: NotRequired[int | None]
    max_uses: NotRequired[int]
    """How many times one run may call the tool, when bounded."""
    max_concurrency: NotRequired[int | ConcurrencyLimitDict]
    """How many of its calls may run at once: a number (a limit of its own) or a shared limit."""
    metadata: NotRequired[JsonObject]
    return_schema: NotRequired[JsonObject]
    """The JSON Schema of the value the tool returns, when it declares one; never sent to
    models (MCP's ``outputSchema``)."""


class ToolDefinitionOptions(TypedDict, total=False):
    """The options of a ``ToolDefinition`` past its name and parameters: the keyword
    arguments of ``ToolDefinition(...)``, and (with ``name`` and the two schemas) of
    ``@tool(...)``. The runtime reads them with the same rules as the definition's JSON."""

    description: str | None
    strict: bool | None
    sequential: bool
    defer_loading: bool
    """Keeps the definition out of model requests until ``search_tools`` finds it (or the
    model calls the tool by name)."""
    timeout_ms: int | None
    max_return_chars: int | None
    max_retries: int | None
    max_uses: int | None
    max_concurrency: int | ConcurrencyLimit | None
    """At most this many of its calls run at once across the process: a number (a limit of
    its own) or a shared ``ConcurrencyLimit``."""
    metadata: Mapping[str, object] | None


class ToolOptions(ToolDefinitionOptions, total=False):
    """The options of ``@tool(...)``, ``Tool(...)`` and ``BaseTool.__init__``: the
    definition's options, which the runtime checks, and three the Python layer reads itself
    (``name`` and the two schemas)."""

    name: str | None
    parameters_schema: Mapping[str, object] | None
    return_schema: Mapping[str, object] | Literal[False] | None
    """The JSON Schema of the returned value: by default (``None``) from the return
    annotation, ``False`` for none."""


class RunOptions(TypedDict, Generic[DepsT], total=False):
    """What one run may set beside the agent's own configuration: the keyword arguments
    of ``agent.run(...)``, ``session.run(...)``, their ``run_sync`` and ``run_stream``, and
    ``session.hitl.resume(...)``, besides ``output_type``."""

    deps: DepsT | None
    """The run's dependencies instead of the agent's."""
    tools: Iterable[ToolLike]
    """Tools for this run only, beside the agent's (which stays unchanged)."""
    toolsets: Iterable[Toolset]
    """Toolsets for this run only, beside the agent's."""
    usage_limits: UsageLimits | None
    """Usage limits for this run instead of the agent's."""
    hooks: Iterable[HookLike]
    """Hooks for this run's calls, before the agent's."""


ToolChoice: TypeAlias = Union[Literal["auto", "required", "none"], Mapping[str, str]]
"""``"auto"``, ``"required"``, ``"none"``, or ``{"tool": name}``."""


class ModelSettings(TypedDict, total=False):
    """Where and how to reach a model, and its sampling settings: the keyword arguments of
    ``OpenAIChatModel(...)`` and the other classes in ``starweaver.models``. Times are in
    seconds. The runtime reads them with serde and refuses any other name."""

    base_url: str
    api_key: str
    api_key_env: str
    """The environment variable holding the key, when not the provider's usual one."""
    api_key_header: str
    """The header that carries the key as is, instead of the provider's own."""
    headers: Mapping[str, str]
    query: Mapping[str, str]
    """Extra query parameters on every request."""
    timeout: float
    connect_timeout: float
    read_timeout: float
    max_retries: int
    max_retry_wait: float
    """The longest wait before a retry (60 s by default, never longer than ``timeout``): a
    server asking for longer is not retried."""
    max_response_bytes: int
    """The most bytes one answer may have, whole or streamed (64 MiB by default)."""
    temperature: float
    top_p: float
    max_tokens: int
    seed: int
    tool_choice: ToolChoice
    parallel_tool_calls: bool
    extra_body: Mapping[str, object]
    """Merged into every request body last: anything the provider takes."""


class ModelOptions(ModelSettings, total=False):
    """What the native model takes: the settings, and Azure OpenAI's API version (which
    ``AzureOpenAIModel`` takes as ``api_version``)."""

    azure_api_version: str


class ModelRequestRecord(TypedDict):
    """One request a ``TestModel`` received: exactly what a provider would be sent."""

    messages: list[Message]
    tools: list[ToolDefinitionDict]
    toolset_instructions: NotRequired[list[str]]
    """The instructions of the toolsets whose tools the request offers, sent with the
    agent's (absent when there are none)."""
    output: NotRequired[ToolDefinitionDict]
    """The output's definition, when the run asks for native output (``NativeOutput``)."""


class FunctionModelInfo(TypedDict):
    """What a ``FunctionModel``'s function gets beside the messages, for one request."""

    tools: ToolDefinitions
    """The tools the request offers: a read-only sequence of definition dicts, converted as
    they are read (``to_list()`` gives them all)."""
    toolset_instructions: list[str]
    """The instructions of the toolsets whose tools the request offers."""
    step: int
    run_id: str
    output: NotRequired[ToolDefinitionDict]
    """The output's definition, when the run asks for native output (``NativeOutput``)."""


class UsageDict(TypedDict):
    requests: int
    input_tokens: int
    output_tokens: int
    cached_tokens: int


class _PendingFields(TypedDict):
    id: str
    tool_call_id: str
    tool_name: str
    arguments: JsonValue
    reason: str
    metadata: JsonObject


class PendingItem(_PendingFields):
    """A call waiting for a human (``to_dict()`` of a pending approval, deferred call or
    elicitation; an elicitation's also has the tool's ``message`` and the answer's
    ``schema``)."""

    run_id: str
    message: NotRequired[str]
    schema: NotRequired[JsonObject]


class _EventHead(TypedDict):
    seq: int
    run_id: str


class RunStartEvent(_EventHead):
    type: Literal["run_start"]
    prompt: str


class RunResumedEvent(_EventHead):
    type: Literal["run_resumed"]
    approvals: int
    deferred_results: int
    elicitations: NotRequired[int]


class ModelRequestEvent(_EventHead):
    type: Literal["model_request"]
    step: int
    messages: int


class TextDeltaEvent(_EventHead):
    type: Literal["text_delta"]
    step: int
    text: str


class ToolCallDeltaEvent(_EventHead):
    type: Literal["tool_call_delta"]
    step: int
    index: int
    tool_call_id: NotRequired[str]
    name: NotRequired[str]
    arguments: str


class ModelResponseEvent(_EventHead):
    type: Literal["model_response"]
    step: int
    message: ResponseMessage
    usage: NotRequired[UsageDict]
    finish_reason: NotRequired[Literal["stop", "tool_calls", "length"]]
    """Why the answer ended, when the model says (``"length"``: cut off at the token limit)."""


class ToolRefusedEvent(_EventHead):
    """A toolset left a tool out of the tools of ``step`` (an MCP server's tool with an
    invalid name or schema, say); its other tools are offered."""

    type: Literal["tool_refused"]
    step: int
    toolset: str
    tool: str
    reason: str


class ToolsLoadedEvent(_EventHead):
    """Deferred tools were loaded: their definitions are sent from the next model request
    on, after the tools loaded before them."""

    type: Literal["tools_loaded"]
    names: list[str]
    query: str | None
    """The ``search_tools`` query that found them; ``None`` when the model called a
    deferred tool by name."""


class ToolCallEvent(_EventHead):
    type: Literal["tool_call"]
    tool_call_id: str
    name: str
    override_arguments: NotRequired[JsonValue]
    #: The arguments the call runs with, when a hook rewrote them.
    arguments: NotRequired[JsonObject]
    #: The (last) hook that rewrote the arguments.
    rewritten_by: NotRequired[str]
    #: The hook that answered in the tool's place (the tool did not run).
    answered_by: NotRequired[str]
    #: The concurrency limits that were full when the call came, so it waited for a place
    #: before it started: a shared limit's name, or ``tool:<name>``, ``toolset:<name>``, ``run``.
    queued_for: NotRequired[list[str]]


class ToolRetryEvent(_EventHead):
    type: Literal["tool_retry"]
    tool_call_id: str
    name: str
    attempt: int
    error: str


#: A log message's severity, MCP's levels, least severe first.
LogLevel: TypeAlias = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]


class ToolProgressEvent(_EventHead):
    """``ctx.report_progress``: host-facing, never in a model request. The kept event log
    (``result.events``) holds the last of each call; ``run_stream`` yields every one."""

    type: Literal["tool_progress"]
    tool_call_id: str
    name: str
    progress: float
    total: NotRequired[float]
    message: NotRequired[str]


class ToolLogEvent(_EventHead):
    """``ctx.log``: host-facing, never in a model request."""

    type: Literal["tool_log"]
    tool_call_id: str
    name: str
    level: LogLevel
    message: str
    data: NotRequired[JsonValue]


class SamplingMessageDict(TypedDict):
    """One message of ``ctx.sample(...)``'s conversation."""

    role: Literal["user", "assistant"]
    content: str


class SpanEvent(TypedDict):
    """A moment within a trace span (``TraceSpan.events``): a tool call's last
    ``tool_progress`` (attributes ``progress``, ``total``, ``message``) or a ``tool_log``
    (``level``, ``message``, ``data`` as JSON text)."""

    name: Literal["tool_progress", "tool_log"]
    at_us: int
    attributes: dict[str, str | float]


class ToolReturnEvent(_EventHead, _ToolReturnFields):
    type: Literal["tool_return"]


class ApprovalRequestedEvent(_EventHead, _PendingFields):
    type: Literal["approval_requested"]


class DeferredRequestedEvent(_EventHead, _PendingFields):
    type: Literal["deferred_requested"]


class ElicitationRequestedEvent(_EventHead, _PendingFields):
    """A call asked the user for input in a run with no elicitation handler: the run will
    wait for the answer."""

    type: Literal["elicitation_requested"]
    message: str
    schema: JsonObject


class WaitingEvent(_EventHead):
    type: Literal["waiting"]
    approvals: int
    deferred: int
    elicitations: NotRequired[int]


class RunCompleteEvent(_EventHead):
    type: Literal["run_complete"]
    output: JsonValue
    """The text, or the output type's value as JSON."""
    output_tool: NotRequired[str]
    """The output tool whose call gave ``output``; absent for text."""


class RunFailedEvent(_EventHead):
    type: Literal["run_failed"]
    error: str


class RunCancelledEvent(_EventHead):
    type: Literal["run_cancelled"]


Event: TypeAlias = Union[
    RunStartEvent,
    RunResumedEvent,
    ModelRequestEvent,
    TextDeltaEvent,
    ToolCallDeltaEvent,
    ModelResponseEvent,
    ToolCallEvent,
    ToolRefusedEvent,
    ToolsLoadedEvent,
    ToolRetryEvent,
    ToolProgressEvent,
    ToolLogEvent,
    ToolReturnEvent,
    ApprovalRequestedEvent,
    DeferredRequestedEvent,
    ElicitationRequestedEvent,
    WaitingEvent,
    RunCompleteEvent,
    RunFailedEvent,
    RunCancelledEvent,
]


class SessionState(TypedDict):
    """``session.export_state()``: the history (host-only fields included), the decisions
    already applied, and a waiting run's state, or ``None``."""

    version: int
    history: list[Message]
    decided: list[str]
    waiting: JsonObject | None
    loaded: NotRequired[list[str]]
    """The deferred tools loaded so far, in load order (absent when none was)."""
