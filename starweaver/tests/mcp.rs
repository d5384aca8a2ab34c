//! DESIGN.md §14 in Rust: our MCP client against rmcp servers over streamable HTTP, one of
//! them our own `McpService`, the other a hand-written rmcp handler whose tool list changes.
#![cfg(feature = "mcp")]
// Test code: helpers outside `#[test]` fns unwrap and index too; a panic fails the test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use rmcp::ErrorData;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult, PaginatedRequestParams,
    ResourceContents, ServerCapabilities, ServerConfig, Tool as RmcpTool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{Value, json};
use starweaver::mcp::{McpServer, McpService};
use starweaver::testing::TestModel;
use starweaver::tool::{ElicitAnswer, Elicitation};
use starweaver::{Agent, EventKind, ModelResponse, RunStatus, StaticToolset, ToolBuilder, ToolContext, ToolError};

/// Our service on a loopback port, serving until the test ends; its URL.
async fn serve(service: McpService) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(service.serve_http(listener));
    url
}

fn calculator() -> StaticToolset {
    StaticToolset::new("calculator")
        .tool(
            ToolBuilder::new("add")
                .description("Add two integers.")
                .handler(|_: ToolContext, args: Args| async move {
                    Ok(json!(args["left"].as_i64().unwrap_or(0) + args["right"].as_i64().unwrap_or(0)))
                })
                .unwrap(),
        )
        .tool(
            ToolBuilder::new("refuse")
                .description("Always fails.")
                .handler(|_: ToolContext, _: Args| async move {
                    Err::<Value, _>(ToolError::user_error("the vault is locked"))
                })
                .unwrap(),
        )
        .tool(
            ToolBuilder::new("wipe")
                .description("Needs a human.")
                .handler(|_: ToolContext, _: Args| async move { Ok(json!("wiped")) })
                .unwrap(),
        )
}

#[tokio::test]
async fn an_agent_uses_our_served_tools_through_our_client() {
    let service = McpService::builder("calculator").toolset(calculator()).approval_required_tools(["wipe"]).build();
    let url = serve(service.unwrap()).await;
    let model = Arc::new(TestModel::new([
        TestModel::tool_call_response([
            call("c1", "calc_add", json!({"left": 2, "right": 3})),
            call("c2", "calc_refuse", json!({})),
            call("c3", "calc_wipe", json!({})),
        ]),
        ModelResponse::text("done"),
    ]));
    let server = McpServer::http("calc", url);
    let agent = Agent::builder(model.clone()).toolset(starweaver::Toolset::prefixed(server, "calc_")).build().unwrap();
    let result = agent.run("go").await.unwrap();
    assert_eq!(result.status, RunStatus::Completed);
    let listed: Vec<String> = model.requests()[0].tools.iter().map(|t| t.name.clone()).collect();
    assert_eq!(listed, ["calc_add", "calc_refuse", "calc_wipe"]);
    let returns = tool_returns(result.messages.messages());
    // MCP carries a non-object value as text.
    assert_eq!(returns[0].content, json!("5"));
    let refused = returns[1].content["message"].as_str().unwrap_or_default();
    assert!(returns[1].is_error && refused.starts_with("the vault is locked"), "{refused}");
    // Our client offers no elicitation, so the served tool says what it needs.
    let wipe = returns[2].content["message"].as_str().unwrap_or_default();
    assert!(returns[2].is_error && wipe.starts_with("approval is required"), "{wipe}");
}

/// Tools with return schemas: an object (`forecast`), a value MCP wraps (`count`), a value
/// longer than its return-size limit (`rows`), a value behind `model_content` (`summary`),
/// and a value that breaks its own schema (`broken`).
fn typed() -> StaticToolset {
    let forecast = json!({
        "type": "object",
        "properties": {"city": {"type": "string"}, "celsius": {"type": "number"}},
        "required": ["city", "celsius"],
    });
    let rows = json!({"type": "object", "properties": {"rows": {"type": "array", "items": {"type": "integer"}}}});
    StaticToolset::new("typed")
        .tool(
            ToolBuilder::new("forecast")
                .return_schema(forecast)
                .handler(|_: ToolContext, _: Args| async move { Ok(json!({"city": "Oslo", "celsius": 21.5})) })
                .unwrap(),
        )
        .tool(
            ToolBuilder::new("count")
                .return_schema(json!({"type": "integer"}))
                .handler(|_: ToolContext, args: Args| async move { Ok(args.len()) })
                .unwrap(),
        )
        .tool(
            ToolBuilder::new("rows")
                .return_schema(rows.clone())
                .max_return_chars(8)
                .handler(|_: ToolContext, _: Args| async move { Ok(json!({"rows": [1, 2, 3, 4, 5, 6]})) })
                .unwrap(),
        )
        .tool(
            ToolBuilder::new("summary")
                .return_schema(rows.clone())
                .handler(|_: ToolContext, _: Args| async move {
                    Ok(starweaver::ToolResult::new(json!({"rows": [7], "secret": "s3cr3t"}))
                        .with_model_content(json!({"rows": [1, 2]})))
                })
                .unwrap(),
        )
        .tool(
            ToolBuilder::new("broken")
                .return_schema(rows)
                .handler(|_: ToolContext, _: Args| async move { Ok(json!({"rows": [1, "two"]})) })
                .unwrap(),
        )
}

