//! Server-sent events from a streamed response, as `(event, data)` pairs.

use eventsource_stream::Eventsource;
use futures::{Stream, StreamExt};

/// One SSE event: its name (`message` when the server gave none) and its data.
#[doc(hidden)]
pub struct SseEvent {
    /// The event name.
    pub event: String,
    /// The data lines, joined.
    pub data: String,
}

/// The events of `response`'s body. A transport failure mid-stream is an `Err` item.
pub(crate) fn events(response: reqwest::Response) -> impl Stream<Item = Result<SseEvent, String>> {
    response
        .bytes_stream()
        .eventsource()
        .map(|item| item.map(|e| SseEvent { event: e.event, data: e.data }).map_err(|e| e.to_string()))
}
