//! What a served module offers MCP clients besides tools: resources, resource templates
//! and prompts, built by `starweaver.mcp`'s decorators. Their functions are the layer's
//! coroutine functions, which return canonical JSON (content parts, prompt messages); each
//! is started and stepped on the loop that awaits the serving, like a tool.

use std::collections::HashMap;

use futures::FutureExt;
use futures::future::BoxFuture;
use pyo3::prelude::*;
use pyo3_stub_gen::derive::{gen_stub_pyclass, gen_stub_pymethods};
use serde::de::DeserializeOwned;
use starweaver::ToolError;
use starweaver::content::Part;
use starweaver::mcp::{
    CompletionRequest, McpPrompt, McpResource, McpResourceTemplate, PromptArgument, PromptMessage, Role,
};

use crate::bridge::PyAwait;
use crate::convert;
use crate::errors::{self, IntoPyResult};

/// Calls the layer's coroutine function `function(*args)` and reads what it returns as
/// `T`; a Python exception is the `ToolError` of its kind, so `InvalidArguments` answers
/// with invalid params.
fn call<T, A>(function: &Py<PyAny>, args: A, what: &'static str) -> BoxFuture<'static, Result<T, ToolError>>
where
    T: DeserializeOwned + Send + 'static,
    A: for<'py> pyo3::call::PyCallArgs<'py> + Send + 'static,
{
    let function = Python::attach(|py| function.clone_ref(py));
    async move {
        let started = Python::attach(|py| function.bind(py).call1(args).and_then(PyAwait::new));
        let outcome = match started {
            Ok(awaitable) => awaitable.await,
            Err(err) => Err(err),
        };
        Python::attach(|py| {
            let value = outcome.map_err(|err| errors::tool_error(py, &err))?;
            let json = convert::to_json(value.bind(py)).map_err(|e| ToolError::execution(format!("{what}: {e}")))?;
            serde_json::from_value(json).map_err(|e| ToolError::execution(format!("{what}: {e}")))
        })
    }
    .boxed()
}

/// A completer of the layer's: `complete(value, arguments)` gives the values.
fn completer(complete: Py<PyAny>) -> impl Fn(CompletionRequest) -> BoxFuture<'static, Result<Vec<String>, ToolError>> {
    move |request| {
        call(&complete, (request.value, request.arguments), "the completer's values are not a list of strings")
    }
}

/// A resource at a fixed URI. Use `starweaver.mcp.resource`.
#[gen_stub_pyclass]
#[pyclass(module = "starweaver._native", name = "NativeMcpResource", frozen)]
pub struct PyMcpResource(pub(crate) McpResource);

#[gen_stub_pymethods]
#[pymethods]
impl PyMcpResource {
    /// `read(uri, variables)` returns a coroutine of the contents as canonical part dicts.
    #[new]
    #[pyo3(signature = (uri, name, read, *, title=None, description=None, mime_type=None))]
    fn new(
        uri: String,
        name: String,
        read: Py<PyAny>,
        title: Option<String>,
        description: Option<String>,
        mime_type: Option<String>,
    ) -> Self {
        let resource = McpResource::new(uri, name, move |request| {
            call::<Vec<Part>, _>(
                &read,
                (request.uri, request.variables),
                "the resource's contents are not content parts",
            )
        });
        Self(with(
            resource,
            [(title, |r, v| r.title(v)), (description, |r, v| r.description(v)), (mime_type, |r, v| r.mime_type(v))],
        ))
    }
}

/// A templated resource. Use `starweaver.mcp.resource_template`.
#[gen_stub_pyclass]
#[pyclass(module = "starweaver._native", name = "NativeMcpResourceTemplate", frozen)]
pub struct PyMcpResourceTemplate(pub(crate) McpResourceTemplate);

