//! The HTTP client of an OAuth-protected server: each request carries the current token,
//! and the server's `401` or `403` `insufficient_scope` answer starts an authorization
//! (`flow.rs`), after which the request is sent again, at most [`MAX_AUTHORIZATIONS`]
//! times. The rmcp session above never sees the refusals, whichever request met them
//! (the handshake, a listing, a call, the event stream).

use std::collections::HashMap;
use std::sync::Arc;

use futures::stream::BoxStream;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::auth::AuthError;
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse, StreamableHttpResponseLimits,
};
use sse_stream::Sse;

use super::flow::Authorizer;
use super::oauth::MAX_AUTHORIZATIONS;

type Failure = StreamableHttpError<reqwest::Error>;

/// reqwest, with the server's tokens.
#[derive(Clone)]
pub(crate) struct AuthorizedHttp {
    http: reqwest::Client,
    authorizer: Arc<Authorizer>,
}

impl AuthorizedHttp {
    pub(crate) fn new(authorizer: Arc<Authorizer>) -> Result<Self, String> {
        let http = reqwest::Client::builder()
            // As rmcp's own client: no idle pool (stalls on Linux's delayed ACK), and only
            // same-origin 307/308 redirects, which keep the body and send the token to the
            // server it was issued for alone.
            .pool_max_idle_per_host(0)
            .redirect(reqwest::redirect::Policy::custom(|attempt| {
                let same_origin = attempt.previous().first().is_some_and(|first| {
                    first.scheme() == attempt.url().scheme()
                        && first.host_str() == attempt.url().host_str()
                        && first.port_or_known_default() == attempt.url().port_or_known_default()
                });
                let keeps_body = matches!(attempt.status().as_u16(), 307 | 308);
                if same_origin && keeps_body && attempt.previous().len() <= 10 {
                    attempt.follow()
                } else {
                    attempt.stop()
                }
            }))
            .build()
            .map_err(|e| format!("could not build its HTTP client: {e}"))?;
        Ok(Self { http, authorizer })
    }

    /// Sends with the current token; on a refusal, authorizes and sends again.
    async fn authorized<T, F, Fut>(&self, send: F) -> Result<T, Failure>
    where
        F: Fn(reqwest::Client, Option<String>) -> Fut,
        Fut: Future<Output = Result<T, Failure>>,
    {
        let mut authorizations = 0;
        loop {
            let token = self.authorizer.token().await.map_err(refused)?;
            let outcome = send(self.http.clone(), token.clone()).await;
            if authorizations == MAX_AUTHORIZATIONS {
                return outcome;
            }
            authorizations += 1;
            match outcome {
                Err(StreamableHttpError::AuthRequired(challenge)) => self
                    .authorizer
                    .unauthorized(&challenge.www_authenticate_header, token.as_deref())
                    .await
                    .map_err(refused)?,
                Err(StreamableHttpError::InsufficientScope(challenge)) => self
                    .authorizer
                    .insufficient_scope(&challenge.www_authenticate_header, token.as_deref())
                    .await
                    .map_err(refused)?,
                other => return other,
            }
        }
    }
}

impl AuthorizedHttp {
    /// Opens the event stream, with reqwest's cap on an event's size when rmcp gives one.
    async fn stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: Option<usize>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Failure> {
        self.authorized(|http, token| {
            let (uri, session_id, last, headers) =
                (uri.clone(), session_id.clone(), last_event_id.clone(), custom_headers.clone());
            async move {
                match max_sse_event_size {
                    Some(max) => {
                        http.get_stream_with_max_sse_event_size(uri, session_id, last, token, headers, max).await
                    }
                    None => http.get_stream(uri, session_id, last, token, headers).await,
                }
            }
        })
        .await
    }
}

/// An authorization that failed, as the transport's error (the message names the server
/// and the step).
fn refused(message: String) -> Failure {
    StreamableHttpError::Auth(AuthError::AuthorizationFailed(message))
}

impl StreamableHttpClient for AuthorizedHttp {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, Failure> {
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            None,
            custom_headers,
            StreamableHttpResponseLimits::default(),
        )
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, Failure> {
        let mut limits = StreamableHttpResponseLimits::default();
        limits.max_sse_event_size = max_sse_event_size;
        self.post_message_with_response_limits(uri, message, session_id, None, custom_headers, limits).await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, Failure> {
        self.authorized(|http, token| {
            let (uri, message, session_id, headers) = (uri.clone(), message.clone(), session_id.clone(), custom_headers.clone());
            async move { http.post_message_with_response_limits(uri, message, session_id, token, headers, limits).await }
        })
        .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), Failure> {
        self.authorized(|http, token| {
            let (uri, session_id, headers) = (uri.clone(), session_id.clone(), custom_headers.clone());
            async move { http.delete_session(uri, session_id, token, headers).await }
        })
        .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Failure> {
        self.stream(uri, session_id, last_event_id, custom_headers, None).await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Failure> {
        self.stream(uri, session_id, last_event_id, custom_headers, Some(max_sse_event_size)).await
    }
}
