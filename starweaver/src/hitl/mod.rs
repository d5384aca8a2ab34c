//! Human in the loop: what a waiting run asks for, and the decisions that
//! resume it.

mod decision;
mod pending;
mod policy;
mod resolve;

pub use decision::{ApprovalDecision, DeferredOutcome, DeferredResult, ElicitationResponse, HitlDecisions};
pub(crate) use pending::fresh_id;
pub use pending::{Hitl, PendingApproval, PendingCall, PendingDeferred, PendingElicitation, canonical_id};
pub use policy::{ApprovalPolicy, ApprovalRule};
pub(crate) use resolve::{Pending, PendingKind, Resolution, resolve};
