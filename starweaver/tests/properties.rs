//! DESIGN.md §16 as properties, over generated inputs: tool arguments, decisions, restored
//! states, explicit schemas and their renders. `make test` tries a few hundred cases;
//! `make fuzz` sets `PROPTEST_CASES` (and prints `PROPTEST_RNG_SEED`) for a long campaign.
//! Each property prints how many inputs it tried.
// Test code: helpers outside `#[test]` fns unwrap and index too; a panic fails the test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use std::fmt::Write as _;
use std::sync::Arc;

use common::*;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Map, Value, json};
use starweaver::render::{Provider, check, render};
use starweaver::testing::TestModel;
use starweaver::{Agent, Event, HitlDecisions, RunStatus, ToolBuilder, ToolContext, ToolDefinition, ToolError};

fn runner() -> TestRunner {
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(64);
    TestRunner::new(Config { cases, failure_persistence: None, ..Config::default() })
}

/// Runs `property` over `strategy`, then reports how many inputs it tried.
fn check_property<S: Strategy>(name: &str, strategy: S, property: impl Fn(S::Value) -> Result<(), TestCaseError>)
where
    S::Value: std::fmt::Debug,
{
    let tried = std::sync::atomic::AtomicUsize::new(0);
    let outcome = runner().run(&strategy, |value| {
        tried.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        property(value)
    });
    eprintln!("property `{name}`: {} inputs, no invariant broken", tried.into_inner());
    if let Err(error) = outcome {
        panic!("property `{name}` failed: {error}");
    }
}

/// Any JSON value, a few levels deep, with the keys a tool or a decision might use.
fn json_value() -> impl Strategy<Value = Value> {
    let key = prop_oneof![
        Just("id".to_owned()),
        Just("approved".to_owned()),
        Just("status".to_owned()),
        Just("value".to_owned()),
        Just("error".to_owned()),
        Just("arguments".to_owned()),
        Just("n".to_owned()),
        Just("kind".to_owned()),
        "[a-z_]{1,8}",
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_filter_map("finite", |f| serde_json::Number::from_f64(f).map(Value::Number)),
        ".{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec((key.clone(), inner), 0..5).prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

fn gated(runs: &Counter) -> impl starweaver::Tool {
    let runs = runs.clone();
    ToolBuilder::new("gated")
        .parameters_schema(json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"],
            "additionalProperties": false}))
        .handler(move |ctx: ToolContext, args: Args| {
            let runs = runs.clone();
            async move {
                if ctx.approval().is_none() {
                    return Err(ToolError::approval_required("ask"));
                }
                runs.bump();
                Ok(json!({"n": args["n"]}))
            }
        })
        .unwrap()
}

/// Exactly `{"n": <i64>}`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct OnlyN {
    n: i64,
}

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(future)
}

#[test]
fn any_arguments_from_a_model_get_a_return_and_run_no_tool_outside_its_schema() {
    check_property("tool arguments", json_value(), |arguments| {
        let runs = Counter::default();
        let typed = ToolBuilder::new("typed")
            .handler({
                let runs = runs.clone();
                move |_: ToolContext, args: OnlyN| {
                    runs.bump();
                    async move { Ok(json!(args.n)) }
                }
            })
            .unwrap();
        let model = calls_then_text(vec![call("c", "typed", arguments.clone())], "done");
        let agent = Agent::builder(model).tool(typed).build().unwrap();
        let result = block_on(agent.run("go")).unwrap();
        prop_assert!(matches!(result.status, RunStatus::Completed | RunStatus::Failed));
        let returns = tool_returns(result.messages.messages());
        prop_assert_eq!(returns.len(), 1, "every call gets exactly one return");
        let valid =
            arguments.get("n").is_some_and(Value::is_i64) && arguments.as_object().is_some_and(|o| o.len() == 1);
        prop_assert_eq!(runs.get() > 0, valid, "the tool ran iff the arguments fit its schema");
        Ok(())
    });
}

