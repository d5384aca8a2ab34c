//! What a client sends that rmcp cannot read still gets the answer JSON-RPC 2.0 prescribes
//! (DESIGN.md §16, §21): rmcp drops a line that is not JSON, nests past serde's depth limit
//! or is too long, and answers a request with params of the wrong shape without its `id`.
//! [`read`] sorts each incoming message; [`StdioTransport`] is the stdio transport built on
//! it, and the HTTP server checks bodies with it too (`server.rs`). [`ClientTransport`] is
//! the other side: a server's stdio, where what cannot be read fails the session at once.

use std::collections::VecDeque;
use std::sync::Arc;

use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, GetMeta, JsonRpcError, JsonRpcResponse, RequestId, ServerJsonRpcMessage,
};
use rmcp::service::{RoleClient, RoleServer};
use rmcp::transport::Transport;
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::value::RawValue;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};

/// The longest message a stdio client may send (rmcp's own default, and the size its
/// HTTP client accepts); a longer one is refused with an error, never buffered.
pub(crate) const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// JSON-RPC's error codes for what a peer sent.
const PARSE_ERROR: i32 = -32700;
const INVALID_REQUEST: i32 = -32600;
const INVALID_PARAMS: i32 = -32602;

/// One incoming message, sorted.
pub(crate) enum Incoming {
    /// A message rmcp reads (boxed: it is large beside the other cases).
    Message(Box<ClientJsonRpcMessage>),
    /// An error to send back as is: a whole JSON-RPC error response.
    Refused(String),
    /// Nothing to answer: a notification or a response that cannot be read (JSON-RPC
    /// answers neither).
    Ignored,
}

/// The parts of a message that can be read whatever else it holds: `IgnoredAny` skips a
/// value without recursion, so depth does not stop it, and the id is kept as written.
#[derive(Deserialize)]
struct Envelope<'a> {
    jsonrpc: Option<&'a str>,
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    method: Option<&'a str>,
    result: Option<IgnoredAny>,
    error: Option<IgnoredAny>,
}

/// The requests MCP defines for a client to send. rmcp reads one of these whose params
/// do not fit as a custom request, and would answer "method not found".
fn is_defined(method: &str) -> bool {
    use rmcp::model::{
        CallToolRequestMethod, CompleteRequestMethod, ConstString, DiscoverRequestMethod, GetPromptRequestMethod,
        InitializeResultMethod, ListPromptsRequestMethod, ListResourceTemplatesRequestMethod,
        ListResourcesRequestMethod, ListToolsRequestMethod, PingRequestMethod, ReadResourceRequestMethod,
        SetLevelRequestMethod, SubscribeRequestMethod, SubscriptionsListenRequestMethod, UnsubscribeRequestMethod,
    };
    [
        InitializeResultMethod::VALUE,
        PingRequestMethod::VALUE,
        DiscoverRequestMethod::VALUE,
        ListResourcesRequestMethod::VALUE,
        ListResourceTemplatesRequestMethod::VALUE,
        ReadResourceRequestMethod::VALUE,
        SubscribeRequestMethod::VALUE,
        UnsubscribeRequestMethod::VALUE,
        SubscriptionsListenRequestMethod::VALUE,
        ListPromptsRequestMethod::VALUE,
        GetPromptRequestMethod::VALUE,
        SetLevelRequestMethod::VALUE,
        CompleteRequestMethod::VALUE,
        ListToolsRequestMethod::VALUE,
        CallToolRequestMethod::VALUE,
    ]
    .contains(&method)
}

