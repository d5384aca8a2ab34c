//! The calls a step's catalog answers itself, and what a run loads of a deferred catalog
//! (DESIGN.md §20). The machine answers each `search_tools` call itself: the ranking is
//! pure and local, so an in-process run and a durable one give the same answer without a
//! tool call of their own; so is a call of a tool the step does not offer (one the hooks'
//! `prepare_tools` dropped, say), which a durable run's worker would otherwise find among
//! the agent's tools. A call naming a deferred tool that was never loaded runs (the model
//! may know the name) and loads it. Loaded names are session state, kept in load order, so
//! each request offers them in the same order after the always-loaded tools and a
//! provider's cached prefix holds. With native tool search the provider searches and loads;
//! what it reports loaded joins the same names, with the same events, so a session looks
//! alike either way.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::event::{EventKind, EventLog};
use crate::message::ToolCallPart;
use crate::model::LoadedTools;
use crate::registry::ToolRegistry;
use crate::scheduler::{ToolReturn, not_found};
use crate::search::{DEFAULT_LIMIT, MAX_LIMIT, SEARCH_TOOL};
use crate::tool::{ToolError, ToolResult};

/// The arguments of a `search_tools` call.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchArguments {
    query: String,
    /// `null` too: a strict definition sends the optional `limit` as `null`.
    #[serde(default)]
    limit: Option<usize>,
}

/// The return of `call` when the run answers it itself (a `search_tools` call while
/// tools are deferred, after loading what it found, or a call of a tool the step does not
/// offer); `None` for a call the tools answer, which loads its tool first if that tool is
/// deferred and not loaded yet.
pub(crate) fn answer(
    call: &ToolCallPart,
    registry: &ToolRegistry,
    loaded: &mut Vec<Arc<str>>,
    events: &EventLog,
) -> Option<ToolReturn> {
    let searched = registry.defers() && !registry.searches_natively() && &*call.name == SEARCH_TOOL;
    if let Some(tool) = registry.get(&call.name).filter(|_| !searched) {
        if tool.deferred {
            load([&*call.name], None, loaded, events);
        }
        return None;
    }
    events.emit(EventKind::ToolCall {
        tool_call_id: call.id.clone(),
        name: call.name.clone(),
        override_arguments: None,
        arguments: None,
        rewritten_by: None,
        answered_by: None,
        queued_for: Box::default(),
    });
    let ret = if searched {
        match search(call, registry, loaded, events) {
            Ok(found) => ToolReturn::success(call, ToolResult::new(found), None),
            Err(error) => ToolReturn::failure(call, error, Map::new()),
        }
    } else {
        ToolReturn::failure(call, not_found(&call.name, registry), Map::new())
    };
    events.emit(ret.event());
    Some(ret)
}

/// Loads what the provider's own search loaded while answering (native tool search): each
/// search that loaded a deferred tool the run had not is a `tools_loaded` event with its
/// query. Names the agent does not defer are not its to track.
pub(crate) fn loaded_natively(
    searches: &[LoadedTools],
    registry: &ToolRegistry,
    loaded: &mut Vec<Arc<str>>,
    events: &EventLog,
) {
    for search in searches {
        let names = search.names.iter().map(String::as_str).filter(|name| registry.is_deferred(name));
        load(names, search.query.clone(), loaded, events);
    }
}

/// Loads those of `names` the run had not loaded, in order, reporting them in one
/// `tools_loaded` event (found by `query`, if a search found them).
fn load<'a>(
    names: impl IntoIterator<Item = &'a str>,
    query: Option<String>,
    loaded: &mut Vec<Arc<str>>,
    events: &EventLog,
) {
    let mut new = Vec::new();
    for name in names {
        if !loaded.iter().any(|known| **known == *name) {
            loaded.push(Arc::from(name));
            new.push(name.to_owned());
        }
    }
    if !new.is_empty() {
        events.emit(EventKind::ToolsLoaded { names: new, query });
    }
}

/// The tools `call` finds, as `{"tools": [{"name", "description"}]}`, each loaded.
fn search(
    call: &ToolCallPart,
    registry: &ToolRegistry,
    loaded: &mut Vec<Arc<str>>,
    events: &EventLog,
) -> Result<Value, ToolError> {
    let SearchArguments { query, limit } = SearchArguments::deserialize(&call.arguments).map_err(|error| {
        ToolError::invalid_arguments(format!(
            "`{SEARCH_TOOL}` takes `query` (a string) and `limit` (an integer from 1 to {MAX_LIMIT}): {error}"
        ))
    })?;
    let limit = limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(ToolError::invalid_arguments(format!("`limit` must be from 1 to {MAX_LIMIT}, got {limit}")));
    }
    let found = registry.search(&query, limit);
    load(found.iter().map(|definition| definition.name.as_str()), Some(query), loaded, events);
    let tools: Vec<Value> = found
        .iter()
        .map(|definition| json!({"name": definition.name, "description": definition.description_text()}))
        .collect();
    if tools.is_empty() {
        return Ok(json!({"tools": [], "message": "no tool matches these words; try others"}));
    }
    Ok(json!({"tools": tools}))
}