#[tokio::test]
async fn return_schemas_are_served_as_output_schemas_with_checked_structured_content_and_read_back() {
    let url = serve(McpService::builder("typed").toolset(typed()).build().unwrap()).await;
    let model = Arc::new(TestModel::new([
        TestModel::tool_call_response([
            call("c1", "forecast", json!({})),
            call("c2", "count", json!({"a": 1, "b": 2})),
            call("c3", "broken", json!({})),
            call("c4", "rows", json!({})),
        ]),
        ModelResponse::text("done"),
    ]));
    let agent = Agent::builder(model.clone()).toolset(McpServer::http("typed", url)).build().unwrap();
    let result = agent.run("go").await.unwrap();
    let listed = &model.requests()[0].tools;
    // Our client reads each `outputSchema` back: an object one as it is, a wrapped one wrapped.
    assert_eq!(listed[0].return_schema.as_ref().unwrap()["required"], json!(["city", "celsius"]));
    assert_eq!(
        listed[1].return_schema,
        Some(json!({"type": "object", "properties": {"result": {"type": "integer"}}, "required": ["result"]}))
    );
    let returns = tool_returns(result.messages.messages());
    // A server's `structuredContent` is what the model sees, as from any MCP server.
    assert_eq!(returns[0].content, json!({"city": "Oslo", "celsius": 21.5}));
    assert_eq!(returns[1].content, json!({"result": 2}));
    let message = returns[2].content["message"].as_str().unwrap_or_default();
    assert!(returns[2].is_error, "{message}");
    assert!(message.starts_with("the tool's return value does not match its return schema at `/rows/1`"), "{message}");
    // A value cut for the model still follows its schema as `structuredContent`.
    assert_eq!((returns[3].is_error, returns[3].content.clone()), (false, json!({"rows": [1, 2, 3, 4, 5, 6]})));
}

#[tokio::test]
async fn a_served_tools_structured_content_is_its_cut_value_whole_but_never_what_it_kept_host_only() {
    let service = McpService::builder("typed").toolset(typed()).build().unwrap();
    let mut client = RawClient::serve(service);
    client.initialize().await;
    let result = client.request(2, "tools/call", json!({"name": "rows", "arguments": {}})).await;
    assert_eq!(result["isError"], json!(false), "{result}");
    assert_eq!(result["structuredContent"], json!({"rows": [1, 2, 3, 4, 5, 6]}));
    assert_eq!(result["content"][0]["text"], json!("{\"rows\":… [14 more characters cut]"));
    // What a tool kept host-only behind `model_content` is not served.
    let result = client.request(3, "tools/call", json!({"name": "summary", "arguments": {}})).await;
    assert_eq!(result["structuredContent"], json!({"rows": [1, 2]}), "{result}");
    assert!(!result.to_string().contains("s3cr3t"), "{result}");
}

/// The canonical JSON of an image, audio, a resource link and a text and a blob resource.
fn media_parts() -> Value {
    json!([
        {"kind": "text", "text": "a picture"},
        {"kind": "image", "data": "iVBORw==", "media_type": "image/png"},
        {"kind": "audio", "data": "UklGRg==", "media_type": "audio/wav"},
        {"kind": "resource_link", "uri": "file:///a.txt", "name": "a"},
        {"kind": "resource", "uri": "file:///b.txt", "media_type": "text/plain", "text": "bee"},
        {"kind": "resource", "uri": "file:///c.bin", "media_type": "application/octet-stream", "blob": "AAE="},
    ])
}

#[tokio::test]
async fn content_parts_cross_mcp_both_ways_as_the_blocks_of_their_kinds() {
    // Our tool returns parts; our service sends them as MCP blocks; our client reads them back.
    let media = ToolBuilder::new("media")
        .description("Returns every kind of content.")
        .handler(|_: ToolContext, _: Args| async move {
            let parts: Vec<starweaver::content::Part> = serde_json::from_value(media_parts()).unwrap();
            Ok(starweaver::ToolResult::from(parts))
        })
        .unwrap();
    let service = McpService::builder("media").toolset(StaticToolset::new("media").tool(media)).build().unwrap();
    let ours = serve(service).await;
    // An rmcp server's blocks of every kind become parts too.
    let (theirs, _server) = serve_rmcp(Growing::default());
    for url in [ours, theirs] {
        let model = Arc::new(TestModel::new([
            TestModel::tool_call_response([call("c1", "media", json!({}))]),
            ModelResponse::text("done"),
        ]));
        let server = McpServer::http("media", url.clone());
        let agent = Agent::builder(model).toolset(server).build().unwrap();
        let result = agent.run("go").await.unwrap();
        let returns = tool_returns(result.messages.messages());
        assert_eq!(returns[0].content, media_parts(), "{url}");
    }
}

/// An rmcp server whose `grow` tool adds a tool and tells the client its list changed.
#[derive(Clone, Default)]
struct Growing {
    extra: Arc<Mutex<Vec<String>>>,
}

fn rmcp_tool(name: &str) -> RmcpTool {
    let schema = json!({"type": "object", "properties": {}});
    RmcpTool::new_with_raw(
        name.to_owned(),
        Some(format!("The {name} tool.").into()),
        schema.as_object().unwrap().clone(),
    )
}

impl rmcp::ServerHandler for Growing {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_tool_list_changed().build())
            .with_instructions("Call `grow` before any grown tool.")
    }

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut tools = vec![rmcp_tool("grow"), rmcp_tool("nap"), rmcp_tool("media")];
        tools.extend(self.extra.lock().unwrap().iter().map(|name| rmcp_tool(name)));
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let text = match request.name.as_ref() {
            "grow" => {
                let name = format!("grown_{}", self.extra.lock().unwrap().len() + 1);
                self.extra.lock().unwrap().push(name.clone());
                context
                    .peer
                    .notify_tool_list_changed()
                    .await
                    .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                name
            }
            "nap" => {
                tokio::time::sleep(Duration::from_secs(30)).await;
                "rested".to_owned()
            }
            "whoami" => {
                let client = context.peer.peer_info().ok_or_else(|| ErrorData::internal_error("no client", None))?;
                format!("{} {} {}", client.client_info.name, client.client_info.version, client.protocol_version)
            }
            "media" => {
                let link = rmcp::model::Resource::new("file:///a.txt", "a");
                let blob = ResourceContents::blob("AAE=", "file:///c.bin").with_mime_type("application/octet-stream");
                return Ok(CallToolResponse::Complete(CallToolResult::success(vec![
                    ContentBlock::text("a picture"),
                    ContentBlock::image("iVBORw==", "image/png"),
                    ContentBlock::audio("UklGRg==", "audio/wav"),
                    ContentBlock::resource_link(link),
                    ContentBlock::embedded_text("file:///b.txt", "bee"),
                    ContentBlock::resource(blob),
                ])));
            }
            other => format!("{other} ran"),
        };
        Ok(CallToolResponse::Complete(CallToolResult::success(vec![ContentBlock::text(text)])))
    }
}

