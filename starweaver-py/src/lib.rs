//! `starweaver._native`: the Rust runtime for the `starweaver` Python package. The core
//! crate knows nothing of Python; this crate converts at the edges and drives runs on the
//! caller's event loop.

mod agent;
mod bridge;
mod convert;
mod durable;
mod errors;
mod hitl;
mod hooks;
mod limits;
mod mcp;
mod model;
mod oauth;
mod output;
mod provider;
mod render;
mod result;
mod store;
mod stream;
mod task;
mod tool;
mod toolset;
mod trace;

use pyo3::prelude::*;

/// The native module. The public API is the `starweaver` package that wraps it.
#[pymodule(gil_used = false)]
mod _native {
    #[pymodule_export]
    use crate::agent::{PyAgent, PySession};
    #[pymodule_export]
    use crate::bridge::RustFuture;
    #[pymodule_export]
    use crate::durable::{
        PyAwaitCalls, PyCheckOutput, PyDone, PyDurableRun, PyListTools, PyRequestModel, PyStartCalls,
    };
    #[pymodule_export]
    use crate::hitl::{
        PyApprovalDecision, PyDeferredResult, PyElicitationResponse, PyHitl, PyPendingApproval, PyPendingDeferred,
        PyPendingElicitation,
    };
    #[pymodule_export]
    use crate::hooks::{PyNativeHooks, PyToolCall};
    #[pymodule_export]
    use crate::limits::{PyConcurrencyLimit, PyUsageLimits};
    #[pymodule_export]
    use crate::mcp::{PyMcpPrompt, PyMcpResource, PyMcpResourceTemplate};
    #[pymodule_export]
    use crate::model::{Messages, PyFunctionModel, PyTestModel, ToolDefinitions};
    #[pymodule_export]
    use crate::oauth::PyOAuth;
    #[pymodule_export]
    use crate::output::PyOutputSpec;
    #[pymodule_export]
    use crate::provider::PyProviderModel;
    #[pymodule_export]
    use crate::render::check_rendered;
    #[pymodule_export]
    use crate::result::{PyRunResult, PyUsage};
    #[pymodule_export]
    use crate::store::{PyMemorySessionStore, PySessionStore, PySqliteSessionStore};
    #[pymodule_export]
    use crate::stream::PyRunStream;
    #[pymodule_export]
    use crate::tool::{PyNativeTool, PyToolContext, PyToolDefinition, PyToolResult};
    #[pymodule_export]
    use crate::toolset::{PyMcpServer, PyMcpService, PyToolset};
    #[pymodule_export]
    use crate::trace::{PyTrace, PyTraceSpan};

    use pyo3::prelude::*;

    #[pymodule_init]
    fn init(m: &Bound<'_, PyModule>) -> PyResult<()> {
        m.add("__version__", env!("CARGO_PKG_VERSION"))?;
        // Registered at import, so it runs after the hooks of anything imported later.
        let before_exit = wrap_pyfunction!(crate::bridge::before_exit, m)?;
        m.py().import("atexit")?.call_method1("register", (before_exit,))?;
        m.add("PROVIDERS", starweaver::render::Provider::ALL.map(starweaver::render::Provider::as_str))
    }
}

pyo3_stub_gen::module_variable!("starweaver._native", "__version__", &str);
pyo3_stub_gen::module_variable!("starweaver._native", "PROVIDERS", Vec<String>);
pyo3_stub_gen::define_stub_info_gatherer!(gathered_stub_info);

/// The classes the stub declares generic, with their type parameters (the `TypeVar`s of
/// `starweaver.types`, whose defaults make a bare `ToolContext` a `ToolContext[None]`).
const GENERIC_CLASSES: [(&str, &str); 3] =
    [("ToolContext", "types.DepsT"), ("RunResult", "types.OutputT"), ("RunStream", "types.OutputT")];

/// The stub of `_native`: what the `#[gen_stub_*]` annotations gather, with a
/// `typing.Generic` base on the generic classes, which pyo3-stub-gen cannot declare.
///
/// # Errors
/// When the annotations cannot be gathered (pyo3-stub-gen's errors).
pub fn stub_info() -> pyo3_stub_gen::Result<pyo3_stub_gen::StubInfo> {
    let mut info = gathered_stub_info()?;
    for class in info.modules.values_mut().flat_map(|module| module.class.values_mut()) {
        if let Some((_, parameter)) = GENERIC_CLASSES.iter().find(|(name, _)| *name == class.name) {
            let mut base = pyo3_stub_gen::TypeInfo::unqualified(&format!("typing.Generic[{parameter}]"));
            base.import.extend(["typing".into(), "starweaver.types".into()]);
            class.bases.push(base);
        }
    }
    Ok(info)
}
