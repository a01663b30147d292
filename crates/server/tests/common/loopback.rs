//! The server's programs in this process, behind the raw client: every call is handed to the
//! dispatcher in a buffer whose release is observed, as the RDMA transport hands over a
//! registered bulk buffer, and READ payloads go into tracked transport buffers. A call buffer
//! or a transport buffer still referenced once the reply is out is a leak of the transport's
//! pool: `send` panics, naming the call.

use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use sunrpc::{BulkAlloc, BulkBuf, Dispatcher, Origin, TransportKind};

/// Memory counted in `out` until the last reference to it goes.
struct Counted {
    data: Vec<u8>,
    out: Arc<AtomicUsize>,
}

impl Counted {
    fn new(data: Vec<u8>, out: &Arc<AtomicUsize>) -> Self {
        out.fetch_add(1, Ordering::SeqCst);
        Counted {
            data,
            out: out.clone(),
        }
    }
}

impl AsRef<[u8]> for Counted {
    fn as_ref(&self) -> &[u8] {
        &self.data
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.out.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Transport buffers for READ payloads, counting those not yet released.
#[derive(Default)]
struct Bulk {
    out: Arc<AtomicUsize>,
    handed: AtomicUsize,
}

impl BulkAlloc for Bulk {
    fn alloc(&self, len: usize) -> Option<Box<dyn BulkBuf>> {
        self.handed.fetch_add(1, Ordering::SeqCst);
        Some(Box::new(Counted::new(vec![0; len], &self.out)))
    }
}

impl BulkBuf for Counted {
    fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.data
    }

    fn freeze(mut self: Box<Self>, len: usize) -> Bytes {
        self.data.truncate(len);
        Bytes::from_owner(*self)
    }
}

/// rnfsd's programs (NFSv3, MOUNT, NFSv4) over one export, served in this process.
pub struct LocalServer {
    disp: Arc<Dispatcher>,
    bulk: Arc<Bulk>,
}

impl LocalServer {
    /// Serves `export` (rw for 127.0.0.0/8, insecure) with the handle key in `state_dir`
    /// (NFSv4 client records in memory).
    pub fn new(export: &Path, state_dir: &Path) -> LocalServer {
        let text = format!("{} 127.0.0.0/8(rw,insecure)\n", export.display());
        let exports = vfs::exports::parse_exports(&text, "loopback").expect("exports");
        let vfs = Arc::new(
            vfs::Vfs::new(vfs::VfsConfig {
                exports,
                state_dir: state_dir.to_path_buf(),
                fd_cache: 64,
            })
            .expect("vfs"),
        );
        let metrics = Arc::new(sunrpc::metrics::RpcMetrics::default());
        let mut disp = Dispatcher::new(64, metrics);
        disp.register(Arc::new(nfs3::Nfs3::new(vfs.clone())));
        disp.register(Arc::new(nfs3::Mount::new(vfs.clone())));
        disp.register(Arc::new(nfs4::Nfs4::new(vfs)));
        LocalServer {
            disp: Arc::new(disp),
            bulk: Arc::new(Bulk::default()),
        }
    }

    /// Transport buffers handed to READ so far.
    pub fn bulk_handed(&self) -> usize {
        self.bulk.handed.load(Ordering::SeqCst)
    }

    /// A connection to it.
    pub fn connect(&self) -> Loopback {
        Loopback {
            disp: self.disp.clone(),
            bulk: self.bulk.clone(),
            sent: Vec::new(),
            record: Vec::new(),
            replies: VecDeque::new(),
        }
    }
}

/// One client connection to a [`LocalServer`]: record-marked bytes in, replies out.
pub struct Loopback {
    disp: Arc<Dispatcher>,
    bulk: Arc<Bulk>,
    sent: Vec<u8>,
    record: Vec<u8>,
    replies: VecDeque<u8>,
}

fn word(b: &[u8], i: usize) -> u32 {
    b.get(i * 4..i * 4 + 4)
        .map_or(0, |w| u32::from_be_bytes([w[0], w[1], w[2], w[3]]))
}

impl Loopback {
    /// Takes record-marked bytes; serves each call as soon as its record is complete.
    pub fn send(&mut self, bytes: &[u8]) {
        self.sent.extend_from_slice(bytes);
        while self.sent.len() >= 4 {
            let h = word(&self.sent, 0);
            let len = (h & 0x7fff_ffff) as usize;
            if self.sent.len() < 4 + len {
                break;
            }
            self.record.extend_from_slice(&self.sent[4..4 + len]);
            self.sent.drain(..4 + len);
            if h & 0x8000_0000 != 0 {
                let call = std::mem::take(&mut self.record);
                self.serve(call);
            }
        }
    }

    fn serve(&mut self, call: Vec<u8>) {
        let what = format!(
            "xid {:#x} program {} version {} procedure {}",
            word(&call, 0),
            word(&call, 3),
            word(&call, 4),
            word(&call, 5)
        );
        let calls = Arc::new(AtomicUsize::new(0));
        let msg = Bytes::from_owner(Counted::new(call, &calls));
        let origin = Origin {
            peer: SocketAddr::from(([127, 0, 0, 1], 40000)),
            local: None,
            transport: TransportKind::Rdma,
            back: None,
            bulk: Some(self.bulk.clone()),
            pages: false,
            client: None,
        };
        let reply = self.disp.dispatch_from(msg, origin);
        let bytes = reply.as_ref().map(xdr::Reply::to_bytes);
        drop(reply);
        assert_eq!(
            calls.load(Ordering::SeqCst),
            0,
            "{what}: the server still holds part of the call after its reply"
        );
        assert_eq!(
            self.bulk.out.load(Ordering::SeqCst),
            0,
            "{what}: the server still holds a transport buffer after its reply"
        );
        if let Some(b) = bytes {
            self.replies
                .extend((0x8000_0000u32 | b.len() as u32).to_be_bytes());
            self.replies.extend(&b[..]);
        }
    }

    /// Reads reply bytes; a read with nothing to read is an error (no reply will come).
    pub fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.replies.is_empty() && !buf.is_empty() {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "no reply"));
        }
        let n = buf.len().min(self.replies.len());
        for (d, s) in buf.iter_mut().zip(self.replies.drain(..n)) {
            *d = s;
        }
        Ok(n)
    }
}
