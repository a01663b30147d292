//! The NFSv4.1 / 4.2 calls the benchmark makes (RFC 8881, RFC 7862): one client id and one
//! session per connection, a slot table so that many COMPOUNDs are in flight at once.
//!
//! Protocol numbers are written out from the RFCs here, not taken from the server's crates, so
//! a wrong number on either side shows up.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use bytes::Bytes;
use parking_lot::Mutex;
use tokio::sync::Semaphore;
use xdr::{Decoder, Encoder};

use crate::err;
use crate::error::Result;
use crate::rdma::Expect;
use crate::rpc::{Cred, RpcConn, RpcError, Via};

/// Bytes a reply may hold besides the data or entries its count asks for (status, SEQUENCE
/// result, attributes).
const REPLY_SLACK: u32 = 4096;

const NFS_PROGRAM: u32 = 100_003;
const NFS_V4: u32 = 4;
const PROC_NULL: u32 = 0;
const PROC_COMPOUND: u32 = 1;

/// Operation numbers.
#[allow(missing_docs)]
pub mod op {
    pub const CLOSE: u32 = 4;
    pub const COMMIT: u32 = 5;
    pub const CREATE: u32 = 6;
    pub const GETATTR: u32 = 9;
    pub const GETFH: u32 = 10;
    pub const LOOKUP: u32 = 15;
    pub const OPEN: u32 = 18;
    pub const PUTFH: u32 = 22;
    pub const PUTROOTFH: u32 = 24;
    pub const READ: u32 = 25;
    pub const READDIR: u32 = 26;
    pub const REMOVE: u32 = 28;
    pub const SETATTR: u32 = 34;
    pub const WRITE: u32 = 38;
    pub const EXCHANGE_ID: u32 = 42;
    pub const CREATE_SESSION: u32 = 43;
    pub const DESTROY_SESSION: u32 = 44;
    pub const SEQUENCE: u32 = 53;
    pub const DESTROY_CLIENTID: u32 = 57;
    pub const RECLAIM_COMPLETE: u32 = 58;
    pub const READ_PLUS: u32 = 68;
}

/// Attribute numbers the benchmark asks for.
mod fa {
    pub const TYPE: u32 = 1;
    pub const CHANGE: u32 = 3;
    pub const SIZE: u32 = 4;
    pub const FSID: u32 = 8;
    pub const FILEID: u32 = 20;
    pub const MODE: u32 = 33;
    pub const NUMLINKS: u32 = 35;
    pub const OWNER: u32 = 36;
    pub const OWNER_GROUP: u32 = 37;
    pub const SPACE_USED: u32 = 45;
    pub const TIME_ACCESS: u32 = 47;
    pub const TIME_METADATA: u32 = 52;
    pub const TIME_MODIFY: u32 = 53;
    pub const MOUNTED_ON_FILEID: u32 = 55;
}

/// The attributes the Linux client asks for in a plain GETATTR.
pub const GETATTR_BITS: &[u32] = &[
    fa::TYPE,
    fa::CHANGE,
    fa::SIZE,
    fa::FSID,
    fa::FILEID,
    fa::MODE,
    fa::NUMLINKS,
    fa::OWNER,
    fa::OWNER_GROUP,
    fa::SPACE_USED,
    fa::TIME_ACCESS,
    fa::TIME_METADATA,
    fa::TIME_MODIFY,
    fa::MOUNTED_ON_FILEID,
];

/// Attributes asked for with each READDIR entry (as `ls -l` would need).
const READDIR_BITS: &[u32] = &[
    fa::TYPE,
    fa::CHANGE,
    fa::SIZE,
    fa::FILEID,
    fa::MODE,
    fa::NUMLINKS,
    fa::OWNER,
    fa::OWNER_GROUP,
    fa::TIME_MODIFY,
];

