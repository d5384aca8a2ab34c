//! Hooks: the application's code between the model and every tool call ([`Hooks`]).
//!
//! A hook sees each call of the agent, toolset or run it is attached to, wherever the call
//! runs (an agent run, an MCP-served call, [`Agent::run_call`](crate::Agent::run_call)):
//! on the way in, run hooks first, then the agent's, then the toolset's; on the way out, the
//! reverse. What runs them is `scheduler::hooks`; this module only says what a hook is.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::future::BoxFuture;
use serde_json::Value;

use crate::tool::{ToolContext, ToolDefinition, ToolError, ToolResult};

/// A tool call as hooks see it: the model's id for it, the tool, and its arguments (a JSON
/// object; the arguments as earlier hooks left them). Borrowed from the call, so a hook
/// that only looks copies nothing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HookCall<'a> {
    /// The model's call id.
    pub id: &'a Arc<str>,
    /// The tool's name.
    pub name: &'a Arc<str>,
    /// The arguments, as a JSON object.
    pub arguments: &'a Value,
}

/// What [`Hooks::before_call`] decides.
// Returned once per call and never stored: boxing the answer would cost every answer an
// allocation to save stack space nobody keeps.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub enum Before {
    /// Go on with the arguments as they are.
    Continue,
    /// Go on with these arguments instead (a JSON object; the tool's schema checks them).
    Arguments(Value),
    /// This is the call's result: the tool does not run.
    Answer(ToolResult),
}

/// What a hook method gives: a value at once (no allocation, the common case), or a future
/// of it.
///
/// ```
/// use starweaver::hook::{Before, Hooked};
///
/// let at_once: Hooked<'_, Result<Before, starweaver::ToolError>> = Hooked::ready(Ok(Before::Continue));
/// let later: Hooked<'_, Result<Before, starweaver::ToolError>> = Hooked::new(async { Ok(Before::Continue) });
/// # drop((at_once, later));
/// ```
pub enum Hooked<'a, T> {
    /// The value, until polled.
    Ready(Option<T>),
    /// A future of the value.
    Pending(BoxFuture<'a, T>),
}

impl<'a, T> Hooked<'a, T> {
    /// The value now.
    pub fn ready(value: T) -> Self {
        Self::Ready(Some(value))
    }

    /// The value `future` gives.
    pub fn new(future: impl Future<Output = T> + Send + 'a) -> Self {
        Self::Pending(Box::pin(future))
    }
}

// The value is moved out, never pinned in place, so pinning `Hooked` pins nothing of `T`.
impl<T> Unpin for Hooked<'_, T> {}

impl<T> Future for Hooked<'_, T> {
    type Output = T;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        match self.get_mut() {
            Self::Ready(value) => Poll::Ready(value.take().expect("`Hooked` polled after it completed")),
            Self::Pending(future) => future.as_mut().poll(cx),
        }
    }
}

