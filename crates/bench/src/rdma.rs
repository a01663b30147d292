//! RPC-over-RDMA version 1 (RFC 8166) as a requester, so that the benchmark measures a server's
//! RDMA transport with the same modes as its TCP one.
//!
//! A call goes inline in one Send (RDMA_MSG). A call too large for the negotiated inline size
//! moves its DDP-eligible payloads (WRITE data, encoded with `opaque_bulk`) into Read chunks
//! that the server pulls (RFC 8267). A reply that ends with a DDP-eligible item (READ data) gets
//! a Write chunk; one that may exceed the inline size (READDIR, READ_PLUS) gets a Reply chunk.
//!
//! Every chunk names a buffer of the device's pool, registered once with remote access when the
//! devices are opened: no memory is registered per call. A Write chunk starts [`DATA_AT`] bytes
//! into its buffer so that the inline part of the reply can be copied in front of the data that
//! the server placed, giving the caller one contiguous reply without copying the payload.
//!
//! The pool's R_key covers the whole pool, so the server could write anywhere in it: acceptable
//! for a load generator, not for a production client (which registers per call or uses FRWR).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use parking_lot::Mutex;
use rpcrdma::header::{Header, Proc, RdmaSegment, ReadChunk, WriteChunk, RPCRDMA_VERSION};
use rpcrdma::{InlineConfig, Limits, Negotiated, PrivateData};
use tokio::sync::{oneshot, Notify};
use verbs::{
    Batch, Buf, Class, Completion, ConnectOptions, Device, Endpoint, PoolConfig, PostError,
    WorkRequest,
};
use xdr::Segment;

use crate::rpc::RpcError;

/// Offset of a Write chunk in its buffer: room for the inline part of the reply before it.
pub const DATA_AT: usize = 8192;

/// Our inline send and receive size (the size of the pool's Send and Receive buffers).
const INLINE: usize = 4096;

/// Credits asked for in every call; the server's grant bounds the calls in flight.
const CREDITS_WANTED: u32 = 128;

/// Bytes per bulk buffer: a 1 MiB payload after [`DATA_AT`], plus its XDR padding.
const BULK_SIZE: usize = (1 << 20) + DATA_AT + 4;

/// Bulk buffers of the process (each call with a chunk holds one or two until its reply).
static BULK_COUNT: OnceLock<usize> = OnceLock::new();

/// Sets how many bulk buffers the devices get, before the first RDMA connection.
pub fn set_bulk_buffers(n: usize) {
    let _ = BULK_COUNT.set(n.max(2));
}

/// The RDMA devices, opened once per process with a pool the server may read and write.
fn devices() -> Result<&'static [Arc<Device>], RpcError> {
    static DEVICES: OnceLock<Result<Vec<Arc<Device>>, String>> = OnceLock::new();
    DEVICES
        .get_or_init(|| {
            let cfg = PoolConfig {
                recv_count: 1024,
                recv_size: INLINE,
                send_count: 1024,
                send_size: INLINE,
                bulk_count: *BULK_COUNT.get_or_init(|| 64),
                bulk_size: BULK_SIZE,
                remote_access: true,
            };
            verbs::open_devices(cfg).map_err(|e| e.to_string())
        })
        .as_ref()
        .map(Vec::as_slice)
        .map_err(|e| RpcError::Io(format!("RDMA unavailable: {e}")))
}

/// What the caller knows of a reply's shape; RPC-over-RDMA provisions memory for it (TCP needs
/// nothing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// The reply fits the inline size.
    Small,
    /// The reply ends with a DDP-eligible opaque (READ data) of at most this many bytes.
    DataLast(u32),
    /// The reply may be up to this many bytes (a listing, READ_PLUS).
    Large(u32),
}

/// A call waiting for its reply, with the memory the server may write or read for it.
struct Pending {
    tx: Option<oneshot::Sender<Result<Bytes, RpcError>>>,
    /// Write chunk target (the reply's last item lands at [`DATA_AT`]) and its size.
    data: Option<(Buf, u32)>,
    /// Reply chunk target.
    reply: Option<Buf>,
    /// Read chunk sources, kept until the reply: the server has pulled them by then.
    _sources: Vec<Bytes>,
}

struct State {
    pending: HashMap<u32, Pending>,
    /// Credits the server granted in its latest reply (1 until the first one).
    granted: u32,
    /// Calls sent and not answered.
    outstanding: u32,
    /// Why the connection cannot be used any more.
    closed: Option<String>,
}

