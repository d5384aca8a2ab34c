//! Running a call's hooks ([`Hooks`]): the way in (`before_call`, in order: the run's,
//! the agent's, then the tool's toolset's) and the way out (in reverse, each hook entered
//! sees the result with `after_call` or the failure with `on_error`, as the hooks after it
//! left it). Each hook is guarded: a panic, or an `execution` failure of `before_call` or
//! `after_call`, is a failure of the call naming the hook, never of the run.

use std::ops::ControlFlow;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::Value;

use crate::hook::{Before, HookCall, Hooked, Hooks};
use crate::message::ToolCallPart;
use crate::registry::ToolRegistry;
use crate::tool::{
    Dependencies, Lent, ToolContext, ToolDefinition, ToolError, ToolErrorKind, ToolResult, panic_message,
};

use super::attempted::Attempted;

/// The hooks of one call: the run's and the agent's (`outer`), then its toolset's.
#[derive(Clone, Copy)]
pub(crate) struct HookChain<'a> {
    pub outer: &'a [Arc<dyn Hooks>],
    pub toolset: &'a [Arc<dyn Hooks>],
}

impl<'a> HookChain<'a> {
    pub(crate) fn is_empty(self) -> bool {
        self.outer.is_empty() && self.toolset.is_empty()
    }

    fn iter(self) -> impl Iterator<Item = &'a Arc<dyn Hooks>> {
        self.outer.iter().chain(self.toolset)
    }

    /// The first `count` hooks of the way in.
    pub(crate) fn first(self, count: usize) -> Self {
        let (outer, _) = self.outer.split_at(count.min(self.outer.len()));
        let (toolset, _) = self.toolset.split_at((count - outer.len()).min(self.toolset.len()));
        Self { outer, toolset }
    }

    /// The hooks in the order of the way out: the way in's, reversed.
    fn way_out(self) -> impl Iterator<Item = &'a Arc<dyn Hooks>> {
        self.toolset.iter().rev().chain(self.outer.iter().rev())
    }
}

/// What a call ends with: a result or a failure.
type Outcome = Result<ToolResult, ToolError>;

/// A call with hooks: its hooks' context and how its way in went. Kept in the call's
/// future, which has room for it: a box would cost every call with hooks an allocation.
pub(crate) struct HookedCall<'c> {
    /// The context every hook method of the call is handed: lent, since hooks only borrow it.
    pub ctx: Lent<'c>,
    /// The arguments as the last hook that rewrote them left them, and its name (boxed:
    /// rarer than a call).
    pub rewritten: Option<Box<(Value, Arc<str>)>>,
    /// The hook that answered in the tool's place.
    pub answered_by: Option<Arc<str>>,
    /// How many hooks the call went through (whose way out runs).
    pub count: usize,
}

impl<'c> HookedCall<'c> {
    /// A call about to go through its hooks, with `ctx`.
    pub(crate) fn new(ctx: Lent<'c>) -> Self {
        Self { ctx, rewritten: None, answered_by: None, count: 0 }
    }

    /// The arguments the hooks left: `model`'s (the call's own) unless one rewrote them.
    pub(crate) fn arguments<'a>(&'a self, model: &'a Value) -> &'a Value {
        self.rewritten.as_deref().map_or(model, |(arguments, _)| arguments)
    }

    /// Takes what `hook` decided on the way in: the call goes on to the next hook, or ends
    /// with what the hook answered or failed with.
    fn decided(
        &mut self,
        hook: &dyn Hooks,
        part: &ToolCallPart,
        decided: Result<Before, ToolError>,
    ) -> ControlFlow<Box<Outcome>> {
        let stopped = match decided {
            Ok(Before::Continue) => return ControlFlow::Continue(()),
            Ok(Before::Arguments(arguments)) if arguments.is_object() => {
                self.rewritten = Some(Box::new((arguments, hook.name().into())));
                // What a binding kept of the arguments is of them as they were.
                self.ctx.binding_mut().rewrites += 1;
                return ControlFlow::Continue(());
            }
            Ok(Before::Arguments(other)) => {
                let message = format!(
                    "hook `{}` rewrote the arguments of `{}` to {}; arguments must be a JSON object",
                    hook.name(),
                    part.name,
                    crate::json::kind_of(&other)
                );
                Err(ToolError::execution(message).not_retryable())
            }
            Ok(Before::Answer(result)) => {
                self.answered_by = Some(hook.name().into());
                Ok(result)
            }
            Err(error) => Err(error),
        };
        // Boxed: rare, and a call's future carries it across its attempts.
        ControlFlow::Break(Box::new(stopped))
    }

