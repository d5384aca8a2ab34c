//! Tool-call arguments as the model sent them, integers wider than 64 bits included.

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::message::ResponsePart;

/// Tool-call arguments as the model sent them: the object when the text is one (and
/// holds no integer wider than 64 bits, which parsing would turn into a float), else the
/// text itself, which the scheduler answers with an `invalid_arguments` return the model
/// can correct.
pub(crate) fn arguments(text: &str) -> Value {
    match crate::json::parse(text) {
        Ok(object @ Value::Object(_)) if !holds_float(&object) || crate::json::wide_integer(text).is_none() => object,
        _ if text.trim().is_empty() => Value::Object(Map::new()),
        _ => Value::String(text.to_owned()),
    }
}

/// Gives back, as the text the model sent, the arguments of calls in `parts` that a
/// protocol sent as objects when an integer in them was too wide for 64 bits: parsing
/// the body turned it into a float, and the scheduler answers the text with an
/// `invalid_arguments` return naming where it is. `raw` reads each call's arguments
/// text from `body`; it runs only when a call holds a float and the body such an integer.
pub(crate) fn keep_wide_arguments(
    parts: &mut [ResponsePart],
    body: &str,
    raw: impl FnOnce(&str) -> Vec<Box<RawValue>>,
) {
    let calls = || parts.iter().filter(|p| matches!(p, ResponsePart::ToolCall(_)));
    if !calls().any(|p| matches!(p, ResponsePart::ToolCall(call) if holds_float(&call.arguments)))
        || crate::json::wide_integer(body).is_none()
    {
        return;
    }
    let texts = raw(body);
    let calls = parts.iter_mut().filter_map(|p| match p {
        ResponsePart::ToolCall(call) => Some(call),
        ResponsePart::Text { .. } | ResponsePart::ProviderItem(_) => None,
    });
    for (call, text) in calls.zip(texts) {
        call.arguments = arguments(text.get());
    }
}

/// Whether a float appears in `value`: only then can an integer have been widened.
fn holds_float(value: &Value) -> bool {
    match value {
        Value::Number(n) => n.is_f64(),
        Value::Array(items) => items.iter().any(holds_float),
        Value::Object(map) => map.values().any(holds_float),
        _ => false,
    }
}
