//! DESIGN.md §13: the provider clients against loopback servers serving fixtures from each
//! provider's API reference (`tests/fixtures/providers`), checking what the clients send
//! and what the runs make of the answers.
#![cfg(all(feature = "openai", feature = "anthropic", feature = "gemini"))]
// Test code: helpers outside `#[test]` fns unwrap and index too; a panic fails the test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use futures::StreamExt;
use serde_json::{Value, json};
use starweaver::content::{Audio, Document, Image, Part, Text};
use starweaver::output::OutputMode;
use starweaver::provider::{AnthropicModel, GeminiModel, OpenAIChatModel, OpenAIResponsesModel, Settings, ToolChoice};
use starweaver::search::ToolSearch;
use starweaver::{
    Agent, AgentBuilder, EventKind, FinishReason, Message, Model, ModelErrorKind, RunError, RunOptions, RunResult,
    RunStatus, ToolBuilder, ToolContext, ToolError,
};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

const KEY: &str = "sk-canary-0123456789abcdef";

/// One wire protocol as the tests drive it.
#[derive(Clone, Copy)]
struct Protocol {
    dir: &'static str,
    path: &'static str,
    stream_path: &'static str,
    auth: (&'static str, &'static str),
    /// The response header holding the provider's request id.
    request_id: &'static str,
    /// How `text.json` says the answer is finished, and the SSE body of a stream error.
    finish: &'static str,
    stream_error: &'static str,
    build: fn(&str, Settings) -> Arc<dyn Model>,
}

impl Protocol {
    fn model(&self, base: &str) -> Arc<dyn Model> {
        (self.build)(base, Settings::default())
    }
}

const PROTOCOLS: [Protocol; 4] = [
    Protocol {
        dir: "openai_chat",
        path: "/v1/chat/completions",
        stream_path: "/v1/chat/completions",
        auth: ("authorization", "Bearer sk-canary-0123456789abcdef"),
        request_id: "x-request-id",
        finish: r#""finish_reason": "stop""#,
        stream_error: "data: {\"error\": {\"message\": \"bad key KEY\"}}\n\n",
        build: |base, settings| {
            Arc::new(
                OpenAIChatModel::new("gpt-4.1-mini").settings(settings).base_url(format!("{base}/v1")).api_key(KEY),
            )
        },
    },
    Protocol {
        dir: "openai_responses",
        path: "/v1/responses",
        stream_path: "/v1/responses",
        auth: ("authorization", "Bearer sk-canary-0123456789abcdef"),
        request_id: "x-request-id",
        finish: r#""status": "completed""#,
        stream_error: "event: error\ndata: {\"type\": \"error\", \"message\": \"bad key KEY\"}\n\n",
        build: |base, settings| {
            Arc::new(
                OpenAIResponsesModel::new("gpt-4.1-mini")
                    .settings(settings)
                    .base_url(format!("{base}/v1"))
                    .api_key(KEY),
            )
        },
    },
    Protocol {
        dir: "anthropic",
        path: "/v1/messages",
        stream_path: "/v1/messages",
        auth: ("x-api-key", KEY),
        request_id: "request-id",
        finish: r#""stop_reason": "end_turn""#,
        stream_error: "event: error\ndata: {\"type\": \"error\", \"error\": {\"type\": \"overloaded_error\", \"message\": \"bad key KEY\"}}\n\n",
        build: |base, settings| {
            Arc::new(AnthropicModel::new("claude-sonnet-4-5").settings(settings).base_url(base).api_key(KEY))
        },
    },
    Protocol {
        dir: "gemini",
        path: "/v1beta/models/gemini-2.5-flash:generateContent",
        stream_path: "/v1beta/models/gemini-2.5-flash:streamGenerateContent",
        auth: ("x-goog-api-key", KEY),
        request_id: "x-request-id",
        finish: r#""finishReason": "STOP""#,
        stream_error: "data: {\"error\": {\"code\": 500, \"message\": \"bad key KEY\"}}\n\n",
        build: |base, settings| {
            Arc::new(GeminiModel::new("gemini-2.5-flash").settings(settings).base_url(base).api_key(KEY))
        },
    },
];

fn fixture(dir: &str, name: &str) -> String {
    let path = format!("{}/../tests/fixtures/providers/{dir}/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn json_body(dir: &str, name: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).insert_header("content-type", "application/json").set_body_string(fixture(dir, name))
}

fn sse_body(dir: &str, name: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).insert_header("content-type", "text/event-stream").set_body_string(fixture(dir, name))
}

/// Serves `responses` in order, one per request, at `at`.
async fn serve(at: &str, responses: Vec<ResponseTemplate>) -> MockServer {
    let server = MockServer::start().await;
    for response in responses {
        Mock::given(method("POST")).and(path(at)).respond_with(response).up_to_n_times(1).mount(&server).await;
    }
    server
}

async fn requests(server: &MockServer) -> Vec<Request> {
    server.received_requests().await.unwrap_or_default()
}

fn body(request: &Request) -> Value {
    serde_json::from_slice(&request.body).unwrap()
}

/// `add` sums; `fail` raises a user error the model is shown.
fn agent(model: Arc<dyn Model>) -> Agent {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct AddArgs {
        left: i64,
        right: i64,
    }
    let add = ToolBuilder::new("add")
        .description("Add two integers.")
        .handler(|_: ToolContext, a: AddArgs| async move { Ok(json!(a.left + a.right)) })
        .unwrap();
    let fail = ToolBuilder::new("fail")
        .description("Always fails.")
        .handler(|_: ToolContext, _: Args| async move { Err::<Value, _>(ToolError::user_error("the disk is full")) })
        .unwrap();
    Agent::builder(model).instructions("Be brief.").tool(add).tool(fail).build().unwrap()
}

fn returns_of(result: &RunResult) -> Vec<(String, Value, bool)> {
    tool_returns(result.messages.messages())
        .into_iter()
        .map(|r| (r.tool_call_id.to_string(), r.content.clone(), r.is_error))
        .collect()
}

#[tokio::test]
async fn every_protocol_runs_tool_calls_then_answers_and_sends_what_its_api_expects() {
    for protocol in PROTOCOLS {
        let server = serve(
            protocol.path,
            vec![json_body(protocol.dir, "tool_calls.json"), json_body(protocol.dir, "text.json")],
        )
        .await;
        let result = agent(protocol.model(&server.uri())).run("add 2 and 3").await.unwrap();
        assert_eq!(result.status, RunStatus::Completed, "{}: {:?}", protocol.dir, result.error);
        assert_eq!(result.text(), Some("The total is 5."), "{}", protocol.dir);
        assert_eq!(
            finish_reasons(&result),
            [Some(FinishReason::ToolCalls), Some(FinishReason::Stop)],
            "{}",
            protocol.dir
        );
        assert_eq!(result.finish_reason, Some(FinishReason::Stop), "{}", protocol.dir);
        let returns = returns_of(&result);
        assert_eq!(returns.len(), 2, "{}", protocol.dir);
        assert_eq!(returns[0].1, json!(5), "{}", protocol.dir);
        assert!(returns[1].2, "{}: the failure is an error return", protocol.dir);
        assert_eq!(result.usage.requests, 2, "{}", protocol.dir);
        assert_eq!(result.usage.input_tokens, 82 + 120, "{}", protocol.dir);
        assert_eq!(result.usage.output_tokens, 17 + 7, "{}", protocol.dir);
        assert_eq!(result.usage.cached_tokens, 64, "{}", protocol.dir);

        let sent = requests(&server).await;
        assert_eq!(sent.len(), 2, "{}", protocol.dir);
        for request in &sent {
            let (name, value) = protocol.auth;
            assert_eq!(request.headers.get(name).and_then(|v| v.to_str().ok()), Some(value), "{}", protocol.dir);
        }
        let first = body(&sent[0]).to_string();
        assert!(first.contains("Be brief.") && first.contains("add 2 and 3"), "{}: {first}", protocol.dir);
        assert!(first.contains("Add two integers.") && first.contains("Always fails."), "{}: tools", protocol.dir);
        // The second request carries the calls and their returns under the model's ids.
        let second = body(&sent[1]).to_string();
        let call_id = &returns[0].0;
        assert!(second.contains(call_id.as_str()), "{}: {call_id} in {second}", protocol.dir);
        assert!(second.contains("the disk is full"), "{}: the error is fed back", protocol.dir);
        if protocol.dir == "anthropic" {
            assert!(second.contains("\"is_error\":true"), "anthropic flags errors: {second}");
        }
    }
}

