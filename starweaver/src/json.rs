//! Limits that every JSON value entering the runtime keeps (DESIGN.md §16), and parsing
//! that keeps them.

use serde::Deserialize;
use serde_json::Value;

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
/// The nesting limit, or serde_json's message for text that is not JSON.
pub fn parse(text: &str) -> Result<Value, String> {
    check_text_depth(text)?;
    let mut deserializer = serde_json::Deserializer::from_str(text);
    deserializer.disable_recursion_limit();
    let value = Value::deserialize(serde_stacker::Deserializer::new(&mut deserializer)).map_err(|e| e.to_string())?;
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
    fn trailing_text_is_an_error() {
        assert!(parse("{} x").is_err());
    }
}