/// OPEN4_SHARE_ACCESS_READ.
const ACCESS_READ: u32 = 1;
/// OPEN4_SHARE_ACCESS_BOTH.
const ACCESS_BOTH: u32 = 3;
/// OPEN4_SHARE_ACCESS_WANT_NO_DELEG.
const WANT_NO_DELEG: u32 = 0x0400;

/// A stateid4.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stateid {
    /// seqid.
    pub seqid: u32,
    /// other.
    pub other: [u8; 12],
}

impl Stateid {
    /// The current stateid (RFC 8881 section 16.2.3.1.2).
    pub const CURRENT: Stateid = Stateid {
        seqid: 1,
        other: [0; 12],
    };

    fn encode(&self, e: &mut Encoder) {
        e.u32(self.seqid);
        e.opaque_fixed(&self.other);
    }

    fn decode(d: &mut Decoder) -> Result<Stateid> {
        let seqid = d.u32()?;
        let mut other = [0u8; 12];
        other.copy_from_slice(&d.opaque_fixed(12)?);
        Ok(Stateid { seqid, other })
    }
}

/// An open file: handle and open stateid.
#[derive(Debug, Clone)]
pub struct Open {
    /// File handle.
    pub fh: Bytes,
    /// Open stateid.
    pub stateid: Stateid,
}

/// One READ_PLUS reply: data bytes and hole bytes it described, and the eof flag.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReadPlus {
    /// Bytes sent as data.
    pub data: u64,
    /// Bytes described as holes.
    pub holes: u64,
    /// End of file reached.
    pub eof: bool,
}

fn put_bitmap(e: &mut Encoder, bits: &[u32]) {
    let words = bits.iter().map(|b| b / 32 + 1).max().unwrap_or(0) as usize;
    let mut w = vec![0u32; words];
    for b in bits {
        w[(b / 32) as usize] |= 1 << (b % 32);
    }
    e.u32(words as u32);
    for x in w {
        e.u32(x);
    }
}

fn skip_bitmap(d: &mut Decoder) -> Result<()> {
    let n = d.array_len(64, 4)?;
    for _ in 0..n {
        d.u32()?;
    }
    Ok(())
}

fn skip_fattr(d: &mut Decoder) -> Result<()> {
    skip_bitmap(d)?;
    d.opaque(1 << 20)?;
    Ok(())
}

fn skip_change_info(d: &mut Decoder) -> Result<()> {
    d.bool()?;
    d.u64()?;
    d.u64()?;
    Ok(())
}

/// The operations of one COMPOUND (after SEQUENCE), in order.
pub struct Ops {
    e: Encoder,
    /// Operation numbers.
    pub codes: Vec<u32>,
    /// The reply's shape, for RPC-over-RDMA (set by READ, READ_PLUS and READDIR, which must
    /// be the last operation).
    expect: Expect,
}

impl Default for Ops {
    fn default() -> Self {
        Self::new()
    }
}

impl Ops {
    /// No operations.
    pub fn new() -> Ops {
        Ops {
            e: Encoder::with_capacity(256),
            codes: Vec::new(),
            expect: Expect::Small,
        }
    }

    fn op(mut self, n: u32, f: impl FnOnce(&mut Encoder)) -> Ops {
        self.codes.push(n);
        self.e.u32(n);
        f(&mut self.e);
        self
    }

    /// PUTROOTFH.
    pub fn putrootfh(self) -> Ops {
        self.op(op::PUTROOTFH, |_| {})
    }

    /// PUTFH.
    pub fn putfh(self, fh: &[u8]) -> Ops {
        self.op(op::PUTFH, |e| e.opaque(fh))
    }

    /// LOOKUP.
    pub fn lookup(self, name: &[u8]) -> Ops {
        self.op(op::LOOKUP, |e| e.opaque(name))
    }

    /// GETFH.
    pub fn getfh(self) -> Ops {
        self.op(op::GETFH, |_| {})
    }

    /// GETATTR.
    pub fn getattr(self, bits: &[u32]) -> Ops {
        self.op(op::GETATTR, |e| put_bitmap(e, bits))
    }

