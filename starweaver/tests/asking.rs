//! DESIGN.md §19: tools that ask mid-call. In an agent run the agent's elicitation handler
//! asks the user, or without one the run waits for the answer; the agent's model answers
//! sampling.
// Test code: helpers outside `#[test]` fns unwrap and index too; a panic fails the test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use std::sync::{Arc, Mutex};

use common::*;
use serde_json::{Map, Value, json};
use starweaver::testing::FunctionModel;
use starweaver::tool::{ElicitAnswer, Elicitation, Sampling};
use starweaver::{Agent, DeferredResult, HitlDecisions, ModelResponse, RunStatus, ToolBuilder, ToolContext, ToolError};

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

/// A tool that asks which environment, then to confirm, logging each invocation and
/// what it heard.
fn careful_deploy(log: &Log) -> impl starweaver::Tool {
    let log = log.clone();
    raw_tool(ToolBuilder::new("deploy"), move |ctx: ToolContext, _: Args| {
        let log = log.clone();
        async move {
            log.push("invoked");
            let schema = json!({"type": "object", "properties": {"env": {"type": "string"}}, "required": ["env"]});
            let ElicitAnswer::Accept { content } = ctx.elicit("Which environment?", schema).await? else {
                return Ok(json!("no environment"));
            };
            log.push(format!("env {}", content["env"]));
            let confirm = json!({"type": "object", "properties": {"sure": {"type": "boolean"}}});
            let answer = ctx.elicit(format!("Deploy to {}?", content["env"]), confirm).await?;
            log.push(format!("confirm {answer:?}"));
            Ok(json!(format!("{} -> {answer:?}", content["env"])))
        }
    })
}

fn accepted(content: Value) -> Map<String, Value> {
    let Value::Object(content) = content else { panic!("an answer is an object") };
    content
}

#[tokio::test]
async fn without_a_handler_the_run_waits_for_each_answer_and_the_tool_runs_again_with_them() {
    let log = Log::default();
    let model = calls_then_text(vec![call("c1", "deploy", json!({"service": "api"}))], "done");
    let agent = Agent::builder(model.clone()).tool(careful_deploy(&log)).build().unwrap();
    let mut session = agent.session();
    let first = session.run("go").await.unwrap();
    assert_eq!(first.status, RunStatus::Waiting);
    assert!(first.hitl.approvals.is_empty() && first.hitl.deferred.is_empty());
    let asked = &first.hitl.elicitations[0];
    assert_eq!(asked.id, format!("{}:c1", first.run_id));
    assert_eq!((asked.tool_name.as_str(), asked.arguments.clone()), ("deploy", json!({"service": "api"})));
    assert_eq!((asked.message.as_str(), asked.reason.as_str()), ("Which environment?", "Which environment?"));
    assert_eq!(asked.schema["required"], json!(["env"]));
    let kinds: Vec<Value> = first.events.iter().map(|e| serde_json::to_value(&e.kind).unwrap()).collect();
    assert!(kinds.iter().any(|k| k["type"] == "elicitation_requested" && k["message"] == "Which environment?"));
    assert_eq!(kinds.last().unwrap(), &json!({"type": "waiting", "approvals": 0, "deferred": 0, "elicitations": 1}));
    assert_eq!(session.pending(), Some(first.hitl.clone()));

    // The answer reaches the tool, invoked again; its second question waits in turn,
    // under an id no decision was made for.
    let second = session.resume(vec![asked.accept(accepted(json!({"env": "prod"})))]).await.unwrap();
    assert_eq!(second.status, RunStatus::Waiting);
    let confirm = &second.hitl.elicitations[0];
    assert_eq!(confirm.message, "Deploy to \"prod\"?");
    assert_eq!(confirm.id, format!("{}:c1:2", first.run_id));
    let resumed: Value = serde_json::to_value(&second.events[0].kind).unwrap();
    assert_eq!(resumed, json!({"type": "run_resumed", "approvals": 0, "deferred_results": 0, "elicitations": 1}));

    let done = session.resume(vec![confirm.decline()]).await.unwrap();
    assert_eq!(done.status, RunStatus::Completed);
    assert_eq!(log.entries(), ["invoked", "invoked", "env \"prod\"", "invoked", "env \"prod\"", "confirm Decline",]);
    // The model sees one return, the tool's value; never the questions.
    let returns = tool_returns(&model.requests()[1].messages);
    assert_eq!(returns.len(), 1);
    assert_eq!(returns[0].content, json!("\"prod\" -> Decline"));
}

