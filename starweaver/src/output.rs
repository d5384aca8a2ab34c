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

use crate::error::{DefinitionError, DefinitionErrorKind};
use crate::model::Model;
use crate::registry::{Registration, Source, ToolsetTraits};
use crate::tool::{Dependencies, Tool, ToolContext, ToolDefinition, ToolError, ToolResult, decode_args};

/// The name of the output tool of an output that has one member.
pub const OUTPUT_TOOL: &str = "final_result";

/// What the model sees as the return of the output call that gave the run's output.
pub const OUTPUT_TAKEN: &str = "Final result processed.";

/// What an output tool says of itself when its type has no doc comment.
const FINAL_RESPONSE: &str = "The final response which ends this run.";

/// How many times the model may be corrected on its output unless the agent says otherwise.
pub const DEFAULT_OUTPUT_RETRIES: u32 = 1;

/// How the model is asked for the output.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputMode {
    /// Output tools: the model calls `final_result` with the output as arguments.
    #[default]
    Tool,
    /// The provider's JSON-schema response format (OpenAI Chat and Responses
    /// `json_schema`, Gemini `responseSchema`): the answer's text is the output's JSON. An
    /// agent whose model has none is refused when built.
    Native,
    /// The schema in the instructions, the answer's text parsed as the output's JSON.
    Prompted,
}

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
    Typed { name: String, description: Option<String>, parameters: Value, decode: Decode },
    /// An output function: a tool whose return value is the output.
    Function(Arc<dyn Tool>),
}

impl Member {
    /// The member's own name: its type's schema name, or its function's tool name.
    fn name(&self) -> &str {
        match self {
            Self::Typed { name, .. } => name,
            Self::Function(tool) => &tool.definition().name,
        }
    }

    /// What the member says of itself: its type's doc comment, or its function's.
    fn description(&self) -> Option<&str> {
        match self {
            Self::Typed { description, .. } => description.as_deref(),
            Self::Function(tool) => tool.definition().description.as_deref(),
        }
    }
}

/// Decodes a member type's arguments (the output tool's, as the model sent them) and
/// writes the value back as canonical JSON.
type Decode = Arc<dyn Fn(&Value) -> Result<Value, ToolError> + Send + Sync>;

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
    /// Whether a text answer is checked before it ends the run (native and prompted
    /// output, or output validators on text).
    pub checks_text: bool,
    pub retries: u32,
    pub end_strategy: EndStrategy,
}