/// One RPC-over-RDMA connection.
pub struct RdmaConn {
    ep: Arc<Endpoint>,
    inline: Negotiated,
    limits: Limits,
    st: Mutex<State>,
    /// Wakes callers waiting for a credit.
    credit: Notify,
    token: AtomicU64,
    rx_bytes: Arc<AtomicU64>,
    /// The completion task, stopped with the connection (it may be waiting for an event that
    /// never comes once the connection is closed).
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Drop for RdmaConn {
    fn drop(&mut self) {
        self.ep.disconnect();
        if let Some(t) = self.task.lock().take() {
            t.abort();
        }
    }
}

impl RdmaConn {
    /// Connects to the server's RPC-over-RDMA port at `addr`; received bytes are counted in
    /// `rx_bytes`. The completion task stops when the connection fails or is dropped.
    pub async fn connect(
        addr: SocketAddr,
        rx_bytes: Arc<AtomicU64>,
    ) -> Result<Arc<RdmaConn>, RpcError> {
        let devs = devices()?;
        let ours = InlineConfig::new(INLINE as u32, INLINE as u32);
        let opts = ConnectOptions {
            send_depth: 2 * CREDITS_WANTED + 16,
            recv_depth: CREDITS_WANTED + 16,
            max_send_sge: 4,
            private_data: ours.private_data().encode().to_vec(),
            resolve_timeout: Duration::from_secs(5),
        };
        let (ep, pd) = Endpoint::connect(devs, addr, &opts)
            .await
            .map_err(|e| RpcError::Io(format!("RDMA connect to {addr}: {e}")))?;
        let inline = rpcrdma::negotiate(ours, PrivateData::parse(&pd));
        let c = Arc::new(RdmaConn {
            ep,
            inline,
            limits: Limits {
                max_inline: INLINE,
                ..Limits::default()
            },
            st: Mutex::new(State {
                pending: HashMap::new(),
                granted: 1,
                outstanding: 0,
                closed: None,
            }),
            credit: Notify::new(),
            token: AtomicU64::new(1),
            rx_bytes,
            task: Mutex::new(None),
        });
        let weak = Arc::downgrade(&c);
        *c.task.lock() = Some(tokio::spawn(async move { completions(weak).await }));
        Ok(c)
    }

