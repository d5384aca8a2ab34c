//! A call's context made without reference counts of its own ([`Lent`]), for code that only
//! borrows it: a call's hooks.
//!
//! A context holds the run's scope, the call's id, the tool's name and the call's approval
//! (when it has one), each under a reference count. Every count taken or given back is an
//! atomic operation, about five nanoseconds on the machines we measure, and a context takes
//! three or four and gives them back. A call with hooks hands its hooks a context besides
//! the one its tool is given, and the tool's cannot be the hooks' (a tool owns its
//! context): lending the hooks one that shares what the call already holds saves those
//! atomic operations on every call with hooks, about a third of what hooks that do nothing
//! cost the runtime.

use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::ops::Deref;
use std::sync::Arc;

use super::context::{Attempt, BindingSlot, RunScope, ToolContext};
use crate::hitl::ApprovalDecision;

/// What a context of a call shares with the call, borrowed from whoever holds it for the
/// call's whole length (the run, the request, the registry).
pub(crate) struct Shared<'a> {
    pub scope: &'a Arc<RunScope>,
    pub tool_call_id: &'a Arc<str>,
    pub tool_name: &'a Arc<str>,
    pub approval: Option<&'a Arc<ApprovalDecision>>,
}

/// A context whose shared fields are those of [`Shared`], held without counts: it lives no
/// longer than the borrow `'a` of them and gives out only `&ToolContext`, so nothing can
/// move or replace those fields, and a clone of it takes counts of its own.
pub(crate) struct Lent<'a> {
    ctx: ManuallyDrop<ToolContext>,
    _shared: PhantomData<&'a ToolContext>,
}

impl<'a> Shared<'a> {
    /// A context of its own, taking a count of each shared field: one that may outlive the
    /// borrow, as a tool's does.
    pub(crate) fn owned(self, attempt: Attempt) -> ToolContext {
        let Shared { scope, tool_call_id, tool_name, approval } = self;
        ToolContext::of_call(scope.clone(), tool_call_id.clone(), tool_name.clone(), approval.cloned(), attempt)
    }

    /// A context lent: it holds the shared fields without counts of its own.
    pub(crate) fn lent(self, attempt: Attempt) -> Lent<'a> {
        let Shared { scope, tool_call_id, tool_name, approval } = self;
        // SAFETY: each value read is a second handle on an `Arc` that `self` borrows for
        // `'a`, whose own handle keeps it alive that long. The read handles are never
        // dropped (`Lent::drop` forgets them) nor handed out by value or by `&mut` (`Lent`
        // derefs only to `&ToolContext`), so they give back no count they did not take, and
        // whatever clones them through `&ToolContext` takes a count of its own.
        let ctx = unsafe {
            ToolContext::of_call(
                std::ptr::read(scope),
                std::ptr::read(tool_call_id),
                std::ptr::read(tool_name),
                approval.map(|approval| std::ptr::read(approval)),
                attempt,
            )
        };
        Lent { ctx: ManuallyDrop::new(ctx), _shared: PhantomData }
    }
}

impl Lent<'_> {
    /// What a language binding keeps with the context; the only part of it that may change.
    pub(crate) fn binding_mut(&mut self) -> &mut BindingSlot {
        &mut self.ctx.binding
    }
}

impl Deref for Lent<'_> {
    type Target = ToolContext;

    fn deref(&self) -> &ToolContext {
        &self.ctx
    }
}

impl Drop for Lent<'_> {
    fn drop(&mut self) {
        // SAFETY: dropped once, and the context is not used after.
        let ToolContext {
            scope,
            tool_call_id,
            tool_name,
            approval,
            retry: _,
            attempt: _,
            max_retries: _,
            cancellation,
            replies,
            binding,
        } = unsafe { ManuallyDrop::take(&mut self.ctx) };
        // The shared fields' counts are their owners', not this context's to give back.
        std::mem::forget((scope, tool_call_id, tool_name, approval));
        drop((cancellation, replies, binding));
    }
}

#[cfg(test)]
mod tests {
    use tokio_util::sync::CancellationToken;

    use super::*;
    use crate::tool::Dependencies;

    fn shared_parts() -> (Arc<RunScope>, Arc<str>, Arc<str>, Arc<ApprovalDecision>) {
        let scope = RunScope::new(Arc::from("run-1"), CancellationToken::new(), Dependencies::new(), None);
        (
            scope,
            Arc::from("call-1"),
            Arc::from("deploy"),
            Arc::new(ApprovalDecision { approved: true, ..ApprovalDecision::default() }),
        )
    }

    fn shared(parts: &(Arc<RunScope>, Arc<str>, Arc<str>, Arc<ApprovalDecision>)) -> Shared<'_> {
        Shared { scope: &parts.0, tool_call_id: &parts.1, tool_name: &parts.2, approval: Some(&parts.3) }
    }

    fn attempt() -> Attempt {
        Attempt { retry: 2, attempt: 1, max_retries: 3, cancellation: None, replies: None }
    }

    fn counts(parts: &(Arc<RunScope>, Arc<str>, Arc<str>, Arc<ApprovalDecision>)) -> [usize; 4] {
        [
            Arc::strong_count(&parts.0),
            Arc::strong_count(&parts.1),
            Arc::strong_count(&parts.2),
            Arc::strong_count(&parts.3),
        ]
    }

    #[test]
    fn a_lent_context_shows_the_call_and_leaves_every_count_as_it_found_it() {
        let parts = shared_parts();
        let before = counts(&parts);
        {
            let lent = shared(&parts).lent(attempt());
            assert_eq!((lent.tool_call_id(), lent.tool_name(), lent.run_id()), ("call-1", "deploy", "run-1"));
            assert_eq!((lent.retry(), lent.attempt(), lent.max_retries()), (2, 1, 3));
            assert!(lent.approval().is_some());
            assert_eq!(counts(&parts), before, "lending takes no count");
            let clone = (*lent).clone();
            assert_eq!(counts(&parts), before.map(|n| n + 1), "a clone takes counts of its own");
            drop(lent);
            assert_eq!(clone.tool_name(), "deploy", "a clone outlives the lent context");
        }
        assert_eq!(counts(&parts), before);
    }

    #[test]
    fn an_owned_context_holds_counts_of_its_own() {
        let parts = shared_parts();
        let before = counts(&parts);
        let owned = shared(&parts).owned(attempt());
        assert_eq!(counts(&parts), before.map(|n| n + 1));
        drop(owned);
        assert_eq!(counts(&parts), before);
    }

    #[test]
    fn what_a_lent_context_owns_is_given_back() {
        let parts = shared_parts();
        let token = Arc::new(CancellationToken::new());
        let shared = Shared { approval: None, ..shared(&parts) };
        let mut lent = shared.lent(Attempt { cancellation: Some(token.clone()), ..attempt() });
        lent.binding_mut().rewrites += 1;
        assert_eq!(Arc::strong_count(&token), 2);
        drop(lent);
        assert_eq!(Arc::strong_count(&token), 1);
    }
}
