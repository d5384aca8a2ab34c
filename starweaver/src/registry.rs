//! The tools of one agent, by name, with the policy that applies to each worked out once.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crate::error::{DefinitionError, DefinitionErrorKind, Error, Result};
use crate::hitl::ApprovalPolicy;
use crate::tool::{Tool, ToolDefinition};

/// A named group of tools; approval rules can name the toolset instead of each tool.
///
/// ```
/// # use starweaver::{Toolset, ToolBuilder, ToolContext};
/// let noop = ToolBuilder::new("noop")
///     .handler(|_: ToolContext, _: serde_json::Map<String, serde_json::Value>| async { Ok(()) })
///     .unwrap();
/// let ops = Toolset::new("ops").with_id("ops-v1").tool(noop);
/// assert_eq!(ops.id(), "ops-v1");
/// ```
#[derive(Clone)]
pub struct Toolset {
    name: String,
    id: Option<String>,
    tools: Vec<Arc<dyn Tool>>,
}

impl Toolset {
    /// An empty toolset; its id is its name unless [`with_id`](Self::with_id) sets one.
    pub fn new(name: impl Into<String>) -> Self {
        Self { name: name.into(), id: None, tools: Vec::new() }
    }

    /// Sets an id distinct from the name.
    #[must_use]
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// Adds a tool.
    #[must_use]
    pub fn tool(mut self, tool: impl Tool) -> Self {
        self.tools.push(Arc::new(tool));
        self
    }

    /// Adds a shared tool.
    #[must_use]
    pub fn shared_tool(mut self, tool: Arc<dyn Tool>) -> Self {
        self.tools.push(tool);
        self
    }

    /// The toolset's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The toolset's id.
    pub fn id(&self) -> &str {
        self.id.as_deref().unwrap_or(&self.name)
    }

    pub(crate) fn into_tools(self) -> Vec<Arc<dyn Tool>> {
        self.tools
    }
}

/// A tool handed to the agent builder, with the toolset (name, id) it came in, if any.
pub(crate) struct Registration {
    pub tool: Arc<dyn Tool>,
    pub toolset: Option<(String, String)>,
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
    index: HashMap<String, usize>,
    definitions: Vec<ToolDefinition>,
}

impl ToolRegistry {
    /// Registers tools (each with its toolset's name and id, if any) under a policy.
    pub(crate) fn new(entries: Vec<Registration>, policy: &ApprovalPolicy, rules: RegistrationRules) -> Result<Self> {
        let mut registry = Self { tools: Vec::new(), index: HashMap::new(), definitions: Vec::new() };
        for Registration { tool, toolset } in entries {
            tool.validate()?;
            let definition = tool.definition().clone();
            if rules.require_parameter_descriptions
                && let Some(name) = definition.undescribed_parameters().into_iter().next()
            {
                let kind = DefinitionErrorKind::UndescribedParameter { name };
                return Err(DefinitionError { tool: definition.name, kind }.into());
            }
            if registry.index.contains_key(&definition.name) {
                return Err(Error::DuplicateTool { name: definition.name });
            }
            let toolset = toolset.as_ref().map(|(name, id)| (name.as_str(), id.as_str()));
            registry.index.insert(definition.name.clone(), registry.tools.len());
            registry.tools.push(RegisteredTool {
                name: Arc::from(definition.name.as_str()),
                approval_rule: policy.matching_rule(&definition, toolset),
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
