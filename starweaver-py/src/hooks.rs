//! Hooks written in Python: an object with any of `before_call`, `after_call`, `on_error`
//! and `prepare_tools`, sync or async, as the core [`Hooks`] trait. Which methods it has,
//! and which are coroutine functions, is read once: a missing method costs nothing per
//! call, and a sync one is called in place, without a future.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use pyo3_stub_gen::derive::{gen_stub_pyclass, gen_stub_pymethods};
use serde_json::Value;
use starweaver::hook::{Before, HookCall, Hooked, Hooks};
use starweaver::{ToolContext, ToolDefinition, ToolError, ToolResult};

use crate::bridge::{PyAwait, is_awaitable};
use crate::convert;
use crate::errors;
use crate::tool::{PyToolContext, PyToolDefinition, PyToolResult};

/// A tool call as hooks see it: `id`, `name` and `arguments` (a dict). Read-only: to
/// change the arguments, return new ones from `before_call`.
#[gen_stub_pyclass]
#[pyclass(module = "starweaver._native", name = "ToolCall", frozen)]
pub struct PyToolCall {
    id: Arc<str>,
    name: Arc<str>,
    /// The arguments (a copy: the object may outlive the call).
    json: Value,
}

#[gen_stub_pymethods]
#[pymethods]
impl PyToolCall {
    /// The model's call id.
    #[getter]
    fn id(&self) -> &str {
        &self.id
    }

    /// The tool's name.
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// The arguments, as earlier hooks left them: a fresh dict at each read, so changing
    /// it changes nothing unless `before_call` returns it.
    #[getter]
    #[gen_stub(override_return_type(type_repr = "types.JsonObject", imports = ("starweaver.types",)))]
    fn arguments<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        convert::to_py(py, &self.json)
    }

    fn __repr__(&self) -> String {
        format!("ToolCall(id={:?}, name={:?}, arguments={})", &*self.id, &*self.name, self.json)
    }
}

/// One method of a hook object: the bound method, and whether it is a coroutine function.
struct Method {
    call: Py<PyAny>,
    is_async: bool,
}

/// A Python hook object, as the runtime runs it. Made by the Python layer from any object
/// with some of the hook methods (`create_agent(hooks=[...])`, `toolset.with_hooks(...)`,
/// `agent.run(..., hooks=[...])`).
#[gen_stub_pyclass]
#[pyclass(module = "starweaver._native", name = "NativeHooks", frozen)]
pub struct PyNativeHooks(pub(crate) Arc<PyHooks>);

pub(crate) struct PyHooks {
    name: String,
    before_call: Option<Method>,
    after_call: Option<Method>,
    on_error: Option<Method>,
    prepare_tools: Option<Method>,
}

#[gen_stub_pymethods]
#[pymethods]
impl PyNativeHooks {
    /// Reads the hook methods `hooks` has; raises `TypeError` when it has none, or when
    /// one is not callable. Its name (in events and errors) is its `name` attribute if
    /// that is a str, else its class's name.
    #[new]
    fn new(py: Python<'_>, hooks: &Bound<'_, PyAny>) -> PyResult<Self> {
        let iscoroutinefunction = py.import("inspect")?.getattr("iscoroutinefunction")?;
        let class = hooks.get_type().name()?.to_string();
        let method = |name: &str| -> PyResult<Option<Method>> {
            let Some(found) = hooks.getattr_opt(name)?.filter(|m| !m.is_none()) else { return Ok(None) };
            if !found.is_callable() {
                return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                    "hook `{class}`: `{name}` must be a method, got {}",
                    found.get_type().qualname()?
                )));
            }
            let is_async = iscoroutinefunction.call1((&found,))?.is_truthy()?;
            Ok(Some(Method { call: found.unbind(), is_async }))
        };
        let hooks_found = PyHooks {
            name: match hooks.getattr_opt("name")? {
                Some(name) if name.is_instance_of::<pyo3::types::PyString>() => name.extract()?,
                _ => class.clone(),
            },
            before_call: method("before_call")?,
            after_call: method("after_call")?,
            on_error: method("on_error")?,
            prepare_tools: method("prepare_tools")?,
        };
        if hooks_found.before_call.is_none()
            && hooks_found.after_call.is_none()
            && hooks_found.on_error.is_none()
            && hooks_found.prepare_tools.is_none()
        {
            return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                "hook `{class}` has none of `before_call`, `after_call`, `on_error`, `prepare_tools`"
            )));
        }
        Ok(Self(Arc::new(hooks_found)))
    }

    /// The hook's name, as events and errors give it.
    #[getter]
    fn name(&self) -> &str {
        &self.0.name
    }

    fn __repr__(&self) -> String {
        format!("NativeHooks(name={:?})", self.0.name)
    }
}

