//! `JsonMap`: a JSON object that takes one pointer's room while it is empty.

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::OnceLock;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// A JSON object (a [`serde_json::Map`]) kept in one pointer while empty and boxed once
/// it holds anything. Used for the maps a run records for every call and span (a tool
/// return's `metadata`, a span's `attributes`) that are nearly always empty: inline, each
/// would be 72 bytes, paid ten thousand times in a run of ten thousand calls.
///
/// It reads and writes as the map it holds (`Deref`/`DerefMut`), serialises as that map,
/// and equals any `JsonMap` with the same entries. Writing through it boxes the map if it
/// was empty.
///
/// ```
/// use serde_json::json;
/// use starweaver::JsonMap;
///
/// let mut metadata = JsonMap::default();
/// assert!(metadata.is_empty());
/// metadata.insert("source".into(), json!("cache"));
/// assert_eq!(metadata["source"], json!("cache"));
/// assert_eq!(serde_json::to_value(&metadata).unwrap(), json!({"source": "cache"}));
/// assert_eq!(std::mem::size_of::<JsonMap>(), std::mem::size_of::<usize>());
/// ```
#[derive(Clone, Default)]
pub struct JsonMap(Option<Box<Map<String, Value>>>);

impl JsonMap {
    /// The map, unboxed.
    pub fn into_map(self) -> Map<String, Value> {
        self.0.map(|map| *map).unwrap_or_default()
    }
}

/// The map every empty `JsonMap` reads as.
fn empty() -> &'static Map<String, Value> {
    static EMPTY: OnceLock<Map<String, Value>> = OnceLock::new();
    EMPTY.get_or_init(Map::new)
}

impl Deref for JsonMap {
    type Target = Map<String, Value>;

    fn deref(&self) -> &Self::Target {
        self.0.as_deref().unwrap_or_else(|| empty())
    }
}

impl DerefMut for JsonMap {
    fn deref_mut(&mut self) -> &mut Self::Target {
        self.0.get_or_insert_with(Box::default)
    }
}

impl From<Map<String, Value>> for JsonMap {
    fn from(map: Map<String, Value>) -> Self {
        Self((!map.is_empty()).then(|| Box::new(map)))
    }
}

impl From<JsonMap> for Map<String, Value> {
    fn from(map: JsonMap) -> Self {
        map.into_map()
    }
}

impl FromIterator<(String, Value)> for JsonMap {
    fn from_iter<I: IntoIterator<Item = (String, Value)>>(entries: I) -> Self {
        Map::from_iter(entries).into()
    }
}

impl<'a> IntoIterator for &'a JsonMap {
    type Item = (&'a String, &'a Value);
    type IntoIter = serde_json::map::Iter<'a>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl PartialEq for JsonMap {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl PartialEq<Map<String, Value>> for JsonMap {
    fn eq(&self, other: &Map<String, Value>) -> bool {
        **self == *other
    }
}

impl fmt::Debug for JsonMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (**self).fmt(f)
    }
}

impl Serialize for JsonMap {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        (**self).serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for JsonMap {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Map::deserialize(deserializer).map(Self::from)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_empty_map_holds_no_box_and_equals_a_map_emptied_after_writing() {
        let mut written = JsonMap::default();
        written.insert("k".into(), json!(1));
        assert!(written.0.is_some());
        written.remove("k");
        // Emptied by hand it keeps its box, but reads and compares as any empty map.
        assert_eq!(written, JsonMap::default());
        assert_eq!(JsonMap::from(Map::new()).0, None);
        let read: JsonMap = serde_json::from_value(json!({})).unwrap();
        assert_eq!(read.0, None);
        assert_eq!(serde_json::to_value(&read).unwrap(), json!({}));
    }

    #[test]
    fn entries_keep_their_order_through_every_way_in_and_out() {
        let map: JsonMap = [("b".to_owned(), json!(2)), ("a".to_owned(), json!(1))].into_iter().collect();
        let keys: Vec<&String> = (&map).into_iter().map(|(k, _)| k).collect();
        assert_eq!(keys, ["b", "a"]);
        assert_eq!(serde_json::to_string(&map).unwrap(), r#"{"b":2,"a":1}"#);
        let back: JsonMap = serde_json::from_str(r#"{"b":2,"a":1}"#).unwrap();
        assert_eq!(back, map);
        assert_eq!(Map::from(back).len(), 2);
    }
}
