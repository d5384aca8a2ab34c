//! Canonical messages and the session [`History`].
//!
//! The message types hold only what a model may see. Host-only fields of tool returns
//! (`app_value`, `user_content`, `private_metadata`, and `value` when `model_content`
//! replaced it) live beside the messages in [`History`], so no model-facing value can
//! carry them, and a model is handed the history by reference instead of a filtered copy.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::JsonMap;
use crate::error::{Error, JsonInput, Result};
use crate::render::Provider;

/// One message of a conversation, as a provider sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Message {
    /// Sent to the model.
    Request {
        /// Prompts and tool returns.
        parts: Vec<RequestPart>,
    },
    /// Received from the model.
    Response {
        /// Text and tool calls.
        parts: Vec<ResponsePart>,
    },
}

/// A part of a request message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RequestPart {
    /// Instructions from the application.
    SystemPrompt {
        /// The instructions.
        text: String,
    },
    /// The user's prompt.
    UserPrompt {
        /// The prompt.
        text: String,
    },
    /// The outcome of one tool call (shared with the `tool_return` event that reported it).
    ToolReturn(Arc<ToolReturnPart>),
}

/// The model-facing outcome of one tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolReturnPart {
    /// The call id exactly as the model sent it.
    pub tool_call_id: Arc<str>,
    /// The tool's name.
    pub name: Arc<str>,
    /// The value, or for errors `{"kind", "message", "success": false, ...}`.
    pub content: Value,
    /// Whether the model should read this as an error.
    pub is_error: bool,
    /// Public tool-return metadata.
    #[serde(default)]
    pub metadata: JsonMap,
}

/// A tool return with its host-only fields, as events report it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "RawToolReturnRecord")]
pub struct ToolReturnRecord {
    /// What the model sees.
    #[serde(flatten)]
    pub part: Arc<ToolReturnPart>,
    /// What only the host sees, when there is anything (shared with the history).
    #[serde(flatten)]
    pub host: Option<Arc<HostFields>>,
}

/// A record as written: absent host fields read back as `None`, not as empty fields, so
/// a record equals itself after a JSON round trip.
#[derive(Deserialize)]
struct RawToolReturnRecord {
    #[serde(flatten)]
    part: Arc<ToolReturnPart>,
    #[serde(flatten)]
    host: HostFields,
}

impl From<RawToolReturnRecord> for ToolReturnRecord {
    fn from(raw: RawToolReturnRecord) -> Self {
        Self { part: raw.part, host: raw.host.into_shared() }
    }
}

/// A part of a response message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ResponsePart {
    /// Text for the user.
    Text {
        /// The text.
        text: String,
    },
    /// A request to call a tool.
    ToolCall(ToolCallPart),
    /// An item only the provider that sent it reads (its own tool search's call and
    /// result), kept so the next request to that protocol sends it back as it came.
    ProviderItem(ProviderItem),
}

/// A provider's own item in a response: `{"kind": "provider_item", "protocol", "item"}`.
///
/// The run does not read it: the protocol that sent it replays it verbatim in later
/// requests (the providers require their search's blocks again), and every other protocol
/// leaves it out.
///
/// ```
/// use serde_json::json;
/// use starweaver::{ProviderItem, ResponsePart};
/// use starweaver::render::Provider;
///
/// let block = json!({"type": "server_tool_use", "id": "srvtoolu_1", "name": "tool_search_tool_bm25",
///                    "input": {"query": "weather"}});
/// let part = ResponsePart::ProviderItem(ProviderItem::new(Provider::Anthropic, block.clone()));
/// let ResponsePart::ProviderItem(item) = &part else { unreachable!() };
/// assert_eq!(item.replayed_to(Provider::Anthropic), Some(&block));
/// assert_eq!(item.replayed_to(Provider::OpenAiResponses), None);
/// assert_eq!(serde_json::to_value(&part).unwrap()["protocol"], "anthropic");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderItem {
    /// The protocol that sent it, as [`Provider::as_str`] names it (`anthropic`,
    /// `openai-responses`).
    pub protocol: String,
    /// The item exactly as the provider sent it.
    pub item: Value,
}

