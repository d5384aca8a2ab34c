//! Human-in-the-loop classes: what a waiting run asks for and the decisions that resume it.

use pyo3::prelude::*;
use pyo3_stub_gen::derive::{gen_stub_pyclass, gen_stub_pymethods};
use serde_json::Value;
use starweaver::tool::ElicitAnswer;
use starweaver::{
    ApprovalDecision, DeferredOutcome, DeferredResult, ElicitationResponse, HitlDecisions, PendingApproval,
    PendingDeferred, PendingElicitation,
};

use crate::convert::{self, ConvertError};
use crate::errors::{self, IntoPyResult};

/// A call waiting for a human to approve or deny it.
#[gen_stub_pyclass]
#[pyclass(module = "starweaver._native", name = "PendingApproval", frozen)]
#[derive(Clone)]
pub struct PyPendingApproval(pub(crate) PendingApproval);

/// A call waiting for its result from outside the run.
#[gen_stub_pyclass]
#[pyclass(module = "starweaver._native", name = "PendingDeferred", frozen)]
#[derive(Clone)]
pub struct PyPendingDeferred(pub(crate) PendingDeferred);

/// A call that asked the user for input in a run with no elicitation handler; answering
/// it (`accept`, `decline`, `cancel`) and resuming calls the tool again, where asking the
/// same question gives the answer.
#[gen_stub_pyclass]
#[pyclass(module = "starweaver._native", name = "PendingElicitation", frozen)]
#[derive(Clone)]
pub struct PyPendingElicitation(pub(crate) PendingElicitation);

/// The methods of a pending kind: the getters both share (they wrap the same
/// `PendingCall`) plus the kind's own decision methods.
macro_rules! pending_methods {
    ($ty:ty, { $($own:item)* }) => {
        #[gen_stub_pymethods]
        #[pymethods]
        impl $ty {
            $($own)*

            /// Canonical id: `<run id>:<tool-call id>`.
            #[getter]
            fn id(&self) -> &str {
                &self.0.id
            }
            /// The waiting run.
            #[getter]
            fn run_id(&self) -> &str {
                &self.0.run_id
            }
            /// The model's call id.
            #[getter]
            fn tool_call_id(&self) -> &str {
                &self.0.tool_call_id
            }
            /// The tool.
            #[getter]
            fn tool_name(&self) -> &str {
                &self.0.tool_name
            }
            /// The call's arguments.
            #[getter]
            #[gen_stub(override_return_type(type_repr = "types.JsonValue", imports = ("starweaver.types",)))]
            fn arguments<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
                convert::to_py(py, &self.0.arguments)
            }
            /// Why the call waits.
            #[getter]
            fn reason(&self) -> &str {
                &self.0.reason
            }
            /// Context for whoever decides.
            #[getter]
            #[gen_stub(override_return_type(type_repr = "types.JsonObject", imports = ("starweaver.types",)))]
            fn metadata<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
                convert::to_py(py, &Value::Object(self.0.metadata.clone()))
            }
            /// As canonical JSON (a dict).
            #[gen_stub(override_return_type(type_repr = "types.PendingItem", imports = ("starweaver.types",)))]
            fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
                convert::serialize_to_py(py, &self.0)
            }
            fn __repr__(&self) -> String {
                format!("{}(id={:?}, tool_name={:?})", stringify!($ty).trim_start_matches("Py"), self.0.id, self.0.tool_name)
            }
        }
    };
}

