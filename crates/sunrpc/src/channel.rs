//! A persistent RPC connection to one server over TCP with many calls in flight: what a pNFS
//! metadata server keeps to each of its data servers. Calls are made from blocking threads (the
//! operation handlers); a reader thread per connection hands each reply to the call with its
//! transaction id. A call that gets no reply in time is sent again with the same id (the
//! server's duplicate request cache answers a retransmission of a non-idempotent call); a
//! connection that breaks fails the calls waiting on it, and the next call connects again, not
//! before a back-off after a failed connect, so that a server that is down costs callers no
//! more than an error.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, SyncSender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use parking_lot::Mutex;
use xdr::{Decoder, Encode, Encoder, Reply};

use crate::client::CallError;
use crate::msg::{self, Credential};

/// How a [`Channel`] calls.
#[derive(Debug, Clone)]
pub struct ChannelOpts {
    /// Time a call waits for its reply before it is sent again.
    pub timeout: Duration,
    /// Transmissions of a call in all.
    pub tries: u32,
    /// Time a connect may take.
    pub connect_timeout: Duration,
    /// After a failed connect, calls fail at once for this long instead of connecting again.
    pub backoff: Duration,
    /// Call from a port below 1024 (knfsd refuses other ports under its default `secure`).
    pub reserved_port: bool,
    /// The local address calls come from; None: as routing chooses.
    pub from: Option<IpAddr>,
    /// Largest reply record accepted (a READ reply of the largest count, with its header).
    pub max_reply: usize,
}

impl Default for ChannelOpts {
    fn default() -> Self {
        ChannelOpts {
            timeout: Duration::from_secs(10),
            tries: 3,
            connect_timeout: Duration::from_secs(3),
            backoff: Duration::from_secs(1),
            reserved_port: true,
            from: None,
            max_reply: (1 << 20) + 64 * 1024,
        }
    }
}

/// A persistent, multiplexed RPC connection to `addr` (see the module comment).
pub struct Channel {
    addr: SocketAddr,
    opts: ChannelOpts,
    slot: Mutex<Slot>,
}

/// The current connection, or when the last connect failed.
#[derive(Default)]
struct Slot {
    conn: Option<Arc<Conn>>,
    failed: Option<(Instant, io::ErrorKind)>,
}

/// One TCP connection: the writing half under a lock, the calls awaiting replies.
struct Conn {
    writer: Mutex<TcpStream>,
    pending: Mutex<HashMap<u32, SyncSender<Bytes>>>,
    broken: AtomicBool,
}

impl Conn {
    /// Takes the connection out of use: its reader ends, its waiting calls fail.
    fn kill(&self) {
        self.broken.store(true, Ordering::Release);
        let _ = self.writer.lock().shutdown(Shutdown::Both);
        self.pending.lock().clear();
    }

    fn send(&self, msg: &Reply) -> io::Result<()> {
        let mut w = self.writer.lock();
        w.write_all(&crate::record::record_header(msg.wire_len()))?;
        // small calls in one write; bulk payloads (WRITE data) as they are, without a copy
        if msg.wire_len() <= 64 * 1024 {
            return w.write_all(&msg.to_bytes());
        }
        for s in &msg.segments {
            match s {
                xdr::Segment::Inline(b) | xdr::Segment::Bulk(b) => w.write_all(b)?,
                xdr::Segment::Pages(p) | xdr::Segment::BodyPages(p) => {
                    w.write_all(&p.to_bytes()?)?
                }
            }
            w.write_all(&[0u8; 3][..s.padding()])?;
        }
        Ok(())
    }
}

impl Channel {
    /// A channel to `addr`; nothing is connected before the first call.
    pub fn new(addr: SocketAddr, opts: ChannelOpts) -> Self {
        Channel {
            addr,
            opts,
            slot: Mutex::new(Slot::default()),
        }
    }

    /// The server's address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Whether a connection is up now (without trying to make one).
    pub fn connected(&self) -> bool {
        self.slot
            .lock()
            .conn
            .as_ref()
            .is_some_and(|c| !c.broken.load(Ordering::Acquire))
    }

