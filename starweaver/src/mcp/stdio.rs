//! The two ends a server serves stdio on. A client that starts a server gives it pipes or
//! Unix sockets (libuv's, so Node's, are socket pairs), and those are read and written
//! where the runtime's reactor says they are ready, on the thread that serves. tokio's
//! `Stdin` and `Stdout` (and a `tokio::fs::File`) instead hand every read and write to the
//! blocking pool and back, a thread hand-off each way. Anything else (a file, a terminal)
//! still goes through the pool.
//!
//! A pipe or socket is put in non-blocking mode while served, and given back in blocking
//! mode (if it was) when its end is dropped: the mode belongs to the open file, which the
//! process's own fd 0 or fd 1 (and any child that inherited them) shares with the copy
//! served. When serving is cancelled, the ends are dropped with the runtime's task that
//! holds them.

use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::FileTypeExt;
use std::pin::Pin;
use std::task::{Context, Poll};

use rustix::fs::{OFlags, fcntl_getfl, fcntl_setfl};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::UnixStream;
use tokio::net::unix::pipe;

/// Copies of this process's stdin and stdout (fds 0 and 1), as
/// [`McpService::serve_fds`](super::McpService::serve_fds) takes them: serving the copies
/// leaves the process free to point its own fds elsewhere.
///
/// ```
/// let (input, output) = starweaver::mcp::stdio_copies().unwrap();
/// # drop((input, output));
/// ```
///
/// # Errors
/// A descriptor cannot be copied (the process has too many open).
pub fn stdio_copies() -> std::io::Result<(OwnedFd, OwnedFd)> {
    Ok((std::io::stdin().as_fd().try_clone_to_owned()?, std::io::stdout().as_fd().try_clone_to_owned()?))
}

/// A pipe's end, registered with the reactor.
trait PipeEnd: AsFd + Sized {
    /// `fd`, already non-blocking.
    fn open(fd: OwnedFd) -> std::io::Result<Self>;
}

impl PipeEnd for pipe::Receiver {
    fn open(fd: OwnedFd) -> std::io::Result<Self> {
        Self::from_owned_fd_unchecked(fd)
    }
}

impl PipeEnd for pipe::Sender {
    fn open(fd: OwnedFd) -> std::io::Result<Self> {
        Self::from_owned_fd_unchecked(fd)
    }
}

/// How one end is read or written.
enum End<P: PipeEnd> {
    /// A pipe through the reactor, and whether it was made non-blocking for it.
    Pipe(P, bool),
    /// A socket through the reactor, and whether it was made non-blocking for it.
    Socket(UnixStream, bool),
    /// Anything else, through the blocking pool.
    Pool(tokio::fs::File),
    /// Given back: only while dropped.
    Closed,
}

impl<P: PipeEnd> End<P> {
    /// `fd` registered with the reactor if it is a pipe or a socket, else as a file.
    fn new(fd: OwnedFd) -> std::io::Result<Self> {
        let file = std::fs::File::from(fd);
        let kind = file.metadata()?.file_type();
        if !kind.is_fifo() && !kind.is_socket() {
            return Ok(Self::Pool(tokio::fs::File::from_std(file)));
        }
        // A copy to give the mode back through if registering fails.
        let copy = file.try_clone()?;
        let flags = fcntl_getfl(&file)?;
        // Only a mode this end set is given back: stdin and stdout may be one socket.
        let set = !flags.contains(OFlags::NONBLOCK);
        fcntl_setfl(&file, flags | OFlags::NONBLOCK)?;
        let registered = if kind.is_fifo() {
            P::open(file.into()).map(|pipe| Self::Pipe(pipe, set))
        } else {
            UnixStream::from_std(OwnedFd::from(file).into()).map(|socket| Self::Socket(socket, set))
        };
        if registered.is_err() && set {
            blocking(&copy);
        }
        registered
    }

    /// Gives a pipe or socket back in blocking mode if it was, and closes it (when its
    /// end is dropped).
    fn give_back(&mut self) {
        match std::mem::replace(self, Self::Closed) {
            Self::Pipe(pipe, true) => blocking(&pipe),
            Self::Socket(socket, true) => blocking(&socket),
            Self::Pipe(..) | Self::Socket(..) | Self::Pool(_) | Self::Closed => {}
        }
    }
}

/// Clears `O_NONBLOCK` on `fd`'s open file; a mode that cannot be read or set leaves
/// nothing else to do.
fn blocking(fd: &impl AsFd) {
    if let Ok(flags) = fcntl_getfl(fd) {
        let _ = fcntl_setfl(fd, flags - OFlags::NONBLOCK);
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
            End::Pipe(pipe, _) => Pin::new(pipe).poll_read(cx, buf),
            End::Socket(socket, _) => Pin::new(socket).poll_read(cx, buf),
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
            End::Pipe(pipe, _) => Some(Pin::new(pipe)),
            End::Socket(socket, _) => Some(Pin::new(socket)),
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