/// Sorts one message (a stdio line or an HTTP body).
pub(crate) fn read(bytes: &[u8]) -> Incoming {
    let error = match serde_json::from_slice::<ClientJsonRpcMessage>(bytes) {
        Ok(ClientJsonRpcMessage::Request(request)) if matches!(&request.request, ClientRequest::CustomRequest(custom) if is_defined(&custom.method)) =>
        {
            let method = request.request.method();
            let message = format!("invalid params for `{method}`: they do not match what `{method}` takes");
            let id = serde_json::to_string(&request.id).ok();
            return Incoming::Refused(reply(id.as_deref(), INVALID_PARAMS, &message));
        }
        Ok(message) => return Incoming::Message(Box::new(message)),
        Err(error) => error,
    };
    let envelope = match serde_json::from_slice::<IgnoredAny>(bytes) {
        Err(parse) => return Incoming::Refused(reply(None, PARSE_ERROR, &format!("not valid JSON: {parse}"))),
        Ok(_) if !bytes.trim_ascii_start().starts_with(b"{") => None,
        Ok(_) => serde_json::from_slice::<Envelope<'_>>(bytes).ok(),
    };
    let Some(envelope) = envelope else {
        return Incoming::Refused(reply(None, INVALID_REQUEST, "not a JSON-RPC message: it must be an object"));
    };
    let id = envelope.id.filter(|id| id.get().starts_with(|c: char| c == '"' || c == '-' || c.is_ascii_digit()));
    let Some(method) = envelope.method else {
        if envelope.result.is_some() || envelope.error.is_some() {
            return Incoming::Ignored;
        }
        return Incoming::Refused(reply(id.map(RawValue::get), INVALID_REQUEST, "a request needs a `method`"));
    };
    if envelope.id.is_none() {
        return Incoming::Ignored;
    }
    let (id, code, message) = match id {
        _ if envelope.jsonrpc != Some("2.0") => (id, INVALID_REQUEST, "`jsonrpc` must be \"2.0\"".to_owned()),
        None => (None, INVALID_REQUEST, "`id` must be a string or a number".to_owned()),
        Some(id) if !id.get().starts_with('"') && id.get().parse::<i64>().is_err() => {
            (Some(id), INVALID_REQUEST, "`id` must be a string or a 64-bit integer".to_owned())
        }
        Some(id) => (Some(id), INVALID_PARAMS, format!("invalid params for `{method}`: {error}")),
    };
    Incoming::Refused(reply(id.map(RawValue::get), code, &message))
}

/// A JSON-RPC error response; `id` as the client wrote it (JSON text), or `null` when it
/// cannot be read.
pub(crate) fn reply(id: Option<&str>, code: i32, message: &str) -> String {
    let id = id.unwrap_or("null");
    let error = serde_json::json!({"code": code, "message": message});
    format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{error}}}"#)
}

/// Reads a JSON message a line, never holding more than [`MAX_MESSAGE_BYTES`] of one: the
/// rest of a longer line is skipped as it arrives. Cancel-safe: a partial line stays here
/// for the next call (rmcp polls `receive` in a `select!`).
pub(crate) struct LineReader<R> {
    reader: R,
    line: Vec<u8>,
}

/// What reading one line gave.
pub(crate) enum Line {
    Read(Vec<u8>),
    TooLong,
    End,
}

impl<R> LineReader<R> {
    pub(crate) fn new(reader: R) -> Self {
        Self { reader, line: Vec::new() }
    }
}

impl<R: AsyncBufRead + Unpin> LineReader<R> {
    pub(crate) async fn next(&mut self) -> Line {
        loop {
            let Ok(available) = self.reader.fill_buf().await else { return Line::End };
            if available.is_empty() {
                return Line::End;
            }
            let newline = available.iter().position(|&b| b == b'\n');
            let take = newline.map_or(available.len(), |at| at + 1);
            // One byte past the cap marks a line as too long; what follows is dropped.
            let room = (MAX_MESSAGE_BYTES + 1).saturating_sub(self.line.len());
            // In bounds: `take` is at most `available.len()` (a position in it plus one, or its length).
            #[allow(clippy::indexing_slicing)]
            self.line.extend_from_slice(&available[..take.min(room)]);
            self.reader.consume(take);
            if newline.is_some() {
                let line = std::mem::take(&mut self.line);
                return if line.len() > MAX_MESSAGE_BYTES { Line::TooLong } else { Line::Read(line) };
            }
        }
    }
}

async fn write_line<W: AsyncWrite + Unpin>(writer: &mut W, text: &[u8]) -> std::io::Result<()> {
    writer.write_all(text).await?;
    writer.write_all(b"\n").await?;
    writer.flush().await
}

/// Writes a message as one line; a clone per `send`, whose future must be `'static`.
struct LineWriter<W>(Arc<tokio::sync::Mutex<W>>);

impl<W: AsyncWrite + Unpin + Send + 'static> LineWriter<W> {
    fn send<T: serde::Serialize + 'static>(
        &self,
        message: &T,
    ) -> impl Future<Output = std::io::Result<()>> + Send + 'static + use<W, T> {
        let writer = self.0.clone();
        let text = serde_json::to_vec(message).map_err(std::io::Error::other);
        async move { write_line(&mut *writer.lock().await, &text?).await }
    }

    async fn close(&self) -> std::io::Result<()> {
        self.0.lock().await.shutdown().await
    }
}

