//! JSON values across the boundary. Plain containers and scalars are walked directly;
//! anything else (pydantic models, dataclasses, datetimes, UUIDs) goes through
//! `pydantic_core.to_jsonable_python` first, so Python values serialise as a pydantic user
//! expects.
//!
//! Every walk is bounded: nesting deeper than [`MAX_DEPTH`] and containers
//! that contain themselves are named errors, never a stack overflow; integers outside the
//! 64-bit range, NaN, infinities and lone surrogates are refused instead of changed.

use std::fmt;

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple, PyType};
use serde_json::{Map, Number, Value};
use smallvec::SmallVec;
use starweaver::json::MAX_DEPTH;

/// Why a Python value has no JSON form, and where in it (a `$`-rooted path).
#[derive(Debug)]
pub(crate) struct ConvertError {
    /// What was converted (`$` unless the caller names it).
    root: String,
    /// Path segments, innermost first (they are added while the walk unwinds).
    path: Vec<String>,
    message: String,
}

impl ConvertError {
    fn new(message: impl Into<String>) -> Self {
        Self { root: "$".into(), path: Vec::new(), message: message.into() }
    }

    /// Names the converted value in the path (`override_arguments.x` instead of `$.x`).
    pub(crate) fn within(mut self, what: &str) -> Self {
        what.clone_into(&mut self.root);
        self
    }

    fn at(mut self, segment: String) -> Self {
        self.path.push(segment);
        self
    }
}

impl fmt::Display for ConvertError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // A path thousands of levels deep says no more than its two ends.
        const SHOWN: usize = 8;
        match (self.path.is_empty(), self.root.as_str()) {
            (true, "$") => return f.write_str(&self.message),
            (true, root) => return write!(f, "`{root}`: {}", self.message),
            (false, root) => write!(f, "at `{root}")?,
        }
        let segments = self.path.len();
        for (i, segment) in self.path.iter().rev().enumerate() {
            if i == SHOWN && segments > 2 * SHOWN {
                write!(f, "...({} levels)...", segments - 2 * SHOWN)?;
            }
            if i < SHOWN || i >= segments.saturating_sub(SHOWN) {
                f.write_str(segment)?;
            }
        }
        write!(f, "`: {}", self.message)
    }
}

/// Dict keys that are not strings: converted as `json.dumps` and pydantic do (`1` → `"1"`),
/// or refused (schemas, where a silently renamed key changes what the schema says).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Keys {
    Convert,
    StringsOnly,
}

/// A Python value as JSON.
///
/// # Errors
/// When the value has no exact JSON form; the message names the path and the reason.
pub(crate) fn to_json(value: &Bound<'_, PyAny>) -> Result<Value, ConvertError> {
    to_json_nested(value, 0)
}

/// [`to_json`] of a value found `depth` containers down in a larger one, held to the
/// same bound on nesting as the whole.
pub(crate) fn to_json_nested(value: &Bound<'_, PyAny>, depth: usize) -> Result<Value, ConvertError> {
    Walker { keys: Keys::Convert, path: SmallVec::new() }.walk(value, depth)
}

/// [`to_json`] with the key rule chosen by the caller.
pub(crate) fn to_json_with(value: &Bound<'_, PyAny>, keys: Keys) -> Result<Value, ConvertError> {
    Walker { keys, path: SmallVec::new() }.walk(value, 0)
}

struct Walker {
    keys: Keys,
    /// Addresses of the containers being walked, outermost first: meeting one again is a
    /// cycle. Held inline to a few levels, so converting a call's arguments allocates none.
    path: SmallVec<[usize; 8]>,
}

impl Walker {
    fn walk(&mut self, value: &Bound<'_, PyAny>, depth: usize) -> Result<Value, ConvertError> {
        if let Some(scalar) = scalar(value)? {
            return Ok(scalar);
        }
        if depth >= MAX_DEPTH {
            return Err(ConvertError::new(format!("nested more than {MAX_DEPTH} levels deep")));
        }
        let address = value.as_ptr() as usize;
        if self.path.contains(&address) {
            return Err(ConvertError::new("the value contains itself (a reference cycle)"));
        }
        self.path.push(address);
        let result = self.container(value, depth + 1);
        self.path.pop();
        result
    }

    fn container(&mut self, value: &Bound<'_, PyAny>, depth: usize) -> Result<Value, ConvertError> {
        if let Ok(dict) = value.cast::<PyDict>() {
            let mut map = Map::with_capacity(dict.len());
            for (key, item) in dict.iter() {
                let Ok(key) = key.cast::<PyString>() else {
                    if self.keys == Keys::StringsOnly {
                        let shown = key.repr().map_or_else(|_| "?".into(), |r| r.to_string());
                        return Err(ConvertError::new(format!("key {shown} is not a string")));
                    }
                    return self.via_pydantic(value, depth);
                };
                let key = key.to_str().map_err(|_| ConvertError::new("a key is not valid UTF-8 (a lone surrogate)"))?;
                let item = self.walk(&item, depth).map_err(|e| e.at(format!(".{key}")))?;
                map.insert(key.to_owned(), item);
            }
            return Ok(Value::Object(map));
        }
        if let Ok(list) = value.cast::<PyList>() {
            return self.items(list.iter(), list.len(), depth);
        }
        if let Ok(tuple) = value.cast::<PyTuple>() {
            return self.items(tuple.iter(), tuple.len(), depth);
        }
        self.via_pydantic(value, depth)
    }