#[test]
fn any_decision_is_applied_or_refused_by_name_and_a_refusal_keeps_the_session_waiting() {
    let decision = prop_oneof![
        json_value(),
        (json_value(), any::<bool>(), json_value()).prop_map(|(id, approved, arguments)| {
            json!({"approvals": [{"id": id, "approved": approved, "arguments": arguments}]})
        }),
        (json_value(), json_value(), json_value()).prop_map(|(status, value, error)| {
            json!({"deferred_results": [{"id": "c", "status": status, "value": value, "error": error}]})
        }),
    ];
    check_property("decisions", decision, |decision| {
        let runs = Counter::default();
        let model = calls_then_text(vec![call("c", "gated", json!({"n": 1}))], "done");
        let agent = Agent::builder(model).tool(gated(&runs)).build().unwrap();
        let mut session = agent.session();
        let waiting = block_on(session.run("go")).unwrap();
        let Ok(decisions) = HitlDecisions::from_json(&decision) else { return Ok(()) };
        match block_on(session.resume(decisions)) {
            Ok(done) => prop_assert_ne!(done.status, RunStatus::Waiting),
            Err(error) => {
                prop_assert!(!error.to_string().is_empty());
                prop_assert_eq!(runs.get(), 0, "a refused decision runs nothing");
                prop_assert_eq!(session.pending(), Some(waiting.hitl.clone()), "and the session keeps waiting");
            }
        }
        Ok(())
    });
}

#[test]
fn any_restored_state_restores_or_is_refused_by_name() {
    let runs = Counter::default();
    let model = calls_then_text(vec![call("c", "gated", json!({"n": 1}))], "done");
    let agent = Agent::builder(model).tool(gated(&runs)).build().unwrap();
    let mut session = agent.session();
    block_on(session.run("go")).unwrap();
    let exported = session.export_state();
    let paths = ["", "history", "history/0", "history/1", "history/1/parts/0", "waiting", "waiting/slots/0", "decided"];
    let mutation = (0..paths.len(), json_value(), "[a-z_]{1,10}");
    check_property("restored states", mutation, |(at, replacement, key)| {
        let mut state = exported.clone();
        let pointer = if paths[at].is_empty() { String::new() } else { format!("/{}", paths[at]) };
        if let Some(target) = state.pointer_mut(&pointer) {
            match target {
                Value::Object(map) if !map.is_empty() && key.len() % 2 == 0 => {
                    let first = map.keys().next().cloned().unwrap_or_default();
                    map.insert(first, replacement);
                }
                Value::Object(map) => {
                    map.insert(key, replacement);
                }
                other => *other = replacement,
            }
        }
        match agent.restore_session(&state) {
            Ok(restored) => {
                // What restores can be exported and restored again, unchanged.
                let again = agent.restore_session(&restored.export_state());
                prop_assert!(again.is_ok());
            }
            Err(error) => prop_assert!(!error.to_string().is_empty()),
        }
        Ok(())
    });
}

#[test]
fn any_return_schema_is_accepted_or_refused_naming_it_and_never_rendered() {
    check_property("return schemas", json_value(), |returns| {
        let plain = ToolDefinition::new("t", json!({"type": "object", "properties": {}}));
        let typed = plain.clone().with_return_schema(returns);
        match typed.validate() {
            Err(err) => prop_assert!(err.to_string().starts_with("invalid tool `t`: return schema at `"), "{err}"),
            Ok(()) => {
                for provider in Provider::ALL {
                    prop_assert_eq!(render(&typed, provider, None).ok(), render(&plain, provider, None).ok());
                }
            }
        }
        Ok(())
    });
}

