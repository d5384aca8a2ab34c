//! A corpus of `#[tool]` functions, one per kind of signature, shared by the behaviour
//! tests (`tool_macro.rs`) and the definition snapshots (`definitions.rs`). Built under
//! `deny(warnings, missing_docs)`, so the expansion itself must be warning-free.
#![deny(warnings, missing_docs)]
// The corpus is user code shaped for `#[tool]`, not library API: its doc comments are the
// tools' descriptions (snapshotted, so no `# Errors` sections), its tools take owned
// JSON-decoded arguments and may be `async` without awaiting, and nobody calls them directly.
#![allow(
    clippy::unused_async,
    clippy::missing_errors_doc,
    clippy::missing_panics_doc,
    clippy::must_use_candidate,
    clippy::needless_pass_by_value,
    clippy::implicit_hasher,
    clippy::cast_precision_loss
)]

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use starweaver::{ToolContext, ToolError, ToolResult, tool};

/// Tricky signatures for the provider snapshots and the checker.
pub mod corpus;

/// The quickstart example's tools, snapshotted with the rest.
#[path = "../starweaver/examples/quickstart/tools.rs"]
pub mod quickstart;

/// Add two integers.
#[tool]
pub async fn add(left: i64, right: i64) -> i64 {
    left + right
}

/// Multiply two numbers; a plain `fn`, run off the async workers.
#[tool]
pub fn multiply(
    /// The first factor.
    left: f64,
    /// The second factor.
    right: f64,
) -> f64 {
    left * right
}

/// Look up a ticket.
#[tool]
pub async fn lookup(
    /// The ticket id.
    ticket_id: String,
    /// Include the change history.
    #[arg(default)]
    include_history: bool,
    /// How many comments to include.
    #[arg(default = 10)]
    max_comments: u32,
    /// Only comments after this one.
    since: Option<String>,
) -> Value {
    json!({"ticket_id": ticket_id, "include_history": include_history, "max_comments": max_comments, "since": since})
}

/// Sum a list of numbers.
#[tool]
pub async fn sum(values: Vec<i64>, weights: Option<Vec<f64>>) -> f64 {
    let weights = weights.unwrap_or_else(|| vec![1.0; values.len()]);
    values.iter().zip(weights).map(|(v, w)| *v as f64 * w).sum()
}

/// A postal address.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub struct Address {
    /// Street and number.
    pub street: String,
    /// City name.
    pub city: String,
}

/// A customer.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub struct Customer {
    /// Full name.
    pub name: String,
    /// Where they live.
    pub address: Address,
    /// Other addresses.
    #[serde(default)]
    pub previous: Vec<Address>,
}

/// Register a customer.
#[tool]
pub async fn register(customer: Customer, tags: BTreeMap<String, String>) -> Customer {
    let _ = tags;
    customer
}

/// How urgent something is.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Priority {
    /// Whenever there is time.
    Low,
    /// Within the day.
    Normal,
    /// Now.
    Urgent,
}

/// File a ticket with a priority.
#[tool(name = "file_ticket", description = "File a new ticket.", strict = true)]
pub async fn create_ticket(title: String, priority: Priority) -> Result<Value, ToolError> {
    if title.trim().is_empty() {
        return Err(ToolError::model_retry("`title` must not be empty"));
    }
    Ok(json!({"title": title, "priority": priority}))
}

/// Arguments of `fetch_ticket`, as one object.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TicketArgs {
    /// The ticket id.
    pub ticket_id: String,
    /// Include the change history.
    #[serde(default)]
    pub include_history: bool,
}

/// Fetch a ticket (an argument struct).
#[tool(metadata = r#"{"risk": "low"}"#)]
pub async fn fetch_ticket(args: TicketArgs) -> Value {
    json!({"ticket_id": args.ticket_id, "include_history": args.include_history})
}

/// Inspect any payload (explicit schema, raw object).
#[tool(parameters_schema = r#"{"type": "object", "additionalProperties": true}"#)]
pub async fn inspect_payload(args: Map<String, Value>) -> Value {
    let mut keys: Vec<&String> = args.keys().collect();
    keys.sort();
    json!({"keys": keys})
}

/// Report who is calling (a context, and a business parameter that happens to be called
/// `context`).
#[tool(sequential, timeout_ms = 5_000, max_retries = 1)]
pub async fn whoami(ctx: &ToolContext, context: String) -> Value {
    json!({"tool": ctx.tool_name(), "call": ctx.tool_call_id(), "context": context, "retry": ctx.retry()})
}

/// Deploy, after approval (context by value, `ToolResult` return).
#[tool(metadata = r#"{"risk": "high"}"#)]
pub async fn deploy(ctx: ToolContext, environment: String) -> Result<ToolResult, ToolError> {
    let Some(approval) = ctx.approval() else {
        return Err(ToolError::approval_required(format!("deploy to {environment}")));
    };
    Ok(ToolResult::new(json!({"deployed": environment}))
        .with_model_content(json!({"summary": format!("deployed to {environment}")}))
        .with_private_metadata(json!({"approved_by": approval.decided_by})))
}

/// Read a file (`?` on `std::io::Error`).
#[tool]
pub async fn read_text(path: String) -> std::io::Result<String> {
    let text = std::fs::read_to_string(&path)?;
    Ok(text)
}

/// Always fails unexpectedly, to exercise retries.
#[tool(max_retries = 2)]
pub async fn flaky(ctx: &ToolContext) -> Result<u32, ToolError> {
    if ctx.attempt() < 3 { Err(ToolError::execution("flaky backend")) } else { Ok(ctx.attempt()) }
}

/// Sleeps, to exercise timeouts and concurrency.
#[tool(timeout_ms = 50)]
pub async fn nap(millis: u64) -> u64 {
    // Through tokio's clock, so paused-time tests stay deterministic.
    tokio::time::sleep(std::time::Duration::from_millis(millis)).await;
    millis
}

/// Panics in a plain `fn`, on the blocking pool.
#[tool(max_retries = 0)]
pub fn explode(reason: String) -> String {
    panic!("{reason}")
}

/// The weather in one city.
#[derive(Serialize, JsonSchema)]
pub struct Forecast {
    /// The city.
    pub city: String,
    /// Degrees Celsius.
    pub celsius: f64,
}

/// Forecast the weather; `return_schema` alone requires the value type to have one.
#[tool(return_schema)]
pub async fn forecast(city: String) -> Result<Forecast, ToolError> {
    Ok(Forecast { city, celsius: 21.5 })
}

/// A service's status, with a return schema narrower than `String`'s.
#[tool(return_schema = r#"{"type": "string", "enum": ["up", "down"]}"#)]
pub async fn status(service: String) -> String {
    if service == "web" { "up".to_owned() } else { service }
}

/// Count the arguments; `return_schema = false` declares none for a typed return.
#[tool(return_schema = false)]
pub async fn count_untyped(items: Vec<String>) -> usize {
    items.len()
}

/// A picture: content parts are what the model sees, not a structured value.
#[tool]
pub async fn picture() -> starweaver::content::Image {
    starweaver::content::Image::url("https://example.com/a.png")
}
