//! The two ends a server serves stdio on. A client that starts a server gives it pipes, and
//! a pipe is read and written where the runtime's reactor says it is ready, on the thread
//! that serves. tokio's `Stdin` and `Stdout` (and a `tokio::fs::File`) instead hand every
//! read and write to the blocking pool and back: two thread hand-offs a message, most of a
//! trivial call's cost. Anything else (a file, a terminal) still goes through the pool.
//!
//! A pipe is put in non-blocking mode while served, and back in blocking mode when its end
//! is dropped: the mode belongs to the open file, which the process's own fd 0 or fd 1
//! shares with the copy served.

use std::os::fd::OwnedFd;
use std::os::unix::fs::FileTypeExt;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::unix::pipe;

/// A pipe's end, and how it is given back in blocking mode.
trait PipeEnd: Sized {
    fn open(fd: OwnedFd) -> std::io::Result<Self>;
    fn into_blocking(self) -> std::io::Result<OwnedFd>;
}

impl PipeEnd for pipe::Receiver {
    fn open(fd: OwnedFd) -> std::io::Result<Self> {
        Self::from_owned_fd(fd)
    }
    fn into_blocking(self) -> std::io::Result<OwnedFd> {
        self.into_blocking_fd()
    }
}

impl PipeEnd for pipe::Sender {
    fn open(fd: OwnedFd) -> std::io::Result<Self> {
        Self::from_owned_fd(fd)
    }
    fn into_blocking(self) -> std::io::Result<OwnedFd> {
        self.into_blocking_fd()
    }
}

/// How one end is read or written.
enum End<P: PipeEnd> {
    /// A pipe, through the reactor.
    Pipe(P),
    /// Anything else, through the blocking pool.
    Pool(tokio::fs::File),
    /// Given back: only while dropped.
    Closed,
}

impl<P: PipeEnd> End<P> {
    /// `fd` as a pipe end if it is one (registered with the reactor), else as a file.
    fn new(fd: OwnedFd) -> std::io::Result<Self> {
        let file = std::fs::File::from(fd);
        if file.metadata()?.file_type().is_fifo() {
            Ok(Self::Pipe(P::open(file.into())?))
        } else {
            Ok(Self::Pool(tokio::fs::File::from_std(file)))
        }
    }

    /// Puts a pipe back in blocking mode and closes it (when its end is dropped).
    fn give_back(&mut self) {
        if let Self::Pipe(pipe) = std::mem::replace(self, Self::Closed) {
            drop(pipe.into_blocking());
        }
    }
}

/// The end a server reads its client's messages from: see the [module docs](self).
pub(crate) struct Input(End<pipe::Receiver>);

impl Input {
    /// Reads `fd`. Call it inside a tokio runtime with I/O enabled.
    pub(crate) fn new(fd: OwnedFd) -> std::io::Result<Self> {
        End::new(fd).map(Self)
    }
}

impl Drop for Input {
    fn drop(&mut self) {
        self.0.give_back();
    }
}

impl AsyncRead for Input {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        match &mut self.0 {
            End::Pipe(pipe) => Pin::new(pipe).poll_read(cx, buf),
            End::Pool(file) => Pin::new(file).poll_read(cx, buf),
            End::Closed => Poll::Ready(Ok(())),
        }
    }
}

/// The end a server writes its messages to: see the [module docs](self).
pub(crate) struct Output(End<pipe::Sender>);

impl Output {
    /// Writes to `fd`. Call it inside a tokio runtime with I/O enabled.
    pub(crate) fn new(fd: OwnedFd) -> std::io::Result<Self> {
        End::new(fd).map(Self)
    }

    /// Where a write goes; `None` once given back.
    fn writer(&mut self) -> Option<Pin<&mut (dyn AsyncWrite + Unpin + Send)>> {
        match &mut self.0 {
            End::Pipe(pipe) => Some(Pin::new(pipe)),
            End::Pool(file) => Some(Pin::new(file)),
            End::Closed => None,
        }
    }
}

impl Drop for Output {
    fn drop(&mut self) {
        self.0.give_back();
    }
}

fn closed<T>() -> Poll<std::io::Result<T>> {
    Poll::Ready(Err(std::io::ErrorKind::BrokenPipe.into()))
}

impl AsyncWrite for Output {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        self.writer().map_or_else(closed, |writer| writer.poll_write(cx, buf))
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        self.writer().map_or_else(closed, |writer| writer.poll_flush(cx))
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        self.writer().map_or_else(closed, |writer| writer.poll_shutdown(cx))
    }
}