#[test]
fn any_explicit_schema_is_accepted_or_refused_by_name_and_accepted_ones_render_or_are_refused() {
    let schema = prop_oneof![
        json_value(),
        prop::collection::vec(("[a-z]{1,6}", json_value()), 0..4).prop_map(|props| {
            let properties: Map<String, Value> = props.into_iter().collect();
            json!({"type": "object", "properties": properties})
        }),
    ];
    check_property("explicit schemas and renders", schema, |parameters| {
        let definition = ToolDefinition {
            name: "t".into(),
            description: Some("A tool.".into()),
            parameters,
            strict: None,
            sequential: false,
            defer_loading: false,
            timeout_ms: None,
            max_return_chars: None,
            max_retries: None,
            max_uses: None,
            max_concurrency: None,
            metadata: Map::new(),
            return_schema: None,
        };
        if definition.validate().is_err() {
            return Ok(());
        }
        for provider in Provider::ALL {
            if let Ok(rendered) = render(&definition, provider, None) {
                let problems = check(provider, &rendered);
                prop_assert!(problems.is_empty(), "{provider}: {problems:?} in {rendered}");
            }
        }
        Ok(())
    });
}

#[test]
fn every_event_of_any_run_reads_back_equal() {
    check_property("events", json_value(), |arguments| {
        let runs = Counter::default();
        let model = Arc::new(TestModel::new([
            TestModel::tool_call_response([call("a", "gated", arguments), call("b", "gated", json!({"n": 2}))]),
            starweaver::ModelResponse::text("done"),
        ]));
        let agent = Agent::builder(model).tool(gated(&runs)).build().unwrap();
        let result = block_on(agent.run("go")).unwrap();
        for event in &result.events {
            let back: Event = serde_json::from_value(serde_json::to_value(event).unwrap()).unwrap();
            prop_assert_eq!(&back, event);
        }
        Ok(())
    });
}

/// The `(event, data)` pairs of an SSE fixture (its events are one `data` line each).
#[cfg(feature = "providers")]
fn fixture_events(dir: &str) -> Vec<(String, String)> {
    let mut events = Vec::new();
    for name in ["stream.sse", "text_stream.sse"] {
        let path = format!("{}/../tests/fixtures/providers/{dir}/{name}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        for block in text.split("\n\n").filter(|b| !b.trim().is_empty()) {
            let field = |prefix: &str| block.lines().find_map(|l| l.strip_prefix(prefix)).map(str::to_owned);
            events.push((field("event: ").unwrap_or_else(|| "message".into()), field("data: ").unwrap_or_default()));
        }
    }
    events
}

/// Feeds `events` to a fresh stream state of `P`: every event is taken or refused by a
/// named error, and the end is a response or a named error; nothing panics.
#[cfg(feature = "providers")]
fn assemble<P: starweaver::provider::Protocol>(events: &[(String, String)]) -> Result<(), TestCaseError> {
    use starweaver::provider::{SseEvent, StreamState};
    let mut state = P::default().stream(1);
    for (event, data) in events {
        if let Err(error) = state.event(&SseEvent { event: event.clone(), data: data.clone() }) {
            prop_assert!(!error.message.is_empty());
            return Ok(());
        }
    }
    if let Err(error) = state.finish() {
        prop_assert!(!error.message.is_empty());
    }
    Ok(())
}

