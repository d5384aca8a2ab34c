//! What a built agent holds ([`AgentInner`], shared by the `Agent` handle, its sessions and
//! the drivers), and the tools each step of a run sees: the agent's, the run's own, and what
//! dynamic toolsets list at that step.

use std::sync::Arc;

use crate::concurrency::{ConcurrencyLimit, Limit};
use crate::error::{Error, Result};
use crate::event::EventKind;
use crate::hitl::ApprovalPolicy;
use crate::hook::Hooks;
use crate::model::Model;
use crate::output::RunOutput;
use crate::registry::{Registration, RegistrationRules, ToolList, ToolRegistry};
use crate::store::SessionStore;
use crate::tool::{CallChannel, Dependencies};
use crate::toolset::{RefusedTool, ToolsetContext};

use super::limits::UsageLimits;

/// A built agent: checked once at build, then only read.
pub(crate) struct AgentInner {
    pub model: Arc<dyn Model>,
    /// The agent's own tools and static toolsets, checked once at build.
    pub registry: Arc<ToolRegistry>,
    /// What `registry` was built from, for the steps that add dynamic tools to it, and the
    /// toolsets listed again at every step.
    pub tools: ToolList,
    pub policy: ApprovalPolicy,
    pub rules: RegistrationRules,
    /// The agent's own instructions (a run's own output may add to them).
    pub instructions: Option<String>,
    /// What the agent's runs answer with; its output tools are in `registry`, not `tools`.
    pub output: Arc<RunOutput>,
    pub max_steps: u32,
    pub usage_limits: UsageLimits,
    pub max_concurrency: Option<ConcurrencyLimit>,
    pub dependencies: Dependencies,
    /// Hooks every call of the agent runs through.
    pub hooks: Vec<Arc<dyn Hooks>>,
    pub store: Arc<dyn SessionStore>,
    /// Answers what the agent's tools ask mid-call (its elicitation handler, its model).
    pub answerer: Arc<dyn CallChannel>,
}

/// The tools of one step, and a `tool_refused` event for each tool its toolsets left out.
pub(crate) struct StepTools {
    pub(crate) registry: Arc<ToolRegistry>,
    pub(crate) refused: Vec<EventKind>,
}

impl AgentInner {
    /// The cap on one run's calls: a number is each run's own, a shared limit everyone's.
    pub(crate) fn run_limit(&self) -> Option<Limit> {
        self.max_concurrency.as_ref().map(|limit| Limit::new(&limit.per_run(), || "run".to_owned()))
    }

    /// The tools of one step: the agent's, the output's, the run's own, and what every
    /// dynamic toolset lists now. Without dynamic toolsets, run tools or a run's own
    /// output, the agent's registry as built.
    ///
    /// # Errors
    /// A toolset that cannot list its tools, or two sources giving one name.
    pub(crate) async fn tools_for(
        &self,
        run: &ToolList,
        output: &Arc<RunOutput>,
        ctx: &ToolsetContext,
    ) -> Result<StepTools> {
        if self.tools.dynamic.is_empty() && run.is_empty() && Arc::ptr_eq(output, &self.output) {
            return Ok(StepTools { registry: self.registry.clone(), refused: Vec::new() });
        }
        let (listed, refused) = self.list_dynamic(run, ctx).await?;
        Ok(StepTools { registry: self.step_registry(run, output, listed)?, refused })
    }

    /// What every dynamic toolset (the agent's, then the run's) lists for the step `ctx`
    /// describes, and a `tool_refused` event for each tool one left out.
    ///
    /// # Errors
    /// A toolset that cannot list its tools.
    pub(crate) async fn list_dynamic(
        &self,
        run: &ToolList,
        ctx: &ToolsetContext,
    ) -> Result<(Vec<Registration>, Vec<EventKind>)> {
        let mut listed = Vec::new();
        let mut refused = Vec::new();
        for toolset in self.tools.dynamic.iter().chain(&run.dynamic) {
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
            listed.extend(Registration::all(tools, &**toolset));
        }
        Ok((listed, refused))
    }

    /// The registry of a step: the agent's tools, the output's, the run's, and `listed`
    /// (what dynamic toolsets listed for it), under the agent's policy and rules.
    ///
    /// # Errors
    /// Two sources giving one name, or a listed tool that breaks a registration rule.
    pub(crate) fn step_registry(
        &self,
        run: &ToolList,
        output: &RunOutput,
        listed: Vec<Registration>,
    ) -> Result<Arc<ToolRegistry>> {
        let mut entries = self.tools.entries.clone();
        entries.extend(output.registrations.iter().cloned());
        entries.extend(run.entries.iter().cloned());
        entries.extend(listed);
        ToolRegistry::new(entries, &self.policy, self.rules).map(Arc::new)
    }
}
