//! What a run answers with: text, or a typed value the model gives by calling an output
//! tool (`final_result`, or `final_result_<Name>` for each member of a union).
//!
//! An output tool is a tool like any other on the way to the model (one schema path, the
//! strict transform, the renderers) and on the way back (the call's arguments are
//! decoded and checked, a failure is the call's error return naming the field, and it
//! counts against the output's retries). Its return holds the output as its host-only
//! `value`; the model sees only that the final result was taken. What differs is what
//! the machine does with the call: it runs first, and once one succeeds the run ends
//! with its value (see [`EndStrategy`]).
//!
//! ```
//! use serde_json::json;
//! use starweaver::testing::TestModel;
//! use starweaver::{Agent, ToolCallPart};
//!
//! #[derive(serde::Deserialize, serde::Serialize, schemars::JsonSchema, Debug, PartialEq)]
//! struct Invoice { number: String, total_cents: u64 }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let model = TestModel::new([TestModel::tool_call_response([ToolCallPart::new(
//!     "c1",
//!     "final_result",
//!     json!({"number": "A-7", "total_cents": 1250}),
//! )])]);
//! let agent = Agent::builder(model).output_type::<Invoice>().build().unwrap();
//! let result = agent.run("read the invoice").await.unwrap();
//! let invoice: Invoice = result.output_as().unwrap();
//! assert_eq!(invoice, Invoice { number: "A-7".into(), total_cents: 1250 });
//! # });
//! ```

use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use crate::error::DefinitionError;
use crate::registry::{Registration, Source, ToolsetTraits};
use crate::schema::SchemaError;
use crate::tool::{Tool, ToolContext, ToolDefinition, ToolError, ToolResult, decode_args};

/// The name of the output tool of an output that has one member.
pub const OUTPUT_TOOL: &str = "final_result";

/// What the model sees as the return of the output call that gave the run's output.
pub const OUTPUT_TAKEN: &str = "Final result processed.";

/// How many times the model may be corrected on its output unless the agent says otherwise.
pub const DEFAULT_OUTPUT_RETRIES: u32 = 1;

/// What happens to a response's other tool calls when it also calls an output tool.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EndStrategy {
    /// The output is taken and the other calls do not run: each gets a `cancelled` return
    /// saying so, so the history never holds a call without a return.
    #[default]
    Early,
    /// The other calls run to their end first; the run then ends with the output.
    Exhaustive,
}

impl EndStrategy {
    /// `"early"` or `"exhaustive"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Early => "early",
            Self::Exhaustive => "exhaustive",
        }
    }
}

/// Checks (and may change) a run's output once it was decoded: a business rule the schema
/// cannot say. An error of kind `model_retry` ([`ToolError::model_retry`]) sends the model
/// its message to correct the output, counting against the output's retries.
///
/// ```
/// use serde_json::Value;
/// use starweaver::ToolError;
///
/// let positive = |_ctx: starweaver::ToolContext, output: Value| async move {
///     match output["total_cents"].as_u64() {
///         Some(0) => Err(ToolError::model_retry("an invoice's total is never 0")),
///         _ => Ok(output),
///     }
/// };
/// # let _ = starweaver::Agent::builder(starweaver::testing::TestModel::new([])).output_validator(positive);
/// ```
pub trait OutputValidator: Send + Sync + 'static {
    /// The output, checked, and perhaps changed.
    ///
    /// # Errors
    /// Why the output is refused: `model_retry` to have the model correct it; any other
    /// kind is the output call's error as a tool's would be.
    fn validate(&self, ctx: ToolContext, output: Value) -> BoxFuture<'static, Result<Value, ToolError>>;
}

impl<F, Fut> OutputValidator for F
where
    F: Fn(ToolContext, Value) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Value, ToolError>> + Send + 'static,
{
    fn validate(&self, ctx: ToolContext, output: Value) -> BoxFuture<'static, Result<Value, ToolError>> {
        self(ctx, output).boxed()
    }
}

/// One member of an output: how its arguments become the output.
#[derive(Clone)]
enum Member {
    /// A type: the arguments decode into it (under a `response` key when its schema is
    /// not an object's), and its canonical JSON is the output.
    Typed { name: String, description: Option<String>, parameters: Value, wrapped: bool, decode: Decode },
    /// An output function: a tool whose return value is the output.
    Function(Arc<dyn Tool>),
}

/// Decodes a member type's arguments and writes the value back as canonical JSON.
type Decode = fn(&Value) -> Result<Value, ToolError>;

fn decode<T: DeserializeOwned + Serialize>(args: &Value) -> Result<Value, ToolError> {
    let value: T = decode_args(args)?;
    serde_json::to_value(value)
        .map_err(|error| ToolError::execution(format!("the output could not be written as JSON: {error}")))
}

/// The JSON Schema of an output type as a tool's parameters: its own when it describes an
/// object, else one object property `response` holding it (its `$defs` moved to the root,
/// where its references point), and whether it was wrapped.
fn parameters_of(mut schema: Value) -> (Value, bool) {
    if schema.get("type").and_then(Value::as_str) == Some("object") {
        return (schema, false);
    }
    let defs = schema.as_object_mut().and_then(|s| s.remove("$defs"));
    let mut wrapped = json!({
        "type": "object",
        "properties": {"response": schema},
        "required": ["response"],
        "additionalProperties": false,
    });
    if let (Some(root), Some(defs)) = (wrapped.as_object_mut(), defs) {
        root.insert("$defs".into(), defs);
    }
    (wrapped, true)
}

