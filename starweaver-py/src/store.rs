//! Session stores for Python: `MemorySessionStore` and `SqliteSessionStore`, both a
//! `SessionStore` that `create_agent_runtime(session_store=...)` accepts.

use std::path::PathBuf;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3_stub_gen::derive::{gen_stub_pyclass, gen_stub_pymethods};
use starweaver::store::{MemorySessionStore, SessionStore, SqliteSessionStore};

use crate::convert;
use crate::errors::IntoPyResult;

/// Where sessions opened by id are kept. Use `MemorySessionStore` or `SqliteSessionStore`.
#[gen_stub_pyclass]
#[pyclass(module = "starweaver._native", name = "SessionStore", subclass, frozen)]
pub struct PySessionStore(pub(crate) Arc<dyn SessionStore>);

#[gen_stub_pymethods]
#[pymethods]
impl PySessionStore {
    /// The stored state of session `session_id` (as `export_state()` gives it), or `None`.
    #[gen_stub(override_return_type(type_repr = "types.SessionState | None", imports = ("starweaver.types",)))]
    fn load<'py>(&self, py: Python<'py>, session_id: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
        let stored = self.0.load(session_id).into_py_result(py)?;
        stored.map(|s| convert::to_py(py, &s.state)).transpose()
    }

    /// How many times session `session_id` has been written (0: never).
    fn revision(&self, py: Python<'_>, session_id: &str) -> PyResult<u64> {
        Ok(self.0.load(session_id).into_py_result(py)?.map_or(0, |s| s.revision))
    }

    /// Every stored session id, sorted.
    fn ids(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        self.0.ids().into_py_result(py)
    }

    /// Removes session `session_id`; whether it was stored.
    fn delete(&self, py: Python<'_>, session_id: &str) -> PyResult<bool> {
        self.0.delete(session_id).into_py_result(py)
    }
}

/// Sessions kept in this process's memory (the default store).
#[gen_stub_pyclass]
#[pyclass(module = "starweaver._native", name = "MemorySessionStore", extends = PySessionStore, frozen)]
pub struct PyMemorySessionStore;

#[gen_stub_pymethods]
#[pymethods]
impl PyMemorySessionStore {
    #[new]
    pub(crate) fn new() -> PyClassInitializer<PyMemorySessionStore> {
        PyClassInitializer::from(PySessionStore(Arc::new(MemorySessionStore::new()))).add_subclass(PyMemorySessionStore)
    }
}

/// Sessions in an embedded SQLite database file, shared by every process that opens it.
/// Each write is one transaction: a process killed at any point leaves the last committed
/// state of every session loadable.
#[gen_stub_pyclass]
#[pyclass(module = "starweaver._native", name = "SqliteSessionStore", extends = PySessionStore, frozen)]
pub struct PySqliteSessionStore {
    /// The database file.
    #[pyo3(get)]
    path: PathBuf,
}

#[gen_stub_pymethods]
#[pymethods]
impl PySqliteSessionStore {
    /// Opens (creating if needed) the database at `path`; raises `SessionStoreError`
    /// naming the path when it cannot.
    #[new]
    fn new(
        py: Python<'_>,
        #[gen_stub(override_type(type_repr = "str | os.PathLike[str]", imports = ("os",)))] path: PathBuf,
    ) -> PyResult<PyClassInitializer<PySqliteSessionStore>> {
        let store = py.detach(|| SqliteSessionStore::open(&path)).into_py_result(py)?;
        Ok(PyClassInitializer::from(PySessionStore(Arc::new(store))).add_subclass(PySqliteSessionStore { path }))
    }

    fn __repr__(&self) -> String {
        format!("SqliteSessionStore({:?})", self.path.display().to_string())
    }
}
