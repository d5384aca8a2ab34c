"""Export run traces to OpenTelemetry (``pip install 'starweaver-tools[otel]'``).

Each ``RunResult.trace`` becomes one OpenTelemetry span per run, step, model request and
tool call, with the recorded start times and durations, nested as they ran::

    from starweaver.otel import export_trace

    result = await agent.run("...")
    export_trace(result.trace)  # on the global tracer provider, or pass tracer=...

Spans are named as the Rust ``tracing`` spans (``starweaver.run``, ``starweaver.step``,
``starweaver.model_request``, ``starweaver.tool_call``) and carry ``starweaver.*``
attributes (model requests also the ``gen_ai.*`` ones: system, request and response model,
token usage); a failed run or a tool call that ended in an error gets an ERROR status. A
tool call's last ``tool_progress`` and its ``tool_log`` messages are span events.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._native import Trace, TraceSpan

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer

__all__ = ["export_trace"]

# Outcomes that are not failures: a finished call, a call waiting for a human, a step
# that led to tool calls, and every run status but `failed`.
_FINE = frozenset({"ok", "approval_required", "deferred", "tool_calls", "completed", "waiting", "cancelled"})


def export_trace(trace: Trace, tracer: Tracer | None = None) -> None:
    """Records ``trace`` as OpenTelemetry spans on ``tracer`` (by default the global
    tracer provider's ``starweaver`` tracer). Raises ``ImportError`` naming the missing
    package when ``opentelemetry-api`` is not installed."""
    try:
        from opentelemetry import trace as otel
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise ImportError(
            "starweaver.otel needs the OpenTelemetry API: pip install 'starweaver-tools[otel]'"
        ) from error

    tracer = tracer if tracer is not None else otel.get_tracer("starweaver")
    origin_ns = trace.started_at_unix_us * 1000
    opened: dict[int, Span] = {}
    for item in trace.spans:
        parent = opened.get(item.parent) if item.parent is not None else None
        context = otel.set_span_in_context(parent) if parent is not None else None
        span = tracer.start_span(
            item.name, context=context, start_time=origin_ns + item.start_us * 1000, attributes=_attributes(trace, item)
        )
        if item.outcome is not None and item.outcome not in _FINE:
            span.set_status(otel.Status(otel.StatusCode.ERROR, item.outcome))
        for event in item.events:
            span.add_event(event["name"], attributes=event["attributes"], timestamp=origin_ns + event["at_us"] * 1000)
        opened[item.id] = span
    # Children end before their parents, as they did.
    for item in reversed(trace.spans):
        opened[item.id].end(end_time=origin_ns + (item.start_us + item.duration_us) * 1000)


def _attributes(trace: Trace, item: TraceSpan) -> dict[str, str | int]:
    attributes: dict[str, str | int] = {"starweaver.run_id": trace.run_id}
    if item.step is not None:
        attributes["starweaver.step"] = item.step
    if item.tool is not None:
        attributes["starweaver.tool"] = item.tool
    if item.tool_call_id is not None:
        attributes["starweaver.tool_call_id"] = item.tool_call_id
    if item.outcome is not None:
        attributes["starweaver.outcome"] = item.outcome
    attributes.update(item.attributes)
    return attributes