/// The items `protocol` sent among `parts`, in order.
// Only the protocols that send such items (their features) replay them.
#[cfg_attr(not(any(feature = "openai", feature = "anthropic")), allow(dead_code))]
pub(crate) fn provider_items(parts: &[ResponsePart], protocol: Provider) -> impl Iterator<Item = &Value> {
    parts.iter().filter_map(move |part| match part {
        ResponsePart::ProviderItem(item) => item.replayed_to(protocol),
        ResponsePart::Text { .. } | ResponsePart::ToolCall(_) => None,
    })
}

impl ProviderItem {
    /// `item`, as `protocol` sent it.
    pub fn new(protocol: Provider, item: Value) -> Self {
        Self { protocol: protocol.as_str().to_owned(), item }
    }

    /// The item, if `protocol` sent it (what a request to `protocol` sends back).
    pub fn replayed_to(&self, protocol: Provider) -> Option<&Value> {
        (self.protocol == protocol.as_str()).then_some(&self.item)
    }
}

/// A tool call as the model sent it.
///
/// The id and name are shared strings: every return, event and context of the call refers
/// to them without copying.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCallPart {
    /// The model's id for the call, kept as sent.
    pub id: Arc<str>,
    /// The tool to call.
    pub name: Arc<str>,
    /// The arguments: a JSON object, or a string holding one (as some providers send).
    pub arguments: Value,
}

impl Message {
    /// The tool calls of a response, in model order (none for a request).
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCallPart> {
        self.indexed_tool_calls().map(|(_, call)| call)
    }

    /// The text of a response, its text parts joined by newlines (`None` when it has none).
    pub fn text(&self) -> Option<String> {
        let parts = match self {
            Self::Response { parts } => parts.as_slice(),
            Self::Request { .. } => &[],
        };
        let texts: Vec<&str> = parts
            .iter()
            .filter_map(|p| match p {
                ResponsePart::Text { text } => Some(text.as_str()),
                ResponsePart::ToolCall(_) | ResponsePart::ProviderItem(_) => None,
            })
            .collect();
        (!texts.is_empty()).then(|| texts.join("\n"))
    }

    /// The tool calls of a response with their part index.
    fn indexed_tool_calls(&self) -> impl Iterator<Item = (usize, &ToolCallPart)> {
        let parts = match self {
            Self::Response { parts } => parts.as_slice(),
            Self::Request { .. } => &[],
        };
        parts.iter().enumerate().filter_map(|(p, part)| match part {
            ResponsePart::ToolCall(call) => Some((p, call)),
            ResponsePart::Text { .. } | ResponsePart::ProviderItem(_) => None,
        })
    }
}

impl Message {
    /// The tool returns of a request, in model order (none for a response).
    pub fn tool_returns(&self) -> impl Iterator<Item = &Arc<ToolReturnPart>> {
        let parts = match self {
            Self::Request { parts } => parts.as_slice(),
            Self::Response { .. } => &[],
        };
        parts.iter().filter_map(|part| match part {
            RequestPart::ToolReturn(ret) => Some(ret),
            RequestPart::SystemPrompt { .. } | RequestPart::UserPrompt { .. } => None,
        })
    }
}

impl ToolCallPart {
    /// A call of `name` with `arguments`.
    pub fn new(id: impl Into<Arc<str>>, name: impl Into<Arc<str>>, arguments: Value) -> Self {
        Self { id: id.into(), name: name.into(), arguments }
    }
}

/// Host-only fields of a tool return: kept in the history, the events and exported state;
/// never in a model request.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct HostFields {
    /// The tool's own value, kept when `model_content` replaced it for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
    /// For application code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_value: Option<Value>,
    /// For the user interface.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_content: Option<Value>,
    /// Debugging data (tracebacks, trace ids).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub private_metadata: Option<Value>,
}

