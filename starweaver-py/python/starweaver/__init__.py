"""Starweaver: Python tools on a Rust agent runtime.

Tools written with ``@tool``, ``BaseTool`` or as raw callables get the same
``ToolDefinition`` as Rust ``#[tool]`` functions and run through the same Rust scheduler,
which owns retries, timeouts, cancellation, approvals and events.
"""

from ._native import (
    ApprovalDecision,
    DeferredResult,
    Hitl,
    PendingApproval,
    PendingDeferred,
    RunResult,
    RunStream,
    ToolContext,
    ToolDefinition,
    ToolResult,
    __version__,
)
from .agent import Agent, AgentSession, create_agent, create_agent_runtime
from .exceptions import (
    ApprovalRequired,
    CallDeferred,
    Cancelled,
    DecisionError,
    Execution,
    Feedback,
    FormatError,
    InvalidArguments,
    ModelRetry,
    RegistrationError,
    SessionStateError,
    StarweaverError,
    Timeout,
    ToolError,
    UserError,
)
from .tools import BaseTool, Tool, tool

__all__ = [
    "Agent",
    "AgentSession",
    "ApprovalDecision",
    "ApprovalRequired",
    "BaseTool",
    "CallDeferred",
    "Cancelled",
    "DecisionError",
    "DeferredResult",
    "Execution",
    "Feedback",
    "FormatError",
    "Hitl",
    "InvalidArguments",
    "ModelRetry",
    "PendingApproval",
    "PendingDeferred",
    "RegistrationError",
    "RunResult",
    "RunStream",
    "SessionStateError",
    "StarweaverError",
    "Timeout",
    "Tool",
    "ToolContext",
    "ToolDefinition",
    "ToolError",
    "ToolResult",
    "UserError",
    "__version__",
    "create_agent",
    "create_agent_runtime",
    "tool",
]
