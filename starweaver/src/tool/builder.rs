//! Tools built from closures: a builder for the definition, a closure for the call.

use std::future::Future;
use std::marker::PhantomData;

use futures::FutureExt;
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::{ToolContext, ToolDefinition, ToolError, ToolResult, args::decode_args, result::IntoToolResult};
use crate::error::{DefinitionError, DefinitionErrorKind};
use crate::schema::schema_for;

/// Builds a tool from a closure, with every option of `#[tool]` and Python's `@tool`.
///
/// The argument type's JSON Schema comes from schemars unless
/// [`parameters_schema`](Self::parameters_schema) gives one explicitly.
///
/// ```
/// use serde::Deserialize;
/// use starweaver::{Tool, ToolBuilder, ToolContext};
///
/// #[derive(Deserialize, schemars::JsonSchema)]
/// struct AddArgs { left: i64, right: i64 }
///
/// let add = ToolBuilder::new("add")
///     .description("Add two integers.")
///     .handler(|_ctx: ToolContext, args: AddArgs| async move { Ok(args.left + args.right) })
///     .unwrap();
/// assert_eq!(add.definition().parameters["required"], serde_json::json!(["left", "right"]));
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct ToolBuilder {
    definition: ToolDefinition,
    explicit_schema: bool,
}

impl ToolBuilder {
    /// Starts a tool called `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Self { definition: ToolDefinition::new(name, Value::Null), explicit_schema: false }
    }

    /// What the tool does, for the model.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.definition.description = Some(description.into());
        self
    }

    /// Asks providers for a strict definition (`true`) or forbids one (`false`).
    pub fn strict(mut self, strict: bool) -> Self {
        self.definition.strict = Some(strict);
        self
    }

    /// Makes each call of this tool a barrier.
    pub fn sequential(mut self, sequential: bool) -> Self {
        self.definition.sequential = sequential;
        self
    }

    /// Cancels each attempt after this many milliseconds.
    pub fn timeout_ms(mut self, timeout_ms: u64) -> Self {
        self.definition.timeout_ms = Some(timeout_ms);
        self
    }

    /// Retries after the first attempt.
    pub fn max_retries(mut self, max_retries: u32) -> Self {
        self.definition.max_retries = Some(max_retries);
        self
    }

    /// Model-facing metadata.
    pub fn metadata(mut self, metadata: Map<String, Value>) -> Self {
        self.definition.metadata = metadata;
        self
    }

    /// Uses this schema as is instead of deriving one from the argument type.
    pub fn parameters_schema(mut self, schema: Value) -> Self {
        self.definition.parameters = schema;
        self.explicit_schema = true;
        self
    }

    /// Finishes the tool: `f` receives the context and the decoded arguments.
    ///
    /// # Errors
    /// Any registration rule the definition breaks (name, strict, schema).
    pub fn handler<A, F, Fut, O>(mut self, f: F) -> Result<FnTool<A, F>, DefinitionError>
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(ToolContext, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
        O: IntoToolResult,
    {
        if !self.explicit_schema {
            self.definition.parameters = schema_for::<A>()
                .map_err(|err| DefinitionError::new(&self.definition.name, DefinitionErrorKind::Schema(err)))?;
        }
        self.definition.validate()?;
        Ok(FnTool { definition: self.definition, f, args: PhantomData })
    }
}

/// A tool made by [`ToolBuilder::handler`].
pub struct FnTool<A, F> {
    definition: ToolDefinition,
    f: F,
    args: PhantomData<fn() -> A>,
}

impl<A, F, Fut, O> super::Tool for FnTool<A, F>
where
    A: DeserializeOwned + Send + 'static,
    F: Fn(ToolContext, A) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
    O: IntoToolResult,
{
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn call<'a>(&'a self, ctx: ToolContext, args: &'a Value) -> BoxFuture<'a, Result<ToolResult, ToolError>> {
        match decode_args::<A>(args) {
            Ok(args) => (self.f)(ctx, args).map(|out| out.and_then(IntoToolResult::into_tool_result)).boxed(),
            Err(err) => futures::future::ready(Err(err)).boxed(),
        }
    }
}