impl HostFields {
    const KEYS: [&'static str; 4] = ["value", "app_value", "user_content", "private_metadata"];

    /// Shared when any field is set: most returns have none, and carry no allocation for
    /// them; a return's fields are shared by the history, its event and every snapshot of
    /// the history, never copied.
    pub fn into_shared(self) -> Option<Arc<Self>> {
        let empty = self.value.is_none()
            && self.app_value.is_none()
            && self.user_content.is_none()
            && self.private_metadata.is_none();
        (!empty).then(|| Arc::new(self))
    }
}

/// A snapshot of a conversation's model-facing messages. Cloning it copies one pointer;
/// the history it was taken from copies its list only if it grows while a snapshot is
/// still held (a model that keeps every request, like `TestModel`).
///
/// ```
/// use starweaver::History;
///
/// let history = History::from_json(&serde_json::json!([
///     {"kind": "request", "parts": [{"kind": "user_prompt", "text": "hi"}]},
/// ])).unwrap();
/// let snapshot = history.messages().clone();
/// assert_eq!(snapshot.len(), 1);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(transparent)]
pub struct Messages(Arc<Vec<Arc<Message>>>);

impl std::ops::Deref for Messages {
    type Target = [Arc<Message>];

    fn deref(&self) -> &[Arc<Message>] {
        &self.0
    }
}

/// The conversation of a session: model-facing messages plus the host-only fields of
/// their tool returns.
///
/// Messages are shared (`Arc`), so handing the history to a model, recording it in an
/// event or returning it in a result copies pointers, not conversations.
///
/// ```
/// use starweaver::History;
/// use serde_json::json;
///
/// let canonical = json!([
///     {"kind": "request", "parts": [{"kind": "user_prompt", "text": "hi"}]},
///     {"kind": "response", "parts": [{"kind": "text", "text": "hello"}]},
/// ]);
/// let history = History::from_json(&canonical).unwrap();
/// assert_eq!(history.messages().len(), 2);
/// assert_eq!(history.to_json(), canonical);
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct History {
    messages: Messages,
    /// Shared as the messages are: a snapshot (a run's result) copies a pointer, and the
    /// history copies the map only when it grows while a snapshot is held.
    host: Arc<BTreeMap<(usize, usize), Arc<HostFields>>>,
}

impl History {
    /// The model-facing messages, exactly what a provider is sent.
    pub fn messages(&self) -> &Messages {
        &self.messages
    }

    /// The host-only fields of part `part` of message `message`, if it has any.
    pub fn host_fields(&self, message: usize, part: usize) -> Option<&HostFields> {
        self.host.get(&(message, part)).map(|h| &**h)
    }

    /// The canonical JSON of the full history, host-only fields included.
    pub fn to_json(&self) -> Value {
        let messages = self.messages.0.iter().enumerate().map(|(i, message)| {
            let mut json = serde_json::to_value(message).expect("messages hold only JSON values");
            for ((_, part), host) in self.host.range((i, 0)..(i + 1, 0)) {
                let fields = serde_json::to_value(host).expect("host fields hold only JSON values");
                let obj = json.get_mut("parts").and_then(|parts| parts.get_mut(*part)).and_then(Value::as_object_mut);
                if let (Some(obj), Value::Object(fields)) = (obj, fields) {
                    obj.extend(fields);
                }
            }
            json
        });
        Value::Array(messages.collect())
    }

    /// Reads canonical history JSON (as [`to_json`](Self::to_json) writes it).
    ///
    /// # Errors
    /// `InvalidJson`, naming the message and part that do not fit the format.
    pub fn from_json(json: &Value) -> Result<Self> {
        let invalid = |message: String| Error::InvalidJson { what: JsonInput::History, message };
        let Value::Array(items) = json else {
            return Err(invalid("expected an array of messages".into()));
        };
        let mut history = Self::default();
        for (i, item) in items.iter().enumerate() {
            let mut item = item.clone();
            if let Some(Value::Array(parts)) = item.get_mut("parts") {
                for (p, part) in parts.iter_mut().enumerate() {
                    let is_return = |o: &&mut Map<String, Value>| o.get("kind").is_some_and(|k| k == "tool_return");
                    let Some(obj) = part.as_object_mut().filter(is_return) else { continue };
                    let host: Map<String, Value> =
                        HostFields::KEYS.iter().filter_map(|k| obj.remove(*k).map(|v| ((*k).to_owned(), v))).collect();
                    if !host.is_empty() {
                        let fields: Arc<HostFields> = serde_json::from_value(Value::Object(host))
                            .map_err(|e| invalid(format!("message {i}, part {p}: {e}")))?;
                        Arc::make_mut(&mut history.host).insert((i, p), fields);
                    }
                }
            }
            let message = serde_json::from_value(item).map_err(|e| invalid(format!("message {i}: {e}")))?;
            history.append(message);
        }
        history.check_pairs().map_err(invalid)?;
        Ok(history)
    }