pending_methods!(PyPendingApproval, {
    /// Approves the call; `override_arguments` replaces the model's arguments.
    #[pyo3(signature = (*, decided_by=None, override_arguments=None, metadata=None))]
    fn approve(
        &self,
        py: Python<'_>,
        decided_by: Option<String>,
        override_arguments: Option<&Bound<'_, PyAny>>,
        metadata: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyApprovalDecision> {
        let mut decision = self.0.approve();
        decision.decided_by = decided_by;
        decision.override_arguments =
            override_arguments.map(|v| decision_json(py, v, "override_arguments")).transpose()?;
        decision.metadata = metadata
            .map(|m| convert::to_json_object(m, "metadata").map_err(|e| invalid_decision(py, &e)))
            .transpose()?
            .unwrap_or_default();
        Ok(PyApprovalDecision(decision))
    }

    /// Denies the call; the model is told `reason`.
    #[pyo3(signature = (reason=None, *, decided_by=None))]
    fn deny(&self, reason: Option<String>, decided_by: Option<String>) -> PyApprovalDecision {
        let mut decision = self.0.deny(reason.unwrap_or_else(|| "the call was denied".to_owned()));
        decision.decided_by = decided_by;
        PyApprovalDecision(decision)
    }
});

pending_methods!(PyPendingDeferred, {
    /// Supplies the call's value.
    fn complete(&self, py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<PyDeferredResult> {
        Ok(PyDeferredResult(self.0.complete(decision_json(py, value, "value")?)))
    }

    /// Supplies a failure; the model sees a `deferred_failed` error.
    fn fail(&self, error: String) -> PyDeferredResult {
        PyDeferredResult(self.0.fail(error))
    }
});

pending_methods!(PyPendingElicitation, {
    /// What the tool asks the user, in its own words.
    #[getter]
    fn message(&self) -> &str {
        &self.0.message
    }

    /// The JSON schema of the answer (an object of primitive properties).
    #[getter]
    #[gen_stub(override_return_type(type_repr = "types.JsonObject", imports = ("starweaver.types",)))]
    fn schema<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        convert::to_py(py, &self.0.schema)
    }

    /// Answers with `content`: a dict, or a pydantic model or dataclass instance, of the
    /// asked shape (checked against `schema` when the run resumes).
    fn accept(&self, py: Python<'_>, content: &Bound<'_, PyAny>) -> PyResult<PyElicitationResponse> {
        let content = convert::to_json_object(content, "content").map_err(|e| invalid_decision(py, &e))?;
        Ok(PyElicitationResponse(self.0.accept(content)))
    }

    /// The user said no; the tool goes on without the value.
    fn decline(&self) -> PyElicitationResponse {
        PyElicitationResponse(self.0.decline())
    }

    /// The user dismissed the question.
    fn cancel(&self) -> PyElicitationResponse {
        PyElicitationResponse(self.0.cancel())
    }
});

/// The user's answer to a pending elicitation.
#[gen_stub_pyclass]
#[pyclass(module = "starweaver._native", name = "ElicitationResponse", frozen)]
#[derive(Clone)]
pub struct PyElicitationResponse(pub(crate) ElicitationResponse);

#[gen_stub_pymethods]
#[pymethods]
impl PyElicitationResponse {
    /// The pending elicitation's id.
    #[getter]
    fn id(&self) -> &str {
        &self.0.id
    }
    /// `"accept"`, `"decline"` or `"cancel"`.
    #[getter]
    #[gen_stub(override_return_type(type_repr = "typing.Literal['accept', 'decline', 'cancel']", imports = ("typing",)))]
    fn action(&self) -> &str {
        match self.0.answer {
            ElicitAnswer::Accept { .. } => "accept",
            ElicitAnswer::Decline => "decline",
            ElicitAnswer::Cancel => "cancel",
        }
    }
    /// The accepted value, or `None`.
    #[getter]
    #[gen_stub(override_return_type(type_repr = "types.JsonObject | None", imports = ("starweaver.types",)))]
    fn content<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        match &self.0.answer {
            ElicitAnswer::Accept { content } => convert::to_py(py, &Value::Object(content.clone())).map(Some),
            ElicitAnswer::Decline | ElicitAnswer::Cancel => Ok(None),
        }
    }
    /// As canonical JSON (a dict).
    #[gen_stub(override_return_type(type_repr = "types.JsonObject", imports = ("starweaver.types",)))]
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        convert::serialize_to_py(py, &self.0)
    }
    fn __repr__(&self) -> String {
        format!("ElicitationResponse(id={:?}, action={:?})", self.0.id, self.action())
    }
}

/// A decision on a pending approval.
#[gen_stub_pyclass]
#[pyclass(module = "starweaver._native", name = "ApprovalDecision", frozen)]
#[derive(Clone)]
pub struct PyApprovalDecision(pub(crate) ApprovalDecision);

#[gen_stub_pymethods]
#[pymethods]
impl PyApprovalDecision {
    /// The pending approval's id.
    #[getter]
    fn id(&self) -> &str {
        &self.0.id
    }
    /// Whether the call may run.
    #[getter]
    fn approved(&self) -> bool {
        self.0.approved
    }
    /// Who decided.
    #[getter]
    fn decided_by(&self) -> Option<&str> {
        self.0.decided_by.as_deref()
    }
    /// Why (shown to the model on a denial).
    #[getter]
    fn reason(&self) -> Option<&str> {
        self.0.reason.as_deref()
    }
    /// Arguments to run with instead of the model's.
    #[getter]
    #[gen_stub(override_return_type(type_repr = "types.JsonValue", imports = ("starweaver.types",)))]
    fn override_arguments<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        convert::optional_to_py(py, self.0.override_arguments.as_ref())
    }
    /// Extra data recorded with the decision.
    #[getter]
    #[gen_stub(override_return_type(type_repr = "types.JsonObject", imports = ("starweaver.types",)))]
    fn metadata<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        convert::to_py(py, &Value::Object(self.0.metadata.clone()))
    }
    /// As canonical JSON (a dict).
    #[gen_stub(override_return_type(type_repr = "types.JsonObject", imports = ("starweaver.types",)))]
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        convert::serialize_to_py(py, &self.0)
    }
    fn __repr__(&self) -> String {
        format!("ApprovalDecision(id={:?}, approved={})", self.0.id, self.0.approved)
    }
}

