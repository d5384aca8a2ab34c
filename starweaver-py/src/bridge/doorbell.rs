//! Waking an event loop from another thread, preferably without the interpreter lock.
//!
//! `call_soon_threadsafe` must be called under the lock, and a thread Python does not own
//! (the runtime's, where MCP messages and timers arrive) makes a Python thread state each
//! time it takes the lock, mapping and unmapping its frame stack, and waits for the lock
//! while the loop runs Python. On Unix a loop gets a doorbell instead: a pipe the loop
//! watches (`add_reader`) and a list of the asyncio futures to resolve. Another thread adds
//! its future to the list and, if the list was empty, writes one byte; the loop, woken by
//! the byte, resolves them all under the lock it holds anyway.
//!
//! Each thread keeps the doorbells of the loops it runs, one a loop, and lets one go once
//! its loop is closed or gone (when the thread next meets a new loop). A loop that cannot
//! watch a pipe (`add_reader` raises) and every loop off Unix (where a selector cannot
//! watch a pipe) are woken through `call_soon_threadsafe`.

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

use super::exiting::attach_unless_exiting;

/// How another thread wakes one loop to resolve one of its futures.
pub(super) enum LoopWake {
    #[cfg(unix)]
    Doorbell(std::sync::Arc<unix::Doorbell>),
    /// `call_soon_threadsafe` on the loop.
    Loop(Py<PyAny>),
}

impl LoopWake {
    /// How to wake `event_loop`, the loop running on this thread.
    pub(super) fn of(event_loop: &Bound<'_, PyAny>) -> Self {
        #[cfg(unix)]
        if let Some(doorbell) = unix::Doorbell::of(event_loop) {
            return Self::Doorbell(doorbell);
        }
        Self::Loop(event_loop.clone().unbind())
    }

    /// Has the loop resolve `future` (an asyncio future of its own, unless done or
    /// cancelled meanwhile); from a thread other than the loop's.
    pub(super) fn release(self, future: Py<PyAny>) {
        match self {
            #[cfg(unix)]
            Self::Doorbell(doorbell) => doorbell.ring(future),
            // The timer runtime's thread may get here while Python exits, when there is
            // nothing left to wake.
            Self::Loop(event_loop) => drop(attach_unless_exiting(|py| {
                static RELEASE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
                let release = RELEASE
                    .get_or_try_init(py, || wrap_pyfunction!(release_waiter, py).map(|f| f.into_any().unbind()))?;
                // A closed loop means nobody awaits the future any more: nothing to wake.
                event_loop.call_method1(py, intern!(py, "call_soon_threadsafe"), (release, future)).map(drop)
            })),
        }
    }
}

/// Resolves an asyncio future (a Task's waiter, `ctx.cancelled()`) unless it is done or
/// was cancelled meanwhile.
#[pyfunction]
pub(super) fn release_waiter(future: &Bound<'_, PyAny>) -> PyResult<()> {
    let py = future.py();
    if !future.call_method0(intern!(py, "done"))?.extract::<bool>()? {
        future.call_method1(intern!(py, "set_result"), (py.None(),))?;
    }
    Ok(())
}

#[cfg(unix)]
mod unix {
    use std::cell::RefCell;
    use std::io::{PipeReader, PipeWriter, Read, Write};
    use std::os::fd::AsRawFd;
    use std::sync::{Arc, Mutex, PoisonError};

    use pyo3::prelude::*;

    use super::release_waiter;

    /// A loop this thread has run: where it lives (to find it without calling Python), a
    /// weak reference to it (so an abandoned loop is collected as before), and its doorbell
    /// (`None` if it cannot watch a pipe).
    struct Known {
        address: usize,
        event_loop: Py<PyAny>,
        doorbell: Option<Arc<Doorbell>>,
    }

    impl Known {
        /// The loop, if it is still alive.
        fn event_loop<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyAny>> {
            self.event_loop.bind(py).call0().ok().filter(|alive| !alive.is_none())
        }
    }

