//! READ data as page-cache pages held in a pipe: `splice` moves a file's pages into the pipe
//! (references, no copy) on the worker thread that runs the READ, and the TCP transport splices
//! them from the pipe into its socket, so the bytes are never copied through our memory (the
//! in-kernel server sends READ data the same way). Over loopback the receiver still copies them
//! once; over a network the NIC reads them from the page cache.
//!
//! Pipes come from a bounded pool: each holds up to [`MAX_IO`] bytes of pages, so the pages a
//! server holds for unsent replies are bounded too. Without a pipe, READ copies as before.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use parking_lot::Mutex;

use crate::fs::MAX_IO;
use crate::sys;

/// Pipes at most, in use or idle (two descriptors each).
pub const MAX_PIPES: usize = 128;

/// READs smaller than this copy: below it a copy costs less than the pipe's system calls.
pub const SPLICE_MIN: usize = 64 * 1024;

/// Capacity asked of each pipe: a READ of [`MAX_IO`] bytes at an offset that is not page
/// aligned spans one page more, and pipe sizes are powers of two pages.
const PIPE_SIZE: usize = 2 * MAX_IO as usize;

/// A pipe: read end, write end and the pages it holds.
#[derive(Debug)]
pub(crate) struct Pipe {
    rd: OwnedFd,
    wr: OwnedFd,
    pages: usize,
}

impl Pipe {
    /// The write end, which a file's pages are spliced into.
    pub(crate) fn write_end(&self) -> BorrowedFd<'_> {
        self.wr.as_fd()
    }

    /// Whether `len` bytes at `offset` of a file fit: each page they touch takes a slot.
    pub(crate) fn holds(&self, offset: u64, len: usize) -> bool {
        let first = (offset % PAGE) as usize;
        (first + len).div_ceil(PAGE as usize) <= self.pages
    }
}

/// Page size of the pipe's slots (the smallest the kernel uses).
const PAGE: u64 = 4096;

/// The pool of empty pipes.
#[derive(Debug, Default)]
pub(crate) struct PipePool {
    idle: Mutex<Vec<Pipe>>,
    /// Pipes that exist (idle or holding pages).
    live: AtomicUsize,
}

impl PipePool {
    /// An empty pipe: an idle one, or a new one while fewer than [`MAX_PIPES`] exist. None when
    /// all are in use or the system gives no more.
    pub(crate) fn get(&self) -> Option<Pipe> {
        if let Some(p) = self.idle.lock().pop() {
            return Some(p);
        }
        if self.live.fetch_add(1, Ordering::AcqRel) >= MAX_PIPES {
            self.live.fetch_sub(1, Ordering::AcqRel);
            return None;
        }
        // as root: a pipe larger than fs.pipe-max-size needs CAP_SYS_RESOURCE, which a
        // caller's credentials lack
        match crate::cred::as_root(new_pipe) {
            Ok(p) => Some(p),
            Err(e) => {
                self.live.fetch_sub(1, Ordering::AcqRel);
                tracing::debug!(error = %e, "no pipe for a spliced READ");
                None
            }
        }
    }

