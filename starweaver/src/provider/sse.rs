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
#[doc(hidden)]
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum SseError {
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
/// stream ends with [`SseError::TooLarge`] and nothing more is read. The first error is
/// the stream's last item.
#[doc(hidden)]
pub fn parse<E: std::fmt::Display>(
    chunks: impl Stream<Item = Result<Bytes, E>>,
    limit: usize,
) -> impl Stream<Item = Result<SseEvent, SseError>> {
    // The parser copies what it still holds after each line it reads, so it is handed one
    // event at a time (a chunk cut after each blank line, without copying): fed a whole
    // chunk of many events, it would copy the chunk's rest at every line.
    let start = Some((Box::pin(chunks), LineEndings::default(), 0usize, Bytes::new()));
    let normalised = futures::stream::unfold(start, move |state| async move {
        let (mut chunks, mut lines, mut seen, mut held) = state?;
        if held.is_empty() {
            match chunks.next().await {
                Some(Ok(chunk)) => {
                    seen = seen.saturating_add(chunk.len());
                    if seen > limit {
                        return Some((Err(SseError::TooLarge), None));
                    }
                    held = lines.normalise(chunk);
                }
                Some(Err(error)) => return Some((Err(SseError::Transport(error.to_string())), None)),
                None => return lines.pending_cr.then(|| (Ok(Bytes::from_static(b"\n")), None)),
            }
        }
        let event = held.split_to(event_end(&held));
        Some((Ok(event), Some((chunks, lines, seen, held))))
    });
    let events = normalised.eventsource().map(|item| match item {
        Ok(event) => Ok(SseEvent { event: event.event, data: event.data }),
        Err(EventStreamError::Transport(error)) => Err(error),
        Err(other) => Err(SseError::Transport(other.to_string())),
    });
    // The first error ends the stream: the parser would otherwise go on to report what it
    // still holds (bytes that are not UTF-8, say) after the error that stopped the reading.
    events.scan(false, |failed, item| {
        let next = (!*failed).then(|| {
            *failed = item.is_err();
            item
        });
        std::future::ready(next)
    })
}

/// Where the first event in `bytes` (line endings made LF) ends: after its blank line, or
/// at the end of `bytes` if none ends there.
fn event_end(bytes: &[u8]) -> usize {
    bytes.windows(2).position(|pair| pair == b"\n\n").map_or(bytes.len(), |at| at + 2)
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
    fn a_chunk_of_many_events_gives_each_wherever_the_chunks_are_cut() {
        let body = (0..300).map(|i| format!("event: e{i}\r\ndata: {i}\ndata: more\r\r")).collect::<Vec<_>>().concat();
        let want: Vec<_> = (0..300).map(|i| Ok((format!("e{i}"), format!("{i}\nmore")))).collect();
        let bytes = body.into_bytes();
        for cuts in [vec![], vec![1, 2, 3], vec![16, 17, 18, 19], vec![bytes.len() / 3, bytes.len() / 2]] {
            let mut chunks = Vec::new();
            let mut from = 0;
            for cut in cuts.into_iter().chain([bytes.len()]) {
                chunks.push(bytes[from..cut].to_vec());
                from = cut;
            }
            assert_eq!(events_of(chunks, usize::MAX), want);
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
}
