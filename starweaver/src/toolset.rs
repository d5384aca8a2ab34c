//! Toolsets: named groups of tools, static (a list) or dynamic (listed
//! again at every step), with combinators that prefix, filter, rename or gate them.
//!
//! A run's tools are the agent's own tools and static toolsets (checked once, when the
//! agent is built), plus its dynamic toolsets and the run's own additions, listed at the
//! start of each step. Two tools with one name are an error naming both sources.

use std::collections::HashMap;
use std::sync::Arc;

use futures::future::BoxFuture;

use crate::concurrency::ConcurrencyLimit;
use crate::hook::Hooks;
use crate::tool::{Dependencies, Tool, ToolContext, ToolDefinition, ToolError, ToolResult};

/// What a toolset is told when it lists its tools, and where it reports a tool it leaves
/// out.
///
/// ```
/// use starweaver::{Dependencies, ToolsetContext};
///
/// let ctx = ToolsetContext::new("run_1".into(), 1, Dependencies::new());
/// ctx.refuse_tool("bad name", "a tool name may not hold spaces");
/// assert_eq!(ctx.take_refused()[0].tool, "bad name");
/// ```
#[derive(Debug, Clone)]
pub struct ToolsetContext {
    /// The run asking.
    pub run_id: Arc<str>,
    /// The step about to ask the model (from 1).
    pub step: u32,
    /// The run's dependencies.
    pub dependencies: Dependencies,
    refused: Arc<std::sync::Mutex<Vec<RefusedTool>>>,
}

/// A tool a toolset could not offer, and why; the run reports it as a `tool_refused`
/// event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefusedTool {
    /// The tool's name, as the toolset's source gave it.
    pub tool: String,
    /// Why it cannot be used.
    pub reason: String,
}

impl ToolsetContext {
    /// The context of `step` of run `run_id`.
    pub fn new(run_id: Arc<str>, step: u32, dependencies: Dependencies) -> Self {
        Self { run_id, step, dependencies, refused: Arc::default() }
    }

    /// Reports that `tool` is left out of the list, and why: one bad tool of a source
    /// (an MCP server, say) is refused by name while its other tools stay usable.
    pub fn refuse_tool(&self, tool: impl Into<String>, reason: impl Into<String>) {
        let refused = RefusedTool { tool: tool.into(), reason: reason.into() };
        self.refused.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(refused);
    }

    /// The tools refused since the last call, oldest first.
    pub fn take_refused(&self) -> Vec<RefusedTool> {
        std::mem::take(&mut *self.refused.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
    }
}

/// Why a toolset could not list its tools: a message, and the error behind it when there
/// is one. A run that meets it fails naming the toolset
/// ([`Error::Toolset`](crate::Error::Toolset), with this message).
///
/// ```
/// use starweaver::ToolsetError;
///
/// let io = std::io::Error::other("connection refused");
/// let err = ToolsetError::new("the server is gone").with_source(io);
/// assert_eq!(err.to_string(), "the server is gone");
/// assert_eq!(std::error::Error::source(&err).unwrap().to_string(), "connection refused");
/// let plain: ToolsetError = "no tools today".into();
/// assert!(std::error::Error::source(&plain).is_none());
/// ```
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct ToolsetError {
    message: String,
    #[source]
    source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
}

impl ToolsetError {
    /// An error saying `message`.
    pub fn new(message: impl Into<String>) -> Self {
        Self { message: message.into(), source: None }
    }

    /// The same error, caused by `source` (what [`std::error::Error::source`] gives).
    #[must_use]
    pub fn with_source(mut self, source: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>) -> Self {
        self.source = Some(source.into());
        self
    }