#[cfg(feature = "providers")]
#[test]
fn any_stream_a_provider_server_sends_is_assembled_or_refused_by_name() {
    use starweaver::provider::{Anthropic, Gemini, OpenAIChat, OpenAIResponses};
    let pools: Vec<Vec<(String, String)>> =
        ["openai_chat", "openai_responses", "anthropic", "gemini"].into_iter().map(fixture_events).collect();
    // Fields the assemblers read, where a hostile server puts anything at all.
    let field = prop_oneof![
        Just("index"),
        Just("type"),
        Just("delta"),
        Just("content_block"),
        Just("choices"),
        Just("candidates"),
        Just("output_index"),
        Just("usage"),
        Just("error"),
        Just("item"),
        Just("message"),
    ];
    let huge = prop_oneof![
        Just(json!(4_611_686_018_427_387_904u64)),
        Just(json!(u64::MAX)),
        Just(json!(-1)),
        Just(json!(1e300))
    ];
    let mutation = prop_oneof![
        2 => Just(None),
        2 => (field.clone(), json_value()).prop_map(Some),
        1 => (field, huge).prop_map(Some),
    ];
    let events = prop::collection::vec((any::<prop::sample::Index>(), mutation, ".{0,3}"), 0..14);
    check_property("provider streams", (0..4usize, events), |(protocol, picks)| {
        let pool = &pools[protocol];
        let events: Vec<(String, String)> = picks
            .into_iter()
            .map(|(pick, mutation, junk)| {
                let (event, data) = pool[pick.index(pool.len())].clone();
                let data = match (mutation, serde_json::from_str::<Value>(&data)) {
                    (Some((field, value)), Ok(Value::Object(mut object))) => {
                        object.insert(field.to_owned(), value);
                        Value::Object(object).to_string()
                    }
                    // Cut text: what a broken server leaves.
                    (Some(_), _) => format!("{}{junk}", &data[..data.len() / 2]),
                    (None, _) => data,
                };
                (event, data)
            })
            .collect();
        match protocol {
            0 => assemble::<OpenAIChat>(&events),
            1 => assemble::<OpenAIResponses>(&events),
            2 => assemble::<Anthropic>(&events),
            _ => assemble::<Gemini>(&events),
        }
    });
}

#[test]
fn any_json_text_has_a_wide_integer_found_exactly_when_it_holds_one() {
    let wide =
        prop_oneof![Just("100000000000000000000000"), Just("-9223372036854775809"), Just("18446744073709551616")];
    check_property("wide integers", (json_value(), wide, any::<bool>()), |(value, wide, inject)| {
        let text = value.to_string();
        prop_assert_eq!(starweaver::json::wide_integer(&text), None, "{}", text);
        if inject {
            // The marker is longer than any generated key or string, so only it is replaced.
            let marker = "\"__the_wide_integer_goes_here__\"";
            let text =
                json!({"outer": [value, "__the_wide_integer_goes_here__"]}).to_string().replacen(marker, wide, 1);
            let found = starweaver::json::wide_integer(&text);
            prop_assert_eq!(
                found,
                Some(format!("`outer[1]`: the integer {wide} does not fit in 64 bits (send it as a string)"))
            );
        }
        Ok(())
    });
}

/// What a client may send an MCP server: a request with an id, a notification, a response,
/// or text that is no message; as `(method, params, is a request)`.
#[cfg(feature = "mcp")]
fn json_rpc_messages() -> impl Strategy<Value = Vec<(Option<String>, Option<Value>, bool)>> {
    let method = prop_oneof![
        Just("tools/list".to_owned()),
        Just("tools/call".to_owned()),
        Just("ping".to_owned()),
        Just("initialize".to_owned()),
        Just("notifications/cancelled".to_owned()),
        "[a-z/]{0,12}",
    ];
    let message = prop_oneof![
        3 => (method.clone(), prop::option::of(json_value())).prop_map(|(m, p)| (Some(m), p, true)),
        1 => (method, prop::option::of(json_value())).prop_map(|(m, p)| (Some(m), p, false)),
        1 => ".{0,40}".prop_map(|junk| (None, Some(Value::String(junk)), false)),
    ];
    prop::collection::vec(message, 1..10)
}

/// The text of message `i` of [`json_rpc_messages`] (one line), and the id it must be
/// answered by, if it is a request.
#[cfg(feature = "mcp")]
fn json_rpc_line(
    i: usize,
    (method, params, request): (Option<String>, Option<Value>, bool),
) -> (String, Option<Value>) {
    match (method, params) {
        (None, Some(Value::String(junk))) => (junk.replace('\n', " "), None),
        (method, params) => {
            let mut message = json!({"jsonrpc": "2.0", "method": method});
            if let Some(params) = params {
                message["params"] = params;
            }
            let id = request.then(|| json!(i + 1));
            if let Some(id) = &id {
                message["id"] = id.clone();
            }
            (message.to_string(), id)
        }
    }
}

