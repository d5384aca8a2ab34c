//! [`UsageLimits`]: what one run may spend (model requests, tool calls, tokens), checked
//! by the machine before each model request and each call, so nothing past a limit starts.

use crate::model::Usage;
use crate::output::OutputRules;
use crate::result::RunError;

/// Bounds on what one run (from its start, or from a resume) may spend; `None` is no bound.
/// Checked before each model request and before each call starts: a run at a limit fails
/// with [`RunError::UsageLimitExceeded`] instead of starting what would pass it. Tokens are
/// known only once a request answered, so the request that crosses a token limit finishes,
/// and nothing after it starts.
///
/// ```
/// use starweaver::UsageLimits;
///
/// let limits = UsageLimits::new().requests(3).tool_calls(10).total_tokens(20_000);
/// assert_eq!(limits.requests, Some(3));
/// assert_eq!(limits.input_tokens, None);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct UsageLimits {
    /// Model requests.
    pub requests: Option<u64>,
    /// Tool calls started.
    pub tool_calls: Option<u64>,
    /// Tokens sent.
    pub input_tokens: Option<u64>,
    /// Tokens generated.
    pub output_tokens: Option<u64>,
    /// Tokens sent and generated.
    pub total_tokens: Option<u64>,
}

impl UsageLimits {
    /// No limits.
    pub fn new() -> Self {
        Self::default()
    }

    /// At most `n` model requests.
    #[must_use]
    pub fn requests(mut self, n: u64) -> Self {
        self.requests = Some(n);
        self
    }

    /// At most `n` tool calls started.
    #[must_use]
    pub fn tool_calls(mut self, n: u64) -> Self {
        self.tool_calls = Some(n);
        self
    }

    /// At most `n` input tokens.
    #[must_use]
    pub fn input_tokens(mut self, n: u64) -> Self {
        self.input_tokens = Some(n);
        self
    }

    /// At most `n` output tokens.
    #[must_use]
    pub fn output_tokens(mut self, n: u64) -> Self {
        self.output_tokens = Some(n);
        self
    }

    /// At most `n` tokens in all.
    #[must_use]
    pub fn total_tokens(mut self, n: u64) -> Self {
        self.total_tokens = Some(n);
        self
    }

    /// Why another model request may not start after `usage`: the requests limit is
    /// reached, or a token limit was passed by the answers so far.
    pub(crate) fn before_request(&self, usage: &Usage) -> Option<RunError> {
        let over = |limit: &'static str, max: Option<u64>, count: u64, reached: bool| {
            max.filter(|max| if reached { count >= *max } else { count > *max })
                .map(|max| RunError::UsageLimitExceeded { limit: limit.to_owned(), max, count })
        };
        over("requests", self.requests, usage.requests, true)
            .or_else(|| over("input_tokens", self.input_tokens, usage.input_tokens, false))
            .or_else(|| over("output_tokens", self.output_tokens, usage.output_tokens, false))
            .or_else(|| over("total_tokens", self.total_tokens, usage.input_tokens + usage.output_tokens, false))
    }

    /// Why another call may not start after `started` calls.
    pub(crate) fn before_call(&self, started: u64) -> Option<RunError> {
        self.tool_calls.filter(|max| started >= *max).map(|max| RunError::UsageLimitExceeded {
            limit: "tool_calls".to_owned(),
            max,
            count: started,
        })
    }
}

/// What one run may do before it must stop: its model requests without a final answer, and
/// its usage.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bounds {
    pub max_steps: u32,
    pub usage: UsageLimits,
    pub output: OutputRules,
}
