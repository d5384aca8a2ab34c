//! OAuth 2.1 for MCP servers over HTTP (DESIGN.md §21): our client against a loopback
//! authorization server and a protected rmcp server in one axum app, which records what
//! the client sent.
#![cfg(feature = "mcp")]
// Test code: helpers outside `#[test]` fns unwrap and index too; a panic fails the test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use rmcp::ErrorData;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig, Tool as RmcpTool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{Value, json};
use starweaver::mcp::{AuthorizationResponse, McpServer, OAuth};
use starweaver::store::{SqliteSessionStore, TokenStore};

/// What the protected server requires, and what it saw.
#[derive(Default)]
struct Auth {
    base: String,
    /// Scopes a `tools/call` needs beyond the ones any request needs (`read`).
    call_scopes: Vec<String>,
    /// Reject the first token issued once, as if revoked (a refresh must follow).
    revoke_first: bool,
    /// Token -> its scopes.
    tokens: HashMap<String, Vec<String>>,
    issued: usize,
    /// Every request to the authorization server: path and parameters.
    seen: Vec<(String, HashMap<String, String>)>,
    /// Every `Authorization` header the token endpoint received.
    token_auth: Vec<Option<String>>,
}

type Shared = Arc<Mutex<Auth>>;

fn challenge(auth: &Auth, status: StatusCode, scope: &str, error: Option<&str>) -> Response {
    let error = error.map(|e| format!(", error=\"{e}\"")).unwrap_or_default();
    let header = format!(
        "Bearer resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\", scope=\"{scope}\"{error}",
        auth.base
    );
    (status, [("www-authenticate", header)], "").into_response()
}

/// The resource server's check: a known token with the scopes the method needs.
async fn guard(State(auth): State<Shared>, request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let (parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, 1 << 20).await.unwrap();
    let method = serde_json::from_slice::<Value>(&bytes).ok().and_then(|v| v["method"].as_str().map(str::to_owned));
    let token =
        parts.headers.get("authorization").and_then(|h| h.to_str().ok()).and_then(|h| h.strip_prefix("Bearer "));
    {
        let mut auth = auth.lock().unwrap();
        let Some(scopes) = token.and_then(|t| auth.tokens.get(t)).cloned() else {
            return challenge(&auth, StatusCode::UNAUTHORIZED, "read", None);
        };
        if auth.revoke_first && token == Some("access-1") {
            auth.revoke_first = false;
            auth.tokens.remove("access-1");
            return challenge(&auth, StatusCode::UNAUTHORIZED, "read", Some("invalid_token"));
        }
        let mut needed = vec!["read".to_owned()];
        if method.as_deref() == Some("tools/call") {
            needed.extend(auth.call_scopes.iter().cloned());
        }
        if !needed.iter().all(|s| scopes.contains(s)) {
            return challenge(&auth, StatusCode::FORBIDDEN, &needed.join(" "), Some("insufficient_scope"));
        }
    }
    next.run(axum::extract::Request::from_parts(parts, axum::body::Body::from(bytes))).await
}

/// A JSON answer (axum's `Json` is behind a feature the crate does not enable).
fn json_body(value: &Value) -> Response {
    ([("content-type", "application/json")], value.to_string()).into_response()
}

/// `a=1&b=2`, decoded.
fn form(text: &str) -> HashMap<String, String> {
    text.split('&').filter_map(|pair| pair.split_once('=')).map(|(k, v)| (k.to_owned(), decode(v))).collect()
}

async fn resource_metadata(State(auth): State<Shared>) -> Response {
    let base = auth.lock().unwrap().base.clone();
    json_body(
        &json!({"resource": format!("{base}/mcp"), "authorization_servers": [base], "scopes_supported": ["read", "write"]}),
    )
}

async fn server_metadata(State(auth): State<Shared>) -> Response {
    let base = auth.lock().unwrap().base.clone();
    json_body(&json!({
        "issuer": base,
        "authorization_endpoint": format!("{base}/authorize"),
        "token_endpoint": format!("{base}/token"),
        "registration_endpoint": format!("{base}/register"),
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post", "none"],
    }))
}

async fn register(State(auth): State<Shared>, body: String) -> Response {
    let body: Value = serde_json::from_str(&body).unwrap();
    let mut params = HashMap::new();
    params.insert("body".to_owned(), body.to_string());
    auth.lock().unwrap().seen.push(("/register".into(), params));
    json_body(&json!({"client_id": "registered-client", "client_secret": "registered-secret-xyz",
                "redirect_uris": body["redirect_uris"], "token_endpoint_auth_method": "client_secret_basic"}))
}

/// Approves at once: redirects with a code that remembers the requested scopes.
async fn authorize(State(auth): State<Shared>, uri: Uri) -> Response {
    let params = form(uri.query().unwrap_or_default());
    auth.lock().unwrap().seen.push(("/authorize".into(), params.clone()));
    let code = format!("code-for:{}", params.get("scope").cloned().unwrap_or_default());
    let location = format!("{}?code={}&state={}", params["redirect_uri"], percent(&code), percent(&params["state"]));
    (StatusCode::FOUND, [("location", location)]).into_response()
}

