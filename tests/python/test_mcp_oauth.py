"""DESIGN.md §21, OAuth for MCP servers over HTTP: `MCPServerHTTP(..., auth=OAuth(...))`
against an OAuth-protected server on the official Python SDK
(mcp_servers/oauth_server.py), which is its own authorization server and approves at
once, redirecting to our redirect URI with the code."""

from __future__ import annotations

import asyncio
import json
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import call, returns

from starweaver import SqliteSessionStore, ToolsetError, create_agent
from starweaver.mcp import MCPServerHTTP, OAuth
from starweaver.testing import TestModel

SERVER = str(Path(__file__).parent / "mcp_servers" / "oauth_server.py")
REDIRECT_URI = "http://localhost:3000/callback"


@pytest.fixture(scope="module")
def protected() -> Iterator[str]:
    """The protected server's MCP URL, once it listens."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, SERVER, str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError("the protected server did not start") from None
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.kill()
        process.wait()


class Browser:
    """The application's callback: opens the authorization URL as a browser would (the
    server approves at once) and returns where it was redirected. Counts its calls."""

    def __init__(self) -> None:
        self.urls: list[str] = []

    async def __call__(self, url: str) -> str:
        self.urls.append(url)
        return await asyncio.to_thread(self._follow, url)

    @staticmethod
    def _follow(url: str) -> str:
        class Stop(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *args: object, **kwargs: object) -> None:
                return None

        try:
            urllib.request.build_opener(Stop).open(url, timeout=10).close()
        except urllib.error.HTTPError as redirect:
            return str(redirect.headers["Location"])
        raise AssertionError("the authorization server did not redirect")


def whoami_model() -> TestModel:
    return TestModel.responses([TestModel.tool_call_response([call("c1", "whoami", {})]), {"text": "done"}])


def test_a_protected_server_is_authorized_through_the_callback_and_its_tools_run(protected: str) -> None:
    browser = Browser()

    async def scenario() -> None:
        oauth = OAuth(redirect_uri=REDIRECT_URI, on_authorize=browser, client_name="starweaver tests")
        async with MCPServerHTTP("protected", protected, auth=oauth, timeout_ms=20_000) as server:
            result = await create_agent(model=whoami_model(), toolsets=[server]).run("who am I?")
            assert returns(result.messages)[0]["content"] == {"result": "an authorized client"}
            # The token is kept: a second call asks nobody.
            assert await server.call_tool("whoami") == {"result": "an authorized client"}

    asyncio.run(scenario())
    assert len(browser.urls) == 1
    assert "code_challenge_method=S256" in browser.urls[0]
    assert "scope=mcp%3Atools" in browser.urls[0] or "scope=mcp:tools" in browser.urls[0]


def test_tokens_kept_in_a_sqlite_store_are_reused_and_never_shown(protected: str, tmp_path: Path) -> None:
    browser = Browser()
    database = tmp_path / "sessions.db"
    outputs: list[str] = []

    async def one_client() -> None:
        oauth = OAuth(redirect_uri=REDIRECT_URI, on_authorize=browser, store=SqliteSessionStore(database))
        async with MCPServerHTTP("protected", protected, auth=oauth, timeout_ms=20_000) as server:
            result = await create_agent(model=whoami_model(), toolsets=[server]).run("who am I?")
            outputs.extend([repr(oauth), repr(result.messages), repr(result)])

    asyncio.run(one_client())
    asyncio.run(one_client())
    assert len(browser.urls) == 1, "the second client used the stored token"
    with sqlite3.connect(database) as db:
        (credentials,) = db.execute("SELECT credentials FROM starweaver_oauth_tokens").fetchone()
    assert '"access_token"' in credentials
    token = json.loads(credentials)["token_response"]
    for secret in (token["access_token"], token["refresh_token"]):
        assert all(secret not in shown for shown in outputs)


def test_a_callback_that_fails_is_a_named_error(protected: str) -> None:
    async def refuse(url: str) -> str:
        raise RuntimeError("the user closed the browser")

    async def scenario() -> None:
        oauth = OAuth(redirect_uri=REDIRECT_URI, on_authorize=refuse, client_secret=None)
        with pytest.raises(ToolsetError) as error:
            async with MCPServerHTTP("protected", protected, auth=oauth, timeout_ms=20_000) as server:
                await server.call_tool("whoami")
        assert "MCP server `protected`" in str(error.value)
        assert "the user closed the browser" in str(error.value)

    asyncio.run(scenario())


def test_oauth_reprs_name_the_grant_and_never_the_secret() -> None:
    async def never(url: str) -> str:
        raise AssertionError(url)

    shown = repr(OAuth(redirect_uri=REDIRECT_URI, on_authorize=never, client_id="app", client_secret="s3cret-value"))
    assert "authorization_code" in shown and "app" in shown and "s3cret-value" not in shown
    shown = repr(OAuth.client_credentials("service", "an0ther-secret", scopes=["read"]))
    assert "client_credentials" in shown and "an0ther-secret" not in shown
