//! The checker: each provider's documented rules for tool definitions, applied to a
//! rendered tool. The corpus tests run every rendering through it.

use serde_json::{Map, Value};

use super::gemini::{GEMINI_KEYWORDS, gemini_format_allowed, is_gemini_name};
use super::provider::Provider;
use crate::schema::{Holds, STRICT_STRING_FORMATS};

/// OpenAI's strict-mode limits: nesting depth, object properties in total, enum values.
const OPENAI_MAX_DEPTH: usize = 10;
const OPENAI_MAX_PROPERTIES: usize = 5000;
const OPENAI_MAX_ENUM: usize = 1000;

/// The keywords OpenAI documents for strict schemas; anything else is refused.
const STRICT_KEYWORDS: &[&str] = &[
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "anyOf",
    "$ref",
    "$defs",
    "definitions",
    "enum",
    "const",
    "description",
    "format",
    "pattern",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minItems",
    "maxItems",
];

/// Every way `rendered` (one tool in `provider`'s format) breaks that provider's documented
/// rules, each naming the JSON Pointer; empty when it meets them all.
///
/// ```
/// use serde_json::json;
/// use starweaver::render::{Provider, check};
///
/// let bad = json!({"type": "function", "function": {"name": "t", "strict": true,
///     "parameters": {"type": "object", "properties": {"a": {"type": "string"}}}}});
/// let problems = check(Provider::OpenAiChat, &bad);
/// assert!(problems.iter().any(|p| p.contains("additionalProperties")), "{problems:?}");
/// ```
pub fn check(provider: Provider, rendered: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    match provider {
        Provider::OpenAiChat => match rendered.get("function") {
            Some(function) if rendered.get("type").is_some_and(|t| t == "function") => {
                openai_function(function, "/function", &mut problems);
            }
            _ => problems.push("/: a Chat Completions tool is `{\"type\": \"function\", \"function\": {...}}`".into()),
        },
        Provider::OpenAiResponses => {
            if rendered.get("type").is_none_or(|t| t != "function") {
                problems.push("/type: must be `function`".into());
            }
            if !rendered.get("strict").is_some_and(Value::is_boolean) {
                problems.push("/strict: the Responses API defaults to strict, so it must be spelt out".into());
            }
            openai_function(rendered, "", &mut problems);
        }
        Provider::Anthropic => {
            name(rendered, "", crate::tool::is_valid_name, "[a-zA-Z0-9_-]{1,64}", &mut problems);
            for key in rendered.as_object().into_iter().flat_map(Map::keys) {
                if !["name", "description", "input_schema"].contains(&key.as_str()) {
                    problems.push(format!("/{key}: not a field of an Anthropic tool"));
                }
            }
            match rendered.get("input_schema") {
                Some(schema) if schema.get("type").is_some_and(|t| t == "object") => {}
                _ => problems.push("/input_schema: must be a `type: object` schema".into()),
            }
        }
        Provider::Gemini => {
            name(rendered, "", is_gemini_name, "[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}", &mut problems);
            if let Some(parameters) = rendered.get("parameters") {
                if parameters.get("type").is_none_or(|t| t != "object") {
                    problems.push("/parameters/type: must be `object`".into());
                }
                walk(parameters, "/parameters", 0, &mut |node, path, _| gemini_node(node, path, &mut problems));
            }
        }
    }
    problems
}

fn openai_function(function: &Value, at: &str, problems: &mut Vec<String>) {
    name(function, at, crate::tool::is_valid_name, "[a-zA-Z0-9_-]{1,64}", problems);
    let Some(parameters) = function.get("parameters") else {
        problems.push(format!("{at}/parameters: missing"));
        return;
    };
    if parameters.get("type").is_none_or(|t| t != "object") {
        problems.push(format!("{at}/parameters/type: must be `object`"));
    }
    if function.get("strict").is_some_and(|s| s == true) {
        strict_schema(parameters, &format!("{at}/parameters"), problems);
    }
}