fn percent(text: &str) -> String {
    text.bytes()
        .map(|b| if b.is_ascii_alphanumeric() { (b as char).to_string() } else { format!("%{b:02X}") })
        .collect()
}

async fn token(State(auth): State<Shared>, headers: HeaderMap, body: String) -> Response {
    let params = form(&body);
    let mut auth = auth.lock().unwrap();
    auth.token_auth.push(headers.get("authorization").map(|h| h.to_str().unwrap().to_owned()));
    auth.seen.push(("/token".into(), params.clone()));
    let scopes: Vec<String> = match params["grant_type"].as_str() {
        "authorization_code" => params["code"]
            .trim_start_matches("code-for:")
            .split(' ')
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect(),
        "client_credentials" => {
            params.get("scope").map_or_else(|| vec!["read".into()], |s| s.split(' ').map(str::to_owned).collect())
        }
        _ => vec!["read".into(), "write".into()],
    };
    auth.issued += 1;
    let access = format!("access-{}", auth.issued);
    auth.tokens.insert(access.clone(), scopes.clone());
    json_body(&json!({"access_token": access, "token_type": "Bearer", "expires_in": 3600,
                "refresh_token": format!("refresh-{}", auth.issued), "scope": scopes.join(" ")}))
}

fn decode(text: &str) -> String {
    percent_encoding::percent_decode_str(&text.replace('+', " ")).decode_utf8_lossy().into_owned()
}

/// An rmcp server with one tool, `echo`.
#[derive(Clone)]
struct Echo;

impl rmcp::ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = json!({"type": "object", "properties": {}});
        Ok(ListToolsResult::with_all_items(vec![RmcpTool::new_with_raw(
            "echo",
            None,
            schema.as_object().unwrap().clone(),
        )]))
    }

    async fn call_tool(
        &self,
        _: CallToolRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        Ok(CallToolResponse::Complete(CallToolResult::success(vec![ContentBlock::text("echoed")])))
    }
}

/// The authorization server and the protected MCP server on one loopback port.
async fn serve(configure: impl FnOnce(&mut Auth)) -> (String, Shared) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let mut auth = Auth { base: base.clone(), ..Auth::default() };
    configure(&mut auth);
    let auth = Arc::new(Mutex::new(auth));
    let mcp = StreamableHttpService::new(
        || Ok(Echo),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let protected =
        Router::new().nest_service("/mcp", mcp).layer(axum::middleware::from_fn_with_state(auth.clone(), guard));
    let app = Router::new()
        .route("/.well-known/oauth-protected-resource/mcp", get(resource_metadata))
        .route("/.well-known/oauth-authorization-server", get(server_metadata))
        .route("/register", post(register))
        .route("/authorize", get(authorize))
        .route("/token", post(token))
        .with_state(auth.clone())
        .merge(protected);
    tokio::spawn(axum::serve(listener, app).into_future());
    (format!("{base}/mcp"), auth)
}

/// The application's callback: follows the authorization URL as a browser would and reads
/// the redirect. Counts its calls.
fn browser(
    calls: Arc<Mutex<usize>>,
) -> impl Fn(String) -> futures::future::BoxFuture<'static, Result<AuthorizationResponse, String>> + Send + Sync + 'static
{
    move |url: String| {
        *calls.lock().unwrap() += 1;
        Box::pin(async move {
            let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
            let answer = http.get(url).send().await.map_err(|e| e.to_string())?;
            let location = answer.headers()["location"].to_str().unwrap().to_owned();
            AuthorizationResponse::from_redirect_url(&location)
        })
    }
}

fn seen(auth: &Shared, path: &str) -> Vec<HashMap<String, String>> {
    auth.lock().unwrap().seen.iter().filter(|(p, _)| p == path).map(|(_, params)| params.clone()).collect()
}

#[tokio::test]
async fn discovers_registers_and_authorizes_with_pkce_through_the_callback() {
    let (url, auth) = serve(|_| {}).await;
    let calls = Arc::new(Mutex::new(0));
    let oauth = OAuth::authorization_code("http://localhost:3000/callback", browser(calls.clone()));
    let server = McpServer::http("docs", &url).auth(oauth);
    assert_eq!(server.call_tool("echo", json!({})).await.unwrap(), json!("echoed"));
    assert_eq!(*calls.lock().unwrap(), 1);
    assert_eq!(seen(&auth, "/register").len(), 1);
    let authorize = &seen(&auth, "/authorize")[0];
    assert_eq!(authorize["code_challenge_method"], "S256");
    assert_eq!(authorize["scope"], "read", "the challenge's scope");
    assert_eq!(authorize["resource"], url);
    let exchange = &seen(&auth, "/token")[0];
    assert_eq!(exchange["grant_type"], "authorization_code");
    assert!(exchange.contains_key("code_verifier"));
    assert_eq!(exchange["resource"], url);
    // The registered confidential client authenticates with HTTP Basic, as it registered.
    assert!(auth.lock().unwrap().token_auth[0].as_deref().unwrap().starts_with("Basic "));
    server.close().await;
}