    /// What went wrong, as a sentence.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl From<String> for ToolsetError {
    fn from(message: String) -> Self {
        Self::new(message)
    }
}

impl From<&str> for ToolsetError {
    fn from(message: &str) -> Self {
        Self::new(message)
    }
}

/// A named group of tools with an id; approval rules can name the toolset instead of each
/// tool.
///
/// ```
/// use starweaver::{StaticToolset, ToolBuilder, ToolContext, Toolset};
///
/// let noop = ToolBuilder::new("noop")
///     .handler(|_: ToolContext, _: serde_json::Map<String, serde_json::Value>| async { Ok(()) })
///     .unwrap();
/// let ops = StaticToolset::new("ops").with_id("ops-v1").tool(noop).prefixed("ops_");
/// assert_eq!(ops.id(), "ops-v1");
/// assert_eq!(ops.static_tools().unwrap()[0].definition().name, "ops_noop");
/// ```
pub trait Toolset: Send + Sync + 'static {
    /// The toolset's name (approval rules and collision errors use it).
    fn name(&self) -> &str;

    /// The toolset's id (its name unless it has one of its own).
    fn id(&self) -> &str {
        self.name()
    }

    /// The tools for the step `ctx` describes.
    ///
    /// # Errors
    /// A [`ToolsetError`] saying why the tools cannot be listed (a server that will not
    /// start).
    fn list_tools<'a>(&'a self, ctx: &'a ToolsetContext) -> BoxFuture<'a, Result<Vec<Arc<dyn Tool>>, ToolsetError>>;

    /// The tools, when they never change: they are then checked once, when the agent is
    /// built, and not listed again.
    fn static_tools(&self) -> Option<Vec<Arc<dyn Tool>>> {
        None
    }

    /// Whether every call of its tools needs a human decision first.
    fn requires_approval(&self) -> bool {
        false
    }

    /// The hooks every call of its tools runs through, after the run's and the agent's.
    fn hooks(&self) -> Arc<[Arc<dyn Hooks>]> {
        Arc::new([])
    }

    /// Instructions for the model about these tools, sent with the agent's in every
    /// request that offers at least one of them. Read each time the tools are listed, so a
    /// dynamic toolset (an MCP server, whose `initialize` result gives them) may change
    /// them from step to step.
    fn instructions(&self) -> Option<Arc<str>> {
        None
    }

    /// The most characters of model-facing content a return of its tools may have, for
    /// tools that set no `max_return_chars` of their own (it wins over the agent's).
    fn max_return_chars(&self) -> Option<u32> {
        None
    }

    /// The same tools, with `instructions` sent with the agent's while they are offered
    /// (in place of any the toolset has).
    ///
    /// ```
    /// use starweaver::{StaticToolset, Toolset};
    ///
    /// let ops = StaticToolset::new("ops").with_instructions("Deploy only after `status` says green.");
    /// assert_eq!(ops.instructions().as_deref(), Some("Deploy only after `status` says green."));
    /// ```
    fn with_instructions(self, instructions: impl Into<Arc<str>>) -> Configured<Self>
    where
        Self: Sized,
    {
        Configured { instructions: Some(instructions.into()), ..Configured::new(self) }
    }

    /// The same tools, each return's model-facing content cut to `max` characters unless
    /// the tool sets its own `max_return_chars` (0 is refused when the agent is built).
    ///
    /// ```
    /// use starweaver::{StaticToolset, Toolset};
    ///
    /// let search = StaticToolset::new("search").with_max_return_chars(2000);
    /// assert_eq!(search.max_return_chars(), Some(2000));
    /// ```
    fn with_max_return_chars(self, max: u32) -> Configured<Self>
    where
        Self: Sized,
    {
        Configured { max_return_chars: Some(max), ..Configured::new(self) }
    }

    /// Every call of its tools runs through `hooks` too (after those it has already), in
    /// this order on the way in.
    ///
    /// ```
    /// use starweaver::{Hooks, StaticToolset, Toolset};
    ///
    /// struct Audit;
    /// impl Hooks for Audit {}
    ///
    /// let ops = StaticToolset::new("ops").with_hooks([std::sync::Arc::new(Audit) as _]);
    /// assert_eq!(ops.hooks().len(), 1);
    /// ```
    fn with_hooks(self, hooks: impl IntoIterator<Item = Arc<dyn Hooks>>) -> Configured<Self>
    where
        Self: Sized,
    {
        let hooks = self.hooks().iter().cloned().chain(hooks).collect();
        Configured { hooks: Some(hooks), ..Configured::new(self) }
    }