/// Code that runs around every tool call (and lists each step's tools); every method has a
/// default that changes nothing, so a hook implements only what it needs.
///
/// - [`before_call`](Self::before_call): after the arguments parse as JSON, before the
///   tool's schema checks them, the approval gate and the call's places under its
///   concurrency limits (a hook never holds a place); may rewrite the arguments,
///   answer in the tool's place, or fail the call with any [`ToolError`] (with the meaning
///   that kind has when a tool raises it: `ModelRetry`, `UserError`, `ApprovalRequired`, ...).
/// - [`after_call`](Self::after_call): may change or replace the result in place, or fail
///   the call.
/// - [`on_error`](Self::on_error): sees a failure after the call's own retries; may turn
///   it into a result.
/// - [`prepare_tools`](Self::prepare_tools): once per step, the definitions the model is
///   offered; a tool it drops cannot be called in that step.
///
/// A hook that panics, or fails with an `execution` error, fails that call (an `execution`
/// error return naming the hook, not retried), never the run.
///
/// ```
/// use serde_json::json;
/// use starweaver::hook::{Before, HookCall, Hooked, Hooks};
/// use starweaver::testing::TestModel;
/// use starweaver::{Agent, ModelResponse, ToolCallPart, ToolContext, ToolError, tool};
///
/// /// Deploy to an environment.
/// #[tool]
/// async fn deploy(env: String) -> String {
///     format!("deployed to {env}")
/// }
///
/// /// Sends every deploy to staging.
/// struct StagingOnly;
///
/// impl Hooks for StagingOnly {
///     fn before_call<'a>(&'a self, _: &'a ToolContext, call: &'a HookCall<'a>) -> Hooked<'a, Result<Before, ToolError>> {
///         let mut arguments = call.arguments.clone();
///         arguments["env"] = json!("staging");
///         Hooked::ready(Ok(Before::Arguments(arguments)))
///     }
/// }
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let model = TestModel::new([
///     TestModel::tool_call_response([ToolCallPart::new("c1", "deploy", json!({"env": "prod"}))]),
///     ModelResponse::text("done"),
/// ]);
/// let agent = Agent::builder(model).tool(deploy_tool()).hook(StagingOnly).build().unwrap();
/// let result = agent.run("deploy").await.unwrap();
/// let returned = result.messages.messages()[2].tool_returns().next().unwrap().content.clone();
/// assert_eq!(returned, json!("deployed to staging"));
/// # });
/// ```
pub trait Hooks: Send + Sync + 'static {
    /// The hook's name, as the `tool_call` event and error messages give it (its type's
    /// name unless it says otherwise).
    fn name(&self) -> &str {
        std::any::type_name::<Self>()
    }

    /// Runs before the call: [`Before::Continue`] by default.
    ///
    /// # Errors
    /// Any [`ToolError`]: the call ends as if the tool had raised it.
    fn before_call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        call: &'a HookCall<'a>,
    ) -> Hooked<'a, Result<Before, ToolError>> {
        let _ = (ctx, call);
        Hooked::ready(Ok(Before::Continue))
    }

    /// Runs after the call gave `result`, which it may change or replace in place (redact,
    /// shorten): the model gets `result` as the hook leaves it (unchanged by default).
    ///
    /// # Errors
    /// Any [`ToolError`]: the call ends as if the tool had raised it, and `result`, however
    /// the hook left it (a Python hook leaves it empty), is dropped.
    fn after_call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        call: &'a HookCall<'a>,
        result: &'a mut ToolResult,
    ) -> Hooked<'a, Result<(), ToolError>> {
        let _ = (ctx, call, result);
        Hooked::ready(Ok(()))
    }

    /// Runs after the call failed with `error` (past its own retries); a result turns the
    /// failure into that result. By default the error stands.
    ///
    /// # Errors
    /// The error the call ends with: `error`, or another.
    fn on_error<'a>(
        &'a self,
        ctx: &'a ToolContext,
        call: &'a HookCall<'a>,
        error: ToolError,
    ) -> Hooked<'a, Result<ToolResult, ToolError>> {
        let _ = (ctx, call);
        Hooked::ready(Err(error))
    }

    /// The definitions the model is offered this step (all of `definitions` by default).
    /// It may drop tools and change descriptions or schemas; it cannot add a tool. `ctx`
    /// names no call (its tool name and call id are empty).
    ///
    /// # Errors
    /// A [`ToolError`] fails the run, naming the hook.
    fn prepare_tools<'a>(
        &'a self,
        ctx: &'a ToolContext,
        definitions: Vec<ToolDefinition>,
    ) -> Hooked<'a, Result<Vec<ToolDefinition>, ToolError>> {
        let _ = ctx;
        Hooked::ready(Ok(definitions))
    }
}

impl<H: Hooks + ?Sized> Hooks for Arc<H> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn before_call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        call: &'a HookCall<'a>,
    ) -> Hooked<'a, Result<Before, ToolError>> {
        (**self).before_call(ctx, call)
    }

    fn after_call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        call: &'a HookCall<'a>,
        result: &'a mut ToolResult,
    ) -> Hooked<'a, Result<(), ToolError>> {
        (**self).after_call(ctx, call, result)
    }

    fn on_error<'a>(
        &'a self,
        ctx: &'a ToolContext,
        call: &'a HookCall<'a>,
        error: ToolError,
    ) -> Hooked<'a, Result<ToolResult, ToolError>> {
        (**self).on_error(ctx, call, error)
    }

    fn prepare_tools<'a>(
        &'a self,
        ctx: &'a ToolContext,
        definitions: Vec<ToolDefinition>,
    ) -> Hooked<'a, Result<Vec<ToolDefinition>, ToolError>> {
        (**self).prepare_tools(ctx, definitions)
    }
}
