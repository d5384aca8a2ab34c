//! How a call's attempts ended ([`Attempted`]): what its way out through its hooks takes
//! and gives, and what its return is made from.

use serde_json::{Map, Value};

use crate::tool::{ToolError, ToolResult};

/// How a call's attempts ended: its result, or the error it ended with and, when its
/// attempts ran out, what the model is told of them.
pub(crate) type Attempted = Result<ToolResult, (ToolError, Option<Tried>)>;

/// What the model is told of a call whose attempts all failed: how many ran, and how many
/// retries its tool allows.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Tried {
    pub attempts: u32,
    pub max_retries: u32,
}

impl Tried {
    /// The fields the call's error return shows.
    pub(crate) fn into_map(self) -> Map<String, Value> {
        let mut fields = Map::new();
        fields.insert("attempts".into(), self.attempts.into());
        fields.insert("max_retries".into(), self.max_retries.into());
        fields
    }
}
