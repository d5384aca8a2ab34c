//! Server-sent events from a streamed response, as `(event, data)` pairs.

use bytes::Bytes;
use eventsource_stream::{EventStreamError, Eventsource};
use futures::{Stream, StreamExt};

/// One SSE event: its name (`message` when the server gave none) and its data.
#[doc(hidden)]
pub struct SseEvent {
    /// The event name.
    pub event: String,
    /// The data lines, joined.
    pub data: String,
}

/// Why a stream stopped giving events.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SseError {
    /// The connection failed mid-stream, or the stream is not SSE.
    #[error("{0}")]
    Transport(String),
    /// The stream passed the bytes an answer may have.
    #[error("the stream is larger than its limit")]
    TooLarge,
}

/// The events of `response`'s body, refused past `limit` bytes in all.
pub(crate) fn events(response: reqwest::Response, limit: usize) -> impl Stream<Item = Result<SseEvent, SseError>> {
    parse(response.bytes_stream(), limit)
}

/// The events of a body arriving in `chunks`. Lines may end in CRLF, LF or a lone CR, as
/// the SSE specification allows, split anywhere between chunks; past `limit` bytes the
/// stream ends with [`SseError::TooLarge`] and nothing more is read.
pub(crate) fn parse<E: std::fmt::Display>(
    chunks: impl Stream<Item = Result<Bytes, E>>,
    limit: usize,
) -> impl Stream<Item = Result<SseEvent, SseError>> {
    let start = Some((Box::pin(chunks), LineEndings::default(), 0usize));
    let normalised = futures::stream::unfold(start, move |state| async move {
        let (mut chunks, mut lines, seen) = state?;
        match chunks.next().await {
            Some(Ok(chunk)) => {
                let seen = seen.saturating_add(chunk.len());
                if seen > limit {
                    return Some((Err(SseError::TooLarge), None));
                }
                let chunk = lines.normalise(chunk);
                Some((Ok(chunk), Some((chunks, lines, seen))))
            }
            Some(Err(error)) => Some((Err(SseError::Transport(error.to_string())), None)),
            None => lines.pending_cr.then(|| (Ok(Bytes::from_static(b"\n")), None)),
        }
    });
    normalised.eventsource().map(|item| match item {
        Ok(event) => Ok(SseEvent { event: event.event, data: event.data }),
        Err(EventStreamError::Transport(error)) => Err(error),
        Err(other) => Err(SseError::Transport(other.to_string())),
    })
}

/// Turns CRLF and lone CR line endings into LF, remembering a CR at the end of one chunk
/// until the next shows whether an LF follows it. A chunk without a CR passes untouched.
#[derive(Default)]
struct LineEndings {
    pending_cr: bool,
}

impl LineEndings {
    fn normalise(&mut self, chunk: Bytes) -> Bytes {
        // An empty chunk says nothing about what follows a pending CR.
        if chunk.is_empty() || (!self.pending_cr && !chunk.contains(&b'\r')) {
            return chunk;
        }
        let mut out = Vec::with_capacity(chunk.len() + 1);
        let mut bytes = chunk.iter().copied().peekable();
        if std::mem::take(&mut self.pending_cr) {
            out.push(b'\n');
            bytes.next_if_eq(&b'\n');
        }
        while let Some(byte) = bytes.next() {
            if byte != b'\r' {
                out.push(byte);
            } else if bytes.peek().is_none() {
                self.pending_cr = true;
            } else {
                bytes.next_if_eq(&b'\n');
                out.push(b'\n');
            }
        }
        Bytes::from(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn events_of(chunks: Vec<Vec<u8>>, limit: usize) -> Vec<Result<(String, String), SseError>> {
        let chunks =
            futures::stream::iter(chunks.into_iter().map(|c| Ok::<_, std::convert::Infallible>(Bytes::from(c))));
        futures::executor::block_on(parse(chunks, limit).map(|e| e.map(|e| (e.event, e.data))).collect())
    }

    const BODY: &str = "event: a\ndata: one\ndata: two\n\n: comment\ndata: three\n\n";

    fn expected() -> Vec<Result<(String, String), SseError>> {
        vec![Ok(("a".into(), "one\ntwo".into())), Ok(("message".into(), "three".into()))]
    }

    #[test]
    fn every_line_ending_gives_the_same_events() {
        for ending in ["\n", "\r\n", "\r"] {
            let body = BODY.replace('\n', ending);
            assert_eq!(events_of(vec![body.into_bytes()], usize::MAX), expected(), "{ending:?}");
        }
    }

    #[test]
    fn a_stream_past_the_limit_ends_with_a_named_error() {
        let chunk = b"data: x\n\n".to_vec();
        let got = events_of(vec![chunk.clone(), chunk.clone(), chunk], 20);
        assert_eq!(
            got,
            vec![Ok(("message".into(), "x".into())), Ok(("message".into(), "x".into())), Err(SseError::TooLarge)]
        );
    }

    proptest! {
        /// However a body is cut into chunks, and whichever line endings it uses, the
        /// events are the same.
        #[test]
        fn chunking_and_line_endings_never_change_the_events(
            cuts in proptest::collection::vec(0usize..200, 0..12),
            ending in prop_oneof![Just("\n"), Just("\r\n"), Just("\r")],
        ) {
            let body = BODY.replace('\n', ending).into_bytes();
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c % (body.len() + 1)).collect();
            cuts.sort_unstable();
            let mut chunks = Vec::new();
            let mut from = 0;
            for cut in cuts.into_iter().chain([body.len()]) {
                chunks.push(body[from..cut].to_vec());
                from = cut;
            }
            prop_assert_eq!(events_of(chunks, usize::MAX), expected());
        }

        /// Any bytes at all give events or a named error, never a panic.
        #[test]
        fn any_bytes_are_taken_without_panic(chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..64), 0..8)) {
            let _ = events_of(chunks, 256);
        }
    }
}
