//! Prompts served to MCP clients: named message templates with string arguments, which a
//! client lists (`prompts/list`) and fills (`prompts/get`), typically as a user's slash
//! command. A prompt's messages hold content parts, sent as the MCP content blocks of
//! their kinds (the mapping tools' results use).

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use rmcp::model::{Prompt as WirePrompt, PromptArgument as WireArgument, PromptMessage as WireMessage};

use super::completion::{Completers, CompletionRequest};
use crate::content::Part;
use crate::tool::ToolError;

/// Who says a prompt's message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The user.
    User,
    /// The assistant (the model).
    Assistant,
}

/// One message of a filled prompt: who says it, and one content part.
///
/// ```
/// use starweaver::content::Text;
/// use starweaver::mcp::{PromptMessage, Role};
///
/// let message = PromptMessage::user(Text::new("Review this code"));
/// assert_eq!(message.role, Role::User);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptMessage {
    /// Who says it.
    pub role: Role,
    /// What it says: text, an image, audio, a resource link or an embedded resource.
    pub content: Part,
}

impl PromptMessage {
    /// A message of `role`.
    pub fn new(role: Role, content: impl Into<Part>) -> Self {
        Self { role, content: content.into() }
    }

    /// A message from the user.
    pub fn user(content: impl Into<Part>) -> Self {
        Self::new(Role::User, content)
    }

    /// A message from the assistant.
    pub fn assistant(content: impl Into<Part>) -> Self {
        Self::new(Role::Assistant, content)
    }
}

/// An argument a prompt takes: a string the client asks its user for.
///
/// ```
/// use starweaver::mcp::PromptArgument;
///
/// let language = PromptArgument::optional("language").description("The code's language");
/// assert_eq!(language.name(), "language");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptArgument {
    name: String,
    description: Option<String>,
    required: bool,
}

impl PromptArgument {
    /// An argument every `prompts/get` must give.
    pub fn required(name: impl Into<String>) -> Self {
        Self { name: name.into(), description: None, required: true }
    }

    /// An argument a `prompts/get` may leave out.
    pub fn optional(name: impl Into<String>) -> Self {
        Self { name: name.into(), description: None, required: false }
    }

