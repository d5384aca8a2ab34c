//! Human in the loop: what a waiting run asks for, and the decisions that
//! resume it.

mod decision;
mod pending;
mod policy;
mod resolve;

pub use decision::{ApprovalDecision, DeferredOutcome, DeferredResult, HitlDecisions};
pub(crate) use pending::fresh_id;
pub use pending::{Hitl, PendingApproval, PendingCall, PendingDeferred, canonical_id};
pub use policy::{ApprovalPolicy, ApprovalRule};
pub(crate) use resolve::{Pending, Resolution, resolve};