/// Serves `handler` on a loopback port, on a runtime of its own so that stopping it closes
/// every connection at once, as a crashed server would; the URL and the stop switch.
fn serve_rmcp(handler: Growing) -> (String, Stop) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    (url, serve_rmcp_on(listener, handler))
}

/// Dropping it stops the server.
struct Stop(Option<tokio::sync::oneshot::Sender<()>>);

impl Drop for Stop {
    fn drop(&mut self) {
        self.0.take().map(|stop| stop.send(()));
    }
}

fn serve_rmcp_on(listener: std::net::TcpListener, handler: Growing) -> Stop {
    let (stop, stopped) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        runtime.block_on(async move {
            listener.set_nonblocking(true).unwrap();
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            let service = StreamableHttpService::new(
                move || Ok(handler.clone()),
                Arc::new(LocalSessionManager::default()),
                StreamableHttpServerConfig::default(),
            );
            tokio::spawn(axum::serve(listener, axum::Router::new().nest_service("/mcp", service)).into_future());
            drop(stopped.await);
        });
        runtime.shutdown_background();
    });
    Stop(Some(stop))
}

#[tokio::test]
async fn a_changed_tool_list_is_seen_at_the_next_step() {
    let (url, _server) = serve_rmcp(Growing::default());
    let model = Arc::new(TestModel::new([
        TestModel::tool_call_response([call("c1", "grow", json!({}))]),
        TestModel::tool_call_response([call("c2", "grown_1", json!({}))]),
        ModelResponse::text("done"),
    ]));
    let agent = Agent::builder(model.clone()).toolset(McpServer::http("growing", url)).build().unwrap();
    let result = agent.run("go").await.unwrap();
    let listed =
        |request: usize| -> Vec<String> { model.requests()[request].tools.iter().map(|t| t.name.clone()).collect() };
    assert_eq!(listed(0), ["grow", "nap", "media"]);
    assert_eq!(listed(1), ["grow", "nap", "media", "grown_1"]);
    let returns = tool_returns(result.messages.messages());
    assert_eq!((returns[0].content.clone(), returns[1].content.clone()), (json!("grown_1"), json!("grown_1 ran")));
}

#[tokio::test]
async fn a_servers_instructions_are_sent_with_the_agents_while_its_tools_are_offered() {
    let (url, _server) = serve_rmcp(Growing::default());
    let model = calls_then_text(vec![call("c1", "nap_not", json!({}))], "done");
    let server = McpServer::http("growing", url.clone());
    assert_eq!(starweaver::Toolset::instructions(&server), None, "known once the server has started");
    let agent = Agent::builder(model.clone()).instructions("Be brief.").toolset(server).build().unwrap();
    agent.run("go").await.unwrap();
    let sent: Vec<Vec<String>> =
        model.requests().iter().map(|r| r.toolset_instructions.iter().map(ToString::to_string).collect()).collect();
    assert_eq!(sent, [["Call `grow` before any grown tool."], ["Call `grow` before any grown tool."]]);
    // Turned off, the server's instructions are not sent.
    let model = calls_then_text(vec![], "done");
    let quiet = McpServer::http("growing", url).use_instructions(false);
    Agent::builder(model.clone()).toolset(quiet).build().unwrap().run("go").await.unwrap();
    assert!(model.requests()[0].toolset_instructions.is_empty());
}

#[tokio::test]
async fn a_server_that_goes_away_mid_call_is_a_named_error_and_comes_back_on_next_use() {
    let handler = Growing::default();
    let (url, running) = serve_rmcp(handler.clone());
    let address = url.trim_start_matches("http://").trim_end_matches("/mcp").to_owned();
    let server = McpServer::http("sleepy", url);
    let agent = |call: starweaver::ToolCallPart| {
        let model = TestModel::new([TestModel::tool_call_response([call]), ModelResponse::text("done")]);
        Agent::builder(Arc::new(model)).toolset(server.clone()).build().unwrap()
    };
    let napping = agent(call("c1", "nap", json!({})));
    let run = tokio::spawn(async move { napping.run("nap").await });
    tokio::time::sleep(Duration::from_millis(500)).await;
    drop(running);
    let result = run.await.unwrap().unwrap();
    let returns = tool_returns(result.messages.messages());
    let message = returns[0].content["message"].as_str().unwrap_or_default().to_owned();
    assert!(returns[0].is_error && message.contains("MCP server `sleepy`"), "{message}");

    // The same address serves again; the next run reconnects.
    let _again = serve_rmcp_on(std::net::TcpListener::bind(&address).unwrap(), handler);
    let again = agent(call("c2", "grow", json!({}))).run("grow").await.unwrap();
    let returns = tool_returns(again.messages.messages());
    assert_eq!((returns[0].is_error, returns[0].content.clone()), (false, json!("grown_1")));
}

/// Our service over a byte stream, as stdio carries it: lines in, lines out.
struct RawClient {
    lines: tokio::io::Lines<tokio::io::BufReader<Box<dyn tokio::io::AsyncRead + Unpin + Send>>>,
    writer: Box<dyn tokio::io::AsyncWrite + Unpin + Send>,
}

impl RawClient {
    /// The service over an in-memory stream.
    fn serve(service: McpService) -> Self {
        let (client, server) = tokio::io::duplex(1 << 16);
        let (server_read, server_write) = tokio::io::split(server);
        tokio::spawn(service.serve_io(server_read, server_write));
        let (read, writer) = tokio::io::split(client);
        Self::new(read, writer)
    }

    fn new(
        read: impl tokio::io::AsyncRead + Unpin + Send + 'static,
        write: impl tokio::io::AsyncWrite + Unpin + Send + 'static,
    ) -> Self {
        use tokio::io::AsyncBufReadExt;
        Self { lines: tokio::io::BufReader::new(Box::new(read) as Box<_>).lines(), writer: Box::new(write) }
    }

    async fn send(&mut self, line: &str) {
        use tokio::io::AsyncWriteExt;
        self.writer.write_all(line.as_bytes()).await.unwrap();
        self.writer.write_all(b"\n").await.unwrap();
    }