    /// What it is, for the user filling it in.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// What a prompt is asked: the arguments the client gave, all of them strings, every
/// required one present and none the prompt lacks (both checked before it is called).
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct PromptRequest {
    /// The arguments by name.
    pub arguments: HashMap<String, String>,
}

impl PromptRequest {
    /// An argument's value, if given.
    pub fn argument(&self, name: &str) -> Option<&str> {
        self.arguments.get(name).map(String::as_str)
    }
}

type Getter = Arc<dyn Fn(PromptRequest) -> Filled + Send + Sync>;

/// A prompt served by [`McpServiceBuilder::prompt`](super::McpServiceBuilder::prompt):
/// its name, arguments and the function that fills it. A `prompts/get` missing a required
/// argument, or naming one the prompt lacks, is answered with invalid params naming it,
/// without calling the function; a function that fails answers with a JSON-RPC error of
/// its message ([`ToolError::invalid_arguments`] as invalid params, anything else as an
/// internal error).
///
/// ```
/// use starweaver::content::Text;
/// use starweaver::mcp::{McpPrompt, PromptArgument, PromptMessage};
/// use starweaver::ToolError;
///
/// let review = McpPrompt::new("review", |request| async move {
///     let code = request.argument("code").unwrap_or_default();
///     Ok::<_, ToolError>(vec![PromptMessage::user(Text::new(format!("Review this code:\n{code}")))])
/// })
/// .description("Asks for a code review")
/// .argument(PromptArgument::required("code").description("The code to review"))
/// .argument(PromptArgument::optional("language"))
/// .complete("language", |typed| async move {
///     Ok(["python", "rust"].into_iter().filter(|l| l.starts_with(&typed.value)).map(String::from).collect())
/// });
/// assert_eq!(review.name(), "review");
/// ```
#[derive(Clone)]
pub struct McpPrompt {
    name: String,
    title: Option<String>,
    description: Option<String>,
    arguments: Vec<PromptArgument>,
    get: Getter,
    pub(crate) completers: Completers,
}

impl McpPrompt {
    /// A prompt named `name`, filled by `get`.
    pub fn new<F, Fut>(name: impl Into<String>, get: F) -> Self
    where
        F: Fn(PromptRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<PromptMessage>, ToolError>> + Send + 'static,
    {
        Self {
            name: name.into(),
            title: None,
            description: None,
            arguments: Vec::new(),
            get: Arc::new(move |request| get(request).boxed()),
            completers: Completers::default(),
        }
    }

    /// A human-readable title for it.
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// What it is for.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Adds an argument.
    #[must_use]
    pub fn argument(mut self, argument: PromptArgument) -> Self {
        self.arguments.push(argument);
        self
    }

    /// Completes the argument `argument`: `complete` gives the values that fit what the
    /// user has typed, best first (MCP sends the first 100). An argument the prompt does
    /// not have is an error at build.
    #[must_use]
    pub fn complete<F, Fut>(mut self, argument: impl Into<String>, complete: F) -> Self
    where
        F: Fn(CompletionRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<String>, ToolError>> + Send + 'static,
    {
        self.completers.insert(argument, complete);
        self
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its description, if any.
    pub(crate) fn about(&self) -> Option<&str> {
        self.description.as_deref()
    }

    /// Checks `arguments` against the declared ones; then what fills the prompt (called
    /// where the service runs its work).
    ///
    /// # Errors
    /// A required argument missing, or one the prompt does not take; the message names it.
    pub(crate) fn get(
        &self,
        arguments: HashMap<String, String>,
    ) -> Result<impl FnOnce() -> Filled + Send + 'static, String> {
        if let Some(missing) = self.arguments.iter().find(|a| a.required && !arguments.contains_key(&a.name)) {
            return Err(format!("prompt `{}` needs the argument `{}`", self.name, missing.name));
        }
        if let Some(unknown) = arguments.keys().find(|k| !self.arguments.iter().any(|a| &a.name == *k)) {
            let known: Vec<String> = self.arguments.iter().map(|a| format!("`{}`", a.name)).collect();
            let known = if known.is_empty() { "none".to_owned() } else { known.join(", ") };
            return Err(format!("prompt `{}` has no argument `{unknown}` (its arguments: {known})", self.name));
        }
        let get = self.get.clone();
        Ok(move || get(PromptRequest { arguments }))
    }
}

/// A prompt being filled.
pub(crate) type Filled = BoxFuture<'static, Result<Vec<PromptMessage>, ToolError>>;

/// The served prompts, checked, by name.
#[derive(Clone, Default)]
pub(crate) struct Prompts {
    by_name: HashMap<String, McpPrompt>,
    listed: Arc<[WirePrompt]>,
}

impl Prompts {
    /// Checks and indexes `prompts`.
    ///
    /// # Errors
    /// Two prompts of one name, two arguments of one name, or a completer for an argument
    /// the prompt lacks.
    pub(crate) fn new(prompts: Vec<McpPrompt>) -> crate::Result<Self> {
        let listed = prompts.iter().map(wire_prompt).collect();
        let mut by_name = HashMap::new();
        for prompt in prompts {
            let invalid =
                |message: String| crate::Error::InvalidMcpItem { what: format!("prompt `{}`", prompt.name), message };
            let names: Vec<&str> = prompt.arguments.iter().map(PromptArgument::name).collect();
            let mut seen = std::collections::HashSet::new();
            if let Some(twice) = names.iter().find(|name| !seen.insert(**name)) {
                return Err(invalid(format!("the argument `{twice}` is declared twice")));
            }
            if let Some(unknown) = prompt.completers.names().find(|n| !names.contains(n)) {
                return Err(invalid(format!(
                    "a completer is given for `{unknown}`, which is not one of its arguments"
                )));
            }
            if by_name.contains_key(&prompt.name) {
                return Err(invalid("two prompts have this name".to_owned()));
            }
            by_name.insert(prompt.name.clone(), prompt);
        }
        Ok(Self { by_name, listed })
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    /// `prompts/list`: the prompts in the order given.
    pub(crate) fn listed(&self) -> Vec<WirePrompt> {
        self.listed.to_vec()
    }

    pub(crate) fn get(&self, name: &str) -> Option<&McpPrompt> {
        self.by_name.get(name)
    }
}

fn wire_prompt(prompt: &McpPrompt) -> WirePrompt {
    let arguments = prompt.arguments.iter().map(|argument| {
        let mut wire = WireArgument::new(argument.name.clone()).with_required(argument.required);
        wire.description.clone_from(&argument.description);
        wire
    });
    let arguments = (!prompt.arguments.is_empty()).then(|| arguments.collect());
    let mut wire = WirePrompt::new(prompt.name.clone(), prompt.description.clone(), arguments);
    wire.title.clone_from(&prompt.title);
    wire
}

/// A message as MCP's, its part as the content block of its kind.
pub(crate) fn wire_message(message: PromptMessage) -> WireMessage {
    let role = match message.role {
        Role::User => rmcp::model::Role::User,
        Role::Assistant => rmcp::model::Role::Assistant,
    };
    WireMessage::new(role, super::content::to_block(message.content))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::content::Text;

    fn echo() -> McpPrompt {
        McpPrompt::new("echo", |request| async move {
            Ok(vec![PromptMessage::user(Text::new(request.argument("text").unwrap_or_default()))])
        })
    }

    #[test]
    fn missing_and_unknown_arguments_are_named_before_the_prompt_runs() {
        let prompt = echo().argument(PromptArgument::required("text")).argument(PromptArgument::optional("tone"));
        let args = |pairs: &[(&str, &str)]| pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        assert_eq!(prompt.get(args(&[])).err().unwrap(), "prompt `echo` needs the argument `text`");
        assert_eq!(
            prompt.get(args(&[("text", "hi"), ("mood", "x")])).err().unwrap(),
            "prompt `echo` has no argument `mood` (its arguments: `text`, `tone`)"
        );
        let messages = prompt.get(args(&[("text", "hi")])).unwrap()().now_or_never().unwrap().unwrap();
        assert_eq!(messages, vec![PromptMessage::user(Text::new("hi"))]);
    }

    #[test]
    fn prompts_list_with_their_arguments_and_bad_ones_are_named_at_build() {
        let prompts = Prompts::new(vec![
            echo().description("Echoes").argument(PromptArgument::required("text").description("What to say")),
        ])
        .unwrap();
        assert_eq!(
            serde_json::to_value(prompts.listed()).unwrap(),
            serde_json::json!([{"name": "echo", "description": "Echoes", "arguments": [{"name": "text", "description": "What to say", "required": true}]}])
        );
        let error = |prompts| Prompts::new(prompts).err().unwrap().to_string();
        assert_eq!(error(vec![echo(), echo()]), "invalid MCP prompt `echo`: two prompts have this name");
        assert_eq!(
            error(vec![echo().complete("text", |_| async { Ok(Vec::new()) })]),
            "invalid MCP prompt `echo`: a completer is given for `text`, which is not one of its arguments"
        );
        let twice = echo().argument(PromptArgument::required("a")).argument(PromptArgument::optional("a"));
        assert_eq!(error(vec![twice]), "invalid MCP prompt `echo`: the argument `a` is declared twice");
    }
}
