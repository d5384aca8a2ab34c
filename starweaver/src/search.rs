//! A deterministic local ranking of tools for a query: BM25 over each tool's name (split
//! into words at `_`, `-` and case changes), description, and parameter names and
//! descriptions. What `search_tools` answers with when tools are deferred (DESIGN.md §20),
//! unless the agent hands its deferred tools to the provider's own search ([`ToolSearch`]).
//!
//! The index is built once per tool list and only read afterwards, so one search costs a
//! walk of the postings of the query's words, not of the catalog.

use std::collections::HashMap;
use std::sync::LazyLock;

use serde_json::{Value, json};

use crate::tool::ToolDefinition;

/// The name of the tool a model is offered while any of its tools is deferred.
pub const SEARCH_TOOL: &str = "search_tools";
/// How many tools a search finds when the model asks for no number.
pub const DEFAULT_LIMIT: usize = 5;
/// The most tools one search may find: a search loads what it finds, and loading much of
/// a catalog at once is what deferring it avoids.
pub const MAX_LIMIT: usize = 20;

/// Who searches an agent's deferred tools.
///
/// ```
/// use starweaver::search::ToolSearch;
///
/// assert_eq!(ToolSearch::default(), ToolSearch::Local);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ToolSearch {
    /// The run: the model is offered [`SEARCH_TOOL`], answered with [`ToolIndex`], and a
    /// tool it finds is sent from the next request on. Every model can take this.
    #[default]
    Local,
    /// The provider: every deferred definition is sent marked deferred, with the
    /// provider's own search tool, and the provider loads what its search finds (Anthropic's
    /// tool search tool, OpenAI Responses' `tool_search`). An agent on a model without one
    /// is refused when it is built ([`Model::native_tool_search`](crate::Model::native_tool_search)).
    Native,
}

/// The definition of [`SEARCH_TOOL`], as every request that offers it sends it.
///
/// ```
/// let definition = starweaver::search::search_tool();
/// assert_eq!(definition.name, "search_tools");
/// assert_eq!(definition.parameters["required"], serde_json::json!(["query"]));
/// ```
pub fn search_tool() -> &'static ToolDefinition {
    static DEFINITION: LazyLock<ToolDefinition> = LazyLock::new(|| {
        ToolDefinition::new(
            SEARCH_TOOL,
            json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "Words for what the tool should do."},
                    "limit": {
                        "type": "integer",
                        "description": "How many tools to find, at most.",
                        "default": DEFAULT_LIMIT,
                        "minimum": 1,
                        "maximum": MAX_LIMIT,
                    },
                },
                "required": ["query"],
            }),
        )
        .with_description(
            "Find tools by what they do. The tools found can be called from the next step on; \
             other tools than those listed here exist but are not shown until found.",
        )
    });
    &DEFINITION
}

/// BM25's term-frequency saturation: the usual value.
const K1: f32 = 1.2;
/// BM25's length normalisation: the usual value.
const B: f32 = 0.75;
/// A word of a tool's name counts this many times: a name says what a tool is for more
/// surely than a word of a long description does.
const NAME_WEIGHT: f32 = 3.0;

/// A BM25 index over tool definitions.
///
/// ```
/// use serde_json::json;
/// use starweaver::ToolDefinition;
/// use starweaver::search::ToolIndex;
///
/// let tools = [
///     ToolDefinition::new("getWeather", json!({"type": "object"})).with_description("Forecast for a city."),
///     ToolDefinition::new("send_email", json!({
///         "type": "object",
///         "properties": {"to": {"type": "string", "description": "The recipient's address."}},
///     })),
/// ];
/// let index = ToolIndex::new(&tools);
/// assert_eq!(index.search("weather forecast", 5), [0]);
/// assert_eq!(index.search("recipient", 5), [1]);
/// assert!(index.search("", 5).is_empty());
/// ```
#[derive(Debug, Clone, Default)]
pub struct ToolIndex {
    /// Each word's postings: the tools holding it (in catalog order) and its weighted count.
    postings: HashMap<String, Vec<(u32, f32)>>,
    /// Each tool's weighted word count.
    lengths: Vec<f32>,
    average_length: f32,
}

