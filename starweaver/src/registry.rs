//! The tools of one agent, by name, with the policy that applies to each worked out once.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crate::concurrency::{ConcurrencyLimit, Limit};
use crate::error::{DefinitionError, DefinitionErrorKind, Error, Result};
use crate::hitl::ApprovalPolicy;
use crate::hook::Hooks;
use crate::search::{SEARCH_TOOL, ToolIndex, ToolSearch, search_tool};
use crate::tool::{Tool, ToolDefinition};
use crate::toolset::Toolset;

/// A map keyed by tool name. Names are hashed several times a call (here, in the call
/// plan, for model retries); foldhash does that several times faster than the default
/// SipHash on keys this short, and is still seeded per process.
pub(crate) type NameMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// A tool handed to the agent builder or a run, with where it came from.
#[derive(Clone)]
pub(crate) struct Registration {
    pub tool: Arc<dyn Tool>,
    pub source: Source,
    /// Its toolset's hooks (none for a tool given directly).
    pub hooks: Arc<[Arc<dyn Hooks>]>,
    /// What it takes from its toolset besides hooks.
    pub toolset: ToolsetTraits,
}

/// What a tool takes from its toolset besides hooks: the instructions sent while the tool
/// is offered, the return-size limit for a tool that sets none, the concurrency limit its
/// calls share with the toolset's other tools, and whether the toolset is deferred.
#[derive(Clone, Default)]
pub(crate) struct ToolsetTraits {
    pub instructions: Option<Arc<str>>,
    pub defer_loading: bool,
    pub max_return_chars: Option<u32>,
    pub max_concurrency: Option<ConcurrencyLimit>,
}

impl ToolsetTraits {
    /// Refuses a toolset option of 0 (no content, no call at once), naming the toolset.
    fn check(&self, source: &Source) -> Result<()> {
        if self.max_return_chars == Some(0) {
            let message = format!("{source} has 0, and must have at least 1");
            return Err(Error::InvalidOption { option: "max_return_chars", message });
        }
        if let (Some(limit), Source::Toolset { name, .. }) = (&self.max_concurrency, source)
            && limit.is_zero()
        {
            let message = format!("toolset `{name}`'s `max_concurrency` must be at least 1");
            return Err(Error::InvalidOption { option: "max_concurrency", message });
        }
        Ok(())
    }
}

/// Where a registered tool came from: collisions and approval rules name it. It
/// serialises with a durable run's tool listings.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum Source {
    /// Given to the agent directly.
    Agent,
    /// Given to one run directly.
    Run,
    /// Given directly to an MCP service, to serve.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))] // only `mcp::McpService` serves
    Served,
    /// The agent's output tools ([`crate::output`]): never gated, never hooked.
    Output,
    /// From a toolset (name, id), which may require approval for all its tools.
    Toolset { name: String, id: String, requires_approval: bool },
}

impl Registration {
    /// The tools of `toolset`, each with the toolset as its source and its hooks.
    pub(crate) fn all(tools: Vec<Arc<dyn Tool>>, toolset: &dyn Toolset) -> impl Iterator<Item = Self> {
        // Hooks of their own, so that two toolsets made from one (prefixed twice, say) stay
        // two where a step's hooks are grouped by toolset.
        let hooks: Arc<[Arc<dyn Hooks>]> = toolset.hooks().iter().cloned().collect();
        let source = Source::of(toolset);
        let traits = ToolsetTraits {
            instructions: toolset.instructions(),
            defer_loading: toolset.defer_loading(),
            max_return_chars: toolset.max_return_chars(),
            max_concurrency: toolset.max_concurrency(),
        };
        tools.into_iter().map(move |tool| Self {
            tool,
            source: source.clone(),
            hooks: hooks.clone(),
            toolset: traits.clone(),
        })
    }
}

impl Source {
    pub(crate) fn of(toolset: &dyn Toolset) -> Self {
        Self::Toolset {
            name: toolset.name().to_owned(),
            id: toolset.id().to_owned(),
            requires_approval: toolset.requires_approval(),
        }
    }

