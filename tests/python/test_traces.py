"""Issue 6, item 4: ``result.trace`` (spans per run, step, model request and tool call, with
durations) and its export to OpenTelemetry."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from conftest import call, calls_then_text
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from starweaver import ModelRetry, RunResult, Trace, create_agent, tool
from starweaver.otel import export_trace


@tool
async def slow() -> str:
    await asyncio.sleep(0.02)
    return "slept"


@tool
async def flaky() -> str:
    raise ModelRetry("try again")


def attributes(span: ReadableSpan) -> Mapping[str, object]:
    """A finished span's attributes (OpenTelemetry types them optional)."""
    assert span.attributes is not None
    return span.attributes


def run_two_tools() -> RunResult:
    model = calls_then_text([call("c1", "slow"), call("c2", "flaky")], "done")
    return asyncio.run(create_agent(model=model, tools=[slow, flaky]).run("go"))


def test_the_trace_has_a_span_per_run_step_model_request_and_tool_call_with_durations() -> None:
    result = run_two_tools()
    trace = result.trace
    assert isinstance(trace, Trace) and trace.run_id == result.run_id
    shape = [(s.kind, s.parent, s.step, s.tool, s.outcome) for s in trace.spans]
    assert shape == [
        ("run", None, None, None, "completed"),
        ("step", 0, 1, None, "tool_calls"),
        ("model_request", 1, 1, None, "ok"),
        ("tool_call", 1, None, "slow", "ok"),
        ("tool_call", 1, None, "flaky", "model_retry"),
        ("step", 0, 2, None, "completed"),
        ("model_request", 5, 2, None, "ok"),
    ]
    slow_span = trace.spans[3]
    assert slow_span.name == "starweaver.tool_call" and slow_span.tool_call_id == "c1"
    assert slow_span.duration_us >= 20_000, "the sleeping call is timed"
    assert slow_span.duration_ms == slow_span.duration_us / 1000
    assert trace.duration_ms >= slow_span.duration_ms
    for span in trace.spans[1:]:
        assert span.parent is not None
        parent = trace.spans[span.parent]
        assert parent.start_us <= span.start_us
        assert span.start_us + span.duration_us <= parent.start_us + parent.duration_us

    summary = str(trace).splitlines()
    assert summary[0].startswith(f"run {result.run_id} completed: ")
    assert summary[3].startswith("    tool_call slow c1: ") and summary[3].endswith(" ms (ok)")
    as_dict = trace.to_dict()
    assert as_dict["run_id"] == result.run_id
    assert [s["kind"] for s in as_dict["spans"]] == [s.kind for s in trace.spans]


def test_export_to_opentelemetry_keeps_the_tree_the_times_and_the_errors() -> None:
    result = run_two_tools()
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    export_trace(result.trace, tracer=provider.get_tracer("test"))

    spans = {(s.name, attributes(s).get("starweaver.tool"), attributes(s).get("starweaver.step")): s
             for s in exporter.get_finished_spans()}  # fmt: skip
    assert len(spans) == len(result.trace.spans) == 7
    run = spans[("starweaver.run", None, None)]
    step1 = spans[("starweaver.step", None, 1)]
    slow_call = spans[("starweaver.tool_call", "slow", None)]
    flaky_call = spans[("starweaver.tool_call", "flaky", None)]
    assert run.parent is None
    assert step1.parent is not None and step1.parent.span_id == run.context.span_id
    assert slow_call.parent is not None and slow_call.parent.span_id == step1.context.span_id
    assert {s.context.trace_id for s in spans.values()} == {run.context.trace_id}
    assert slow_call.start_time is not None and slow_call.end_time is not None
    assert slow_call.end_time - slow_call.start_time == result.trace.spans[3].duration_us * 1000
    assert run.start_time == (result.trace.started_at_unix_us + result.trace.spans[0].start_us) * 1000
    assert attributes(slow_call)["starweaver.run_id"] == result.run_id
    assert slow_call.status.status_code is StatusCode.UNSET
    assert flaky_call.status.status_code is StatusCode.ERROR and flaky_call.status.description == "model_retry"


def test_a_streamed_run_has_its_trace_too() -> None:
    async def scenario() -> RunResult:
        model = calls_then_text([call("c1", "slow")], "done")
        stream = create_agent(model=model, tools=[slow]).run_stream("go")
        async for _ in stream:
            pass
        return await stream.result()

    result = asyncio.run(scenario())
    assert [s.kind for s in result.trace.spans].count("tool_call") == 1