/// OpenAI's strict-mode rules, at every depth.
fn strict_schema(root: &Value, at: &str, problems: &mut Vec<String>) {
    if root.get("anyOf").is_some() {
        problems.push(format!("{at}: the root of a strict schema must not be `anyOf`"));
    }
    let mut properties = 0;
    walk(root, at, 0, &mut |node, path, depth| {
        let Some(map) = node.as_object() else {
            problems.push(format!("{path}: strict schemas must be objects, not `{node}`"));
            return;
        };
        if depth > OPENAI_MAX_DEPTH {
            problems.push(format!("{path}: nested deeper than {OPENAI_MAX_DEPTH} levels"));
        }
        for key in map.keys() {
            if !STRICT_KEYWORDS.contains(&key.as_str()) {
                problems.push(format!("{path}/{key}: not supported in strict mode"));
            }
        }
        if let Some(Value::String(format)) = map.get("format")
            && !STRICT_STRING_FORMATS.contains(&format.as_str())
        {
            problems.push(format!("{path}/format: `{format}` is not a strict-mode format"));
        }
        if map.contains_key("$ref") && map.len() > 1 {
            problems.push(format!("{path}/$ref: strict mode allows no siblings beside `$ref`"));
        }
        if let Some(Value::String(reference)) = map.get("$ref")
            && crate::schema::resolve_ref(root, reference).is_none()
        {
            problems.push(format!("{path}/$ref: `{reference}` names nothing in the schema"));
        }
        if !["type", "anyOf", "$ref", "enum", "const"].iter().any(|k| map.contains_key(*k)) {
            problems.push(format!("{path}: strict schemas need a `type` (or `anyOf`, `$ref`, `enum`, `const`)"));
        }
        if map.get("enum").and_then(Value::as_array).is_some_and(|e| e.len() > OPENAI_MAX_ENUM) {
            problems.push(format!("{path}/enum: more than {OPENAI_MAX_ENUM} values"));
        }
        let is_object = match map.get("type") {
            Some(Value::String(t)) => t == "object",
            Some(Value::Array(ts)) => ts.iter().any(|t| t == "object"),
            _ => false,
        } || map.contains_key("properties");
        if is_object {
            if map.get("additionalProperties") != Some(&Value::Bool(false)) {
                problems.push(format!("{path}/additionalProperties: must be `false` in strict mode"));
            }
            let keys: Vec<&str> = map
                .get("properties")
                .and_then(Value::as_object)
                .into_iter()
                .flat_map(|p| p.keys())
                .map(String::as_str)
                .collect();
            properties += keys.len();
            let required: Vec<&str> =
                map.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
            let mut sorted_keys = keys.clone();
            let mut sorted_required = required.clone();
            sorted_keys.sort_unstable();
            sorted_required.sort_unstable();
            if sorted_keys != sorted_required {
                problems.push(format!(
                    "{path}/required: strict mode needs every property required ({keys:?}), got {required:?}"
                ));
            }
        }
    });
    if properties > OPENAI_MAX_PROPERTIES {
        problems.push(format!("{at}: {properties} object properties in all, over OpenAI's {OPENAI_MAX_PROPERTIES}"));
    }
}

fn gemini_node(node: &Value, path: &str, problems: &mut Vec<String>) {
    let Some(map) = node.as_object() else {
        problems.push(format!("{path}: Gemini schemas must be objects"));
        return;
    };
    for key in map.keys() {
        if !GEMINI_KEYWORDS.contains(&key.as_str()) {
            problems.push(format!("{path}/{key}: not a Gemini schema field"));
        }
    }
    let ty = match map.get("type") {
        None => None,
        Some(Value::String(t))
            if ["string", "number", "integer", "boolean", "array", "object"].contains(&t.as_str()) =>
        {
            Some(t.as_str())
        }
        Some(other) => {
            problems.push(format!(
                "{path}/type: Gemini takes one of string, number, integer, boolean, array, object; got {other}"
            ));
            None
        }
    };
    if ty.is_none() && !map.contains_key("anyOf") {
        problems.push(format!("{path}: Gemini schemas need a `type` (or `anyOf`)"));
    }
    if let Some(values) = map.get("enum") {
        let strings = values.as_array().is_some_and(|v| v.iter().all(Value::is_string));
        if ty != Some("string") || !strings {
            problems.push(format!("{path}/enum: Gemini takes `enum` only on strings, with string values"));
        }
    }
    if let Some(Value::String(format)) = map.get("format")
        && !gemini_format_allowed(ty.unwrap_or_default(), format)
    {
        problems.push(format!("{path}/format: Gemini does not take `{format}` here"));
    }
}

/// Calls `visit` on `node` and every schema object below it, with its pointer and nesting
/// depth (a level is a property or an array item, as OpenAI counts).
fn walk(node: &Value, path: &str, depth: usize, visit: &mut dyn FnMut(&Value, &str, usize)) {
    visit(node, path, depth);
    let Some(map) = node.as_object() else { return };
    for child in crate::schema::children(map) {
        // `additionalProperties: false` and the like are flags here, not schemas to check.
        if child.holds == Holds::One && !child.schema.is_object() {
            continue;
        }
        let deeper = depth + usize::from(matches!(child.keyword, "properties" | "items"));
        walk(child.schema, &format!("{path}/{}", child.segment), deeper, visit);
    }
}

fn name(tool: &Value, at: &str, valid: impl Fn(&str) -> bool, pattern: &str, problems: &mut Vec<String>) {
    match tool.get("name").and_then(Value::as_str) {
        Some(n) if valid(n) => {}
        Some(n) => problems.push(format!("{at}/name: `{n}` does not match `{pattern}`")),
        None => problems.push(format!("{at}/name: missing")),
    }
}
