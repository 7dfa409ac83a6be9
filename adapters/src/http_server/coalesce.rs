//! A connection's socket as hyper writes to it: a small vectored write (an answer's head and
//! its body, say) sent as one buffer, a large one as the vectors it is.
//!
//! hyper writes an HTTP/1 answer as a list of buffers, the head it wrote and the body's frames
//! as they came, and sends the list with one `writev`: no frame is copied, however large. For
//! the small answers most calls get, the kernel's work for a second vector costs more than
//! copying a few hundred bytes (measured on the tiny HTTP bench, `benches/benches/serving.rs`:
//! ~0.25 µs of the server's ~9.7 µs per call). Up to [`COALESCE_UP_TO`] bytes, the vectors are
//! copied into one buffer of the thread and written with one plain `write`; a larger write
//! goes as it came.

use std::cell::Cell;
use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The largest vectored write copied into one buffer.
pub(super) const COALESCE_UP_TO: usize = 4096;

thread_local! {
    /// The buffer writes are copied into: taken for one write, put back after (its capacity
    /// stays at most [`COALESCE_UP_TO`]).
    static SCRATCH: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

/// `S`, its small vectored writes coalesced (see the [module docs](self)).
pub(super) struct Coalescing<S> {
    inner: S,
}

impl<S> Coalescing<S> {
    pub(super) fn new(inner: S) -> Self {
        Self { inner }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Coalescing<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Coalescing<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    /// Writes `bufs`, as one buffer when there are several holding [`COALESCE_UP_TO`] bytes or
    /// fewer. Either way the count returned is of the bytes of their concatenation written
    /// (a short write is the caller's to go on with, as for any vectored write).
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let inner = &mut self.get_mut().inner;
        let total = bufs
            .iter()
            .try_fold(0usize, |total, buf| total.checked_add(buf.len()));
        match total {
            Some(total) if bufs.len() > 1 && total <= COALESCE_UP_TO => {
                let mut scratch = SCRATCH.take();
                scratch.clear();
                for buf in bufs {
                    scratch.extend_from_slice(buf);
                }
                let written = Pin::new(inner).poll_write(cx, &scratch);
                SCRATCH.set(scratch);
                written
            }
            _ => Pin::new(inner).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::{COALESCE_UP_TO, Coalescing};
    use std::io::{self, IoSlice};
    use std::pin::Pin;
    use std::task::{Context, Poll};
    use tokio::io::{AsyncWrite, AsyncWriteExt};

    /// A socket that takes at most `room` bytes per write and records how each came.
    #[derive(Default)]
    struct Recorder {
        room: usize,
        received: Vec<u8>,
        /// `(vectored, buffers, bytes taken)` per write.
        writes: Vec<(bool, usize, usize)>,
    }

    impl AsyncWrite for Recorder {
        fn poll_write(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            let this = self.get_mut();
            let taken = buf.len().min(this.room);
            this.received.extend_from_slice(&buf[..taken]);
            this.writes.push((false, 1, taken));
            Poll::Ready(Ok(taken))
        }

        fn poll_write_vectored(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
            bufs: &[IoSlice<'_>],
        ) -> Poll<io::Result<usize>> {
            let this = self.get_mut();
            let mut taken = 0;
            for buf in bufs {
                let part = buf.len().min(this.room - taken);
                this.received.extend_from_slice(&buf[..part]);
                taken += part;
            }
            this.writes.push((true, bufs.len(), taken));
            Poll::Ready(Ok(taken))
        }

        fn is_write_vectored(&self) -> bool {
            true
        }

        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }

        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    async fn written(room: usize, parts: &[&[u8]]) -> (usize, Recorder) {
        let mut socket = Coalescing::new(Recorder {
            room,
            ..Recorder::default()
        });
        let slices: Vec<IoSlice<'_>> = parts.iter().map(|part| IoSlice::new(part)).collect();
        let count = socket.write_vectored(&slices).await.unwrap();
        assert!(socket.is_write_vectored());
        (count, socket.inner)
    }

    #[tokio::test]
    async fn small_vectors_go_as_one_buffer() {
        let (count, socket) = written(usize::MAX, &[b"HTTP/1.1 200 OK\r\n\r\n", b"{}"]).await;
        assert_eq!(count, 21);
        assert_eq!(socket.received, b"HTTP/1.1 200 OK\r\n\r\n{}");
        assert_eq!(socket.writes, [(false, 1, 21)]);
    }

    #[tokio::test]
    async fn a_short_write_counts_the_bytes_of_the_whole_taken() {
        let (count, socket) = written(5, &[b"abc", b"defg"]).await;
        assert_eq!(count, 5);
        assert_eq!(socket.received, b"abcde");
    }

    #[tokio::test]
    async fn one_vector_and_large_ones_go_as_they_came() {
        let (_, socket) = written(usize::MAX, &[b"alone"]).await;
        assert_eq!(socket.writes, [(true, 1, 5)]);
        let head = [b'h'; 100];
        let body = vec![b'b'; COALESCE_UP_TO];
        let (count, socket) = written(usize::MAX, &[&head, &body]).await;
        assert_eq!(count, COALESCE_UP_TO + 100);
        assert_eq!(socket.writes, [(true, 2, COALESCE_UP_TO + 100)]);
        let fits = vec![b'b'; COALESCE_UP_TO - 100];
        let (_, socket) = written(usize::MAX, &[&head, &fits]).await;
        assert_eq!(socket.writes, [(false, 1, COALESCE_UP_TO)]);
    }
}
