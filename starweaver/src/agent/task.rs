//! A run's tool listings, model requests and tool calls as data ([`ListTask`],
//! [`ModelTask`], [`CallTask`]) and what came of them ([`ToolListing`], [`CallResult`]):
//! what the machine asks a driver that runs them elsewhere for (`starweaver::durable`), and
//! what [`Agent::list_tools`](crate::Agent::list_tools),
//! [`Agent::request_model`](crate::Agent::request_model) and
//! [`Agent::run_call`](crate::Agent::run_call) take and give. Each call task carries its
//! call's policy (timeout, retry budget), so an engine can enforce it.

use std::sync::Arc;

use futures::future::{BoxFuture, ready};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::concurrency::ConcurrencyLimit;
use crate::event::EventKind;
use crate::hitl::ApprovalDecision;
use crate::message::ToolCallPart;
use crate::registry::{Registration, Source, ToolsetTraits};
use crate::scheduler::CallOutcome;
use crate::tool::{Answered, Tool, ToolContext, ToolDefinition, ToolError, ToolResult};

/// The listing of a step's tools, for an agent with dynamic toolsets (an MCP server's, say)
/// or hooks that prepare each step's tools.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ListTask {
    pub run_id: String,
    pub step: u32,
}

/// What the dynamic toolsets listed for a step, and what the hooks' `prepare_tools` made
/// of the step's tools; opaque, but it serialises.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ToolListing {
    pub(crate) step: u32,
    pub(crate) tools: Vec<ListedTool>,
    /// The step's definitions as the agent's and toolsets' hooks prepared them, in the
    /// order offered; `None` when no hook prepares them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) prepared: Option<Vec<ToolDefinition>>,
    /// A `tool_refused` event for each tool a toolset left out.
    pub(crate) refused: Vec<EventKind>,
    /// The instructions of the toolsets that listed tools, each text once (not with every
    /// tool: an MCP server's may be long); a tool names its toolset's by its place here.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) instructions: Vec<Arc<str>>,
}

/// One listed tool: its definition, the toolset that listed it, and that toolset's
/// return-size limit.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ListedTool {
    source: Source,
    definition: ToolDefinition,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    max_return_chars: Option<u32>,
    /// Its toolset's concurrency limit, which the run's side counts its calls against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    limit: Option<ConcurrencyLimit>,
    /// Whether its toolset is deferred.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    defer_loading: bool,
    /// Its toolset's instructions, by their place in the listing's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    instructions: Option<usize>,
}

impl ToolListing {
    pub(crate) fn new(step: u32, listed: &[Registration], refused: Vec<EventKind>) -> Self {
        let mut instructions: Vec<Arc<str>> = Vec::new();
        let tools = listed
            .iter()
            .map(|entry| ListedTool {
                source: entry.source.clone(),
                definition: entry.tool.definition().clone(),
                max_return_chars: entry.toolset.max_return_chars,
                limit: entry.toolset.max_concurrency.clone(),
                defer_loading: entry.toolset.defer_loading,
                instructions: entry.toolset.instructions.as_ref().map(|text| {
                    instructions.iter().position(|known| known == text).unwrap_or_else(|| {
                        instructions.push(text.clone());
                        instructions.len() - 1
                    })
                }),
            })
            .collect();
        Self { step, tools, prepared: None, refused, instructions }
    }

    /// The listed tools as registrations, known by their definitions (the run's side
    /// checks, plans and renders them; their calls run where they were listed, under their
    /// toolset's hooks there), the prepared definitions, and the `tool_refused` events.
    pub(crate) fn registrations(self) -> (Vec<Registration>, Option<Vec<ToolDefinition>>, Vec<EventKind>) {
        let mut shared: Vec<(Source, ConcurrencyLimit)> = Vec::new();
        let listed = self
            .tools
            .into_iter()
            .map(|ListedTool { source, definition, max_return_chars, limit, defer_loading, instructions }| {
                // Each listed tool carries its toolset's limit: read back, the tools of one
                // toolset share the first one again.
                let limit = limit.map(|limit| match shared.iter().find(|(of, _)| *of == source) {
                    Some((_, first)) => first.clone(),
                    None => {
                        shared.push((source.clone(), limit.clone()));
                        limit
                    }
                });
                let instructions = instructions.and_then(|at| self.instructions.get(at).cloned());
                Registration {
                    tool: Arc::new(Listed(definition)),
                    source,
                    hooks: Arc::new([]),
                    toolset: ToolsetTraits { instructions, defer_loading, max_return_chars, max_concurrency: limit },
                }
            })
            .collect();
        (listed, self.prepared, self.refused)
    }
}

/// A tool a durable run knows by its definition only; its calls run as call tasks
/// ([`Agent::run_call`](crate::Agent::run_call)), never here.
struct Listed(ToolDefinition);

impl Tool for Listed {
    fn definition(&self) -> &ToolDefinition {
        &self.0
    }

    fn call<'a>(&'a self, _: ToolContext, _: &'a Value) -> BoxFuture<'a, Result<ToolResult, ToolError>> {
        let message = format!("`{}` was listed for a durable run; its calls run as call tasks", self.0.name);
        Box::pin(ready(Err(ToolError::execution(message).not_retryable())))
    }
}

/// One model request of a run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ModelTask {
    pub run_id: String,
    pub step: u32,
    /// The history so far, as canonical JSON.
    pub messages: Value,
    /// The step's tool definitions, when dynamic toolsets make them differ from the
    /// agent's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<ToolDefinition>>,
    /// The deferred tools handed to the provider's own search (native tool search).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deferred: Vec<ToolDefinition>,
    /// The instructions of the toolsets whose tools the step offers, sent with the agent's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub toolset_instructions: Vec<Arc<str>>,
}

/// A text answer to check as the run's output (native or prompted output, output
/// validators on text): [`Agent::check_output`](crate::Agent::check_output) checks it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OutputTask {
    pub run_id: String,
    pub step: u32,
    /// The model's answer.
    pub text: String,
}

/// How an output check ended: the output, or why the answer was refused (the model is
/// told).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputChecked {
    Output(Value),
    /// The output of a union's member (native or prompted output), and that member's
    /// output tool, which the run records as its `output_tool`.
    Member {
        tool: String,
        output: Value,
    },
    Refused(String),
}

/// One tool call of a run, with what it runs under.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CallTask {
    /// Its position among the response's tool calls (report it back with this).
    pub index: usize,
    /// The run's step whose response made the call (for the tools of dynamic toolsets,
    /// listed for that step).
    #[serde(default)]
    pub step: u32,
    pub call: ToolCallPart,
    /// The decision that approved it, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<ApprovalDecision>,
    /// The user's answers to what it asked before it waited, in the order it asked.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub answered: Vec<Answered>,
    /// The model retries its tool has spent in the run so far.
    pub retry: u32,
    /// The tool's timeout, for the engine's own timeout on the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// The tool's retry budget, for how often the engine may start the call again after
    /// its worker was lost.
    pub max_retries: u32,
    /// The concurrency limits the run held the call back for (full when it came), which
    /// its `tool_call` event names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub queued_for: Vec<String>,
}

/// How a call ended, with the events it emitted; opaque, but it serialises.
#[derive(Serialize, Deserialize)]
pub struct CallResult {
    pub(crate) outcome: CallOutcome,
    pub(crate) events: Vec<EventKind>,
}

impl std::fmt::Debug for CallResult {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallResult").field("events", &self.events).finish_non_exhaustive()
    }
}
