//! `approval_required_tools`: which tools need a human decision before every call.

use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::tool::ToolDefinition;

/// One `approval_required_tools` entry.
#[derive(Debug, Clone, PartialEq)]
pub enum ApprovalRule {
    /// `*`: every tool.
    Any,
    /// A tool name, or a toolset's name or id.
    Name(String),
    /// A metadata bundle: tools whose metadata holds every one of these entries.
    Metadata(Map<String, Value>),
}

impl ApprovalRule {
    /// Reads an entry as Python passes it: `"*"`, a name, or an object (metadata bundle).
    ///
    /// # Errors
    /// `InvalidApprovalRule` for an empty name, an empty bundle, or any other JSON type.
    pub fn from_json(rule: &Value) -> Result<Self> {
        let invalid =
            |message: &str| Error::InvalidApprovalRule { rule: rule.to_string(), message: message.to_owned() };
        match rule {
            Value::String(s) if s == "*" => Ok(Self::Any),
            Value::String(s) if s.trim().is_empty() => Err(invalid("a name must not be empty")),
            Value::String(s) => Ok(Self::Name(s.clone())),
            Value::Object(m) if m.is_empty() => Err(invalid("a metadata bundle must have at least one entry")),
            Value::Object(m) => Ok(Self::Metadata(m.clone())),
            _ => Err(invalid("expected `\"*\"`, a tool or toolset name, or a metadata object")),
        }
    }

    fn matches(&self, definition: &ToolDefinition, toolset: Option<(&str, &str)>) -> bool {
        match self {
            Self::Any => true,
            Self::Name(n) => definition.name == *n || toolset.is_some_and(|(name, id)| name == n || id == n),
            Self::Metadata(bundle) => bundle.iter().all(|(k, v)| definition.metadata.get(k) == Some(v)),
        }
    }
}

impl From<&str> for ApprovalRule {
    fn from(name: &str) -> Self {
        if name == "*" { Self::Any } else { Self::Name(name.to_owned()) }
    }
}

impl From<Map<String, Value>> for ApprovalRule {
    fn from(bundle: Map<String, Value>) -> Self {
        Self::Metadata(bundle)
    }
}

/// The agent's approval policy: a tool needs approval when any rule matches it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ApprovalPolicy {
    rules: Vec<ApprovalRule>,
}

impl ApprovalPolicy {
    /// A policy from rules.
    pub fn new(rules: impl IntoIterator<Item = ApprovalRule>) -> Self {
        Self { rules: rules.into_iter().collect() }
    }

    /// The first rule matching a tool (with its toolset's name and id), as a reason to show.
    pub fn matching_rule(&self, definition: &ToolDefinition, toolset: Option<(&str, &str)>) -> Option<String> {
        self.rules.iter().find(|r| r.matches(definition, toolset)).map(|rule| match rule {
            ApprovalRule::Any => "`*`".to_owned(),
            ApprovalRule::Name(n) => format!("`{n}`"),
            ApprovalRule::Metadata(m) => Value::Object(m.clone()).to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn def(name: &str, metadata: Value) -> ToolDefinition {
        let Value::Object(metadata) = metadata else { unreachable!() };
        ToolDefinition::new(name, json!({"type": "object"})).with_metadata(metadata)
    }

    #[test]
    fn rules_match_by_name_toolset_metadata_and_star() {
        let deploy = def("deploy", json!({"risk": "high", "team": "ops"}));
        let read = def("read", json!({"risk": "low"}));
        let by_name = ApprovalPolicy::new([ApprovalRule::from("deploy")]);
        assert!(by_name.matching_rule(&deploy, None).is_some());
        assert!(by_name.matching_rule(&read, None).is_none());
        let by_toolset = ApprovalPolicy::new([ApprovalRule::from("ops-tools")]);
        assert!(by_toolset.matching_rule(&read, Some(("ops-tools", "ops-1"))).is_some());
        assert!(
            ApprovalPolicy::new([ApprovalRule::from("ops-1")])
                .matching_rule(&read, Some(("ops-tools", "ops-1")))
                .is_some()
        );
        let by_bundle = ApprovalPolicy::new([ApprovalRule::from_json(&json!({"risk": "high"})).unwrap()]);
        assert!(by_bundle.matching_rule(&deploy, None).is_some());
        assert!(by_bundle.matching_rule(&read, None).is_none());
        let star = ApprovalPolicy::new([ApprovalRule::from_json(&json!("*")).unwrap()]);
        assert_eq!(star.matching_rule(&read, None).as_deref(), Some("`*`"));
    }

    #[test]
    fn malformed_rules_are_rejected_with_the_entry() {
        for bad in [json!(""), json!({}), json!(3), json!(["deploy"])] {
            let err = ApprovalRule::from_json(&bad).unwrap_err();
            assert!(err.to_string().starts_with(&format!("invalid approval rule {bad}")), "{err}");
        }
    }
}