    /// Every tool call is answered by one return in the next message, and every return
    /// answers a call of the message before it, so no history sent to a model is one a
    /// provider would refuse. A final response may still wait for its returns.
    fn check_pairs(&self) -> std::result::Result<(), String> {
        let messages = self.messages();
        for (i, message) in messages.iter().enumerate() {
            let Message::Request { parts } = &**message else {
                let next = messages.get(i + 1).map(|m| &**m);
                if let (Some((p, call)), Some(Message::Response { .. })) = (message.indexed_tool_calls().next(), next) {
                    return Err(format!(
                        "message {i}, part {p}: tool call `{}` (`{}`) has no return: the next message is another response",
                        call.id, call.name
                    ));
                }
                continue;
            };
            let previous = i.checked_sub(1).and_then(|p| messages.get(p));
            let calls: Vec<(usize, &ToolCallPart)> =
                previous.map(|m| m.indexed_tool_calls().collect()).unwrap_or_default();
            let mut answered = vec![false; calls.len()];
            for (p, part) in parts.iter().enumerate() {
                let RequestPart::ToolReturn(ret) = part else { continue };
                let call = calls.iter().enumerate().position(|(c, (_, call))| {
                    !answered.get(c).copied().unwrap_or(true) && call.id == ret.tool_call_id
                });
                match call.and_then(|c| answered.get_mut(c)) {
                    Some(slot) => *slot = true,
                    None => {
                        return Err(format!(
                            "message {i}, part {p}: tool return `{}` answers no tool call of the message before it",
                            ret.tool_call_id
                        ));
                    }
                }
            }
            if let Some(((p, call), _)) = calls.iter().zip(&answered).find(|(_, done)| !**done) {
                return Err(format!(
                    "message {}, part {p}: tool call `{}` (`{}`) has no return in message {i}",
                    i - 1,
                    call.id,
                    call.name
                ));
            }
        }
        Ok(())
    }

    /// The tool calls of a final response that no message answers yet, as `(message,
    /// part, call)`: a run waiting for decisions has them; any other history must not.
    pub(crate) fn unanswered_calls(&self) -> Vec<(usize, usize, &ToolCallPart)> {
        let Some((i, last)) = self.messages().iter().enumerate().next_back() else { return Vec::new() };
        last.indexed_tool_calls().map(|(p, call)| (i, p, call)).collect()
    }

    pub(crate) fn push(&mut self, message: Message) -> &Arc<Message> {
        self.append(message);
        self.messages.last().expect("just pushed")
    }

    fn append(&mut self, message: Message) {
        Arc::make_mut(&mut self.messages.0).push(Arc::new(message));
    }