/// Calls `method` with the arguments `args` makes; what it gives, read by `read` (with
/// what `args` kept for it): at once for a sync method, when it completes for an async one
/// (or a sync one that returned an awaitable). A Python exception is the `ToolError` of
/// its kind.
fn called<'a, T: Send + 'a, K: Send + 'a>(
    method: &Method,
    args: impl for<'py> FnOnce(Python<'py>) -> PyResult<(Bound<'py, pyo3::types::PyTuple>, K)>,
    read: impl FnOnce(Python<'_>, Bound<'_, PyAny>, K) -> Result<T, ToolError> + Send + 'a,
) -> Hooked<'a, Result<T, ToolError>> {
    let started = Python::attach(|py| {
        let (args, kept) = args(py)?;
        let returned = method.call.bind(py).call1(args)?;
        // A result, which hooks return often, is read at once too.
        if method.is_async || (!returned.is_instance_of::<PyToolResult>() && is_awaitable(&returned)?) {
            return Ok(Err((PyAwait::new(returned)?, kept, read)));
        }
        Ok(Ok(read(py, returned, kept)))
    });
    match started {
        Ok(Ok(read_now)) => Hooked::ready(read_now),
        Ok(Err((awaiting, kept, read))) => Hooked::new(async move {
            let outcome = awaiting.await;
            Python::attach(|py| match outcome {
                Ok(value) => read(py, value.into_bound(py), kept),
                Err(err) => Err(errors::tool_error(py, &err)),
            })
        }),
        Err(err) => Hooked::ready(Python::attach(|py| Err(errors::tool_error(py, &err)))),
    }
}

/// `hooked`'s value through `f`: at once when it is ready, so a sync hook stays free of
/// futures.
fn then<'a, T: Send + 'a, U: Send + 'a>(hooked: Hooked<'a, T>, f: impl FnOnce(T) -> U + Send + 'a) -> Hooked<'a, U> {
    match hooked {
        Hooked::Ready(value) => Hooked::Ready(value.map(f)),
        Hooked::Pending(future) => Hooked::new(async move { f(future.await) }),
    }
}

/// What a hook method returned that the runtime cannot use, as the call's failure.
fn unusable(method: &str, expected: &str, got: &Bound<'_, PyAny>) -> ToolError {
    let kind = got.get_type().qualname().map_or_else(|_| "?".to_owned(), |n| n.to_string());
    ToolError::execution(format!("`{method}` must return {expected}, got {kind}"))
}

/// The Python objects a call's hooks are handed: its context, and the call as the first
/// hook method saw it. Kept with the core's context of the call, so every hook method of
/// one call is handed the same `ToolContext`, and the same `ToolCall` while no hook has
/// rewritten the arguments since (the core counts the rewrites).
// Dropped with the core's context, on whatever thread ends the call: a thread not attached
// to Python leaves the two references to PyO3's reference pool, which gives them back at
// its next attach (so that pool must stay enabled).
struct CallView {
    ctx: Py<PyToolContext>,
    call: Py<PyToolCall>,
    /// The arguments' version `call` shows.
    version: u32,
}

/// The context and the call as `ctx`'s hook methods are handed them (see [`CallView`]).
fn view(py: Python<'_>, ctx: &ToolContext, call: &HookCall<'_>) -> PyResult<(Py<PyToolContext>, Py<PyToolCall>)> {
    let slot = ctx.binding_slot();
    if let Some(view) = slot.get().and_then(|kept| kept.downcast_ref::<CallView>()) {
        let shown =
            if view.version == ctx.arguments_version() { view.call.clone_ref(py) } else { call_to_py(py, call)? };
        return Ok((view.ctx.clone_ref(py), shown));
    }
    let made = CallView {
        ctx: Py::new(py, PyToolContext(ctx.clone()))?,
        call: call_to_py(py, call)?,
        version: ctx.arguments_version(),
    };
    let handed = (made.ctx.clone_ref(py), made.call.clone_ref(py));
    // A slot that holds something else keeps it, and the objects are made anew each time.
    let _ = slot.set(Arc::new(made));
    Ok(handed)
}

fn call_to_py(py: Python<'_>, call: &HookCall<'_>) -> PyResult<Py<PyToolCall>> {
    let (id, name, json) = (call.id.clone(), call.name.clone(), call.arguments.clone());
    Py::new(py, PyToolCall { id, name, json })
}

/// A returned value as a result: a `ToolResult` as given, any other value as its JSON.
fn result_of(value: Bound<'_, PyAny>, method: &str) -> Result<ToolResult, ToolError> {
    let value = match PyToolResult::take(value) {
        Ok(result) => return Ok(result),
        Err(value) => value,
    };
    convert::to_json(&value)
        .map(ToolResult::new)
        .map_err(|e| ToolError::execution(format!("`{method}` returned a value that is not JSON: {e}")))
}