    /// Sends the call `msg` (an RPC call message starting at its xid) and waits for the reply
    /// record (starting at its xid).
    pub async fn call(
        &self,
        xid: u32,
        msg: xdr::Reply,
        expect: Expect,
        timeout: Duration,
    ) -> Result<Bytes, RpcError> {
        let pool = self.ep.device().pool();
        let rkey = pool.rkey();
        let send_max = self.inline.send as usize;
        let CallPlan {
            inline,
            read_list,
            sources,
        } = plan_call(pool, &msg, send_max).await?;
        let mut write_list = Vec::new();
        let mut reply_chunk = None;
        let mut data = None;
        let mut reply = None;
        match expect {
            Expect::Small => {}
            Expect::DataLast(n) => {
                let n = n.min((BULK_SIZE - DATA_AT - 4) as u32);
                let buf = pool.get(Class::Bulk).await;
                write_list.push(WriteChunk(vec![RdmaSegment {
                    handle: rkey,
                    length: n,
                    offset: buf.addr() + DATA_AT as u64,
                }]));
                data = Some((buf, n));
            }
            Expect::Large(n) => {
                let buf = pool.get(Class::Bulk).await;
                reply_chunk = Some(WriteChunk(vec![RdmaSegment {
                    handle: rkey,
                    length: n.min(BULK_SIZE as u32),
                    offset: buf.addr(),
                }]));
                reply = Some(buf);
            }
        }
        let header = Header {
            xid,
            vers: RPCRDMA_VERSION,
            credits: CREDITS_WANTED,
            proc_: Proc::Msg,
            read_list,
            write_list,
            reply_chunk,
        }
        .encode();
        let len = header.len() + inline.iter().map(Bytes::len).sum::<usize>();
        if len > send_max {
            return Err(RpcError::Io(format!(
                "a call of {len} bytes does not fit the inline size {send_max}"
            )));
        }
        let mut sb = pool.get(Class::Send).await;
        let mut at = 0;
        for piece in std::iter::once(&header).chain(inline.iter()) {
            sb.as_mut_slice()[at..at + piece.len()].copy_from_slice(piece);
            at += piece.len();
        }
        let send = sb.freeze(at);

        let (tx, rx) = oneshot::channel();
        self.take_credit().await?;
        self.st.lock().pending.insert(
            xid,
            Pending {
                tx: Some(tx),
                data,
                reply,
                _sources: sources,
            },
        );
        let token = self.token.fetch_add(1, Ordering::Relaxed);
        let mut tries = 0;
        loop {
            let batch = Batch {
                wrs: vec![WorkRequest::Send {
                    data: vec![send.clone()],
                    invalidate: None,
                }],
                bufs: Vec::new(),
            };
            match self.ep.post(token, batch) {
                Ok(()) => break,
                // Send completions not polled yet: let the completion task run.
                Err(PostError::Full) if tries < 1000 => {
                    tries += 1;
                    tokio::time::sleep(Duration::from_micros(50)).await;
                }
                Err(e) => {
                    let mut st = self.st.lock();
                    st.pending.remove(&xid);
                    st.outstanding -= 1;
                    return Err(RpcError::Io(format!("RDMA post: {e}")));
                }
            }
        }
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(r)) => r,
            Ok(Err(_)) => Err(RpcError::Io("connection closed".into())),
            // The entry stays: its buffers must not be reused before the server is done.
            Err(_) => Err(RpcError::Timeout),
        }
    }

    /// Waits until fewer calls are outstanding than the server granted, and counts this one.
    async fn take_credit(&self) -> Result<(), RpcError> {
        loop {
            let wait = self.credit.notified();
            tokio::pin!(wait);
            wait.as_mut().enable();
            {
                let mut st = self.st.lock();
                if let Some(why) = &st.closed {
                    return Err(RpcError::Io(why.clone()));
                }
                if st.outstanding < st.granted {
                    st.outstanding += 1;
                    return Ok(());
                }
            }
            wait.await;
        }
    }

    /// Fails every waiting call and refuses new ones.
    fn close(&self, why: String) {
        let mut st = self.st.lock();
        if st.closed.is_none() {
            st.closed = Some(why.clone());
        }
        for (_, p) in st.pending.iter_mut() {
            if let Some(tx) = p.tx.take() {
                let _ = tx.send(Err(RpcError::Io(why.clone())));
            }
        }
        drop(st);
        self.credit.notify_waiters();
    }

    /// A received message: the reply of a pending call (or an error report about one).
    fn on_message(&self, msg: Bytes) -> Result<(), String> {
        self.rx_bytes.fetch_add(msg.len() as u64, Ordering::Relaxed);
        let (h, off) = Header::decode(&msg, &self.limits)
            .map_err(|e| format!("bad transport header from the server: {e}"))?;
        let p = {
            let mut st = self.st.lock();
            st.outstanding = st.outstanding.saturating_sub(1);
            st.granted = h.credits.clamp(1, CREDITS_WANTED);
            st.pending.remove(&h.xid)
        };
        self.credit.notify_waiters();
        let Some(mut p) = p else {
            return Ok(());
        };
        let r = match h.proc_ {
            Proc::Msg => {
                let body = msg.slice(off..);
                let written = h.write_list.first().map_or(0, |c| c.capacity());
                match p.data.take() {
                    Some((buf, max)) if written > 0 => {
                        self.rx_bytes.fetch_add(written, Ordering::Relaxed);
                        place_before(buf, max, written, &body)
                    }
                    _ => Ok(body),
                }
            }
            Proc::NoMsg => match (p.reply.take(), &h.reply_chunk) {
                (Some(buf), Some(c)) if c.capacity() as usize <= buf.capacity() => {
                    self.rx_bytes.fetch_add(c.capacity(), Ordering::Relaxed);
                    Ok(buf.freeze(c.capacity() as usize))
                }
                _ => Err(RpcError::Garbage(
                    "RDMA_NOMSG reply without a usable Reply chunk".into(),
                )),
            },
            Proc::Error(k) => Err(RpcError::Io(format!(
                "the server answered RDMA_ERROR {k:?}"
            ))),
        };
        if let Some(tx) = p.tx.take() {
            let _ = tx.send(r);
        }
        Ok(())
    }
}

/// How a call message travels: the bytes sent inline, and the Read chunks (with the pool
/// buffers they name) of the payloads moved out of them.
struct CallPlan {
    inline: Vec<Bytes>,
    read_list: Vec<ReadChunk>,
    sources: Vec<Bytes>,
}