/// A service of one tool, `add`.
#[cfg(feature = "mcp")]
fn calc_service() -> starweaver::mcp::McpService {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct AddArgs {
        left: i64,
        right: i64,
    }
    let add = ToolBuilder::new("add")
        .handler(|_: ToolContext, a: AddArgs| async move { Ok(json!(a.left + a.right)) })
        .unwrap();
    starweaver::mcp::McpService::builder("calc").tool(add).build().unwrap()
}

#[cfg(feature = "mcp")]
const MCP_HELLO: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"p","version":"0"}}}"#;

#[cfg(feature = "mcp")]
#[test]
fn any_json_rpc_a_client_sends_is_answered_and_the_server_keeps_serving() {
    use std::time::Duration;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

    check_property("mcp json-rpc", json_rpc_messages(), |messages| {
        let service = calc_service();
        block_on(async move {
            let (client, server) = tokio::io::duplex(1 << 16);
            let (server_read, server_write) = tokio::io::split(server);
            tokio::spawn(service.serve_io(server_read, server_write));
            let (read, mut writer) = tokio::io::split(client);
            let mut lines = tokio::io::BufReader::new(read).lines();
            writer.write_all(format!("{MCP_HELLO}\n").as_bytes()).await.unwrap();
            let mut expected = vec![json!(0)];
            for (i, message) in messages.into_iter().enumerate() {
                let (line, id) = json_rpc_line(i, message);
                expected.extend(id);
                writer.write_all(format!("{line}\n").as_bytes()).await.unwrap();
            }
            writer.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":\"last\",\"method\":\"ping\"}\n").await.unwrap();
            // Every answer is JSON-RPC; every request is answered by its id, and the server
            // still answers the last ping.
            let mut answered = Vec::new();
            loop {
                let line = tokio::time::timeout(Duration::from_secs(10), lines.next_line()).await;
                let line = line.map_err(|_| TestCaseError::fail("no answer within 10 s"))?;
                let line = line.map_err(|e| TestCaseError::fail(e.to_string()))?;
                let line = line.ok_or_else(|| TestCaseError::fail("the server closed its output"))?;
                let answer: Value =
                    serde_json::from_str(&line).map_err(|e| TestCaseError::fail(format!("{e}: {line}")))?;
                if answer.get("method").is_some() {
                    continue; // a request or notification of the server's own
                }
                prop_assert_eq!(&answer["jsonrpc"], "2.0", "{}", line);
                prop_assert!(answer.get("id").is_some(), "{}", line);
                if answer["id"] == "last" {
                    break;
                }
                answered.push(answer["id"].clone());
            }
            for id in &expected {
                prop_assert!(answered.contains(id), "request {} got no answer: {:?}", id, answered);
            }
            Ok(())
        })
    });
}

/// One POST to an MCP HTTP endpoint: its status, the session it names, and the JSON-RPC
/// messages its body holds (a JSON body, or the data of an event stream).
#[cfg(feature = "mcp")]
async fn post_json_rpc(
    client: &reqwest::Client,
    url: &str,
    session: Option<&str>,
    body: String,
) -> Result<(u16, Option<String>, Vec<Value>), TestCaseError> {
    let mut request = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .body(body.clone());
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    let response = request.send().await.map_err(|e| TestCaseError::fail(format!("{body}: no answer: {e}")))?;
    let status = response.status().as_u16();
    let session = response.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let json = response.headers().get("content-type").is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    let text = response.text().await.map_err(|e| TestCaseError::fail(format!("{body}: the answer broke: {e}")))?;
    let parse = |t: &str| serde_json::from_str::<Value>(t).map_err(|e| TestCaseError::fail(format!("{e}: {t}")));
    let messages = if json {
        vec![parse(&text)?]
    } else {
        let data = text.lines().filter_map(|l| l.strip_prefix("data:")).map(str::trim).filter(|d| !d.is_empty());
        data.map(parse).collect::<Result<_, _>>()?
    };
    Ok((status, session, messages))
}

