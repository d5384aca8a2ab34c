//! [`Woken`]: a future polled again only once it has woken its task.
//!
//! A run waits for its calls and for its cancellation side by side, and polls both each
//! time a call ends. Polling a cancellation token's wait takes two locks (four atomic
//! operations, about 20 ns here) though it fires at most once in a run; behind `Woken` it is
//! polled when it first registers and after it wakes, and otherwise costs one plain load.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Wake, Waker};

/// `future`, polled only on its first poll and after it has woken the task awaiting it.
pub(crate) struct Woken<F> {
    future: F,
    flag: Arc<Flag>,
    /// The waker `future` is polled with: it marks `flag` and wakes the task.
    waker: Waker,
    /// The task waker `flag` wakes, as last handed to it.
    task: Option<Waker>,
}

/// What `future`'s wakes mark, and the task they wake.
struct Flag {
    woke: AtomicBool,
    task: Mutex<Option<Waker>>,
}

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woke.store(true, Ordering::Release);
        // Woken outside the lock: an executor that polls the task inside its wake would
        // otherwise find the lock held by its own thread.
        let task = self.task.lock().unwrap_or_else(PoisonError::into_inner).clone();
        if let Some(task) = task {
            task.wake();
        }
    }
}

impl<F: Future + Unpin> Woken<F> {
    pub(crate) fn new(future: F) -> Self {
        // Marked as woken: the first poll polls `future`, which registers its waker.
        let flag = Arc::new(Flag { woke: AtomicBool::new(true), task: Mutex::new(None) });
        Self { future, waker: Waker::from(flag.clone()), flag, task: None }
    }
}

impl<F: Future + Unpin> Future for Woken<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.get_mut();
        // The task's waker is the same at every poll but the rarest: compared, not stored.
        if !this.task.as_ref().is_some_and(|task| task.will_wake(cx.waker())) {
            this.task = Some(cx.waker().clone());
            this.flag.task.lock().unwrap_or_else(PoisonError::into_inner).clone_from(&this.task);
        }
        // A wake after this load sets the flag and wakes the task again: none is lost.
        if !this.flag.woke.load(Ordering::Acquire) || !this.flag.woke.swap(false, Ordering::AcqRel) {
            return Poll::Pending;
        }
        Pin::new(&mut this.future).poll(&mut Context::from_waker(&this.waker))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use tokio_util::sync::CancellationToken;

    /// A task's waker that counts its wakes.
    #[derive(Default)]
    struct Task(AtomicUsize);

    impl Wake for Task {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Pending until `ready`, counting its polls; it wakes nobody.
    struct Counted<'a> {
        polls: &'a AtomicUsize,
        ready: &'a AtomicBool,
    }

    impl Future for Counted<'_> {
        type Output = ();

        fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
            self.polls.fetch_add(1, Ordering::Relaxed);
            if self.ready.load(Ordering::Relaxed) { Poll::Ready(()) } else { Poll::Pending }
        }
    }

    #[test]
    fn the_future_is_polled_once_until_it_wakes_its_task() {
        let (polls, ready) = (AtomicUsize::new(0), AtomicBool::new(false));
        let mut woken = Woken::new(Counted { polls: &polls, ready: &ready });
        let task = Arc::new(Task::default());
        let waker = Waker::from(task.clone());
        let mut cx = Context::from_waker(&waker);
        for _ in 0..5 {
            assert!(Pin::new(&mut woken).poll(&mut cx).is_pending());
        }
        assert_eq!(polls.load(Ordering::Relaxed), 1);
        // Ready but silent: a future that never wakes its task is never polled again.
        ready.store(true, Ordering::Relaxed);
        assert!(Pin::new(&mut woken).poll(&mut cx).is_pending());
        assert_eq!(task.0.load(Ordering::Relaxed), 0);
        woken.waker.wake_by_ref();
        assert_eq!(task.0.load(Ordering::Relaxed), 1, "the future's wake wakes the task");
        assert!(Pin::new(&mut woken).poll(&mut cx).is_ready());
        assert_eq!(polls.load(Ordering::Relaxed), 2);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_cancellation_from_another_thread_wakes_the_waiting_task() {
        let token = CancellationToken::new();
        let other_thread = token.clone();
        let cancelled = std::pin::pin!(token.cancelled());
        let woken = Woken::new(cancelled);
        tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            other_thread.cancel();
        });
        // Not a timeout around `woken`: a timeout polls it again when its timer fires,
        // which would hide a task the cancellation never woke.
        tokio::select! {
            biased;
            () = tokio::time::sleep(std::time::Duration::from_secs(10)) => panic!("the cancellation never woke the task"),
            () = woken => {}
        }
    }
}