/// Bytes of an inline send kept for the transport header (a Read, Write or Reply chunk).
const HEADER_ROOM: usize = 128;

/// Plans the call `msg` for an inline send size of `send_max`: all inline when it fits, else
/// every bulk payload (WRITE data) copied into a bulk buffer of `pool` and named by a Read
/// chunk at its position in the unreduced message, its XDR padding left out of both the chunk
/// and the inline bytes (RFC 8166 3.4.5).
async fn plan_call(
    pool: &verbs::Pool,
    msg: &xdr::Reply,
    send_max: usize,
) -> Result<CallPlan, RpcError> {
    let mut plan = CallPlan {
        inline: Vec::new(),
        read_list: Vec::new(),
        sources: Vec::new(),
    };
    if msg.wire_len() + HEADER_ROOM <= send_max {
        for s in &msg.segments {
            let Some(b) = s.bytes() else {
                return Err(RpcError::Io("calls are encoded from memory only".into()));
            };
            plan.inline.push(b.clone());
            if let Segment::Bulk(b) = s {
                let pad = xdr::pad4(b.len()) - b.len();
                plan.inline.push(Bytes::from_static(&[0u8; 3][..pad]));
            }
        }
        return Ok(plan);
    }
    let mut position = 0usize;
    for s in &msg.segments {
        match s {
            Segment::Inline(b) => {
                position += b.len();
                plan.inline.push(b.clone());
            }
            Segment::Pages(_) | Segment::BodyPages(_) => {
                return Err(RpcError::Io("calls are encoded from memory only".into()));
            }
            Segment::Bulk(b) => {
                if b.len() > pool.config().bulk_size {
                    return Err(RpcError::Io(format!(
                        "a {}-byte payload is larger than a bulk buffer",
                        b.len()
                    )));
                }
                let mut buf = pool.get(Class::Bulk).await;
                buf.as_mut_slice()[..b.len()].copy_from_slice(b);
                let seg = RdmaSegment {
                    handle: pool.rkey(),
                    length: b.len() as u32,
                    offset: buf.addr(),
                };
                plan.sources.push(buf.freeze(b.len()));
                plan.read_list.push(ReadChunk {
                    position: position as u32,
                    segments: vec![seg],
                });
                position += xdr::pad4(b.len());
            }
        }
    }
    Ok(plan)
}

/// The reply record: the inline part `body` copied just before the `written` bytes the server
/// placed at [`DATA_AT`] in `buf` (the Write chunk of at most `max` bytes), then XDR padding.
fn place_before(mut buf: Buf, max: u32, written: u64, body: &Bytes) -> Result<Bytes, RpcError> {
    let written = written as usize;
    if written > max as usize || body.len() > DATA_AT {
        return Err(RpcError::Garbage(format!(
            "Write chunk of {written} bytes (room {max}) after an inline reply of {}",
            body.len()
        )));
    }
    let start = DATA_AT - body.len();
    let end = DATA_AT + xdr::pad4(written);
    let s = buf.as_mut_slice();
    s[start..DATA_AT].copy_from_slice(body);
    s[DATA_AT + written..end].fill(0);
    Ok(buf.freeze(end).slice(start..))
}

