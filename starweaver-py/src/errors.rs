//! Errors across the boundary. The exception classes are defined in Python
//! (`starweaver/exceptions.py`, so they take keyword arguments like `metadata=`); Rust
//! imports them once and maps both ways: a tool's exception into the core `ToolError`
//! kind, and a core `Error` into the class named for what went wrong.

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;
use serde_json::{Value, json};
use starweaver::{Error, ErrorCategory, ToolError, ToolErrorKind};

use crate::convert::{self, ConvertError};

/// A class from `starweaver.exceptions`, imported once.
fn class<'py>(py: Python<'py>, cell: &'static PyOnceLock<Py<PyType>>, name: &str) -> PyResult<&'py Bound<'py, PyType>> {
    cell.get_or_try_init(py, || {
        py.import("starweaver.exceptions")?.getattr(name)?.cast_into::<PyType>().map(Bound::unbind).map_err(Into::into)
    })
    .map(|class| class.bind(py))
}

macro_rules! classes {
    ($($fn_name:ident => $name:literal),* $(,)?) => {
        $(
            pub(crate) fn $fn_name(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
                static CELL: PyOnceLock<Py<PyType>> = PyOnceLock::new();
                class(py, &CELL, $name)
            }
        )*
    };
}

classes! {
    invalid_arguments => "InvalidArguments",
    model_retry => "ModelRetry",
    feedback => "Feedback",
    user_error => "UserError",
    execution => "Execution",
    approval_required => "ApprovalRequired",
    call_deferred => "CallDeferred",
    elicitation_required => "ElicitationRequired",
    cancelled => "Cancelled",
    timeout => "Timeout",
    registration_error => "RegistrationError",
    decision_error => "DecisionError",
    format_error => "FormatError",
    session_state_error => "SessionStateError",
    session_conflict_error => "SessionConflictError",
    session_store_error => "SessionStoreError",
    render_error => "RenderError",
    toolset_error => "ToolsetError",
    run_failed_error => "RunFailedError",
    usage_limit_exceeded => "UsageLimitExceeded",
    output_validation_error => "OutputValidationError",
    model_error => "ModelError",
    missing_api_key_error => "MissingApiKeyError",
    model_connection_error => "ModelConnectionError",
    model_timeout_error => "ModelTimeoutError",
    model_http_error => "ModelHTTPError",
    quota_exhausted_error => "QuotaExhaustedError",
    refusal_error => "RefusalError",
    content_filter_error => "ContentFilterError",
    unknown_finish_reason_error => "UnknownFinishReasonError",
    invalid_response_error => "InvalidResponseError",
    stream_interrupted_error => "StreamInterruptedError",
}

/// An exception of `class` (as one of the functions above looks it up) saying `message`;
/// the lookup's own error when the class could not be imported.
pub(crate) fn raise(class: PyResult<&Bound<'_, PyType>>, message: impl Into<String>) -> PyErr {
    let message = message.into();
    class.map_or_else(|e| e, |class| PyErr::from_type(class.clone(), message))
}

/// `error` as `class`, prefixed with what was being converted.
pub(crate) fn convert_error(error: &ConvertError, class: PyResult<&Bound<'_, PyType>>, what: &str) -> PyErr {
    raise(class, format!("{what}: {error}"))
}

/// A value without a JSON form is a `FormatError` unless the caller names a better class.
impl From<ConvertError> for PyErr {
    fn from(error: ConvertError) -> Self {
        Python::attach(|py| convert_error(&error, format_error(py), "value is not JSON"))
    }
}

/// A failed run's error as an exception instance named for it (not raised).
pub(crate) fn run_error(py: Python<'_>, error: &starweaver::RunError) -> PyResult<Py<PyAny>> {
    use starweaver::{ModelErrorKind, RunError};
    if let RunError::UsageLimitExceeded { limit, max, count } = error {
        let kwargs = pyo3::types::PyDict::new(py);
        kwargs.set_item("limit", limit)?;
        kwargs.set_item("max", max)?;
        kwargs.set_item("count", count)?;
        return Ok(usage_limit_exceeded(py)?.call((error.to_string(),), Some(&kwargs))?.unbind());
    }
    if let RunError::OutputValidation { max_retries, .. } = error {
        let kwargs = pyo3::types::PyDict::new(py);
        kwargs.set_item("max_retries", max_retries)?;
        return Ok(output_validation_error(py)?.call((error.to_string(),), Some(&kwargs))?.unbind());
    }
    let Some(details) = (match error {
        RunError::Model { error, .. } => error.as_deref(),
        _ => None,
    }) else {
        let class = if matches!(error, RunError::Model { .. }) { model_error(py)? } else { run_failed_error(py)? };
        return Ok(class.call1((error.to_string(),))?.unbind());
    };
    let class = match details.kind {
        ModelErrorKind::MissingApiKey => missing_api_key_error(py)?,
        ModelErrorKind::Connection => model_connection_error(py)?,
        ModelErrorKind::Timeout => model_timeout_error(py)?,
        ModelErrorKind::Http => model_http_error(py)?,
        ModelErrorKind::QuotaExhausted => quota_exhausted_error(py)?,
        ModelErrorKind::Refusal => refusal_error(py)?,
        ModelErrorKind::ContentFilter => content_filter_error(py)?,
        ModelErrorKind::UnknownFinishReason => unknown_finish_reason_error(py)?,
        ModelErrorKind::InvalidResponse => invalid_response_error(py)?,
        ModelErrorKind::StreamInterrupted => stream_interrupted_error(py)?,
        _ => model_error(py)?,
    };
    let kwargs = pyo3::types::PyDict::new(py);
    kwargs.set_item("provider", details.provider.as_deref())?;
    kwargs.set_item("status", details.status)?;
    kwargs.set_item("request_id", details.request_id.as_deref())?;
    kwargs.set_item("body", details.body.as_deref())?;
    Ok(class.call((details.to_string(),), Some(&kwargs))?.unbind())
}