#[tokio::test]
async fn a_streamed_answer_gives_deltas_then_exactly_the_unstreamed_message() {
    for protocol in PROTOCOLS {
        let server = serve(
            protocol.stream_path,
            vec![sse_body(protocol.dir, "stream.sse"), sse_body(protocol.dir, "text_stream.sse")],
        )
        .await;
        let agent = agent(protocol.model(&server.uri()));
        let mut stream = agent.run_stream("add 2 and 3");
        let (mut text, mut arguments) = (String::new(), String::new());
        let mut kinds = Vec::new();
        while let Some(event) = stream.next().await {
            match &event.kind {
                EventKind::TextDelta { step: 1, text: piece } => text.push_str(piece),
                EventKind::ToolCallDelta { step: 1, delta } => arguments.push_str(&delta.arguments),
                _ => {}
            }
            let json = serde_json::to_value(&event).unwrap();
            let back: starweaver::Event = serde_json::from_value(json.clone()).unwrap();
            assert_eq!(back, event, "{}: deltas read back from their JSON", protocol.dir);
            kinds.push(json["type"].as_str().unwrap().to_owned());
        }
        let streamed = stream.result().await.unwrap();
        assert_eq!(streamed.status, RunStatus::Completed, "{}: {:?}", protocol.dir, streamed.error);
        assert_eq!(text, "Adding now.", "{}", protocol.dir);
        assert!(
            arguments.contains("\"right\": 3") || arguments.contains("\"right\":3"),
            "{}: {arguments}",
            protocol.dir
        );
        let first_delta = kinds.iter().position(|k| k.ends_with("_delta")).unwrap();
        let response = kinds.iter().position(|k| k == "model_response").unwrap();
        assert!(first_delta < response, "{}: deltas come before the response event", protocol.dir);
        assert!(requests(&server).await.iter().all(|r| body(r).to_string().contains("stream")
            || r.url.query().is_some_and(|q| q.contains("alt=sse"))));

        let twin = serve(protocol.path, vec![json_body(protocol.dir, "stream_twin.json")]).await;
        let whole = protocol.model(&twin.uri());
        let unstreamed = agent_once(whole).await;
        let streamed_first = streamed.messages.messages()[1].clone();
        assert_eq!(*streamed_first, unstreamed, "{}: the same answer, streamed or not", protocol.dir);
    }
}

/// What `model` answers to one prompt, unstreamed.
async fn agent_once(model: Arc<dyn Model>) -> Message {
    let history = starweaver::History::from_json(&json!([
        {"kind": "request", "parts": [{"kind": "user_prompt", "text": "add 2 and 3"}]},
    ]))
    .unwrap();
    let tools = agent(model.clone()).definitions().to_vec();
    let request = starweaver::ModelRequest {
        messages: history.messages(),
        tools: &tools,
        deferred: &[],
        output: None,
        toolset_instructions: &[],
        run_id: "run_x",
        step: 1,
        deltas: None,
    };
    Message::Response { parts: model.request(request).await.unwrap().parts }
}

#[tokio::test]
async fn rate_limits_and_server_errors_are_retried_honouring_retry_after() {
    let dir = "openai_chat";
    let server = serve(
        "/v1/chat/completions",
        vec![
            ResponseTemplate::new(429)
                .insert_header("retry-after-ms", "20")
                .set_body_string(fixture(dir, "rate_limited.json")),
            ResponseTemplate::new(503).insert_header("retry-after", "0").set_body_string("upstream unavailable"),
            json_body(dir, "text.json"),
        ],
    )
    .await;
    let started = Instant::now();
    let result = agent(PROTOCOLS[0].model(&server.uri())).run("hi").await.unwrap();
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    assert_eq!(requests(&server).await.len(), 3);
    assert!(started.elapsed() >= Duration::from_millis(20), "the retry waited as the server asked");
}

async fn failed_with(responses: Vec<ResponseTemplate>, protocol: Protocol) -> (RunResult, usize) {
    let server = serve(protocol.path, responses).await;
    let result = agent(protocol.model(&server.uri())).run("hi").await.unwrap();
    let sent = requests(&server).await.len();
    (result, sent)
}

fn model_error(result: &RunResult) -> starweaver::ModelError {
    match &result.error {
        Some(RunError::Model { error: Some(error), .. }) => (**error).clone(),
        other => panic!("expected a model error, got {other:?}"),
    }
}

#[tokio::test]
async fn refusals_by_status_are_named_and_never_retried_and_never_show_the_key() {
    let dir = "openai_chat";
    let cases = [
        (
            ResponseTemplate::new(401).set_body_string(fixture(dir, "unauthorized.json")),
            ModelErrorKind::Http,
            Some(401),
        ),
        (
            ResponseTemplate::new(429).set_body_string(fixture(dir, "quota.json")),
            ModelErrorKind::QuotaExhausted,
            Some(429),
        ),
        (
            ResponseTemplate::new(400).set_body_string("{\"error\": {\"message\": \"bad\"}}"),
            ModelErrorKind::Http,
            Some(400),
        ),
        (ResponseTemplate::new(200).set_body_string("<html>not json</html>"), ModelErrorKind::InvalidResponse, None),
        (json_body(dir, "content_filter.json"), ModelErrorKind::ContentFilter, None),
        (json_body(dir, "refusal.json"), ModelErrorKind::Refusal, None),
    ];
    for (response, kind, status) in cases {
        let response = response.insert_header("x-request-id", "req_123");
        let (result, sent) = failed_with(vec![response], PROTOCOLS[0]).await;
        assert_eq!(result.status, RunStatus::Failed);
        assert_eq!(sent, 1, "{kind:?} is not retried");
        let error = model_error(&result);
        assert_eq!((error.kind, error.status), (kind, status));
        assert_eq!(error.provider.as_deref(), Some("openai"));
        assert_eq!(error.request_id.as_deref(), Some("req_123"), "{kind:?}");
        let everything = format!(
            "{error} {:?} {} {} {}",
            result.error,
            serde_json::to_string(&result.events).unwrap(),
            result.messages.to_json(),
            serde_json::to_string(&result.trace).unwrap(),
        );
        assert!(
            !everything.contains("canary") && !everything.contains("sk-canar"),
            "{kind:?} leaked the key: {everything}"
        );
    }
}

#[tokio::test]
async fn arguments_that_are_not_a_json_object_and_unknown_tools_become_returns_the_model_can_fix() {
    let dir = "openai_chat";
    let (result, _) =
        failed_with(vec![json_body(dir, "bad_arguments.json"), json_body(dir, "text.json")], PROTOCOLS[0]).await;
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    let kinds: Vec<Value> = returns_of(&result).into_iter().map(|(_, content, _)| content["kind"].clone()).collect();
    assert_eq!(kinds, [json!("invalid_arguments"), json!("invalid_arguments"), json!("not_found")]);
}

#[tokio::test]
async fn a_stream_cut_before_anything_reached_the_run_is_retried_and_after_is_a_named_error() {
    let dir = "openai_chat";
    let empty_cut = "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}\n\n";
    let server = serve(
        "/v1/chat/completions",
        vec![
            ResponseTemplate::new(200).insert_header("content-type", "text/event-stream").set_body_string(empty_cut),
            sse_body(dir, "text_stream.sse"),
        ],
    )
    .await;
    let result = agent(PROTOCOLS[0].model(&server.uri())).run_stream("hi").result().await.unwrap();
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    assert_eq!(requests(&server).await.len(), 2);

    for protocol in PROTOCOLS {
        let server = serve(protocol.stream_path, vec![sse_body(protocol.dir, "truncated.sse")]).await;
        let result = agent(protocol.model(&server.uri())).run_stream("hi").result().await.unwrap();
        assert_eq!(model_error(&result).kind, ModelErrorKind::StreamInterrupted, "{}", protocol.dir);
        assert_eq!(requests(&server).await.len(), 1, "{}", protocol.dir);
    }
}

#[tokio::test]
async fn cancelling_mid_request_drops_it_and_ends_the_run_cancelled() {
    let server = serve(
        "/v1/chat/completions",
        vec![sse_body("openai_chat", "text_stream.sse").set_delay(Duration::from_secs(30))],
    )
    .await;
    let cancellation = starweaver::CancellationToken::new();
    let cancel = cancellation.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        cancel.cancel();
    });
    let started = Instant::now();
    let options = RunOptions { cancellation: Some(cancellation), ..RunOptions::default() };
    let result = agent(PROTOCOLS[0].model(&server.uri())).run_with("hi", options).await.unwrap();
    assert_eq!(result.status, RunStatus::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(10), "the request was dropped, not awaited");
}