    /// OPEN by name in the current directory: create (UNCHECKED4, mode 0644) or not.
    pub fn open(self, clientid: u64, owner: &[u8], name: &[u8], create: bool, write: bool) -> Ops {
        self.op(op::OPEN, |e| {
            e.u32(0); // seqid (ignored in 4.1)
            e.u32(if write { ACCESS_BOTH } else { ACCESS_READ } | WANT_NO_DELEG);
            e.u32(0); // deny none
            e.u64(clientid);
            e.opaque(owner);
            if create {
                e.u32(1); // OPEN4_CREATE
                e.u32(0); // UNCHECKED4
                put_bitmap(e, &[fa::MODE]);
                let mut v = Encoder::new();
                v.u32(0o644);
                e.opaque(&v.finish().to_bytes());
            } else {
                e.u32(0); // OPEN4_NOCREATE
            }
            e.u32(0); // CLAIM_NULL
            e.opaque(name);
        })
    }

    /// CLOSE.
    pub fn close(self, sid: &Stateid) -> Ops {
        self.op(op::CLOSE, |e| {
            e.u32(0);
            sid.encode(e);
        })
    }

    /// READ (the last operation: its data ends the reply).
    pub fn read(mut self, sid: &Stateid, off: u64, count: u32) -> Ops {
        self.expect = Expect::DataLast(count);
        self.op(op::READ, |e| {
            sid.encode(e);
            e.u64(off);
            e.u32(count);
        })
    }

    /// READ_PLUS (4.2); no part of its reply is DDP-eligible (RFC 8267), so a large one
    /// comes back through a Reply chunk.
    pub fn read_plus(mut self, sid: &Stateid, off: u64, count: u32) -> Ops {
        self.expect = Expect::Large(count.saturating_add(REPLY_SLACK));
        self.op(op::READ_PLUS, |e| {
            sid.encode(e);
            e.u64(off);
            e.u32(count);
        })
    }

    /// WRITE; the data stays a separate buffer.
    pub fn write(self, sid: &Stateid, off: u64, stable: u32, data: Bytes) -> Ops {
        self.op(op::WRITE, |e| {
            sid.encode(e);
            e.u64(off);
            e.u32(stable);
            e.opaque_bulk(data);
        })
    }

    /// COMMIT of the whole file.
    pub fn commit(self) -> Ops {
        self.op(op::COMMIT, |e| {
            e.u64(0);
            e.u32(0);
        })
    }

    /// REMOVE.
    pub fn remove(self, name: &[u8]) -> Ops {
        self.op(op::REMOVE, |e| e.opaque(name))
    }

    /// CREATE of a directory (mode 0755).
    pub fn mkdir(self, name: &[u8]) -> Ops {
        self.op(op::CREATE, |e| {
            e.u32(2); // NF4DIR
            e.opaque(name);
            put_bitmap(e, &[fa::MODE]);
            let mut v = Encoder::new();
            v.u32(0o755);
            e.opaque(&v.finish().to_bytes());
        })
    }

    /// SETATTR of the size.
    pub fn set_size(self, sid: &Stateid, size: u64) -> Ops {
        self.op(op::SETATTR, |e| {
            sid.encode(e);
            put_bitmap(e, &[fa::SIZE]);
            let mut v = Encoder::new();
            v.u64(size);
            e.opaque(&v.finish().to_bytes());
        })
    }

    /// READDIR.
    pub fn readdir(mut self, cookie: u64, verf: [u8; 8], dircount: u32, maxcount: u32) -> Ops {
        self.expect = Expect::Large(maxcount.saturating_add(REPLY_SLACK));
        self.op(op::READDIR, |e| {
            e.u64(cookie);
            e.opaque_fixed(&verf);
            e.u32(dircount);
            e.u32(maxcount);
            put_bitmap(e, READDIR_BITS);
        })
    }

    fn finish(self) -> (u32, xdr::Reply, Expect) {
        (self.codes.len() as u32, self.e.finish(), self.expect)
    }
}

