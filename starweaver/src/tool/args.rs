//! Decoding a call's JSON arguments into the tool's argument type.

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::error::ToolError;

/// Decodes `args` into `A`; a mismatch is an `InvalidArguments` error naming the field.
///
/// # Errors
/// `InvalidArguments`, with the path to the bad field when there is one.
///
/// ```
/// #[derive(serde::Deserialize, Debug)]
/// struct Args { left: i64 }
///
/// let err = starweaver::decode_args::<Args>(&serde_json::json!({"left": "two"})).unwrap_err();
/// assert_eq!(err.message(), "`left`: invalid type: string \"two\", expected i64");
/// ```
pub fn decode_args<A: DeserializeOwned>(args: &Value) -> Result<A, ToolError> {
    crate::json::decode(args).map_err(|err| {
        let path = err.path().to_string();
        let message = if path == "." { err.inner().to_string() } else { format!("`{path}`: {}", err.inner()) };
        ToolError::invalid_arguments(message)
    })
}
