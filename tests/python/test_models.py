"""DESIGN.md §13 from Python: real model clients against loopback servers serving the
provider fixtures (tests/fixtures/providers), with Python tools, streamed and not."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable

import pytest
from conftest import returns
from provider_server import Reply, serving

from starweaver import (
    ContentFilterError,
    MissingApiKeyError,
    ModelError,
    ModelHTTPError,
    QuotaExhaustedError,
    RegistrationError,
    RunFailedError,
    StreamInterruptedError,
    Tool,
    UserError,
    create_agent,
    tool,
)
from starweaver.content import Image, Part, ResourceLink, Text
from starweaver.models import (
    PREFIXES,
    AnthropicModel,
    AzureOpenAIModel,
    GeminiModel,
    OpenAIChatModel,
    OpenAIResponsesModel,
    ProviderModel,
)
from starweaver.types import Event

CANARY = "sk-canary-0123456789abcdef"


@tool
async def add(left: int, right: int) -> int:
    """Add two integers."""
    await asyncio.sleep(0)
    return left + right


@tool
def fail() -> int:
    """Always fails."""
    raise UserError("the disk is full")


PROTOCOLS: dict[str, Callable[[str], ProviderModel]] = {
    "openai_chat": lambda url: OpenAIChatModel("gpt-4.1-mini", base_url=f"{url}/v1", api_key=CANARY),
    "openai_responses": lambda url: OpenAIResponsesModel("gpt-4.1-mini", base_url=f"{url}/v1", api_key=CANARY),
    "anthropic": lambda url: AnthropicModel("claude-sonnet-4-5", base_url=url, api_key=CANARY),
    "gemini": lambda url: GeminiModel("gemini-2.5-flash", base_url=url, api_key=CANARY),
}


@pytest.mark.parametrize("protocol", list(PROTOCOLS))
def test_python_tools_run_on_every_protocol(protocol: str) -> None:
    with serving(Reply.of(protocol, "tool_calls.json"), Reply.of(protocol, "text.json")) as server:
        agent = create_agent(model=PROTOCOLS[protocol](server.url), tools=[add, fail], instructions="Be brief.")
        result = asyncio.run(agent.run("add 2 and 3"))
    assert (result.status, result.output) == ("completed", "The total is 5."), result.error
    got = returns(result.messages)
    assert got[0]["content"] == 5 and got[1]["is_error"] is True
    assert (result.usage.requests, result.usage.input_tokens, result.usage.output_tokens) == (2, 202, 24)
    assert result.usage.cached_tokens == 64
    assert len(server.seen) == 2
    assert "the disk is full" in str(server.seen[1].body)
    assert str(got[0]["tool_call_id"]) in str(server.seen[1].body), "call ids are kept exactly"


@pytest.mark.parametrize("protocol", list(PROTOCOLS))
def test_a_streamed_run_yields_deltas_then_the_usual_events(protocol: str) -> None:
    async def scenario(url: str) -> tuple[list[Event], str | None]:
        agent = create_agent(model=PROTOCOLS[protocol](url), tools=[add, fail])
        stream = agent.run_stream("add 2 and 3")
        events = [event async for event in stream]
        result = await stream.result()
        return events, result.output

    with serving(Reply.of(protocol, "stream.sse"), Reply.of(protocol, "text_stream.sse")) as server:
        events, output = asyncio.run(scenario(server.url))
    assert output == "The total is 5."
    kinds = [e["type"] for e in events]
    text = "".join(str(e["text"]) for e in events if e["type"] == "text_delta" and e["step"] == 1)
    assert text == "Adding now."
    call_deltas = [e for e in events if e["type"] == "tool_call_delta"]
    assert {e["name"] for e in call_deltas if e.get("name")} == {"add", "fail"}
    assert kinds.index("text_delta") < kinds.index("model_response") < kinds.index("tool_call")


def test_model_names_pick_the_protocol_and_unknown_prefixes_list_the_known_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with serving(Reply.of("openai_chat", "text.json")) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")
        monkeypatch.setenv("OPENAI_API_KEY", CANARY)
        result = asyncio.run(create_agent(model="openai:gpt-4.1-mini").run("hi"))
    assert result.output == "The total is 5."
    assert server.seen[0].path == "/v1/chat/completions"
    assert server.seen[0].headers["authorization"] == f"Bearer {CANARY}"
    assert server.seen[0].body["model"] == "gpt-4.1-mini"
    with pytest.raises(RegistrationError, match="`openai:`, `openai-responses:`, `anthropic:`, `google:`"):
        create_agent(model="mistral:large")
    assert set(PREFIXES) == {"openai", "openai-responses", "anthropic", "google"}


def test_failures_are_named_exceptions_with_status_and_request_id_and_no_key() -> None:
    cases = [
        (Reply.of("openai_chat", "unauthorized.json", 401, **{"x-request-id": "req_1"}), ModelHTTPError, 401),
        (Reply.of("openai_chat", "quota.json", 429, **{"x-request-id": "req_1"}), QuotaExhaustedError, 429),
        (Reply.of("openai_chat", "content_filter.json", **{"x-request-id": "req_1"}), ContentFilterError, None),
    ]
    for reply, cls, status in cases:
        with serving(reply) as server:
            model = OpenAIChatModel("gpt-4.1-mini", base_url=f"{server.url}/v1", api_key=CANARY, max_retries=3)
            result = asyncio.run(create_agent(model=model).run("hi"))
        assert len(server.seen) == 1, f"{cls.__name__} is not retried"
        assert result.status == "failed"
        error = result.exception
        assert isinstance(error, cls) and isinstance(error, ModelError) and isinstance(error, RunFailedError)
        assert (error.provider, error.status, error.request_id) == ("openai", status, "req_1")
        with pytest.raises(cls):
            result.raise_for_status()
        everything = f"{error} {error.body} {result.error} {result.events} {result.messages} {result.trace} {model!r}"
        assert "canary" not in everything and "sk-canar" not in everything


def test_429_and_5xx_are_retried_then_succeed() -> None:
    with serving(
        Reply.of("openai_chat", "rate_limited.json", 429, **{"retry-after-ms": "10"}),
        Reply("upstream unavailable", 503, {"retry-after": "0"}),
        Reply.of("openai_chat", "text.json"),
    ) as server:
        model = OpenAIChatModel("gpt-4.1-mini", base_url=f"{server.url}/v1", api_key=CANARY)
        result = asyncio.run(create_agent(model=model).run("hi"))
    assert result.output == "The total is 5." and len(server.seen) == 3


def test_a_truncated_stream_after_deltas_is_a_stream_interrupted_error() -> None:
    async def scenario(url: str) -> object:
        agent = create_agent(model=PROTOCOLS["anthropic"](url), tools=[add, fail])
        return (await agent.run_stream("hi").result()).exception

    with serving(Reply.of("anthropic", "truncated.sse")) as server:
        error = asyncio.run(scenario(server.url))
    assert isinstance(error, StreamInterruptedError)


def test_a_missing_key_names_the_environment_variable() -> None:
    model = OpenAIChatModel("gpt-4.1-mini", api_key_env="STARWEAVER_TEST_KEY_THAT_IS_NEVER_SET")
    result = asyncio.run(create_agent(model=model).run("hi"))
    assert isinstance(result.exception, MissingApiKeyError)
    assert "STARWEAVER_TEST_KEY_THAT_IS_NEVER_SET" in str(result.exception)


def test_settings_reach_the_request() -> None:
    with serving(Reply.of("openai_chat", "text.json")) as server:
        model = AzureOpenAIModel(
            "gpt-4.1-mini",
            api_version="2024-10-21",
            base_url=f"{server.url}/openai/deployments/mini",
            api_key=CANARY,
            headers={"x-team": "tools"},
            temperature=0.0,
            max_tokens=64,
            seed=7,
            tool_choice={"tool": "add"},
            parallel_tool_calls=False,
            extra_body={"user": "u-1"},
            timeout=30.0,
        )
        asyncio.run(create_agent(model=model, tools=[add]).run("hi"))
    seen = server.seen[0]
    assert seen.path == "/openai/deployments/mini/chat/completions?api-version=2024-10-21"
    assert seen.headers["api-key"] == CANARY and seen.headers["x-team"] == "tools"
    body = seen.body
    assert (body["temperature"], body["max_tokens"], body["seed"], body["user"]) == (0.0, 64, 7, "u-1")
    assert body["tool_choice"] == {"type": "function", "function": {"name": "add"}}
    assert body["parallel_tool_calls"] is False


def test_bad_model_options_are_registration_errors() -> None:
    with pytest.raises(RegistrationError, match=r"invalid model `m`: option `tool_choice`: expected \"auto\""):
        OpenAIChatModel("m", tool_choice="sometimes")  # type: ignore[arg-type]
    with pytest.raises(RegistrationError, match=r"option `timeout`: .*`-1.0`, expected a positive number of seconds"):
        OpenAIChatModel("m", timeout=-1.0)
    with pytest.raises(
        RegistrationError, match=r"option `headers.x-team`: invalid type: integer `1`, expected a string"
    ):
        OpenAIChatModel("m", headers={"x-team": 1})  # type: ignore[dict-item]
    with pytest.raises(RegistrationError, match="option `temprature`: unknown field `temprature`, expected one of"):
        OpenAIChatModel("m", temprature=0.0)  # type: ignore[call-arg]
    assert "canary" not in repr(OpenAIChatModel("m", api_key=CANARY))


def test_model_settings_list_every_option_the_runtime_takes() -> None:
    """The runtime reads the options by name, so one the TypedDict misses would be untyped
    for users; the runtime's refusal of an unknown name lists the names it takes."""
    from starweaver.types import ModelOptions, ModelSettings

    with pytest.raises(RegistrationError) as refused:
        OpenAIChatModel("m", unknown=1)  # type: ignore[call-arg]
    taken = set(re.findall(r"`(\w+)`", str(refused.value).partition("expected one of")[2]))
    assert taken == set(ModelOptions.__annotations__) | set(ModelSettings.__annotations__)
    assert set(ModelOptions.__annotations__) - set(ModelSettings.__annotations__) == {"azure_api_version"}