#[cfg(feature = "mcp")]
#[test]
fn any_json_rpc_a_client_posts_is_answered_over_http_and_the_server_keeps_serving() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let url = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        tokio::spawn(calc_service().serve_http(listener));
        url
    });
    let client = reqwest::Client::builder().timeout(std::time::Duration::from_secs(10)).build().unwrap();
    // One server for every case: each case is a session of its own, and the server must
    // still serve the next.
    check_property("mcp json-rpc over http", json_rpc_messages(), |messages| {
        runtime.block_on(async {
            let (status, session, _) = post_json_rpc(&client, &url, None, MCP_HELLO.to_owned()).await?;
            prop_assert_eq!(status, 200);
            let session = session.ok_or_else(|| TestCaseError::fail("initialize named no session"))?;
            let id = session.as_str();
            let session = Some(id);
            let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
            prop_assert_eq!(post_json_rpc(&client, &url, session, initialized).await?.0, 202);
            for (i, message) in messages.into_iter().enumerate() {
                let (line, id) = json_rpc_line(i, message);
                let (status, _, answers) = post_json_rpc(&client, &url, session, line.clone()).await?;
                prop_assert!(status < 500, "{}: status {}", line, status);
                // An error status carries a JSON-RPC error, if anything: with an id, `null` when
                // the request's cannot be read.
                for answer in &answers {
                    prop_assert_eq!(&answer["jsonrpc"], "2.0", "{}: {}", line, answer);
                    prop_assert!(answer.get("id").is_some() || answer.get("method").is_some(), "{}: {}", line, answer);
                }
                if let (Some(id), 200) = (id, status) {
                    prop_assert!(answers.iter().any(|a| a["id"] == id), "{}: {:?}", line, answers);
                }
            }
            let last = json!({"jsonrpc": "2.0", "id": "last", "method": "ping"}).to_string();
            let (status, _, answers) = post_json_rpc(&client, &url, session, last).await?;
            prop_assert_eq!(status, 200);
            prop_assert!(answers.iter().any(|a| a["id"] == "last"), "{:?}", answers);
            drop(client.delete(&url).header("mcp-session-id", id).send().await);
            Ok(())
        })
    });
}

/// The events `chunks` give, parsed with a `limit` on the bytes read.
#[cfg(feature = "providers")]
fn sse_events(chunks: Vec<Vec<u8>>, limit: usize) -> Vec<Result<(String, String), starweaver::provider::SseError>> {
    use futures::StreamExt;
    let chunks = futures::stream::iter(chunks.into_iter().map(|c| Ok::<_, std::convert::Infallible>(c.into())));
    block_on(starweaver::provider::parse_sse(chunks, limit).map(|e| e.map(|e| (e.event, e.data))).collect())
}

/// `body` cut at `cuts` (taken modulo its length, in order).
#[cfg(feature = "providers")]
fn cut(body: &[u8], cuts: Vec<usize>) -> Vec<Vec<u8>> {
    let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c % (body.len() + 1)).collect();
    cuts.sort_unstable();
    let mut from = 0;
    let mut chunks = Vec::new();
    for at in cuts.into_iter().chain([body.len()]) {
        chunks.push(body[from..at].to_vec());
        from = at;
    }
    chunks
}