/// A COMPOUND4res being decoded operation by operation.
pub struct Res {
    d: Decoder,
    what: &'static str,
}

impl Res {
    /// Moves to the result of the next operation, which must be `opnum` and must have succeeded.
    pub fn next(&mut self, opnum: u32) -> Result<&mut Decoder> {
        let got = self.d.u32()?;
        let status = self.d.u32()?;
        if got != opnum {
            return Err(err!(
                "{}: result of op {got} where op {opnum} was expected",
                self.what
            ));
        }
        if status != 0 {
            return Err(err!(
                "{}: op {opnum} failed with NFS4 status {status}",
                self.what
            ));
        }
        Ok(&mut self.d)
    }

    /// The next result, which carries no body (PUTFH, LOOKUP, ...).
    pub fn skip(&mut self, opnum: u32) -> Result<()> {
        self.next(opnum).map(|_| ())
    }

    /// GETFH.
    pub fn getfh(&mut self) -> Result<Bytes> {
        Ok(self.next(op::GETFH)?.opaque(128)?)
    }

    /// GETATTR (attributes not decoded).
    pub fn getattr(&mut self) -> Result<()> {
        skip_fattr(self.next(op::GETATTR)?)
    }

    /// OPEN: the open stateid.
    pub fn open(&mut self) -> Result<Stateid> {
        let d = self.next(op::OPEN)?;
        let sid = Stateid::decode(d)?;
        skip_change_info(d)?;
        d.u32()?; // rflags
        skip_bitmap(d)?; // attrset
        let skip_ace = |d: &mut Decoder| -> Result<()> {
            d.u32()?;
            d.u32()?;
            d.u32()?;
            d.opaque(1024)?;
            Ok(())
        };
        match d.u32()? {
            0 => {}
            1 => {
                Stateid::decode(d)?;
                d.bool()?;
                skip_ace(d)?;
            }
            2 => {
                Stateid::decode(d)?;
                d.bool()?;
                match d.u32()? {
                    1 => {
                        d.u64()?;
                    }
                    _ => {
                        d.u32()?;
                        d.u32()?;
                    }
                }
                skip_ace(d)?;
            }
            3 => {
                let why = d.u32()?;
                if why == 1 || why == 2 {
                    d.bool()?;
                }
            }
            o => return Err(err!("OPEN: unknown delegation type {o}")),
        }
        Ok(sid)
    }

    /// READ: data and eof.
    pub fn read(&mut self) -> Result<(Bytes, bool)> {
        let d = self.next(op::READ)?;
        let eof = d.bool()?;
        Ok((d.opaque(16 << 20)?, eof))
    }

    /// READ_PLUS: bytes of data and of holes.
    pub fn read_plus(&mut self) -> Result<ReadPlus> {
        let d = self.next(op::READ_PLUS)?;
        let mut r = ReadPlus {
            eof: d.bool()?,
            ..Default::default()
        };
        let n = d.array_len(1 << 16, 12)?;
        for _ in 0..n {
            match d.u32()? {
                0 => {
                    d.u64()?;
                    r.data += d.opaque(16 << 20)?.len() as u64;
                }
                1 => {
                    d.u64()?;
                    r.holes += d.u64()?;
                }
                o => return Err(err!("READ_PLUS: unknown content type {o}")),
            }
        }
        Ok(r)
    }

    /// WRITE: count written.
    pub fn write(&mut self) -> Result<u32> {
        let d = self.next(op::WRITE)?;
        let count = d.u32()?;
        d.u32()?;
        d.opaque_fixed(8)?;
        Ok(count)
    }
}

/// The fore channel slot table: a free list of (slot, last sequence id).
struct Slots {
    sem: Semaphore,
    free: Mutex<Vec<(u32, u32)>>,
    highest: u32,
}

/// A slot taken from the table; returned on drop only once its sequence id is known.
struct SlotGuard<'a> {
    slots: &'a Slots,
    permit: Option<tokio::sync::SemaphorePermit<'a>>,
    slot: u32,
    seq: Option<u32>,
}

