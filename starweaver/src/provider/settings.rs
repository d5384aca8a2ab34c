//! [`Settings`]: where and how to reach a model and how it samples, as the builder sets
//! them and as data; with [`ToolChoice`], [`Pairs`] and the defaults that apply when unset.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use super::http::{self, RetryPolicy, Timeouts};
use super::key::ApiKey;

/// HTTP retries of one model request after its first attempt, unless set (as the `openai`
/// SDK does). A tool's own retries are [`DEFAULT_MAX_RETRIES`](crate::DEFAULT_MAX_RETRIES).
pub const DEFAULT_MAX_HTTP_RETRIES: u32 = 2;
/// The most bytes one answer may have unless set: far past any model's answer, far short
/// of what would hurt the process.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 64 * 1024 * 1024;

/// Which tool the model must, may or must not call. As data: `"auto"`, `"required"`,
/// `"none"` or `{"tool": name}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(from = "ToolChoiceData")]
pub enum ToolChoice {
    /// The model decides (the default).
    Auto,
    /// The model must call some tool.
    Required,
    /// The model must not call tools.
    None,
    /// The model must call this tool.
    Tool(String),
}

#[derive(Deserialize)]
#[serde(untagged, expecting = "expected \"auto\", \"required\", \"none\" or {\"tool\": name}")]
enum ToolChoiceData {
    Mode(Mode),
    Tool { tool: String },
}

#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum Mode {
    Auto,
    Required,
    None,
}

impl From<ToolChoiceData> for ToolChoice {
    fn from(data: ToolChoiceData) -> Self {
        match data {
            ToolChoiceData::Mode(Mode::Auto) => Self::Auto,
            ToolChoiceData::Mode(Mode::Required) => Self::Required,
            ToolChoiceData::Mode(Mode::None) => Self::None,
            ToolChoiceData::Tool { tool } => Self::Tool(tool),
        }
    }
}

/// Everything a [`ProviderModel`](super::ProviderModel) holds besides its protocol and
/// name: where and how to reach the model, and the sampling settings sent with every
/// request. The builder methods set it field by field; as data (the Python binding's
/// keyword arguments) it has their names, times in seconds, and refuses any other name.
///
/// ```
/// use starweaver::provider::{OpenAIChatModel, Settings};
///
/// let settings: Settings = serde_json::from_value(serde_json::json!({
///     "base_url": "http://127.0.0.1:8080/v1",
///     "timeout": 30.0,
///     "tool_choice": {"tool": "add"},
/// }))?;
/// let model = OpenAIChatModel::new("local").settings(settings);
/// assert_eq!(model.name(), "local");
/// assert!(serde_json::from_value::<Settings>(serde_json::json!({"temprature": 0.0})).is_err());
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// Where the API lives; by default the protocol's environment variable, then its URL.
    pub base_url: Option<String>,
    /// The key; by default read from the environment.
    pub api_key: Option<ApiKey>,
    /// The environment variable holding the key, when not the protocol's usual one.
    pub api_key_env: Option<String>,
    /// The header that carries the key as is, instead of the protocol's own.
    pub api_key_header: Option<String>,
    /// Azure OpenAI's `api-version`; the key then goes in `api-key`.
    pub azure_api_version: Option<String>,
    /// Extra headers on every request.
    #[serde(default, deserialize_with = "or_default")]
    pub headers: Pairs,
    /// Extra query parameters on every request.
    #[serde(default, deserialize_with = "or_default")]
    pub query: Pairs,
    /// How long one attempt may take in all (600 s by default).
    #[serde(default, deserialize_with = "seconds")]
    pub timeout: Option<Duration>,
    /// How long to wait for a connection (10 s by default).
    #[serde(default, deserialize_with = "seconds")]
    pub connect_timeout: Option<Duration>,
    /// How long to wait between bytes of an answer (120 s by default).
    #[serde(default, deserialize_with = "seconds")]
    pub read_timeout: Option<Duration>,
    /// Retries after a connection error, 408, 409, 429 or 5xx ([`DEFAULT_MAX_HTTP_RETRIES`]
    /// by default).
    pub max_retries: Option<u32>,
    /// The longest wait before a retry (60 s by default, and never longer than `timeout`):
    /// a server whose `Retry-After` asks for more gets no retry, so no request waits past
    /// what the model allows.
    #[serde(default, deserialize_with = "seconds")]
    pub max_retry_wait: Option<Duration>,
    /// The most bytes one answer may have, whole or streamed (64 MiB by default): a
    /// larger one is an `InvalidResponse` error, so no server can grow our memory.
    pub max_response_bytes: Option<usize>,
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// Nucleus sampling.
    pub top_p: Option<f64>,
    /// The most tokens an answer may have.
    pub max_tokens: Option<u64>,
    /// A sampling seed, where the provider takes one.
    pub seed: Option<i64>,
    /// Which tool the model must, may or must not call.
    pub tool_choice: Option<ToolChoice>,
    /// Whether the model may call several tools in one answer.
    pub parallel_tool_calls: Option<bool>,
    /// Merged into the request body last, so it can set anything the provider takes.
    #[serde(default, deserialize_with = "or_default")]
    pub extra_body: Map<String, Value>,
}