    /// Whether its tools are deferred: not sent to the model until a tool search finds
    /// them (or the model calls one by name).
    fn defer_loading(&self) -> bool {
        false
    }

    /// The same tools, deferred: the model sees none of them until `search_tools` finds
    /// it (DESIGN.md §20).
    ///
    /// ```
    /// use starweaver::{StaticToolset, Toolset};
    ///
    /// let catalog = StaticToolset::new("catalog").deferred();
    /// assert!(catalog.defer_loading());
    /// ```
    fn deferred(self) -> Configured<Self>
    where
        Self: Sized,
    {
        Configured { defer_loading: true, ..Configured::new(self) }
    }

    /// How many calls of its tools may run at once, together (across every run in the
    /// process), if it is limited.
    fn max_concurrency(&self) -> Option<ConcurrencyLimit> {
        None
    }

    /// At most `limit` calls of its tools run at once: a number (a limit of its own,
    /// shared by every run using this toolset) or a shared [`ConcurrencyLimit`].
    ///
    /// ```
    /// use starweaver::{StaticToolset, Toolset};
    ///
    /// let search = StaticToolset::new("search").with_max_concurrency(2);
    /// assert_eq!(search.max_concurrency().unwrap().max_running(), 2);
    /// ```
    fn with_max_concurrency(self, limit: impl Into<ConcurrencyLimit>) -> Configured<Self>
    where
        Self: Sized,
    {
        Configured { max_concurrency: Some(limit.into()), ..Configured::new(self) }
    }

    /// Every tool's name gets `prefix` in front.
    fn prefixed(self, prefix: impl Into<String>) -> Mapped<Self>
    where
        Self: Sized,
    {
        let prefix = prefix.into();
        Mapped::new(self, move |tool| Some(Renamed::wrap(tool.clone(), format!("{prefix}{}", tool.definition().name))))
    }

    /// Only the tools `keep` accepts.
    fn filtered(self, keep: impl Fn(&ToolDefinition) -> bool + Send + Sync + 'static) -> Mapped<Self>
    where
        Self: Sized,
    {
        Mapped::new(self, move |tool| keep(tool.definition()).then(|| tool.clone()))
    }

    /// Tools renamed by `names` (old name → new name); others keep theirs.
    fn renamed<I, K, V>(self, names: I) -> Mapped<Self>
    where
        Self: Sized,
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        let names: HashMap<String, String> = names.into_iter().map(|(k, v)| (k.into(), v.into())).collect();
        Mapped::new(self, move |tool| match names.get(&tool.definition().name) {
            Some(new) => Some(Renamed::wrap(tool.clone(), new.clone())),
            None => Some(tool.clone()),
        })
    }

    /// Every tool needs a human decision before every call (as if an approval rule named
    /// this toolset).
    fn approval_required(self) -> Configured<Self>
    where
        Self: Sized,
    {
        Configured { requires_approval: true, ..Configured::new(self) }
    }
}

impl<T: Toolset + ?Sized> Toolset for Arc<T> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn id(&self) -> &str {
        (**self).id()
    }

    fn list_tools<'a>(&'a self, ctx: &'a ToolsetContext) -> BoxFuture<'a, Result<Vec<Arc<dyn Tool>>, ToolsetError>> {
        (**self).list_tools(ctx)
    }

    fn static_tools(&self) -> Option<Vec<Arc<dyn Tool>>> {
        (**self).static_tools()
    }

    fn requires_approval(&self) -> bool {
        (**self).requires_approval()
    }

    fn hooks(&self) -> Arc<[Arc<dyn Hooks>]> {
        (**self).hooks()
    }

    fn max_concurrency(&self) -> Option<ConcurrencyLimit> {
        (**self).max_concurrency()
    }

    fn instructions(&self) -> Option<Arc<str>> {
        (**self).instructions()
    }

    fn max_return_chars(&self) -> Option<u32> {
        (**self).max_return_chars()
    }

    fn defer_loading(&self) -> bool {
        (**self).defer_loading()
    }
}