impl Hooks for PyHooks {
    fn name(&self) -> &str {
        &self.name
    }

    fn before_call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        call: &'a HookCall<'a>,
    ) -> Hooked<'a, Result<Before, ToolError>> {
        let Some(method) = &self.before_call else { return Hooked::ready(Ok(Before::Continue)) };
        called(
            method,
            |py| Ok((view(py, ctx, call)?.into_pyobject(py)?, ())),
            |_, returned, ()| {
                if returned.is_none() {
                    return Ok(Before::Continue);
                }
                if returned.is_instance_of::<PyDict>() {
                    return convert::to_json(&returned).map(Before::Arguments).map_err(|e| {
                        ToolError::execution(format!("`before_call` returned arguments that are not JSON: {e}"))
                    });
                }
                if returned.is_instance_of::<PyToolResult>() {
                    return result_of(returned, "before_call").map(Before::Answer);
                }
                Err(unusable("before_call", "None, a dict of arguments or a ToolResult", &returned))
            },
        )
    }

    fn after_call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        call: &'a HookCall<'a>,
        result: &'a mut ToolResult,
    ) -> Hooked<'a, Result<(), ToolError>> {
        let Some(method) = &self.after_call else { return Hooked::ready(Ok(())) };
        // The Python object holds the result while the hook runs; what the hook leaves goes
        // back in its place (a failed hook's call ends with its error, the place unread).
        let taken = std::mem::take(&mut *result);
        let answered = called(
            method,
            move |py| {
                let (ctx, call) = view(py, ctx, call)?;
                let handed = Bound::new(py, PyToolResult(taken))?;
                Ok(((ctx, call, &handed).into_pyobject(py)?, handed.unbind()))
            },
            // `None` keeps the result: it comes back out unless the hook kept it (then it
            // is copied), as a result the hook returns does.
            |py, returned, handed| {
                if returned.is_none() {
                    return Ok(PyToolResult::into_result(handed.into_bound(py)));
                }
                drop(handed);
                result_of(returned, "after_call")
            },
        );
        then(answered, move |answered| answered.map(|left| *result = left))
    }

    fn on_error<'a>(
        &'a self,
        ctx: &'a ToolContext,
        call: &'a HookCall<'a>,
        error: ToolError,
    ) -> Hooked<'a, Result<ToolResult, ToolError>> {
        let Some(method) = &self.on_error else { return Hooked::ready(Err(error)) };
        let exception = Python::attach(|py| errors::raise_tool_error(py, &error).into_value(py));
        let rescued = called(
            method,
            move |py| {
                let (ctx, call) = view(py, ctx, call)?;
                Ok(((ctx, call, exception).into_pyobject(py)?, ()))
            },
            |_, returned, ()| if returned.is_none() { Ok(None) } else { result_of(returned, "on_error").map(Some) },
        );
        then(rescued, move |rescued| match rescued {
            Ok(Some(result)) => Ok(result),
            Ok(None) => Err(error),
            Err(raised) => Err(raised),
        })
    }

    fn prepare_tools<'a>(
        &'a self,
        ctx: &'a ToolContext,
        definitions: Vec<ToolDefinition>,
    ) -> Hooked<'a, Result<Vec<ToolDefinition>, ToolError>> {
        let Some(method) = &self.prepare_tools else { return Hooked::ready(Ok(definitions)) };
        let kept = definitions.clone();
        let prepared = called(
            method,
            move |py| {
                let listed = PyList::new(py, definitions.into_iter().map(PyToolDefinition))?;
                Ok(((Py::new(py, PyToolContext(ctx.clone()))?, listed).into_pyobject(py)?, ()))
            },
            |_, returned, ()| {
                if returned.is_none() {
                    return Ok(None);
                }
                let expected = "None or a list of ToolDefinition";
                let items = returned.try_iter().map_err(|_| unusable("prepare_tools", expected, &returned))?;
                let mut definitions = Vec::new();
                for item in items {
                    let item = item.map_err(|e| ToolError::execution(e.to_string()))?;
                    let Ok(definition) = item.cast::<PyToolDefinition>() else {
                        return Err(unusable("prepare_tools", "a list of ToolDefinition only", &item));
                    };
                    definitions.push(definition.get().0.clone());
                }
                Ok(Some(definitions))
            },
        );
        then(prepared, move |prepared| prepared.map(|prepared| prepared.unwrap_or(kept)))
    }
}

/// The hooks a Python caller gave, as the core takes them.
pub(crate) fn hook_list(hooks: Option<Vec<PyRef<'_, PyNativeHooks>>>) -> Vec<Arc<dyn Hooks>> {
    hooks.unwrap_or_default().iter().map(|h| h.0.clone() as Arc<dyn Hooks>).collect()
}
