//! `$defs` inlining, for providers that refuse `$ref` (Gemini, among others).

use serde_json::{Map, Value};

use super::walk::{self, Holds};
use super::{SchemaError, err, escape, with_segment};

/// How many schema nodes an inlined schema may hold unless the caller says otherwise: a
/// shared model referenced from many places multiplies on inlining.
pub const DEFAULT_INLINE_LIMIT: usize = 10_000;

/// `schema` with every local `$ref` (`#/$defs/...`, `#/definitions/...`, or any other JSON
/// Pointer into the schema) replaced by what it names, siblings of the `$ref` kept (they
/// win over the definition's own), and `$defs` removed.
///
/// # Errors
/// A recursive definition (it has no finite inlining), a `$ref` that is not local or names
/// no definition, or a result over `limit` schema nodes; each names the JSON Pointer.
///
/// ```
/// use serde_json::json;
///
/// let schema = json!({
///     "type": "object",
///     "properties": {"pet": {"$ref": "#/$defs/Pet", "description": "Yours."}},
///     "$defs": {"Pet": {"type": "object", "properties": {"name": {"type": "string"}}}},
/// });
/// let inlined = starweaver::schema::inline_defs(&schema, 100).unwrap();
/// assert_eq!(inlined["properties"]["pet"]["description"], "Yours.");
/// assert!(inlined.get("$defs").is_none());
///
/// let recursive = json!({"type": "object", "properties": {"n": {"$ref": "#/$defs/N"}},
///     "$defs": {"N": {"type": "object", "properties": {"next": {"$ref": "#/$defs/N"}}}}});
/// assert!(starweaver::schema::inline_defs(&recursive, 100).is_err());
/// ```
pub fn inline_defs(schema: &Value, limit: usize) -> Result<Value, SchemaError> {
    let mut inliner = Inliner { root: schema, stack: Vec::new(), left: limit, limit };
    let mut out = inliner.node(schema, &mut String::new())?;
    if let Value::Object(root) = &mut out {
        root.remove("$defs");
        root.remove("definitions");
    }
    Ok(out)
}

struct Inliner<'a> {
    root: &'a Value,
    /// The references being inlined, outermost first, to catch recursion.
    stack: Vec<&'a str>,
    left: usize,
    limit: usize,
}

impl<'a> Inliner<'a> {
    fn node(&mut self, node: &'a Value, path: &mut String) -> Result<Value, SchemaError> {
        if self.left == 0 {
            return Err(err(path, format!("inlining `$defs` exceeds the bound of {} schema nodes", self.limit)));
        }
        self.left -= 1;
        let Value::Object(map) = node else { return Ok(node.clone()) };
        if let Some(reference) = map.get("$ref") {
            return self.reference(reference, map, path);
        }
        let mut out = Map::with_capacity(map.len());
        for (key, value) in map {
            // Definitions are what gets inlined, not where: the root drops them afterwards.
            let holds = walk::holds(key).filter(|_| key != "$defs" && key != "definitions");
            let inlined = match (holds, value) {
                (Some(Holds::One), _) => with_segment(path, key, |p| self.node(value, p))?,
                (Some(Holds::List), Value::Array(items)) => {
                    let mut list = Vec::with_capacity(items.len());
                    for (i, item) in items.iter().enumerate() {
                        list.push(with_segment(path, &format!("{key}/{i}"), |p| self.node(item, p))?);
                    }
                    Value::Array(list)
                }
                (Some(Holds::Map), Value::Object(named)) => {
                    let mut inlined = Map::with_capacity(named.len());
                    for (name, item) in named {
                        let at = format!("{key}/{}", escape(name));
                        inlined.insert(name.clone(), with_segment(path, &at, |p| self.node(item, p))?);
                    }
                    Value::Object(inlined)
                }
                _ => value.clone(),
            };
            out.insert(key.clone(), inlined);
        }
        Ok(Value::Object(out))
    }

