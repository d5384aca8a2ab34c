//! Limits that every JSON value entering the runtime keeps, and parsing
//! that keeps them.

use std::fmt::Write as _;

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// How deeply a value may nest (arrays and objects) when it enters the runtime from
/// Python, a model, a store or canonical JSON text. Deeper values are refused with an
/// error naming the limit, so no walk over a value can exhaust the stack.
pub const MAX_DEPTH: usize = 1_000;

/// JSON text as a value, refusing nesting deeper than [`MAX_DEPTH`] before parsing. The
/// parser's recursion runs on a stack that grows as needed (`serde_stacker`), so a value
/// at the limit parses on any thread, a 2 MiB tokio worker's included.
///
/// ```
/// let value = starweaver::json::parse("[[1]]").unwrap();
/// assert_eq!(value, serde_json::json!([[1]]));
/// let deep = "[".repeat(starweaver::json::MAX_DEPTH + 1);
/// assert!(starweaver::json::parse(&deep).unwrap_err().contains("levels deep"));
/// ```
///
/// # Errors
/// The nesting limit, or `serde_json`'s message for text that is not JSON.
pub fn parse(text: &str) -> Result<Value, String> {
    from_text(text)
}

/// JSON text read straight into `T`, within the limits [`parse`] keeps: no value is
/// built on the way. Its errors do not say where a field fails to fit; callers that name
/// it read the text again as a [`Value`] when this fails.
pub(crate) fn from_text<T: DeserializeOwned>(text: &str) -> Result<T, String> {
    check_text_depth(text)?;
    let mut deserializer = serde_json::Deserializer::from_str(text);
    deserializer.disable_recursion_limit();
    let value = T::deserialize(serde_stacker::Deserializer::new(&mut deserializer)).map_err(|e| e.to_string())?;
    deserializer.end().map_err(|e| e.to_string())?;
    Ok(value)
}

