"""Exceptions: tool control flow (raise them from a tool) and runtime errors (raised to you).

Tools raise a ``ToolError`` subclass to tell the runtime what to do next (DESIGN.md §7);
any other exception is an unexpected ``Execution`` failure, retried internally, whose
traceback goes to ``private_metadata`` only.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = [  # noqa: RUF022 (the hierarchy's order: tool control flow, then runtime errors)
    "StarweaverError",
    "ToolError",
    "InvalidArguments",
    "ModelRetry",
    "Feedback",
    "UserError",
    "Execution",
    "ApprovalRequired",
    "CallDeferred",
    "ElicitationRequired",
    "Cancelled",
    "Timeout",
    "RegistrationError",
    "DecisionError",
    "FormatError",
    "SessionStateError",
    "SessionConflictError",
    "SessionStoreError",
    "RenderError",
    "ToolsetError",
    "RunFailedError",
    "OutputValidationError",
    "UsageLimitExceeded",
    "ModelError",
    "MissingApiKeyError",
    "ModelConnectionError",
    "ModelTimeoutError",
    "ModelHTTPError",
    "QuotaExhaustedError",
    "RefusalError",
    "ContentFilterError",
    "UnknownFinishReasonError",
    "InvalidResponseError",
    "StreamInterruptedError",
]


class StarweaverError(Exception):
    """The root of every starweaver exception."""


class ToolError(StarweaverError):
    """A tool call that did not produce a value; the subclass says what happens next."""

    message: str
    metadata: dict[str, object]

    def __init__(self, message: str = "", *, metadata: Mapping[str, object] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.metadata = dict(metadata or {})


class InvalidArguments(ToolError):
    """The arguments are wrong: the model sees the error and retries (one retry spent)."""


class ModelRetry(ToolError):
    """Ask the model to retry the call with this message (one retry spent)."""


class Feedback(ToolError):
    """Agent-readable guidance for an expected condition: ``success: false``, ``is_error: false``."""


class UserError(ToolError):
    """The application used the tool wrongly: ``is_error: true``, never retried."""


class Execution(ToolError):
    """An unexpected failure: retried internally up to ``max_retries``."""


class ApprovalRequired(ToolError):
    """Suspend the run until a human approves this call (``ctx.approval`` is then set)."""

    def __init__(self, reason: str = "", *, metadata: Mapping[str, object] | None = None) -> None:
        super().__init__(reason, metadata=metadata)


class CallDeferred(ToolError):
    """Suspend the run until the call's result is supplied from outside."""

    def __init__(self, reason: str = "", *, metadata: Mapping[str, object] | None = None) -> None:
        super().__init__(reason, metadata=metadata)


class ElicitationRequired(ToolError):
    """Raised by ``await ctx.elicit(...)`` in a run with no elicitation handler: the run
    waits with a pending elicitation, and once a resume answers it the tool is called again,
    where asking the same question gives the answer. Let it propagate (re-raise it from a
    broad ``except``); ``metadata`` holds the question for the runtime."""


class Cancelled(ToolError):
    """The call was cancelled (the model sees kind ``cancelled``)."""


class Timeout(ToolError):
    """The call ran out of time (the model sees kind ``timeout``)."""


class RegistrationError(StarweaverError, ValueError):
    """A tool, schema or agent option breaks a registration rule; the message names it."""


class DecisionError(StarweaverError, ValueError):
    """A resume's decisions are unknown, foreign, replayed, duplicated, missing or malformed."""


class FormatError(StarweaverError, ValueError):
    """Canonical JSON (session state, a model script, a history) does not fit its format;
    the message says where."""


class SessionStateError(StarweaverError, RuntimeError):
    """The session cannot do that now (it is waiting, not waiting, or already running)."""


class SessionConflictError(SessionStateError):
    """The session was written to its store by someone else since it was opened (another
    process resumed it); open it again to see what happened."""


class SessionStoreError(StarweaverError, OSError):
    """A session store could not be opened, read or written; the message names the store."""


class RenderError(StarweaverError, ValueError):
    """A tool definition cannot be rendered in a provider's format (forced strict on a schema
    that cannot be strict, a recursive schema for Gemini, ...); the message names it."""


class ToolsetError(StarweaverError, RuntimeError):
    """A toolset could not list its tools when a run started; the message names it."""


class RunFailedError(StarweaverError):
    """A run ended ``failed``: ``result.error`` (or ``result.exception``, the same object)
    gives the failure as this class (or, for a model failure, the ``ModelError`` subclass
    named for it); ``raise_for_status()`` raises it."""


class OutputValidationError(RunFailedError):
    """The model's output failed validation (the output type's, or an output validator's
    ``ModelRetry``) more often than ``output_retries`` allow: the run ended ``failed``.
    ``max_retries`` is that budget; the message ends with the last error the model was shown."""

    max_retries: int

    def __init__(self, message: str, *, max_retries: int = 0) -> None:
        super().__init__(message)
        self.max_retries = max_retries


class UsageLimitExceeded(RunFailedError):
    """Going on would have passed one of the run's ``UsageLimits``, so nothing past it
    started: ``limit`` names it (``"requests"``, ``"tool_calls"``, ``"input_tokens"``,
    ``"output_tokens"``, ``"total_tokens"``), ``max`` is the limit and ``count`` what the run
    had used."""

    limit: str
    max: int
    count: int

    def __init__(self, message: str, *, limit: str = "", max: int = 0, count: int = 0) -> None:  # noqa: A002
        super().__init__(message)
        self.limit = limit
        self.max = max
        self.count = count


class ModelError(RunFailedError):
    """A model could not answer. Provider failures say which provider, the HTTP status, the
    provider's request id and the start of the body; never a credential."""

    def __init__(
        self,
        message: str = "",
        *,
        provider: str | None = None,
        status: int | None = None,
        request_id: str | None = None,
        body: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.provider = provider
        self.status = status
        self.request_id = request_id
        self.body = body


class MissingApiKeyError(ModelError):
    """No API key: the message names the environment variable to set."""


class ModelConnectionError(ModelError):
    """No connection to the provider (refused, reset, DNS), after the retries."""


class ModelTimeoutError(ModelError):
    """A connect, read or total timeout, after the retries."""


class ModelHTTPError(ModelError):
    """An HTTP error status: one that is never retried (400, 401, 403, 404, ...), or the
    last of the retries (408, 409, 429, 5xx)."""


class QuotaExhaustedError(ModelHTTPError):
    """A 429 for a spent quota or billing limit; never retried."""


class RefusalError(ModelError):
    """The model refused to answer."""


class ContentFilterError(ModelError):
    """The provider's content filter stopped the answer."""


class UnknownFinishReasonError(ModelError):
    """The answer ended for a reason the client does not know."""


class InvalidResponseError(ModelError):
    """The provider's body is not what its protocol says."""


class StreamInterruptedError(ModelError):
    """A streamed answer broke after part of it was given to the run."""