    /// What tools given directly by this source must have unique names within (two of
    /// them with one name are a duplicate, not a collision of two sources).
    fn scope(&self) -> Option<&'static str> {
        match self {
            Self::Agent => Some("an agent"),
            Self::Run => Some("a run"),
            Self::Served => Some("an MCP service"),
            Self::Output => Some("the agent's output types"),
            Self::Toolset { .. } => None,
        }
    }
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Agent => f.write_str("the agent's tools"),
            Self::Run => f.write_str("the run's tools"),
            Self::Served => f.write_str("the served tools"),
            Self::Output => f.write_str("the agent's output"),
            Self::Toolset { name, .. } => write!(f, "toolset `{name}`"),
        }
    }
}

/// The tools handed to an agent's builder, an MCP service's builder or a run: each tool
/// given directly, labelled with who was given it, and each toolset's; a static toolset's
/// tools are known now, a dynamic one is kept to be listed at every step.
#[derive(Clone)]
pub(crate) struct ToolList {
    /// The label of the tools given directly.
    source: Source,
    /// The tools known now, each with where it came from, in the order given.
    pub entries: Vec<Registration>,
    /// The dynamic toolsets, in the order given.
    pub dynamic: Vec<Arc<dyn Toolset>>,
}

impl ToolList {
    /// An empty list whose directly given tools are labelled `source`.
    pub(crate) fn new(source: Source) -> Self {
        Self { source, entries: Vec::new(), dynamic: Vec::new() }
    }

    /// Adds a tool given directly.
    pub(crate) fn tool(&mut self, tool: Arc<dyn Tool>) {
        let (source, hooks) = (self.source.clone(), Arc::new([]));
        self.entries.push(Registration { tool, source, hooks, toolset: ToolsetTraits::default() });
    }

    /// Adds a toolset: a static one's tools, labelled with the toolset; a dynamic one as it is.
    pub(crate) fn toolset(&mut self, toolset: Arc<dyn Toolset>) {
        match toolset.static_tools() {
            Some(tools) => self.entries.extend(Registration::all(tools, &*toolset)),
            None => self.dynamic.push(toolset),
        }
    }

    /// Whether nothing was added.
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty() && self.dynamic.is_empty()
    }
}

/// A tool as the scheduler uses it: the policy read off its definition once.
#[derive(Clone)]
pub(crate) struct RegisteredTool {
    pub tool: Arc<dyn Tool>,
    /// Shared with every call's context instead of allocated per call.
    pub name: Arc<str>,
    /// The approval rule that matches, if the tool needs approval before every call.
    pub approval_rule: Option<String>,
    pub max_retries: u32,
    pub sequential: bool,
    pub timeout: Option<Duration>,
    /// Where it came from.
    pub source: Source,
    /// Its toolset's hooks, which run after the run's and the agent's.
    pub hooks: Arc<[Arc<dyn Hooks>]>,
    /// Its own concurrency limit and its toolset's, if any.
    pub limits: Arc<[Limit]>,
    /// The return-size limit in force: the tool's own, else its toolset's, else the agent's.
    pub max_return_chars: Option<u32>,
    /// Its toolset's instructions, sent while the tool is offered.
    pub instructions: Option<Arc<str>>,
    /// Whether a `null` argument may stand for a schema `default` (strict mode's optionals).
    pub fills_defaults: bool,
    /// Whether it is sent to the model only once loaded (its own option, or its toolset's).
    pub deferred: bool,
}

/// The concurrency limits a tool's calls run under: its own, then its toolset's.
fn limits_of(definition: &ToolDefinition, source: &Source, toolset: Option<&ConcurrencyLimit>) -> Arc<[Limit]> {
    let own =
        definition.max_concurrency.as_ref().map(|limit| Limit::new(limit, || format!("tool:{}", definition.name)));
    let toolset = match (toolset, source) {
        (Some(limit), Source::Toolset { name, .. }) => Some(Limit::new(limit, || format!("toolset:{name}"))),
        _ => None,
    };
    own.into_iter().chain(toolset).collect()
}

/// Agent-wide rules every tool must meet at registration, beyond the definition's own,
/// and the agent's defaults for tools that set none.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RegistrationRules {
    pub require_parameter_descriptions: bool,
    /// The agent's return-size limit.
    pub max_return_chars: Option<u32>,
    /// Who searches the deferred tools, which decides what a request offers.
    pub tool_search: ToolSearch,
}

/// What one model request offers: the tools sent as such, and the deferred tools handed
/// to the provider's own search (native tool search; none otherwise).
pub(crate) struct Offered<'a> {
    pub tools: Cow<'a, [ToolDefinition]>,
    pub deferred: Vec<ToolDefinition>,
}