    /// Makes the call `prog`/`vers`/`proc_` as `cred` and returns a decoder at the start of its
    /// results (after an accepted, successful reply header).
    pub fn call(
        &self,
        prog: u32,
        vers: u32,
        proc_: u32,
        cred: &Credential,
        args: &dyn Encode,
    ) -> Result<Decoder, CallError> {
        let xid = crate::callback::next_xid();
        let mut e = Encoder::with_capacity(256);
        msg::encode_call(&mut e, xid, prog, vers, proc_, cred);
        args.encode(&mut e);
        let call = e.finish();
        let mut last = CallError::Timeout;
        for _ in 0..self.opts.tries.max(1) {
            let conn = self.conn()?;
            let (tx, rx) = mpsc::sync_channel(1);
            conn.pending.lock().insert(xid, tx);
            if let Err(e) = conn.send(&call) {
                conn.kill();
                last = CallError::Io(e);
                continue;
            }
            match rx.recv_timeout(self.opts.timeout) {
                Ok(reply) => return msg::decode_success(reply).ok_or(CallError::Rejected),
                Err(RecvTimeoutError::Timeout) => {
                    conn.pending.lock().remove(&xid);
                    last = CallError::Timeout;
                }
                Err(RecvTimeoutError::Disconnected) => {
                    last = CallError::Io(io::ErrorKind::ConnectionReset.into());
                }
            }
        }
        // a server that answers nothing may hold a dead connection: the next call starts anew
        if matches!(last, CallError::Timeout) {
            if let Some(c) = self.slot.lock().conn.take() {
                c.kill();
            }
        }
        Err(last)
    }

    /// The live connection, or a new one.
    fn conn(&self) -> Result<Arc<Conn>, CallError> {
        let mut slot = self.slot.lock();
        if let Some(c) = &slot.conn {
            if !c.broken.load(Ordering::Acquire) {
                return Ok(c.clone());
            }
        }
        slot.conn = None;
        if let Some((at, kind)) = slot.failed {
            if at.elapsed() < self.opts.backoff {
                return Err(CallError::Io(kind.into()));
            }
        }
        match self.connect() {
            Ok(c) => {
                slot.failed = None;
                slot.conn = Some(c.clone());
                Ok(c)
            }
            Err(e) => {
                slot.failed = Some((Instant::now(), e.kind()));
                Err(CallError::Io(e))
            }
        }
    }

    fn connect(&self) -> io::Result<Arc<Conn>> {
        let addr = self.addr;
        let sock = crate::client::tcp_socket_from_first(
            addr,
            self.opts.from,
            self.opts.reserved_port,
            |s| s.connect_timeout(&addr.into(), self.opts.connect_timeout),
        )?;
        sock.set_tcp_nodelay(true)?;
        sock.set_keepalive(true)?;
        let stream: TcpStream = sock.into();
        let reader = stream.try_clone()?;
        let conn = Arc::new(Conn {
            writer: Mutex::new(stream),
            pending: Mutex::new(HashMap::new()),
            broken: AtomicBool::new(false),
        });
        let c = conn.clone();
        let max = self.opts.max_reply;
        std::thread::Builder::new()
            .name(format!("rpc-to-{addr}"))
            .spawn(move || {
                let why = read_replies(reader, &c, max);
                tracing::debug!(%addr, ?why, "RPC channel closed");
                c.kill();
            })?;
        Ok(conn)
    }
}

impl Drop for Channel {
    fn drop(&mut self) {
        if let Some(c) = self.slot.get_mut().conn.take() {
            c.kill();
        }
    }
}

/// Reads reply records until the connection ends, handing each to its call.
fn read_replies(mut s: TcpStream, conn: &Conn, max: usize) -> io::Error {
    loop {
        let rec = match read_record(&mut s, max) {
            Ok(r) => r,
            Err(e) => return e,
        };
        if conn.broken.load(Ordering::Acquire) {
            return io::ErrorKind::ConnectionAborted.into();
        }
        if rec.len() < 8 || rec[4..8] != 1u32.to_be_bytes() {
            return io::Error::new(io::ErrorKind::InvalidData, "not a reply");
        }
        let xid = u32::from_be_bytes([rec[0], rec[1], rec[2], rec[3]]);
        // a reply to a call that gave up waiting is dropped
        if let Some(tx) = conn.pending.lock().remove(&xid) {
            let _ = tx.try_send(rec);
        }
    }
}