/// What the run loop needs of the output: whether text ends a run, and what becomes of
/// the other calls of a response with an output call.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OutputRules {
    pub takes_text: bool,
    pub end_strategy: EndStrategy,
}

/// What an agent asks its runs to answer with; built by the agent builder's `output_*`
/// methods. Without members the answer is text.
#[derive(Clone)]
pub(crate) struct OutputSpec {
    members: Vec<Member>,
    /// Whether a text answer ends the run too (always, without members).
    pub text: bool,
    pub retries: u32,
    pub end_strategy: EndStrategy,
    validators: Vec<Arc<dyn OutputValidator>>,
}

impl Default for OutputSpec {
    fn default() -> Self {
        Self {
            members: Vec::new(),
            text: false,
            retries: DEFAULT_OUTPUT_RETRIES,
            end_strategy: EndStrategy::Early,
            validators: Vec::new(),
        }
    }
}

impl OutputSpec {
    /// Adds the type `T` as a member.
    pub(crate) fn typed<T: JsonSchema + DeserializeOwned + Serialize>(&mut self) -> Result<(), SchemaError> {
        let mut schema = crate::schema::output_schema_for::<T>()?;
        // The type's doc comment describes the tool, not its arguments.
        let description = schema.as_object_mut().and_then(|s| s.remove("description"));
        let description = description.as_ref().and_then(Value::as_str).map(str::to_owned);
        let (parameters, wrapped) = parameters_of(schema);
        let name = T::schema_name().into_owned();
        self.members.push(Member::Typed { name, description, parameters, wrapped, decode: decode::<T> });
        Ok(())
    }

    /// Adds an output function: a tool whose return value is the output.
    pub(crate) fn function(&mut self, tool: Arc<dyn Tool>) {
        self.members.push(Member::Function(tool));
    }

    pub(crate) fn validator(&mut self, validator: Arc<dyn OutputValidator>) {
        self.validators.push(validator);
    }

    pub(crate) fn rules(&self) -> OutputRules {
        OutputRules { takes_text: self.text || self.members.is_empty(), end_strategy: self.end_strategy }
    }

    /// The output tools, each as a registration: `final_result` for one member,
    /// `final_result_<Name>` for each of several.
    ///
    /// # Errors
    /// A member whose name cannot make a valid tool name (two members of one name are
    /// refused where the tools are registered).
    pub(crate) fn registrations(&self) -> Result<Vec<Registration>, DefinitionError> {
        let validators: Arc<[Arc<dyn OutputValidator>]> = self.validators.iter().cloned().collect();
        let single = self.members.len() == 1;
        self.members
            .iter()
            .map(|member| {
                let own = match member {
                    Member::Typed { name, .. } => name.as_str(),
                    Member::Function(tool) => tool.definition().name.as_str(),
                };
                let name =
                    if single { OUTPUT_TOOL.to_owned() } else { format!("{OUTPUT_TOOL}_{}", tool_name_part(own)) };
                let mut definition = match member {
                    Member::Typed { description, parameters, .. } => {
                        let mut definition = ToolDefinition::new(name, parameters.clone());
                        definition.description = Some(
                            description.clone().unwrap_or_else(|| "The final response which ends this run.".into()),
                        );
                        definition
                    }
                    Member::Function(tool) => {
                        tool.validate()?;
                        let mut definition = tool.definition().clone();
                        definition.name = name;
                        definition
                    }
                };
                definition.max_retries = Some(self.retries);
                definition.validate()?;
                let tool = OutputTool { definition, member: member.clone(), validators: validators.clone() };
                Ok(Registration {
                    tool: Arc::new(tool),
                    source: Source::Output,
                    hooks: Arc::new([]),
                    toolset: ToolsetTraits::default(),
                })
            })
            .collect()
    }
}

/// A member's name as it may stand in a tool name: letters, digits, `_` and `-`, anything
/// else (the `<`, `>` and `,` of a generic type's name) as `_`.
fn tool_name_part(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect()
}

/// An output tool: decodes a member's arguments, or runs an output function, then the
/// agent's output validators in order.
struct OutputTool {
    definition: ToolDefinition,
    member: Member,
    validators: Arc<[Arc<dyn OutputValidator>]>,
}

impl Tool for OutputTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn call<'a>(&'a self, ctx: ToolContext, args: &'a Value) -> BoxFuture<'a, Result<ToolResult, ToolError>> {
        Box::pin(async move {
            let mut output = match &self.member {
                Member::Typed { wrapped, decode, .. } => {
                    let response = if *wrapped { response_of(args)? } else { args };
                    decode(response)?
                }
                Member::Function(tool) => tool.call(ctx.clone(), args).await?.value,
            };
            for validator in self.validators.iter() {
                output = validator.validate(ctx.clone(), output).await?;
            }
            Ok(ToolResult::new(output).with_model_content(Value::String(OUTPUT_TAKEN.to_owned())))
        })
    }
}

/// The `response` argument of a wrapped member's call.
fn response_of(args: &Value) -> Result<&Value, ToolError> {
    let args: &Map<String, Value> =
        args.as_object().ok_or_else(|| ToolError::invalid_arguments("expected an object"))?;
    args.get("response").ok_or_else(|| ToolError::invalid_arguments("missing field `response`"))
}
