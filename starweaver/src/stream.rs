//! `RunStream`: a run's events as a `futures::Stream`, live, with the result at the end.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::Stream;
use futures::future::BoxFuture;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use crate::error::Result;
use crate::event::Event;
use crate::result::RunResult;

/// The events of one run as they happen. Polling the stream drives the run, so no task
/// is spawned; [`result`](Self::result) finishes the run and returns its outcome.
///
/// ```
/// use futures::StreamExt;
/// use starweaver::testing::TestModel;
/// use starweaver::{Agent, EventKind, ModelResponse};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let agent = Agent::builder(TestModel::new([ModelResponse::text("hi")])).build().unwrap();
/// let mut stream = agent.run_stream("hello");
/// let first = stream.next().await.unwrap();
/// assert!(matches!(first.kind, EventKind::RunStart { .. }));
/// let result = stream.result().await.unwrap();
/// assert_eq!(result.output.as_deref(), Some("hi"));
/// # });
/// ```
pub struct RunStream<'a> {
    run: Option<BoxFuture<'a, Result<RunResult>>>,
    events: UnboundedReceiver<Event>,
    result: Option<Result<RunResult>>,
}

impl<'a> RunStream<'a> {
    pub(crate) fn new<F, Fut>(start: F) -> Self
    where
        F: FnOnce(UnboundedSender<Event>) -> Fut,
        Fut: Future<Output = Result<RunResult>> + Send + 'a,
    {
        let (live, events) = unbounded_channel();
        Self { run: Some(Box::pin(start(live))), events, result: None }
    }

    /// Runs to the end (events not yet read stay in the result's `events`) and returns
    /// the outcome.
    ///
    /// # Errors
    /// As the non-streaming `run` / `resume`.
    pub async fn result(mut self) -> Result<RunResult> {
        if let Some(run) = self.run.take() {
            return run.await;
        }
        self.result.take().expect("a finished stream holds its result until `result` takes it")
    }
}

impl Stream for RunStream<'_> {
    type Item = Event;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Event>> {
        let this = &mut *self;
        if let Some(run) = &mut this.run
            && let Poll::Ready(result) = run.as_mut().poll(cx)
        {
            this.result = Some(result);
            this.run = None;
        }
        // Once the run is over its sender is gone, so the channel ends after the last event.
        this.events.poll_recv(cx)
    }
}
