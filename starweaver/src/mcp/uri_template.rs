//! RFC 6570 URI templates of level 1 (`notes://{folder}/{id}`), the form MCP resource
//! templates take, read back: which URIs a template gives, and with which variables.
//!
//! Level 1 expands a variable percent-encoded, every reserved character included, so a
//! variable's value in a URI holds no `/`: matching takes one or more characters other
//! than `/` for each variable and decodes them. Higher levels (`{+path}`, `{?q}`,
//! `{a,b}`, `{list*}`) are refused at build, naming the expression, rather than matched
//! wrongly.

use std::collections::HashMap;

/// A parsed level-1 template: literal text and variables, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UriTemplate {
    pieces: Vec<Piece>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Literal(String),
    Variable(String),
}

impl UriTemplate {
    /// Reads `template`.
    ///
    /// # Errors
    /// An unclosed or stray brace, an expression beyond level 1, a malformed or repeated
    /// variable name, or two variables with nothing between them (no URI could tell them
    /// apart); the message names which.
    pub(crate) fn parse(template: &str) -> Result<Self, String> {
        let mut pieces = Vec::new();
        let mut rest = template;
        while !rest.is_empty() {
            let literal_end = rest.find(['{', '}']).unwrap_or(rest.len());
            if literal_end > 0 {
                pieces.push(Piece::Literal(rest[..literal_end].to_owned()));
            }
            rest = &rest[literal_end..];
            if rest.starts_with('}') {
                return Err("a `}` closes no `{`".to_owned());
            }
            let Some(body) = rest.strip_prefix('{') else { continue };
            let Some(close) = body.find('}') else { return Err("a `{` is never closed".to_owned()) };
            let name = &body[..close];
            check_name(name)?;
            if pieces.iter().any(|piece| matches!(piece, Piece::Variable(seen) if seen == name)) {
                return Err(format!("the variable `{name}` appears twice"));
            }
            if matches!(pieces.last(), Some(Piece::Variable(_))) {
                return Err(format!("`{{{name}}}` follows another variable directly; put text between them"));
            }
            pieces.push(Piece::Variable(name.to_owned()));
            rest = &body[close + 1..];
        }
        Ok(Self { pieces })
    }

    /// The variables' names, in order.
    pub(crate) fn variables(&self) -> impl Iterator<Item = &str> {
        self.pieces.iter().filter_map(|piece| match piece {
            Piece::Variable(name) => Some(name.as_str()),
            Piece::Literal(_) => None,
        })
    }

    /// The variables that give `uri`, decoded; `None` when the template cannot give it.
    pub(crate) fn matches(&self, uri: &str) -> Option<HashMap<String, String>> {
        let mut variables = HashMap::new();
        match_from(&self.pieces, uri, &mut variables).then_some(variables)
    }
}

/// Level 1 names: letters, digits, `_`, percent-encoded octets and inner dots.
fn check_name(name: &str) -> Result<(), String> {
    if let Some(operator) = name.chars().next().filter(|c| "+#./;?&=,!@|".contains(*c)) {
        return Err(format!(
            "`{{{name}}}` uses the operator `{operator}`, beyond RFC 6570 level 1; use plain `{{name}}` variables"
        ));
    }
    if name.contains([',', '*', ':']) {
        return Err(format!(
            "`{{{name}}}` is beyond RFC 6570 level 1 (lists, explode and prefix modifiers); use plain `{{name}}` variables"
        ));
    }
    let valid = !name.is_empty()
        && !name.starts_with('.')
        && !name.ends_with('.')
        && !name.contains("..")
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '%'));
    if valid { Ok(()) } else { Err(format!("`{{{name}}}` is not a variable name (letters, digits and `_`)")) }
}

/// Matches `pieces` against the whole of `uri`, trying each place a variable could end.
fn match_from(pieces: &[Piece], uri: &str, variables: &mut HashMap<String, String>) -> bool {
    match pieces {
        [] => uri.is_empty(),
        [Piece::Literal(text), rest @ ..] => {
            uri.strip_prefix(text.as_str()).is_some_and(|tail| match_from(rest, tail, variables))
        }
        [Piece::Variable(name), rest @ ..] => {
            // A value is one or more characters up to the first `/` at most.
            let longest = uri.find('/').unwrap_or(uri.len());
            for end in (1..=longest).rev().filter(|end| uri.is_char_boundary(*end)) {
                let Some(value) = decode(&uri[..end]) else { continue };
                if match_from(rest, &uri[end..], variables) {
                    variables.insert(name.clone(), value);
                    return true;
                }
            }
            false
        }
    }
}

/// A value as the client meant it: percent-encoded octets decoded, as UTF-8.
fn decode(value: &str) -> Option<String> {
    percent_encoding::percent_decode_str(value).decode_utf8().ok().map(std::borrow::Cow::into_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    #[test]
    fn variables_match_one_segment_each_decoded() {
        let template = UriTemplate::parse("test://template/{id}/data").unwrap();
        assert_eq!(template.variables().collect::<Vec<_>>(), ["id"]);
        assert_eq!(template.matches("test://template/123/data"), Some(vars(&[("id", "123")])));
        assert_eq!(template.matches("test://template/a%20b%2Fc/data"), Some(vars(&[("id", "a b/c")])));
        assert_eq!(template.matches("test://template/1/2/data"), None);
        assert_eq!(template.matches("test://template//data"), None);
        assert_eq!(template.matches("test://template/123/data/more"), None);
        let two = UriTemplate::parse("files://{dir}/{name}.{ext}").unwrap();
        assert_eq!(two.matches("files://src/a.b.rs"), Some(vars(&[("dir", "src"), ("name", "a.b"), ("ext", "rs")])));
    }

    #[test]
    fn what_level_one_cannot_say_is_refused_by_name() {
        let error = |template: &str| UriTemplate::parse(template).unwrap_err();
        assert_eq!(error("a://{id"), "a `{` is never closed");
        assert_eq!(error("a://id}"), "a `}` closes no `{`");
        assert!(error("a://{+path}").contains("operator `+`"), "{}", error("a://{+path}"));
        assert!(error("a://{x,y}").contains("beyond RFC 6570 level 1"));
        assert_eq!(error("a://{x}/{x}"), "the variable `x` appears twice");
        assert!(error("a://{x}{y}").contains("follows another variable directly"));
        assert!(error("a://{}").contains("is not a variable name"));
        assert_eq!(UriTemplate::parse("plain://uri").unwrap().variables().count(), 0);
    }
}
