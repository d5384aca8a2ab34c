"""Starweaver: Python tools on a Rust agent runtime.

Tools written with ``@tool``, ``BaseTool`` or as raw callables get the same
``ToolDefinition`` as Rust ``#[tool]`` functions and run through the same Rust scheduler,
which owns retries, timeouts, cancellation, approvals and events.
"""

from typing import TYPE_CHECKING

from ._native import (
    ApprovalDecision,
    ConcurrencyLimit,
    DeferredResult,
    ElicitationResponse,
    Hitl,
    MemorySessionStore,
    PendingApproval,
    PendingDeferred,
    PendingElicitation,
    RunResult,
    RunStream,
    SessionStore,
    SqliteSessionStore,
    ToolContext,
    ToolDefinition,
    ToolResult,
    Trace,
    TraceSpan,
    Usage,
    UsageLimits,
    __version__,
)
from .agent import Agent, AgentSession, create_agent, create_agent_runtime
from .exceptions import (
    ApprovalRequired,
    CallDeferred,
    Cancelled,
    ContentFilterError,
    DecisionError,
    ElicitationRequired,
    Execution,
    Feedback,
    FormatError,
    InvalidArguments,
    InvalidResponseError,
    MissingApiKeyError,
    ModelConnectionError,
    ModelError,
    ModelHTTPError,
    ModelRetry,
    ModelTimeoutError,
    OutputValidationError,
    QuotaExhaustedError,
    RefusalError,
    RegistrationError,
    RenderError,
    RunFailedError,
    SessionConflictError,
    SessionStateError,
    SessionStoreError,
    StarweaverError,
    StreamInterruptedError,
    Timeout,
    ToolError,
    ToolsetError,
    UnknownFinishReasonError,
    UsageLimitExceeded,
    UserError,
)
from .hooks import Hooks, ToolCall
from .output import NativeOutput, PromptedOutput
from .tools import BaseTool, Tool, tool
from .toolsets import DynamicToolset, Toolset

if TYPE_CHECKING:
    from .types import JsonValue

__all__ = [
    "Agent",
    "AgentSession",
    "ApprovalDecision",
    "ApprovalRequired",
    "BaseTool",
    "CallDeferred",
    "Cancelled",
    "ConcurrencyLimit",
    "ContentFilterError",
    "DecisionError",
    "DeferredResult",
    "DynamicToolset",
    "ElicitationRequired",
    "ElicitationResponse",
    "Execution",
    "Feedback",
    "FormatError",
    "Hitl",
    "Hooks",
    "InvalidArguments",
    "InvalidResponseError",
    "JsonValue",
    "MemorySessionStore",
    "MissingApiKeyError",
    "ModelConnectionError",
    "ModelError",
    "ModelHTTPError",
    "ModelRetry",
    "ModelTimeoutError",
    "NativeOutput",
    "OutputValidationError",
    "PendingApproval",
    "PendingDeferred",
    "PendingElicitation",
    "PromptedOutput",
    "QuotaExhaustedError",
    "RefusalError",
    "RegistrationError",
    "RenderError",
    "RunFailedError",
    "RunResult",
    "RunStream",
    "SessionConflictError",
    "SessionStateError",
    "SessionStore",
    "SessionStoreError",
    "SqliteSessionStore",
    "StarweaverError",
    "StreamInterruptedError",
    "Timeout",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolDefinition",
    "ToolError",
    "ToolResult",
    "Toolset",
    "ToolsetError",
    "Trace",
    "TraceSpan",
    "UnknownFinishReasonError",
    "Usage",
    "UsageLimitExceeded",
    "UsageLimits",
    "UserError",
    "__version__",
    "create_agent",
    "create_agent_runtime",
    "tool",
]


def __getattr__(name: str) -> object:
    # `JsonValue` lives in `starweaver.types`, which loads typing_extensions: only on first
    # use, so `import starweaver` stays cheap.
    if name == "JsonValue":
        from .types import JsonValue

        return JsonValue
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
