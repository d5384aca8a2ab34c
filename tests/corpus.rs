//! Tricky signatures for the provider snapshots and the checker (`providers.rs`): optionals,
//! literals, documented enums, nested, recursive and listed models, maps, unions, defaults,
//! date-times, UUIDs, constrained numbers and strings. Each tool echoes its arguments.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use chrono::{DateTime, NaiveDate, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use starweaver::{Tool, tool};
use uuid::Uuid;

/// A postal address.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Address {
    /// Street and number.
    pub street: String,
    /// ISO 3166 country code.
    pub country: String,
}

/// Temperature units, spelt as the model must spell them.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TempUnit {
    /// Degrees Celsius.
    Celsius,
    /// Degrees Fahrenheit.
    Fahrenheit,
}

/// How bad an incident is.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Nobody is affected yet.
    Low,
    /// Some users are affected.
    High,
    /// Everyone is affected: page the on-call engineer.
    Critical,
}

/// An order with a shipping and an optional billing address.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Order {
    /// The order number.
    pub id: u64,
    /// Where it goes.
    pub shipping: Address,
    /// Who pays, when not the recipient.
    pub billing: Option<Address>,
}

/// A tree of named nodes.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct TreeNode {
    /// The node's name.
    pub name: String,
    /// Its children.
    pub children: Vec<TreeNode>,
}

/// One line of an invoice.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct LineItem {
    /// Stock-keeping unit.
    pub sku: String,
    /// How many.
    pub quantity: u32,
}

/// A number or a text.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum NumberOrText {
    /// A number.
    Number(f64),
    /// A text.
    Text(String),
}

/// A shape, tagged by `kind`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Shape {
    /// A circle.
    Circle {
        /// Its radius.
        radius: f64,
    },
    /// A square.
    Square {
        /// Its side.
        side: f64,
    },
}

/// Numbers with bounds.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Bounded {
    /// How many, from 1 to 100.
    #[schemars(range(min = 1, max = 100))]
    pub count: u32,
    /// A fraction.
    #[schemars(range(min = 0.0, max = 1.0))]
    pub ratio: f64,
}

/// Strings with bounds.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Named {
    /// A display name.
    #[schemars(length(min = 1, max = 40))]
    pub name: String,
    /// A lowercase slug.
    #[schemars(regex(pattern = r"^[a-z]+$"))]
    pub slug: String,
}

/// One step of a plan.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Step {
    /// Wait a number of seconds.
    Wait(u32),
    /// Say something.
    Say {
        /// What to say.
        text: String,
    },
    /// Stop.
    Stop,
}

/// A way to reach someone.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Contact {
    /// An email address.
    pub email: String,
    /// A phone number, if any.
    pub phone: Option<String>,
}

/// Flags that all default.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Flags {
    /// Print more.
    #[serde(default)]
    pub verbose: bool,
    /// How many times to retry.
    #[serde(default = "three")]
    pub retries: u8,
}

fn three() -> u8 {
    3
}

/// Fields renamed to camelCase.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Renamed {
    /// The first name.
    pub first_name: String,
    /// The last name.
    pub last_name: Option<String>,
}

/// Level one of four.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Level1 {
    /// Level two.
    pub two: Level2,
}

/// Level two of four.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Level2 {
    /// Level three.
    pub three: Option<Level3>,
}

/// Level three of four.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Level3 {
    /// Level four.
    pub four: Vec<Level4>,
}

/// Level four of four.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Level4 {
    /// The leaf value.
    pub leaf: String,
}

/// Search, with an optional limit.
#[tool]
pub async fn optional_params(
    /// What to look for.
    query: String,
    /// At most this many results.
    limit: Option<u32>,
) -> Value {
    json!({"query": query, "limit": limit})
}

/// Forecast with defaults.
#[tool]
pub async fn defaults(
    /// The city.
    city: String,
    /// Days ahead.
    #[arg(default = 3)]
    days: u8,
    /// Metric units.
    #[arg(default)]
    metric: bool,
) -> Value {
    json!({"city": city, "days": days, "metric": metric})
}

/// Convert a temperature.
#[tool]
pub async fn literal_unit(
    /// The value.
    value: f64,
    /// The unit to convert to.
    unit: TempUnit,
) -> Value {
    json!({"value": value, "unit": unit})
}

/// Open an incident.
#[tool]
pub async fn documented_enum(
    /// What happened.
    title: String,
    /// How bad it is.
    severity: Severity,
) -> Value {
    json!({"title": title, "severity": severity})
}

/// Place an order.
#[tool]
pub async fn nested_model(
    /// The order.
    order: Order,
) -> Value {
    json!(order)
}

/// Store a tree.
#[tool]
pub async fn recursive_tree(
    /// The root node.
    tree: TreeNode,
) -> Value {
    json!(tree)
}

/// Invoice some items.
#[tool]
pub async fn list_of_models(
    /// The lines.
    items: Vec<LineItem>,
) -> Value {
    json!(items)
}

/// Record counts per name.
#[tool]
pub async fn map_of_counts(
    /// Count per name.
    counts: BTreeMap<String, u32>,
) -> Value {
    json!(counts)
}

/// Addresses per region.
#[tool]
pub async fn map_of_models(
    /// Address per region.
    by_region: HashMap<String, Address>,
) -> Value {
    json!(by_region)
}