/// What a run answers with: text (the default), one type, an output function, or a union
/// of these, and how the model is asked for it. An agent has one
/// ([`AgentBuilder::output`](crate::AgentBuilder::output), or its `output_*` methods); a
/// run may ask for its own ([`RunOptions::output`](crate::RunOptions::output)).
///
/// ```
/// use serde_json::json;
/// use starweaver::output::Output;
/// use starweaver::testing::TestModel;
/// use starweaver::{Agent, RunOptions, ToolCallPart};
///
/// #[derive(serde::Deserialize, serde::Serialize, schemars::JsonSchema, Debug, PartialEq)]
/// struct City { name: String }
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let model = TestModel::new([TestModel::tool_call_response([ToolCallPart::new(
///     "c1",
///     "final_result",
///     json!({"name": "Lyon"}),
/// )])]);
/// let agent = Agent::builder(model).build().unwrap();
/// let options = RunOptions { output: Some(Output::new().typed::<City>()), ..RunOptions::default() };
/// let result = agent.run_with("where?", options).await.unwrap();
/// assert_eq!(result.output_as::<City>().unwrap(), City { name: "Lyon".into() });
/// # });
/// ```
#[derive(Clone)]
#[must_use]
pub struct Output {
    members: Vec<Member>,
    mode: OutputMode,
    /// Whether a text answer ends the run too (always, without members).
    text: bool,
    retries: u32,
    end_strategy: EndStrategy,
    validators: Vec<Arc<dyn OutputValidator>>,
    /// Member types whose schema could not be made, reported when the output is built.
    errors: Vec<DefinitionError>,
}

impl Default for Output {
    fn default() -> Self {
        Self {
            members: Vec::new(),
            mode: OutputMode::Tool,
            text: false,
            retries: DEFAULT_OUTPUT_RETRIES,
            end_strategy: EndStrategy::Early,
            validators: Vec::new(),
            errors: Vec::new(),
        }
    }
}

impl std::fmt::Debug for Output {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let members: Vec<&str> = self.members.iter().map(Member::name).collect();
        f.debug_struct("Output")
            .field("members", &members)
            .field("mode", &self.mode)
            .field("text", &self.text)
            .field("retries", &self.retries)
            .field("end_strategy", &self.end_strategy)
            .field("validators", &self.validators.len())
            .finish_non_exhaustive()
    }
}

impl Output {
    /// A text answer, until a member is added.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the type `T` as a member: the model is offered an output tool whose parameters
    /// are `T`'s schema (`final_result`), and a call to it that decodes ends the run with
    /// its value. With several members each is one tool of a union (`final_result_<Name>`);
    /// a type whose schema is not an object's is asked for under a `response` key.
    pub fn typed<T: JsonSchema + DeserializeOwned + Serialize + 'static>(mut self) -> Self {
        match crate::schema::output_schema_for::<T>() {
            Ok(mut schema) => {
                // The type's doc comment describes the tool, not its arguments.
                let description = schema.as_object_mut().and_then(|s| s.remove("description"));
                let description = description.as_ref().and_then(Value::as_str).map(str::to_owned);
                let (parameters, wrapped) = parameters_of(schema);
                let name = T::schema_name().into_owned();
                let decode: Decode = if wrapped {
                    Arc::new(|args: &Value| decode::<T>(response_of(args)?))
                } else {
                    Arc::new(|args: &Value| decode::<T>(args))
                };
                self.members.push(Member::Typed { name, description, parameters, decode });
            }
            Err(error) => {
                self.errors.push(DefinitionError::new(&T::schema_name(), DefinitionErrorKind::Schema(error)));
            }
        }
        self
    }

    /// Adds a member known by its output tool's `parameters` (a JSON Schema of an object)
    /// and a function that turns the tool's arguments into the output's JSON, or fails
    /// with the error the model is shown (`invalid_arguments` naming the field, say): a
    /// type of another language's binding, which validates it its own way. Called in
    /// place, on the calling thread.
    ///
    /// ```
    /// use serde_json::{Value, json};
    /// use starweaver::ToolError;
    /// use starweaver::output::Output;
    ///
    /// let city = Output::new().typed_by("City", None, json!({"type": "object", "properties": {"name": {"type": "string"}}}), |args: &Value| {
    ///     args.get("name").cloned().ok_or_else(|| ToolError::invalid_arguments("missing field `name`"))
    /// });
    /// # drop(city);
    /// ```
    pub fn typed_by(
        mut self,
        name: impl Into<String>,
        description: Option<String>,
        parameters: Value,
        decode: impl Fn(&Value) -> Result<Value, ToolError> + Send + Sync + 'static,
    ) -> Self {
        self.members.push(Member::Typed { name: name.into(), description, parameters, decode: Arc::new(decode) });
        self
    }

    /// Adds an output function: the model fills its parameters, and its return value is
    /// the output (a `#[tool]` function, or a [`ToolBuilder`](crate::ToolBuilder) tool). It
    /// may fail with [`ToolError::model_retry`] to have the model correct the call.
    pub fn function(self, tool: impl Tool) -> Self {
        self.shared_function(Arc::new(tool))
    }

    /// Adds an output function shared with other agents (see [`function`](Self::function)).
    pub fn shared_function(mut self, tool: Arc<dyn Tool>) -> Self {
        self.members.push(Member::Function(tool));
        self
    }

    /// Lets a text answer end a run too, beside the members (a union with text).
    pub fn or_text(mut self) -> Self {
        self.text = true;
        self
    }

    /// How the model is asked for the output: output tools ([`OutputMode::Tool`], the
    /// default), the provider's JSON-schema response format ([`OutputMode::Native`]; a model
    /// without one is refused), or the schema in the instructions ([`OutputMode::Prompted`]).
    /// Native and prompted output take a type or a union of types (not text): a union is
    /// asked for as one object, `{"result": {"kind": "<Name>", "data": ...}}`, whose `kind`
    /// names the member that answered (the run's `output_tool` is then its tool,
    /// `final_result_<Name>`).
    pub fn mode(mut self, mode: OutputMode) -> Self {
        self.mode = mode;
        self
    }

    /// How many times the model may be corrected on its output (a failed decode, a
    /// validator's `model_retry`, a text answer where none is taken) before the run fails
    /// with [`RunError::OutputValidation`](crate::RunError::OutputValidation); 1 by default.
    pub fn retries(mut self, retries: u32) -> Self {
        self.retries = retries;
        self
    }

    /// Checks every output once decoded, after the validators added before it; see
    /// [`OutputValidator`].
    pub fn validator(self, validator: impl OutputValidator) -> Self {
        self.shared_validator(Arc::new(validator))
    }

    /// An output validator shared with other agents.
    pub fn shared_validator(mut self, validator: Arc<dyn OutputValidator>) -> Self {
        self.validators.push(validator);
        self
    }

    /// What becomes of a response's other calls when it calls an output tool too
    /// ([`EndStrategy::Early`] by default: they do not run).
    pub fn end_strategy(mut self, strategy: EndStrategy) -> Self {
        self.end_strategy = strategy;
        self
    }

    fn rules(&self) -> OutputRules {
        let by_tool = self.mode == OutputMode::Tool;
        OutputRules {
            takes_text: self.text || self.members.is_empty() || !by_tool,
            checks_text: (!self.members.is_empty() && !by_tool)
                || ((self.text || self.members.is_empty()) && !self.validators.is_empty()),
            retries: self.retries,
            end_strategy: self.end_strategy,
        }
    }

    /// What runs with this output need, for `model` and the agent's `instructions`: the
    /// output tools they offer (none when the output is asked for otherwise), what checks
    /// a text answer, and the definition a native output is asked with.
    ///
    /// # Errors
    /// A member type without a schema or whose name cannot make a valid tool name; native
    /// or prompted output without a type, with text, or of a union two of whose members
    /// share a name or give one `$defs` name different schemas; native output on a model
    /// without a JSON-schema response format.
    pub(crate) fn build(&self, model: &dyn Model, instructions: Option<&str>) -> crate::Result<RunOutput> {
        if let Some(error) = self.errors.first() {
            return Err(error.clone().into());
        }
        let rules = self.rules();
        let tools = self.output_tools()?;
        let own = instructions.map(str::to_owned);
        if self.mode == OutputMode::Tool {
            let check =
                rules.checks_text.then(|| OutputCheck { tools: Vec::new(), validators: self.shared_validators() });
            let registrations = tools.into_iter().map(OutputTool::registration).collect();
            return Ok(RunOutput { rules, registrations, check, asked: None, instructions: own });
        }
        let mode = if self.mode == OutputMode::Native { "NativeOutput" } else { "PromptedOutput" };
        if tools.is_empty() {
            let message = format!("{mode} takes a type or a union of types, got none");
            return Err(crate::Error::InvalidOption { option: "output_type", message });
        }
        if self.text {
            let message = format!("{mode} takes types, without text (its answer is the type's JSON)");
            return Err(crate::Error::InvalidOption { option: "output_type", message });
        }
        let asked = asked_definition(&tools, self.retries).map_err(|message| crate::Error::InvalidOption {
            option: "output_type",
            message: format!("{mode}: {message}"),
        })?;
        let check = Some(OutputCheck { tools, validators: self.shared_validators() });
        let (asked, instructions) = if self.mode == OutputMode::Native {
            if !model.native_output() {
                let model = model.system().unwrap_or("this model");
                let message = format!(
                    "`{model}` has no JSON-schema response format for native output: ask with output tools (the default) or prompted output"
                );
                return Err(crate::Error::InvalidOption { option: "output_type", message });
            }
            (Some(asked), own)
        } else {
            let prompt = prompted_instructions(&asked);
            (None, Some(own.map_or_else(|| prompt.clone(), |own| format!("{own}\n\n{prompt}"))))
        };
        Ok(RunOutput { rules, registrations: Vec::new(), check, asked, instructions })
    }

    fn shared_validators(&self) -> Arc<[Arc<dyn OutputValidator>]> {
        self.validators.iter().cloned().collect()
    }

    /// The output tools: `final_result` for one member, `final_result_<Name>` for each of
    /// several.
    ///
    /// # Errors
    /// A member whose name cannot make a valid tool name (two members of one name are
    /// refused where the tools are registered).
    fn output_tools(&self) -> Result<Vec<OutputTool>, DefinitionError> {
        let validators = self.shared_validators();
        let single = self.members.len() == 1;
        self.members
            .iter()
            .map(|member| {
                let name = if single {
                    OUTPUT_TOOL.to_owned()
                } else {
                    format!("{OUTPUT_TOOL}_{}", tool_name_part(member.name()))
                };
                let mut definition = match member {
                    Member::Typed { description, parameters, .. } => {
                        let mut definition = ToolDefinition::new(name, parameters.clone());
                        definition.description = Some(description.clone().unwrap_or_else(|| FINAL_RESPONSE.to_owned()));
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
                Ok(OutputTool { definition, member: member.clone(), validators: validators.clone() })
            })
            .collect()
    }
}

/// What a native or prompted output asks with: its one member's output tool's definition,
/// or, for a union, one object whose `result` is any one member: its `kind` (the member's
/// name, as in its tool's name) and its `data` (what its tool takes), described as the
/// member describes itself. Each member's `$defs` move to the root, where their references
/// point.
///
/// # Errors
/// Two members of one name, or two that give one `$defs` name different schemas.
fn asked_definition(tools: &[OutputTool], retries: u32) -> Result<ToolDefinition, String> {
    if let [tool] = tools {
        return Ok(tool.definition.clone());
    }
    // Each `$defs` name, and the first member that gave it.
    let (mut defs, mut owners) = (Map::new(), std::collections::HashMap::new());
    let (mut kinds, mut any_of) = (Vec::with_capacity(tools.len()), Vec::with_capacity(tools.len()));
    for tool in tools {
        let kind = tool.kind();
        if kinds.contains(&kind) {
            return Err(format!("two members are named `{kind}`"));
        }
        let mut data = tool.definition.parameters.clone();
        if let Some(Value::Object(own)) = data.as_object_mut().and_then(|data| data.remove("$defs")) {
            for (name, schema) in own {
                if defs.get(&name).is_some_and(|known| *known != schema) {
                    let first = owners.get(&name).copied().unwrap_or_default();
                    return Err(format!(
                        "members `{first}` and `{kind}` define `$defs/{name}` differently; rename one of the types"
                    ));
                }
                owners.entry(name.clone()).or_insert(kind);
                defs.insert(name, schema);
            }
        }
        let mut member = json!({
            "type": "object",
            "properties": {"kind": {"type": "string", "const": kind}, "data": data},
            "required": ["kind", "data"],
            "additionalProperties": false,
        });
        // What tells the model which member to answer with.
        if let (Some(about), Some(member)) = (tool.member.description(), member.as_object_mut()) {
            member.insert("description".into(), about.into());
        }
        any_of.push(member);
        kinds.push(kind);
    }
    let mut parameters = json!({
        "type": "object",
        "properties": {"result": {"anyOf": any_of}},
        "required": ["result"],
        "additionalProperties": false,
    });
    if let (Some(root), false) = (parameters.as_object_mut(), defs.is_empty()) {
        root.insert("$defs".into(), Value::Object(defs));
    }
    let mut definition = ToolDefinition::new(OUTPUT_TOOL, parameters);
    definition.description = Some(FINAL_RESPONSE.to_owned());
    definition.max_retries = Some(retries);
    definition.validate().map_err(|error| error.to_string())?;
    Ok(definition)
}

/// A member's name as it may stand in a tool name: letters, digits, `_` and `-`, anything
/// else (the `<`, `>` and `,` of a generic type's name) as `_`.
fn tool_name_part(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect()
}

/// What the runs of one output need: built once per agent, or per run for a run's own.
pub(crate) struct RunOutput {
    /// What ends a run besides an output tool's call.
    pub rules: OutputRules,
    /// The output tools, offered after the agent's own tools.
    pub registrations: Vec<Registration>,
    /// What checks a text answer, when one is checked.
    check: Option<OutputCheck>,
    /// The definition a native output is asked with (sent with each model request).
    pub asked: Option<ToolDefinition>,
    /// The agent's instructions, with a prompted output's schema after them.
    pub instructions: Option<String>,
}

impl RunOutput {
    /// What an output check sees as its call: the output tool's name (none for a text
    /// answer), the run's id and dependencies.
    pub(crate) fn context(&self, run_id: &Arc<str>, dependencies: &Dependencies) -> ToolContext {
        ToolContext::of_run(
            self.check.as_ref().map_or("", OutputCheck::tool_name),
            run_id.clone(),
            dependencies.clone(),
        )
    }

    /// Checks a text answer as the run's output (the machine asks only when the output
    /// checks text answers): the output, and the output tool of the union member that gave
    /// it.
    ///
    /// # Errors
    /// Why the answer is refused, for the model.
    pub(crate) async fn check(&self, ctx: ToolContext, text: &str) -> Result<Checked, ToolError> {
        match &self.check {
            Some(check) => check.check(ctx, text).await,
            None => Ok((Value::String(text.to_owned()), None)),
        }
    }
}

/// Checks a text answer: as the output's JSON (native and prompted output), decoded by
/// the output's one member or, for a union, by the member its `result.kind` names; or as
/// text, by the output validators.
struct OutputCheck {
    /// The members' output tools (none: the answer is text).
    tools: Vec<OutputTool>,
    validators: Arc<[Arc<dyn OutputValidator>]>,
}

impl OutputCheck {
    /// The tool name the check's context gives: the one output tool's whose schema the
    /// answer follows, or none for a text answer or a union (whose check names the member
    /// that answered).
    fn tool_name(&self) -> &str {
        match self.tools.as_slice() {
            [tool] => tool.definition.name.as_str(),
            _ => "",
        }
    }

    /// The output `text` gives, and the output tool of the union member that gave it; or
    /// why it is refused (the model is told).
    ///
    /// # Errors
    /// Text that is not JSON, a union's answer without a `result` of a known `kind` and
    /// its `data`, JSON the member refuses, or a validator's refusal.
    async fn check(&self, mut ctx: ToolContext, text: &str) -> Result<Checked, ToolError> {
        if self.tools.is_empty() {
            let output = validated(&self.validators, ctx, Value::String(text.to_owned())).await?;
            return Ok((output, None));
        }
        let json: Value = serde_json::from_str(strip_fence(text)).map_err(|error| {
            ToolError::invalid_arguments(format!("the answer must be JSON matching the schema: {error}"))
        })?;
        if let [tool] = self.tools.as_slice() {
            return Ok((tool.call(ctx, &json).await?.value, None));
        }
        let (tool, data) = self.member_of(&json)?;
        ctx.tool_name = Arc::from(tool.definition.name.as_str());
        let output = tool.call(ctx.clone(), data).await?.value;
        Ok((output, Some(ctx.tool_name)))
    }

    /// The union member a union's answer `{"result": {"kind": ..., "data": ...}}` names,
    /// and its data.
    ///
    /// # Errors
    /// `invalid_arguments` naming what is missing, or the unknown kind and the known ones.
    fn member_of<'a>(&self, json: &'a Value) -> Result<(&OutputTool, &'a Value), ToolError> {
        let field = |value: &'a Value, key: &str, within: &str| {
            value.get(key).ok_or_else(|| ToolError::invalid_arguments(format!("missing field `{within}{key}`")))
        };
        let result = field(json, "result", "")?;
        let kind = field(result, "kind", "result.")?;
        let data = field(result, "data", "result.")?;
        let tool = self.tools.iter().find(|tool| kind.as_str() == Some(tool.kind())).ok_or_else(|| {
            let kinds: Vec<String> = self.tools.iter().map(|tool| format!("`{}`", tool.kind())).collect();
            ToolError::invalid_arguments(format!("unknown `result.kind` {kind}: expected one of {}", kinds.join(", ")))
        })?;
        Ok((tool, data))
    }
}

/// A checked text answer: the output, and the output tool of the union member that gave
/// it (none for text or one type).
pub(crate) type Checked = (Value, Option<Arc<str>>);

/// The instructions that ask for a prompted output: the schema, and the answer's form.
fn prompted_instructions(asked: &ToolDefinition) -> String {
    let schema = serde_json::to_string(&asked.parameters).unwrap_or_default();
    let about = asked.description.as_deref().map(|d| format!(" ({d})")).unwrap_or_default();
    format!(
        "Always give your final answer{about} as a JSON object that matches this JSON Schema, \
         with no text or Markdown before or after it:\n{schema}"
    )
}

/// The JSON inside a Markdown code fence, for a model that fences it anyway.
fn strip_fence(text: &str) -> &str {
    let trimmed = text.trim();
    let Some(inner) = trimmed.strip_prefix("```") else { return trimmed };
    let inner = inner.strip_prefix("json").unwrap_or(inner);
    inner.strip_suffix("```").unwrap_or(inner).trim()
}

/// `output` through each validator in turn.
async fn validated(
    validators: &[Arc<dyn OutputValidator>],
    ctx: ToolContext,
    mut output: Value,
) -> Result<Value, ToolError> {
    for validator in validators {
        output = validator.validate(ctx.clone(), output).await?;
    }
    Ok(output)
}

/// An output tool: decodes a member's arguments, or runs an output function, then the
/// agent's output validators in order.
struct OutputTool {
    definition: ToolDefinition,
    member: Member,
    validators: Arc<[Arc<dyn OutputValidator>]>,
}

impl OutputTool {
    /// The member's name as a union's answer gives it (its `kind`): what follows
    /// `final_result_` in its tool's name (a union's tools are all named so).
    fn kind(&self) -> &str {
        self.definition.name.strip_prefix(OUTPUT_TOOL).and_then(|rest| rest.strip_prefix('_')).unwrap_or_default()
    }

    fn registration(self) -> Registration {
        Registration {
            tool: Arc::new(self),
            source: Source::Output,
            hooks: Arc::new([]),
            toolset: ToolsetTraits::default(),
        }
    }
}

impl Tool for OutputTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn call<'a>(&'a self, ctx: ToolContext, args: &'a Value) -> BoxFuture<'a, Result<ToolResult, ToolError>> {
        Box::pin(async move {
            let output = match &self.member {
                Member::Typed { decode, .. } => decode(args)?,
                Member::Function(tool) => tool.call(ctx.clone(), args).await?.value,
            };
            let output = validated(&self.validators, ctx, output).await?;
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
