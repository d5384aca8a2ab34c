//! Helpers shared by the integration tests.
#![allow(dead_code, unreachable_pub)]

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value, json};
use starweaver::testing::TestModel;
use starweaver::{
    FnTool, IntoToolResult, Message, ModelResponse, ToolBuilder, ToolCallPart, ToolContext, ToolError, ToolReturnPart,
};

pub type Args = Map<String, Value>;

pub fn call(id: &str, name: &str, arguments: Value) -> ToolCallPart {
    ToolCallPart::new(id, name, arguments)
}

/// A script: one response with these calls, then a final text.
pub fn calls_then_text(calls: Vec<ToolCallPart>, text: &str) -> Arc<TestModel> {
    Arc::new(TestModel::new([TestModel::tool_call_response(calls), ModelResponse::text(text)]))
}

/// A tool taking its arguments as a raw JSON object.
pub fn raw_tool<F, Fut, O>(builder: ToolBuilder, f: F) -> FnTool<Args, F>
where
    F: Fn(ToolContext, Args) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
    O: IntoToolResult,
{
    builder.handler(f).expect("valid test tool")
}

/// Every tool return in a history, in order.
pub fn tool_returns(messages: &[Arc<Message>]) -> Vec<ToolReturnPart> {
    messages.iter().flat_map(|m| m.tool_returns()).map(|r| (**r).clone()).collect()
}

/// A shared append-only log of what tools did, for ordering assertions.
#[derive(Clone, Default)]
pub struct Log(Arc<Mutex<Vec<String>>>);

impl Log {
    pub fn push(&self, entry: impl Into<String>) {
        self.0.lock().unwrap().push(entry.into());
    }
    pub fn entries(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
    pub fn position(&self, entry: &str) -> usize {
        self.entries()
            .iter()
            .position(|e| e == entry)
            .unwrap_or_else(|| panic!("`{entry}` not in {:?}", self.entries()))
    }
}

/// Counts calls in flight and the most seen at once.
#[derive(Clone, Default)]
pub struct InFlight {
    now: Arc<AtomicUsize>,
    peak: Arc<AtomicUsize>,
}

impl InFlight {
    pub fn enter(&self) -> InFlightGuard {
        let now = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak.fetch_max(now, Ordering::SeqCst);
        InFlightGuard(self.now.clone())
    }
    pub fn peak(&self) -> usize {
        self.peak.load(Ordering::SeqCst)
    }
}

pub struct InFlightGuard(Arc<AtomicUsize>);

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Counts how often something ran.
#[derive(Clone, Default)]
pub struct Counter(Arc<AtomicUsize>);

impl Counter {
    pub fn bump(&self) -> usize {
        self.0.fetch_add(1, Ordering::SeqCst) + 1
    }
    pub fn get(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

pub fn ok() -> Value {
    json!({"ok": true})
}
