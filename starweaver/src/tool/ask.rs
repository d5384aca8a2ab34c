//! What a tool asks for mid-call: a value from the user ([`Elicitation`], answered with an
//! [`ElicitAnswer`]) and a completion from a model ([`Sampling`], answered with
//! [`Sampled`]). Whoever runs the call answers, through its
//! [`CallChannel`](super::CallChannel): over MCP the client does (elicitation in form
//! mode, sampling); in an agent run the agent's
//! [`ElicitationHandler`](super::ElicitationHandler) and its model do.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A question for the user: what the tool needs and why, and the JSON schema of the
/// answer (an object of primitive properties, as MCP's form elicitation takes).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Elicitation {
    /// What the tool needs, for the user to read.
    pub message: String,
    /// The schema of the answer.
    pub schema: Value,
}

/// How the user answered an [`Elicitation`].
///
/// ```
/// use serde_json::json;
/// use starweaver::tool::ElicitAnswer;
///
/// let answer: ElicitAnswer = serde_json::from_value(json!({"action": "accept", "content": {"env": "prod"}})).unwrap();
/// assert_eq!(answer, ElicitAnswer::Accept { content: json!({"env": "prod"}).as_object().unwrap().clone() });
/// assert_eq!(serde_json::to_value(ElicitAnswer::Decline).unwrap(), json!({"action": "decline"}));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "lowercase")]
pub enum ElicitAnswer {
    /// The user gave a value.
    Accept {
        /// The value, as the schema asked.
        content: Map<String, Value>,
    },
    /// The user said no; the tool goes on without it.
    Decline,
    /// The user dismissed the question.
    Cancel,
}

/// A question a call asked in an agent run that had nobody to ask, and the answer a
/// resume gave: a call that waited for answers is invoked again with them, and each
/// question it asks again, in the same order, gets its answer without asking.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Answered {
    /// What the call asked.
    pub question: Elicitation,
    /// What the user answered.
    pub answer: ElicitAnswer,
}

/// The answers one attempt of a re-invoked call replays, and how many questions the
/// attempt has asked so far.
#[derive(Debug)]
pub(crate) struct Replies {
    answered: Arc<[Answered]>,
    asked: AtomicUsize,
}

impl Replies {
    pub(crate) fn new(answered: Arc<[Answered]>) -> Self {
        Self { answered, asked: AtomicUsize::new(0) }
    }

    /// The position of the question being asked now among the attempt's questions, and
    /// its answer if the same question was answered there before. A question that differs
    /// from the one answered at its position is asked anew: the tool changed its mind,
    /// and an answer given to another question must not reach it.
    pub(crate) fn ask(&self, question: &Elicitation) -> (usize, Option<ElicitAnswer>) {
        let asked = self.asked.fetch_add(1, Ordering::Relaxed);
        let answer = self.answered.get(asked).filter(|a| a.question == *question).map(|a| a.answer.clone());
        (asked, answer)
    }
}

/// Who said a [`SamplingMessage`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SamplingRole {
    /// The user.
    User,
    /// The model.
    Assistant,
}

/// One message of a [`Sampling`] conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SamplingMessage {
    /// Who says it.
    pub role: SamplingRole,
    /// What is said.
    pub text: String,
}

/// A completion a tool asks a model for.
///
/// ```
/// use starweaver::tool::Sampling;
///
/// let ask = Sampling::prompt("Summarise: the build is green.", 100).with_system_prompt("Be brief.");
/// assert_eq!(ask.messages.len(), 1);
/// assert_eq!(ask.max_tokens, 100);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sampling {
    /// The conversation so far, ending with what the model is to answer.
    pub messages: Vec<SamplingMessage>,
    /// The most tokens the answer may take.
    pub max_tokens: u32,
    /// Instructions for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// Sampling temperature, when the tool cares.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
}

impl Sampling {
    /// One user message, answered in at most `max_tokens` tokens.
    pub fn prompt(text: impl Into<String>, max_tokens: u32) -> Self {
        let messages = vec![SamplingMessage { role: SamplingRole::User, text: text.into() }];
        Self { messages, max_tokens, system_prompt: None, temperature: None }
    }

    /// With instructions for the model.
    #[must_use]
    pub fn with_system_prompt(mut self, system_prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(system_prompt.into());
        self
    }
}

/// A model's answer to a [`Sampling`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sampled {
    /// What the model said.
    pub text: String,
    /// The model that answered, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Why the answer ended, when known (MCP's `endTurn`, `maxTokens`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
}
