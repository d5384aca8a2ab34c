//! The HTTP side of every provider: each model's client (its runs reuse connections),
//! retries with exponential backoff and jitter that honour `Retry-After`, and failures as
//! named [`ModelError`]s that never carry a credential.

use std::fmt::Write as _;
use std::future::Future;
use std::sync::{Arc, Mutex};
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
        Self { connect: Duration::from_secs(10), read: Duration::from_mins(2), total: Duration::from_mins(10) }
    }
}

/// A model's HTTP client, built at its first request and shared by its clones, so its
/// runs reuse connections. It is the model's own, not the process's: a pooled connection
/// lives on the tokio runtime that opened it, and one shared pool handed connections whose
/// runtime had ended (another test's, another event loop's) to requests on the next one.
#[derive(Clone, Default)]
pub(crate) struct Client(Arc<Mutex<Option<Built>>>);

/// A client and the (connect, read) timeouts it was built for.
type Built = ((Duration, Duration), reqwest::Client);

impl Client {
    /// The client for these timeouts, built anew when the connect or read timeout changed.
    pub(crate) fn get(&self, timeouts: Timeouts) -> Result<reqwest::Client, ModelError> {
        let key = (timeouts.connect, timeouts.read);
        let mut built = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((_, client)) = built.as_ref().filter(|(built_for, _)| *built_for == key) {
            return Ok(client.clone());
        }
        let client = reqwest::Client::builder()
            .connect_timeout(timeouts.connect)
            .read_timeout(timeouts.read)
            .redirect(same_origin_redirects())
            .user_agent(concat!("starweaver/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ModelError::of(ModelErrorKind::Connection, format!("cannot build the HTTP client: {e}")))?;
        *built = Some((key, client.clone()));
        Ok(client)
    }
}

/// Redirects are followed within the origin the request was sent to, and never to another
/// one: a key header (`x-api-key`, `x-goog-api-key`, `api-key`) would go along, and
/// reqwest strips only the standard credential headers on a cross-host hop. A redirect to
/// another origin ends the request with that redirect, which [`status_failure`] names.
fn same_origin_redirects() -> reqwest::redirect::Policy {
    const MAX_REDIRECTS: usize = 10;
    reqwest::redirect::Policy::custom(|attempt| {
        let same_origin = attempt.previous().first().is_some_and(|first| first.origin() == attempt.url().origin());
        if !same_origin {
            attempt.stop()
        } else if attempt.previous().len() > MAX_REDIRECTS {
            attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
        } else {
            attempt.follow()
        }
    })
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
/// The longest a retry waits unless the model says otherwise (its `max_retry_wait`).
pub(crate) const DEFAULT_MAX_RETRY_WAIT: Duration = Duration::from_mins(1);

/// How often and how long failed attempts are retried.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// No wait between attempts is longer: a server asking for more is not retried, so no
    /// `Retry-After` can keep a request waiting past what its model allows.
    pub max_wait: Duration,
}

/// Runs `attempt` until it succeeds, fails for good, or has been retried as often as the
/// policy allows; the last failure is the error.
pub(crate) async fn with_retries<T, F, Fut>(policy: RetryPolicy, mut attempt: F) -> Result<T, ModelError>
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
        if retries >= policy.max_retries {
            return Err(failure.error);
        }
        if let Some(after) = after.filter(|after| *after > policy.max_wait) {
            let mut error = failure.error;
            write!(
                error.message,
                " (the server asked to retry after {:.3} s, longer than the {:.3} s this model waits)",
                after.as_secs_f64(),
                policy.max_wait.as_secs_f64()
            )
            .expect("writing to a String cannot fail");
            return Err(error);
        }
        tokio::time::sleep(delay(retries, after).min(policy.max_wait)).await;
        retries += 1;
    }
}

/// How long to wait before retry number `retry` (from 0): the server's wish when it said
/// one, else exponential backoff with jitter (75–100% of the step), so clients that failed
/// together do not retry together.
pub(crate) fn delay(retry: u32, retry_after: Option<Duration>) -> Duration {
    if let Some(after) = retry_after {
        return after;
    }
    let step = FIRST_BACKOFF.saturating_mul(1 << retry.min(16)).min(MAX_BACKOFF);
    step.mul_f64(0.75 + 0.25 * unit_random())
}

/// A number in [0, 1) that differs between calls and processes (jitter needs no more).
// The casts are the point: any 64 bits of the clock make a seed, and a 53-bit integer
// over 2^53 is an exact f64 in [0, 1).
#[allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]
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

