//! The HTTP side of every provider: one shared client (connections are reused across
//! models and runs), retries with exponential backoff and jitter that honour `Retry-After`,
//! and failures as named [`ModelError`]s that never carry a credential.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reqwest::header::HeaderMap;
use serde_json::Value;

use crate::model::{ModelError, ModelErrorKind};

/// Connect, read (between bytes) and total timeouts of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Timeouts {
    pub connect: Duration,
    pub read: Duration,
    pub total: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self { connect: Duration::from_secs(10), read: Duration::from_secs(120), total: Duration::from_secs(600) }
    }
}

/// The client for these timeouts: one per distinct (connect, read) pair, shared by every
/// model that uses them, so connections are pooled across models and runs.
pub(crate) fn client(timeouts: Timeouts) -> Result<reqwest::Client, ModelError> {
    static CLIENTS: OnceLock<Mutex<HashMap<(Duration, Duration), reqwest::Client>>> = OnceLock::new();
    let mut clients = CLIENTS.get_or_init(Mutex::default).lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(client) = clients.get(&(timeouts.connect, timeouts.read)) {
        return Ok(client.clone());
    }
    let client = reqwest::Client::builder()
        .connect_timeout(timeouts.connect)
        .read_timeout(timeouts.read)
        .user_agent(concat!("starweaver/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| ModelError::of(ModelErrorKind::Connection, format!("cannot build the HTTP client: {e}")))?;
    clients.insert((timeouts.connect, timeouts.read), client.clone());
    Ok(client)
}

/// A failed attempt, and whether another may succeed.
pub(crate) struct Failure {
    pub error: ModelError,
    pub retry: Retry,
}

/// Whether a failed attempt is worth repeating.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Retry {
    No,
    /// Yes, after the server's `Retry-After` when it sent one, else after the backoff.
    Yes(Option<Duration>),
}

impl Failure {
    pub(crate) fn fatal(error: ModelError) -> Self {
        Self { error, retry: Retry::No }
    }

    pub(crate) fn retryable(error: ModelError) -> Self {
        Self { error, retry: Retry::Yes(None) }
    }
}

/// The first retry waits about this long; each next one twice as long, up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
const MAX_BACKOFF: Duration = Duration::from_secs(8);
/// A server asking for longer than this is waited on no longer (the call would look hung).
const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

/// Runs `attempt` until it succeeds, fails for good, or has been retried `max_retries`
/// times; the last failure is the error.
pub(crate) async fn with_retries<T, F, Fut>(max_retries: u32, mut attempt: F) -> Result<T, ModelError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Failure>>,
{
    let mut retries = 0;
    loop {
        let failure = match attempt().await {
            Ok(value) => return Ok(value),
            Err(failure) => failure,
        };
        let Retry::Yes(after) = failure.retry else { return Err(failure.error) };
        if retries >= max_retries {
            return Err(failure.error);
        }
        tokio::time::sleep(delay(retries, after)).await;
        retries += 1;
    }
}

/// How long to wait before retry number `retry` (from 0): the server's wish when it said
/// one, else exponential backoff with jitter (75–100% of the step), so clients that failed
/// together do not retry together.
pub(crate) fn delay(retry: u32, retry_after: Option<Duration>) -> Duration {
    if let Some(after) = retry_after {
        return after.min(MAX_RETRY_AFTER);
    }
    let step = FIRST_BACKOFF.saturating_mul(1 << retry.min(16)).min(MAX_BACKOFF);
    step.mul_f64(0.75 + 0.25 * unit_random())
}

/// A number in [0, 1) that differs between calls and processes (jitter needs no more).
fn unit_random() -> f64 {
    static STATE: Mutex<u64> = Mutex::new(0);
    let mut state = STATE.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if *state == 0 {
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(1, |d| d.as_nanos());
        *state = (nanos as u64 ^ u64::from(std::process::id())) | 1;
    }
    // xorshift64
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    (*state >> 11) as f64 / (1u64 << 53) as f64
}

/// What the server asked for: `retry-after-ms`, or `retry-after` in seconds.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
    if let Some(ms) = header("retry-after-ms").and_then(|v| v.parse::<f64>().ok()).filter(|ms| *ms >= 0.0) {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    header("retry-after").and_then(|v| v.parse::<f64>().ok()).filter(|s| *s >= 0.0).map(Duration::from_secs_f64)
}

/// A provider's answer that is not a success, as a named error: retried when a later
/// attempt may succeed (408, 409, 429 unless the quota is spent, 5xx, or the server says
/// `x-should-retry: true`), never for 400, 401, 403, 404 or a spent quota.
pub(crate) fn status_failure(
    provider: &str,
    status: u16,
    headers: &HeaderMap,
    request_id_header: &str,
    body: &str,
    secrets: &[&str],
) -> Failure {
    let quota = status == 429 && is_quota(body);
    let kind = if quota { ModelErrorKind::QuotaExhausted } else { ModelErrorKind::Http };
    let message = match (status, quota) {
        (_, true) => "the account's quota or billing limit is exhausted".to_owned(),
        (401, _) => "the API key was refused".to_owned(),
        (403, _) => "the API key may not use this model or endpoint".to_owned(),
        (404, _) => "no such model or endpoint".to_owned(),
        (429, _) => "rate limited".to_owned(),
        (s, _) if s >= 500 => "the provider failed".to_owned(),
        _ => "the request was refused".to_owned(),
    };
    let mut error = ModelError::of(kind, message);
    error.provider = Some(provider.to_owned());
    error.status = Some(status);
    error.request_id = headers.get(request_id_header).and_then(|v| v.to_str().ok()).map(str::to_owned);
    error.body = Some(excerpt(body, secrets)).filter(|b| !b.is_empty());
    let should_retry = headers.get("x-should-retry").and_then(|v| v.to_str().ok());
    let retryable = match should_retry {
        Some("true") => true,
        Some("false") => false,
        _ => !quota && (matches!(status, 408 | 409 | 429) || status >= 500),
    };
    Failure { error, retry: if retryable { Retry::Yes(retry_after(headers)) } else { Retry::No } }
}

/// Whether a 429 body says the quota (not the rate) is exhausted, in any provider's words.
fn is_quota(body: &str) -> bool {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let error = parsed.as_ref().and_then(|b| b.get("error"));
    let field = |name: &str| error.and_then(|e| e.get(name)).and_then(Value::as_str).unwrap_or_default();
    ["insufficient_quota", "billing_hard_limit_reached"].contains(&field("code"))
        || field("type") == "insufficient_quota"
        || field("message").contains("exceeded your current quota")
}

/// A connection failure or timeout, retried.
pub(crate) fn transport_failure(provider: &str, error: &reqwest::Error, secrets: &[&str]) -> Failure {
    let kind = if error.is_timeout() { ModelErrorKind::Timeout } else { ModelErrorKind::Connection };
    // reqwest's message names the URL, which holds no key (keys travel in headers).
    let mut message = redact(&error.to_string(), secrets);
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&redact(&cause.to_string(), secrets));
        source = cause.source();
    }
    let mut error = ModelError::of(kind, message);
    error.provider = Some(provider.to_owned());
    Failure::retryable(error)
}