/// Counts brackets outside strings: a linear scan with no recursion.
fn check_text_depth(text: &str) -> Result<(), String> {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for byte in text.bytes() {
        if in_string {
            match (escaped, byte) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Err(format!("the value is nested more than {MAX_DEPTH} levels deep"));
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

/// The first integer in `text` (valid JSON) that no 64-bit integer holds, as an error
/// naming where it is (`items[0].n`, the path style of argument errors). `serde_json` reads
/// such an integer as the nearest float, so a parameter typed as any JSON value would
/// receive `1e23` for `100000000000000000000000`: arguments holding one are refused
/// instead: values are never changed on the way in.
///
/// ```
/// let error = starweaver::json::wide_integer(r#"{"items": [{"n": 100000000000000000000000}]}"#);
/// assert_eq!(
///     error.as_deref(),
///     Some("`items[0].n`: the integer 100000000000000000000000 does not fit in 64 bits (send it as a string)")
/// );
/// assert_eq!(starweaver::json::wide_integer(r#"{"n": 18446744073709551615, "x": 1e30}"#), None);
/// ```
pub fn wide_integer(text: &str) -> Option<String> {
    enum Frame {
        Object { key: String },
        Array { index: usize },
    }
    let bytes = text.as_bytes();
    let mut stack: Vec<Frame> = Vec::new();
    let mut at = 0;
    while let Some(&byte) = bytes.get(at) {
        match byte {
            b'{' => stack.push(Frame::Object { key: String::new() }),
            b'[' => stack.push(Frame::Array { index: 0 }),
            b'}' | b']' => {
                stack.pop();
            }
            b',' => {
                if let Some(Frame::Array { index }) = stack.last_mut() {
                    *index += 1;
                }
            }
            b'"' => {
                let end = string_end(bytes, at);
                // A string directly followed by `:` is an object key.
                let rest = text.get(end..).unwrap_or_default().trim_start();
                if rest.starts_with(':')
                    && let Some(Frame::Object { key }) = stack.last_mut()
                {
                    let raw = text.get(at..end).unwrap_or_default();
                    *key = serde_json::from_str(raw).unwrap_or_else(|_| raw.to_owned());
                }
                at = end;
                continue;
            }
            b'-' | b'0'..=b'9' => {
                let end = bytes
                    .get(at..)
                    .and_then(|tail| {
                        tail.iter().position(|b| !matches!(b, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'))
                    })
                    .map_or(bytes.len(), |n| at + n);
                let literal = text.get(at..end).unwrap_or_default();
                let integral = !literal.contains(['.', 'e', 'E']);
                if integral && literal.parse::<i64>().is_err() && literal.parse::<u64>().is_err() {
                    let mut path = String::new();
                    for frame in &stack {
                        match frame {
                            Frame::Object { key } if path.is_empty() => path.push_str(key),
                            Frame::Object { key } => {
                                path.push('.');
                                path.push_str(key);
                            }
                            Frame::Array { index } => {
                                write!(path, "[{index}]").expect("writing to a String cannot fail");
                            }
                        }
                    }
                    let what = format!("the integer {literal} does not fit in 64 bits (send it as a string)");
                    return Some(if path.is_empty() { what } else { format!("`{path}`: {what}") });
                }
                at = end;
                continue;
            }
            _ => {}
        }
        at += 1;
    }
    None
}

/// Where the string starting at `start` (its opening quote) ends: just past its closing quote.
fn string_end(bytes: &[u8], start: usize) -> usize {
    let mut at = start + 1;
    while let Some(&byte) = bytes.get(at) {
        match byte {
            b'\\' => at += 2,
            b'"' => return at + 1,
            _ => at += 1,
        }
    }
    bytes.len()
}

/// How a value is named in error messages: `null`, `a bool`, `a number`, ...
pub fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a bool",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Whether two values are equal (as `==` says), found without hashing when their objects
/// hold their keys in the same order, as two copies of one value do: entries are compared
/// in order first, and when anything differs that way, the whole values again with `==`.
pub(crate) fn equal(a: &Value, b: &Value) -> bool {
    same_in_order(a, b) || a == b
}

/// [`equal`] for two objects.
pub(crate) fn maps_equal(a: &Map<String, Value>, b: &Map<String, Value>) -> bool {
    entries_in_order(a, b) || a == b
}

/// Equal with every object's entries in the same order (so equal, but not every pair of
/// equal values).
fn same_in_order(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Array(a), Value::Array(b)) => a.len() == b.len() && a.iter().zip(b).all(|(a, b)| same_in_order(a, b)),
        (Value::Object(a), Value::Object(b)) => entries_in_order(a, b),
        _ => a == b,
    }
}

fn entries_in_order(a: &Map<String, Value>, b: &Map<String, Value>) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|((ka, va), (kb, vb))| ka == kb && same_in_order(va, vb))
}

/// `json` decoded as `T`; when that fails, decoded again with path tracking, so the error
/// says where. Path tracking costs on every field, so only a failed decode pays for it.
pub(crate) fn decode<T: DeserializeOwned>(json: &Value) -> Result<T, serde_path_to_error::Error<serde_json::Error>> {
    T::deserialize(json).or_else(|_| serde_path_to_error::deserialize(json))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn brackets_inside_strings_do_not_count() {
        let text = format!("[\"{}\\\"\"]", "[".repeat(MAX_DEPTH * 2));
        assert!(parse(&text).is_ok());
    }

    #[test]
    fn the_limit_itself_parses_and_one_more_is_refused() {
        let at_limit = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        let value = parse(&at_limit).unwrap();
        // What the runtime then does with a value (copy, print, compare, drop) fits the stack too.
        assert_eq!(serde_json::to_string(&value.clone()).unwrap(), at_limit);
        let over = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
        assert!(parse(&over).unwrap_err().contains("1000 levels deep"));
    }

    #[test]
    fn values_are_equal_whatever_the_order_of_their_keys_and_unequal_when_anything_differs() {
        let value =
            serde_json::json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": [1, {"c": null}]}});
        let reordered =
            serde_json::json!({"properties": {"b": [1, {"c": null}], "a": {"type": "integer"}}, "type": "object"});
        assert!(equal(&value, &value.clone()) && equal(&value, &reordered) && equal(&reordered, &value));
        let Value::Object(map) = &value else { unreachable!() };
        let Value::Object(other) = &reordered else { unreachable!() };
        assert!(maps_equal(map, other));
        for different in [
            serde_json::json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": [1, {"c": 0}]}}),
            serde_json::json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": [{"c": null}, 1]}}),
            serde_json::json!({"type": "object", "properties": {"a": {"type": "integer"}}}),
            serde_json::json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": [1, {"c": null}]}, "x": 1}),
            // Same values under another key; the same items and one more.
            serde_json::json!({"type": "object", "properties": {"z": {"type": "integer"}, "b": [1, {"c": null}]}}),
            serde_json::json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": [1, {"c": null}, 2]}}),
        ] {
            assert!(!equal(&value, &different) && !equal(&different, &value), "{different}");
            assert!(!equal(&reordered, &different), "{different}");
        }
    }

    #[test]
    fn trailing_text_is_an_error() {
        assert!(parse("{} x").is_err());
    }
}
