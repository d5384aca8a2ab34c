"""MCP both ways.

MCP servers as toolsets: a server started as a child process (stdio) or reached over
streamable HTTP lends its tools to an agent, and they run through the same scheduler as any tool (timeouts, cancellation
sent to the server, approvals, events, traces).

    async with MCPServerStdio("files", "npx", args=["-y", "@modelcontextprotocol/server-filesystem", "."]) as files:
        agent = create_agent(model=model, toolsets=[files.prefixed("fs_")])

Without ``async with`` the server starts on first use and stops with the process.

Serving: ``python -m starweaver serve-mcp MODULE`` serves a module's tools, and its
``@resource``, ``@resource_template`` and ``@prompt`` functions; ``resource_updated(uri)``
tells subscribed clients that a resource changed.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol

from ._asking import runtime_handler, runtime_sampler
from ._native import NativeMcpServer
from ._served import (
    Completer,
    MCPPrompt,
    MCPResource,
    MCPResourceTemplate,
    PromptMessage,
    prompt,
    resource,
    resource_template,
    resource_updated,
)
from .toolsets import Toolset

if TYPE_CHECKING:
    from typing_extensions import Self

    from ._native import ToolContext
    from .agent import ElicitationHandler
    from .elicitation import Sampled
    from .types import SamplingMessageDict

__all__ = [
    "Completer",
    "MCPPrompt",
    "MCPResource",
    "MCPResourceTemplate",
    "MCPServerHTTP",
    "MCPServerStdio",
    "PromptMessage",
    "SamplingHandler",
    "prompt",
    "resource",
    "resource_template",
    "resource_updated",
]


class SamplingHandler(Protocol):
    """Answers an MCP server's sampling request in place of the run's model: the
    conversation as ``{"role", "content"}`` dicts and the request's settings, to the
    completion's text or a ``Sampled``, sync or async."""

    def __call__(
        self,
        ctx: ToolContext,
        messages: list[SamplingMessageDict],
        /,
        *,
        max_tokens: int,
        system_prompt: str | None,
        temperature: float | None,
    ) -> str | Sampled | Awaitable[str | Sampled]: ...


def _handlers(elicitation: ElicitationHandler | None, sampling: SamplingHandler | None) -> dict[str, Any]:
    """The handlers in the runtime's form, as the native server takes them."""
    return {
        "elicitation_handler": runtime_handler(elicitation) if elicitation is not None else None,
        "sampling_handler": runtime_sampler(sampling) if sampling is not None else None,
    }


class _MCPServer(Toolset):
    """What both transports share: ``async with`` starts the server (or connects) and
    stops it at the end."""

    server: NativeMcpServer

    async def __aenter__(self) -> Self:
        await self.server.connect()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.server.close()

    async def call_tool(self, name: str, arguments: Mapping[str, Any] | None = None) -> Any:
        """Calls one of the server's tools directly, outside any agent run (no scheduler,
        events or approvals), and returns its value: the structured content, else the
        text, else (when a block is an image, audio or a resource) the content parts as
        canonical dicts (``starweaver.content.from_dict`` reads them). Raises ``ToolsetError`` for an ``isError`` result, a failed server, or a call
        past ``timeout_ms`` (the server is told to cancel)."""
        return await self.server.call_tool(name, dict(arguments) if arguments is not None else None)


class MCPServerStdio(_MCPServer):
    """An MCP server started as ``command args...`` speaking MCP over stdio; ``name``
    names it in errors (which end with the tail of its stderr) and approval rules;
    ``timeout_ms`` bounds each request to it: a call of its tools (the server is told to
    cancel), starting it and its handshake, a listing of its tools (30 s when unset).
    ``elicitation_handler`` (as ``create_agent``'s) answers the server's elicitation
    requests first; without one, a call in a run asks as the run's tools ask (the agent's
    handler, else a pending elicitation of the run, after which the tool is called again).
    ``sampling_handler`` answers the server's sampling requests first; without one, the
    run's model does (a direct ``call_tool`` has nobody to answer either)."""

    def __init__(
        self,
        name: str,
        command: str,
        *,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        timeout_ms: int | None = None,
        elicitation_handler: ElicitationHandler | None = None,
        sampling_handler: SamplingHandler | None = None,
    ) -> None:
        self.server = NativeMcpServer(
            name,
            command,
            args=list(args),
            env=dict(env) if env else None,
            cwd=cwd,
            timeout_ms=timeout_ms,
            **_handlers(elicitation_handler, sampling_handler),
        )
        self.native = self.server.toolset()


class MCPServerHTTP(_MCPServer):
    """An MCP server reached over streamable HTTP at ``url``, with ``headers`` on every
    request; ``timeout_ms`` bounds each request to it (calls, the handshake, listings);
    ``elicitation_handler`` and ``sampling_handler`` as ``MCPServerStdio``'s."""

    def __init__(
        self,
        name: str,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        timeout_ms: int | None = None,
        elicitation_handler: ElicitationHandler | None = None,
        sampling_handler: SamplingHandler | None = None,
    ) -> None:
        self.server = NativeMcpServer.http(
            name,
            url,
            headers=dict(headers) if headers else None,
            timeout_ms=timeout_ms,
            **_handlers(elicitation_handler, sampling_handler),
        )
        self.native = self.server.toolset()
