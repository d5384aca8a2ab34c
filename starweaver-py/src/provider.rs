//! Real models for Python: one native class over the four provider protocols; the typed
//! classes in `starweaver.models` (`OpenAIChatModel`, ...) build it.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyDict;
use pyo3_stub_gen::derive::{gen_stub_pyclass, gen_stub_pymethods};
use serde_json::{Map, Value};
use starweaver::Model;
use starweaver::provider::{AnthropicModel, GeminiModel, OpenAIChatModel, OpenAIResponsesModel, Settings};

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

#[gen_stub_pymethods]
#[pymethods]
impl PyProviderModel {
    /// `options` are the fields of the core's `provider::Settings` (times in seconds),
    /// read by serde; `RegistrationError` names an unknown protocol or option, or one out
    /// of range. `tool_choice` is `"auto"`, `"required"`, `"none"`, or `{"tool": name}`.
    #[new]
    #[pyo3(signature = (protocol, name, **options))]
    fn new(
        py: Python<'_>,
        protocol: &str,
        name: String,
        #[gen_stub(override_type(
            type_repr = "typing_extensions.Unpack[types.ModelOptions]",
            imports = ("typing_extensions", "starweaver.types")
        ))]
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let label = name.clone();
        let invalid = |message: String| {
            errors::raise(errors::registration_error(py), format!("invalid model `{label}`: {message}"))
        };
        let options = match options {
            Some(options) => convert::to_json(options.as_any()).map_err(|e| invalid(e.to_string()))?,
            None => Value::Object(Map::new()),
        };
        let settings: Settings = serde_path_to_error::deserialize(options).map_err(|e| {
            let option = e.path().to_string();
            invalid(format!("option `{option}`: {}", e.into_inner()))
        })?;
        let (model, description) = match protocol {
            "openai-chat" => describe(OpenAIChatModel::new(name).settings(settings)),
            "openai-responses" => describe(OpenAIResponsesModel::new(name).settings(settings)),
            "anthropic" => describe(AnthropicModel::new(name).settings(settings)),
            "gemini" => describe(GeminiModel::new(name).settings(settings)),
            other => {
                return Err(invalid(format!(
                    "unknown protocol `{other}`; expected one of \"openai-chat\", \"openai-responses\", \"anthropic\", \"gemini\""
                )));
            }
        };
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