/// Polls the connection's completions until it fails or the connection is dropped.
async fn completions(conn: std::sync::Weak<RdmaConn>) {
    let mut out = Vec::new();
    loop {
        let Some(c) = conn.upgrade() else { return };
        let ep = c.ep.clone();
        out.clear();
        let polled = ep.poll(&mut out).and_then(|n| {
            if n > 0 {
                return Ok(n);
            }
            ep.arm()?;
            ep.poll(&mut out)
        });
        let n = match polled {
            Ok(n) => n,
            Err(e) => {
                c.close(format!("polling completions: {e}"));
                return;
            }
        };
        let srq = ep.device().srq().clone();
        for comp in out.drain(..) {
            match comp {
                Completion::Recv { buf, len, status } => {
                    let msg = Bytes::copy_from_slice(&buf.as_slice()[..len]);
                    srq.give_back(buf);
                    if !status.is_ok() {
                        c.close(format!("receive failed: {status}"));
                        return;
                    }
                    if let Err(e) = c.on_message(msg) {
                        c.close(e);
                        return;
                    }
                }
                Completion::Batch { status, .. } => {
                    if !status.is_ok() {
                        c.close(format!("send failed: {status}"));
                        return;
                    }
                }
            }
        }
        srq.flush();
        if n == 0 {
            drop(c);
            if ep.wait().await.is_err() {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn test_pool(bulk_size: usize) -> verbs::Pool {
        verbs::Pool::new(
            PoolConfig {
                recv_count: 1,
                recv_size: 64,
                send_count: 1,
                send_size: 64,
                bulk_count: 4,
                bulk_size,
                remote_access: false,
            },
            None,
        )
        .expect("pool")
    }

    /// A WRITE-like call: header words, a payload of `n` bytes as a bulk item, trailing words.
    fn write_call(n: usize) -> xdr::Reply {
        let mut e = xdr::Encoder::new();
        for w in [7u32, 0, 2, 100_003, 3, 7] {
            e.u32(w);
        }
        e.opaque(b"fh");
        e.u64(4096);
        e.opaque_bulk(Bytes::from(
            (0..n).map(|i| (i % 253) as u8).collect::<Vec<u8>>(),
        ));
        e.u32(0xdead_beef);
        e.finish()
    }

    #[test]
    fn a_large_call_moves_its_payload_to_a_read_chunk_the_server_puts_back_in_place() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        let pool = test_pool(1 << 16);
        // 5001 bytes: not a multiple of four, so the padding must be left out and restored
        for n in [5001usize, 8192] {
            let msg = write_call(n);
            let plan = rt.block_on(plan_call(&pool, &msg, 4096)).expect("planned");
            assert_eq!(plan.read_list.len(), 1);
            assert_eq!(plan.sources[0].len(), n);
            let inline: Vec<u8> = plan.inline.iter().flat_map(|b| b.iter().copied()).collect();
            assert_eq!(inline.len(), msg.wire_len() - xdr::pad4(n));
            // the server's own reassembly (rpcrdma::ReadPlan) gives back the whole message
            let header = Header {
                xid: 7,
                vers: RPCRDMA_VERSION,
                credits: 1,
                proc_: Proc::Msg,
                read_list: plan.read_list.clone(),
                write_list: Vec::new(),
                reply_chunk: None,
            };
            let rp = rpcrdma::ReadPlan::new(&header, inline.len()).expect("server's plan");
            let mut rebuilt = vec![0u8; rp.message_len()];
            rp.fill(&inline, &mut rebuilt).expect("inline bytes placed");
            for r in rp.reads() {
                let src = &plan.sources[0];
                let from = (r.remote.offset - src.as_ptr() as u64) as usize;
                let len = r.remote.length as usize;
                rebuilt[r.local_offset..r.local_offset + len]
                    .copy_from_slice(&src[from..from + len]);
            }
            assert_eq!(&rebuilt[..], &msg.to_bytes()[..], "payload of {n} bytes");
        }
        // a small call stays inline, padding included
        let msg = write_call(10);
        let plan = rt.block_on(plan_call(&pool, &msg, 4096)).expect("planned");
        assert!(plan.read_list.is_empty());
        let inline: Vec<u8> = plan.inline.iter().flat_map(|b| b.iter().copied()).collect();
        assert_eq!(&inline[..], &msg.to_bytes()[..]);
        // a payload larger than a bulk buffer is refused before anything is sent
        assert!(rt
            .block_on(plan_call(&pool, &write_call(70_000), 4096))
            .is_err());
    }

    #[test]
    fn a_payload_placed_by_the_server_follows_the_inline_reply_with_its_padding() {
        let pool = verbs::Pool::new(
            PoolConfig {
                recv_count: 1,
                recv_size: 64,
                send_count: 1,
                send_size: 64,
                bulk_count: 1,
                bulk_size: DATA_AT + 64,
                remote_access: false,
            },
            None,
        )
        .expect("pool");
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        let mut buf = rt.block_on(pool.get(Class::Bulk));
        // what the server's RDMA Write left: 5 bytes of data, then stale bytes
        buf.as_mut_slice()[DATA_AT..DATA_AT + 8].copy_from_slice(b"HELLOxyz");
        let body = Bytes::from_static(b"head\x00\x00\x00\x05");
        let r = place_before(buf, 32, 5, &body).expect("placed");
        assert_eq!(&r[..], b"head\x00\x00\x00\x05HELLO\x00\x00\x00");
        drop(r);
        // a Write chunk longer than advertised is refused
        let buf = rt.block_on(pool.get(Class::Bulk));
        assert!(place_before(buf, 4, 5, &body).is_err());
    }
}
