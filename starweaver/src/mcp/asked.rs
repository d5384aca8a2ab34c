//! What our client answers when an MCP server, during one of our calls, asks for the
//! user's input (elicitation) or for a completion (sampling). The request goes to the call
//! it belongs to and is answered on that call's own task: by the server's elicitation
//! handler if the application gave one, else by whoever runs the call (the agent's
//! elicitation handler, or a pending elicitation of the run; the agent's model).
//! Sampling is deprecated by SEP-2577, which servers still use, hence the allow.
#![allow(deprecated)]

use std::sync::{Arc, Mutex};

use rmcp::ErrorData;
use rmcp::handler::client::ClientHandler;
use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, ElicitationAction, ElicitationCapability, FormElicitationCapability, Role, SamplingCapability,
    SamplingMessage,
};
use rmcp::service::{RequestContext, RoleClient};
use serde_json::{Map, Value};
use tokio::sync::{mpsc, oneshot};

use super::notify::{Asked, Heard, InFlight, alongside};
use crate::tool::{
    ElicitAnswer, Elicitation, ElicitationHandler, Sampling, SamplingHandler, SamplingMessage as Said, SamplingRole,
    ToolContext, ToolError, ToolErrorKind,
};

/// Our client as rmcp runs it: it says who it is and what it can answer, and hands each
/// question to its call.
pub(super) struct Client {
    info: ClientConfig,
    calls: Arc<InFlight>,
}

impl Client {
    /// A client offering `info`'s name and revision, answering elicitation (form) and
    /// sampling for the calls in `calls`.
    pub(super) fn new(mut info: ClientConfig, calls: Arc<InFlight>) -> Self {
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation = Some(ElicitationCapability::new().with_form(FormElicitationCapability::new()));
        capabilities.sampling = Some(SamplingCapability::default());
        info.capabilities = capabilities;
        Self { info, calls }
    }

    /// Hands `asked` to its call and waits for the answer.
    async fn ask<T>(&self, asked: impl FnOnce(oneshot::Sender<Result<T, ToolError>>) -> Asked) -> Result<T, ErrorData> {
        let (reply, answer) = oneshot::channel();
        self.calls.ask(asked(reply)).map_err(|why| ErrorData::internal_error(why, None))?;
        match answer.await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(error)) => Err(ErrorData::internal_error(error.message().to_owned(), None)),
            Err(_) => Err(ErrorData::internal_error("the call ended before it could answer", None)),
        }
    }
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        self.info.clone()
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let ElicitRequestParams::FormElicitationParams { message, requested_schema, .. } = request else {
            return Err(ErrorData::invalid_params("this client answers form elicitation only, not URL mode", None));
        };
        let schema = serde_json::to_value(&requested_schema)
            .map_err(|error| ErrorData::invalid_params(format!("the requested schema: {error}"), None))?;
        let question = Elicitation { message, schema };
        let schema = question.schema.clone();
        let answer = self.ask(|reply| Asked::Elicit(question, reply)).await?;
        let (action, content) = match answer {
            ElicitAnswer::Accept { content } => (ElicitationAction::Accept, Some(with_defaults(&schema, content))),
            ElicitAnswer::Decline => (ElicitationAction::Decline, None),
            ElicitAnswer::Cancel => (ElicitationAction::Cancel, None),
        };
        let mut result = ElicitResult::new(action);
        result.content = content.map(Value::Object);
        Ok(result)
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let request = sampling_of(params).map_err(|why| ErrorData::invalid_params(why, None))?;
        let sampled = self.ask(|reply| Asked::Sample(request, reply)).await?;
        let mut result =
            CreateMessageResult::new(SamplingMessage::assistant_text(sampled.text), sampled.model.unwrap_or_default());
        result.stop_reason = sampled.stop_reason;
        Ok(result)
    }
}

/// An accepted answer with the schema's defaults for what it leaves out (SEP-1034): the
/// user accepted them by not changing them.
fn with_defaults(schema: &Value, mut content: Map<String, Value>) -> Map<String, Value> {
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (name, property) in properties {
            if let Some(default) = property.get("default")
                && !content.contains_key(name)
            {
                content.insert(name.clone(), default.clone());
            }
        }
    }
    content
}

