//! Attribute keys, named once. `#[tool]` keys match `ToolDefinition` field names.

use std::fmt::{self, Display};

use syn::Path;

#[derive(Copy, Clone, PartialEq, Eq)]
pub(crate) struct Symbol(pub &'static str);

pub(crate) const NAME: Symbol = Symbol("name");
pub(crate) const DESCRIPTION: Symbol = Symbol("description");
pub(crate) const STRICT: Symbol = Symbol("strict");
pub(crate) const SEQUENTIAL: Symbol = Symbol("sequential");
pub(crate) const TIMEOUT_MS: Symbol = Symbol("timeout_ms");
pub(crate) const MAX_RETRIES: Symbol = Symbol("max_retries");
pub(crate) const METADATA: Symbol = Symbol("metadata");
pub(crate) const PARAMETERS_SCHEMA: Symbol = Symbol("parameters_schema");
pub(crate) const CRATE: Symbol = Symbol("crate");

/// Every `#[tool(...)]` key, in the order error messages list them.
pub(crate) const TOOL_KEYS: &[Symbol] =
    &[NAME, DESCRIPTION, STRICT, SEQUENTIAL, TIMEOUT_MS, MAX_RETRIES, METADATA, PARAMETERS_SCHEMA, CRATE];

/// The parameter attribute and its keys.
pub(crate) const ARG: Symbol = Symbol("arg");
pub(crate) const DEFAULT: Symbol = Symbol("default");
pub(crate) const ARG_KEYS: &[Symbol] = &[DESCRIPTION, DEFAULT];

impl PartialEq<Symbol> for Path {
    fn eq(&self, word: &Symbol) -> bool {
        self.is_ident(word.0)
    }
}

impl Display for Symbol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

/// "`a`, `b`, `c`" for error messages.
pub(crate) fn list(keys: &[Symbol]) -> String {
    keys.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")
}