#[tokio::test]
async fn a_missing_key_names_the_variable_to_set() {
    let model = OpenAIChatModel::new("gpt-4.1-mini").api_key_env("STARWEAVER_TEST_KEY_THAT_IS_NEVER_SET");
    let result = agent(Arc::new(model)).run("hi").await.unwrap();
    let error = model_error(&result);
    assert_eq!(error.kind, ModelErrorKind::MissingApiKey);
    assert!(error.to_string().contains("STARWEAVER_TEST_KEY_THAT_IS_NEVER_SET"), "{error}");
}

#[tokio::test]
async fn settings_azure_and_headers_reach_the_request_whether_built_or_read_as_data() {
    let built = OpenAIChatModel::new("gpt-4.1-mini")
        .api_key(KEY)
        .azure("2024-10-21")
        .header("x-team", "tools")
        .temperature(0.0)
        .max_tokens(64)
        .seed(7)
        .tool_choice(ToolChoice::Tool("add".into()))
        .parallel_tool_calls(false)
        .extra_body(json!({"user": "u-1"}).as_object().unwrap().clone());
    let data: Settings = serde_json::from_value(json!({
        "api_key": KEY,
        "azure_api_version": "2024-10-21",
        "headers": {"x-team": "tools"},
        "temperature": 0.0,
        "max_tokens": 64,
        "seed": 7,
        "tool_choice": {"tool": "add"},
        "parallel_tool_calls": false,
        "extra_body": {"user": "u-1"},
        "timeout": 30.0,
    }))
    .unwrap();
    let shown = format!("{data:?}");
    assert!(!shown.contains(KEY) && !shown.contains("\"tools\""), "Debug shows a secret: {shown}");
    for model in [built, OpenAIChatModel::new("gpt-4.1-mini").settings(data)] {
        let server =
            serve("/openai/deployments/mini/chat/completions", vec![json_body("openai_chat", "text.json")]).await;
        let model = model.base_url(format!("{}/openai/deployments/mini", server.uri()));
        let result = agent(Arc::new(model)).run("hi").await.unwrap();
        assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
        let sent = &requests(&server).await[0];
        assert_eq!(sent.url.query(), Some("api-version=2024-10-21"));
        assert_eq!(sent.headers.get("api-key").and_then(|v| v.to_str().ok()), Some(KEY));
        assert!(sent.headers.get("authorization").is_none());
        assert_eq!(sent.headers.get("x-team").and_then(|v| v.to_str().ok()), Some("tools"));
        let body = body(sent);
        assert_eq!(body["temperature"], json!(0.0));
        assert_eq!(body["max_tokens"], json!(64));
        assert_eq!(body["seed"], json!(7));
        assert_eq!(body["tool_choice"], json!({"type": "function", "function": {"name": "add"}}));
        assert_eq!(body["parallel_tool_calls"], json!(false));
        assert_eq!(body["user"], json!("u-1"));
        assert_eq!(body["tools"].as_array().map(Vec::len), Some(2));
    }
}

