//! `RunStream`: a run's events as a `futures::Stream`, live, with the result at the end.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::Stream;
use futures::future::BoxFuture;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio_util::sync::CancellationToken;

use crate::agent::RunOptions;
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
/// assert_eq!(result.text(), Some("hi"));
/// # });
/// ```
pub struct RunStream<'a> {
    run: Option<BoxFuture<'a, Result<RunResult>>>,
    events: UnboundedReceiver<Event>,
    result: Option<Result<RunResult>>,
    /// The run's cancellation: [`cancel`](Self::cancel) and dropping the stream use it.
    cancellation: CancellationToken,
    /// Whether the run was polled at all: a stream dropped unpolled never ran.
    started: bool,
}

impl<'a> RunStream<'a> {
    pub(crate) fn new<F, Fut>(mut options: RunOptions, start: F) -> Self
    where
        F: FnOnce(UnboundedSender<Event>, RunOptions) -> Fut,
        Fut: Future<Output = Result<RunResult>> + Send + 'a,
    {
        let (live, events) = unbounded_channel();
        let cancellation = options.cancellation.get_or_insert_with(CancellationToken::new).clone();
        Self { run: Some(Box::pin(start(live, options))), events, result: None, cancellation, started: false }
    }

    /// Cancels the run: running tools see `is_cancelled()`, and the run ends `cancelled`
    /// at its next poll (read on, or call [`result`](Self::result)).
    pub fn cancel(&self) {
        self.cancellation.cancel();
    }

    /// The run's cancellation token (cancelling it is [`cancel`](Self::cancel)).
    pub fn cancellation(&self) -> &CancellationToken {
        &self.cancellation
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

/// Dropping a stream whose run is under way cancels the run and lets it settle at once:
/// its tools are told to stop, the history gets `cancelled` returns, and the session is
/// free again, instead of a half-run conversation left behind.
impl Drop for RunStream<'_> {
    fn drop(&mut self) {
        let Some(mut run) = self.run.take().filter(|_| self.started) else { return };
        self.cancellation.cancel();
        // Cancelled, the run finishes without waiting on anything: its tools' futures are
        // dropped, and what is left is bookkeeping. One poll settles it.
        // A panic here would abort a process that is already unwinding: contain it.
        let poll =
            std::panic::AssertUnwindSafe(|| run.as_mut().poll(&mut Context::from_waker(std::task::Waker::noop())));
        drop(std::panic::catch_unwind(poll));
    }
}

impl Stream for RunStream<'_> {
    type Item = Event;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Event>> {
        let this = &mut *self;
        this.started = true;
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