#[tokio::test]
async fn answers_are_checked_against_the_question_and_a_refused_resume_keeps_the_run_waiting() {
    let model = calls_then_text(vec![call("c1", "deploy", json!({})), call("c2", "job", json!({}))], "done");
    let job = raw_tool(ToolBuilder::new("job"), |_: ToolContext, _: Args| async {
        Err::<Value, _>(ToolError::call_deferred("queued"))
    });
    let agent = Agent::builder(model).tool(careful_deploy(&Log::default())).tool(job).build().unwrap();
    let mut session = agent.session();
    let waiting = session.run("go").await.unwrap();
    let (asked, job) = (&waiting.hitl.elicitations[0], &waiting.hitl.deferred[0]);

    let wrong_type = asked.accept(accepted(json!({"env": 3})));
    let err = session.resume(vec![wrong_type]).await.unwrap_err().to_string();
    assert!(err.contains("the answer does not match the schema the tool asked with: at `/env`"), "{err}");
    let missing = asked.accept(accepted(json!({})));
    let err = session.resume(vec![missing]).await.unwrap_err().to_string();
    assert!(err.contains("\"env\" is a required property"), "{err}");
    let as_result = HitlDecisions::from(vec![job.complete(json!(1))]);
    let wrong_kind = HitlDecisions {
        deferred_results: vec![DeferredResult { id: asked.id.clone(), ..job.complete(json!(1)) }],
        ..as_result
    };
    let err = session.resume(wrong_kind).await.unwrap_err().to_string();
    assert!(err.ends_with("is a pending elicitation, but was given a deferred result"), "{err}");
    let err = session.resume(vec![asked.decline()]).await.unwrap_err().to_string();
    assert!(err.contains(&job.id), "a missing decision is named: {err}");
    assert_eq!(session.pending(), Some(waiting.hitl.clone()), "refused resumes change nothing");

    let decisions =
        HitlDecisions { elicitations: vec![asked.cancel()], ..HitlDecisions::from(vec![job.complete(json!(1))]) };
    let done = session.resume(decisions).await.unwrap();
    assert_eq!(done.status, RunStatus::Completed);
    let returns = tool_returns(done.messages.messages());
    assert_eq!((returns[0].content.clone(), returns[1].content.clone()), (json!("no environment"), json!(1)));
}

#[tokio::test]
async fn a_waiting_question_is_exported_with_its_answers_and_answered_after_a_restore() {
    let log = Log::default();
    let model = calls_then_text(vec![call("c1", "deploy", json!({}))], "done");
    let agent = Agent::builder(model.clone()).tool(careful_deploy(&log)).build().unwrap();
    let mut session = agent.session();
    let first = session.run("go").await.unwrap();
    session.resume(vec![first.hitl.elicitations[0].accept(accepted(json!({"env": "dev"})))]).await.unwrap();
    let state = session.export_state();
    let slot = &state["waiting"]["slots"][0];
    assert_eq!(slot["state"], "elicitation");
    assert_eq!(slot["message"], "Deploy to \"dev\"?");
    assert_eq!(
        slot["answered"],
        json!([{
            "question": {"message": "Which environment?", "schema": first.hitl.elicitations[0].schema},
            "answer": {"action": "accept", "content": {"env": "dev"}},
        }])
    );

    let mut restored = agent.restore_session(&state).unwrap();
    assert_eq!(restored.pending(), session.pending());
    let confirm = restored.pending().unwrap().elicitations[0].clone();
    let done = restored.resume(vec![confirm.accept(accepted(json!({"sure": true})))]).await.unwrap();
    assert_eq!(done.status, RunStatus::Completed);
    let content = &tool_returns(done.messages.messages())[0].content;
    assert_eq!(content, &json!("\"dev\" -> Accept { content: {\"sure\": Bool(true)} }"));
}

#[tokio::test]
async fn an_approved_call_that_then_asks_keeps_its_approval_when_invoked_again() {
    let log = Log::default();
    let model = calls_then_text(vec![call("c1", "deploy", json!({"env": "staging"}))], "done");
    let agent = Agent::builder(model).tool(careful_deploy(&log)).approval_required_tools(["deploy"]).build().unwrap();
    let mut session = agent.session();
    let waiting = session.run("go").await.unwrap();
    let approve = waiting.hitl.approvals[0].approve().override_arguments(json!({"env": "prod"}));
    let asking = session.resume(vec![approve]).await.unwrap();
    let asked = &asking.hitl.elicitations[0];
    assert_eq!(asked.arguments, json!({"env": "prod"}), "the pending item shows the arguments the call runs with");
    let next = session.resume(vec![asked.accept(accepted(json!({"env": "prod"})))]).await.unwrap();
    assert!(next.hitl.approvals.is_empty(), "the approval holds for the call invoked again");
    assert_eq!(next.hitl.elicitations[0].message, "Deploy to \"prod\"?");
}

#[tokio::test]
async fn a_tool_that_asks_something_else_when_invoked_again_is_asked_anew() {
    let invocations = Counter::default();
    let seen = invocations.clone();
    let fickle = raw_tool(ToolBuilder::new("fickle"), move |ctx: ToolContext, _: Args| {
        let n = seen.bump();
        async move {
            let answer = ctx.elicit(format!("question {n}"), json!({"type": "object"})).await?;
            Ok(json!(format!("{answer:?}")))
        }
    });
    let agent =
        Agent::builder(calls_then_text(vec![call("c1", "fickle", json!({}))], "done")).tool(fickle).build().unwrap();
    let mut session = agent.session();
    let first = session.run("go").await.unwrap();
    assert_eq!(first.hitl.elicitations[0].message, "question 1");
    let again = session.resume(vec![first.hitl.elicitations[0].decline()]).await.unwrap();
    assert_eq!(again.hitl.elicitations[0].message, "question 2", "an answer to another question is not given");
    let state = session.export_state();
    assert!(state["waiting"]["slots"][0].get("answered").is_none(), "{state}");
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
    assert_eq!(result.text(), Some("done"));
    assert_eq!(
        tool_returns(result.messages.messages())[0].content,
        json!({"summary": "Green.", "model": "m1", "stop": "length"})
    );
    assert_eq!(seen.lock().unwrap()[1], (2, 0), "the sampling request holds the system prompt and the prompt");
}