#[test]
fn settings_as_data_name_what_is_wrong() {
    let error = |value: Value| serde_json::from_value::<Settings>(value).unwrap_err().to_string();
    assert!(error(json!({"temprature": 0.0})).contains("unknown field `temprature`, expected one of"));
    assert!(error(json!({"timeout": -1.0})).contains("expected a positive number of seconds"));
    assert!(
        error(json!({"tool_choice": "sometimes"})).contains(r#"expected "auto", "required", "none" or {"tool": name}"#)
    );
    assert!(error(json!({"headers": {"x": 1}})).contains("expected a string"));
    let none: Settings = serde_json::from_value(json!({"headers": null, "timeout": null, "extra_body": null})).unwrap();
    assert_eq!(none, Settings::default());
}

#[tokio::test]
async fn model_spans_carry_the_gen_ai_attributes() {
    let server = serve("/v1/chat/completions", vec![json_body("openai_chat", "text.json")]).await;
    let result = agent(PROTOCOLS[0].model(&server.uri())).run("hi").await.unwrap();
    let span = result.trace.spans.iter().find(|s| s.kind == starweaver::SpanKind::ModelRequest).unwrap();
    assert_eq!(span.attributes["gen_ai.system"], json!("openai"));
    assert_eq!(span.attributes["gen_ai.request.model"], json!("gpt-4.1-mini"));
    assert_eq!(span.attributes["gen_ai.response.model"], json!("gpt-4.1-mini-2025-04-14"));
    assert_eq!(span.attributes["gen_ai.usage.input_tokens"], json!(120));
    assert_eq!(span.attributes["gen_ai.usage.output_tokens"], json!(7));
    let usage_event = result.events.iter().find_map(|e| match &e.kind {
        EventKind::ModelResponse { usage, .. } => *usage,
        _ => None,
    });
    assert_eq!(usage_event.map(|u| u.output_tokens), Some(7));
}

/// An SSE body of Chat Completions chunks, each a `delta` of one choice, then `[DONE]`.
fn chat_stream(deltas: &[Value]) -> ResponseTemplate {
    let mut body = String::new();
    for (i, delta) in deltas.iter().enumerate() {
        let finish = if i + 1 == deltas.len() { json!("tool_calls") } else { Value::Null };
        let chunk = json!({"id": "c", "object": "chat.completion.chunk", "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        write!(body, "data: {chunk}\n\n").unwrap();
    }
    body.push_str("data: [DONE]\n\n");
    ResponseTemplate::new(200).insert_header("content-type", "text/event-stream").set_body_string(body)
}

#[tokio::test]
async fn servers_that_number_streamed_tool_calls_oddly_still_give_the_right_calls() {
    let call = |index: Option<u64>, id: Option<&str>, name: Option<&str>, args: &str| {
        let mut call = json!({"function": {"arguments": args}});
        if let Some(index) = index {
            call["index"] = index.into();
        }
        if let Some(id) = id {
            call["id"] = id.into();
            call["type"] = "function".into();
        }
        if let Some(name) = name {
            call["function"]["name"] = name.into();
        }
        json!({"tool_calls": [call]})
    };
    let quirks = [
        (
            "no index",
            vec![
                call(None, Some("a"), Some("add"), "{\"left\": 1,"),
                call(None, None, None, " \"right\": 2}"),
                call(None, Some("b"), Some("add"), "{\"left\": 3, \"right\": 4}"),
            ],
        ),
        (
            "first index 1",
            vec![
                call(Some(1), Some("a"), Some("add"), "{\"left\": 1, \"right\": 2}"),
                call(Some(2), Some("b"), Some("add"), "{\"left\": 3, \"right\": 4}"),
            ],
        ),
        (
            "index 0 reused",
            vec![
                call(Some(0), Some("a"), Some("add"), "{\"left\": 1, \"right\": 2}"),
                call(Some(0), Some("b"), Some("add"), "{\"left\": 3,"),
                call(Some(0), None, None, " \"right\": 4}"),
            ],
        ),
    ];
    for (quirk, deltas) in quirks {
        let server =
            serve("/v1/chat/completions", vec![chat_stream(&deltas), sse_body("openai_chat", "text_stream.sse")]).await;
        let result = agent(PROTOCOLS[0].model(&server.uri())).run_stream("add").result().await.unwrap();
        assert_eq!(result.status, RunStatus::Completed, "{quirk}: {:?}", result.error);
        let returns = returns_of(&result);
        let got: Vec<(&str, &Value)> = returns.iter().map(|(id, content, _)| (id.as_str(), content)).collect();
        assert_eq!(got, [("a", &json!(3)), ("b", &json!(7))], "{quirk}");
    }
}

// Hostile model servers (DESIGN.md §16): whatever a server sends, no panic, no wait past
// the model's limits, memory bounded, and the key never leaves its origin or shows.

/// Everything a run hands back, as one text to search for the key in.
fn everything(result: &RunResult) -> String {
    format!(
        "{:?} {} {} {}",
        result.error,
        serde_json::to_string(&result.events).unwrap(),
        result.messages.to_json(),
        serde_json::to_string(&result.trace).unwrap(),
    )
}

#[tokio::test]
async fn a_redirect_to_another_origin_never_carries_the_key_and_one_within_it_is_followed() {
    for protocol in PROTOCOLS {
        let elsewhere = MockServer::start().await;
        Mock::given(method("POST")).respond_with(json_body(protocol.dir, "text.json")).mount(&elsewhere).await;
        let moved =
            ResponseTemplate::new(307).insert_header("location", format!("{}{}", elsewhere.uri(), protocol.path));
        let (result, _) = failed_with(vec![moved], protocol).await;
        assert_eq!(requests(&elsewhere).await.len(), 0, "{}: nothing reached the other origin", protocol.dir);
        let error = model_error(&result);
        assert_eq!((error.kind, error.status), (ModelErrorKind::Http, Some(307)), "{}", protocol.dir);
        assert!(error.message.contains("another origin"), "{}: {}", protocol.dir, error.message);

        let server = MockServer::start().await;
        let moved = ResponseTemplate::new(307).insert_header("location", format!("{}/moved", server.uri()));
        Mock::given(path(protocol.path)).respond_with(moved).mount(&server).await;
        Mock::given(path("/moved")).respond_with(json_body(protocol.dir, "text.json")).mount(&server).await;
        let result = agent(protocol.model(&server.uri())).run("hi").await.unwrap();
        assert_eq!(result.status, RunStatus::Completed, "{}: {:?}", protocol.dir, result.error);
        let sent = requests(&server).await;
        assert_eq!(sent.len(), 2, "{}", protocol.dir);
        let (name, value) = protocol.auth;
        assert_eq!(sent[1].headers.get(name).and_then(|v| v.to_str().ok()), Some(value), "{}", protocol.dir);
    }
}

#[tokio::test]
async fn the_key_never_shows_whatever_form_a_server_echoes_it_in() {
    let escaped = KEY.replace('s', "\\u0073").replace('-', "\\u002d");
    for protocol in PROTOCOLS {
        let refused = ResponseTemplate::new(401)
            .insert_header(protocol.request_id, KEY)
            .set_body_string(format!("{{\"error\": {{\"message\": \"Incorrect API key provided: {escaped}\"}}}}"));
        let finished_oddly = ResponseTemplate::new(200)
            .insert_header(protocol.request_id, format!("req-{KEY}"))
            .set_body_string(fixture(protocol.dir, "text.json").replace(protocol.finish, &{
                let (field, _) = protocol.finish.split_once(": ").unwrap();
                format!("{field}: \"{KEY}\"")
            }));
        let stream_error = ResponseTemplate::new(200)
            .insert_header("content-type", "text/event-stream")
            .set_body_string(protocol.stream_error.replace("KEY", &escaped));
        for (case, response, stream) in
            [("401", refused, false), ("finish reason", finished_oddly, false), ("stream error", stream_error, true)]
        {
            let server = serve(if stream { protocol.stream_path } else { protocol.path }, vec![response]).await;
            let agent = agent(protocol.model(&server.uri()));
            let result =
                if stream { agent.run_stream("hi").result().await.unwrap() } else { agent.run("hi").await.unwrap() };
            assert_eq!(result.status, RunStatus::Failed, "{} {case}", protocol.dir);
            let all = everything(&result);
            assert!(
                !all.contains("canary") && !all.contains("sk-canar"),
                "{} {case} leaked the key: {all}",
                protocol.dir
            );
            assert!(all.contains("[redacted]"), "{} {case}: the echo was there to redact: {all}", protocol.dir);
        }
    }
    let refusal = fixture("openai_chat", "refusal.json");
    let refusal: Value = serde_json::from_str(&refusal).unwrap();
    let mut refusal = refusal;
    refusal["choices"][0]["message"]["refusal"] = format!("I will not use {KEY}").into();
    let (result, _) = failed_with(vec![ResponseTemplate::new(200).set_body_json(refusal)], PROTOCOLS[0]).await;
    assert_eq!(model_error(&result).kind, ModelErrorKind::Refusal);
    assert!(!everything(&result).contains("canary"), "{}", everything(&result));
}

#[tokio::test]
async fn retry_after_values_no_wait_can_hold_fall_back_to_the_backoff() {
    for (name, value) in
        [("retry-after", "inf"), ("retry-after", "1e20"), ("retry-after-ms", "1e30"), ("retry-after", "NaN")]
    {
        let limited = ResponseTemplate::new(429).insert_header(name, value).set_body_string("slow down");
        let (result, sent) = failed_with(vec![limited, json_body("openai_chat", "text.json")], PROTOCOLS[0]).await;
        assert_eq!(result.status, RunStatus::Completed, "{name}: {value}: {:?}", result.error);
        assert_eq!(sent, 2, "{name}: {value}");
    }
}

#[tokio::test]
async fn no_retry_waits_past_the_models_timeout() {
    let server = serve(
        "/v1/chat/completions",
        vec![
            ResponseTemplate::new(429).insert_header("retry-after", "56").set_body_string("slow down"),
            json_body("openai_chat", "text.json"),
        ],
    )
    .await;
    let settings = Settings { timeout: Some(Duration::from_secs(2)), ..Settings::default() };
    let result = agent((PROTOCOLS[0].build)(&server.uri(), settings)).run("hi").await.unwrap();
    let error = model_error(&result);
    assert_eq!(error.status, Some(429));
    assert!(error.message.contains("retry after 56.000 s, longer than the 2.000 s"), "{}", error.message);
    assert_eq!(requests(&server).await.len(), 1, "not retried");
}

#[tokio::test]
async fn an_anthropic_block_index_of_any_size_allocates_nothing() {
    let body = fixture("anthropic", "text_stream.sse").replace("\"index\": 0", "\"index\": 4611686018427387904");
    let stream = ResponseTemplate::new(200).insert_header("content-type", "text/event-stream").set_body_string(body);
    let server = serve("/v1/messages", vec![stream]).await;
    let result = agent(PROTOCOLS[2].model(&server.uri())).run_stream("hi").result().await.unwrap();
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    assert_eq!(result.text(), Some("The total is 5."));
}

/// A loopback server answering every connection with `head`, then `body` repeated until
/// the client hangs up or `times` copies went out (so it always stops by itself).
async fn endless_server(head: &'static str, body: &'static [u8], times: usize) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut request = vec![0u8; 64 * 1024];
                let _ = socket.read(&mut request).await;
                if socket.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                for _ in 0..times {
                    if socket.write_all(body).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    format!("http://{address}")
}

#[tokio::test]
async fn a_body_past_the_size_cap_is_a_named_error_streamed_or_not() {
    static JUNK: [u8; 64 * 1024] = [b' '; 64 * 1024];
    static COMMENTS: &[u8] = b": keep-alive padding that never ends an event\n";
    let settings = || Settings { max_response_bytes: Some(1 << 20), ..Settings::default() };
    let whole = endless_server(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n",
        &JUNK,
        1 << 14,
    )
    .await;
    let result = agent((PROTOCOLS[0].build)(&whole, settings())).run("hi").await.unwrap();
    let error = model_error(&result);
    assert_eq!(error.kind, ModelErrorKind::InvalidResponse);
    assert!(error.message.contains("larger than the 1048576 bytes"), "{}", error.message);

    let streamed = endless_server(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n",
        b"2e\r\n: keep-alive padding that never ends an event\n\r\n",
        1 << 20,
    )
    .await;
    assert_eq!(COMMENTS.len(), 0x2e);
    let result = agent((PROTOCOLS[2].build)(&streamed, settings())).run_stream("hi").result().await.unwrap();
    let error = model_error(&result);
    assert!(error.message.contains("larger than the 1048576 bytes"), "{}", error.message);
}

#[tokio::test]
async fn a_body_with_no_length_and_no_chunking_is_read_to_its_end() {
    static TEXT: &str = r#"{"id": "c", "object": "chat.completion", "model": "m", "choices": [{"index": 0, "message": {"role": "assistant", "content": "The total is 5."}, "finish_reason": "stop"}]}"#;
    let server = endless_server(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n",
        TEXT.as_bytes(),
        1,
    )
    .await;
    let result = agent(PROTOCOLS[0].model(&server)).run("hi").await.unwrap();
    assert_eq!(result.text(), Some("The total is 5."), "{:?}", result.error);
}

#[tokio::test]
async fn sse_with_carriage_return_line_endings_streams_as_any_other() {
    for protocol in PROTOCOLS {
        let body = fixture(protocol.dir, "text_stream.sse").replace("\r\n", "\n").replace('\n', "\r");
        let stream =
            ResponseTemplate::new(200).insert_header("content-type", "text/event-stream").set_body_string(body);
        let server = serve(protocol.stream_path, vec![stream]).await;
        let result = agent(protocol.model(&server.uri())).run_stream("hi").result().await.unwrap();
        assert_eq!(result.text(), Some("The total is 5."), "{}: {:?}", protocol.dir, result.error);
    }
}

#[tokio::test]
async fn a_header_a_request_cannot_carry_is_named_before_anything_is_sent() {
    let server = serve("/v1/chat/completions", vec![json_body("openai_chat", "text.json")]).await;
    let model =
        OpenAIChatModel::new("m").base_url(format!("{}/v1", server.uri())).api_key(KEY).header("x-team", "a\nb");
    let result = agent(Arc::new(model)).run("hi").await.unwrap();
    assert_eq!(model_error(&result).message, "header `x-team`: the value holds characters a header cannot carry");
    let model = OpenAIChatModel::new("m").base_url(format!("{}/v1", server.uri())).header("x team", "a");
    let result = agent(Arc::new(model)).run("hi").await.unwrap();
    assert_eq!(model_error(&result).message, "`x team` is not a valid header name");
    assert_eq!(requests(&server).await.len(), 0);
}

#[tokio::test]
async fn an_integer_wider_than_64_bits_is_the_models_to_correct_and_never_a_float() {
    let wide = r#"{"n": {"items": [100000000000000000000000]}}"#;
    let fine = r#"{"n": 18446744073709551615, "f": 1e23}"#;
    let chat = json!({"id": "c", "object": "chat.completion", "model": "m", "choices": [{"index": 0, "finish_reason": "tool_calls",
        "message": {"role": "assistant", "content": null, "tool_calls": [
            {"id": "wide", "type": "function", "function": {"name": "keep", "arguments": wide}},
            {"id": "fine", "type": "function", "function": {"name": "keep", "arguments": fine}}
        ]}}]})
    .to_string();
    // Anthropic and Gemini send arguments as objects inside the body, not as text.
    let anthropic = format!(
        r#"{{"id": "m", "type": "message", "role": "assistant", "model": "c", "stop_reason": "tool_use", "content": [
            {{"type": "tool_use", "id": "wide", "name": "keep", "input": {wide}}},
            {{"type": "tool_use", "id": "fine", "name": "keep", "input": {fine}}}]}}"#
    );
    let gemini = format!(
        r#"{{"candidates": [{{"finishReason": "STOP", "content": {{"role": "model", "parts": [
            {{"functionCall": {{"id": "wide", "name": "keep", "args": {wide}}}}},
            {{"functionCall": {{"id": "fine", "name": "keep", "args": {fine}}}}}]}}}}]}}"#
    );
    let sse = |body: &str| {
        ResponseTemplate::new(200)
            .insert_header("content-type", "text/event-stream")
            .set_body_string(format!("data: {}\n\n", body.replace('\n', " ")))
    };
    let cases = [
        (PROTOCOLS[0], false, ResponseTemplate::new(200).set_body_string(chat)),
        (PROTOCOLS[2], false, ResponseTemplate::new(200).set_body_string(anthropic)),
        (PROTOCOLS[3], false, ResponseTemplate::new(200).set_body_string(gemini.clone())),
        (PROTOCOLS[3], true, sse(&gemini)),
    ];
    for (protocol, stream, calls) in cases {
        let any = ToolBuilder::new("keep")
            .description("Takes any JSON value.")
            .handler(|_: ToolContext, args: Args| async move { Ok(Value::Object(args)) })
            .unwrap();
        let then =
            if stream { sse_body(protocol.dir, "text_stream.sse") } else { json_body(protocol.dir, "text.json") };
        let server = serve(if stream { protocol.stream_path } else { protocol.path }, vec![calls, then]).await;
        let agent = Agent::builder(protocol.model(&server.uri())).tool(any).build().unwrap();
        let result =
            if stream { agent.run_stream("hi").result().await.unwrap() } else { agent.run("hi").await.unwrap() };
        assert_eq!(result.status, RunStatus::Completed, "{} {stream}: {:?}", protocol.dir, result.error);
        let returns = returns_of(&result);
        assert_eq!(returns[0].1["kind"], json!("invalid_arguments"), "{} {stream}", protocol.dir);
        assert_eq!(
            returns[0].1["message"],
            json!("`n.items[0]`: the integer 100000000000000000000000 does not fit in 64 bits (send it as a string)"),
            "{} {stream}",
            protocol.dir
        );
        assert_eq!(returns[1].1, json!({"n": u64::MAX, "f": 1e23}), "{} {stream}", protocol.dir);
    }
}