    /// A copy of the arguments hooks rewrote the call's to, if they did: made when needed,
    /// so the call's future does not carry one.
    pub(crate) fn rewritten_arguments(&self) -> Option<Value> {
        self.rewritten.as_deref().map(|(arguments, _)| arguments.clone())
    }

    /// The last hook that rewrote the arguments.
    pub(crate) fn rewritten_by(&self) -> Option<&Arc<str>> {
        self.rewritten.as_deref().map(|(_, by)| by)
    }
}

/// Runs `before_call` of each hook in order on the call `part` with `arguments`, each
/// handed the arguments the hook before it left, until one answers or fails; `hooked` keeps
/// how it went. What ended the call on the way in, if a hook did: its answer or failure. A
/// hook's answer is never kept across a wait, so a call's future carries little more than
/// the answer it waits for.
pub(crate) async fn enter(
    hooks: HookChain<'_>,
    part: &ToolCallPart,
    arguments: &Value,
    hooked: &mut HookedCall<'_>,
) -> Option<Box<Outcome>> {
    for hook in hooks.iter() {
        let decided = 'decided: {
            let seen = HookCall { id: &part.id, name: &part.name, arguments: hooked.arguments(arguments) };
            // Taken apart before the wait, so a call's future keeps no room for an answer.
            let pending = match guarded(&**hook, BEFORE_CALL, || hook.before_call(&hooked.ctx, &seen)) {
                // The common answer, made again rather than moved.
                Ok(Ok(Before::Continue)) => break 'decided Ok(Before::Continue),
                Ok(decided) => break 'decided decided,
                Err(pending) => pending,
            };
            later(&**hook, BEFORE_CALL, pending).await
        };
        // The common answer goes on here, not through `decided`, which takes the rest: 30
        // instructions a call fewer with hooks (`benches/scheduler.rs`), `decided` inlined
        // or not.
        if matches!(decided, Ok(Before::Continue)) {
            hooked.count += 1;
            continue;
        }
        if let ControlFlow::Break(stopped) = hooked.decided(&**hook, part, decided) {
            return Some(stopped);
        }
        hooked.count += 1;
    }
    None
}

/// Runs the way out through `hooks`, last first: `after_call` while there is a result,
/// which each changes in place, and `on_error` while there is a failure, which it may turn
/// into a result. A failure keeps what the model is told of the call's attempts, unless a
/// hook's `after_call` made it. A call that waits for a human passes no hook: it goes out
/// when it ends. A hook that answers at once adds no wait.
#[expect(
    clippy::manual_async_fn,
    reason = "an `async fn`'s future keeps the outcome twice, as an argument and as the local it is moved \
              to (rust-lang/rust#62958): 112 bytes more in every call's future"
)]
pub(crate) fn leave<'a>(
    hooks: HookChain<'a>,
    ctx: &'a ToolContext,
    call: &'a HookCall<'a>,
    mut outcome: Attempted,
) -> impl Future<Output = Attempted> + Send + 'a {
    async move {
        if outcome.as_ref().is_err_and(|(error, _)| error.kind().suspends_call()) {
            return outcome;
        }
        for hook in hooks.way_out() {
            // Each answer is taken apart before any wait, so the future keeps no room for one.
            match &mut outcome {
                Ok(result) => {
                    let answer = 'answered: {
                        let pending = match guarded(&**hook, AFTER_CALL, || hook.after_call(ctx, call, result)) {
                            Ok(now) => break 'answered now,
                            Err(pending) => pending,
                        };
                        later(&**hook, AFTER_CALL, pending).await
                    };
                    if let Err(error) = answer {
                        outcome = Err((error, None));
                    }
                }
                Err(_) => {
                    // `on_error` takes the failure: its place holds an empty result until the answer.
                    let Err((error, tried)) = std::mem::replace(&mut outcome, Ok(ToolResult::default())) else {
                        unreachable!("the outcome was matched as a failure")
                    };
                    let answer = 'answered: {
                        let pending = match guarded(&**hook, ON_ERROR, || hook.on_error(ctx, call, error)) {
                            Ok(now) => break 'answered now,
                            Err(pending) => pending,
                        };
                        later(&**hook, ON_ERROR, pending).await
                    };
                    outcome = answer.map_err(|error| (error, tried));
                }
            }
        }
        outcome
    }
}

