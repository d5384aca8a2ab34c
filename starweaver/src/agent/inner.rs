//! What a built agent holds ([`AgentInner`], shared by the `Agent` handle, its sessions and
//! the drivers), and the tools each step of a run sees: the agent's, the run's own, and what
//! dynamic toolsets list at that step.

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::event::EventKind;
use crate::hitl::ApprovalPolicy;
use crate::model::Model;
use crate::registry::{Registration, RegistrationRules, Source, ToolRegistry};
use crate::store::SessionStore;
use crate::tool::{Dependencies, Tool};
use crate::toolset::{RefusedTool, Toolset, ToolsetContext};

/// A built agent: checked once at build, then only read.
pub(crate) struct AgentInner {
    pub model: Arc<dyn Model>,
    /// The agent's own tools and static toolsets, checked once at build.
    pub registry: Arc<ToolRegistry>,
    /// What `registry` was built from, for the steps that add dynamic tools to it.
    pub entries: Vec<Registration>,
    /// Toolsets listed again at every step.
    pub dynamic: Vec<Arc<dyn Toolset>>,
    pub policy: ApprovalPolicy,
    pub rules: RegistrationRules,
    pub instructions: Option<String>,
    pub max_steps: u32,
    pub max_concurrency: Option<usize>,
    pub dependencies: Dependencies,
    pub store: Arc<dyn SessionStore>,
}

/// A run's own tools: those known now, and toolsets to list at each step.
#[derive(Default)]
pub(crate) struct RunTools {
    entries: Vec<Registration>,
    dynamic: Vec<Arc<dyn Toolset>>,
}

impl RunTools {
    pub(crate) fn new(tools: Vec<Arc<dyn Tool>>, toolsets: Vec<Arc<dyn Toolset>>) -> Self {
        let mut run = Self::default();
        run.entries.extend(tools.into_iter().map(|tool| Registration { tool, source: Source::Run }));
        for toolset in toolsets {
            split(toolset, &mut run.entries, &mut run.dynamic);
        }
        run
    }
}

/// A static toolset's tools go to `entries`; a dynamic one waits in `dynamic`.
pub(crate) fn split(toolset: Arc<dyn Toolset>, entries: &mut Vec<Registration>, dynamic: &mut Vec<Arc<dyn Toolset>>) {
    match toolset.static_tools() {
        Some(tools) => {
            let source = Source::of(&*toolset);
            entries.extend(tools.into_iter().map(|tool| Registration { tool, source: source.clone() }));
        }
        None => dynamic.push(toolset),
    }
}

/// The tools of one step, and a `tool_refused` event for each tool its toolsets left out.
pub(crate) struct StepTools {
    pub(crate) registry: Arc<ToolRegistry>,
    pub(crate) refused: Vec<EventKind>,
}

impl AgentInner {
    /// The tools of one step: the agent's, the run's own, and what every dynamic toolset
    /// lists now. Without dynamic toolsets or run tools, the agent's registry as built.
    ///
    /// # Errors
    /// A toolset that cannot list its tools, or two sources giving one name.
    pub(crate) async fn tools_for(&self, run: &RunTools, ctx: &ToolsetContext) -> Result<StepTools> {
        if self.dynamic.is_empty() && run.entries.is_empty() && run.dynamic.is_empty() {
            return Ok(StepTools { registry: self.registry.clone(), refused: Vec::new() });
        }
        let mut entries = self.entries.clone();
        entries.extend(run.entries.iter().cloned());
        let mut refused = Vec::new();
        for toolset in self.dynamic.iter().chain(&run.dynamic) {
            let tools = toolset
                .list_tools(ctx)
                .await
                .map_err(|error| Error::Toolset { toolset: toolset.name().to_owned(), message: error.to_string() })?;
            refused.extend(ctx.take_refused().into_iter().map(|RefusedTool { tool, reason }| EventKind::ToolRefused {
                step: ctx.step,
                toolset: toolset.name().to_owned(),
                tool,
                reason,
            }));
            let source = Source::of(&**toolset);
            entries.extend(tools.into_iter().map(|tool| Registration { tool, source: source.clone() }));
        }
        let registry = ToolRegistry::new(entries, &self.policy, self.rules).map(Arc::new)?;
        Ok(StepTools { registry, refused })
    }
}
