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

import asyncio
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, Protocol

from ._asking import runtime_handler, runtime_sampler
from ._native import ConcurrencyLimit, NativeMcpServer, NativeOAuth, SqliteSessionStore
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
from .toolsets import Toolset, configured

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
    "McpProtocol",
    "OAuth",
    "PromptMessage",
    "SamplingHandler",
    "prompt",
    "resource",
    "resource_template",
    "resource_updated",
]

#: How a client session with a server opens: ``initialize`` (2025-11-25 and older),
#: ``server/discover`` (the stateless 2026-07-28 revision), or discover falling back to
#: initialize.
McpProtocol = Literal["initialize", "discover", "auto"]


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
    auth: OAuth | None = None

    async def __aenter__(self) -> Self:
        if self.auth is not None:
            self.auth.loop = asyncio.get_running_loop()
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
    run's model does (a direct ``call_tool`` has nobody to answer either). ``protocol``
    says how the session opens: ``"initialize"`` (offering 2025-11-25, what servers speak
    today), ``"discover"`` (``server/discover``, the stateless 2026-07-28 revision) or
    ``"auto"`` (discover, falling back to initialize for an older server).
    ``max_concurrency`` caps how many calls of its tools run at once (a number, or a shared
    ``ConcurrencyLimit``). The ``instructions`` the server gives in its handshake are sent
    with the agent's while its tools are offered; ``use_instructions=False`` keeps them
    from the model."""

    def __init__(
        self,
        name: str,
        command: str,
        *,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        protocol: McpProtocol = "initialize",
        timeout_ms: int | None = None,
        elicitation_handler: ElicitationHandler | None = None,
        sampling_handler: SamplingHandler | None = None,
        max_concurrency: int | ConcurrencyLimit | None = None,
        use_instructions: bool = True,
    ) -> None:
        self.server = NativeMcpServer(
            name,
            command,
            args=list(args),
            env=dict(env) if env else None,
            cwd=cwd,
            protocol=protocol,
            timeout_ms=timeout_ms,
            use_instructions=use_instructions,
            **_handlers(elicitation_handler, sampling_handler),
        )
        self.native = configured(self.server.toolset(), max_concurrency=max_concurrency)


class OAuth:
    """OAuth 2.1 for an MCP server reached over HTTP (``MCPServerHTTP(..., auth=OAuth(...))``).

    The client authorizes when the server asks (a 401 and its ``WWW-Authenticate``):
    it discovers the authorization server (protected-resource metadata, then RFC 8414 or
    OpenID configuration), registers itself (pre-registered ``client_id``/``client_secret``,
    else ``client_metadata_url`` where supported, else dynamic registration), and gets a
    token by the authorization code grant with PKCE: ``await on_authorize(url)`` shows the
    user ``url`` and returns the URL the authorization server redirected to (with ``code``
    and ``state``). Scopes are ``scopes``, else the server's. Tokens are refreshed when they
    expire or are rejected, a 403 ``insufficient_scope`` authorizes again for more scopes,
    and one request authorizes at most three times. ``store``: a ``SqliteSessionStore`` (or
    its path) keeps the tokens across restarts; in memory otherwise. No token or secret
    appears in a log, an error, an event or a ``repr``.

    ``on_authorize`` runs on the event loop that entered ``async with`` the server, else
    on a loop of its own in a worker thread. ``OAuth.client_credentials(id, secret)`` is the
    client credentials grant (no user).
    """

    def __init__(
        self,
        *,
        redirect_uri: str,
        on_authorize: Callable[[str], Awaitable[str]],
        client_id: str | None = None,
        client_secret: str | None = None,
        client_metadata_url: str | None = None,
        client_name: str | None = None,
        scopes: Sequence[str] | None = None,
        store: SqliteSessionStore | str | os.PathLike[str] | None = None,
    ) -> None:
        self.on_authorize = on_authorize
        # The event loop `on_authorize` runs on: the one that entered `async with` the
        # server, or that built it.
        self.loop: asyncio.AbstractEventLoop | None = None
        self.native = NativeOAuth(
            redirect_uri=redirect_uri,
            authorize=self._authorize_blocking,
            client_id=client_id,
            client_secret=client_secret,
            client_metadata_url=client_metadata_url,
            client_name=client_name,
            scopes=list(scopes) if scopes is not None else None,
            store=_store_path(store),
        )

    @classmethod
    def client_credentials(
        cls,
        client_id: str,
        client_secret: str,
        *,
        scopes: Sequence[str] | None = None,
        store: SqliteSessionStore | str | os.PathLike[str] | None = None,
    ) -> OAuth:
        """The client credentials grant: the client authenticates as itself."""
        oauth = cls.__new__(cls)
        oauth.on_authorize = _no_user
        oauth.loop = None
        oauth.native = NativeOAuth(
            client_credentials=True,
            client_id=client_id,
            client_secret=client_secret,
            scopes=list(scopes) if scopes is not None else None,
            store=_store_path(store),
        )
        return oauth

    def _authorize_blocking(self, url: str) -> str:
        """Called by the client on a worker thread: runs ``on_authorize(url)`` on the
        application's loop when there is one, else on a loop of its own."""
        loop = self.loop
        if loop is not None and loop.is_running():
            return asyncio.run_coroutine_threadsafe(_awaited(self.on_authorize(url)), loop).result()
        return asyncio.run(_awaited(self.on_authorize(url)))

    def __repr__(self) -> str:
        return repr(self.native)


async def _awaited(awaitable: Awaitable[str]) -> str:
    return await awaitable


async def _no_user(url: str) -> str:
    raise RuntimeError("the client credentials grant has no user to authorize")


def _store_path(store: SqliteSessionStore | str | os.PathLike[str] | None) -> str | None:
    if store is None:
        return None
    if isinstance(store, SqliteSessionStore):
        return os.fspath(store.path)
    return os.fspath(store)


class MCPServerHTTP(_MCPServer):
    """An MCP server reached over streamable HTTP at ``url``, with ``headers`` on every
    request; ``timeout_ms`` bounds each request to it (calls, the handshake, listings);
    ``auth`` gives it OAuth (see ``OAuth``); ``protocol``, ``elicitation_handler``,
    ``sampling_handler``, ``max_concurrency`` and ``use_instructions`` as
    ``MCPServerStdio``'s."""

    def __init__(
        self,
        name: str,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        protocol: McpProtocol = "initialize",
        timeout_ms: int | None = None,
        auth: OAuth | None = None,
        elicitation_handler: ElicitationHandler | None = None,
        sampling_handler: SamplingHandler | None = None,
        max_concurrency: int | ConcurrencyLimit | None = None,
        use_instructions: bool = True,
    ) -> None:
        self.auth = auth
        if auth is not None:
            # Built in async code: the callback runs on this loop even without `async with`.
            try:
                auth.loop = asyncio.get_running_loop()
            except RuntimeError:
                pass
        self.server = NativeMcpServer.http(
            name,
            url,
            headers=dict(headers) if headers else None,
            protocol=protocol,
            timeout_ms=timeout_ms,
            auth=auth.native if auth is not None else None,
            use_instructions=use_instructions,
            **_handlers(elicitation_handler, sampling_handler),
        )
        self.native = configured(self.server.toolset(), max_concurrency=max_concurrency)