/// The outside result of a deferred call.
#[gen_stub_pyclass]
#[pyclass(module = "starweaver._native", name = "DeferredResult", frozen)]
#[derive(Clone)]
pub struct PyDeferredResult(pub(crate) DeferredResult);

#[gen_stub_pymethods]
#[pymethods]
impl PyDeferredResult {
    /// The deferred call's id.
    #[getter]
    fn id(&self) -> &str {
        &self.0.id
    }
    /// `"completed"` or `"failed"`.
    #[getter]
    fn status(&self) -> &str {
        match self.0.outcome {
            DeferredOutcome::Completed { .. } => "completed",
            DeferredOutcome::Failed { .. } => "failed",
        }
    }
    /// As canonical JSON (a dict).
    #[gen_stub(override_return_type(type_repr = "types.JsonObject", imports = ("starweaver.types",)))]
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        convert::serialize_to_py(py, &self.0)
    }
}

/// What a waiting run needs.
#[gen_stub_pyclass]
#[pyclass(module = "starweaver._native", name = "Hitl", frozen)]
pub struct PyHitl {
    /// Calls waiting for approval, in model order.
    #[pyo3(get)]
    approvals: Vec<PyPendingApproval>,
    /// Calls waiting for an outside result, in model order.
    #[pyo3(get)]
    deferred: Vec<PyPendingDeferred>,
    /// Calls waiting for the user's answer to their question, in model order.
    #[pyo3(get)]
    elicitations: Vec<PyPendingElicitation>,
}

impl From<starweaver::Hitl> for PyHitl {
    fn from(hitl: starweaver::Hitl) -> Self {
        Self {
            approvals: hitl.approvals.into_iter().map(PyPendingApproval).collect(),
            deferred: hitl.deferred.into_iter().map(PyPendingDeferred).collect(),
            elicitations: hitl.elicitations.into_iter().map(PyPendingElicitation).collect(),
        }
    }
}

/// A resume's decisions of one kind as Python passes them: absent, or a list.
type Given<'py> = Option<Vec<Bound<'py, PyAny>>>;

/// Decisions as given from Python: decision objects or canonical JSON dicts.
pub(crate) fn decisions(
    py: Python<'_>,
    approvals: Given<'_>,
    deferred: Given<'_>,
    elicitations: Given<'_>,
) -> PyResult<HitlDecisions> {
    let (approvals, deferred, elicitations) =
        (approvals.unwrap_or_default(), deferred.unwrap_or_default(), elicitations.unwrap_or_default());
    let json = serde_json::json!({
        "approvals": decision_list::<PyApprovalDecision, _>(py, &approvals, "approvals", |d| &d.0)?,
        "deferred_results": decision_list::<PyDeferredResult, _>(py, &deferred, "deferred_results", |d| &d.0)?,
        "elicitations": decision_list::<PyElicitationResponse, _>(py, &elicitations, "elicitations", |d| &d.0)?,
    });
    HitlDecisions::from_json(&json).into_py_result(py)
}

/// One kind of decision as JSON: each a decision object of class `D`, or a dict.
fn decision_list<D, T: serde::Serialize>(
    py: Python<'_>,
    items: &[Bound<'_, PyAny>],
    what: &str,
    inner: impl Fn(&D) -> &T,
) -> PyResult<Vec<Value>>
where
    D: pyo3::PyClass<Frozen = pyo3::pyclass::boolean_struct::True> + Sync,
{
    items
        .iter()
        .map(|item| match item.cast::<D>() {
            Ok(d) => {
                serde_json::to_value(inner(d.get())).map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))
            }
            Err(_) => decision_json(py, item, what),
        })
        .collect()
}

/// Part of a decision as JSON; a value without an exact JSON form is a `DecisionError`.
fn decision_json(py: Python<'_>, value: &Bound<'_, PyAny>, what: &str) -> PyResult<Value> {
    convert::to_json(value).map_err(|e| invalid_decision(py, &e.within(what)))
}

fn invalid_decision(py: Python<'_>, error: &ConvertError) -> PyErr {
    errors::convert_error(error, errors::decision_error(py), "invalid decision")
}