/// The tools of an agent: unique names, validated definitions.
#[derive(Default)]
pub struct ToolRegistry {
    tools: Vec<RegisteredTool>,
    index: NameMap<String, usize>,
    definitions: Vec<ToolDefinition>,
    /// The instructions of the toolsets offering tools here, each once, in tool order.
    instructions: Vec<Arc<str>>,
    /// The positions of the deferred tools, in registration order.
    deferred: Vec<usize>,
    /// The search index of the deferred tools, built at the first search.
    search: OnceLock<ToolIndex>,
    /// Who searches the deferred tools.
    tool_search: ToolSearch,
}

impl ToolRegistry {
    /// Registers tools (each with its toolset's name and id, if any) under a policy.
    pub(crate) fn new(entries: Vec<Registration>, policy: &ApprovalPolicy, rules: RegistrationRules) -> Result<Self> {
        let mut registry = Self { tool_search: rules.tool_search, ..Self::default() };
        for Registration { tool, source, hooks, toolset } in entries {
            tool.validate()?;
            let definition = tool.definition().clone();
            toolset.check(&source)?;
            if rules.require_parameter_descriptions
                && let Some(name) = definition.undescribed_parameters().into_iter().next()
            {
                let kind = DefinitionErrorKind::UndescribedParameter { name };
                return Err(DefinitionError { tool: definition.name, kind }.into());
            }
            if let Some(first) = registry.get(&definition.name).map(|other| &other.source) {
                if let Some(within) = source.scope().filter(|_| *first == source) {
                    return Err(Error::DuplicateTool { name: definition.name, within });
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
                Source::Agent | Source::Run | Source::Served => policy.matching_rule(&definition, None),
                Source::Output => None,
            };
            let limits = limits_of(&definition, &source, toolset.max_concurrency.as_ref());
            registry.index.insert(definition.name.clone(), registry.tools.len());
            registry.tools.push(RegisteredTool {
                name: Arc::from(definition.name.as_str()),
                approval_rule,
                max_retries: definition.effective_max_retries(),
                sequential: definition.sequential,
                timeout: definition.timeout_ms.map(Duration::from_millis),
                fills_defaults: crate::schema::has_defaults(&definition.parameters),
                source,
                hooks,
                limits,
                max_return_chars: definition.max_return_chars.or(toolset.max_return_chars).or(rules.max_return_chars),
                instructions: toolset.instructions,
                deferred: definition.defer_loading || toolset.defer_loading,
                tool,
            });
            registry.definitions.push(definition);
        }
        registry.collect_instructions();
        if let Some(tool) = registry.get(SEARCH_TOOL).filter(|_| registry.defers() && !registry.searches_natively()) {
            return Err(Error::ToolCollision {
                name: SEARCH_TOOL.to_owned(),
                first: tool.source.to_string(),
                second: "the tool search offered while tools are deferred".to_owned(),
            });
        }
        Ok(registry)
    }

    /// The tool called `name`.
    pub(crate) fn get(&self, name: &str) -> Option<&RegisteredTool> {
        self.index.get(name).and_then(|&i| self.tools.get(i))
    }

    /// Every definition, in registration order (what models are sent).
    pub fn definitions(&self) -> &[ToolDefinition] {
        &self.definitions
    }

    /// The tools `definitions` name, offered as `definitions` say (what a hook's
    /// `prepare_tools` gave): a step's tools, filtered or described anew.
    ///
    /// # Errors
    /// What is wrong with `definitions`, naming the hooks' `prepare_tools` as their source:
    /// a tool this registry does not have, or one given twice.
    pub(crate) fn prepared(&self, definitions: Vec<ToolDefinition>) -> std::result::Result<Self, String> {
        let mut registry = Self { tool_search: self.tool_search, ..Self::default() };
        for definition in definitions {
            let Some(tool) = self.get(&definition.name) else {
                return Err(format!(
                    "the hooks' `prepare_tools`: it returned a tool `{}` this step does not have; it may drop tools, not add them",
                    definition.name
                ));
            };
            if registry.index.contains_key(&definition.name) {
                return Err(format!("the hooks' `prepare_tools`: it returned the tool `{}` twice", definition.name));
            }
            registry.index.insert(definition.name.clone(), registry.tools.len());
            registry.tools.push(tool.clone());
            registry.definitions.push(definition);
        }
        registry.collect_instructions();
        Ok(registry)
    }

    /// The hooks of each toolset with hooks among these tools, once each, in the order
    /// their first tools come.
    pub(crate) fn toolset_hooks(&self) -> Vec<Arc<[Arc<dyn Hooks>]>> {
        let mut seen: Vec<Arc<[Arc<dyn Hooks>]>> = Vec::new();
        for tool in self.tools.iter().filter(|tool| !tool.hooks.is_empty()) {
            if !seen.iter().any(|hooks| Arc::ptr_eq(hooks, &tool.hooks)) {
                seen.push(tool.hooks.clone());
            }
        }
        seen
    }

    /// The instructions of the toolsets that offer at least one tool here (what a model
    /// request sends with the agent's), each once, in the order of their first tool.
    pub fn instructions(&self) -> &[Arc<str>] {
        &self.instructions
    }

    fn collect_instructions(&mut self) {
        self.deferred = self.tools.iter().enumerate().filter(|(_, tool)| tool.deferred).map(|(i, _)| i).collect();
        for text in self.tools.iter().filter_map(|tool| tool.instructions.as_ref()) {
            if !self.instructions.contains(text) {
                self.instructions.push(text.clone());
            }
        }
    }

    /// Whether `name` is one of the agent's output tools.
    pub(crate) fn is_output(&self, name: &str) -> bool {
        self.get(name).is_some_and(|tool| tool.source == Source::Output)
    }

    /// The registered names, for error messages.
    pub(crate) fn names(&self) -> impl Iterator<Item = &str> {
        self.definitions.iter().map(|d| d.name.as_str())
    }

    /// Whether any tool here is deferred (the model is then offered `search_tools`).
    pub(crate) fn defers(&self) -> bool {
        !self.deferred.is_empty()
    }

    /// Whether the provider searches the deferred tools (native tool search) instead of
    /// the run (`search_tools`).
    pub(crate) fn searches_natively(&self) -> bool {
        self.defers() && self.tool_search == ToolSearch::Native
    }

    /// Whether the tool called `name` is deferred.
    pub(crate) fn is_deferred(&self, name: &str) -> bool {
        self.get(name).is_some_and(|tool| tool.deferred)
    }

    /// The deferred tools that match `query` best, at most `limit`, best first.
    pub(crate) fn search(&self, query: &str, limit: usize) -> Vec<&ToolDefinition> {
        let index =
            self.search.get_or_init(|| ToolIndex::new(self.deferred.iter().filter_map(|&i| self.definitions.get(i))));
        index
            .search(query, limit)
            .into_iter()
            .filter_map(|i| self.deferred.get(i))
            .filter_map(|&i| self.definitions.get(i))
            .collect()
    }

    /// What a model request offers when `loaded` (in load order) are the deferred tools
    /// loaded so far: every tool not deferred, in registration order, then `search_tools`,
    /// then the loaded ones in load order. A tool loaded later only adds to the end, so the
    /// rendered tools of an earlier request stay a byte-identical prefix (a provider's
    /// cached prompt prefix holds). With native tool search, the tools not deferred, and
    /// every deferred one for the provider's search, whatever is loaded. Without deferred
    /// tools, every definition.
    pub(crate) fn offered(&self, loaded: &[Arc<str>]) -> Offered<'_> {
        if !self.defers() {
            return Offered { tools: Cow::Borrowed(&self.definitions), deferred: Vec::new() };
        }
        let (deferred, always): (Vec<_>, Vec<_>) =
            self.tools.iter().zip(&self.definitions).partition(|(tool, _)| tool.deferred);
        let mut offered: Vec<ToolDefinition> = always.into_iter().map(|(_, definition)| definition.clone()).collect();
        if self.searches_natively() {
            let deferred = deferred.into_iter().map(|(_, definition)| definition.clone()).collect();
            return Offered { tools: Cow::Owned(offered), deferred };
        }
        offered.push(search_tool().clone());
        let loaded = loaded
            .iter()
            .filter_map(|name| self.index.get(&**name))
            .filter_map(|&i| self.tools.get(i).filter(|tool| tool.deferred).and_then(|_| self.definitions.get(i)));
        offered.extend(loaded.cloned());
        Offered { tools: Cow::Owned(offered), deferred: Vec::new() }
    }
}
