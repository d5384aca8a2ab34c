//! [`SchemaError`]: a parameter schema that breaks a rule, and where.

use std::fmt;

/// A parameter schema broke a rule; `path` is the JSON Pointer of the offending value
/// inside `parameters` (`""` is the root).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaError {
    /// JSON Pointer into the schema, e.g. `/properties/age/type`.
    pub path: String,
    /// What is wrong there.
    pub message: String,
}

impl SchemaError {
    /// The path for messages: `/` for the root.
    pub(crate) fn at(&self) -> &str {
        if self.path.is_empty() { "/" } else { &self.path }
    }
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "parameters schema at `{}`: {}", self.at(), self.message)
    }
}

impl std::error::Error for SchemaError {}

/// A [`SchemaError`] at `path`.
pub(super) fn err(path: &str, message: String) -> SchemaError {
    SchemaError { path: path.to_owned(), message }
}
