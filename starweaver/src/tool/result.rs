//! `ToolResult`: a tool's value with its separate model, application, user and debug surfaces.

use serde::Serialize;
use serde_json::{Map, Value};

use super::error::ToolError;
use crate::JsonMap;
use crate::content::Part;

/// A successful tool call, layered by audience.
///
/// `model_content` (else `value`) is what the model reads next; `metadata` is public
/// tool-return metadata; `app_value`, `user_content` and `private_metadata` stay on the host.
///
/// ```
/// use serde_json::json;
/// use starweaver::ToolResult;
///
/// let result = ToolResult::new(json!({"raw": "application record"}))
///     .with_model_content(json!({"summary": "release is ready"}))
///     .with_private_metadata(json!({"trace_id": "host-only"}));
/// assert_eq!(result.model_facing_content(), &json!({"summary": "release is ready"}));
/// ```
// The optional surfaces are boxed: most results set none of them, and a result moves
// through every call's hooks and futures, so its size is copied many times a call.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolResult {
    /// The tool's own value.
    pub value: Value,
    /// What the model sees instead of `value`, when set.
    pub model_content: Option<Box<Value>>,
    /// For application code; host-only.
    pub app_value: Option<Box<Value>>,
    /// For the user interface; host-only.
    pub user_content: Option<Box<Value>>,
    /// Public tool-return metadata (model-facing).
    pub metadata: JsonMap,
    /// Debugging data; host-only, never in a model request.
    pub private_metadata: Option<Box<Value>>,
}

impl ToolResult {
    /// A result whose value the model sees as is.
    pub fn new(value: Value) -> Self {
        Self { value, ..Self::default() }
    }

    /// Shows the model this instead of the value.
    #[must_use]
    pub fn with_model_content(mut self, content: Value) -> Self {
        self.model_content = Some(Box::new(content));
        self
    }

    /// Shows the model these content parts (text, images, audio, documents, resources)
    /// instead of the value.
    ///
    /// ```
    /// use serde_json::json;
    /// use starweaver::ToolResult;
    /// use starweaver::content::Image;
    ///
    /// let result = ToolResult::new(json!({"id": 7})).with_parts([Image::url("https://example.com/7.png").into()]);
    /// assert_eq!(result.model_facing_content(), &json!([{"kind": "image", "url": "https://example.com/7.png"}]));
    /// ```
    #[must_use]
    pub fn with_parts(self, parts: impl IntoIterator<Item = Part>) -> Self {
        self.with_model_content(parts_json(parts))
    }

    /// Attaches an application value.
    #[must_use]
    pub fn with_app_value(mut self, value: Value) -> Self {
        self.app_value = Some(Box::new(value));
        self
    }

    /// Attaches user-interface content.
    #[must_use]
    pub fn with_user_content(mut self, content: Value) -> Self {
        self.user_content = Some(Box::new(content));
        self
    }

    /// Attaches public metadata.
    #[must_use]
    pub fn with_metadata(mut self, metadata: Map<String, Value>) -> Self {
        self.metadata = metadata.into();
        self
    }

    /// Attaches host-only debugging data.
    #[must_use]
    pub fn with_private_metadata(mut self, value: Value) -> Self {
        self.private_metadata = Some(Box::new(value));
        self
    }

    /// What the model will read: `model_content` if set, else `value`.
    pub fn model_facing_content(&self) -> &Value {
        self.model_content.as_deref().unwrap_or(&self.value)
    }
}

/// Content parts as the model's content: the parts are also the tool's value.
impl From<Vec<Part>> for ToolResult {
    fn from(parts: Vec<Part>) -> Self {
        Self::new(parts_json(parts))
    }
}

fn parts_json(parts: impl IntoIterator<Item = Part>) -> Value {
    Value::Array(parts.into_iter().map(|part| part.to_json()).collect())
}

/// What a tool function may return: a [`ToolResult`] as it is, or any `Serialize` value
/// (content parts among them: a [`Part`], an [`Image`](crate::content::Image), a `Vec<Part>`).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool's return value",
    note = "return a `ToolResult`, or any type that implements `serde::Serialize`"
)]
pub trait IntoToolResult {
    /// Converts the value; a value that cannot become JSON is an `Execution` error.
    ///
    /// # Errors
    /// When serialisation to JSON fails.
    fn into_tool_result(self) -> Result<ToolResult, ToolError>;
}

impl IntoToolResult for ToolResult {
    fn into_tool_result(self) -> Result<ToolResult, ToolError> {
        Ok(self)
    }
}

impl<T: Serialize> IntoToolResult for T {
    fn into_tool_result(self) -> Result<ToolResult, ToolError> {
        serde_json::to_value(self).map(ToolResult::new).map_err(|err| {
            ToolError::execution(format!("the tool's return value is not JSON-serialisable: {err}")).not_retryable()
        })
    }
}
