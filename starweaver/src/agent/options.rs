//! [`RunOptions`]: what one run may set beside the agent's own configuration.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::limits::UsageLimits;
use crate::hook::Hooks;
use crate::output::Output;
use crate::tool::{Dependencies, Tool};
use crate::toolset::Toolset;

/// Per-run options.
#[derive(Clone, Default)]
pub struct RunOptions {
    /// Cancel this token to cancel the run: running tools are cancelled and the run ends
    /// with status `cancelled`.
    pub cancellation: Option<CancellationToken>,
    /// Dependencies for this run instead of the agent's.
    pub dependencies: Option<Dependencies>,
    /// Tools for this run only, beside the agent's (which stays unchanged).
    pub tools: Vec<Arc<dyn Tool>>,
    /// Toolsets for this run only, beside the agent's.
    pub toolsets: Vec<Arc<dyn Toolset>>,
    /// Usage limits for this run instead of the agent's.
    pub usage_limits: Option<UsageLimits>,
    /// Hooks for this run's calls, before the agent's.
    pub hooks: Vec<Arc<dyn Hooks>>,
    /// What this run answers with instead of the agent's output (whose validators, mode
    /// and retries it does not take: it has its own). A waiting run is given it again
    /// when it is resumed, as its own tools are.
    pub output: Option<Output>,
}

impl std::fmt::Debug for RunOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunOptions")
            .field("cancellation", &self.cancellation)
            .field("dependencies", &self.dependencies)
            .field("tools", &self.tools.iter().map(|t| &t.definition().name).collect::<Vec<_>>())
            .field("toolsets", &self.toolsets.iter().map(Toolset::name).collect::<Vec<_>>())
            .field("usage_limits", &self.usage_limits)
            .field("hooks", &self.hooks.iter().map(Hooks::name).collect::<Vec<_>>())
            .field("output", &self.output)
            .finish()
    }
}