/// The start of a body, with any secret removed: enough to see what went wrong.
pub(crate) fn excerpt(body: &str, secrets: &[&str]) -> String {
    const LIMIT: usize = 500;
    let body = redact(body.trim(), secrets);
    match body.char_indices().nth(LIMIT) {
        Some((cut, _)) => format!("{}…", &body[..cut]),
        None => body,
    }
}

/// `text` with every secret (and any long piece of one a server might echo) replaced.
pub(crate) fn redact(text: &str, secrets: &[&str]) -> String {
    let mut text = text.to_owned();
    for secret in secrets.iter().filter(|s| s.len() >= 8) {
        // Servers echo keys abbreviated ("sk-abcd****wxyz"): any start of the key from
        // 8 characters on goes, longest first.
        let starts = secret.char_indices().map(|(i, _)| i).chain([secret.len()]).filter(|&end| end >= 8).rev();
        for end in starts {
            if let Some(head) = secret.get(..end) {
                text = text.replace(head, "[redacted]");
            }
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn retry_after_headers_are_honoured_and_capped() {
        let mut headers = HeaderMap::new();
        headers.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(2)));
        headers.insert("retry-after-ms", HeaderValue::from_static("150"));
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(150)), "the ms header wins");
        assert_eq!(delay(0, Some(Duration::from_secs(3600))), MAX_RETRY_AFTER);
    }

    #[test]
    fn backoff_doubles_with_jitter_up_to_its_cap() {
        for retry in 0..8 {
            let step = FIRST_BACKOFF.saturating_mul(1 << retry).min(MAX_BACKOFF);
            let wait = delay(retry, None);
            assert!(wait <= step && wait >= step.mul_f64(0.75), "retry {retry}: {wait:?} for {step:?}");
        }
    }

    #[test]
    fn which_statuses_are_retried() {
        let retried = |status: u16, body: &str| {
            matches!(status_failure("p", status, &HeaderMap::new(), "x-request-id", body, &[]).retry, Retry::Yes(_))
        };
        for status in [408, 409, 429, 500, 502, 503, 529] {
            assert!(retried(status, "{}"), "{status}");
        }
        for status in [400, 401, 403, 404, 422] {
            assert!(!retried(status, "{}"), "{status}");
        }
        assert!(!retried(429, r#"{"error": {"code": "insufficient_quota", "message": "x"}}"#));
        let mut headers = HeaderMap::new();
        headers.insert("x-should-retry", HeaderValue::from_static("false"));
        assert!(matches!(status_failure("p", 503, &headers, "x", "", &[]).retry, Retry::No));
    }

    #[test]
    fn secrets_never_survive_an_excerpt() {
        let key = "sk-canary-0123456789abcdef";
        let body = format!("Incorrect API key provided: {key}. Also sk-canary-01...cdef and sk-canar****cdef");
        let out = excerpt(&body, &[key]);
        assert!(!out.contains("canary") && !out.contains("sk-canar"), "{out}");
    }
}