/// MCP served over a byte stream, a JSON message a line (stdio): every request gets an
/// answer, and messages before `initialize` that would end rmcp's handshake are set aside.
pub(crate) struct StdioTransport<R, W> {
    lines: LineReader<R>,
    writer: LineWriter<W>,
    /// Whether the lifecycle began: before that, rmcp takes requests only, and any other
    /// message would end the session.
    started: bool,
}

impl<R, W> StdioTransport<R, W> {
    pub(crate) fn new(reader: R, writer: W) -> Self {
        Self {
            lines: LineReader::new(reader),
            writer: LineWriter(Arc::new(tokio::sync::Mutex::new(writer))),
            started: false,
        }
    }
}

impl<R, W> Transport<RoleServer> for StdioTransport<R, W>
where
    R: AsyncBufRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: rmcp::service::TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.writer.send(&item)
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            let incoming = match self.lines.next().await {
                Line::End => return None,
                Line::TooLong => Incoming::Refused(reply(
                    None,
                    INVALID_REQUEST,
                    &format!("the message is longer than {MAX_MESSAGE_BYTES} bytes"),
                )),
                Line::Read(line) if line.trim_ascii().is_empty() => Incoming::Ignored,
                Line::Read(line) => read(line.trim_ascii()),
            };
            match incoming {
                Incoming::Message(message) => {
                    // Before the lifecycle begins rmcp takes requests only: a response or a
                    // notification there has nothing to answer, and would end the session.
                    self.started |= begins_lifecycle(&message);
                    if self.started || matches!(*message, ClientJsonRpcMessage::Request(_)) {
                        return Some(*message);
                    }
                }
                Incoming::Ignored => {}
                Incoming::Refused(text) => {
                    let mut writer = self.writer.0.lock().await;
                    if write_line(&mut *writer, text.as_bytes()).await.is_err() {
                        return None;
                    }
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.writer.close().await
    }
}

/// What a server did wrong, kept to name the failure of the calls it ended.
pub(crate) type Fault = Arc<std::sync::Mutex<Option<String>>>;

/// How many unanswered request ids a client remembers (a server may never answer the
/// ones it was told to cancel); the oldest are forgotten first.
const PENDING_IDS: usize = 1024;

/// MCP to a server over its stdio, a JSON message a line. A message that cannot be read or
/// an answer to a request never sent ends the session at once, the reason in `fault`, so
/// the calls waiting on the server fail now rather than at their timeout. Lines that are not
/// a JSON object (a banner some servers print) are skipped.
pub(crate) struct ClientTransport<R, W> {
    lines: LineReader<R>,
    writer: LineWriter<W>,
    pending: Arc<std::sync::Mutex<VecDeque<RequestId>>>,
    fault: Fault,
}

impl<R, W> ClientTransport<R, W> {
    pub(crate) fn new(reader: R, writer: W, fault: Fault) -> Self {
        Self {
            lines: LineReader::new(reader),
            writer: LineWriter(Arc::new(tokio::sync::Mutex::new(writer))),
            pending: Arc::default(),
            fault,
        }
    }

    /// Records why the session ends; `None` for the transport to return.
    fn fail(&self, why: String) -> Option<ServerJsonRpcMessage> {
        *self.fault.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(why);
        None
    }

    /// Whether `id` names a request sent and not yet answered (it is answered now).
    fn answers(&self, id: &RequestId) -> bool {
        let mut pending = self.pending.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        pending.iter().position(|sent| sent == id).and_then(|at| pending.remove(at)).is_some()
    }
}

