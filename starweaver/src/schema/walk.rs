//! Where subschemas live, said once: the table of keywords whose values hold schemas, the
//! traversal every schema pass uses (validation, the strict transform, `$defs` inlining,
//! the provider checker), and the one `$ref` resolver.

use serde_json::{Map, Value};

/// How a keyword's value holds subschemas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Holds {
    /// The value is a schema (`items`, `not`, `additionalProperties`, ...).
    One,
    /// The value is a list of schemas (`anyOf`, `prefixItems`, ...).
    List,
    /// The value is an object of named schemas (`properties`, `$defs`, ...).
    Map,
}

/// Every keyword whose value holds subschemas: JSON Schema 2020-12 plus the older
/// `definitions`. Anything else (`enum`, `const`, `default`, `examples`, `required`, ...)
/// is data, never a schema.
pub(crate) const SUBSCHEMA_KEYWORDS: &[(&str, Holds)] = &[
    ("properties", Holds::Map),
    ("patternProperties", Holds::Map),
    ("dependentSchemas", Holds::Map),
    ("$defs", Holds::Map),
    ("definitions", Holds::Map),
    ("additionalProperties", Holds::One),
    ("items", Holds::One),
    ("contains", Holds::One),
    ("propertyNames", Holds::One),
    ("unevaluatedProperties", Holds::One),
    ("unevaluatedItems", Holds::One),
    ("not", Holds::One),
    ("if", Holds::One),
    ("then", Holds::One),
    ("else", Holds::One),
    ("anyOf", Holds::List),
    ("oneOf", Holds::List),
    ("allOf", Holds::List),
    ("prefixItems", Holds::List),
];

/// How `keyword`'s value holds subschemas, if it does.
pub(crate) fn holds(keyword: &str) -> Option<Holds> {
    SUBSCHEMA_KEYWORDS.iter().find(|(k, _)| *k == keyword).map(|(_, holds)| *holds)
}

/// One subschema directly below a schema object.
pub(crate) struct Child<'a> {
    /// The keyword it sits under.
    pub keyword: &'a str,
    pub holds: Holds,
    /// Its JSON Pointer segment(s) from the parent: `items`, `anyOf/2`, `properties/a~1b`.
    pub segment: String,
    /// Its name, under a [`Holds::Map`] keyword.
    pub name: Option<&'a str>,
    pub schema: &'a Value,
}

/// Each subschema directly below `map`, in the map's key order. A keyword whose value has
/// the wrong shape (a `properties` that is a list) yields nothing: [`validate_parameters`]
/// is where shapes are reported.
///
/// [`validate_parameters`]: super::validate_parameters
pub(crate) fn children(map: &Map<String, Value>) -> impl Iterator<Item = Child<'_>> {
    map.iter().flat_map(|(keyword, value)| {
        let holds = holds(keyword);
        let found: Vec<Child<'_>> = match (holds, value) {
            (Some(holds @ Holds::One), _) => {
                vec![Child { keyword, holds, segment: keyword.clone(), name: None, schema: value }]
            }
            (Some(holds @ Holds::List), Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, schema)| Child { keyword, holds, segment: format!("{keyword}/{i}"), name: None, schema })
                .collect(),
            (Some(holds @ Holds::Map), Value::Object(named)) => named
                .iter()
                .map(|(name, schema)| Child {
                    keyword,
                    holds,
                    segment: format!("{keyword}/{}", escape(name)),
                    name: Some(name),
                    schema,
                })
                .collect(),
            _ => Vec::new(),
        };
        found
    })
}

/// [`children`] for a transform: `visit` gets each subschema mutably, with its keyword and
/// pointer segment, and its first error stops the walk.
pub(crate) fn try_for_each_child_mut<E>(
    map: &mut Map<String, Value>,
    mut visit: impl FnMut(&str, &str, &mut Value) -> Result<(), E>,
) -> Result<(), E> {
    for (keyword, value) in map.iter_mut() {
        match (holds(keyword), value) {
            (Some(Holds::One), value) => visit(keyword, keyword, value)?,
            (Some(Holds::List), Value::Array(items)) => {
                for (i, item) in items.iter_mut().enumerate() {
                    visit(keyword, &format!("{keyword}/{i}"), item)?;
                }
            }
            (Some(Holds::Map), Value::Object(named)) => {
                for (name, item) in named.iter_mut() {
                    visit(keyword, &format!("{keyword}/{}", escape(name)), item)?;
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// What a local `$ref` (`#`, or `#` and any JSON Pointer) names inside `root`; `None` for a
/// remote reference or one that names nothing.
pub(crate) fn resolve_ref<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    root.pointer(reference.strip_prefix('#')?)
}

/// Runs `f` with `segment` appended to the JSON Pointer `path`, then takes it off again.
pub(crate) fn with_segment<R>(path: &mut String, segment: &str, f: impl FnOnce(&mut String) -> R) -> R {
    let len = path.len();
    path.push('/');
    path.push_str(segment);
    let out = f(path);
    path.truncate(len);
    out
}

/// RFC 6901 escaping, so a property called `a/b` still yields an unambiguous pointer.
pub(crate) fn escape(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

/// The last segment of a JSON Pointer, unescaped: the name a `$ref` gives its target.
pub(crate) fn last_segment(pointer: &str) -> String {
    pointer.rsplit('/').next().unwrap_or_default().replace("~1", "/").replace("~0", "~")
}

/// Folds an `allOf` of one schema into `map` (the keys `map` already has win), which is
/// what it means. `false` when `allOf` holds several schemas, which no merge can express.
pub(crate) fn merge_lone_all_of(map: &mut Map<String, Value>) -> bool {
    match map.remove("allOf") {
        None => true,
        Some(Value::Array(mut subs)) if subs.len() == 1 => {
            merge_missing(map, subs.remove(0));
            true
        }
        Some(other) => {
            map.insert("allOf".into(), other);
            false
        }
    }
}

/// Adds `from`'s keys that `into` lacks.
pub(crate) fn merge_missing(into: &mut Map<String, Value>, from: Value) {
    if let Value::Object(from) = from {
        for (key, value) in from {
            into.entry(key).or_insert(value);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn children_are_every_subschema_with_its_pointer_segment() {
        let schema = json!({
            "type": "object",
            "properties": {"a/b": {"type": "string"}},
            "anyOf": [{"type": "null"}, true],
            "items": false,
            "enum": [{"type": "not a schema"}],
            "$defs": {"D": {}},
        });
        let segments: Vec<String> = children(schema.as_object().unwrap()).map(|c| c.segment).collect();
        assert_eq!(segments, ["properties/a~1b", "anyOf/0", "anyOf/1", "items", "$defs/D"]);
    }

    #[test]
    fn references_resolve_any_local_pointer_and_nothing_else() {
        let root = json!({"$defs": {"a/b": {"type": "string"}}, "properties": {"x": {"type": "integer"}}});
        assert_eq!(resolve_ref(&root, "#/$defs/a~1b"), Some(&json!({"type": "string"})));
        assert_eq!(resolve_ref(&root, "#/properties/x"), Some(&json!({"type": "integer"})));
        assert_eq!(resolve_ref(&root, "#"), Some(&root));
        assert_eq!(resolve_ref(&root, "https://example.com/s.json"), None);
        assert_eq!(resolve_ref(&root, "#/$defs/missing"), None);
        assert_eq!(last_segment("#/$defs/a~1b"), "a/b");
    }
}