    fn items<'py>(
        &mut self,
        items: impl Iterator<Item = Bound<'py, PyAny>>,
        len: usize,
        depth: usize,
    ) -> Result<Value, ConvertError> {
        let mut array = Vec::with_capacity(len);
        for (i, item) in items.enumerate() {
            array.push(self.walk(&item, depth).map_err(|e| e.at(format!("[{i}]")))?);
        }
        Ok(Value::Array(array))
    }

    /// Models, dataclasses, dicts with non-string keys, sets, datetimes...: pydantic turns
    /// them into plain Python JSON values, which are then walked like any other.
    ///
    /// Content parts (`starweaver.content`) come first: their canonical dict has their
    /// bytes in base64, which pydantic would not give.
    fn via_pydantic(&mut self, value: &Bound<'_, PyAny>, depth: usize) -> Result<Value, ConvertError> {
        static TO_JSONABLE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
        static PART: PyOnceLock<Py<PyType>> = PyOnceLock::new();
        let py = value.py();
        let type_name = value.get_type().name().map_or_else(|_| "?".into(), |n| n.to_string());
        let not_json = |e: PyErr| ConvertError::new(format!("{type_name} is not JSON-serialisable: {}", e.value(py)));
        let part = PART.import(py, "starweaver.content", "_Part").map_err(not_json)?;
        let plain = if value.is_instance(part).map_err(not_json)? {
            value.call_method0(intern!(py, "to_dict")).map_err(not_json)?
        } else {
            TO_JSONABLE
                .import(py, "pydantic_core", "to_jsonable_python")
                .and_then(|convert| convert.call1((value,)))
                .map_err(not_json)?
        };
        let is_plain = plain.is_instance_of::<PyDict>() || plain.is_instance_of::<PyList>();
        if !is_plain && scalar(&plain)?.is_none() {
            return Err(ConvertError::new(format!("{type_name} is not JSON-serialisable")));
        }
        // pydantic's result is new objects, so the cycle check starts afresh beneath it.
        let outer = std::mem::take(&mut self.path);
        let result = self.walk(&plain, depth);
        self.path = outer;
        result
    }
}

/// `None`, bools, ints, floats and strings; `Ok(None)` for anything else.
fn scalar(value: &Bound<'_, PyAny>) -> Result<Option<Value>, ConvertError> {
    if value.is_none() {
        return Ok(Some(Value::Null));
    }
    if let Ok(b) = value.cast::<PyBool>() {
        return Ok(Some(Value::Bool(b.is_true())));
    }
    if let Ok(i) = value.cast::<PyInt>() {
        if let Ok(n) = i.extract::<i64>() {
            return Ok(Some(Value::from(n)));
        }
        if let Ok(n) = i.extract::<u64>() {
            return Ok(Some(Value::from(n)));
        }
        return Err(ConvertError::new(
            "an integer outside the 64-bit range cannot be carried exactly in JSON (send it as a string)",
        ));
    }
    if let Ok(f) = value.cast::<PyFloat>() {
        let f = f.value();
        return Number::from_f64(f)
            .map(|n| Some(Value::Number(n)))
            .ok_or_else(|| ConvertError::new(format!("{f} is not a JSON number")));
    }
    if let Ok(s) = value.cast::<PyString>() {
        let s = s.to_str().map_err(|_| ConvertError::new("the string is not valid UTF-8 (a lone surrogate)"))?;
        return Ok(Some(Value::String(s.to_owned())));
    }
    Ok(None)
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

/// A Python value as a JSON object map; `what` names it in the error.
pub(crate) fn to_json_object(value: &Bound<'_, PyAny>, what: &str) -> Result<Map<String, Value>, ConvertError> {
    match to_json(value).map_err(|e| e.within(what))? {
        Value::Object(map) => Ok(map),
        other => Err(ConvertError::new(format!("`{what}` must be a dict, got {}", starweaver::json::kind_of(&other)))),
    }
}

/// `cls[item]` as `types.GenericAlias` makes it: the `__class_getitem__` of a class the stub
/// declares generic, so an annotation such as `ToolContext[MyDeps]` also evaluates.
pub(crate) fn generic_alias<'py>(
    cls: &Bound<'py, pyo3::types::PyType>,
    item: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = cls.py();
    py.import(pyo3::intern!(py, "types"))?.getattr(pyo3::intern!(py, "GenericAlias"))?.call1((cls, item))
}