/// A toolset whose tools are given once.
#[derive(Clone)]
pub struct StaticToolset {
    name: String,
    id: Option<String>,
    tools: Vec<Arc<dyn Tool>>,
}

impl StaticToolset {
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
    pub fn tool(self, tool: impl Tool) -> Self {
        self.shared_tool(Arc::new(tool))
    }

    /// Adds a shared tool.
    #[must_use]
    pub fn shared_tool(mut self, tool: Arc<dyn Tool>) -> Self {
        self.tools.push(tool);
        self
    }
}

impl Toolset for StaticToolset {
    fn name(&self) -> &str {
        &self.name
    }

    fn id(&self) -> &str {
        self.id.as_deref().unwrap_or(&self.name)
    }

    fn list_tools<'a>(&'a self, _: &'a ToolsetContext) -> BoxFuture<'a, Result<Vec<Arc<dyn Tool>>, ToolsetError>> {
        Box::pin(std::future::ready(Ok(self.tools.clone())))
    }

    fn static_tools(&self) -> Option<Vec<Arc<dyn Tool>>> {
        Some(self.tools.clone())
    }
}

type ListFn =
    dyn for<'a> Fn(&'a ToolsetContext) -> BoxFuture<'a, Result<Vec<Arc<dyn Tool>>, ToolsetError>> + Send + Sync;

/// A toolset whose tools a function lists at every step.
///
/// ```
/// use std::sync::Arc;
/// use starweaver::{Dependencies, DynamicToolset, Tool, Toolset, ToolsetContext, ToolsetError};
///
/// let late = DynamicToolset::new("late", |ctx| {
///     let step = ctx.step;
///     Box::pin(async move {
///         if step > 3 {
///             return Err(ToolsetError::new("the catalog closes after step 3"));
///         }
///         Ok(Vec::<Arc<dyn Tool>>::new())
///     })
/// });
/// assert!(late.static_tools().is_none());
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let ctx = ToolsetContext::new("run_1".into(), 4, Dependencies::new());
/// let err = late.list_tools(&ctx).await.err().unwrap();
/// assert_eq!(err.to_string(), "the catalog closes after step 3");
/// # });
/// ```
pub struct DynamicToolset {
    name: String,
    id: Option<String>,
    list: Box<ListFn>,
}

impl DynamicToolset {
    /// A toolset named `name` whose tools `list` gives at each step.
    pub fn new<F>(name: impl Into<String>, list: F) -> Self
    where
        F: for<'a> Fn(&'a ToolsetContext) -> BoxFuture<'a, Result<Vec<Arc<dyn Tool>>, ToolsetError>>
            + Send
            + Sync
            + 'static,
    {
        Self { name: name.into(), id: None, list: Box::new(list) }
    }

    /// Sets an id distinct from the name.
    #[must_use]
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }
}

impl Toolset for DynamicToolset {
    fn name(&self) -> &str {
        &self.name
    }

    fn id(&self) -> &str {
        self.id.as_deref().unwrap_or(&self.name)
    }

    fn list_tools<'a>(&'a self, ctx: &'a ToolsetContext) -> BoxFuture<'a, Result<Vec<Arc<dyn Tool>>, ToolsetError>> {
        (self.list)(ctx)
    }
}

type MapFn = dyn Fn(&Arc<dyn Tool>) -> Option<Arc<dyn Tool>> + Send + Sync;

/// A toolset whose tools are renamed or dropped on the way out (see [`Toolset::prefixed`],
/// [`Toolset::filtered`], [`Toolset::renamed`]); static when the inner one is.
pub struct Mapped<T> {
    inner: T,
    map: Box<MapFn>,
}

impl<T: Toolset> Mapped<T> {
    fn new(inner: T, map: impl Fn(&Arc<dyn Tool>) -> Option<Arc<dyn Tool>> + Send + Sync + 'static) -> Self {
        Self { inner, map: Box::new(map) }
    }

    fn apply(&self, tools: &[Arc<dyn Tool>]) -> Vec<Arc<dyn Tool>> {
        tools.iter().filter_map(|tool| (self.map)(tool)).collect()
    }
}

impl<T: Toolset> Toolset for Mapped<T> {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn id(&self) -> &str {
        self.inner.id()
    }