/// Looks up one exception class.
type ClassOf = for<'py> fn(Python<'py>) -> PyResult<&'py Bound<'py, PyType>>;

/// The tool outcome a Python exception stands for. Unexpected exceptions become
/// `Execution` errors whose traceback goes to `private_metadata` only.
pub(crate) fn tool_error(py: Python<'_>, err: &PyErr) -> ToolError {
    let value = err.value(py);
    let kinds: [(ClassOf, ToolErrorKind); 10] = [
        (invalid_arguments, ToolErrorKind::InvalidArguments),
        (model_retry, ToolErrorKind::ModelRetry),
        (feedback, ToolErrorKind::Feedback),
        (user_error, ToolErrorKind::UserError),
        (approval_required, ToolErrorKind::ApprovalRequired),
        (call_deferred, ToolErrorKind::CallDeferred),
        (elicitation_required, ToolErrorKind::ElicitationRequired),
        (cancelled, ToolErrorKind::Cancelled),
        (timeout, ToolErrorKind::Timeout),
        (execution, ToolErrorKind::Execution),
    ];
    for (class, kind) in kinds {
        if class(py).is_ok_and(|c| value.is_instance(c).unwrap_or(false)) {
            let message = value
                .getattr(intern!(py, "message"))
                .and_then(|m| m.extract::<String>())
                .unwrap_or_else(|_| value.to_string());
            let metadata = value
                .getattr(intern!(py, "metadata"))
                .ok()
                .and_then(|m| convert::to_json(&m).ok())
                .and_then(|m| match m {
                    Value::Object(map) => Some(map),
                    _ => None,
                })
                .unwrap_or_default();
            let error = ToolError::new(kind, message).with_metadata(metadata);
            return if kind == ToolErrorKind::Execution { with_traceback(py, error, err) } else { error };
        }
    }
    if err.is_instance_of::<pyo3::exceptions::asyncio::CancelledError>(py) {
        return ToolError::cancelled("the tool was cancelled");
    }
    let type_name = value.get_type().name().map_or_else(|_| "Exception".into(), |n| n.to_string());
    with_traceback(py, ToolError::execution(format!("{type_name}: {value}")), err)
}

/// A tool error as the exception of its kind, with its metadata (what `await
/// ctx.elicit(...)` raises when asking failed, or when the run must wait for the answer),
/// so a tool that does not catch it ends as the runtime would end it.
pub(crate) fn raise_tool_error(py: Python<'_>, error: &ToolError) -> PyErr {
    let class = match error.kind() {
        ToolErrorKind::InvalidArguments => invalid_arguments(py),
        ToolErrorKind::ModelRetry => model_retry(py),
        ToolErrorKind::Feedback => feedback(py),
        ToolErrorKind::UserError => user_error(py),
        ToolErrorKind::ApprovalRequired => approval_required(py),
        ToolErrorKind::CallDeferred => call_deferred(py),
        ToolErrorKind::ElicitationRequired => elicitation_required(py),
        ToolErrorKind::Cancelled => cancelled(py),
        ToolErrorKind::Timeout => timeout(py),
        _ => execution(py),
    };
    let made = class.and_then(|class| {
        let kwargs = pyo3::types::PyDict::new(py);
        kwargs.set_item(intern!(py, "metadata"), convert::to_py(py, &Value::Object(error.metadata().clone()))?)?;
        class.call((error.message(),), Some(&kwargs))
    });
    match made {
        Ok(exception) => PyErr::from_value(exception),
        Err(failed) => failed,
    }
}

fn with_traceback(py: Python<'_>, error: ToolError, err: &PyErr) -> ToolError {
    static FORMAT: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    let traceback = FORMAT
        .import(py, "traceback", "format_exception")
        .and_then(|format| format.call1((err.get_type(py), err.value(py), err.traceback(py))))
        .and_then(|lines| lines.extract::<Vec<String>>())
        .map(|lines| lines.concat())
        .unwrap_or_default();
    let exception = err.value(py).get_type().name().map(|n| n.to_string()).unwrap_or_default();
    error.with_private_metadata(json!({"exception": exception, "traceback": traceback}))
}

/// A core error as the Python exception named for its category. The match names every
/// category, so a new one does not compile until it has a class here.
pub(crate) fn to_py_err(py: Python<'_>, error: &Error) -> PyErr {
    let class = match error.category() {
        ErrorCategory::Registration => registration_error(py),
        ErrorCategory::SessionState => session_state_error(py),
        ErrorCategory::Decision => decision_error(py),
        ErrorCategory::Format => format_error(py),
        ErrorCategory::SessionConflict => session_conflict_error(py),
        ErrorCategory::Store => session_store_error(py),
        ErrorCategory::Render => render_error(py),
        ErrorCategory::Toolset => toolset_error(py),
    };
    raise(class, error.to_string())
}

/// Raise helper for `Result<T, Error>` at `#[pymethods]` edges.
pub(crate) trait IntoPyResult<T> {
    fn into_py_result(self, py: Python<'_>) -> PyResult<T>;
}

impl<T> IntoPyResult<T> for Result<T, Error> {
    fn into_py_result(self, py: Python<'_>) -> PyResult<T> {
        self.map_err(|e| to_py_err(py, &e))
    }
}