impl Drop for SlotGuard<'_> {
    fn drop(&mut self) {
        let Some(p) = self.permit.take() else { return };
        match self.seq {
            Some(seq) => {
                self.slots.free.lock().push((self.slot, seq));
                drop(p);
            }
            None => p.forget(),
        }
    }
}

/// An NFSv4.1+ client with one session on one connection.
pub struct V4 {
    /// The connection.
    pub rpc: RpcConn,
    /// Minor version (1 or 2).
    pub minor: u32,
    /// Client id.
    pub clientid: u64,
    sessionid: [u8; 16],
    slots: Slots,
    /// Largest READ / WRITE payload the session allows (at most 1 MiB).
    pub max_io: u32,
    owner_seq: AtomicU32,
}

/// A verifier that differs between runs and owners.
fn verifier(owner: &[u8]) -> [u8; 8] {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in owner {
        h = (h ^ *b as u64).wrapping_mul(0x1000_0000_01b3);
    }
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    (h ^ t).to_be_bytes()
}

impl V4 {
    /// Connects, then EXCHANGE_ID, CREATE_SESSION with up to `slots` slots, RECLAIM_COMPLETE.
    pub async fn connect(
        addr: SocketAddr,
        via: Via,
        cred: Cred,
        timeout: Duration,
        minor: u32,
        slots: u32,
        owner: &str,
    ) -> Result<V4> {
        let rpc = RpcConn::open(via, addr, cred, timeout)
            .await
            .map_err(|e| err!("cannot connect to NFS at {addr}: {e}"))?;
        // EXCHANGE_ID (EXCHGID4_FLAG_USE_NON_PNFS, SP4_NONE, no implementation id).
        let verf = verifier(owner.as_bytes());
        let r = raw_compound(&rpc, minor, "EXCHANGE_ID", |e| {
            e.u32(1);
            e.u32(op::EXCHANGE_ID);
            e.opaque_fixed(&verf);
            e.opaque(owner.as_bytes());
            e.u32(0x1_0000);
            e.u32(0);
            e.u32(0);
        })
        .await?;
        let mut r = r;
        let d = r.next(op::EXCHANGE_ID)?;
        let clientid = d.u64()?;
        let seqid = d.u32()?;
        // CREATE_SESSION: fore channel 1 MiB + headroom each way, `slots` slots; no back channel.
        let mut r = raw_compound(&rpc, minor, "CREATE_SESSION", |e| {
            e.u32(1);
            e.u32(op::CREATE_SESSION);
            e.u64(clientid);
            e.u32(seqid);
            e.u32(0);
            for (maxreq, maxresp, cached, maxops, reqs) in [
                ((1 << 20) + 8192, (1 << 20) + 8192, 8192, 16, slots),
                (4096, 4096, 0, 2, 1),
            ] {
                e.u32(0);
                e.u32(maxreq);
                e.u32(maxresp);
                e.u32(cached);
                e.u32(maxops);
                e.u32(reqs);
                e.u32(0);
            }
            e.u32(0x4000_0000);
            e.u32(1);
            e.u32(0); // AUTH_NONE
        })
        .await?;
        let d = r.next(op::CREATE_SESSION)?;
        let mut sessionid = [0u8; 16];
        sessionid.copy_from_slice(&d.opaque_fixed(16)?);
        d.u32()?; // seqid
        d.u32()?; // flags
        d.u32()?; // headerpad
        let maxreq = d.u32()?;
        let maxresp = d.u32()?;
        d.u32()?;
        d.u32()?;
        let nslots = d.u32()?.clamp(1, 1024);
        let max_io = (maxreq.min(maxresp).saturating_sub(1024)).min(1 << 20);
        // Rounded down to a multiple of 4 KiB so that I/O stays aligned.
        let max_io = max_io & !4095;
        let c = V4 {
            rpc,
            minor,
            clientid,
            sessionid,
            slots: Slots {
                sem: Semaphore::new(nslots as usize),
                free: Mutex::new((0..nslots).rev().map(|s| (s, 0)).collect()),
                highest: nslots - 1,
            },
            max_io,
            owner_seq: AtomicU32::new(0),
        };
        let mut r = c
            .compound(
                "RECLAIM_COMPLETE",
                Ops::new().op(op::RECLAIM_COMPLETE, |e| e.bool(false)),
            )
            .await?;
        r.skip(op::RECLAIM_COMPLETE)?;
        Ok(c)
    }

