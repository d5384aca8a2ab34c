//! The tools of one agent, by name, with the policy that applies to each worked out once.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crate::error::{DefinitionError, DefinitionErrorKind, Error, Result};
use crate::hitl::ApprovalPolicy;
use crate::tool::{Tool, ToolDefinition};

/// A map keyed by tool name. Names are hashed several times a call (here, in the call
/// plan, for model retries); foldhash does that several times faster than the default
/// SipHash on keys this short, and is still seeded per process.
pub(crate) type NameMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// A tool handed to the agent builder or a run, with where it came from.
#[derive(Clone)]
pub(crate) struct Registration {
    pub tool: Arc<dyn Tool>,
    pub source: Source,
}

/// Where a registered tool came from: collisions and approval rules name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Source {
    /// Given to the agent directly.
    Agent,
    /// Given to one run directly.
    Run,
    /// From a toolset (name, id), which may require approval for all its tools.
    Toolset { name: String, id: String, requires_approval: bool },
}

impl Source {
    pub(crate) fn of(toolset: &dyn crate::toolset::Toolset) -> Self {
        Self::Toolset {
            name: toolset.name().to_owned(),
            id: toolset.id().to_owned(),
            requires_approval: toolset.requires_approval(),
        }
    }
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Agent => f.write_str("the agent's tools"),
            Self::Run => f.write_str("the run's tools"),
            Self::Toolset { name, .. } => write!(f, "toolset `{name}`"),
        }
    }
}

/// A tool as the scheduler uses it: the policy read off its definition once.
pub(crate) struct RegisteredTool {
    pub tool: Arc<dyn Tool>,
    /// Shared with every call's context instead of allocated per call.
    pub name: Arc<str>,
    /// The approval rule that matches, if the tool needs approval before every call.
    pub approval_rule: Option<String>,
    pub max_retries: u32,
    pub sequential: bool,
    pub timeout: Option<Duration>,
    /// Whether a `null` argument may stand for a schema `default` (strict mode's optionals).
    pub fills_defaults: bool,
}

/// Agent-wide rules every tool must meet at registration, beyond the definition's own.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RegistrationRules {
    pub require_parameter_descriptions: bool,
}

/// The tools of an agent: unique names, validated definitions.
pub struct ToolRegistry {
    tools: Vec<RegisteredTool>,
    index: NameMap<String, usize>,
    definitions: Vec<ToolDefinition>,
}

impl ToolRegistry {
    /// Registers tools (each with its toolset's name and id, if any) under a policy.
    pub(crate) fn new(entries: Vec<Registration>, policy: &ApprovalPolicy, rules: RegistrationRules) -> Result<Self> {
        let mut registry = Self { tools: Vec::new(), index: NameMap::default(), definitions: Vec::new() };
        let mut sources: Vec<Source> = Vec::new();
        for Registration { tool, source } in entries {
            tool.validate()?;
            let definition = tool.definition().clone();
            if rules.require_parameter_descriptions
                && let Some(name) = definition.undescribed_parameters().into_iter().next()
            {
                let kind = DefinitionErrorKind::UndescribedParameter { name };
                return Err(DefinitionError { tool: definition.name, kind }.into());
            }
            if let Some(&other) = registry.index.get(&definition.name) {
                let first = sources.get(other).cloned().unwrap_or(Source::Agent);
                if first == Source::Agent && source == Source::Agent {
                    return Err(Error::DuplicateTool { name: definition.name });
                }
                return Err(Error::ToolCollision {
                    name: definition.name,
                    first: first.to_string(),
                    second: source.to_string(),
                });
            }
            let approval_rule = match &source {
                Source::Toolset { name, requires_approval: true, .. } => Some(format!("toolset `{name}`")),
                Source::Toolset { name, id, .. } => policy.matching_rule(&definition, Some((name, id))),
                Source::Agent | Source::Run => policy.matching_rule(&definition, None),
            };
            registry.index.insert(definition.name.clone(), registry.tools.len());
            sources.push(source);
            registry.tools.push(RegisteredTool {
                name: Arc::from(definition.name.as_str()),
                approval_rule,
                max_retries: definition.effective_max_retries(),
                sequential: definition.sequential,
                timeout: definition.timeout_ms.map(Duration::from_millis),
                fills_defaults: crate::schema::has_defaults(&definition.parameters),
                tool,
            });
            registry.definitions.push(definition);
        }
        Ok(registry)
    }

    /// The tool called `name`.
    pub(crate) fn get(&self, name: &str) -> Option<&RegisteredTool> {
        self.index.get(name).map(|&i| &self.tools[i])
    }

    /// Every definition, in registration order (what models are sent).
    pub fn definitions(&self) -> &[ToolDefinition] {
        &self.definitions
    }

    /// The registered names, for error messages.
    pub(crate) fn names(&self) -> impl Iterator<Item = &str> {
        self.definitions.iter().map(|d| d.name.as_str())
    }
}
