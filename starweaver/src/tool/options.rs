//! Every tool option, listed once.
//!
//! A tool option is a field of [`ToolDefinition`] past `name` and the two schemas
//! (`parameters`, `return_schema`), which come from the tool's types. The table
//! below gives each one its setters: `ToolDefinition::with_*` and the [`ToolBuilder`]
//! method of the same name as the option, which `#[tool(...)]` expands to. Python reaches
//! the same fields through serde (the binding deserialises its keyword arguments into a
//! `ToolDefinition`), so adding an option is a field, a line here, and the macro's key.

use serde_json::{Map, Value};

use super::{ToolBuilder, ToolDefinition};

macro_rules! tool_options {
    ($(
        $(#[doc = $doc:literal])*
        $option:ident / $with:ident ($value:ident: $ty:ty) => $field:expr;
    )*) => {
        impl ToolDefinition {
            $(
                $(#[doc = $doc])*
                #[must_use]
                pub fn $with(mut self, $value: $ty) -> Self {
                    self.$option = $field;
                    self
                }
            )*
        }

        impl ToolBuilder {
            $(
                $(#[doc = $doc])*
                pub fn $option(mut self, $value: $ty) -> Self {
                    self.definition = self.definition.$with($value);
                    self
                }
            )*
        }

        /// The names of the tool options, in declaration order.
        pub const TOOL_OPTIONS: &[&str] = &[$(stringify!($option)),*];
    };
}

tool_options! {
    /// What the tool does, for the model.
    description / with_description(description: impl Into<String>) => Some(description.into());
    /// Asks providers for a strict definition (`true`) or forbids one (`false`).
    strict / with_strict(strict: bool) => Some(strict);
    /// Makes each call of this tool a barrier: earlier calls finish first, later calls
    /// start after it.
    sequential / with_sequential(sequential: bool) => sequential;
    /// Keeps the tool's definition out of model requests until a tool search finds it
    /// (or the model calls it by name): a large catalog costs no context until used.
    defer_loading / with_defer_loading(defer_loading: bool) => defer_loading;
    /// Cancels each attempt after this many milliseconds.
    timeout_ms / with_timeout_ms(timeout_ms: u64) => Some(timeout_ms);
    /// The most characters of model-facing content a return may have (longer content is
    /// cut, with a marker saying how much; the whole value stays host-only).
    max_return_chars / with_max_return_chars(max_return_chars: u32) => Some(max_return_chars);
    /// Retries after the first attempt.
    max_retries / with_max_retries(max_retries: u32) => Some(max_retries);
    /// How many times one run may call the tool (later calls get a `limit_reached` error
    /// return, which is not a retry).
    max_uses / with_max_uses(max_uses: u32) => Some(max_uses);
    /// How many of its calls may run at once across the process: a number (a limit of its
    /// own) or a shared [`ConcurrencyLimit`](crate::ConcurrencyLimit).
    max_concurrency / with_max_concurrency(limit: impl Into<crate::ConcurrencyLimit>) => Some(limit.into());
    /// Model-facing metadata.
    metadata / with_metadata(metadata: Map<String, Value>) => metadata;
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// The options are exactly the definition's fields past `name` and the schemas, so
    /// the table cannot fall behind the struct (or the Python binding, which sets them by name).
    #[test]
    fn the_table_names_every_option_field_of_the_definition() {
        let full = ToolDefinition::new("t", json!({"type": "object"}))
            .with_description("d")
            .with_timeout_ms(1)
            .with_defer_loading(true)
            .with_max_return_chars(1)
            .with_max_retries(1)
            .with_max_uses(1)
            .with_max_concurrency(1)
            .with_metadata(Map::from_iter([("k".to_owned(), json!(1))]))
            .with_return_schema(json!({"type": "string"}));
        let Value::Object(fields) = serde_json::to_value(full).unwrap() else { unreachable!() };
        let fields: Vec<&str> = fields
            .keys()
            .map(String::as_str)
            .filter(|k| !["name", "parameters", "return_schema"].contains(k))
            .collect();
        let mut options = TOOL_OPTIONS.to_vec();
        let mut fields = fields;
        options.sort_unstable();
        fields.sort_unstable();
        assert_eq!(options, fields);
    }
}
