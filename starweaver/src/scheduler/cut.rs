//! Return-size limits (`max_return_chars`, DESIGN.md §18): model-facing content longer than
//! the limit is cut, and a marker says how many characters were cut.
//!
//! Characters are Unicode scalar values (what Python's `len` counts), so a cut never falls
//! inside a character. A string counts its characters; content parts count the text of
//! their text parts (media parts are kept: cutting base64 would only make noise); any other
//! value counts the characters of its compact JSON text, and a cut one becomes that text's
//! start, as a string.

use serde_json::Value;

use crate::content::Part;

/// What follows cut content: `… [N more characters cut]`.
pub(crate) fn marker(cut: usize) -> String {
    format!("… [{cut} more characters cut]")
}

/// `content` cut to at most `max` characters and marked, or `None` when it fits.
pub(crate) fn cut(content: &Value, max: u32) -> Option<Value> {
    let max = usize::try_from(max).unwrap_or(usize::MAX);
    match content {
        Value::String(text) => cut_text(text, max).map(Value::String),
        Value::Array(_) | Value::Object(_) if Part::list_from(content).is_some() => cut_parts(content, max),
        other => cut_text(&other.to_string(), max).map(Value::String),
    }
}

/// The first `max` characters of `text` and the marker, or `None` when it fits.
fn cut_text(text: &str, max: usize) -> Option<String> {
    let (kept, cut) = split(text, max)?;
    Some(format!("{kept}{}", marker(cut)))
}

/// Where `text` goes past `max` characters: what is kept, and how many characters are cut.
fn split(text: &str, max: usize) -> Option<(&str, usize)> {
    let (at, _) = text.char_indices().nth(max)?;
    let (kept, rest) = text.split_at(at);
    Some((kept, rest.chars().count()))
}

/// The text of a part the model reads as text: a text part, or an embedded text resource.
fn text_of(part: &Value) -> Option<&str> {
    part.get("kind").filter(|kind| *kind == "text" || *kind == "resource")?;
    part.get("text")?.as_str()
}

/// Content parts whose text parts together keep at most `max` characters: the part that
/// crosses the limit is cut and marked with every character cut (its own rest and the
/// text parts after it, which are left out); other parts stay.
fn cut_parts(content: &Value, max: usize) -> Option<Value> {
    let parts = match content {
        Value::Array(parts) => parts.as_slice(),
        one => std::slice::from_ref(one),
    };
    let (mut left, mut cut, mut marked) = (max, 0, None);
    let mut kept = Vec::with_capacity(parts.len());
    for part in parts {
        let Some(text) = text_of(part) else {
            kept.push(part.clone());
            continue;
        };
        if marked.is_some() {
            cut += text.chars().count();
            continue;
        }
        match split(text, left) {
            None => {
                left -= text.chars().count();
                kept.push(part.clone());
            }
            Some((head, rest)) => {
                cut += rest;
                marked = Some((kept.len(), head));
                kept.push(part.clone());
            }
        }
    }
    let (at, head) = marked?;
    let text = format!("{head}{}", marker(cut));
    if let Some(Value::Object(part)) = kept.get_mut(at) {
        part.insert("text".into(), Value::String(text));
    }
    Some(Value::Array(kept))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_embedded_text_resource_is_cut_as_text_is() {
        let content =
            json!([{"kind": "resource", "uri": "file:///log", "text": "abcdef"}, {"kind": "image", "url": "u"}]);
        let cut_content = cut(&content, 2).unwrap();
        assert_eq!(cut_content[0]["text"], json!(format!("ab{}", marker(4))));
        assert_eq!(cut_content[0]["uri"], "file:///log");
        assert_eq!(cut_content[1], content[1]);
    }

    #[test]
    fn content_within_the_limit_is_left_alone() {
        assert_eq!(cut(&json!("abc"), 3), None);
        assert_eq!(cut(&json!({"a": 1}), 7), None);
        assert_eq!(cut(&json!([{"kind": "text", "text": "abc"}, {"kind": "image", "url": "u"}]), 3), None);
    }

    #[test]
    fn strings_are_cut_by_characters_never_inside_one() {
        assert_eq!(cut(&json!("abcdef"), 2), Some(json!("ab… [4 more characters cut]")));
        assert_eq!(cut(&json!("日本語テキスト"), 3), Some(json!("日本語… [4 more characters cut]")));
        assert_eq!(cut(&json!("🦀🦀🦀"), 1), Some(json!("🦀… [2 more characters cut]")));
    }

    #[test]
    fn other_values_are_cut_as_their_compact_json_text() {
        assert_eq!(cut(&json!({"rows": [1, 2, 3]}), 8), Some(json!("{\"rows\":… [8 more characters cut]")));
        assert_eq!(cut(&json!(1_234_567), 3), Some(json!("123… [4 more characters cut]")));
    }

    #[test]
    fn parts_keep_their_media_and_cut_their_text() {
        let content = json!([
            {"kind": "text", "text": "abcd"},
            {"kind": "image", "url": "https://example.com/a.png"},
            {"kind": "text", "text": "efgh"},
            {"kind": "text", "text": "ij"},
        ]);
        assert_eq!(
            cut(&content, 6),
            Some(json!([
                {"kind": "text", "text": "abcd"},
                {"kind": "image", "url": "https://example.com/a.png"},
                {"kind": "text", "text": "ef… [4 more characters cut]"},
            ]))
        );
        let one = json!({"kind": "text", "text": "abcd"});
        assert_eq!(cut(&one, 1), Some(json!([{"kind": "text", "text": "a… [3 more characters cut]"}])));
    }
}
