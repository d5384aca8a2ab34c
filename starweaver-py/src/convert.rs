//! JSON values across the boundary. Plain containers and scalars are walked directly;
//! anything else (pydantic models, dataclasses, datetimes, UUIDs) goes through
//! `pydantic_core.to_json`, so Python values serialise as a pydantic user expects.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::{Map, Number, Value};

/// A Python value as JSON.
///
/// # Errors
/// When the value has no JSON form (the message says which type).
pub(crate) fn to_json(value: &Bound<'_, PyAny>) -> PyResult<Value> {
    if value.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(b) = value.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if let Ok(i) = value.cast::<PyInt>() {
        if let Ok(n) = i.extract::<i64>() {
            return Ok(Value::from(n));
        }
        if let Ok(n) = i.extract::<u64>() {
            return Ok(Value::from(n));
        }
    } else if let Ok(f) = value.cast::<PyFloat>() {
        let f = f.value();
        return Number::from_f64(f)
            .map(Value::Number)
            .ok_or_else(|| pyo3::exceptions::PyValueError::new_err(format!("{f} is not a JSON number")));
    } else if let Ok(s) = value.cast::<PyString>() {
        return Ok(Value::String(s.to_str()?.to_owned()));
    } else if let Ok(d) = value.cast::<PyDict>() {
        let mut map = Map::with_capacity(d.len());
        for (k, v) in d.iter() {
            let Ok(key) = k.cast::<PyString>() else { return via_pydantic(value) };
            map.insert(key.to_str()?.to_owned(), to_json(&v)?);
        }
        return Ok(Value::Object(map));
    } else if let Ok(l) = value.cast::<PyList>() {
        return l.iter().map(|v| to_json(&v)).collect::<PyResult<_>>().map(Value::Array);
    } else if let Ok(t) = value.cast::<PyTuple>() {
        return t.iter().map(|v| to_json(&v)).collect::<PyResult<_>>().map(Value::Array);
    }
    via_pydantic(value)
}

fn via_pydantic(value: &Bound<'_, PyAny>) -> PyResult<Value> {
    static TO_JSON: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    let py = value.py();
    let to_json = TO_JSON.import(py, "pydantic_core", "to_json")?;
    let bytes = to_json.call1((value,))?;
    let bytes = bytes.cast::<PyBytes>()?;
    serde_json::from_slice(bytes.as_bytes()).map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))
}

/// A JSON value as Python (`dict`, `list`, `str`, `int`, `float`, `bool`, `None`).
pub(crate) fn to_py<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => i.into_pyobject(py)?.into_any(),
            (None, Some(u)) => u.into_pyobject(py)?.into_any(),
            (None, None) => n.as_f64().unwrap_or(f64::NAN).into_pyobject(py)?.into_any(),
        },
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(items) => {
            PyList::new(py, items.iter().map(|v| to_py(py, v)).collect::<PyResult<Vec<_>>>()?)?.into_any()
        }
        Value::Object(map) => {
            let dict = PyDict::new(py);
            for (k, v) in map {
                dict.set_item(k, to_py(py, v)?)?;
            }
            dict.into_any()
        }
    })
}

/// An optional JSON value as Python (`None` when absent).
pub(crate) fn optional_to_py<'py>(py: Python<'py>, value: Option<&Value>) -> PyResult<Option<Bound<'py, PyAny>>> {
    value.map(|v| to_py(py, v)).transpose()
}

/// Any serialisable Rust value (events, messages, definitions) as Python.
pub(crate) fn serialize_to_py<'py, T: serde::Serialize + ?Sized>(
    py: Python<'py>,
    value: &T,
) -> PyResult<Bound<'py, PyAny>> {
    let json = serde_json::to_value(value).map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
    to_py(py, &json)
}

/// A Python value as a JSON object map.
pub(crate) fn to_json_object(value: &Bound<'_, PyAny>, what: &str) -> PyResult<Map<String, Value>> {
    match to_json(value)? {
        Value::Object(map) => Ok(map),
        other => Err(pyo3::exceptions::PyTypeError::new_err(format!("`{what}` must be a dict, got {other}"))),
    }
}