/// One record (its fragments joined), at most `max` bytes.
fn read_record(s: &mut TcpStream, max: usize) -> io::Result<Bytes> {
    let mut rec = Vec::new();
    loop {
        let mut hdr = [0u8; 4];
        s.read_exact(&mut hdr)?;
        let word = u32::from_be_bytes(hdr);
        let len = (word & 0x7fff_ffff) as usize;
        if rec.len() + len > max {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "reply too large",
            ));
        }
        let at = rec.len();
        rec.resize(at + len, 0);
        s.read_exact(&mut rec[at..])?;
        if word & 0x8000_0000 != 0 {
            return Ok(Bytes::from(rec));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// A u32 argument.
    struct Word(u32);
    impl Encode for Word {
        fn encode(&self, e: &mut Encoder) {
            e.u32(self.0);
        }
    }

    fn opts() -> ChannelOpts {
        ChannelOpts {
            timeout: Duration::from_millis(300),
            tries: 2,
            reserved_port: false,
            backoff: Duration::from_millis(100),
            ..ChannelOpts::default()
        }
    }

    /// Reads one call: its xid and its u32 argument.
    fn read_call(s: &mut TcpStream) -> io::Result<(u32, u32)> {
        let rec = read_record(s, 1 << 20)?;
        let (h, mut d) = msg::decode_call(rec).map_err(|_| io::ErrorKind::InvalidData)?;
        Ok((h.xid, d.u32().map_err(|_| io::ErrorKind::InvalidData)?))
    }

    fn reply(s: &mut TcpStream, xid: u32, v: u32) {
        let mut e = Encoder::new();
        msg::encode_accepted(&mut e, xid, msg::AcceptStat::Success);
        e.u32(v);
        let b = e.finish().to_bytes();
        s.write_all(&crate::record::record_header(b.len())).unwrap();
        s.write_all(&b).unwrap();
    }

    /// Calls in flight together on one connection get their own replies, answered in the
    /// reverse order of their arrival.
    #[test]
    fn replies_out_of_order_reach_their_calls() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let calls: Vec<_> = (0..4).map(|_| read_call(&mut s).unwrap()).collect();
            for (xid, v) in calls.into_iter().rev() {
                reply(&mut s, xid, v * 10);
            }
            // held open until the channel goes
            let _ = read_call(&mut s);
        });
        let ch = Arc::new(Channel::new(addr, opts()));
        let handles: Vec<_> = (1..=4u32)
            .map(|i| {
                let ch = ch.clone();
                std::thread::spawn(move || {
                    let mut d = ch.call(1, 1, 1, &Credential::None, &Word(i)).unwrap();
                    assert_eq!(d.u32().unwrap(), i * 10);
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert!(ch.connected());
    }

    /// An unanswered call is sent again with the same xid; a lost connection is made again
    /// by the next call.
    #[test]
    fn retransmits_then_reconnects() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let (xid1, v) = read_call(&mut s).unwrap();
            // the first transmission goes unanswered; the retransmission carries its xid
            let (xid2, _) = read_call(&mut s).unwrap();
            assert_eq!(xid1, xid2);
            reply(&mut s, xid2, v + 1);
            drop(s);
            let (mut s, _) = l.accept().unwrap();
            let (xid, v) = read_call(&mut s).unwrap();
            reply(&mut s, xid, v + 2);
        });
        let ch = Channel::new(addr, opts());
        let mut d = ch.call(1, 1, 1, &Credential::None, &Word(5)).unwrap();
        assert_eq!(d.u32().unwrap(), 6);
        // the server closed: wait for the reader to see it, then the next call reconnects
        let t = Instant::now();
        while ch.connected() && t.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(10));
        }
        let mut d = ch.call(1, 1, 1, &Credential::None, &Word(7)).unwrap();
        assert_eq!(d.u32().unwrap(), 9);
        server.join().unwrap();
    }

    /// A server that is down fails the call; within the back-off the next call fails at
    /// once without connecting.
    #[test]
    fn a_refused_connect_backs_off() {
        let addr = {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap()
        };
        let ch = Channel::new(
            addr,
            ChannelOpts {
                backoff: Duration::from_secs(30),
                ..opts()
            },
        );
        let r = ch.call(1, 1, 1, &Credential::None, &Word(1));
        assert!(
            matches!(&r, Err(CallError::Io(e)) if e.kind() == io::ErrorKind::ConnectionRefused),
            "{r:?}"
        );
        // a listener appears, but the back-off holds
        let _l = TcpListener::bind(addr).unwrap();
        let r = ch.call(1, 1, 1, &Credential::None, &Word(1));
        assert!(
            matches!(&r, Err(CallError::Io(e)) if e.kind() == io::ErrorKind::ConnectionRefused),
            "{r:?}"
        );
    }

    /// A reply larger than the bound ends the connection instead of being read.
    #[test]
    fn an_oversized_reply_is_refused() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let _ = read_call(&mut s);
            let _ = s.write_all(&crate::record::record_header(1 << 30));
            std::thread::sleep(Duration::from_secs(1));
        });
        let ch = Channel::new(
            addr,
            ChannelOpts {
                tries: 1,
                timeout: Duration::from_secs(5),
                ..opts()
            },
        );
        let r = ch.call(1, 1, 1, &Credential::None, &Word(1));
        assert!(matches!(r, Err(CallError::Io(_))), "{r:?}");
    }
}
