//! Every corpus signature in every strict mode and provider format: insta snapshots in
//! `snapshots/rust__providers__<tool>.snap`, each rendering checked against JSON Schema
//! (the 2020-12 meta-schema) and against the provider's documented rules.

use serde_json::{Map, Value, json};
use starweaver::render::{Provider, check, render};
use starweaver::{Tool, schema};
use starweaver_tests::corpus;

/// The modes a definition can be rendered in: its own `strict`, forced strict, forced lax.
const MODES: [(&str, Option<bool>); 3] = [("auto", None), ("strict", Some(true)), ("lax", Some(false))];

/// What one tool looks like everywhere, with every problem the checker found.
fn renderings(tool: &dyn Tool) -> (Value, Vec<String>) {
    let definition = tool.definition();
    let mut problems = Vec::new();
    let mut modes = Map::new();
    for (mode, strict) in MODES {
        let mut providers = Map::new();
        for provider in Provider::ALL {
            let rendered = match render(definition, provider, strict) {
                Ok(rendered) => {
                    for problem in check(provider, &rendered) {
                        problems.push(format!("{} {mode} {provider}: {problem}", definition.name));
                    }
                    if let Some(schema) = schemas_of(provider, &rendered)
                        && let Err(error) = jsonschema::meta::validate(schema)
                    {
                        problems.push(format!("{} {mode} {provider}: not JSON Schema: {error}", definition.name));
                    }
                    rendered
                }
                Err(error) => json!({"error": error.to_string()}),
            };
            providers.insert(provider.to_string(), rendered);
        }
        modes.insert(mode.into(), Value::Object(providers));
    }
    let strict =
        schema::to_strict(&definition.parameters).map_or_else(|e| json!({"error": e.to_string()}), |_| json!(true));
    (json!({"strict_compatible": strict, "modes": modes}), problems)
}

/// The parameter schema inside a rendered tool.
fn schemas_of(provider: Provider, rendered: &Value) -> Option<&Value> {
    match provider {
        Provider::OpenAiChat => rendered.pointer("/function/parameters"),
        Provider::OpenAiResponses | Provider::Gemini => rendered.get("parameters"),
        Provider::Anthropic => rendered.get("input_schema"),
    }
}

#[test]
fn the_corpus_has_at_least_25_signatures() {
    assert!(corpus::all().len() >= 25, "{}", corpus::all().len());
}

#[test]
fn every_signature_in_every_mode_and_provider_format_meets_the_provider_rules() {
    let mut problems = Vec::new();
    for tool in corpus::all() {
        let (snapshot, found) = renderings(&*tool);
        problems.extend(found);
        insta::with_settings!({snapshot_path => "../snapshots", prepend_module_to_snapshot => false, omit_expression => true}, {
            insta::assert_json_snapshot!(format!("rust__providers__{}", tool.definition().name), snapshot);
        });
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_checker_catches_what_each_provider_refuses() {
    let lax = json!({"type": "object", "properties": {"tags": {"type": "object", "additionalProperties": {"type": "integer"}}}});
    let forced = json!({"type": "function", "function": {"name": "t", "strict": true, "parameters": lax}});
    let problems = check(Provider::OpenAiChat, &forced);
    assert!(
        problems.contains(&"/function/parameters/additionalProperties: must be `false` in strict mode".to_owned()),
        "{problems:?}"
    );
    assert!(problems.iter().any(|p| p.starts_with("/function/parameters/required")), "{problems:?}");
    let gemini =
        json!({"name": "9lives", "parameters": {"type": "object", "properties": {"x": {"$ref": "#/$defs/X"}}}});
    let problems = check(Provider::Gemini, &gemini);
    assert!(problems.iter().any(|p| p.starts_with("/name")), "{problems:?}");
    assert!(problems.contains(&"/parameters/properties/x/$ref: not a Gemini schema field".to_owned()), "{problems:?}");
    let anthropic = json!({"name": "t", "input_schema": {"type": "string"}, "strict": true});
    assert_eq!(check(Provider::Anthropic, &anthropic).len(), 2);
}

/// A return schema is for MCP clients and the host: no provider format carries it.
#[test]
fn return_schemas_never_reach_a_provider() {
    let typed = starweaver_tests::forecast_tool().definition().clone();
    assert!(typed.return_schema.is_some());
    let plain = starweaver::ToolDefinition { return_schema: None, ..typed.clone() };
    for provider in Provider::ALL {
        for (mode, strict) in MODES {
            assert_eq!(
                render(&typed, provider, strict).unwrap(),
                render(&plain, provider, strict).unwrap(),
                "{provider} {mode}"
            );
        }
    }
}
