//! Real models for Python: one native class over the four provider protocols; the typed
//! classes in `starweaver.models` (`OpenAIChatModel`, ...) build it.

use std::sync::Arc;
use std::time::Duration;

use pyo3::prelude::*;
use pyo3_stub_gen::derive::{gen_stub_pyclass, gen_stub_pymethods};
use serde_json::{Map, Value};
use starweaver::Model;
use starweaver::provider::{
    AnthropicModel, GeminiModel, OpenAIChatModel, OpenAIResponsesModel, Protocol, ProviderModel, ToolChoice,
};

use crate::convert;
use crate::errors;

/// A model behind a provider's HTTP API. `protocol` is `"openai-chat"`,
/// `"openai-responses"`, `"anthropic"` or `"gemini"`; keys and base URLs default to the
/// usual environment variables. Use the classes in `starweaver.models`.
#[gen_stub_pyclass]
#[pyclass(module = "starweaver._native", name = "NativeProviderModel", frozen)]
pub struct PyProviderModel {
    pub(crate) model: Arc<dyn Model>,
    description: String,
}

/// Everything a provider model is built from.
struct Options {
    base_url: Option<String>,
    api_key: Option<String>,
    api_key_env: Option<String>,
    headers: Map<String, Value>,
    azure_api_version: Option<String>,
    timeout: Option<f64>,
    connect_timeout: Option<f64>,
    read_timeout: Option<f64>,
    max_retries: Option<u32>,
    temperature: Option<f64>,
    top_p: Option<f64>,
    max_tokens: Option<u64>,
    seed: Option<i64>,
    tool_choice: Option<ToolChoice>,
    parallel_tool_calls: Option<bool>,
    extra_body: Map<String, Value>,
}

impl Options {
    fn build<P: Protocol>(self, name: String) -> Result<ProviderModel<P>, String> {
        let seconds = |what: &str, value: Option<f64>| -> Result<Option<Duration>, String> {
            value
                .map(|s| {
                    Duration::try_from_secs_f64(s).map_err(|_| format!("`{what}` must be a positive number of seconds"))
                })
                .transpose()
        };
        let mut model = ProviderModel::<P>::new(name);
        if let Some(url) = self.base_url {
            model = model.base_url(url);
        }
        if let Some(key) = self.api_key {
            model = model.api_key(key);
        }
        if let Some(env) = self.api_key_env {
            model = model.api_key_env(env);
        }
        if let Some(version) = self.azure_api_version {
            model = model.azure(version);
        }
        for (header, value) in self.headers {
            let Value::String(value) = value else { return Err(format!("header `{header}` must be a string")) };
            model = model.header(header, value);
        }
        if let Some(t) = seconds("timeout", self.timeout)? {
            model = model.timeout(t);
        }
        if let Some(t) = seconds("connect_timeout", self.connect_timeout)? {
            model = model.connect_timeout(t);
        }
        if let Some(t) = seconds("read_timeout", self.read_timeout)? {
            model = model.read_timeout(t);
        }
        if let Some(n) = self.max_retries {
            model = model.max_retries(n);
        }
        if let Some(t) = self.temperature {
            model = model.temperature(t);
        }
        if let Some(p) = self.top_p {
            model = model.top_p(p);
        }
        if let Some(n) = self.max_tokens {
            model = model.max_tokens(n);
        }
        if let Some(seed) = self.seed {
            model = model.seed(seed);
        }
        if let Some(choice) = self.tool_choice {
            model = model.tool_choice(choice);
        }
        if let Some(parallel) = self.parallel_tool_calls {
            model = model.parallel_tool_calls(parallel);
        }
        Ok(model.extra_body(self.extra_body))
    }
}