    /// NULL.
    pub async fn null(&self) -> Result<()> {
        self.rpc
            .call(NFS_PROGRAM, NFS_V4, PROC_NULL, |_| {})
            .await?;
        Ok(())
    }

    /// DESTROY_SESSION and DESTROY_CLIENTID, so the server drops this client's state now
    /// rather than at lease expiry.
    pub async fn destroy(&self) -> Result<()> {
        let sid = self.sessionid;
        let mut r = raw_compound(&self.rpc, self.minor, "DESTROY_SESSION", |e| {
            e.u32(1);
            e.u32(op::DESTROY_SESSION);
            e.opaque_fixed(&sid);
        })
        .await?;
        r.skip(op::DESTROY_SESSION)?;
        let id = self.clientid;
        let mut r = raw_compound(&self.rpc, self.minor, "DESTROY_CLIENTID", |e| {
            e.u32(1);
            e.u32(op::DESTROY_CLIENTID);
            e.u64(id);
        })
        .await?;
        r.skip(op::DESTROY_CLIENTID)
    }

    /// One COMPOUND of SEQUENCE and `ops` on a free slot; the SEQUENCE result is consumed.
    pub async fn compound(&self, what: &'static str, ops: Ops) -> Result<Res> {
        let permit = tokio::time::timeout(self.rpc.timeout(), self.slots.sem.acquire())
            .await
            .map_err(|_| err!("{what}: no free session slot in time"))?
            .map_err(|_| err!("slot table closed"))?;
        let (slot, seq) = self
            .slots
            .free
            .lock()
            .pop()
            .ok_or_else(|| err!("{what}: slot table empty"))?;
        // Until the reply is read, the slot's sequence on the server is unknown: if this future
        // is dropped or the call fails, the guard keeps the slot out of the table for good.
        let mut guard = SlotGuard {
            slots: &self.slots,
            permit: Some(permit),
            slot,
            seq: None,
        };
        let seq = seq.wrapping_add(1);
        let (n, body, expect) = ops.finish();
        let sid = self.sessionid;
        let highest = self.slots.highest;
        let reply = self
            .rpc
            .call_expect(NFS_PROGRAM, NFS_V4, PROC_COMPOUND, expect, |e| {
                e.u32(0); // empty tag
                e.u32(self.minor);
                e.u32(n + 1);
                e.u32(op::SEQUENCE);
                e.opaque_fixed(&sid);
                e.u32(seq);
                e.u32(slot);
                e.u32(highest);
                e.bool(false);
                e.append(body);
            })
            .await?;
        let mut d = Decoder::new(reply);
        let head = (|| -> Result<std::result::Result<(), u32>> {
            let _status = d.u32()?;
            d.opaque(1024)?; // tag
            let _n = d.u32()?;
            let got = d.u32()?;
            let status = d.u32()?;
            if got != op::SEQUENCE {
                return Err(err!("{what}: first result is op {got}, not SEQUENCE"));
            }
            if status != 0 {
                return Ok(Err(status));
            }
            d.opaque_fixed(16)?;
            for _ in 0..5 {
                d.u32()?;
            }
            Ok(Ok(()))
        })()?;
        match head {
            Ok(()) => {
                guard.seq = Some(seq);
                Ok(Res { d, what })
            }
            Err(status) => {
                // The server did not use the slot: its sequence stays where it was.
                guard.seq = Some(seq.wrapping_sub(1));
                Err(err!("{what}: SEQUENCE failed with NFS4 status {status}"))
            }
        }
    }