impl<R, W> Transport<RoleClient> for ClientTransport<R, W>
where
    R: AsyncBufRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(&mut self, item: ClientJsonRpcMessage) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        if let ClientJsonRpcMessage::Request(request) = &item {
            let mut pending = self.pending.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if pending.len() == PENDING_IDS {
                pending.pop_front();
            }
            pending.push_back(request.id.clone());
        }
        self.writer.send(&item)
    }

    async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
        loop {
            let line = match self.lines.next().await {
                Line::End => return None,
                Line::TooLong => return self.fail(format!("sent a message longer than {MAX_MESSAGE_BYTES} bytes")),
                Line::Read(line) => line,
            };
            let line = line.trim_ascii();
            if !line.starts_with(b"{") {
                continue;
            }
            let message = match serde_json::from_slice::<ServerJsonRpcMessage>(line) {
                Ok(message) => message,
                Err(error) => {
                    let text = String::from_utf8_lossy(line.get(..200).unwrap_or(line)).into_owned();
                    return self.fail(format!("sent a message that cannot be read ({error}): {text}"));
                }
            };
            match &message {
                ServerJsonRpcMessage::Response(JsonRpcResponse { id, .. })
                | ServerJsonRpcMessage::Error(JsonRpcError { id: Some(id), .. })
                    if !self.answers(id) =>
                {
                    return self.fail(format!("answered request id {id}, which it was never sent"));
                }
                ServerJsonRpcMessage::Error(JsonRpcError { id: None, error, .. }) => {
                    return self.fail(format!("answered with an error for no request: {}", error.message));
                }
                _ => return Some(message),
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.writer.close().await
    }
}

/// Whether rmcp starts a session on this message: `initialize`, or a request that carries
/// its protocol revision inline (2026-07-28, which has no handshake).
fn begins_lifecycle(message: &ClientJsonRpcMessage) -> bool {
    let ClientJsonRpcMessage::Request(request) = message else { return false };
    match &request.request {
        ClientRequest::InitializeRequest(_) => true,
        ClientRequest::DiscoverRequest(_) => false,
        other => {
            let meta = other.get_meta();
            meta.protocol_version().is_some_and(|version| meta.missing_required_keys(&version).is_empty())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(line: &str) -> serde_json::Value {
        match read(line.as_bytes()) {
            Incoming::Refused(text) => serde_json::from_str(&text).unwrap(),
            Incoming::Message(_) => panic!("read as a message: {line}"),
            Incoming::Ignored => panic!("ignored: {line}"),
        }
    }

    #[test]
    fn what_is_not_json_is_a_parse_error_with_a_null_id() {
        let answer = refused("{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": ");
        assert_eq!((answer["id"].clone(), answer["error"]["code"].clone()), (serde_json::Value::Null, (-32700).into()));
    }

    #[test]
    fn json_that_is_no_request_is_an_invalid_request_with_a_null_id() {
        for line in ["[1, 2]", "42", r#"{"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}"#] {
            let answer = refused(line);
            assert_eq!(answer["id"], serde_json::Value::Null, "{line}");
            assert_eq!(answer["error"]["code"], -32600, "{line}");
        }
    }

    #[test]
    fn params_of_the_wrong_type_are_invalid_params_answered_to_the_request_id() {
        let answer = refused(r#"{"jsonrpc": "2.0", "id": "a", "method": "tools/call", "params": [1]}"#);
        assert_eq!((answer["id"].as_str(), answer["error"]["code"].as_i64()), (Some("a"), Some(-32602)));
        assert!(answer["error"]["message"].as_str().unwrap().contains("tools/call"), "{answer}");
    }

    #[test]
    fn params_nested_past_the_depth_limit_are_answered_to_the_request_id() {
        let deep = format!("{}{}", "[".repeat(3000), "]".repeat(3000));
        let line = format!(
            r#"{{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {{"name": "x", "arguments": {{"a": {deep}}}}}}}"#
        );
        let answer = refused(&line);
        assert_eq!((answer["id"].as_i64(), answer["error"]["code"].as_i64()), (Some(7), Some(-32602)));
    }

    #[test]
    fn an_id_past_64_bits_is_echoed_exactly() {
        let Incoming::Refused(text) = read(br#"{"jsonrpc": "2.0", "id": 18446744073709551616123, "method": "ping"}"#)
        else {
            panic!("not refused")
        };
        assert!(text.contains(r#""id":18446744073709551616123"#), "{text}");
        assert!(text.contains("-32600"), "{text}");
    }

    #[test]
    fn unreadable_notifications_and_responses_are_not_answered() {
        for line in [
            r#"{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": 5}"#,
            r#"{"jsonrpc": "2.0", "id": 3, "result": 5, "error": 1}"#,
        ] {
            assert!(matches!(read(line.as_bytes()), Incoming::Ignored), "{line}");
        }
    }
}