/// What the server asked for: `retry-after-ms`, or `retry-after` in seconds. A value that
/// is not a finite, non-negative number of seconds a `Duration` holds (`inf`, `1e20`,
/// an HTTP date) is no wish at all: the backoff applies.
#[doc(hidden)]
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let seconds = |name: &str, scale: f64| {
        let value = headers.get(name)?.to_str().ok()?.trim().parse::<f64>().ok()?;
        Duration::try_from_secs_f64(value / scale).ok()
    };
    seconds("retry-after-ms", 1000.0).or_else(|| seconds("retry-after", 1.0))
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
) -> Failure {
    // A redirect that reached here left the request's origin (same-origin ones were
    // followed): never retried, whatever the server says.
    let redirect = (300..400).contains(&status);
    let quota = status == 429 && is_quota(body);
    let kind = if quota { ModelErrorKind::QuotaExhausted } else { ModelErrorKind::Http };
    let message = match (status, quota) {
        _ if redirect => {
            let to = headers.get(reqwest::header::LOCATION).and_then(|v| v.to_str().ok()).unwrap_or("?");
            format!(
                "the provider redirected the request to another origin (`{to}`); a key is never sent \
                 across origins: set the model's base URL to the new address if it is trusted"
            )
        }
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
    error.body = Some(excerpt(body)).filter(|b| !b.is_empty());
    let should_retry = headers.get("x-should-retry").and_then(|v| v.to_str().ok());
    let retryable = !redirect
        && match should_retry {
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
pub(crate) fn transport_failure(provider: &str, error: &reqwest::Error) -> Failure {
    let kind = if error.is_timeout() { ModelErrorKind::Timeout } else { ModelErrorKind::Connection };
    let mut message = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    let mut error = ModelError::of(kind, message);
    error.provider = Some(provider.to_owned());
    Failure::retryable(error)
}

/// The most of an error body that is read: enough for the excerpt and the quota check,
/// however much the server sends.
pub(crate) const ERROR_BODY_LIMIT: usize = 64 * 1024;

/// A body read to its end, or refused once it passes `limit` bytes, so no server can
/// grow our memory past what the model allows (`max_response_bytes`).
pub(crate) async fn read_body(mut response: reqwest::Response, limit: usize) -> Result<Vec<u8>, BodyError> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(BodyError::Transport)? {
        if body.len() + chunk.len() > limit {
            return Err(BodyError::TooLarge);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// Why a body could not be read.
pub(crate) enum BodyError {
    Transport(reqwest::Error),
    TooLarge,
}

/// The named error for a body or stream past `limit` bytes; never retried (the next
/// answer would be as large).
pub(crate) fn too_large(limit: usize) -> Failure {
    Failure::fatal(ModelError::of(
        ModelErrorKind::InvalidResponse,
        format!("the response is larger than the {limit} bytes this model reads (`max_response_bytes`)"),
    ))
}

/// The start of a body: enough to see what went wrong.
pub(crate) fn excerpt(body: &str) -> String {
    const LIMIT: usize = 500;
    let body = body.trim();
    match body.char_indices().nth(LIMIT) {
        Some((cut, _)) => format!("{}…", &body[..cut]),
        None => body.to_owned(),
    }
}

/// `error` with every secret removed from each field a server's answer can reach (the
/// message, the body excerpt, the request id): the one place a failure passes before it
/// leaves the request, so no echo of a key reaches an error, event, trace or log.
pub(crate) fn redact_error(mut error: ModelError, secrets: &[&str]) -> ModelError {
    if secrets.is_empty() {
        return error;
    }
    error.message = redact(&error.message, secrets);
    error.body = error.body.map(|body| redact(&body, secrets));
    error.request_id = error.request_id.map(|id| redact(&id, secrets));
    error
}

/// `text` with every secret (and any long piece of one a server might echo) replaced,
/// after JSON string escapes are undone (a server may echo `\u0073k-...` for `sk-...`).
pub(crate) fn redact(text: &str, secrets: &[&str]) -> String {
    let mut text = if text.contains('\\') { unescape(text) } else { text.to_owned() };
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

/// `text` with JSON's `\uXXXX` (surrogate pairs included) and `\/` escapes undone; every
/// other character, and any escape that is not whole, stays as it is.
fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let hex = |from: usize| rest.get(from..from + 4).and_then(|h| u32::from_str_radix(h, 16).ok());
        let (decoded, used) = match (rest.as_bytes().get(1), hex(2)) {
            (Some(b'/'), _) => (Some('/'), 2),
            (Some(b'u'), Some(high @ 0xD800..=0xDBFF)) if rest.get(6..8) == Some("\\u") => match hex(8) {
                Some(low @ 0xDC00..=0xDFFF) => (char::from_u32(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)), 12),
                _ => (None, 1),
            },
            (Some(b'u'), Some(code)) => (char::from_u32(code), 6),
            _ => (None, 1),
        };
        match decoded {
            Some(c) => out.push(c),
            None => out.push_str(&rest[..used]),
        }
        rest = &rest[used..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(name, value)| (reqwest::header::HeaderName::from_static(name), HeaderValue::from_static(value)))
            .collect()
    }

    #[test]
    fn retry_after_headers_are_honoured() {
        assert_eq!(retry_after(&headers(&[("retry-after", "2")])), Some(Duration::from_secs(2)));
        let both = headers(&[("retry-after", "2"), ("retry-after-ms", "150")]);
        assert_eq!(retry_after(&both), Some(Duration::from_millis(150)), "the ms header wins");
    }

    #[test]
    fn retry_after_values_no_duration_holds_are_no_wish() {
        for value in ["inf", "-inf", "NaN", "1e20", "-1", "Wed, 21 Oct 2015 07:28:00 GMT", "", "0x10"] {
            assert_eq!(retry_after(&headers(&[("retry-after", value)])), None, "retry-after: {value}");
        }
        for value in ["1e30", "inf", "-5"] {
            assert_eq!(retry_after(&headers(&[("retry-after-ms", value)])), None, "retry-after-ms: {value}");
        }
        assert_eq!(
            retry_after(&headers(&[("retry-after-ms", "1e30"), ("retry-after", "3")])),
            Some(Duration::from_secs(3)),
            "a bad ms header leaves the seconds one"
        );
    }

    #[test]
    fn backoff_doubles_with_jitter_up_to_its_cap() {
        for retry in 0..8 {
            let step = FIRST_BACKOFF.saturating_mul(1 << retry).min(MAX_BACKOFF);
            let wait = delay(retry, None);
            assert!(wait <= step && wait >= step.mul_f64(0.75), "retry {retry}: {wait:?} for {step:?}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_server_asking_to_wait_past_the_cap_is_not_retried() {
        let policy = RetryPolicy { max_retries: 3, max_wait: Duration::from_secs(2) };
        let mut attempts = 0;
        let started = tokio::time::Instant::now();
        let error = with_retries(policy, || {
            attempts += 1;
            let mut failure = Failure::retryable(ModelError::of(ModelErrorKind::Http, "rate limited"));
            failure.retry = Retry::Yes(Some(Duration::from_secs(56)));
            async move { Err::<(), _>(failure) }
        })
        .await
        .unwrap_err();
        assert_eq!(attempts, 1);
        assert_eq!(started.elapsed(), Duration::ZERO, "no wait at all");
        assert!(error.message.contains("retry after 56.000 s, longer than the 2.000 s"), "{}", error.message);
    }

    #[test]
    fn which_statuses_are_retried() {
        let retried = |status: u16, body: &str| {
            matches!(status_failure("p", status, &HeaderMap::new(), "x-request-id", body).retry, Retry::Yes(_))
        };
        for status in [408, 409, 429, 500, 502, 503, 529] {
            assert!(retried(status, "{}"), "{status}");
        }
        for status in [301, 307, 308, 400, 401, 403, 404, 422] {
            assert!(!retried(status, "{}"), "{status}");
        }
        assert!(!retried(429, r#"{"error": {"code": "insufficient_quota", "message": "x"}}"#));
        let no = headers(&[("x-should-retry", "false")]);
        assert!(matches!(status_failure("p", 503, &no, "x", "").retry, Retry::No));
    }

    #[test]
    fn secrets_never_survive_redaction_in_any_echo() {
        let key = "sk-canary-0123456789abcdef";
        let texts = [
            format!("Incorrect API key provided: {key}. Also sk-canary-01...cdef and sk-canar****cdef"),
            r#"{"error": "bad key \u0073k-canary-0123456789abcdef"}"#.to_owned(),
            r#"{"error": "bad key \u0073\u006b\u002d\u0063anary-0123456789abcdef"}"#.to_owned(),
            format!("{{\"request_id\": \"{}\"}}", key.replace('-', "\\u002d")),
        ];
        for text in texts {
            let out = redact(&text, &[key]);
            assert!(!out.contains("canary-0") && !out.contains("sk-canar"), "{text} -> {out}");
        }
        let error = ModelError { request_id: Some(key.to_owned()), body: Some(key.to_owned()), ..ModelError::new(key) };
        let error = redact_error(error, &[key]);
        assert!(!format!("{error:?}").contains("canary"), "{error:?}");
    }

    #[test]
    fn unescaping_keeps_what_is_not_a_whole_escape() {
        assert_eq!(unescape(r"a\u0041\/b\n\u12\uD83D\uDE00\"), "aA/b\\n\\u12😀\\");
    }
}