/// A hook method, as its failures are told: its name, and whether an `execution` error it
/// returns is the hook's failure, named (a panic always is).
#[derive(Clone, Copy)]
struct Stage {
    name: &'static str,
    blame: bool,
}

const BEFORE_CALL: Stage = Stage { name: "before_call", blame: true };
const AFTER_CALL: Stage = Stage { name: "after_call", blame: true };
// The error `on_error` gives back is usually the call's own: it is not the hook's failure
// to blame on it.
const ON_ERROR: Stage = Stage { name: "on_error", blame: false };
const PREPARE_TOOLS: Stage = Stage { name: "prepare_tools", blame: true };

/// A hook method's future, its panics not yet caught.
type Pending<'h, T> = BoxFuture<'h, Result<T, ToolError>>;

/// Calls one hook method: what it answered at once, judged (a panic making the answer is
/// an `execution` failure naming the hook), or the future it answers with, for [`later`]
/// to await and judge. A sync hook's answer is taken as it is, never moved through a
/// future, and a hook that waits adds no box to its own.
// Inlined, so the answer (a 176-byte result) is not copied in and out of a frame of its
// own at every hook: measured in `benches/scheduler.rs`.
#[expect(clippy::inline_always, reason = "measured: fewer copies of every hook's answer")]
#[inline(always)]
fn guarded<'h, T: Send + 'h>(
    hook: &dyn Hooks,
    stage: Stage,
    call: impl FnOnce() -> Hooked<'h, Result<T, ToolError>>,
) -> Result<Result<T, ToolError>, Pending<'h, T>> {
    match std::panic::catch_unwind(AssertUnwindSafe(call)) {
        Ok(Hooked::Ready(Some(outcome))) => Ok(judged(hook, stage, Ok(outcome))),
        Ok(Hooked::Pending(pending)) => Err(pending),
        // Made empty by hand: awaiting it fails as polling it would.
        Ok(spent @ Hooked::Ready(None)) => Err(Box::pin(spent)),
        Err(panic) => Ok(judged(hook, stage, Err(panic))),
    }
}

/// What a hook method that answers later gives, judged as [`guarded`] judges an answer
/// given at once (a panic while it is polled is the hook's failure too). A future of a
/// few words, not an `async fn`'s, which would keep its arguments twice.
fn later<'h, T: 'h>(
    hook: &'h dyn Hooks,
    stage: Stage,
    pending: Pending<'h, T>,
) -> impl Future<Output = Result<T, ToolError>> + Send + 'h {
    AssertUnwindSafe(pending).catch_unwind().map(move |outcome| judged(hook, stage, outcome))
}

/// What a hook method's outcome (or its panic) means for the call.
#[expect(clippy::inline_always, reason = "measured: fewer copies of every hook's answer")]
#[inline(always)]
fn judged<T>(
    hook: &dyn Hooks,
    stage: Stage,
    outcome: std::thread::Result<Result<T, ToolError>>,
) -> Result<T, ToolError> {
    match outcome {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(error)) if stage.blame && error.kind() == ToolErrorKind::Execution => {
            Err(failed(hook, stage.name, error))
        }
        Ok(Err(error)) => Err(error),
        Err(panic) => {
            Err(failed(hook, stage.name, ToolError::execution(format!("it panicked: {}", panic_message(&*panic)))))
        }
    }
}

