//! Reading what a provider sends. Each protocol declares its bodies and stream events as
//! typed wire formats (`#[derive(Deserialize)]` structs, tagged enums for events), read
//! here: a required field that is missing or of the wrong type is an `InvalidResponse`
//! error naming the protocol and where the field is, never a silent default. Unknown
//! fields and unknown event types are ignored, since providers add both all the time.

use std::fmt;

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::sse::SseEvent;
use crate::model::{ModelError, ModelErrorKind};

/// A body or event that does not fit the protocol.
pub(crate) fn invalid(message: impl Into<String>) -> ModelError {
    ModelError::of(ModelErrorKind::InvalidResponse, message)
}

/// The error for `what` (`the body`, `a stream event`) of `protocol` that does not fit it
/// at `path` (`.` for the whole of it).
pub(crate) fn unfit(protocol: &str, what: &str, path: &str, problem: impl fmt::Display) -> ModelError {
    let at = if path == "." { String::new() } else { format!("`{path}`: ") };
    invalid(format!("{what} does not fit {protocol}: {at}{problem}"))
}

/// `text`, a whole body or one stream chunk of `protocol`, as its wire format `T`.
///
/// # Errors
/// Text that is not JSON (or nests deeper than [`crate::json::MAX_DEPTH`]), or JSON that
/// does not fit `T`.
pub(crate) fn decode<T: DeserializeOwned>(protocol: &str, what: &str, text: &str) -> Result<T, ModelError> {
    // Most text fits: read it straight, and only read what does not fit again, as a value,
    // to say where.
    if let Ok(decoded) = crate::json::from_text(text) {
        return Ok(decoded);
    }
    let value = crate::json::parse(text).map_err(|e| invalid(format!("{what} is not JSON: {e}")))?;
    typed(value).map_err(|error| unfit(protocol, what, &error.path().to_string(), error.inner()))
}

/// One stream event of `protocol` as its tagged wire format `T`. The data's `type` names
/// the event; when the data leaves it out, the SSE event name does.
///
/// # Errors
/// As [`decode`].
pub(crate) fn event<T: DeserializeOwned>(protocol: &str, event: &SseEvent) -> Result<T, ModelError> {
    const WHAT: &str = "a stream event";
    // Data that names its type and fits is read straight, as in `decode`.
    if let Ok(decoded) = crate::json::from_text(&event.data) {
        return Ok(decoded);
    }
    let mut value = crate::json::parse(&event.data).map_err(|e| invalid(format!("{WHAT} is not JSON: {e}")))?;
    let kind = match &mut value {
        Value::Object(data) => {
            data.entry("type").or_insert_with(|| Value::String(event.event.clone())).as_str().map(str::to_owned)
        }
        _ => None,
    };
    typed(value).map_err(|error| {
        // serde reads a tagged enum's fields from a copy, so the path stops at the event:
        // its type is the nearest place there is to name.
        let path = error.path().to_string();
        let at = if path == "." { kind.as_deref().unwrap_or(".") } else { &path };
        unfit(protocol, WHAT, at, error.inner())
    })
}

/// `value` as `T`, with the path of the first field that does not fit on failure. The
/// walk grows its stack as needed, as [`crate::json::parse`] does, so a value at the
/// depth limit reads on any thread.
fn typed<T: DeserializeOwned>(value: Value) -> Result<T, serde_path_to_error::Error<serde_json::Error>> {
    serde_path_to_error::deserialize(serde_stacker::Deserializer::new(value))
}
