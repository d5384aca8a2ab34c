//! DESIGN.md §9: spans per run, step, model request and tool call.
//!
//! Alone in its own test binary: tracing caches callsite interest process-wide, so tests
//! running beside it without a subscriber would race the cache.

mod common;

use std::sync::{Arc, Mutex};

use common::*;
use serde_json::json;
use starweaver::{Agent, ToolBuilder, ToolContext};

/// Records the names of spans as they close, for the span test.
#[derive(Clone, Default)]
struct SpanNames(Arc<Mutex<Vec<String>>>);

impl<S> tracing_subscriber::Layer<S> for SpanNames
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    fn on_close(&self, id: tracing::span::Id, ctx: tracing_subscriber::layer::Context<'_, S>) {
        if let Some(span) = ctx.span(&id) {
            self.0.lock().unwrap().push(span.name().to_owned());
        }
    }
}

#[test]
fn runs_model_requests_and_tool_calls_are_traced_as_spans() {
    use tracing_subscriber::layer::SubscriberExt;
    let names = SpanNames::default();
    let subscriber = tracing_subscriber::registry().with(names.clone());
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    tracing::subscriber::with_default(subscriber, || {
        runtime.block_on(async {
            let tool = raw_tool(ToolBuilder::new("t"), |_: ToolContext, _: Args| async { Ok(ok()) });
            let agent =
                Agent::builder(calls_then_text(vec![call("c1", "t", json!({}))], "done")).tool(tool).build().unwrap();
            agent.run("go").await.unwrap();
        });
    });
    let names = names.0.lock().unwrap().clone();
    let count = |n: &str| names.iter().filter(|x| *x == n).count();
    assert_eq!(count("starweaver.run"), 1);
    assert_eq!(count("starweaver.step"), 2);
    assert_eq!(count("starweaver.model_request"), 2);
    assert_eq!(count("starweaver.tool_call"), 1);
    assert_eq!(names.last().map(String::as_str), Some("starweaver.run"), "the run span encloses the others");
}