#[gen_stub_pymethods]
#[pymethods]
impl PyMcpResourceTemplate {
    /// `read(uri, variables)` as for a resource; `completers` maps a variable to
    /// `complete(value, arguments)`, a coroutine of its values. Raises `RegistrationError`
    /// for a template beyond RFC 6570 level 1.
    #[new]
    #[pyo3(signature = (uri_template, name, read, *, title=None, description=None, mime_type=None, completers=None))]
    #[allow(clippy::too_many_arguments)] // the keywords of the Python constructor
    fn new(
        py: Python<'_>,
        uri_template: String,
        name: String,
        read: Py<PyAny>,
        title: Option<String>,
        description: Option<String>,
        mime_type: Option<String>,
        completers: Option<HashMap<String, Py<PyAny>>>,
    ) -> PyResult<Self> {
        let mut template = McpResourceTemplate::new(uri_template, name, move |request| {
            call::<Vec<Part>, _>(
                &read,
                (request.uri, request.variables),
                "the resource's contents are not content parts",
            )
        });
        template.variables().into_py_result(py)?;
        for (variable, complete) in completers.unwrap_or_default() {
            template = template.complete(variable, completer(complete));
        }
        Ok(Self(with(
            template,
            [(title, |t, v| t.title(v)), (description, |t, v| t.description(v)), (mime_type, |t, v| t.mime_type(v))],
        )))
    }

    /// The template's variables, in order.
    #[getter]
    fn variables(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        self.0.variables().into_py_result(py)
    }
}

/// An optional field and the builder method that sets it.
type Setting<T> = (Option<String>, fn(T, String) -> T);

/// `item` with each setting that has a value applied.
fn with<T, const N: usize>(item: T, settings: [Setting<T>; N]) -> T {
    settings.into_iter().fold(item, |item, (value, set)| match value {
        Some(value) => set(item, value),
        None => item,
    })
}

/// A prompt message as the layer gives it: `{"role": "user" | "assistant", "content": part}`.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Message {
    role: MessageRole,
    content: Part,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "lowercase")]
enum MessageRole {
    User,
    Assistant,
}

/// A prompt. Use `starweaver.mcp.prompt`.
#[gen_stub_pyclass]
#[pyclass(module = "starweaver._native", name = "NativeMcpPrompt", frozen)]
pub struct PyMcpPrompt(pub(crate) McpPrompt);

#[gen_stub_pymethods]
#[pymethods]
impl PyMcpPrompt {
    /// `get(arguments)` returns a coroutine of the messages as `{"role", "content"}`
    /// dicts; `arguments` are `(name, description, required)`; `completers` maps an
    /// argument to `complete(value, arguments)`, a coroutine of its values.
    #[new]
    #[pyo3(signature = (name, get, *, title=None, description=None, arguments=None, completers=None))]
    fn new(
        name: String,
        get: Py<PyAny>,
        title: Option<String>,
        description: Option<String>,
        arguments: Option<Vec<(String, Option<String>, bool)>>,
        completers: Option<HashMap<String, Py<PyAny>>>,
    ) -> Self {
        let mut prompt = McpPrompt::new(name, move |request| {
            let messages = call::<Vec<Message>, _>(&get, (request.arguments,), "the prompt's messages cannot be read");
            messages.map(|messages| Ok(messages?.into_iter().map(message).collect())).boxed()
        });
        prompt = with(prompt, [(title, |p, v| p.title(v)), (description, |p, v| p.description(v))]);
        for (name, description, required) in arguments.unwrap_or_default() {
            let argument = if required { PromptArgument::required(name) } else { PromptArgument::optional(name) };
            prompt = prompt.argument(match description {
                Some(description) => argument.description(description),
                None => argument,
            });
        }
        for (argument, complete) in completers.unwrap_or_default() {
            prompt = prompt.complete(argument, completer(complete));
        }
        Self(prompt)
    }
}

fn message(Message { role, content }: Message) -> PromptMessage {
    let role = match role {
        MessageRole::User => Role::User,
        MessageRole::Assistant => Role::Assistant,
    };
    PromptMessage::new(role, content)
}
