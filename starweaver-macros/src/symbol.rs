//! Attribute keys, named once. `#[tool]` keys match `ToolDefinition` field names and
//! `ToolBuilder` methods, which is what lets the expansion forward them by name.

use std::fmt::{self, Display};

use syn::Path;

#[derive(Copy, Clone, PartialEq, Eq)]
pub(crate) struct Symbol(pub &'static str);

pub(crate) const NAME: Symbol = Symbol("name");
pub(crate) const DESCRIPTION: Symbol = Symbol("description");
pub(crate) const STRICT: Symbol = Symbol("strict");
const SEQUENTIAL: Symbol = Symbol("sequential");
const DEFER_LOADING: Symbol = Symbol("defer_loading");
pub(crate) const TIMEOUT_MS: Symbol = Symbol("timeout_ms");
const MAX_RETURN_CHARS: Symbol = Symbol("max_return_chars");
pub(crate) const MAX_USES: Symbol = Symbol("max_uses");
pub(crate) const MAX_CONCURRENCY: Symbol = Symbol("max_concurrency");
pub(crate) const MAX_RETRIES: Symbol = Symbol("max_retries");
pub(crate) const METADATA: Symbol = Symbol("metadata");
pub(crate) const PARAMETERS_SCHEMA: Symbol = Symbol("parameters_schema");
pub(crate) const RETURN_SCHEMA: Symbol = Symbol("return_schema");
pub(crate) const CRATE: Symbol = Symbol("crate");

/// What a `#[tool(...)]` key takes.
#[derive(Copy, Clone, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `key = "text"`.
    Str,
    /// `key` alone (true), or `key = true|false`.
    Flag,
    /// `key = 123`.
    Int,
    /// `key = 123`, at least 1: a tool's own concurrency limit.
    Limit,
    /// `key = r#"{...}"#`: JSON text, checked to be an object.
    Json,
    /// `key = "some::path"`.
    Path,
    /// `key = r#"{...}"#` (a JSON object), or a flag.
    JsonOrFlag,
}

/// Every `#[tool(...)]` key with what it takes, in the order error messages list them.
/// Every key but `name`, `crate` and `return_schema` (a JSON one is forwarded, a flag is
/// read by the expansion) is a `ToolBuilder` method the expansion calls.
pub(crate) const TOOL_KEYS: &[(Symbol, Kind)] = &[
    (NAME, Kind::Str),
    (DESCRIPTION, Kind::Str),
    (STRICT, Kind::Flag),
    (SEQUENTIAL, Kind::Flag),
    (DEFER_LOADING, Kind::Flag),
    (TIMEOUT_MS, Kind::Int),
    (MAX_RETURN_CHARS, Kind::Int),
    (MAX_RETRIES, Kind::Int),
    (MAX_USES, Kind::Int),
    (MAX_CONCURRENCY, Kind::Limit),
    (METADATA, Kind::Json),
    (PARAMETERS_SCHEMA, Kind::Json),
    (RETURN_SCHEMA, Kind::JsonOrFlag),
    (CRATE, Kind::Path),
];

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
pub(crate) fn list(keys: impl IntoIterator<Item = Symbol>) -> String {
    keys.into_iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")
}
