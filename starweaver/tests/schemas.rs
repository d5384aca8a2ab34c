//! Issue 5 at registration and call time: `strict: true` refuses what cannot be strict,
//! a `null` for a defaulted parameter becomes its default before the call, and an agent
//! can require every parameter to be described.
// Test code: helpers outside `#[test]` fns unwrap and index too; a panic fails the test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use common::*;
use serde_json::{Value, json};
use starweaver::{Agent, DefinitionErrorKind, Error, ToolBuilder, ToolContext};

fn echo(builder: ToolBuilder) -> impl starweaver::Tool {
    raw_tool(builder, |_: ToolContext, args: Args| async move { Ok(Value::Object(args)) })
}

#[test]
fn strict_true_refuses_a_schema_that_cannot_be_strict_naming_the_construct() {
    let schema = json!({"type": "object", "properties": {
        "counts": {"type": "object", "additionalProperties": {"type": "integer"}}
    }});
    let builder = ToolBuilder::new("tally").description("Count.").strict(true).parameters_schema(schema.clone());
    let err = builder.handler(|_: ToolContext, _: Args| async { Ok(json!(null)) }).err().unwrap();
    assert!(matches!(err.kind, DefinitionErrorKind::NotStrict(_)), "{err:?}");
    assert_eq!(
        err.to_string(),
        "invalid tool `tally`: `strict: true`, but the parameters schema at `/properties/counts/additionalProperties`: a map (an object with `additionalProperties`) cannot be strict: strict mode needs `additionalProperties: false`"
    );
    // Unset, the same schema registers and simply renders lax.
    echo(ToolBuilder::new("tally").parameters_schema(schema));
}

#[tokio::test]
async fn a_null_for_a_defaulted_parameter_reaches_the_tool_as_the_default() {
    let schema = json!({"type": "object", "properties": {
        "room": {"type": "string"},
        "nights": {"type": "integer", "default": 1},
        "note": {"type": ["string", "null"], "default": "none"},
        "guest": {"$ref": "#/$defs/Guest"},
    }, "required": ["room"], "$defs": {"Guest": {"type": "object", "properties": {
        "vip": {"type": "boolean", "default": false}
    }}}});
    let tool = echo(ToolBuilder::new("book").parameters_schema(schema));
    let arguments = json!({"room": "12", "nights": null, "note": null, "guest": {"vip": null}});
    let agent =
        Agent::builder(calls_then_text(vec![call("c1", "book", arguments)], "booked")).tool(tool).build().unwrap();
    let result = agent.run("book").await.unwrap();
    let returned = &tool_returns(result.messages.messages())[0];
    assert_eq!(
        returned.content,
        json!({"room": "12", "nights": 1, "note": null, "guest": {"vip": false}}),
        "defaults fill nulls at every depth; a parameter that allows null keeps it"
    );
}

#[test]
fn an_agent_can_require_every_parameter_to_be_described() {
    let schema = json!({"type": "object", "properties": {
        "city": {"type": "string", "description": "The city."},
        "days": {"type": "integer"},
    }});
    let build = |require| {
        Agent::builder(calls_then_text(vec![], "x"))
            .tool(echo(ToolBuilder::new("forecast").parameters_schema(schema.clone())))
            .require_parameter_descriptions(require)
            .build()
    };
    let err = build(true).err().unwrap();
    assert!(
        matches!(&err, Error::Definition(d) if matches!(&d.kind, DefinitionErrorKind::UndescribedParameter { name } if name == "days"))
    );
    assert!(err.to_string().starts_with("invalid tool `forecast`: parameter `days` has no description"), "{err}");
    build(false).unwrap();
}