    fn reference(
        &mut self,
        reference: &'a Value,
        map: &'a Map<String, Value>,
        path: &mut String,
    ) -> Result<Value, SchemaError> {
        let at = format!("{path}/$ref");
        let reference = reference.as_str().unwrap_or_default();
        if reference == "#" {
            return Err(err(&at, "`$ref: \"#\"` makes the schema recursive, so it cannot be inlined".into()));
        }
        let Some(target) = walk::resolve_ref(self.root, reference) else {
            return Err(err(
                &at,
                if reference.starts_with('#') {
                    format!("`{reference}` names no definition")
                } else {
                    format!("`{reference}` is not a local `#/...` reference, so it cannot be inlined")
                },
            ));
        };
        if let Some(start) = self.stack.iter().position(|r| *r == reference) {
            let cycle: Vec<String> =
                self.stack[start..].iter().chain([&reference]).map(|r| walk::last_segment(r)).collect();
            return Err(err(
                &at,
                format!("`{reference}` is recursive ({}), so it cannot be inlined", cycle.join(" -> ")),
            ));
        }
        self.stack.push(reference);
        let inlined = self.node(target, path);
        self.stack.pop();
        let mut inlined = inlined?;
        if let Value::Object(out) = &mut inlined {
            for (key, value) in map.iter().filter(|(k, _)| *k != "$ref") {
                out.insert(key.clone(), value.clone());
            }
        }
        Ok(inlined)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn shared_definitions_inline_everywhere_and_siblings_win() {
        let schema = json!({"type": "object", "properties": {
            "home": {"$ref": "#/$defs/Address", "description": "Where they live."},
            "work": {"$ref": "#/definitions/Address"},
        }, "$defs": {"Address": {"type": "object", "description": "An address.", "properties": {"street": {"type": "string"}}}},
           "definitions": {"Address": {"type": "string"}}});
        let out = inline_defs(&schema, 100).unwrap();
        assert_eq!(out["properties"]["home"]["description"], "Where they live.");
        assert_eq!(out["properties"]["home"]["properties"]["street"], json!({"type": "string"}));
        assert_eq!(out["properties"]["work"], json!({"type": "string"}));
        assert!(out.get("$defs").is_none() && out.get("definitions").is_none());
    }

    #[test]
    fn recursion_unknown_names_remote_refs_and_size_are_named_errors() {
        let cycle = json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}, "$defs": {
            "A": {"type": "object", "properties": {"b": {"$ref": "#/$defs/B"}}},
            "B": {"type": "array", "items": {"$ref": "#/$defs/A"}},
        }});
        let err = inline_defs(&cycle, 100).unwrap_err();
        assert_eq!(err.path, "/properties/a/properties/b/items/$ref");
        assert!(err.message.contains("recursive (A -> B -> A)"), "{err}");

        let unknown = json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/Nope"}}});
        assert!(inline_defs(&unknown, 100).unwrap_err().message.contains("names no definition"));
        let remote = json!({"type": "object", "properties": {"a": {"$ref": "https://example.com/a.json"}}});
        assert!(inline_defs(&remote, 100).unwrap_err().message.contains("is not a local"));

        // Each use of a definition is a copy: a wide fan-out outgrows the bound.
        let leaf = json!({"type": "object", "properties": {"x": {"type": "string"}, "y": {"type": "string"}}});
        let props: Map<String, Value> = (0..20).map(|i| (format!("p{i}"), json!({"$ref": "#/$defs/Leaf"}))).collect();
        let wide = json!({"type": "object", "properties": props, "$defs": {"Leaf": leaf}});
        let err = inline_defs(&wide, 30).unwrap_err();
        assert_eq!(err.message, "inlining `$defs` exceeds the bound of 30 schema nodes");
        inline_defs(&wide, DEFAULT_INLINE_LIMIT).unwrap();
    }
}
