//! Waking an event loop from another thread without the interpreter lock.
//!
//! `call_soon_threadsafe` must be called under the lock, and a thread Python does not own
//! (the runtime's, where MCP messages and timers arrive) makes a Python thread state each
//! time it takes the lock, mapping and unmapping its frame stack, and waits for the lock
//! while the loop runs Python. A doorbell is a pipe the loop watches (`add_reader`) and a
//! list of the asyncio futures to resolve: another thread adds its future to the list and,
//! if the list was empty, writes one byte. The loop, woken by the byte, resolves them all
//! under the lock it holds anyway.
//!
//! Each thread keeps the doorbells of the loops it has run, one a loop, until the loop is
//! closed. A loop that cannot watch a pipe (`add_reader` raises, as Windows' proactor
//! loop does) has none, and its wakes go through `call_soon_threadsafe`.

use std::cell::RefCell;
use std::io::{PipeReader, PipeWriter, Read, Write};
use std::sync::{Arc, Mutex, PoisonError};

use pyo3::prelude::*;

/// A loop this thread has run, and its doorbell (`None` if it cannot watch a pipe).
type Known = (Py<PyAny>, Option<Arc<Doorbell>>);

/// One loop's doorbell.
pub(super) struct Doorbell {
    /// The futures to resolve; the byte is written when it stops being empty.
    rung: Mutex<Vec<Py<PyAny>>>,
    writer: PipeWriter,
    reader: PipeReader,
}

impl Doorbell {
    /// The doorbell of the loop running on this thread, made (and watched) on first use;
    /// `None` where the loop cannot watch a pipe.
    pub(super) fn of(py: Python<'_>, event_loop: &Bound<'_, PyAny>) -> Option<Arc<Self>> {
        thread_local! {
            static DOORBELLS: RefCell<Vec<Known>> = const { RefCell::new(Vec::new()) };
        }
        DOORBELLS.with_borrow_mut(|doorbells| {
            if let Some((_, doorbell)) = doorbells.iter().find(|(known, _)| known.is(event_loop)) {
                return doorbell.clone();
            }
            // A closed loop runs no more: its doorbell goes once its last waiter has.
            doorbells.retain(|(known, _)| {
                !known.bind(py).call_method0(pyo3::intern!(py, "is_closed")).and_then(|c| c.is_truthy()).unwrap_or(true)
            });
            let doorbell = Self::watched_by(event_loop).ok();
            doorbells.push((event_loop.clone().unbind(), doorbell.clone()));
            doorbell
        })
    }

    fn watched_by(event_loop: &Bound<'_, PyAny>) -> PyResult<Arc<Self>> {
        let (reader, writer) = std::io::pipe()?;
        let doorbell = Arc::new(Self { rung: Mutex::default(), writer, reader });
        let fd = std::os::fd::AsRawFd::as_raw_fd(&doorbell.reader);
        let answer = Bound::new(event_loop.py(), Answer(doorbell.clone()))?;
        event_loop.call_method1(pyo3::intern!(event_loop.py(), "add_reader"), (fd, answer))?;
        Ok(doorbell)
    }

    /// Has the loop resolve `future` (an asyncio future of its own); from any thread, with
    /// or without the interpreter lock.
    pub(super) fn ring(&self, future: Py<PyAny>) {
        let mut rung = self.rung.lock().unwrap_or_else(PoisonError::into_inner);
        rung.push(future);
        if rung.len() == 1 {
            // Never blocks: at most one unread byte a ring the loop has not answered.
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
        // The pipe is readable, so this read does not block; a byte left unread (written
        // after the list was taken) wakes the loop once more, for nothing.
        drop((&self.0.reader).read(&mut [0; 64]));
        let rung = std::mem::take(&mut *self.0.rung.lock().unwrap_or_else(PoisonError::into_inner));
        for future in rung {
            // A future cancelled meanwhile has nobody waiting on it.
            drop(super::future::release_waiter(future.bind(py)));
        }
    }
}