    /// A fresh open-owner name for this client.
    pub fn new_owner(&self) -> Vec<u8> {
        format!("o{}", self.owner_seq.fetch_add(1, Ordering::Relaxed)).into_bytes()
    }

    /// The handle of an absolute path through the pseudo file system.
    pub async fn path_fh(&self, path: &str) -> Result<Bytes> {
        let mut ops = Ops::new().putrootfh();
        let mut n = 0;
        for c in path.split('/').filter(|c| !c.is_empty()) {
            ops = ops.lookup(c.as_bytes());
            n += 1;
        }
        let mut r = self.compound("LOOKUP path", ops.getfh()).await?;
        r.skip(op::PUTROOTFH)?;
        for _ in 0..n {
            r.skip(op::LOOKUP)?;
        }
        r.getfh()
    }

    /// OPEN (create or not) of `name` in `dir`.
    pub async fn open(&self, dir: &[u8], name: &str, create: bool, write: bool) -> Result<Open> {
        let owner = self.new_owner();
        let mut r = self
            .compound(
                "OPEN",
                Ops::new()
                    .putfh(dir)
                    .open(self.clientid, &owner, name.as_bytes(), create, write)
                    .getfh(),
            )
            .await?;
        r.skip(op::PUTFH)?;
        let stateid = r.open()?;
        let fh = r.getfh()?;
        Ok(Open { fh, stateid })
    }

    /// OPEN with create, then CLOSE, in one COMPOUND (as `touch` would): the new handle.
    pub async fn create_closed(&self, dir: &[u8], name: &str) -> Result<Bytes> {
        let owner = self.new_owner();
        let mut r = self
            .compound(
                "OPEN+CLOSE",
                Ops::new()
                    .putfh(dir)
                    .open(self.clientid, &owner, name.as_bytes(), true, true)
                    .getfh()
                    .close(&Stateid::CURRENT),
            )
            .await?;
        r.skip(op::PUTFH)?;
        r.open()?;
        let fh = r.getfh()?;
        r.next(op::CLOSE)?;
        Ok(fh)
    }

    /// CLOSE.
    pub async fn close(&self, f: &Open) -> Result<()> {
        let mut r = self
            .compound("CLOSE", Ops::new().putfh(&f.fh).close(&f.stateid))
            .await?;
        r.skip(op::PUTFH)?;
        r.next(op::CLOSE)?;
        Ok(())
    }

    /// GETATTR of the usual attributes.
    pub async fn getattr(&self, fh: &[u8]) -> Result<()> {
        let mut r = self
            .compound("GETATTR", Ops::new().putfh(fh).getattr(GETATTR_BITS))
            .await?;
        r.skip(op::PUTFH)?;
        r.getattr()
    }

    /// LOOKUP of `name` in `dir` as the Linux client sends it (PUTFH, LOOKUP, GETFH, GETATTR).
    pub async fn lookup(&self, dir: &[u8], name: &str) -> Result<Bytes> {
        let mut r = self
            .compound(
                "LOOKUP",
                Ops::new()
                    .putfh(dir)
                    .lookup(name.as_bytes())
                    .getfh()
                    .getattr(GETATTR_BITS),
            )
            .await?;
        r.skip(op::PUTFH)?;
        r.skip(op::LOOKUP)?;
        let fh = r.getfh()?;
        r.getattr()?;
        Ok(fh)
    }

    /// WRITE; returns the count written.
    pub async fn write(&self, f: &Open, off: u64, data: Bytes, stable: u32) -> Result<u32> {
        let mut r = self
            .compound(
                "WRITE",
                Ops::new().putfh(&f.fh).write(&f.stateid, off, stable, data),
            )
            .await?;
        r.skip(op::PUTFH)?;
        r.write()
    }

    /// READ: data and eof.
    pub async fn read(&self, f: &Open, off: u64, count: u32) -> Result<(Bytes, bool)> {
        let mut r = self
            .compound("READ", Ops::new().putfh(&f.fh).read(&f.stateid, off, count))
            .await?;
        r.skip(op::PUTFH)?;
        r.read()
    }