/// The finish reason of each model answer of a run, from its events.
fn finish_reasons(result: &RunResult) -> Vec<Option<FinishReason>> {
    result
        .events
        .iter()
        .filter_map(|event| match &event.kind {
            EventKind::ModelResponse { finish_reason, .. } => Some(*finish_reason),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn an_answer_cut_at_the_token_limit_says_so_and_its_last_call_is_not_run() {
    for protocol in PROTOCOLS {
        let cut: &[(&str, &str)] = match protocol.dir {
            "openai_chat" => &[(r#""finish_reason": "tool_calls""#, r#""finish_reason": "length""#)],
            "openai_responses" => &[
                (r#""status": "completed""#, r#""status": "incomplete""#),
                (r#""incomplete_details": null"#, r#""incomplete_details": {"reason": "max_output_tokens"}"#),
            ],
            "anthropic" => &[(r#""stop_reason": "tool_use""#, r#""stop_reason": "max_tokens""#)],
            _ => &[(r#""finishReason": "STOP""#, r#""finishReason": "MAX_TOKENS""#)],
        };
        let body = cut.iter().fold(fixture(protocol.dir, "tool_calls.json"), |body, (from, to)| body.replace(from, to));
        let calls = ResponseTemplate::new(200).insert_header("content-type", "application/json").set_body_string(body);
        let server = serve(protocol.path, vec![calls, json_body(protocol.dir, "text.json")]).await;
        let result = agent(protocol.model(&server.uri())).run("add 2 and 3").await.unwrap();
        assert_eq!(result.status, RunStatus::Completed, "{}: {:?}", protocol.dir, result.error);
        assert_eq!(finish_reasons(&result), [Some(FinishReason::Length), Some(FinishReason::Stop)], "{}", protocol.dir);
        let returns = returns_of(&result);
        assert_eq!(returns[0].1, json!(5), "{}: the calls before the cut run", protocol.dir);
        assert_eq!(returns[1].1["kind"], json!("invalid_arguments"), "{}", protocol.dir);
        let message = returns[1].1["message"].as_str().unwrap();
        assert!(message.contains("token limit") && message.contains("cut off"), "{}: {message}", protocol.dir);
        assert!(!everything(&result).contains("the disk is full"), "{}: `fail` never ran", protocol.dir);
    }
}

/// Serves `body` (SSE when `stream`) once and runs the agent on it.
async fn run_on(protocol: Protocol, stream: bool, body: String) -> (RunResult, usize) {
    let content_type = if stream { "text/event-stream" } else { "application/json" };
    let response = ResponseTemplate::new(200).insert_header("content-type", content_type).set_body_string(body);
    let server = serve(if stream { protocol.stream_path } else { protocol.path }, vec![response]).await;
    let agent = agent(protocol.model(&server.uri()));
    let result = if stream { agent.run_stream("add").result().await.unwrap() } else { agent.run("add").await.unwrap() };
    (result, requests(&server).await.len())
}

#[tokio::test]
async fn a_tool_call_without_its_id_or_name_is_a_named_error_never_an_empty_string() {
    // (protocol, fixture, what to cut from it, what the error names)
    let cases = [
        (
            0,
            "tool_calls.json",
            r#""id": "call_add_1", "#,
            "OpenAI Chat Completions: `choices[0].message.tool_calls[0]`: missing field `id`",
        ),
        (
            0,
            "stream.sse",
            r#""id": "call_add_1", "#,
            "OpenAI Chat Completions: `choices[0].delta.tool_calls`: tool call 0 never gave its `id`",
        ),
        (1, "tool_calls.json", r#""call_id": "call_add_1","#, "OpenAI Responses: `output[2]`: missing field `call_id`"),
        (
            1,
            "stream.sse",
            r#""call_id": "call_add_1","#,
            "OpenAI Responses: `response.output_item.added`: missing field `call_id`",
        ),
        (
            2,
            "tool_calls.json",
            r#""id": "toolu_01A09q90qw90lq917835lq9","#,
            "Anthropic Messages: `content[1]`: missing field `id`",
        ),
        (2, "tool_calls.json", r#""type": "tool_use","#, "Anthropic Messages: `content[1]`: missing field `type`"),
        (
            2,
            "stream.sse",
            r#""id": "toolu_01A09q90qw90lq917835lq9","#,
            "Anthropic Messages: `content_block_start`: missing field `id`",
        ),
        (
            3,
            "tool_calls.json",
            r#""name": "add","#,
            "Gemini: `candidates[0].content.parts[1].functionCall`: missing field `name`",
        ),
        (
            3,
            "stream.sse",
            r#""name": "add","#,
            "Gemini: `candidates[0].content.parts[0].functionCall`: missing field `name`",
        ),
    ];
    for (protocol, name, cut, expected) in cases {
        let protocol = PROTOCOLS[protocol];
        let body = fixture(protocol.dir, name);
        assert!(body.contains(cut), "{} {name}: {cut}", protocol.dir);
        let (result, sent) =
            run_on(protocol, Path::new(name).extension().is_some_and(|ext| ext == "sse"), body.replace(cut, "")).await;
        let error = model_error(&result);
        assert_eq!(error.kind, ModelErrorKind::InvalidResponse, "{} {name}: {error}", protocol.dir);
        assert!(error.message.ends_with(expected), "{} {name}: {}", protocol.dir, error.message);
        assert_eq!(sent, 1, "{} {name}: not retried", protocol.dir);
        assert!(returns_of(&result).is_empty(), "{} {name}: no call ran", protocol.dir);
    }
}

#[tokio::test]
async fn unknown_fields_items_and_event_types_are_ignored() {
    // (protocol, in the whole body: a place and what goes there, an event sent first)
    let cases = [
        (
            0,
            r#""object": "chat.completion","#,
            r#""object": "chat.completion", "brand_new": {"x": [1]},"#,
            "data: {\"brand_new\": 1, \"choices\": []}\n\n",
        ),
        (
            1,
            r#""output": ["#,
            r#""output": [{"type": "brand_new_item", "x": 1},"#,
            "event: response.brand_new\ndata: {\"type\": \"response.brand_new\", \"x\": 1}\n\n",
        ),
        (
            2,
            r#""content": ["#,
            r#""content": [{"type": "brand_new_block", "x": 1},"#,
            "event: brand_new\ndata: {\"type\": \"brand_new\", \"index\": \"x\"}\n\n",
        ),
        (3, r#""parts": ["#, r#""parts": [{"brandNew": {"x": 1}},"#, "data: {\"brandNew\": 1}\n\n"),
    ];
    for (protocol, at, with, first_event) in cases {
        let protocol = PROTOCOLS[protocol];
        let body = fixture(protocol.dir, "text.json");
        assert!(body.contains(at), "{}: {at}", protocol.dir);
        let stream = format!("{first_event}{}", fixture(protocol.dir, "text_stream.sse"));
        for (stream, body) in [(false, body.replacen(at, with, 1)), (true, stream)] {
            let (result, _) = run_on(protocol, stream, body).await;
            assert_eq!(result.text(), Some("The total is 5."), "{} {stream}: {:?}", protocol.dir, result.error);
        }
    }
}

/// The agent of [`agent`], with `add` returning `parts` instead of the sum.
fn agent_returning(model: Arc<dyn Model>, parts: Vec<Part>) -> Agent {
    let add = ToolBuilder::new("add")
        .description("Add two integers.")
        .handler(move |_: ToolContext, _: Args| {
            let parts = parts.clone();
            async move { Ok(starweaver::ToolResult::from(parts)) }
        })
        .unwrap();
    let fail = ToolBuilder::new("fail")
        .description("Always fails.")
        .handler(|_: ToolContext, _: Args| async move { Err::<Value, _>(ToolError::user_error("the disk is full")) })
        .unwrap();
    Agent::builder(model).tool(add).tool(fail).build().unwrap()
}

/// The first object anywhere in `value` that `pick` accepts.
fn find<'v>(value: &'v Value, pick: &dyn Fn(&Value) -> bool) -> Option<&'v Value> {
    if pick(value) {
        return Some(value);
    }
    match value {
        Value::Array(items) => items.iter().find_map(|item| find(item, pick)),
        Value::Object(fields) => fields.values().find_map(|item| find(item, pick)),
        _ => None,
    }
}

#[tokio::test]
async fn content_parts_reach_each_provider_in_the_form_its_api_reference_gives() {
    let parts: Vec<Part> = vec![
        Text::new("five").into(),
        Image::data(b"\x89PNG".to_vec(), "image/png").into(),
        Document::data(b"%PDF-".to_vec(), "application/pdf").with_filename("r.pdf").into(),
    ];
    for protocol in PROTOCOLS {
        let server = serve(
            protocol.path,
            vec![json_body(protocol.dir, "tool_calls.json"), json_body(protocol.dir, "text.json")],
        )
        .await;
        let result = agent_returning(protocol.model(&server.uri()), parts.clone()).run("add").await.unwrap();
        assert_eq!(result.status, RunStatus::Completed, "{}: {:?}", protocol.dir, result.error);
        let sent = body(&requests(&server).await[1]);
        let has = |key: &'static str, id: &'static str| move |v: &Value| v.get(key).is_some_and(|v| v == id);
        match protocol.dir {
            "openai_chat" => {
                let tool = find(&sent, &has("tool_call_id", "call_add_1")).unwrap();
                assert_eq!(tool, &json!({"role": "tool", "tool_call_id": "call_add_1", "content": "five"}));
                // The media follow every tool message, in one user message.
                let messages = sent["messages"].as_array().unwrap();
                assert_eq!(messages[messages.len() - 2]["tool_call_id"], "call_fail_2");
                assert_eq!(
                    messages.last().unwrap(),
                    &json!({"role": "user", "content": [
                        {"type": "text", "text": "The content returned by tool call `call_add_1` (`add`):"},
                        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw=="}},
                        {"type": "file", "file": {"filename": "r.pdf", "file_data": "data:application/pdf;base64,JVBERi0="}},
                    ]})
                );
            }
            "openai_responses" => {
                let is_output = |v: &Value| has("call_id", "call_add_1")(v) && v.get("output").is_some();
                let output = find(&sent, &is_output).and_then(|o| o.get("output"));
                assert_eq!(
                    output.unwrap(),
                    &json!([
                        {"type": "input_text", "text": "five"},
                        {"type": "input_image", "image_url": "data:image/png;base64,iVBORw=="},
                        {"type": "input_file", "filename": "r.pdf", "file_data": "data:application/pdf;base64,JVBERi0="},
                    ])
                );
            }
            "anthropic" => {
                let result = find(&sent, &has("tool_use_id", "toolu_01A09q90qw90lq917835lq9")).unwrap();
                assert_eq!(
                    result["content"],
                    json!([
                        {"type": "text", "text": "five"},
                        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw=="}},
                        {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="}},
                    ])
                );
            }
            _ => {
                let is_response = |v: &Value| has("id", "call_add_1")(v) && v.get("response").is_some();
                let response = find(&sent, &is_response).unwrap();
                assert_eq!(
                    response,
                    &json!({"name": "add", "response": {"result": "five"}, "parts": [
                        {"inlineData": {"mimeType": "image/png", "data": "iVBORw=="}},
                        {"inlineData": {"mimeType": "application/pdf", "data": "JVBERi0="}},
                    ], "id": "call_add_1"})
                );
            }
        }
    }
}

#[tokio::test]
async fn a_part_a_provider_cannot_take_is_a_named_error_before_anything_is_sent() {
    for protocol in PROTOCOLS {
        let server = serve(protocol.path, vec![json_body(protocol.dir, "tool_calls.json")]).await;
        let ogg = Audio::new(b"OggS".to_vec(), "audio/ogg");
        let result = agent_returning(protocol.model(&server.uri()), vec![ogg.into()]).run("add").await.unwrap();
        assert_eq!(result.status, RunStatus::Failed, "{}", protocol.dir);
        let message = model_error(&result).to_string();
        assert!(message.contains("cannot take the `audio` part (audio/ogg)"), "{}: {message}", protocol.dir);
        assert!(message.contains("(`add`)"), "{}: {message}", protocol.dir);
        assert_eq!(requests(&server).await.len(), 1, "{}: the refused request is never sent", protocol.dir);
    }
}

/// DESIGN.md §18: a toolset's instructions go with the agent's, in the place each API
/// takes instructions (a system message after the agent's for OpenAI Chat and Responses,
/// `system` for Anthropic, `systemInstruction` for Gemini).
#[tokio::test]
async fn toolset_instructions_reach_each_provider_with_the_agents() {
    use starweaver::Toolset as _;
    let mut bodies = serde_json::Map::new();
    for protocol in PROTOCOLS {
        let server = serve(protocol.path, vec![json_body(protocol.dir, "text.json")]).await;
        let status = ToolBuilder::new("status")
            .description("The deploy status.")
            .handler(|_: ToolContext, _: Args| async move { Ok(json!("green")) })
            .unwrap();
        let ops = starweaver::StaticToolset::new("ops").tool(status).with_instructions("Deploy only on green.");
        let agent =
            Agent::builder(protocol.model(&server.uri())).instructions("Be brief.").toolset(ops).build().unwrap();
        agent.run("is it green?").await.unwrap();
        bodies.insert(protocol.dir.into(), body(&requests(&server).await[0]));
    }
    insta::with_settings!({snapshot_path => "../../snapshots", prepend_module_to_snapshot => false, omit_expression => true}, {
        insta::assert_json_snapshot!("rust__toolset_instructions_requests", bodies);
    });
}

/// The output the native-output test asks for.
#[derive(serde::Deserialize, serde::Serialize, schemars::JsonSchema, Debug, PartialEq)]
struct Invoice {
    number: String,
    total_cents: u64,
}

#[tokio::test]
async fn native_output_sends_each_providers_json_schema_format_and_reads_the_answer_as_the_type() {
    for protocol in PROTOCOLS {
        let native = protocol.dir != "anthropic";
        let fixture = if native { "native_output.json" } else { "text.json" };
        let server = serve(protocol.path, vec![json_body(protocol.dir, fixture)]).await;
        let built = Agent::builder(protocol.model(&server.uri()))
            .output_type::<Invoice>()
            .output_mode(OutputMode::Native)
            .build();
        if !native {
            let Err(starweaver::Error::InvalidOption { option, message }) = built else {
                panic!("anthropic has no JSON-schema response format and is refused")
            };
            assert_eq!(option, "output_type");
            assert!(message.contains("anthropic"), "{message}");
            continue;
        }
        let result = built.unwrap().run("read it").await.unwrap();
        assert_eq!(result.output_as::<Invoice>().unwrap(), Invoice { number: "A-7".into(), total_cents: 5 });
        let sent = body(&requests(&server).await[0]);
        let schema = match protocol.dir {
            "openai_chat" => {
                assert_eq!(sent["response_format"]["type"], "json_schema", "{sent}");
                assert_eq!(sent["response_format"]["json_schema"]["strict"], true);
                &sent["response_format"]["json_schema"]["schema"]
            }
            "openai_responses" => {
                assert_eq!(sent["text"]["format"]["type"], "json_schema", "{sent}");
                assert_eq!(sent["text"]["format"]["name"], "final_result");
                &sent["text"]["format"]["schema"]
            }
            _ => {
                assert_eq!(sent["generationConfig"]["responseMimeType"], "application/json", "{sent}");
                &sent["generationConfig"]["responseSchema"]
            }
        };
        assert_eq!(schema["properties"]["number"]["type"], "string", "{}", protocol.dir);
        assert!(sent.get("tools").is_none(), "native output offers no output tool");
    }
}

/// The other member of the native union the union test asks for.
#[derive(serde::Deserialize, serde::Serialize, schemars::JsonSchema, Debug, PartialEq)]
struct Refusal {
    reason: String,
}

/// DESIGN.md §17: a native union reaches each provider's JSON-schema format as one schema
/// (its strict form where the provider has one), and the answer's `kind` picks the member.
#[tokio::test]
async fn a_native_union_sends_one_schema_of_its_members_and_reads_the_member_the_answer_names() {
    let mut schemas = serde_json::Map::new();
    for protocol in PROTOCOLS.iter().filter(|protocol| protocol.dir != "anthropic") {
        let server = serve(protocol.path, vec![json_body(protocol.dir, "native_union.json")]).await;
        let agent = Agent::builder(protocol.model(&server.uri()))
            .output_type::<Invoice>()
            .output_type::<Refusal>()
            .output_mode(OutputMode::Native)
            .build()
            .unwrap();
        let result = agent.run("read it").await.unwrap();
        assert_eq!(result.status, RunStatus::Completed, "{}: {:?}", protocol.dir, result.error);
        assert_eq!(result.output_as::<Refusal>().unwrap(), Refusal { reason: "not an invoice".into() });
        assert_eq!(result.output_tool.as_deref(), Some("final_result_Refusal"), "{}", protocol.dir);
        let sent = body(&requests(&server).await[0]);
        let format = match protocol.dir {
            "openai_chat" => sent["response_format"]["json_schema"].clone(),
            "openai_responses" => sent["text"]["format"].clone(),
            _ => sent["generationConfig"]["responseSchema"].clone(),
        };
        let schema = if protocol.dir == "gemini" { &format } else { &format["schema"] };
        let members = schema["properties"]["result"]["anyOf"].as_array();
        assert_eq!(members.map(Vec::len), Some(2), "{}: {sent}", protocol.dir);
        if protocol.dir != "gemini" {
            assert_eq!(format["strict"], true, "{}: the union's strict form is accepted", protocol.dir);
        }
        schemas.insert(protocol.dir.into(), format);
    }
    insta::with_settings!({snapshot_path => "../../snapshots", prepend_module_to_snapshot => false, omit_expression => true}, {
        insta::assert_json_snapshot!("rust__native_output_union_requests", schemas);
    });
}

/// DESIGN.md §17: the output tool reaches each provider as its other tools do, and the
/// call the provider answers with ends the run with the decoded value.
#[tokio::test]
async fn an_output_tool_reaches_each_provider_as_a_tool_and_its_call_ends_the_run_with_the_type() {
    for protocol in PROTOCOLS {
        let server = serve(protocol.path, vec![json_body(protocol.dir, "output_tool.json")]).await;
        let agent = Agent::builder(protocol.model(&server.uri())).output_type::<Invoice>().build().unwrap();
        let result = agent.run("read it").await.unwrap();
        assert_eq!(result.status, RunStatus::Completed, "{}: {:?}", protocol.dir, result.error);
        assert_eq!(result.output_as::<Invoice>().unwrap(), Invoice { number: "A-7".into(), total_cents: 5 });
        assert_eq!(result.output_tool.as_deref(), Some("final_result"), "{}", protocol.dir);
        let sent = body(&requests(&server).await[0]);
        let (name, schema) = match protocol.dir {
            "openai_chat" => (&sent["tools"][0]["function"]["name"], &sent["tools"][0]["function"]["parameters"]),
            "openai_responses" => (&sent["tools"][0]["name"], &sent["tools"][0]["parameters"]),
            "anthropic" => (&sent["tools"][0]["name"], &sent["tools"][0]["input_schema"]),
            _ => (
                &sent["tools"][0]["functionDeclarations"][0]["name"],
                &sent["tools"][0]["functionDeclarations"][0]["parameters"],
            ),
        };
        assert_eq!(name, "final_result", "{}: {sent}", protocol.dir);
        assert_eq!(schema["required"], json!(["number", "total_cents"]), "{}: {sent}", protocol.dir);
        assert!(sent.get("response_format").is_none() && sent["text"].get("format").is_none(), "{}", protocol.dir);
    }
}

/// The tools of a provider's request body, each as the bytes sent.
fn rendered_tools(dir: &str, body: &Value) -> Vec<String> {
    let tools = if dir == "gemini" { &body["tools"][0]["functionDeclarations"] } else { &body["tools"] };
    tools.as_array().unwrap().iter().map(Value::to_string).collect()
}

/// `status`, then two deferred tools: `get_weather` (always sunny) and `send_email`.
fn catalog(model: Arc<dyn Model>) -> AgentBuilder {
    let weather = ToolBuilder::new("get_weather")
        .description("Forecast for a city.")
        .defer_loading(true)
        .handler(|_: ToolContext, _: Args| async move { Ok(json!("sunny")) })
        .unwrap();
    let email = ToolBuilder::new("send_email")
        .description("Send an email.")
        .defer_loading(true)
        .handler(|_: ToolContext, _: Args| async move { Ok(json!("sent")) })
        .unwrap();
    Agent::builder(model)
        .tool(ToolBuilder::new("status").handler(|_: ToolContext, _: Args| async move { Ok(json!("ok")) }).unwrap())
        .tool(weather)
        .tool(email)
}

/// DESIGN.md §20: a search loads tools for the next request, after the always-loaded ones,
/// so every provider is sent the earlier request's tools again byte for byte (its cached
/// prompt prefix holds), with the found tool after them.
#[tokio::test]
async fn a_tool_search_keeps_each_providers_rendered_tools_a_byte_identical_prefix() {
    for protocol in PROTOCOLS {
        let server = serve(
            protocol.path,
            vec![json_body(protocol.dir, "search_tools.json"), json_body(protocol.dir, "text.json")],
        )
        .await;
        let agent = catalog(protocol.model(&server.uri())).build().unwrap();
        let result = agent.run("weather?").await.unwrap();
        assert_eq!(result.status, RunStatus::Completed, "{}: {:?}", protocol.dir, result.error);
        let sent = requests(&server).await;
        let (before, after) =
            (rendered_tools(protocol.dir, &body(&sent[0])), rendered_tools(protocol.dir, &body(&sent[1])));
        assert_eq!(before.len(), 2, "{}: `status` and `search_tools`: {before:?}", protocol.dir);
        assert_eq!(after[..before.len()], before[..], "{}: the earlier tools are sent byte for byte", protocol.dir);
        assert_eq!(after.len(), 3, "{}", protocol.dir);
        assert!(after[2].contains("get_weather") && !after.concat().contains("send_email"), "{}", protocol.dir);
        if protocol.dir == "anthropic" {
            let tools = |body: &Value| body["tools"].clone();
            insta::with_settings!({snapshot_path => "../../snapshots", prepend_module_to_snapshot => false, omit_expression => true}, {
                insta::assert_json_snapshot!("rust__tool_search_anthropic_request_tools", json!({
                    "before_search": tools(&body(&sent[0])),
                    "after_search": tools(&body(&sent[1])),
                }));
            });
        }
    }
}

/// DESIGN.md §20, native: the deferred tools go to the provider's own search, after its
/// search tool and marked deferred, in every request alike; its blocks come back in the
/// next request exactly as they came (streamed or not), and what it loaded is a
/// `tools_loaded` event and session state, as a local search's is. The found tool runs.
#[tokio::test]
async fn native_tool_search_hands_the_deferred_tools_to_the_provider_and_replays_its_search() {
    let cases = [
        ("anthropic", "tool_search.json", false, "weather forecast for a city"),
        ("anthropic", "tool_search_stream.sse", true, "weather forecast for a city"),
        ("openai_responses", "tool_search.json", false, r#"{"paths":["get_weather"]}"#),
    ];
    for (dir, first, streamed, query) in cases {
        let case = format!("{dir}/{first}");
        let protocol = PROTOCOLS.into_iter().find(|p| p.dir == dir).unwrap();
        let replies = if streamed {
            vec![sse_body(dir, first), sse_body(dir, "text_stream.sse")]
        } else {
            vec![json_body(dir, first), json_body(dir, "text.json")]
        };
        let server = serve(protocol.path, replies).await;
        let agent = catalog(protocol.model(&server.uri())).tool_search(ToolSearch::Native).build().unwrap();
        let mut session = agent.session();
        let result = if streamed {
            let mut stream = session.run_stream("weather in Oslo?");
            while stream.next().await.is_some() {}
            stream.result().await.unwrap()
        } else {
            session.run("weather in Oslo?").await.unwrap()
        };
        assert_eq!(result.status, RunStatus::Completed, "{case}: {:?}", result.error);
        assert_eq!(result.text(), Some("The total is 5."), "{case}");
        assert_eq!(returns_of(&result)[0].1, json!("sunny"), "{case}: the found tool ran");
        let loaded: Vec<_> = result
            .events
            .iter()
            .filter_map(|event| match &event.kind {
                EventKind::ToolsLoaded { names, query } => Some((names.clone(), query.clone())),
                _ => None,
            })
            .collect();
        assert_eq!(loaded, [(vec!["get_weather".to_owned()], Some(query.to_owned()))], "{case}");

        // The search's items are parts of the history, and survive an export and restore.
        let state = session.export_state();
        assert_eq!(state["loaded"], json!(["get_weather"]), "{case}");
        assert_eq!(agent.restore_session(&state).unwrap().export_state(), state, "{case}");
        let canonical = result.messages.to_json();
        assert_eq!(starweaver::History::from_json(&canonical).unwrap(), result.messages, "{case}");
        let items: Vec<&Value> =
            canonical[1]["parts"].as_array().unwrap().iter().filter(|part| part["kind"] == "provider_item").collect();
        assert_eq!(items.len(), 2, "{case}: the search's call and result: {canonical}");
        let name = if dir == "anthropic" { "anthropic" } else { "openai-responses" };
        assert!(items.iter().all(|item| item["protocol"] == name), "{case}");

        let sent = requests(&server).await;
        let (one, two) = (body(&sent[0]), body(&sent[1]));
        let search_tool = if dir == "anthropic" {
            json!({"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"})
        } else {
            json!({"type": "tool_search"})
        };
        assert_eq!(one["tools"][0]["name"], "status", "{case}");
        assert_eq!(one["tools"][1], search_tool, "{case}");
        for (at, name) in [(2, "get_weather"), (3, "send_email")] {
            assert_eq!(one["tools"][at]["name"], name, "{case}");
            assert_eq!(one["tools"][at]["defer_loading"], true, "{case}");
        }
        assert_eq!(one["tools"].as_array().unwrap().len(), 4, "{case}: no `search_tools` of the run's own");
        assert_eq!(rendered_tools(dir, &two), rendered_tools(dir, &one), "{case}: the same tools, byte for byte");
        let beta =
            |request: &Request| request.headers.get("anthropic-beta").and_then(|v| v.to_str().ok()).map(str::to_owned);
        let expected = (dir == "anthropic").then(|| "advanced-tool-use-2025-11-20".to_owned());
        assert!(sent.iter().all(|request| beta(request) == expected), "{case}: the beta header");

        let answer: Value = serde_json::from_str(&fixture(dir, "tool_search.json")).unwrap();
        if dir == "anthropic" {
            assert_eq!(two["messages"][1]["content"], answer["content"], "{case}: the answer's blocks, as they came");
        } else {
            let input = two["input"].as_array().unwrap();
            let at = |item: &Value| input.iter().position(|sent| sent == item);
            let (call, output) = (at(&answer["output"][0]), at(&answer["output"][1]));
            assert!(
                call.is_some() && call.map(|c| c + 1) == output,
                "{case}: the search's items, as they came: {input:?}"
            );
        }
    }
}

/// A beta the application asked for stays, and the tool search's joins it.
#[tokio::test]
async fn native_tool_search_joins_the_applications_own_anthropic_beta_header() {
    let server = serve("/v1/messages", vec![json_body("anthropic", "text.json")]).await;
    let model = AnthropicModel::new("claude-sonnet-4-5")
        .base_url(server.uri())
        .api_key(KEY)
        .header("anthropic-beta", "prompt-caching-2024-07-31");
    let agent = catalog(Arc::new(model)).tool_search(ToolSearch::Native).build().unwrap();
    agent.run("hi").await.unwrap();
    let sent = requests(&server).await;
    let beta: Vec<&str> = sent[0].headers.get_all("anthropic-beta").iter().map(|v| v.to_str().unwrap()).collect();
    assert_eq!(beta, ["prompt-caching-2024-07-31,advanced-tool-use-2025-11-20"]);
}

/// A protocol without a native tool search is refused when the agent is built, by name,
/// and so is a model that calls no provider.
#[test]
fn native_tool_search_is_refused_by_name_where_the_protocol_has_none() {
    for protocol in PROTOCOLS {
        let built = catalog(protocol.model("http://127.0.0.1:9")).tool_search(ToolSearch::Native).build();
        match protocol.dir {
            "anthropic" | "openai_responses" => assert!(built.is_ok(), "{}", protocol.dir),
            dir => {
                let error = built.err().unwrap();
                assert!(matches!(error, starweaver::Error::InvalidOption { option: "tool_search", .. }), "{dir}");
                let name = dir.replace('_', "-");
                let message = error.to_string();
                assert!(message.contains(&format!("the `{name}` protocol has no native tool search")), "{message}");
                assert!(message.contains(r#"tool_search="local""#), "{message}");
            }
        }
    }
    let test_model = catalog(Arc::new(starweaver::testing::TestModel::new([]))).tool_search(ToolSearch::Native);
    let message = test_model.build().err().unwrap().to_string();
    assert!(message.contains("this model has no native tool search"), "{message}");
}
