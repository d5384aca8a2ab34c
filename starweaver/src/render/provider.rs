//! [`Provider`]: the tool formats a definition renders to.

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};

/// A provider tool format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Provider {
    /// OpenAI Chat Completions: `{"type": "function", "function": {...}}`.
    OpenAiChat,
    /// OpenAI Responses: `{"type": "function", "name", ..., "strict"}`.
    OpenAiResponses,
    /// Anthropic Messages: `{"name", "description", "input_schema"}`.
    Anthropic,
    /// Google Gemini function declarations (OpenAPI schema subset, no `$ref`).
    Gemini,
}

impl Provider {
    /// Every provider, in a stable order.
    pub const ALL: [Provider; 4] = [Self::OpenAiChat, Self::OpenAiResponses, Self::Anthropic, Self::Gemini];

    /// The name used on the command line and in Python: `openai-chat`, `openai-responses`,
    /// `anthropic`, `gemini`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::OpenAiChat => "openai-chat",
            Self::OpenAiResponses => "openai-responses",
            Self::Anthropic => "anthropic",
            Self::Gemini => "gemini",
        }
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Provider {
    type Err = Error;

    fn from_str(name: &str) -> Result<Self> {
        Self::ALL.into_iter().find(|p| p.as_str() == name).ok_or_else(|| Error::InvalidOption {
            option: "provider",
            message: format!(
                "unknown provider `{name}`; expected one of {}",
                Self::ALL.map(|p| format!("`{p}`")).join(", ")
            ),
        })
    }
}
