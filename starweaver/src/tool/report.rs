//! What a tool reports while it works: progress and log messages, sent through its
//! [`ToolContext`](super::ToolContext) to whoever runs the call (its
//! [`CallChannel`](super::CallChannel)). In an agent run they become `tool_progress` and
//! `tool_log` events and span events of the call's trace; served over MCP they are the
//! client's `notifications/progress` and `notifications/message`; in a durable run's call
//! task they also ride the engine's heartbeats. The tool never knows which.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::error::ToolError;

/// How far a call has got: `progress` out of `total` (when known), with a message.
///
/// ```
/// use starweaver::tool::Progress;
///
/// let half = Progress::new(50.0, Some(100.0), Some("halfway")).unwrap();
/// assert_eq!(half.total, Some(100.0));
/// let err = Progress::new(f64::NAN, None, None).unwrap_err();
/// assert_eq!(err.message(), "progress `progress` must be a finite number, got NaN");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Progress {
    /// The progress so far; it should grow with each report, even when the total is unknown.
    pub progress: f64,
    /// What `progress` counts up to, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<f64>,
    /// What the call is doing now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl Progress {
    /// `progress` so far, out of `total` when known, with what the call is doing now.
    ///
    /// # Errors
    /// A `UserError` when `progress` or `total` is not a finite number (JSON has no NaN
    /// or infinity).
    pub fn new(progress: f64, total: Option<f64>, message: Option<&str>) -> Result<Self, ToolError> {
        Ok(Self {
            progress: finite("progress", progress)?,
            total: total.map(|total| finite("total", total)).transpose()?,
            message: message.map(str::to_owned),
        })
    }
}

fn finite(what: &str, value: f64) -> Result<f64, ToolError> {
    if value.is_finite() {
        Ok(value)
    } else {
        Err(ToolError::user_error(format!("progress `{what}` must be a finite number, got {value}")))
    }
}

/// A log message's severity: MCP's levels (RFC 5424's), least severe first.
///
/// ```
/// use starweaver::tool::LogLevel;
///
/// assert_eq!("warning".parse::<LogLevel>().unwrap(), LogLevel::Warning);
/// assert!(LogLevel::Error > LogLevel::Info);
/// assert!("loud".parse::<LogLevel>().unwrap_err().contains("debug, info, notice"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    /// Detail for debugging.
    Debug,
    /// What happens in the normal course.
    Info,
    /// Normal but significant.
    Notice,
    /// Something may be wrong.
    Warning,
    /// Something failed.
    Error,
    /// A component failed.
    Critical,
    /// Someone must act now.
    Alert,
    /// The system is unusable.
    Emergency,
}

impl LogLevel {
    /// Every level, least severe first.
    pub const ALL: [Self; 8] = [
        Self::Debug,
        Self::Info,
        Self::Notice,
        Self::Warning,
        Self::Error,
        Self::Critical,
        Self::Alert,
        Self::Emergency,
    ];

    /// The level's name, as MCP and the events spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Debug => "debug",
            Self::Info => "info",
            Self::Notice => "notice",
            Self::Warning => "warning",
            Self::Error => "error",
            Self::Critical => "critical",
            Self::Alert => "alert",
            Self::Emergency => "emergency",
        }
    }
}

impl std::str::FromStr for LogLevel {
    type Err = String;

    fn from_str(name: &str) -> Result<Self, String> {
        Self::ALL.into_iter().find(|level| level.as_str() == name).ok_or_else(|| {
            let names: Vec<&str> = Self::ALL.iter().map(|level| level.as_str()).collect();
            format!("unknown log level `{name}`; the levels are {}", names.join(", "))
        })
    }
}

impl std::fmt::Display for LogLevel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A message a tool logs while it works, with optional JSON data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogMessage {
    /// How severe it is.
    pub level: LogLevel,
    /// What happened.
    pub message: String,
    /// Details, as JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}
