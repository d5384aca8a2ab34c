//! DESIGN.md §19: tools that ask mid-call. In an agent run the agent's elicitation handler
//! asks the user and the agent's model answers sampling.
// Test code: helpers outside `#[test]` fns unwrap and index too; a panic fails the test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use std::sync::{Arc, Mutex};

use common::*;
use serde_json::{Value, json};
use starweaver::testing::FunctionModel;
use starweaver::tool::{ElicitAnswer, Elicitation, Sampling};
use starweaver::{Agent, ModelResponse, ToolBuilder, ToolContext, ToolError};

/// A tool that asks which environment to deploy to and says what it heard.
fn deploy() -> impl starweaver::Tool {
    raw_tool(ToolBuilder::new("deploy"), |ctx: ToolContext, _: Args| async move {
        let schema = json!({"type": "object", "properties": {"env": {"type": "string"}}, "required": ["env"]});
        Ok(match ctx.elicit("Which environment?", schema).await? {
            ElicitAnswer::Accept { content } => json!(format!("deployed to {}", content["env"])),
            ElicitAnswer::Decline => json!("not deployed: declined"),
            ElicitAnswer::Cancel => json!("not deployed: cancelled"),
        })
    })
}

type Asked = Arc<Mutex<Vec<(String, String, Value)>>>;

/// A handler that records each question and gives `answer`.
fn handler(asked: &Asked, answer: ElicitAnswer) -> impl starweaver::tool::ElicitationHandler + 'static {
    let asked = asked.clone();
    move |ctx: &ToolContext, request: &Elicitation| {
        asked.lock().unwrap().push((ctx.tool_call_id().to_owned(), request.message.clone(), request.schema.clone()));
        let answer = answer.clone();
        async move { Ok::<_, ToolError>(answer) }
    }
}

#[tokio::test]
async fn the_agents_elicitation_handler_answers_a_tools_question() {
    for (answer, said) in [
        (ElicitAnswer::Accept { content: json!({"env": "prod"}).as_object().unwrap().clone() }, "deployed to \"prod\""),
        (ElicitAnswer::Decline, "not deployed: declined"),
        (ElicitAnswer::Cancel, "not deployed: cancelled"),
    ] {
        let asked = Asked::default();
        let agent = Agent::builder(calls_then_text(vec![call("c1", "deploy", json!({}))], "done"))
            .tool(deploy())
            .elicitation_handler(handler(&asked, answer))
            .build()
            .unwrap();
        let result = agent.run("go").await.unwrap();
        assert_eq!(tool_returns(result.messages.messages())[0].content, json!(said));
        let asked = asked.lock().unwrap();
        assert_eq!(asked.len(), 1);
        assert_eq!((asked[0].0.as_str(), asked[0].1.as_str()), ("c1", "Which environment?"));
        assert_eq!(asked[0].2["required"], json!(["env"]));
    }
}

#[tokio::test]
async fn without_a_handler_asking_the_user_fails_the_call_saying_how_to_give_one() {
    let agent =
        Agent::builder(calls_then_text(vec![call("c1", "deploy", json!({}))], "done")).tool(deploy()).build().unwrap();
    let result = agent.run("go").await.unwrap();
    let ret = &tool_returns(result.messages.messages())[0];
    assert!(ret.is_error);
    let message = ret.content["message"].as_str().unwrap();
    assert!(
        message.contains("tool `deploy` asked the user for input") && message.contains("elicitation_handler"),
        "{message}"
    );
}

#[tokio::test]
async fn sampling_in_a_run_asks_the_agents_own_model_without_tools() {
    let summarise = raw_tool(ToolBuilder::new("summarise"), |ctx: ToolContext, _: Args| async move {
        let sampled =
            ctx.sample(Sampling::prompt("Summarise: the build is green.", 50).with_system_prompt("Be brief.")).await?;
        Ok(json!({"summary": sampled.text, "model": sampled.model, "stop": sampled.stop_reason}))
    });
    let seen: Arc<Mutex<Vec<(usize, usize)>>> = Arc::default();
    let requests = seen.clone();
    let model = FunctionModel::new(move |request| {
        requests.lock().unwrap().push((request.messages.len(), request.tools.len()));
        Ok(match request.tools.is_empty() {
            // The sampling request: the system prompt and the prompt, and no tools.
            true => {
                let text = serde_json::to_string(&request.messages[1]).unwrap();
                assert!(text.contains("Summarise: the build is green."), "{text}");
                let answer = ModelResponse::text("Green.");
                ModelResponse {
                    finish_reason: Some(starweaver::FinishReason::Length),
                    model_name: Some("m1".into()),
                    ..answer
                }
            }
            false if request.messages.len() == 1 => {
                starweaver::testing::TestModel::tool_call_response([call("c1", "summarise", json!({}))])
            }
            false => ModelResponse::text("done"),
        })
    });
    let agent = Agent::builder(model).tool(summarise).build().unwrap();
    let result = agent.run("go").await.unwrap();
    assert_eq!(result.output.as_deref(), Some("done"));
    assert_eq!(
        tool_returns(result.messages.messages())[0].content,
        json!({"summary": "Green.", "model": "m1", "stop": "length"})
    );
    assert_eq!(seen.lock().unwrap()[1], (2, 0), "the sampling request holds the system prompt and the prompt");
}
