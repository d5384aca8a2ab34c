//! Tools built from closures: a builder for the definition, a closure for the call.

use std::future::Future;
use std::marker::PhantomData;

use futures::FutureExt;
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{ToolContext, ToolDefinition, ToolError, ToolResult, args::decode_args, result::IntoToolResult};
use crate::error::{DefinitionError, DefinitionErrorKind};
use crate::schema::{DeriveReturn, SchemaError, schema_for};

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
    pub(super) definition: ToolDefinition,
    explicit_schema: bool,
    explicit_return_schema: bool,
}

impl ToolBuilder {
    /// Starts a tool called `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            definition: ToolDefinition::new(name, Value::Null),
            explicit_schema: false,
            explicit_return_schema: false,
        }
    }

    /// Uses this schema as is instead of deriving one from the argument type.
    pub fn parameters_schema(mut self, schema: Value) -> Self {
        self.definition.parameters = schema;
        self.explicit_schema = true;
        self
    }

    /// Declares the schema of the value the tool returns (served over MCP as
    /// `outputSchema`). A closure tool has none unless given one here; `#[tool]` derives
    /// it from the return type instead.
    ///
    /// ```
    /// use serde_json::json;
    /// use starweaver::{Tool, ToolBuilder, ToolContext};
    ///
    /// let count = ToolBuilder::new("count")
    ///     .return_schema(json!({"type": "integer", "minimum": 0}))
    ///     .handler(|_ctx: ToolContext, args: serde_json::Map<String, serde_json::Value>| async move { Ok(args.len()) })
    ///     .unwrap();
    /// assert_eq!(count.definition().return_schema, Some(json!({"type": "integer", "minimum": 0})));
    /// ```
    pub fn return_schema(mut self, schema: Value) -> Self {
        self.definition.return_schema = Some(schema);
        self.explicit_return_schema = true;
        self
    }

    /// Finishes the tool: `f` receives the context and the decoded arguments.
    ///
    /// # Errors
    /// Any registration rule the definition breaks (name, strict, schema).
    pub fn handler<A, F, Fut, O>(self, f: F) -> Result<FnTool<A, F>, DefinitionError>
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(ToolContext, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
        O: IntoToolResult,
    {
        let tool = self.build(Some(schema_for::<A>), None, f);
        match tool.error {
            Some(err) => Err(err),
            None => Ok(tool),
        }
    }

    /// The tool, keeping any registration error for [`Tool::validate`](super::Tool::validate)
    /// to report when an agent registers it. `#[tool]` expands to this (through
    /// `__private::tool`), so a broken definition fails where the tool is registered.
    ///
    /// `derive` gives the argument type's schema; `None` when the type has none because an
    /// explicit [`parameters_schema`](Self::parameters_schema) stands in for it.
    /// `derive_return` gives the return type's schema, when the type has one and no explicit
    /// [`return_schema`](Self::return_schema) stands in for it.
    pub(crate) fn build<A, F>(
        mut self,
        derive: Option<fn() -> Result<Value, SchemaError>>,
        derive_return: Option<DeriveReturn>,
        f: F,
    ) -> FnTool<A, F> {
        let derived = match (self.explicit_schema, derive) {
            (false, Some(derive)) => derive().map(|schema| self.definition.parameters = schema),
            _ => Ok(()),
        }
        .map_err(DefinitionErrorKind::Schema)
        .and_then(|()| match (self.explicit_return_schema, derive_return) {
            (false, Some(derive)) => {
                derive().map(|schema| self.definition.return_schema = schema).map_err(DefinitionErrorKind::ReturnSchema)
            }
            _ => Ok(()),
        });
        let error = match derived {
            Ok(()) => self.definition.validate().err(),
            Err(kind) => Some(DefinitionError::new(&self.definition.name, kind)),
        };
        FnTool { definition: self.definition, error, f, args: PhantomData }
    }
}

/// A tool made by [`ToolBuilder::handler`].
pub struct FnTool<A, F> {
    definition: ToolDefinition,
    error: Option<DefinitionError>,
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

    fn validate(&self) -> Result<(), DefinitionError> {
        self.error.clone().map_or(Ok(()), Err)
    }

    fn call<'a>(&'a self, ctx: ToolContext, args: &'a Value) -> BoxFuture<'a, Result<ToolResult, ToolError>> {
        match decode_args::<A>(args) {
            Ok(args) => (self.f)(ctx, args).map(|out| out.and_then(IntoToolResult::into_tool_result)).boxed(),
            Err(err) => futures::future::ready(Err(err)).boxed(),
        }
    }
}