/// A step's tools as the hooks' `prepare_tools` leave them, or `None` when no hook sees
/// them: `hooks` (a run's and the agent's) see every tool, then each toolset's hooks see
/// (and may drop) only their toolset's, which stay where the toolset's first tool was. The
/// output tools are the application's own, not the hooks' to drop: they stay last.
///
/// # Errors
/// Why the run cannot go on: a hook's failure or panic, named, or tools a hook added.
pub(crate) async fn prepare_step(
    registry: &ToolRegistry,
    hooks: &[Arc<dyn Hooks>],
    run_id: &Arc<str>,
    dependencies: &Dependencies,
) -> Result<Option<ToolRegistry>, String> {
    let toolset_hooks = registry.toolset_hooks();
    if hooks.is_empty() && toolset_hooks.is_empty() {
        return Ok(None);
    }
    let mut ctx = ToolContext::of_run("", run_id.clone(), dependencies.clone());
    ctx.tool_call_id = Arc::from("");
    let (outputs, offered): (Vec<_>, Vec<_>) =
        registry.definitions().iter().cloned().partition(|d| registry.is_output(&d.name));
    let mut definitions = prepare(hooks, &ctx, offered).await?;
    for hooks in &toolset_hooks {
        let of_toolset =
            |definition: &ToolDefinition| registry.get(&definition.name).is_some_and(|t| Arc::ptr_eq(&t.hooks, hooks));
        let Some(at) = definitions.iter().position(of_toolset) else { continue };
        let (own, mut rest): (Vec<_>, Vec<_>) = definitions.into_iter().partition(of_toolset);
        let own = prepare(hooks, &ctx, own).await?;
        if let Some(stranger) = own.iter().find(|definition| !of_toolset(definition)) {
            return Err(format!(
                "a toolset's hooks' `prepare_tools` returned the tool `{}`, which is not the toolset's",
                stranger.name
            ));
        }
        rest.splice(at..at, own);
        definitions = rest;
    }
    definitions.extend(outputs);
    registry.prepared(definitions).map(Some)
}

/// The definitions a step offers after `hooks`' `prepare_tools`, each given what the one
/// before it left; or why the run cannot go on (a hook's failure or panic, named).
async fn prepare(
    hooks: &[Arc<dyn Hooks>],
    ctx: &ToolContext,
    mut definitions: Vec<ToolDefinition>,
) -> Result<Vec<ToolDefinition>, String> {
    for hook in hooks {
        let prepared = match guarded(&**hook, PREPARE_TOOLS, || hook.prepare_tools(ctx, definitions)) {
            Ok(now) => now,
            Err(pending) => later(&**hook, PREPARE_TOOLS, pending).await,
        };
        definitions = prepared
            // `guarded` names the hook in `execution` failures (a panic is one); any failure
            // here ends the run, so the others are named too.
            .map_err(|error| match error.kind() {
                ToolErrorKind::Execution => error.message().to_owned(),
                _ => format!("hook `{}` failed in `prepare_tools`: {}", hook.name(), error.message()),
            })?;
    }
    Ok(definitions)
}

/// A hook's unexpected failure as the call's `execution` failure: named, and not retried
/// (a retry would run the tool again for the hook's sake).
fn failed(hook: &dyn Hooks, stage: &str, error: ToolError) -> ToolError {
    let (kind, message, metadata, private) = error.into_parts();
    let mut error =
        ToolError::new(kind, format!("hook `{}` failed in `{stage}`: {message}", hook.name())).with_metadata(metadata);
    if let Some(private) = private {
        error = error.with_private_metadata(private);
    }
    error.not_retryable()
}