    /// Takes back a pipe: kept when it is empty, closed when it may still hold bytes.
    pub(crate) fn put(&self, pipe: Pipe, empty: bool) {
        if empty {
            self.idle.lock().push(pipe);
        } else {
            self.live.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

fn new_pipe() -> io::Result<Pipe> {
    let (rd, wr) = sys::pipe()?;
    // Without CAP_SYS_RESOURCE no pipe exceeds fs.pipe-max-size (1 MiB by default): a READ
    // of MAX_IO bytes that is not page aligned then does not fit, and is copied.
    let bytes = sys::set_pipe_size(wr.as_fd(), PIPE_SIZE)
        .or_else(|_| sys::set_pipe_size(wr.as_fd(), MAX_IO as usize))?;
    let pages = bytes / PAGE as usize;
    Ok(Pipe { rd, wr, pages })
}

/// Where the bytes of a [`FilePages`] are.
#[derive(Debug)]
enum Held {
    /// In the pipe: `left` bytes not yet moved out.
    Pipe { pipe: Pipe, left: usize },
    /// Read into memory (for a reply cache): `sent` bytes already went to the socket.
    Memory { bytes: Bytes, sent: usize },
    /// Moved out, the pipe back in the pool.
    Done,
}

/// READ data held as pages in a pipe (see the module documentation).
#[derive(Debug)]
pub struct FilePages {
    len: usize,
    held: Mutex<Held>,
    pool: Arc<PipePool>,
}

impl FilePages {
    /// `len` bytes just spliced into `pipe`.
    pub(crate) fn new(pipe: Pipe, len: usize, pool: Arc<PipePool>) -> Self {
        Self {
            len,
            held: Mutex::new(Held::Pipe { pipe, left: len }),
            pool,
        }
    }
}

impl FilePages {
    /// Returns the pipe to the pool (kept only if emptied); the bytes are then gone.
    fn give_back(&self, held: &mut Held) {
        if let Held::Pipe { pipe, left } = std::mem::replace(held, Held::Done) {
            self.pool.put(pipe, left == 0);
        }
    }
}

impl payload::Pages for FilePages {
    fn len(&self) -> usize {
        self.len
    }

    fn splice_to(&self, to: BorrowedFd<'_>, max: usize, more: bool) -> io::Result<usize> {
        let mut held = self.held.lock();
        let n = match &mut *held {
            Held::Pipe { pipe, left } => {
                let mut flags = libc::SPLICE_F_NONBLOCK | libc::SPLICE_F_MOVE;
                if more {
                    flags |= libc::SPLICE_F_MORE;
                }
                let n = sys::splice(pipe.rd.as_fd(), None, to, max.min(*left), flags)?;
                *left -= n;
                n
            }
            Held::Memory { bytes, sent } => {
                let rest = &bytes[*sent..];
                let n = sys::send(to, &rest[..max.min(rest.len())], more)?;
                *sent += n;
                n
            }
            Held::Done => 0,
        };
        if matches!(&*held, Held::Pipe { left: 0, .. }) {
            self.give_back(&mut held);
        }
        if n == 0 && max > 0 {
            // nothing left to send although the caller counts some: ending the stream is
            // better than sending a record shorter than its header says
            return Err(io::Error::new(
                io::ErrorKind::WriteZero,
                "spliced READ data ran out",
            ));
        }
        Ok(n)
    }

    fn to_bytes(&self) -> io::Result<Bytes> {
        let mut held = self.held.lock();
        let in_pipe = match std::mem::replace(&mut *held, Held::Done) {
            Held::Pipe { pipe, left } => Some((pipe, left)),
            other => {
                *held = other; // bytes already in memory stay for the next call
                None
            }
        };
        if let Some((pipe, left)) = in_pipe {
            let mut buf = BytesMut::zeroed(left);
            let mut got = 0;
            while got < buf.len() {
                match sys::read(pipe.rd.as_fd(), &mut buf[got..]) {
                    Ok(0) => break,
                    Ok(n) => got += n,
                    Err(e) => {
                        // what was read is lost with the pipe: nothing more can be sent
                        self.pool.put(pipe, false);
                        return Err(e);
                    }
                }
            }
            self.pool.put(pipe, got == left);
            if got < left {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            *held = Held::Memory {
                bytes: buf.freeze(),
                sent: 0,
            };
        }
        Ok(match &*held {
            Held::Memory { bytes, sent } => bytes.slice(*sent..),
            _ => Bytes::new(),
        })
    }
}

impl Drop for FilePages {
    fn drop(&mut self) {
        let mut held = std::mem::replace(self.held.get_mut(), Held::Done);
        self.give_back(&mut held);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use payload::Pages;

    #[test]
    fn the_pool_keeps_empty_pipes_and_closes_the_others() {
        let pool = Arc::new(PipePool::default());
        let all: Vec<Pipe> = std::iter::from_fn(|| pool.get())
            .take(MAX_PIPES + 1)
            .collect();
        assert_eq!(all.len(), MAX_PIPES, "no more than MAX_PIPES pipes exist");
        assert!(pool.get().is_none());
        let mut all = all.into_iter();
        // a payload dropped with bytes left closes its pipe: a new one may be made
        let p = all.next().unwrap();
        drop(FilePages::new(p, 10, pool.clone()));
        assert_eq!(pool.live.load(Ordering::Acquire), MAX_PIPES - 1);
        assert_eq!(pool.idle.lock().len(), 0);
        let again = pool.get().expect("a new pipe");
        // an empty one goes back to the pool
        drop(FilePages::new(again, 0, pool.clone()));
        assert_eq!(pool.idle.lock().len(), 1);
        assert_eq!(pool.live.load(Ordering::Acquire), MAX_PIPES);
        for p in all {
            pool.put(p, true);
        }
        assert_eq!(pool.idle.lock().len(), MAX_PIPES);
    }

    #[test]
    fn pages_read_into_memory_are_sent_from_there() {
        let pool = Arc::new(PipePool::default());
        let pipe = pool.get().expect("pipe");
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        // the bytes go into the pipe as spliced pages would
        let mut w = std::fs::File::from(pipe.wr.try_clone().unwrap());
        std::io::Write::write_all(&mut w, &data).unwrap();
        let pages = FilePages::new(pipe, data.len(), pool.clone());
        let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
        // some leave from the pipe, then the rest is read into memory and leaves from there
        let n = pages.splice_to(a.as_fd(), 40_000, true).unwrap();
        assert!(n > 0 && n <= 40_000);
        let rest = pages.to_bytes().unwrap();
        assert_eq!(&rest[..], &data[n..]);
        let again = pages.to_bytes().unwrap();
        assert_eq!(again, rest, "asked twice, the same bytes");
        assert_eq!(
            pool.idle.lock().len(),
            1,
            "the emptied pipe is back in the pool"
        );
        let mut sent = n;
        while sent < data.len() {
            sent += pages
                .splice_to(a.as_fd(), data.len() - sent, false)
                .unwrap();
        }
        drop(a);
        let mut got = Vec::new();
        std::io::Read::read_to_end(&mut &b, &mut got).unwrap();
        assert!(got == data);
    }
}
