//! Provider renderers and their checker for Python: `ToolDefinition.render(...)` and
//! `check_rendered(...)`.

use pyo3::prelude::*;
use pyo3_stub_gen::derive::gen_stub_pyfunction;
use starweaver::ToolDefinition;
use starweaver::render::{self, Provider};

use crate::convert;
use crate::errors::IntoPyResult;

/// A provider name as Python passes it; an unknown one is a `ValueError` listing the known.
pub(crate) fn provider(name: &str) -> PyResult<Provider> {
    name.parse().map_err(|e: starweaver::Error| pyo3::exceptions::PyValueError::new_err(e.to_string()))
}

/// `definition` in `provider`'s format, as a dict.
pub(crate) fn render_definition<'py>(
    py: Python<'py>,
    definition: &ToolDefinition,
    provider_name: &str,
    strict: Option<bool>,
) -> PyResult<Bound<'py, PyAny>> {
    let rendered = render::render(definition, provider(provider_name)?, strict).into_py_result(py)?;
    convert::to_py(py, &rendered)
}

/// Every way `rendered` (one tool in `provider`'s format, as `ToolDefinition.render` gives
/// it) breaks that provider's documented rules, each naming its JSON Pointer; empty when
/// it meets them all.
#[gen_stub_pyfunction]
#[pyfunction]
pub fn check_rendered(provider_name: &str, rendered: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
    Ok(render::check(provider(provider_name)?, &convert::to_json(rendered)?))
}
