//! `UsageLimits`: what one run may spend, from Python.

use pyo3::prelude::*;
use pyo3_stub_gen::derive::{gen_stub_pyclass, gen_stub_pymethods};
use starweaver::{ConcurrencyLimit, UsageLimits};

/// What one run (from its start, or a resume) may spend: model `requests`, `tool_calls`
/// started, and `input_tokens`, `output_tokens` and `total_tokens`; `None` is no limit.
/// Checked before each model request and each call: nothing past a limit starts, and the
/// run ends `failed` with a `UsageLimitExceeded` naming the limit and the count.
#[gen_stub_pyclass]
#[pyclass(module = "starweaver._native", name = "UsageLimits", frozen)]
#[derive(Clone)]
pub struct PyUsageLimits(pub(crate) UsageLimits);

#[gen_stub_pymethods]
#[pymethods]
impl PyUsageLimits {
    /// Raises `ValueError` for a negative limit.
    #[new]
    #[pyo3(signature = (*, requests=None, tool_calls=None, input_tokens=None, output_tokens=None, total_tokens=None))]
    fn new(
        requests: Option<i64>,
        tool_calls: Option<i64>,
        input_tokens: Option<i64>,
        output_tokens: Option<i64>,
        total_tokens: Option<i64>,
    ) -> PyResult<Self> {
        let limit = |name: &str, value: Option<i64>| -> PyResult<Option<u64>> {
            value
                .map(|n| {
                    u64::try_from(n).map_err(|_| {
                        pyo3::exceptions::PyValueError::new_err(format!("`{name}` must be 0 or more, got {n}"))
                    })
                })
                .transpose()
        };
        let mut limits = UsageLimits::new();
        limits.requests = limit("requests", requests)?;
        limits.tool_calls = limit("tool_calls", tool_calls)?;
        limits.input_tokens = limit("input_tokens", input_tokens)?;
        limits.output_tokens = limit("output_tokens", output_tokens)?;
        limits.total_tokens = limit("total_tokens", total_tokens)?;
        Ok(Self(limits))
    }

    /// Model requests, or `None`.
    #[getter]
    fn requests(&self) -> Option<u64> {
        self.0.requests
    }
    /// Tool calls started, or `None`.
    #[getter]
    fn tool_calls(&self) -> Option<u64> {
        self.0.tool_calls
    }
    /// Tokens sent, or `None`.
    #[getter]
    fn input_tokens(&self) -> Option<u64> {
        self.0.input_tokens
    }
    /// Tokens generated, or `None`.
    #[getter]
    fn output_tokens(&self) -> Option<u64> {
        self.0.output_tokens
    }
    /// Tokens sent and generated, or `None`.
    #[getter]
    fn total_tokens(&self) -> Option<u64> {
        self.0.total_tokens
    }
    fn __repr__(&self) -> String {
        let UsageLimits { requests, tool_calls, input_tokens, output_tokens, total_tokens, .. } = self.0;
        let set = [
            ("requests", requests),
            ("tool_calls", tool_calls),
            ("input_tokens", input_tokens),
            ("output_tokens", output_tokens),
            ("total_tokens", total_tokens),
        ];
        let shown: Vec<String> = set.iter().filter_map(|(name, n)| n.map(|n| format!("{name}={n}"))).collect();
        format!("UsageLimits({})", shown.join(", "))
    }
}

/// How many tool calls may run at once, shared by name: every tool, toolset and agent of
/// the process given `ConcurrencyLimit("search-api", 4)` shares one limit of 4 running
/// calls. `max_concurrency` options take one of these or a number (a limit of their own).
/// Raises `ValueError` for `max_running` below 1, an empty name, or a name already held by
/// a limit of another size.
#[gen_stub_pyclass]
#[pyclass(module = "starweaver._native", name = "ConcurrencyLimit", frozen, eq, hash)]
#[derive(Clone, PartialEq)]
pub struct PyConcurrencyLimit(pub(crate) ConcurrencyLimit);

/// Equal limits (one name, one size) hash alike.
impl std::hash::Hash for PyConcurrencyLimit {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (self.0.name(), self.0.max_running()).hash(state);
    }
}

#[gen_stub_pymethods]
#[pymethods]
impl PyConcurrencyLimit {
    #[new]
    fn new(name: String, max_running: i64) -> PyResult<Self> {
        let max_running = u32::try_from(max_running).unwrap_or(if max_running < 1 { 0 } else { u32::MAX });
        ConcurrencyLimit::shared(name, max_running)
            .map(Self)
            .map_err(|error| pyo3::exceptions::PyValueError::new_err(error.to_string()))
    }

    /// The limit's name.
    #[getter]
    fn name(&self) -> &str {
        self.0.name().unwrap_or_default()
    }

    /// How many calls may run at once.
    #[getter]
    fn max_running(&self) -> u32 {
        self.0.max_running()
    }

    fn __repr__(&self) -> String {
        format!("ConcurrencyLimit({:?}, {})", self.name(), self.0.max_running())
    }
}

/// A `max_concurrency` option: a number of calls (a limit of its own) or a shared
/// `ConcurrencyLimit`.
pub(crate) struct MaxConcurrency(pub(crate) ConcurrencyLimit);

impl<'a, 'py> FromPyObject<'a, 'py> for MaxConcurrency {
    type Error = PyErr;

    fn extract(value: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if let Ok(shared) = value.cast::<PyConcurrencyLimit>() {
            return Ok(Self(shared.get().0.clone()));
        }
        // A number below 1 is refused where the limit is set, naming what it limits.
        match value.extract::<i64>() {
            Ok(calls) => Ok(Self(ConcurrencyLimit::from(calls))),
            Err(_) => Err(pyo3::exceptions::PyTypeError::new_err(format!(
                "`max_concurrency` must be a number of calls or a ConcurrencyLimit, got {}",
                value.repr().map_or_else(|_| "?".to_owned(), |repr| repr.to_string())
            ))),
        }
    }
}