impl ToolIndex {
    /// The index of `definitions`; [`search`](Self::search) gives positions in it.
    pub fn new<'a>(definitions: impl IntoIterator<Item = &'a ToolDefinition>) -> Self {
        let mut index = Self::default();
        for (position, definition) in definitions.into_iter().enumerate() {
            let mut counts: HashMap<String, f32> = HashMap::new();
            let mut add = |text: &str, weight: f32| {
                for word in words(text) {
                    *counts.entry(word).or_default() += weight;
                }
            };
            add(&definition.name, NAME_WEIGHT);
            add(definition.description.as_deref().unwrap_or_default(), 1.0);
            if let Some(Value::Object(properties)) = definition.parameters.get("properties") {
                for (name, schema) in properties {
                    add(name, 1.0);
                    add(schema.get("description").and_then(Value::as_str).unwrap_or_default(), 1.0);
                }
            }
            let position = u32::try_from(position).unwrap_or(u32::MAX);
            index.lengths.push(counts.values().sum());
            for (word, count) in counts {
                index.postings.entry(word).or_default().push((position, count));
            }
        }
        #[allow(clippy::cast_precision_loss)] // a catalog never nears 2^24 tools
        let tools = index.lengths.len().max(1) as f32;
        index.average_length = (index.lengths.iter().sum::<f32>() / tools).max(1.0);
        index
    }

    /// How many tools the index holds.
    pub fn len(&self) -> usize {
        self.lengths.len()
    }

    /// Whether it holds no tool.
    pub fn is_empty(&self) -> bool {
        self.lengths.is_empty()
    }

    /// The positions of the (at most) `limit` tools that match `query` best, best first;
    /// equal scores keep catalog order, so a search always gives the same answer. A tool
    /// sharing no word with the query never matches.
    pub fn search(&self, query: &str, limit: usize) -> Vec<usize> {
        let mut terms = words(query);
        terms.sort_unstable();
        terms.dedup();
        let mut scores: HashMap<u32, f32> = HashMap::new();
        #[allow(clippy::cast_precision_loss)] // a catalog never nears 2^24 tools
        let tools = self.lengths.len() as f32;
        for postings in terms.iter().filter_map(|term| self.postings.get(term)) {
            #[allow(clippy::cast_precision_loss)]
            let holding = postings.len() as f32;
            let idf = ((tools - holding + 0.5) / (holding + 0.5)).ln_1p();
            for &(tool, count) in postings {
                let length = self.lengths.get(tool as usize).copied().unwrap_or(self.average_length);
                let norm = K1 * (1.0 - B + B * length / self.average_length);
                *scores.entry(tool).or_default() += idf * count * (K1 + 1.0) / (count + norm);
            }
        }
        let mut ranked: Vec<(u32, f32)> = scores.into_iter().collect();
        ranked.sort_unstable_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        ranked.into_iter().take(limit).map(|(tool, _)| tool as usize).collect()
    }
}

/// The lowercase words of `text`: split at anything not a letter or digit, and at case
/// changes (`getWeather` → `get`, `weather`; `HTTPServer` → `http`, `server`).
fn words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    for chunk in text.split(|c: char| !c.is_alphanumeric()).filter(|chunk| !chunk.is_empty()) {
        let (mut start, mut previous) = (0, None);
        let mut rest = chunk.char_indices().peekable();
        while let Some((at, here)) = rest.next() {
            let after = rest.peek().map(|&(_, c)| c);
            if let Some(before) = previous {
                let lower_to_upper = char::is_lowercase(before) && here.is_uppercase();
                let acronym_end =
                    char::is_uppercase(before) && here.is_uppercase() && after.is_some_and(char::is_lowercase);
                let digit_edge = char::is_ascii_digit(&before) != here.is_ascii_digit();
                if lower_to_upper || acronym_end || digit_edge {
                    words.extend(chunk.get(start..at).map(str::to_lowercase));
                    start = at;
                }
            }
            previous = Some(here);
        }
        words.extend(chunk.get(start..).map(str::to_lowercase));
    }
    words
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn tool(name: &str, description: &str) -> ToolDefinition {
        ToolDefinition::new(name, json!({"type": "object"})).with_description(description)
    }

    #[test]
    fn names_split_at_underscores_dashes_and_case() {
        assert_eq!(words("get_weather-nowHTTPServer v2"), ["get", "weather", "now", "http", "server", "v", "2"]);
    }

    #[test]
    fn a_name_match_outranks_a_description_match_and_ties_keep_catalog_order() {
        let tools = [
            tool("list_files", "Lists files; not for weather."),
            tool("weather", "Forecast."),
            tool("a", "Same words."),
            tool("b", "Same words."),
        ];
        let index = ToolIndex::new(&tools);
        assert_eq!(index.search("weather", 5), [1, 0]);
        assert_eq!(index.search("same words", 1), [2]);
        assert_eq!(index.search("SAME", 5), [2, 3]);
        assert!(index.search("unrelated", 5).is_empty());
    }

    #[test]
    fn parameters_are_searched_by_name_and_description() {
        let with_params = ToolDefinition::new(
            "t",
            json!({"type": "object", "properties": {"zipCode": {"type": "string", "description": "Postal area."}}}),
        );
        let index = ToolIndex::new([&tool("u", "other"), &with_params]);
        assert_eq!(index.search("zip", 5), [1]);
        assert_eq!(index.search("postal", 5), [1]);
        assert_eq!(index.len(), 2);
    }
}