#[gen_stub_pymethods]
#[pymethods]
impl PyProviderModel {
    /// Raises `RegistrationError` naming an unknown protocol or a setting out of range.
    /// `tool_choice` is `"auto"`, `"required"`, `"none"`, or `{"tool": name}`.
    #[new]
    #[pyo3(signature = (protocol, name, *, base_url=None, api_key=None, api_key_env=None, headers=None, azure_api_version=None, timeout=None, connect_timeout=None, read_timeout=None, max_retries=None, temperature=None, top_p=None, max_tokens=None, seed=None, tool_choice=None, parallel_tool_calls=None, extra_body=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        protocol: &str,
        name: String,
        base_url: Option<String>,
        api_key: Option<String>,
        api_key_env: Option<String>,
        headers: Option<&Bound<'_, PyAny>>,
        azure_api_version: Option<String>,
        timeout: Option<f64>,
        connect_timeout: Option<f64>,
        read_timeout: Option<f64>,
        max_retries: Option<u32>,
        temperature: Option<f64>,
        top_p: Option<f64>,
        max_tokens: Option<u64>,
        seed: Option<i64>,
        tool_choice: Option<&Bound<'_, PyAny>>,
        parallel_tool_calls: Option<bool>,
        extra_body: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let registration = |message: String| errors::raise(errors::registration_error(py), message);
        let object = |value: Option<&Bound<'_, PyAny>>, what: &str| {
            value
                .map(|v| convert::to_json_object(v, what).map_err(|e| registration(format!("model option {e}"))))
                .transpose()
                .map(Option::unwrap_or_default)
        };
        let tool_choice =
            match tool_choice.map(convert::to_json).transpose().map_err(|e| registration(e.to_string()))? {
                None => None,
                Some(Value::String(choice)) if choice == "auto" => Some(ToolChoice::Auto),
                Some(Value::String(choice)) if choice == "required" => Some(ToolChoice::Required),
                Some(Value::String(choice)) if choice == "none" => Some(ToolChoice::None),
                Some(Value::Object(map)) if map.len() == 1 && map.get("tool").is_some_and(Value::is_string) => {
                    map.get("tool").and_then(Value::as_str).map(|name| ToolChoice::Tool(name.to_owned()))
                }
                Some(other) => {
                    return Err(registration(format!(
                        "`tool_choice` must be \"auto\", \"required\", \"none\" or {{\"tool\": name}}, got {other}"
                    )));
                }
            };
        let options = Options {
            base_url,
            api_key,
            api_key_env,
            headers: object(headers, "headers")?,
            azure_api_version,
            timeout,
            connect_timeout,
            read_timeout,
            max_retries,
            temperature,
            top_p,
            max_tokens,
            seed,
            tool_choice,
            parallel_tool_calls,
            extra_body: object(extra_body, "extra_body")?,
        };
        let built: Result<(Arc<dyn Model>, String), String> = match protocol {
            "openai-chat" => options.build::<starweaver::provider::OpenAIChat>(name).map(describe::<OpenAIChatModel>),
            "openai-responses" => {
                options.build::<starweaver::provider::OpenAIResponses>(name).map(describe::<OpenAIResponsesModel>)
            }
            "anthropic" => options.build::<starweaver::provider::Anthropic>(name).map(describe::<AnthropicModel>),
            "gemini" => options.build::<starweaver::provider::Gemini>(name).map(describe::<GeminiModel>),
            other => Err(format!(
                "unknown protocol `{other}`; expected one of \"openai-chat\", \"openai-responses\", \"anthropic\", \"gemini\""
            )),
        };
        let (model, description) = built.map_err(registration)?;
        Ok(Self { model, description })
    }

    /// The model's name as given.
    #[getter]
    fn name(&self) -> &str {
        self.model.model_name().unwrap_or_default()
    }

    /// The provider, as OpenTelemetry's `gen_ai.system` names it.
    #[getter]
    fn system(&self) -> &str {
        self.model.system().unwrap_or_default()
    }

    fn __repr__(&self) -> String {
        self.description.clone()
    }
}

/// The model, shared, and a repr that shows no credential.
fn describe<M: Model + std::fmt::Debug>(model: M) -> (Arc<dyn Model>, String) {
    let description = format!("{model:?}");
    (Arc::new(model), description)
}