    /// The next message the service writes, which must be JSON.
    async fn answer(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(5), self.lines.next_line()).await;
        let line = line.expect("no answer within 5 s").unwrap().expect("the service closed its output");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    /// The handshake; the service's `initialize` result.
    async fn initialize(&mut self) -> Value {
        self.initialize_offering(json!({})).await
    }

    /// The handshake, offering `capabilities`; the service's `initialize` result.
    async fn initialize_offering(&mut self, capabilities: Value) -> Value {
        let params = json!({"protocolVersion": "2025-11-25", "capabilities": capabilities, "clientInfo": {"name": "raw", "version": "0"}});
        self.send(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}).to_string()).await;
        let result = self.answer().await["result"].take();
        assert_eq!(result["protocolVersion"], "2025-11-25");
        self.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;
        result
    }

    /// A request's answer: its `result`, or its `error`.
    async fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()).await;
        let answer = self.answer().await;
        assert_eq!(answer["id"], id, "{answer}");
        answer.get("result").or_else(|| answer.get("error")).cloned().unwrap()
    }
}

fn calculator_service() -> McpService {
    McpService::builder("calculator").toolset(calculator()).build().unwrap()
}

#[tokio::test]
async fn messages_before_initialize_are_answered_or_set_aside_and_the_session_goes_on() {
    let mut client = RawClient::serve(calculator_service());
    // A notification and a response first: nothing to answer, and no reason to stop.
    client.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;
    client.send(r#"{"jsonrpc":"2.0","id":99,"result":{}}"#).await;
    client.send(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#).await;
    let early = client.answer().await;
    assert_eq!(early["id"], 1);
    assert!(early["error"]["code"].is_i64(), "{early}");
    client.initialize().await;
    client.send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add","arguments":{"left":2,"right":3}}}"#).await;
    let added = client.answer().await;
    assert_eq!((added["id"].clone(), added["result"]["content"][0]["text"].clone()), (json!(2), json!("5")));
}

/// Whether `fd` is in non-blocking mode, from the flags Linux shows for it.
#[cfg(target_os = "linux")]
fn non_blocking(fd: &impl std::os::fd::AsRawFd) -> bool {
    let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{}", fd.as_raw_fd())).unwrap();
    let flags = info.lines().find_map(|line| line.strip_prefix("flags:")).unwrap().trim();
    u32::from_str_radix(flags, 8).unwrap() & 0o4000 != 0
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn stdio_served_on_pipes_or_sockets_goes_through_the_reactor_and_gives_them_back_blocking_and_a_file_is_served_too()
 {
    use std::os::fd::AsFd;
    use tokio::net::unix::pipe;
    let (server_in, client_out) = std::io::pipe().unwrap();
    let (client_in, server_out) = std::io::pipe().unwrap();
    // Copies are served, as `serve-mcp` serves copies of its fds 0 and 1: the mode belongs
    // to the open pipe, which the originals share.
    let copy = |fd: std::os::fd::BorrowedFd<'_>| fd.try_clone_to_owned().unwrap();
    let served = tokio::spawn(calculator_service().serve_fds(copy(server_in.as_fd()), copy(server_out.as_fd())));
    let read = pipe::Receiver::from_owned_fd(client_in.into()).unwrap();
    let mut client = RawClient::new(read, pipe::Sender::from_owned_fd(client_out.into()).unwrap());
    client.initialize().await;
    let added = client.request(2, "tools/call", json!({"name": "add", "arguments": {"left": 2, "right": 3}})).await;
    assert_eq!(added["content"][0]["text"], "5");
    assert!(non_blocking(&server_in) && non_blocking(&server_out), "served through the reactor");
    drop(client); // the client hangs up: serving ends
    served.await.unwrap().unwrap();
    assert!(!non_blocking(&server_in) && !non_blocking(&server_out), "given back blocking");

    // Socket pairs, which libuv (Node) gives a child for its stdio, likewise.
    let (server_end, client_end) = std::os::unix::net::UnixStream::pair().unwrap();
    let served = tokio::spawn(calculator_service().serve_fds(copy(server_end.as_fd()), copy(server_end.as_fd())));
    client_end.set_nonblocking(true).unwrap();
    let (read, write) = tokio::net::UnixStream::from_std(client_end).unwrap().into_split();
    let mut client = RawClient::new(read, write);
    client.initialize().await;
    assert_eq!(
        client.request(3, "tools/call", json!({"name": "add", "arguments": {"left": 1, "right": 1}})).await["content"]
            [0]["text"],
        "2"
    );
    assert!(non_blocking(&server_end), "served through the reactor");
    drop(client);
    served.await.unwrap().unwrap();
    assert!(!non_blocking(&server_end), "given back blocking");

    // A file read to its end: the handshake is answered, through the blocking pool.
    let dir = tempfile::tempdir().unwrap();
    let (requests, answers) = (dir.path().join("in"), dir.path().join("out"));
    let params =
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}});
    std::fs::write(
        &requests,
        format!("{}\n", json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params})),
    )
    .unwrap();
    let open = |path: &std::path::Path, write: bool| {
        std::fs::OpenOptions::new().read(!write).write(write).create(write).truncate(write).open(path).unwrap().into()
    };
    calculator_service().serve_fds(open(&requests, false), open(&answers, true)).await.unwrap();
    let answer: Value = serde_json::from_str(std::fs::read_to_string(&answers).unwrap().trim()).unwrap();
    assert_eq!((answer["id"].clone(), answer["result"]["serverInfo"]["name"].clone()), (json!(0), json!("calculator")));
}