def test_query_and_key_header_reach_the_request() -> None:
    with serving(Reply.of("openai_chat", "text.json")) as server:
        model = OpenAIChatModel(
            "m", base_url=server.url, api_key=CANARY, api_key_header="x-key", query={"tenant": "t1"}
        )
        asyncio.run(create_agent(model=model).run("hi"))
    seen = server.seen[0]
    assert seen.path == "/chat/completions?tenant=t1"
    assert seen.headers["x-key"] == CANARY and "authorization" not in seen.headers


def test_model_request_spans_export_the_gen_ai_attributes() -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from starweaver.otel import export_trace

    with serving(Reply.of("anthropic", "text.json")) as server:
        result = asyncio.run(create_agent(model=PROTOCOLS["anthropic"](server.url)).run("hi"))
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    export_trace(result.trace, tracer=provider.get_tracer("test"))
    (span,) = [s for s in exporter.get_finished_spans() if s.name == "starweaver.model_request"]
    assert span.attributes is not None
    assert span.attributes["gen_ai.system"] == "anthropic"
    assert span.attributes["gen_ai.request.model"] == "claude-sonnet-4-5"
    assert span.attributes["gen_ai.response.model"] == "claude-sonnet-4-5-20250929"
    assert (span.attributes["gen_ai.usage.input_tokens"], span.attributes["gen_ai.usage.output_tokens"]) == (120, 7)


