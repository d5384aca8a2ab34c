//! `$defs` inlining, for providers that refuse `$ref` (Gemini, among others).

use serde_json::{Map, Value};

use super::error::{SchemaError, err};
use super::walk::with_segment;
use super::walk::{self, try_for_each_child_mut};

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
    let mut out = schema.clone();
    Inliner { root: schema, stack: Vec::new(), left: limit, limit }.node(&mut out, &mut String::new())?;
    if let Value::Object(root) = &mut out {
        root.remove("$defs");
        root.remove("definitions");
    }
    Ok(out)
}

struct Inliner<'a> {
    /// The schema as given: what references resolve against.
    root: &'a Value,
    /// The references being inlined, outermost first, to catch recursion.
    stack: Vec<String>,
    left: usize,
    limit: usize,
}

impl Inliner<'_> {
    /// Inlines every reference in `node`, in place.
    fn node(&mut self, node: &mut Value, path: &mut String) -> Result<(), SchemaError> {
        if self.left == 0 {
            return Err(err(path, format!("inlining `$defs` exceeds the bound of {} schema nodes", self.limit)));
        }
        self.left -= 1;
        let Value::Object(map) = node else { return Ok(()) };
        if let Some(reference) = map.shift_remove("$ref") {
            let siblings = std::mem::take(map);
            return self.reference(reference.as_str().unwrap_or_default(), siblings, node, path);
        }
        try_for_each_child_mut(map, |keyword, segment, child| match keyword {
            // Definitions are what gets inlined, not where: the root drops them afterwards.
            "$defs" | "definitions" => Ok(()),
            _ => with_segment(path, segment, |p| self.node(child, p)),
        })
    }

    /// Makes `node` what `reference` names, inlined, with the `$ref`'s `siblings` over it.
    fn reference(
        &mut self,
        reference: &str,
        siblings: Map<String, Value>,
        node: &mut Value,
        path: &mut String,
    ) -> Result<(), SchemaError> {
        let at = format!("{path}/$ref");
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
        if let Some(start) = self.stack.iter().position(|r| r == reference) {
            let cycle: Vec<String> =
                self.stack.iter().skip(start).map(String::as_str).chain([reference]).map(walk::last_segment).collect();
            return Err(err(
                &at,
                format!("`{reference}` is recursive ({}), so it cannot be inlined", cycle.join(" -> ")),
            ));
        }
        *node = target.clone();
        self.stack.push(reference.to_owned());
        let inlined = self.node(node, path);
        self.stack.pop();
        inlined?;
        if let Value::Object(out) = node {
            out.extend(siblings);
        }
        Ok(())
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