#[tokio::test]
async fn malformed_requests_get_the_json_rpc_error_they_call_for_with_their_id_or_null() {
    let mut client = RawClient::serve(calculator_service());
    client.initialize().await;
    let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
    let cases = [
        ("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/li".to_owned(), json!(null), -32700),
        (r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":[1,2]}"#.to_owned(), json!(4), -32602),
        (
            r#"{"jsonrpc":"2.0","id":"5","method":"tools/call","params":{"name":"add","arguments":7}}"#.to_owned(),
            json!("5"),
            -32602,
        ),
        (
            format!(
                r#"{{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{{"name":"add","arguments":{{"left":{deep}}}}}}}"#
            ),
            json!(6),
            -32602,
        ),
        (r#"{"jsonrpc":"2.0","id":7}"#.to_owned(), json!(7), -32600),
        ("[1]".to_owned(), json!(null), -32600),
    ];
    for (line, id, code) in cases {
        client.send(&line).await;
        let answer = client.answer().await;
        assert_eq!(answer["jsonrpc"], "2.0", "{answer}");
        assert_eq!((answer["id"].clone(), answer["error"]["code"].as_i64()), (id, Some(code)), "{line:.80}: {answer}");
        assert!(answer.as_object().unwrap().contains_key("id"), "{answer}");
    }
    // A message past the size cap is refused without being held, and serving goes on.
    let huge = format!(r#"{{"jsonrpc":"2.0","id":8,"method":"ping","params":{{"pad":"{}"}}}}"#, "x".repeat(17 << 20));
    client.send(&huge).await;
    let refused = client.answer().await;
    assert_eq!((refused["id"].clone(), refused["error"]["code"].as_i64()), (json!(null), Some(-32600)));
    client.send(r#"{"jsonrpc":"2.0","id":18446744073709551616,"method":"ping"}"#).await;
    let big = client.answer().await;
    assert_eq!(big["error"]["code"], -32600, "{big}");
    client.send(r#"{"jsonrpc":"2.0","id":9,"method":"ping"}"#).await;
    assert_eq!(client.answer().await["id"], 9);
}

/// One raw HTTP/1.1 exchange: the status and the body.
async fn raw_http(address: &str, request: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = String::new();
    tokio::time::timeout(Duration::from_secs(5), stream.read_to_string(&mut answer)).await.unwrap().unwrap();
    let status = answer.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    (status, answer.split_once("\r\n\r\n").map(|(_, body)| body.to_owned()).unwrap_or_default())
}

fn post(target: &str, headers: &str, body: &str) -> String {
    format!(
        "POST {target} HTTP/1.1\r\n{headers}Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

#[tokio::test]
async fn http_refuses_foreign_origins_hosts_and_targets_and_answers_unreadable_bodies_in_json_rpc() {
    let url = serve(calculator_service()).await;
    let address = url.trim_start_matches("http://").trim_end_matches("/mcp").to_owned();
    let port: u16 = address.rsplit(':').next().unwrap().parse().unwrap();
    let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;
    let own = format!("Host: {address}\r\n");
    let (status, _) = raw_http(&address, &post("/mcp", &own, initialize)).await;
    assert_eq!(status, 200);
    let refused = [
        (post("/mcp", &format!("{own}Origin: http://evil.example\r\n"), initialize), 403),
        (post("/mcp", &format!("{own}Origin: http://127.0.0.1:{}\r\n", port.wrapping_add(1)), initialize), 403),
        (post("/mcp", &format!("Host: 127.0.0.1:{}\r\n", port.wrapping_add(1)), initialize), 403),
        (post("http://evil.example/mcp", &own, initialize), 400),
        (post("/mcp", &format!("{own}Host: evil.example\r\n"), initialize), 400),
    ];
    for (request, expected) in refused {
        let (status, body) = raw_http(&address, &request).await;
        assert_eq!(status, expected, "{request:.120}: {body}");
    }
    let (status, _) =
        raw_http(&address, &post("/mcp", &format!("{own}Origin: http://{address}\r\n"), initialize)).await;
    assert_eq!(status, 200);
    let (status, body) =
        raw_http(&address, &post("/mcp", &own, r#"{"jsonrpc":"2.0","id":18446744073709551616,"method":"ping"}"#)).await;
    assert_eq!(status, 400);
    assert!(body.contains(r#""id":18446744073709551616"#) && body.contains("-32600"), "{body}");
}

#[tokio::test]
async fn the_client_names_itself_and_offers_the_newest_revision_with_a_handshake() {
    let (url, _server) = serve_rmcp(Growing::default());
    let answer = McpServer::http("growing", url).call_tool("whoami", json!({})).await.unwrap();
    assert_eq!(answer, json!(format!("starweaver {} 2025-11-25", env!("CARGO_PKG_VERSION"))));
}

/// A tool that reports progress three times, then logs a notice.
fn reporter() -> McpService {
    let report = ToolBuilder::new("report")
        .description("Reports as it works.")
        .handler(|ctx: ToolContext, _: Args| async move {
            for done in [0.0, 50.0, 100.0] {
                ctx.report_progress(done, Some(100.0), Some("copying"))?;
            }
            ctx.log(starweaver::tool::LogLevel::Notice, "copied", Some(json!({"files": 3})));
            Ok(json!("ok"))
        })
        .unwrap();
    McpService::builder("reporter").tool(report).build().unwrap()
}

#[tokio::test]
async fn a_served_tools_progress_and_logs_become_events_of_the_clients_run() {
    let url = serve(reporter()).await;
    let agent = Agent::builder(calls_then_text(vec![call("c1", "report", json!({}))], "done"))
        .toolset(McpServer::http("reporter", url))
        .build()
        .unwrap();
    let mut stream = agent.run_stream("go");
    let live: Vec<_> = futures::StreamExt::collect::<Vec<_>>(&mut stream).await;
    let result = stream.result().await.unwrap();
    let progress: Vec<(f64, Option<f64>, Option<String>)> = live
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolProgress { tool_call_id, progress, total, message, .. } if &**tool_call_id == "c1" => {
                Some((*progress, *total, message.clone()))
            }
            _ => None,
        })
        .collect();
    let copying = Some("copying".to_owned());
    assert_eq!(
        progress,
        [(0.0, Some(100.0), copying.clone()), (50.0, Some(100.0), copying.clone()), (100.0, Some(100.0), copying)]
    );
    // Progress rides the call's own stream, so all of it comes before the return. (Over
    // HTTP, rmcp sends log messages on the session's standalone stream, which keeps no
    // order with the call's: the stdio test below checks them.)
    let returned = result.events.iter().position(|e| matches!(e.kind, EventKind::ToolReturn(_))).unwrap();
    let reported = result.events.iter().position(|e| matches!(e.kind, EventKind::ToolProgress { .. })).unwrap();
    assert!(reported < returned);
}

#[tokio::test]
async fn served_progress_goes_only_under_the_clients_token_and_logs_respect_its_level_all_before_the_answer() {
    let mut client = RawClient::serve(reporter());
    client.initialize().await;
    client
        .send(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"report","arguments":{},"_meta":{"progressToken":"p1"}}}"#)
        .await;
    for done in [0.0, 50.0, 100.0] {
        let note = client.answer().await;
        assert_eq!(note["method"], "notifications/progress", "{note}");
        assert_eq!(
            note["params"],
            json!({"progressToken": "p1", "progress": done, "total": 100.0, "message": "copying"})
        );
    }
    let log = client.answer().await;
    assert_eq!(log["method"], "notifications/message", "{log}");
    assert_eq!(
        log["params"],
        json!({"level": "notice", "logger": "report", "data": {"message": "copied", "data": {"files": 3}}})
    );
    assert_eq!(client.answer().await["id"], 1);
    client.send(r#"{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"warning"}}"#).await;
    assert_eq!(client.answer().await, json!({"jsonrpc": "2.0", "id": 2, "result": {}}));
    // No token, so no progress; a notice is below the level the client set.
    client.send(r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"report","arguments":{}}}"#).await;
    let answer = client.answer().await;
    assert_eq!(answer["id"], 3, "{answer}");
    assert_eq!(answer["result"]["content"][0]["text"], "ok");
}

/// A tool that asks the client for a name, then for a haiku about it.
fn asker() -> McpService {
    let ask = ToolBuilder::new("ask")
        .description("Asks the user, then a model.")
        .handler(|ctx: ToolContext, _: Args| async move {
            let schema = json!({"type": "object", "properties": {"name": {"type": "string", "default": "Ada"}}});
            let name = match ctx.elicit("Whose haiku?", schema).await? {
                starweaver::tool::ElicitAnswer::Accept { content } => {
                    content["name"].as_str().unwrap_or("?").to_owned()
                }
                other => return Ok(json!(format!("no haiku: {other:?}"))),
            };
            let sampled = ctx.sample(starweaver::tool::Sampling::prompt(format!("A haiku about {name}"), 60)).await?;
            Ok(json!(format!("{name}: {} ({})", sampled.text, sampled.model.unwrap_or_default())))
        })
        .unwrap();
    McpService::builder("asker").tool(ask).build().unwrap()
}

#[tokio::test]
async fn a_served_tool_asks_the_client_for_input_and_a_completion_with_its_own_message_and_schema() {
    let mut client = RawClient::serve(asker());
    client.initialize_offering(json!({"elicitation": {"form": {}}, "sampling": {}})).await;
    client.send(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask","arguments":{}}}"#).await;
    let elicit = client.answer().await;
    assert_eq!(elicit["method"], "elicitation/create", "{elicit}");
    assert_eq!(elicit["params"]["message"], "Whose haiku?");
    assert_eq!(elicit["params"]["requestedSchema"]["properties"]["name"], json!({"type": "string", "default": "Ada"}));
    let answer =
        json!({"jsonrpc": "2.0", "id": elicit["id"], "result": {"action": "accept", "content": {"name": "Grace"}}});
    client.send(&answer.to_string()).await;
    let sample = client.answer().await;
    assert_eq!(sample["method"], "sampling/createMessage", "{sample}");
    assert_eq!(
        sample["params"]["messages"],
        json!([{"role": "user", "content": {"type": "text", "text": "A haiku about Grace"}}])
    );
    assert_eq!(sample["params"]["maxTokens"], 60);
    let completion =
        json!({"role": "assistant", "content": {"type": "text", "text": "code that sails"}, "model": "m1"});
    client.send(&json!({"jsonrpc": "2.0", "id": sample["id"], "result": completion}).to_string()).await;
    let result = client.answer().await;
    assert_eq!(result["id"], 1, "{result}");
    assert_eq!(result["result"]["content"][0]["text"], "Grace: code that sails (m1)");
}

#[tokio::test]
async fn a_client_that_offers_no_elicitation_gets_an_error_result_naming_what_was_asked() {
    let mut client = RawClient::serve(asker());
    client.initialize().await;
    client.send(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask","arguments":{}}}"#).await;
    let result = client.answer().await;
    assert_eq!(result["result"]["isError"], true, "{result}");
    let text = result["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("tool `ask` asked the MCP client for input (elicitation), which the client does not offer"),
        "{text}"
    );
}

/// An agent whose model calls the asker's tool, answers its sampling, then ends.
fn asking_agent(url: &str, handler: Option<fn(&ToolContext, &Elicitation) -> Answered>) -> (Agent, Arc<TestModel>) {
    let model = Arc::new(TestModel::new([
        TestModel::tool_call_response([starweaver::ToolCallPart::new("c1", "ask", json!({}))]),
        ModelResponse::text("code that sails"),
        ModelResponse::text("done"),
    ]));
    let mut builder = Agent::builder(model.clone()).toolset(McpServer::http("asker", url));
    if let Some(handler) = handler {
        builder = builder.elicitation_handler(handler);
    }
    (builder.build().unwrap(), model)
}

type Answered = std::future::Ready<Result<ElicitAnswer, ToolError>>;

fn accept_as_is(_: &ToolContext, _: &Elicitation) -> Answered {
    std::future::ready(Ok(ElicitAnswer::Accept { content: serde_json::Map::new() }))
}

#[tokio::test]
async fn a_servers_questions_in_a_run_go_to_the_agents_handler_with_defaults_filled_and_to_its_model() {
    let url = serve(asker()).await;
    let (agent, model) = asking_agent(&url, Some(accept_as_is));
    let result = agent.run("a haiku").await.unwrap();
    assert_eq!(result.status, RunStatus::Completed);
    let returned = &result.messages.messages()[2].tool_returns().next().unwrap().content;
    assert_eq!(returned, &json!("Ada: code that sails ()"), "the default name, and the agent's model's text");
    assert!(model.requests()[1].tools.is_empty(), "the model is asked for the completion without tools");
}

#[tokio::test]
async fn without_a_handler_a_servers_question_waits_in_the_run_and_the_tool_is_called_again_with_the_answer() {
    let url = serve(asker()).await;
    let (agent, _) = asking_agent(&url, None);
    let mut session = agent.session();
    let waiting = session.run("a haiku").await.unwrap();
    assert_eq!(waiting.status, RunStatus::Waiting);
    let asked = &waiting.hitl.elicitations[0];
    assert_eq!((asked.tool_name.as_str(), asked.message.as_str()), ("ask", "Whose haiku?"));
    assert_eq!(asked.schema["properties"]["name"]["default"], "Ada");
    let Value::Object(grace) = json!({"name": "Grace"}) else { unreachable!() };
    let done = session.resume(vec![asked.accept(grace)]).await.unwrap();
    assert_eq!(done.status, RunStatus::Completed);
    let returns: Vec<Value> =
        done.messages.messages().iter().flat_map(|m| m.tool_returns()).map(|r| r.content.clone()).collect();
    assert_eq!(returns, [json!("Grace: code that sails ()")], "one return: the call made again with the answer");
}

#[tokio::test]
async fn a_servers_own_handlers_answer_first_and_a_direct_call_without_them_is_told_nobody_can() {
    let url = serve(asker()).await;
    let declining = McpServer::http("asker", url.clone()).elicitation_handler(|ctx: &ToolContext, _: &Elicitation| {
        assert_eq!(ctx.tool_name(), "ask");
        std::future::ready(Ok::<_, ToolError>(ElicitAnswer::Decline))
    });
    assert_eq!(declining.call_tool("ask", json!({})).await.unwrap(), json!("no haiku: Decline"));
    let answering = McpServer::http("asker", url.clone()).elicitation_handler(accept_as_is).sampling_handler(
        |_: &ToolContext, request: &starweaver::tool::Sampling| {
            let text = format!("{} ({} tokens)", request.messages[0].text, request.max_tokens);
            let sampled = starweaver::tool::Sampled { text, model: Some("canned".into()), stop_reason: None };
            std::future::ready(Ok::<_, ToolError>(sampled))
        },
    );
    let answered = answering.call_tool("ask", json!({})).await.unwrap();
    assert_eq!(answered, json!("Ada: A haiku about Ada (60 tokens) (canned)"));
    let err = McpServer::http("asker", url).call_tool("ask", json!({})).await.unwrap_err();
    assert!(err.message().contains("outside any run, and the server has no handler to answer"), "{err}");
}

/// Resources, a template and prompts, written with the builders: what the resource, prompt
/// and completion tests serve.
fn library() -> McpService {
    use starweaver::content::{Image, Resource, Text};
    use starweaver::mcp::{McpPrompt, McpResource, McpResourceTemplate, PromptArgument, PromptMessage};

    let today = McpResource::new("notes://today", "today", |_| async { Ok::<_, ToolError>([Text::new("# Today")]) })
        .description("Today's notes")
        .mime_type("text/markdown");
    let logo = McpResource::new("notes://logo", "logo", |_| async {
        Ok::<_, ToolError>([Image::data(b"\x89PNG".to_vec(), "image/png")])
    });
    let broken = McpResource::new("notes://broken", "broken", |_| async {
        Err::<[Text; 1], _>(ToolError::execution("the disk is on fire"))
    });
    let line = McpResourceTemplate::new("notes://{day}/lines/{n}", "line", |request| async move {
        let (day, n) = (request.variable("day").unwrap_or_default(), request.variable("n").unwrap_or_default());
        if day == "someday" {
            return Err(ToolError::new(starweaver::ToolErrorKind::NotFound, "no notes for someday"));
        }
        Ok([Text::new(format!("line {n} of {day}"))])
    })
    .complete("day", |typed| async move {
        Ok(["today", "tomorrow", "yesterday"]
            .into_iter()
            .filter(|d| d.starts_with(&typed.value))
            .map(String::from)
            .collect())
    });
    let review = McpPrompt::new("review", |request| async move {
        let code = request.argument("code").unwrap_or_default();
        Ok(vec![
            PromptMessage::user(Text::new(format!("Review this {}:", request.argument("language").unwrap_or("code")))),
            PromptMessage::user(Resource::text("file:///snippet", code)),
            PromptMessage::assistant(Image::data(b"\x89PNG".to_vec(), "image/png")),
        ])
    })
    .description("Asks for a code review")
    .argument(PromptArgument::required("code").description("The code"))
    .argument(PromptArgument::optional("language"))
    .complete("language", |typed| async move { Ok(vec![format!("{}thon", typed.value), "rust".to_owned()]) });
    let strict = McpPrompt::new("strict", |_| async { Err(ToolError::invalid_arguments("`depth` must be a number")) })
        .argument(PromptArgument::optional("depth"));
    McpService::builder("library")
        .resource(today)
        .resource(logo)
        .resource(broken)
        .resource_template(line)
        .prompt(review)
        .prompt(strict)
        .build()
        .unwrap()
}

#[tokio::test]
async fn capabilities_name_resources_prompts_and_completions_only_when_served() {
    let served = RawClient::serve(library()).initialize().await["capabilities"].take();
    assert_eq!(served["resources"], json!({"subscribe": true, "listChanged": false}));
    assert_eq!((served["prompts"].clone(), served["completions"].clone()), (json!({"listChanged": false}), json!({})));
    let tools_only = RawClient::serve(calculator_service()).initialize().await["capabilities"].take();
    assert!(["resources", "prompts", "completions"].iter().all(|c| tools_only.get(c).is_none()), "{tools_only}");
}

#[tokio::test]
async fn resources_and_templates_are_listed_and_read_and_a_missing_or_failing_one_is_an_error() {
    let mut client = RawClient::serve(library());
    client.initialize().await;
    let listed = client.request(1, "resources/list", json!({})).await;
    assert_eq!(
        listed["resources"][0],
        json!({"uri": "notes://today", "name": "today", "description": "Today's notes", "mimeType": "text/markdown"})
    );
    let templates = client.request(2, "resources/templates/list", json!({})).await;
    assert_eq!(templates["resourceTemplates"], json!([{"uriTemplate": "notes://{day}/lines/{n}", "name": "line"}]));
    let read = |uri: &str| json!({"uri": uri});
    let today = client.request(3, "resources/read", read("notes://today")).await;
    assert_eq!(today["contents"], json!([{"uri": "notes://today", "mimeType": "text/markdown", "text": "# Today"}]));
    let logo = client.request(4, "resources/read", read("notes://logo")).await;
    assert_eq!(logo["contents"], json!([{"uri": "notes://logo", "mimeType": "image/png", "blob": "iVBORw=="}]));
    let line = client.request(5, "resources/read", read("notes://today/lines/3")).await;
    assert_eq!(line["contents"][0]["text"], "line 3 of today");
    let missing = client.request(6, "resources/read", read("notes://nowhere/x")).await;
    assert_eq!(
        missing,
        json!({"code": -32002, "message": "no resource has the URI `notes://nowhere/x`", "data": {"uri": "notes://nowhere/x"}})
    );
    let someday = client.request(7, "resources/read", read("notes://someday/lines/1")).await;
    assert_eq!(someday["code"], -32002, "{someday}");
    let broken = client.request(8, "resources/read", read("notes://broken")).await;
    assert_eq!(broken, json!({"code": -32603, "message": "resource `notes://broken`: the disk is on fire"}));
    assert_eq!(client.request(9, "ping", json!({})).await, json!({}), "the service goes on");
}

#[tokio::test]
async fn prompts_are_listed_and_filled_and_a_missing_or_bad_argument_is_invalid_params_naming_it() {
    let mut client = RawClient::serve(library());
    client.initialize().await;
    let listed = client.request(1, "prompts/list", json!({})).await;
    assert_eq!(
        listed["prompts"][0],
        json!({"name": "review", "description": "Asks for a code review", "arguments": [
            {"name": "code", "description": "The code", "required": true},
            {"name": "language", "required": false},
        ]})
    );
    let filled = client.request(2, "prompts/get", json!({"name": "review", "arguments": {"code": "x = 1"}})).await;
    assert_eq!(
        filled,
        json!({"description": "Asks for a code review", "messages": [
            {"role": "user", "content": {"type": "text", "text": "Review this code:"}},
            {"role": "user", "content": {"type": "resource", "resource": {"uri": "file:///snippet", "text": "x = 1"}}},
            {"role": "assistant", "content": {"type": "image", "data": "iVBORw==", "mimeType": "image/png"}},
        ]})
    );
    let cases = [
        (json!({"name": "review"}), "prompt `review` needs the argument `code`"),
        (
            json!({"name": "review", "arguments": {"code": "x", "tone": "kind"}}),
            "prompt `review` has no argument `tone` (its arguments: `code`, `language`)",
        ),
        (
            json!({"name": "review", "arguments": {"code": 7}}),
            "argument `code` of prompt `review` must be a string, got 7",
        ),
        (json!({"name": "nope"}), "no prompt named `nope`"),
        (json!({"name": "strict", "arguments": {"depth": "deep"}}), "prompt `strict`: `depth` must be a number"),
    ];
    for (id, (params, message)) in (3..).zip(cases) {
        assert_eq!(client.request(id, "prompts/get", params).await, json!({"code": -32602, "message": message}));
    }
}

#[tokio::test]
async fn completions_come_from_each_arguments_completer_and_an_argument_without_one_completes_to_nothing() {
    let mut client = RawClient::serve(library());
    client.initialize().await;
    let complete = |reference: Value, name: &str, value: &str| json!({"ref": reference, "argument": {"name": name, "value": value}});
    let prompt = json!({"type": "ref/prompt", "name": "review"});
    let template = json!({"type": "ref/resource", "uri": "notes://{day}/lines/{n}"});
    let language = client.request(1, "completion/complete", complete(prompt.clone(), "language", "py")).await;
    assert_eq!(language["completion"], json!({"values": ["python", "rust"], "total": 2, "hasMore": false}));
    let day = client.request(2, "completion/complete", complete(template.clone(), "day", "to")).await;
    assert_eq!(day["completion"]["values"], json!(["today", "tomorrow"]));
    for (id, (reference, name)) in (3..).zip([(prompt, "code"), (template, "n")]) {
        let nothing = client.request(id, "completion/complete", complete(reference, name, "")).await;
        assert_eq!(nothing["completion"], json!({"values": [], "total": 0, "hasMore": false}));
    }
    let unknown = client
        .request(5, "completion/complete", complete(json!({"type": "ref/prompt", "name": "nope"}), "a", ""))
        .await;
    assert_eq!(unknown, json!({"code": -32602, "message": "no prompt named `nope`"}));
}

#[tokio::test]
async fn a_changed_resource_is_told_to_its_subscribers_only_until_they_unsubscribe() {
    let service = library();
    let handle = service.handle();
    let mut client = RawClient::serve(service);
    client.initialize().await;
    assert_eq!(client.request(1, "resources/subscribe", json!({"uri": "notes://today/lines/1"})).await, json!({}));
    let unknown = client.request(2, "resources/subscribe", json!({"uri": "elsewhere://x"})).await;
    assert_eq!(unknown["code"], -32002, "{unknown}");
    handle.resource_updated("notes://logo"); // not subscribed to: nothing is sent
    handle.resource_updated("notes://today/lines/1");
    let note = client.answer().await;
    assert_eq!(
        note,
        json!({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": "notes://today/lines/1"}})
    );
    assert_eq!(client.request(3, "resources/unsubscribe", json!({"uri": "notes://today/lines/1"})).await, json!({}));
    handle.resource_updated("notes://today/lines/1");
    assert_eq!(client.request(4, "ping", json!({})).await, json!({}), "no notification after unsubscribing");
}

#[tokio::test]
async fn our_client_speaks_the_stateless_revision_through_server_discover() {
    use starweaver::mcp::McpProtocol;
    let url = serve(McpService::builder("calculator").toolset(calculator()).build().unwrap()).await;
    // `Discover` never falls back to `initialize`: the call proves the revision was spoken.
    for protocol in [McpProtocol::Discover, McpProtocol::Auto, McpProtocol::Initialize] {
        let server = McpServer::http("calc", url.clone()).protocol(protocol);
        assert_eq!(server.call_tool("add", json!({"left": 2, "right": 5})).await.unwrap(), json!("7"), "{protocol:?}");
    }
}