    fn list_tools<'a>(&'a self, ctx: &'a ToolsetContext) -> BoxFuture<'a, Result<Vec<Arc<dyn Tool>>, ToolsetError>> {
        Box::pin(async move { self.inner.list_tools(ctx).await.map(|tools| self.apply(&tools)) })
    }

    fn static_tools(&self) -> Option<Vec<Arc<dyn Tool>>> {
        self.inner.static_tools().map(|tools| self.apply(&tools))
    }

    fn requires_approval(&self) -> bool {
        self.inner.requires_approval()
    }

    fn hooks(&self) -> Arc<[Arc<dyn Hooks>]> {
        self.inner.hooks()
    }

    fn max_concurrency(&self) -> Option<ConcurrencyLimit> {
        self.inner.max_concurrency()
    }

    fn instructions(&self) -> Option<Arc<str>> {
        self.inner.instructions()
    }

    fn max_return_chars(&self) -> Option<u32> {
        self.inner.max_return_chars()
    }

    fn defer_loading(&self) -> bool {
        self.inner.defer_loading()
    }
}

/// A toolset with options of its own over another's: its approval requirement, hooks,
/// concurrency limit, instructions, return-size limit or deferred loading, each the inner
/// toolset's unless set here (see [`Toolset::approval_required`], [`Toolset::with_hooks`],
/// [`Toolset::with_max_concurrency`], [`Toolset::with_instructions`],
/// [`Toolset::with_max_return_chars`], [`Toolset::deferred`]).
pub struct Configured<T> {
    inner: T,
    requires_approval: bool,
    defer_loading: bool,
    hooks: Option<Arc<[Arc<dyn Hooks>]>>,
    max_concurrency: Option<ConcurrencyLimit>,
    instructions: Option<Arc<str>>,
    max_return_chars: Option<u32>,
}

impl<T: Toolset> Configured<T> {
    fn new(inner: T) -> Self {
        Self {
            inner,
            requires_approval: false,
            defer_loading: false,
            hooks: None,
            max_concurrency: None,
            instructions: None,
            max_return_chars: None,
        }
    }
}

impl<T: Toolset> Toolset for Configured<T> {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn id(&self) -> &str {
        self.inner.id()
    }

    fn list_tools<'a>(&'a self, ctx: &'a ToolsetContext) -> BoxFuture<'a, Result<Vec<Arc<dyn Tool>>, ToolsetError>> {
        self.inner.list_tools(ctx)
    }

    fn static_tools(&self) -> Option<Vec<Arc<dyn Tool>>> {
        self.inner.static_tools()
    }

    fn requires_approval(&self) -> bool {
        self.requires_approval || self.inner.requires_approval()
    }

    fn hooks(&self) -> Arc<[Arc<dyn Hooks>]> {
        self.hooks.clone().unwrap_or_else(|| self.inner.hooks())
    }

    fn max_concurrency(&self) -> Option<ConcurrencyLimit> {
        self.max_concurrency.clone().or_else(|| self.inner.max_concurrency())
    }

    fn instructions(&self) -> Option<Arc<str>> {
        self.instructions.clone().or_else(|| self.inner.instructions())
    }

    fn max_return_chars(&self) -> Option<u32> {
        self.max_return_chars.or_else(|| self.inner.max_return_chars())
    }

    fn defer_loading(&self) -> bool {
        self.defer_loading || self.inner.defer_loading()
    }
}

/// A tool under another name; everything else is the inner tool's.
struct Renamed {
    inner: Arc<dyn Tool>,
    definition: ToolDefinition,
}

impl Renamed {
    fn wrap(inner: Arc<dyn Tool>, name: String) -> Arc<dyn Tool> {
        let definition = ToolDefinition { name, ..inner.definition().clone() };
        Arc::new(Self { inner, definition })
    }
}

impl Tool for Renamed {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn call<'a>(
        &'a self,
        ctx: ToolContext,
        args: &'a serde_json::Value,
    ) -> BoxFuture<'a, Result<ToolResult, ToolError>> {
        self.inner.call(ctx, args)
    }
}