    /// READ_PLUS (4.2).
    pub async fn read_plus(&self, f: &Open, off: u64, count: u32) -> Result<ReadPlus> {
        let mut r = self
            .compound(
                "READ_PLUS",
                Ops::new().putfh(&f.fh).read_plus(&f.stateid, off, count),
            )
            .await?;
        r.skip(op::PUTFH)?;
        r.read_plus()
    }

    /// COMMIT of the whole file.
    pub async fn commit(&self, fh: &[u8]) -> Result<()> {
        let mut r = self
            .compound("COMMIT", Ops::new().putfh(fh).commit())
            .await?;
        r.skip(op::PUTFH)?;
        r.next(op::COMMIT)?;
        Ok(())
    }

    /// SETATTR of the size through an open stateid.
    pub async fn set_size(&self, f: &Open, size: u64) -> Result<()> {
        let mut r = self
            .compound(
                "SETATTR",
                Ops::new().putfh(&f.fh).set_size(&f.stateid, size),
            )
            .await?;
        r.skip(op::PUTFH)?;
        r.next(op::SETATTR)?;
        Ok(())
    }

    /// REMOVE of `name` in `dir` (files and empty directories).
    pub async fn remove(&self, dir: &[u8], name: &str) -> Result<()> {
        let mut r = self
            .compound("REMOVE", Ops::new().putfh(dir).remove(name.as_bytes()))
            .await?;
        r.skip(op::PUTFH)?;
        r.next(op::REMOVE)?;
        Ok(())
    }

    /// CREATE of directory `name` in `dir`: its handle.
    pub async fn mkdir(&self, dir: &[u8], name: &str) -> Result<Bytes> {
        let mut r = self
            .compound(
                "CREATE",
                Ops::new().putfh(dir).mkdir(name.as_bytes()).getfh(),
            )
            .await?;
        r.skip(op::PUTFH)?;
        let d = r.next(op::CREATE)?;
        skip_change_info(d)?;
        skip_bitmap(d)?;
        r.getfh()
    }

    /// The whole listing of `dir` (dircount 16 KiB, maxcount 64 KiB per READDIR): the names and
    /// the number of COMPOUNDs.
    pub async fn readdir(&self, dir: &[u8]) -> Result<(Vec<Bytes>, u32)> {
        let mut names = Vec::new();
        let mut cookie = 0;
        let mut verf = [0u8; 8];
        let mut calls = 0;
        loop {
            let mut r = self
                .compound(
                    "READDIR",
                    Ops::new()
                        .putfh(dir)
                        .readdir(cookie, verf, 16 * 1024, 64 * 1024),
                )
                .await?;
            calls += 1;
            r.skip(op::PUTFH)?;
            let d = r.next(op::READDIR)?;
            verf.copy_from_slice(&d.opaque_fixed(8)?);
            let mut n = 0;
            while d.bool()? {
                cookie = d.u64()?;
                names.push(d.opaque(4096)?);
                skip_fattr(d)?;
                n += 1;
            }
            if d.bool()? || n == 0 {
                return Ok((names, calls));
            }
        }
    }
}

/// A COMPOUND without SEQUENCE (EXCHANGE_ID, CREATE_SESSION); `f` writes the op count and ops.
async fn raw_compound(
    rpc: &RpcConn,
    minor: u32,
    what: &'static str,
    f: impl FnOnce(&mut Encoder),
) -> Result<Res> {
    let reply = rpc
        .call(NFS_PROGRAM, NFS_V4, PROC_COMPOUND, |e| {
            e.u32(0);
            e.u32(minor);
            f(e);
        })
        .await
        .map_err(|e: RpcError| err!("{what}: {e}"))?;
    let mut d = Decoder::new(reply);
    d.u32()?;
    d.opaque(1024)?;
    d.u32()?;
    Ok(Res { d, what })
}