/// A server's sampling request as ours: its text messages, token limit, system prompt
/// and temperature.
fn sampling_of(params: CreateMessageRequestParams) -> Result<Sampling, String> {
    let messages = params
        .messages
        .iter()
        .map(|message| {
            let role = match message.role {
                Role::User => SamplingRole::User,
                Role::Assistant => SamplingRole::Assistant,
            };
            let texts: Option<Vec<&str>> =
                message.content.iter().map(|block| block.as_text().map(|t| t.text.as_str())).collect();
            match texts {
                Some(texts) => Ok(Said { role, text: texts.join("\n") }),
                None => Err("this client samples text messages only (no images, audio or tool use)".to_owned()),
            }
        })
        .collect::<Result<_, _>>()?;
    Ok(Sampling {
        messages,
        max_tokens: params.max_tokens,
        system_prompt: params.system_prompt,
        temperature: params.temperature.map(f64::from),
    })
}

/// Who answers for one call: the server's handlers, the call's context (its run), and
/// where a question that must wait for the run's resume is kept.
pub(super) struct Answering<'a> {
    pub tool: &'a str,
    pub ctx: Option<&'a ToolContext>,
    pub elicitation: Option<&'a dyn ElicitationHandler>,
    pub sampling: Option<&'a dyn SamplingHandler>,
    /// The first `elicitation_required` of the call: the call ends with it, whatever the
    /// server answers once told that the answer will come later.
    pub waiting: Mutex<Option<ToolError>>,
}

impl Answering<'_> {
    /// Answers `asked` on the call's task.
    pub(super) async fn answer(&self, asked: Asked) {
        match asked {
            Asked::Elicit(question, reply) => drop(reply.send(self.elicit(&question).await)),
            Asked::Sample(request, reply) => {
                let sampled = match (self.sampling, self.ctx) {
                    (Some(handler), ctx) => handler.sample(&self.context(ctx), &request).await,
                    (None, Some(ctx)) => ctx.sample(request).await,
                    (None, None) => Err(self.nobody("ask a model for a completion")),
                };
                drop(reply.send(sampled));
            }
        }
    }

    /// The call's context for a handler: the run's, or one of its own for a direct call.
    fn context(&self, ctx: Option<&ToolContext>) -> ToolContext {
        ctx.cloned().unwrap_or_else(|| ToolContext::detached(self.tool))
    }

    async fn elicit(&self, question: &Elicitation) -> Result<ElicitAnswer, ToolError> {
        let answer = match (self.elicitation, self.ctx) {
            (Some(handler), ctx) => handler.elicit(&self.context(ctx), question).await,
            (None, Some(ctx)) => ctx.elicit(question.message.clone(), question.schema.clone()).await,
            (None, None) => Err(self.nobody("ask the user for input")),
        };
        match answer {
            Err(waiting) if waiting.kind() == ToolErrorKind::ElicitationRequired => {
                let mut kept = self.waiting.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                kept.get_or_insert(waiting);
                Err(ToolError::execution("the user's answer comes when the run resumes; the tool will be called again"))
            }
            answer => answer,
        }
    }

    fn nobody(&self, what: &str) -> ToolError {
        ToolError::execution(format!(
            "MCP tool `{}` tried to {what} outside any run, and the server has no handler to answer",
            self.tool
        ))
    }
}

/// Runs `call` while what the server says of it is reported by the call's context (when
/// it has one) and what it asks is answered, on this task; then what is left, so every
/// report comes before the call's return.
pub(super) async fn reporting<T>(
    call: impl Future<Output = T>,
    heard: mpsc::UnboundedReceiver<Heard>,
    answering: &Answering<'_>,
) -> T {
    let handle = |heard: Heard| async move {
        match (heard, answering.ctx) {
            (Heard::Progress(progress), Some(ctx)) => ctx.send_progress(&progress),
            (Heard::Log(log), Some(ctx)) => ctx.send_log(&log),
            (Heard::Progress(_) | Heard::Log(_), None) => {}
            (Heard::Asked(asked), _) => answering.answer(asked).await,
        }
    };
    alongside(call, heard, handle).await
}