impl Settings {
    /// The query parameters every request carries: the extra ones, then Azure's version.
    pub(super) fn query_pairs(&self) -> impl Iterator<Item = (&str, &str)> + Clone {
        let azure = self.azure_api_version.as_deref().map(|version| ("api-version", version));
        self.query.0.iter().map(|(name, value)| (name.as_str(), value.as_str())).chain(azure)
    }

    /// The header that carries the key as is, if not the protocol's own: the one given,
    /// else Azure's `api-key`.
    pub(super) fn key_header(&self) -> Option<&str> {
        self.api_key_header.as_deref().or(self.azure_api_version.as_ref().map(|_| "api-key"))
    }

    pub(super) fn retry_policy(&self) -> RetryPolicy {
        let max_wait = self.max_retry_wait.unwrap_or(http::DEFAULT_MAX_RETRY_WAIT).min(self.timeouts().total);
        RetryPolicy { max_retries: self.max_retries.unwrap_or(DEFAULT_MAX_HTTP_RETRIES), max_wait }
    }

    pub(super) fn max_response_bytes(&self) -> usize {
        self.max_response_bytes.unwrap_or(DEFAULT_MAX_RESPONSE_BYTES)
    }

    pub(super) fn timeouts(&self) -> Timeouts {
        let default = Timeouts::default();
        Timeouts {
            connect: self.connect_timeout.unwrap_or(default.connect),
            read: self.read_timeout.unwrap_or(default.read),
            total: self.timeout.unwrap_or(default.total),
        }
    }
}

/// Names and values, in order (the builder may repeat a name): headers, query
/// parameters. A value may be a credential, so `Debug` shows the names only. As data, a
/// map of names to strings.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Pairs(pub Vec<(String, String)>);

impl fmt::Debug for Pairs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.0.iter().map(|(name, _)| name)).finish()
    }
}

impl<'de> Deserialize<'de> for Pairs {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Pairs;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map of names to strings")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Pairs, A::Error> {
                std::iter::from_fn(|| map.next_entry().transpose()).collect::<Result<_, _>>().map(Pairs)
            }
        }
        deserializer.deserialize_map(Visitor)
    }
}

/// `null` stands for the default (none), as leaving the field out does.
fn or_default<'de, D: Deserializer<'de>, T: Deserialize<'de> + Default>(deserializer: D) -> Result<T, D::Error> {
    Ok(Option::deserialize(deserializer)?.unwrap_or_default())
}

fn seconds<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Duration>, D::Error> {
    let Some(seconds) = Option::<f64>::deserialize(deserializer)? else { return Ok(None) };
    Duration::try_from_secs_f64(seconds).map(Some).map_err(|_| {
        serde::de::Error::invalid_value(serde::de::Unexpected::Float(seconds), &"a positive number of seconds")
    })
}
