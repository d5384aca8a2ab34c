//! DESIGN.md §9: spans per run, step, model request and tool call, as `tracing` spans and
//! as the run's `trace` with durations.
//!
//! Alone in its own test binary: tracing caches callsite interest process-wide, so tests
//! running beside it without a subscriber would race the cache.
// Test code: helpers outside `#[test]` fns unwrap and index too; a panic fails the test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use serde_json::json;
use starweaver::{Agent, SpanKind, ToolBuilder, ToolContext, ToolError, TraceSpan};

/// A span's name and its parent's name.
type Named = (String, Option<String>);

/// Records each span as it closes.
#[derive(Clone, Default)]
struct SpanNames(Arc<Mutex<Vec<Named>>>);

impl<S> tracing_subscriber::Layer<S> for SpanNames
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    fn on_close(&self, id: tracing::span::Id, ctx: tracing_subscriber::layer::Context<'_, S>) {
        if let Some(span) = ctx.span(&id) {
            let parent = span.parent().map(|p| p.name().to_owned());
            self.0.lock().unwrap().push((span.name().to_owned(), parent));
        }
    }
}

#[test]
fn runs_model_requests_and_tool_calls_are_traced_as_spans_and_in_the_result() {
    use tracing_subscriber::layer::SubscriberExt;
    let names = SpanNames::default();
    let subscriber = tracing_subscriber::registry().with(names.clone());
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let result = tracing::subscriber::with_default(subscriber, || {
        runtime.block_on(async {
            let slow = raw_tool(ToolBuilder::new("slow"), |_: ToolContext, _: Args| async {
                tokio::time::sleep(Duration::from_millis(20)).await;
                Ok(ok())
            });
            let fails = raw_tool(ToolBuilder::new("fails"), |_: ToolContext, _: Args| async {
                Err::<serde_json::Value, _>(ToolError::model_retry("try again"))
            });
            let model = calls_then_text(vec![call("c1", "slow", json!({})), call("c2", "fails", json!({}))], "done");
            let agent = Agent::builder(model).tool(slow).tool(fails).build().unwrap();
            agent.run("go").await.unwrap()
        })
    });
    let closed = names.0.lock().unwrap().clone();
    assert_eq!(closed.last().map(|(n, _)| n.as_str()), Some("starweaver.run"), "the run span encloses the others");

    // The result's trace is the same tree as the `tracing` spans.
    let trace = &result.trace;
    let parent_name = |s: &TraceSpan| s.parent.map(|p| trace.spans[p].kind.span_name().to_owned());
    let mut from_trace: Vec<Named> =
        trace.spans.iter().map(|s| (s.kind.span_name().to_owned(), parent_name(s))).collect();
    let mut from_tracing = closed;
    from_trace.sort();
    from_tracing.sort();
    assert_eq!(from_trace, from_tracing);

    let kinds: Vec<_> = trace.spans.iter().map(|s| (s.kind, s.step, s.tool.as_deref(), s.outcome)).collect();
    assert_eq!(
        kinds,
        [
            (SpanKind::Run, None, None, Some("completed")),
            (SpanKind::Step, Some(1), None, Some("tool_calls")),
            (SpanKind::ModelRequest, Some(1), None, Some("ok")),
            (SpanKind::ToolCall, None, Some("slow"), Some("ok")),
            (SpanKind::ToolCall, None, Some("fails"), Some("model_retry")),
            (SpanKind::Step, Some(2), None, Some("completed")),
            (SpanKind::ModelRequest, Some(2), None, Some("ok")),
        ]
    );
    assert_eq!(trace.run_id.as_ref(), result.run_id);
    let slow = &trace.spans[3];
    assert!(slow.duration_us >= 20_000, "the sleeping call is timed: {slow:?}");
    for span in &trace.spans[1..] {
        let parent = &trace.spans[span.parent.expect("only the run has no parent")];
        assert!(span.start_us >= parent.start_us, "{span:?} starts inside {parent:?}");
        assert!(
            span.start_us + span.duration_us <= parent.start_us + parent.duration_us,
            "{span:?} ends inside {parent:?}"
        );
    }
    assert_eq!(trace.duration_us(), trace.spans[0].duration_us);
}