/// Echo a number or a text.
#[tool]
pub async fn untagged_union(
    /// The value.
    value: NumberOrText,
) -> Value {
    json!(value)
}

/// Area of a shape.
#[tool]
pub async fn tagged_union(
    /// The shape.
    shape: Shape,
) -> Value {
    json!(shape)
}

/// Schedule something.
#[tool]
pub async fn datetimes(
    /// When, in UTC.
    at: DateTime<Utc>,
    /// On which day.
    on: NaiveDate,
) -> Value {
    json!({"at": at, "on": on})
}

/// Link two records.
#[tool]
pub async fn uuids(
    /// The record.
    id: Uuid,
    /// Its parent, if any.
    parent: Option<Uuid>,
) -> Value {
    json!({"id": id, "parent": parent})
}

/// Sample with bounds.
#[tool]
pub async fn constrained_numbers(args: Bounded) -> Value {
    json!(args)
}

/// Name something.
#[tool]
pub async fn constrained_strings(args: Named) -> Value {
    json!(args)
}

/// Tag something.
#[tool]
pub async fn optional_list(
    /// Tags, if any.
    tags: Option<Vec<String>>,
) -> Value {
    json!(tags)
}

/// Go to a point.
#[tool]
pub async fn tuple_param(
    /// The point, as (x, y).
    point: (f64, f64),
) -> Value {
    json!(point)
}

/// Run a plan.
#[tool]
pub async fn list_of_enums(
    /// The steps, in order.
    steps: Vec<Step>,
) -> Value {
    json!(steps)
}

/// Notify someone.
#[tool]
pub async fn optional_nested_model(
    /// How to reach them, if known.
    contact: Option<Contact>,
) -> Value {
    json!(contact)
}

/// Mix number types.
#[tool]
pub async fn number_kinds(
    /// An unsigned 64-bit count.
    count: u64,
    /// A small signed offset.
    offset: i8,
    /// A single-precision scale.
    scale: f32,
) -> Value {
    json!({"count": count, "offset": offset, "scale": scale})
}

/// Deduplicate ids.
#[tool]
pub async fn set_param(
    /// The ids; each at most once.
    ids: BTreeSet<String>,
) -> Value {
    json!(ids)
}

/// Run with flags.
#[tool]
pub async fn struct_defaults(args: Flags) -> Value {
    json!(args)
}

/// Greet a person.
#[tool]
pub async fn renamed_fields(args: Renamed) -> Value {
    json!(args)
}

/// Walk four levels down.
#[tool]
pub async fn deep_nesting(
    /// The top level.
    top: Level1,
) -> Value {
    json!(top)
}

/// Ping.
#[tool]
pub async fn no_params() -> Value {
    json!("pong")
}

/// Book a room; always strict.
#[tool(strict = true)]
pub async fn strict_booking(
    /// The room.
    room: String,
    /// Nights, one by default.
    #[arg(default = 1)]
    nights: u8,
) -> Value {
    json!({"room": room, "nights": nights})
}

/// Never strict, whatever the schema allows.
#[tool(strict = false)]
pub async fn lax_lookup(
    /// The key.
    key: String,
) -> Value {
    json!(key)
}

/// Store any JSON payload.
#[tool]
pub async fn any_json(
    /// The payload.
    payload: Value,
) -> Value {
    payload
}

/// An explicit schema with `oneOf` and a described `$ref`.
#[tool(parameters_schema = r##"{
    "type": "object",
    "properties": {
        "target": {"$ref": "#/$defs/Target", "description": "Where to send it."},
        "mode": {"oneOf": [{"const": "fast"}, {"const": "safe"}]}
    },
    "required": ["target"],
    "$defs": {"Target": {"type": "object", "properties": {"host": {"type": "string", "format": "hostname"}}, "required": ["host"]}}
}"##)]
pub async fn explicit_refs(args: serde_json::Map<String, Value>) -> Value {
    Value::Object(args)
}

/// Every tool of the corpus.
pub fn all() -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(optional_params_tool()),
        Arc::new(defaults_tool()),
        Arc::new(literal_unit_tool()),
        Arc::new(documented_enum_tool()),
        Arc::new(nested_model_tool()),
        Arc::new(recursive_tree_tool()),
        Arc::new(list_of_models_tool()),
        Arc::new(map_of_counts_tool()),
        Arc::new(map_of_models_tool()),
        Arc::new(untagged_union_tool()),
        Arc::new(tagged_union_tool()),
        Arc::new(datetimes_tool()),
        Arc::new(uuids_tool()),
        Arc::new(constrained_numbers_tool()),
        Arc::new(constrained_strings_tool()),
        Arc::new(optional_list_tool()),
        Arc::new(tuple_param_tool()),
        Arc::new(list_of_enums_tool()),
        Arc::new(optional_nested_model_tool()),
        Arc::new(number_kinds_tool()),
        Arc::new(set_param_tool()),
        Arc::new(struct_defaults_tool()),
        Arc::new(renamed_fields_tool()),
        Arc::new(deep_nesting_tool()),
        Arc::new(no_params_tool()),
        Arc::new(strict_booking_tool()),
        Arc::new(lax_lookup_tool()),
        Arc::new(any_json_tool()),
        Arc::new(explicit_refs_tool()),
    ]
}
