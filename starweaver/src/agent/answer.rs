//! Who answers what a run's tools ask mid-call: the agent's elicitation handler asks the
//! user, and the agent's own model answers sampling.

use std::sync::Arc;

use futures::future::BoxFuture;

use crate::message::{History, Message, RequestPart, ResponsePart};
use crate::model::{Model, ModelRequest};
use crate::tool::{
    CallChannel, ElicitAnswer, Elicitation, ElicitationHandler, LogMessage, Progress, Sampled, Sampling, SamplingRole,
    ToolContext, ToolError, ToolErrorKind,
};

/// The agent's answers: its elicitation handler, if it has one, and its model.
pub(crate) struct Answerer {
    pub model: Arc<dyn Model>,
    pub elicitation: Option<Arc<dyn ElicitationHandler>>,
}

impl CallChannel for Answerer {
    fn progress(&self, _: &ToolContext, _: &Progress) {}

    fn log(&self, _: &ToolContext, _: &LogMessage) {}

    fn elicit<'a>(
        &'a self,
        call: &'a ToolContext,
        request: &'a Elicitation,
    ) -> BoxFuture<'a, Result<ElicitAnswer, ToolError>> {
        match &self.elicitation {
            Some(handler) => handler.elicit(call, request),
            // Nobody to ask now: the run waits for the answer (`ToolContext::elicit` says
            // which of the call's questions it is).
            None => Box::pin(std::future::ready(Err(ToolError::new(
                ToolErrorKind::ElicitationRequired,
                request.message.clone(),
            )))),
        }
    }

    /// The agent's model, asked the conversation as it is, with no tools; the answer's
    /// text is the completion.
    fn sample<'a>(&'a self, call: &'a ToolContext, request: &'a Sampling) -> BoxFuture<'a, Result<Sampled, ToolError>> {
        Box::pin(async move {
            let mut history = History::default();
            if let Some(system) = &request.system_prompt {
                history.push(Message::Request { parts: vec![RequestPart::SystemPrompt { text: system.clone() }] });
            }
            for message in &request.messages {
                history.push(match message.role {
                    SamplingRole::User => {
                        Message::Request { parts: vec![RequestPart::UserPrompt { text: message.text.clone() }] }
                    }
                    SamplingRole::Assistant => {
                        Message::Response { parts: vec![ResponsePart::Text { text: message.text.clone() }] }
                    }
                });
            }
            let asked = ModelRequest {
                messages: history.messages(),
                tools: &[],
                deferred: &[],
                output: None,
                toolset_instructions: &[],
                run_id: call.run_id(),
                step: 0,
                deltas: None,
            };
            let response = self.model.request(asked).await.map_err(|error| {
                ToolError::execution(format!(
                    "tool `{}` asked the model for a completion, which failed: {error}",
                    call.tool_name()
                ))
            })?;
            let finish_reason = response.finish_reason;
            Ok(Sampled {
                text: Message::Response { parts: response.parts }.text().unwrap_or_default(),
                model: response.model_name,
                stop_reason: finish_reason.map(|reason| reason.as_str().to_owned()),
            })
        })
    }
}