PNG_PART = {"data": "iVBORw0KGgo=", "media_type": "image/png"}
# Where each protocol's second request carries the PNG a Python tool returned.
IMAGE_SENT = {
    "openai_chat": {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
    "openai_responses": {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="},
    "anthropic": {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
    "gemini": {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}},
}


def content_tools(*parts: Part) -> list[Tool[..., object]]:
    """`add` and `fail` as the fixtures call them, `add` returning `parts`."""

    @tool(name="add")
    def add_parts(left: int, right: int) -> list[Part]:
        """Add two integers."""
        return [Text(f"{left + right}"), *parts]

    return [add_parts, fail]


@pytest.mark.parametrize("protocol", list(PROTOCOLS))
def test_an_image_a_python_tool_returns_reaches_each_provider_in_its_form(protocol: str) -> None:
    png = Image(data=b"\x89PNG\r\n\x1a\n", media_type="image/png")
    with serving(Reply.of(protocol, "tool_calls.json"), Reply.of(protocol, "text.json")) as server:
        result = create_agent(model=PROTOCOLS[protocol](server.url), tools=content_tools(png)).run_sync("add")
    assert result.status == "completed", result.error
    assert returns(result.messages)[0]["content"] == [{"kind": "text", "text": "5"}, {"kind": "image", **PNG_PART}]
    assert json.dumps(IMAGE_SENT[protocol]) in json.dumps(server.seen[1].body)


@pytest.mark.parametrize("protocol", list(PROTOCOLS))
def test_a_part_a_provider_cannot_take_fails_the_run_naming_it(protocol: str) -> None:
    link = ResourceLink("file:///notes.txt", "notes")
    with serving(Reply.of(protocol, "tool_calls.json")) as server:
        result = create_agent(model=PROTOCOLS[protocol](server.url), tools=content_tools(link)).run_sync("add")
    assert result.status == "failed" and isinstance(result.exception, ModelError)
    assert "cannot take the `resource_link` part in the result of tool call" in str(result.exception)
    assert "(`add`)" in str(result.exception)
    assert len(server.seen) == 1, "the refused request is never sent"