    pub(crate) fn push_request(&mut self, parts: impl IntoIterator<Item = (RequestPart, Option<Arc<HostFields>>)>) {
        let index = self.messages.len();
        let mut request = Vec::new();
        for (p, (part, host)) in parts.into_iter().enumerate() {
            if let Some(host) = host {
                Arc::make_mut(&mut self.host).insert((index, p), host);
            }
            request.push(part);
        }
        self.append(Message::Request { parts: request });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn host_only_fields_round_trip_but_never_reach_model_messages() {
        let mut history = History::default();
        history
            .push(Message::Response { parts: vec![ResponsePart::ToolCall(ToolCallPart::new("c1", "t", json!({})))] });
        let part = ToolReturnPart {
            tool_call_id: "c1".into(),
            name: "t".into(),
            content: json!({"summary": "ok"}),
            is_error: false,
            metadata: JsonMap::default(),
        };
        let host = HostFields { private_metadata: Some(json!({"trace": 1})), ..HostFields::default() };
        history.push_request([(RequestPart::ToolReturn(Arc::new(part)), host.into_shared())]);
        let json = history.to_json();
        assert_eq!(json[1]["parts"][0]["private_metadata"], json!({"trace": 1}));
        let model_view = serde_json::to_value(history.messages()).unwrap();
        assert!(!model_view.to_string().contains("private_metadata"));
        assert_eq!(History::from_json(&json).unwrap(), history);
    }

    #[test]
    fn a_providers_item_round_trips_as_it_came() {
        let item = json!({"type": "tool_search_output", "id": "tso_1", "tools": [{"type": "function", "name": "t"}]});
        let canonical = json!([
            {"kind": "request", "parts": [{"kind": "user_prompt", "text": "go"}]},
            {"kind": "response", "parts": [{"kind": "provider_item", "protocol": "openai-responses", "item": item}]},
        ]);
        let history = History::from_json(&canonical).unwrap();
        assert_eq!(history.to_json(), canonical);
        let Message::Response { parts } = &*history.messages()[1] else { panic!("a response") };
        assert_eq!(provider_items(parts, Provider::OpenAiResponses).collect::<Vec<_>>(), [&item]);
        assert_eq!(provider_items(parts, Provider::Anthropic).count(), 0);
        assert_eq!(history.messages()[1].text(), None);
    }

    #[test]
    fn calls_without_returns_and_returns_without_calls_are_refused() {
        let call =
            json!({"kind": "response", "parts": [{"kind": "tool_call", "id": "c1", "name": "t", "arguments": {}}]});
        let ret = |id: &str| {
            json!({"kind": "request", "parts": [{"kind": "tool_return", "tool_call_id": id, "name": "t",
                "content": 1, "is_error": false}]})
        };
        let text = json!({"kind": "response", "parts": [{"kind": "text", "text": "done"}]});
        let prompt = json!({"kind": "request", "parts": [{"kind": "user_prompt", "text": "go"}]});
        assert!(History::from_json(&json!([prompt, call, ret("c1"), text])).is_ok());
        // A final call may still wait for its return.
        assert!(History::from_json(&json!([prompt, call])).is_ok());
        let err = History::from_json(&json!([prompt, call, ret("c2")])).unwrap_err().to_string();
        assert!(err.contains("message 2, part 0: tool return `c2` answers no tool call"), "{err}");
        let err = History::from_json(&json!([prompt, call, prompt, text])).unwrap_err().to_string();
        assert!(err.contains("message 1, part 0: tool call `c1` (`t`) has no return in message 2"), "{err}");
        let err = History::from_json(&json!([prompt, call, text])).unwrap_err().to_string();
        assert!(err.contains("message 1, part 0: tool call `c1` (`t`) has no return"), "{err}");
        let err = History::from_json(&json!([ret("c1")])).unwrap_err().to_string();
        assert!(err.contains("message 0, part 0: tool return `c1` answers no tool call"), "{err}");
    }

    #[test]
    fn a_part_without_a_kind_is_a_named_error_not_a_panic() {
        let err = History::from_json(&json!([{"kind": "request", "parts": [{}]}])).unwrap_err().to_string();
        assert!(err.contains("message 0"), "{err}");
        let err = History::from_json(&json!([{"parts": [{}]}])).unwrap_err().to_string();
        assert!(err.contains("missing field `kind`"), "{err}");
    }

    #[test]
    fn malformed_history_names_the_message() {
        let err = History::from_json(&json!([{"kind": "request", "parts": [{"kind": "shout"}]}])).unwrap_err();
        assert!(err.to_string().starts_with("invalid history: message 0:"), "{err}");
        assert!(History::from_json(&json!({})).is_err());
    }
}