#[cfg(feature = "providers")]
#[test]
fn any_sse_body_gives_its_events_however_it_is_cut_and_whatever_its_line_endings() {
    use starweaver::provider::SseError;
    // Events of one or more data lines, some named, with comments between them.
    let event = (
        prop::option::of("[a-z_]{1,8}"),
        prop::collection::vec("[a-zA-Z0-9{}\":,\\[\\]][a-zA-Z0-9{}\":,\\[\\] ]{0,11}", 1..4),
        any::<bool>(),
    );
    let ending = prop_oneof![Just("\n"), Just("\r\n"), Just("\r")];
    let cuts = prop::collection::vec(any::<usize>(), 0..16);
    let limit = prop_oneof![3 => Just(usize::MAX), 1 => 0usize..400];
    check_property(
        "sse framing",
        (prop::collection::vec(event, 0..6), ending, cuts, limit),
        |(events, ending, cuts, limit)| {
            let mut body = String::new();
            let mut expected = Vec::new();
            for (name, lines, comment) in events {
                if comment {
                    body.push_str(": keep-alive\n");
                }
                if let Some(name) = &name {
                    writeln!(body, "event: {name}").unwrap();
                }
                for line in &lines {
                    writeln!(body, "data: {line}").unwrap();
                }
                body.push('\n');
                expected.push((name.unwrap_or_else(|| "message".into()), lines.join("\n")));
            }
            let body = body.replace('\n', ending).into_bytes();
            let got = sse_events(cut(&body, cuts), limit);
            if body.len() <= limit {
                prop_assert_eq!(got, expected.into_iter().map(Ok).collect::<Vec<_>>());
            } else {
                // Past the limit: the events read so far, then the named error, then nothing.
                prop_assert_eq!(got.last(), Some(&Err(SseError::TooLarge)));
                let read: Vec<(String, String)> = got[..got.len() - 1].iter().flatten().cloned().collect();
                prop_assert_eq!(read.len(), got.len() - 1, "an error before the end: {:?}", got);
                prop_assert!(expected.starts_with(&read), "{:?} is not a prefix of {:?}", read, expected);
            }
            Ok(())
        },
    );
    check_property(
        "sse bytes",
        (prop::collection::vec(prop::collection::vec(any::<u8>(), 0..64), 0..8), 0usize..512),
        |(chunks, limit)| {
            let size: usize = chunks.iter().map(Vec::len).sum();
            let got = sse_events(chunks, limit);
            for error in got.iter().filter_map(|e| e.as_ref().err()) {
                prop_assert!(!error.to_string().is_empty());
            }
            // Nothing follows an error; a body past the limit ends in one.
            prop_assert!(got.iter().rev().skip(1).all(Result::is_ok), "{:?}", got);
            if size > limit {
                prop_assert!(matches!(got.last(), Some(Err(_))), "{} bytes past a limit of {}: {:?}", size, limit, got);
            }
            Ok(())
        },
    );
}

#[cfg(feature = "providers")]
#[test]
fn any_retry_after_value_is_a_wait_a_duration_holds_or_no_wish() {
    use reqwest::header::{HeaderMap, HeaderValue};
    use std::time::Duration;
    let text = prop_oneof![
        any::<f64>().prop_map(|f| f.to_string()),
        any::<f64>().prop_map(|f| format!("{f:e}")),
        any::<u32>().prop_map(|n| n.to_string()),
        "[0-9eE.+-]{0,24}",
        "(inf|-inf|NaN|infinity)",
        ".{0,24}",
    ];
    check_property("retry-after", (text, any::<bool>()), |(text, ms)| {
        let Ok(value) = HeaderValue::from_str(&text) else { return Ok(()) };
        let (name, scale) = if ms { ("retry-after-ms", 1000.0) } else { ("retry-after", 1.0) };
        let mut headers = HeaderMap::new();
        headers.insert(name, value);
        let wait = starweaver::provider::retry_after(&headers);
        match text.trim().parse::<f64>() {
            Ok(seconds) if seconds.is_finite() && (0.0..=1e9).contains(&seconds) => {
                let wait = wait.ok_or_else(|| TestCaseError::fail(format!("{name}: {text} is a wait")))?;
                let asked = seconds / scale;
                prop_assert!(
                    (wait.as_secs_f64() - asked).abs() <= 1e-6 * asked.max(1.0),
                    "{}: {} gave {:?}",
                    name,
                    text,
                    wait
                );
            }
            // Negative, infinite, not a number, or past what a `Duration` holds: no wish.
            Ok(seconds) if !seconds.is_finite() || seconds < 0.0 || seconds / scale > Duration::MAX.as_secs_f64() => {
                prop_assert_eq!(wait, None, "{}: {}", name, text);
            }
            Ok(_) => {}
            Err(_) => prop_assert_eq!(wait, None, "{}: {}", name, text),
        }
        Ok(())
    });
}