#[tokio::test]
async fn a_rejected_token_is_refreshed_without_asking_the_user_again() {
    let (url, auth) = serve(|auth| auth.revoke_first = true).await;
    let calls = Arc::new(Mutex::new(0));
    let server = McpServer::http("docs", &url)
        .auth(OAuth::authorization_code("http://localhost:3000/callback", browser(calls.clone())));
    assert_eq!(server.call_tool("echo", json!({})).await.unwrap(), json!("echoed"));
    assert_eq!(*calls.lock().unwrap(), 1);
    let grants: Vec<String> = seen(&auth, "/token").iter().map(|p| p["grant_type"].clone()).collect();
    assert_eq!(grants, ["authorization_code", "refresh_token"]);
    server.close().await;
}

#[tokio::test]
async fn insufficient_scope_steps_up_to_the_union_of_scopes() {
    let (url, auth) = serve(|auth| auth.call_scopes = vec!["write".into()]).await;
    let calls = Arc::new(Mutex::new(0));
    let server = McpServer::http("docs", &url)
        .auth(OAuth::authorization_code("http://localhost:3000/callback", browser(calls.clone())));
    assert_eq!(server.call_tool("echo", json!({})).await.unwrap(), json!("echoed"));
    let scopes: Vec<String> = seen(&auth, "/authorize").iter().map(|p| p["scope"].clone()).collect();
    assert_eq!(scopes, ["read", "read write"]);
    assert_eq!(seen(&auth, "/register").len(), 1, "registered once");
    server.close().await;
}

#[tokio::test]
async fn client_credentials_get_a_token_without_a_user() {
    let (url, auth) = serve(|_| {}).await;
    let server =
        McpServer::http("docs", &url).auth(OAuth::client_credentials("service", "service-secret-123").scopes(["read"]));
    assert_eq!(server.call_tool("echo", json!({})).await.unwrap(), json!("echoed"));
    let grant = &seen(&auth, "/token")[0];
    assert_eq!(grant["grant_type"], "client_credentials");
    assert_eq!(grant["resource"], url);
    server.close().await;
}

#[tokio::test]
async fn tokens_kept_in_sqlite_are_reused_by_a_new_client() {
    let dir = tempfile::tempdir().unwrap();
    let (url, auth) = serve(|_| {}).await;
    let calls = Arc::new(Mutex::new(0));
    for _ in 0..2 {
        let store = SqliteSessionStore::open(dir.path().join("sessions.db")).unwrap();
        let oauth = OAuth::authorization_code("http://localhost:3000/callback", browser(calls.clone())).store(store);
        let server = McpServer::http("docs", &url).auth(oauth);
        assert_eq!(server.call_tool("echo", json!({})).await.unwrap(), json!("echoed"));
        server.close().await;
    }
    assert_eq!(*calls.lock().unwrap(), 1, "the second client used the stored token");
    assert!(SqliteSessionStore::open(dir.path().join("sessions.db")).unwrap().load_token(&url).unwrap().is_some());
    drop(auth);
}

/// Every log line written while authorizing (at TRACE, rmcp's included).
#[derive(Clone, Default)]
struct Logs(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Logs {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn no_token_code_or_secret_reaches_a_log_an_error_or_debug() {
    let logs = Logs::default();
    let writer = logs.clone();
    let subscriber =
        tracing_subscriber::fmt().with_max_level(tracing::Level::TRACE).with_writer(move || writer.clone()).finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let (url, auth) = serve(|auth| {
        auth.revoke_first = true;
        auth.call_scopes = vec!["admin".into()];
    })
    .await;
    let calls = Arc::new(Mutex::new(0));
    let oauth = OAuth::authorization_code("http://localhost:3000/callback", browser(calls))
        .client_id("pre")
        .client_secret("pre-secret-value");
    let debug = format!("{oauth:?}");
    let server = McpServer::http("docs", &url).auth(oauth);
    // `admin` is granted on step-up, yet the guard keeps `read` for the first token only:
    // whatever happens, the error and the logs are what we inspect.
    let outcome = server.call_tool("echo", json!({})).await;
    let error = format!("{outcome:?}");
    let logged = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
    let auth = auth.lock().unwrap();
    let mut secrets: Vec<String> = vec!["pre-secret-value".into()];
    secrets.extend(auth.tokens.keys().cloned());
    secrets.extend((1..=auth.issued).map(|n| format!("refresh-{n}")));
    secrets.extend(auth.seen.iter().filter(|(p, _)| p == "/token").filter_map(|(_, p)| p.get("code").cloned()));
    secrets
        .extend(auth.seen.iter().filter(|(p, _)| p == "/token").filter_map(|(_, p)| p.get("code_verifier").cloned()));
    assert!(auth.issued >= 1);
    for secret in &secrets {
        assert!(!debug.contains(secret.as_str()), "Debug shows {secret}");
        assert!(!error.contains(secret.as_str()), "the error shows {secret}: {error}");
        assert!(
            !logged.contains(secret.as_str()),
            "a log line shows {secret}: {}",
            logged.lines().filter(|l| l.contains(secret.as_str())).collect::<Vec<_>>().join("\n")
        );
    }
    drop(server);
}