    thread_local! {
        static KNOWN: RefCell<Vec<Known>> = const { RefCell::new(Vec::new()) };
    }

    /// One loop's doorbell. Both ends of its pipe are non-blocking, so that neither can
    /// stall a thread: at most a byte or two ever wait in it.
    pub(in crate::bridge) struct Doorbell {
        /// The futures to resolve; the byte is written when it stops being empty.
        rung: Mutex<Vec<Py<PyAny>>>,
        writer: PipeWriter,
        reader: PipeReader,
    }

    impl Doorbell {
        /// The doorbell of `event_loop`, the loop running on this thread, made (and
        /// watched) on first use; `None` where the loop cannot watch a pipe or be
        /// referenced weakly.
        pub(super) fn of(event_loop: &Bound<'_, PyAny>) -> Option<Arc<Self>> {
            let py = event_loop.py();
            let address = event_loop.as_ptr() as usize;
            // The list is taken out while Python runs (a finalizer may ask for a doorbell).
            let mut known = KNOWN.with_borrow_mut(std::mem::take);
            let found = known
                .iter()
                .find(|k| k.address == address && k.event_loop(py).is_some_and(|alive| alive.is(event_loop)))
                .map(|k| k.doorbell.clone());
            let doorbell = found.unwrap_or_else(|| {
                // A loop that is gone or closed runs no more: its doorbell goes once its
                // last waiter has.
                known.retain(|k| {
                    k.event_loop(py).is_some_and(|alive| {
                        alive.call_method0("is_closed").and_then(|c| c.is_truthy()).is_ok_and(|c| !c)
                    })
                });
                // A loop that cannot be referenced weakly could not be told from a later one
                // at its address: it is woken through `call_soon_threadsafe`.
                let weak = pyo3::types::PyWeakrefReference::new(event_loop).ok()?;
                let doorbell = Self::watched_by(event_loop).ok();
                known.push(Known { address, event_loop: weak.into_any().unbind(), doorbell: doorbell.clone() });
                doorbell
            });
            KNOWN.with_borrow_mut(|now| {
                known.append(now);
                *now = known;
            });
            doorbell
        }

        fn watched_by(event_loop: &Bound<'_, PyAny>) -> PyResult<Arc<Self>> {
            let py = event_loop.py();
            let (reader, writer) = std::io::pipe()?;
            let set_blocking = py.import("os")?.getattr("set_blocking")?;
            for fd in [reader.as_raw_fd(), writer.as_raw_fd()] {
                set_blocking.call1((fd, false))?;
            }
            let doorbell = Arc::new(Self { rung: Mutex::default(), writer, reader });
            let answer = Bound::new(py, Answer(doorbell.clone()))?;
            event_loop.call_method1("add_reader", (doorbell.reader.as_raw_fd(), answer))?;
            Ok(doorbell)
        }

        /// Has the loop resolve `future`; from any thread, with or without the lock.
        pub(super) fn ring(&self, future: Py<PyAny>) {
            let mut rung = self.rung.lock().unwrap_or_else(PoisonError::into_inner);
            rung.push(future);
            if rung.len() == 1 {
                drop((&self.writer).write(&[1]));
            }
        }
    }

    /// What the loop calls when the doorbell's pipe is readable.
    #[pyclass(frozen)]
    struct Answer(Arc<Doorbell>);

    #[pymethods]
    impl Answer {
        fn __call__(&self, py: Python<'_>) {
            // Read first, then take the list: a byte written after the list was taken
            // wakes the loop once more, and a future added after it is taken now.
            drop((&self.0.reader).read(&mut [0; 64]));
            let rung = std::mem::take(&mut *self.0.rung.lock().unwrap_or_else(PoisonError::into_inner));
            for future in rung {
                drop(release_waiter(future.bind(py)));
            }
        }
    }
}
