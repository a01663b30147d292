//! The NFSv4.1 / 4.2 calls the benchmark makes (RFC 8881, RFC 7862): one client id and one
//! session per connection, a slot table so that many COMPOUNDs are in flight at once.
//!
//! Every COMPOUND is built from, and every reply decoded into, the wire types `nfs4wire`
//! generates from RFC 7863's XDR (operation and attribute numbers included), not from the
//! server's own tables, so a wrong number on the server's side shows up. WRITE data goes out
//! as a separate segment (`WRITE4args.data` is a bulk field), and READ and READ_PLUS data are
//! slices of the received reply: the benchmark copies no payload.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use bytes::Bytes;
use nfs4wire::{self as w, NfsArgop4 as A, NfsOpnum4 as Op};
use parking_lot::Mutex;
use tokio::sync::Semaphore;
use xdr::{Decode, Decoder, Encode};

use crate::err;
use crate::error::{Error, Result};
use crate::rdma::Expect;
use crate::rpc::{Cred, RpcConn, RpcError, Via};

/// Bytes a reply may hold besides the data or entries its count asks for (status, SEQUENCE
/// result, attributes).
const REPLY_SLACK: u32 = 4096;

/// The largest layout or device address the benchmark takes (a few mirrors and addresses are
/// a few hundred bytes).
const LAYOUT_MAXCOUNT: u32 = 16 * 1024;

/// The attributes the Linux client asks for in a plain GETATTR.
pub const GETATTR_BITS: &[u32] = &[
    w::FATTR4_TYPE,
    w::FATTR4_CHANGE,
    w::FATTR4_SIZE,
    w::FATTR4_FSID,
    w::FATTR4_FILEID,
    w::FATTR4_MODE,
    w::FATTR4_NUMLINKS,
    w::FATTR4_OWNER,
    w::FATTR4_OWNER_GROUP,
    w::FATTR4_SPACE_USED,
    w::FATTR4_TIME_ACCESS,
    w::FATTR4_TIME_METADATA,
    w::FATTR4_TIME_MODIFY,
    w::FATTR4_MOUNTED_ON_FILEID,
];

/// Attributes asked for with each READDIR entry (as `ls -l` would need).
const READDIR_BITS: &[u32] = &[
    w::FATTR4_TYPE,
    w::FATTR4_CHANGE,
    w::FATTR4_SIZE,
    w::FATTR4_FILEID,
    w::FATTR4_MODE,
    w::FATTR4_NUMLINKS,
    w::FATTR4_OWNER,
    w::FATTR4_OWNER_GROUP,
    w::FATTR4_TIME_MODIFY,
];

/// A bitmap4 of `W` words with the attribute numbers `bits` set (a number past the last
/// word fails the build).
const fn bitmap<const W: usize>(bits: &[u32]) -> [u32; W] {
    let mut m = [0u32; W];
    let mut i = 0;
    while i < bits.len() {
        m[(bits[i] / 32) as usize] |= 1 << (bits[i] % 32);
        i += 1;
    }
    m
}

const GETATTR_MASK: [u32; 2] = bitmap(GETATTR_BITS);
const READDIR_MASK: [u32; 2] = bitmap(READDIR_BITS);
const MODE_MASK: [u32; 2] = bitmap(&[w::FATTR4_MODE]);
const SIZE_MASK: [u32; 1] = bitmap(&[w::FATTR4_SIZE]);

/// The encoded fattr4_mode of new files and of new directories.
static MODE_0644: [u8; 4] = (0o644 as w::Fattr4Mode).to_be_bytes();
static MODE_0755: [u8; 4] = (0o755 as w::Fattr4Mode).to_be_bytes();

/// A fattr4 of one attribute: its bitmap and its encoded value.
fn fattr(mask: &[u32], vals: Bytes) -> w::Fattr4 {
    w::Fattr4 {
        attrmask: mask.to_vec(),
        attr_vals: vals,
    }
}

/// A component4 (a file name).
fn component(name: &str) -> w::Component4 {
    Bytes::copy_from_slice(name.as_bytes())
}

/// A stateid4, kept by value in the benchmark's open files.
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

    fn wire(&self) -> w::Stateid4 {
        w::Stateid4 {
            seqid: self.seqid,
            other: self.other,
        }
    }
}

impl From<w::Stateid4> for Stateid {
    fn from(s: w::Stateid4) -> Self {
        Stateid {
            seqid: s.seqid,
            other: s.other,
        }
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

/// A flexible-files layout (RFC 8435) of a whole file: its layout stateid and its mirrors.
#[derive(Debug, Clone)]
pub struct Layout {
    /// The layout stateid (LAYOUTCOMMIT, LAYOUTRETURN).
    pub stateid: Stateid,
    /// Where the file's data is.
    pub ff: w::FfLayout4,
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

/// A result type of `nfs_resop4`'s, and the operation it answers.
trait OpResult: Decode {
    /// The operation.
    const OP: Op;
}

/// The result types the benchmark takes, paired with their operations as `nfs_resop4` pairs
/// them (its arm for each is named after `=`: the test below checks the pairing against the
/// generated union).
macro_rules! op_results {
    ($($t:ident: $op:ident = $arm:ident,)*) => {
        $(impl OpResult for w::$t {
            const OP: Op = Op::$op;
        })*

        #[cfg(test)]
        mod op_results {
            use super::*;

            #[test]
            fn each_result_type_is_nfs_resop4s_for_its_operation() {
                $({
                    // A failed result of the operation (zeros after the status for results
                    // that go on), decoded as nfs_resop4: it must come back as the arm named,
                    // which holds the type (checked when this compiles).
                    let mut e = xdr::Encoder::new();
                    e.u32(Op::$op.0);
                    e.u32(w::Nfsstat4::NFS4ERR_IO.0);
                    e.u64(0);
                    let r = w::NfsResop4::decode(&mut Decoder::new(e.finish().to_bytes()));
                    match r.unwrap() {
                        w::NfsResop4::$arm(x) => {
                            let _: w::$t = x;
                        }
                        o => panic!("{:?} decodes as {:?}", Op::$op, o.discriminant()),
                    }
                })*
            }
        }
    };
}

op_results! {
    Sequence4res: OP_SEQUENCE = OpSequence,
    Putfh4res: OP_PUTFH = OpPutfh,
    Putrootfh4res: OP_PUTROOTFH = OpPutrootfh,
    Lookup4res: OP_LOOKUP = OpLookup,
    Getfh4res: OP_GETFH = OpGetfh,
    Getattr4res: OP_GETATTR = OpGetattr,
    Open4res: OP_OPEN = OpOpen,
    Close4res: OP_CLOSE = OpClose,
    Read4res: OP_READ = OpRead,
    ReadPlus4res: OP_READ_PLUS = OpReadPlus,
    Write4res: OP_WRITE = OpWrite,
    Commit4res: OP_COMMIT = OpCommit,
    Create4res: OP_CREATE = OpCreate,
    Remove4res: OP_REMOVE = OpRemove,
    Setattr4res: OP_SETATTR = OpSetattr,
    Readdir4res: OP_READDIR = OpReaddir,
    ExchangeId4res: OP_EXCHANGE_ID = OpExchangeId,
    CreateSession4res: OP_CREATE_SESSION = OpCreateSession,
    DestroySession4res: OP_DESTROY_SESSION = OpDestroySession,
    DestroyClientid4res: OP_DESTROY_CLIENTID = OpDestroyClientid,
    ReclaimComplete4res: OP_RECLAIM_COMPLETE = OpReclaimComplete,
    Layoutget4res: OP_LAYOUTGET = OpLayoutget,
    Getdeviceinfo4res: OP_GETDEVICEINFO = OpGetdeviceinfo,
    Layoutcommit4res: OP_LAYOUTCOMMIT = OpLayoutcommit,
    Layoutreturn4res: OP_LAYOUTRETURN = OpLayoutreturn,
}

/// The results of a COMPOUND, decoded one at a time as they are taken, each as the result
/// type of the operation expected there (what `nfs_resop4` holds for it). Decoding a whole
/// COMPOUND4res would move every result through the 200-byte `nfs_resop4` union into a
/// vector first: for a small call that is more of the benchmark's CPU than the rest of the
/// decoding.
pub struct Res {
    /// The results not taken yet.
    d: Decoder,
    /// How many there are.
    left: u32,
    /// The COMPOUND's status, which is that of its last result.
    status: w::Nfsstat4,
    what: &'static str,
}

impl Res {
    /// Reads a COMPOUND4res up to its results: the status, the tag and the result count.
    fn new(what: &'static str, reply: Bytes) -> Result<Res> {
        let mut d = Decoder::new(reply);
        let status = w::Nfsstat4::decode(&mut d)?;
        let _tag: w::Utf8strCs = d.opaque(1024)?;
        let left = d.u32()?;
        Ok(Res {
            d,
            left,
            status,
            what,
        })
    }

    /// The next result, which must be that of `T`'s operation (failed or not).
    fn take<T: OpResult>(&mut self) -> Result<T> {
        if self.left == 0 {
            return Err(err!(
                "{}: no result for {:?} (COMPOUND status {:?})",
                self.what,
                T::OP,
                self.status
            ));
        }
        self.left -= 1;
        let op = Op::decode(&mut self.d)?;
        if op != T::OP {
            return Err(err!(
                "{}: result of {op:?} where {:?} was expected",
                self.what,
                T::OP
            ));
        }
        Ok(T::decode(&mut self.d)?)
    }

    /// The next result, which must be that of `T`'s operation and must have succeeded.
    fn next<T: OpResult>(&mut self) -> Result<T> {
        let r = self.take::<T>()?;
        // A COMPOUND stops at the first operation that fails, whose status it returns.
        if self.left == 0 && self.status != w::Nfsstat4::NFS4_OK {
            return Err(self.failed::<T>(self.status));
        }
        Ok(r)
    }

    /// `T`'s operation failed with `status`.
    fn failed<T: OpResult>(&self, status: w::Nfsstat4) -> Error {
        err!("{}: {:?} failed with {status:?}", self.what, T::OP)
    }

    /// The next result, whose body is not looked at (PUTFH, LOOKUP, CLOSE, ...).
    fn skip<T: OpResult>(&mut self) -> Result<()> {
        self.next::<T>().map(drop)
    }

    /// GETFH.
    pub fn getfh(&mut self) -> Result<Bytes> {
        match self.next()? {
            w::Getfh4res::Nfs4Ok(ok) => Ok(ok.object),
            w::Getfh4res::Default(s) => Err(self.failed::<w::Getfh4res>(s)),
        }
    }

    /// GETATTR (attribute values not decoded).
    pub fn getattr(&mut self) -> Result<()> {
        match self.next()? {
            w::Getattr4res::Nfs4Ok(_) => Ok(()),
            w::Getattr4res::Default(s) => Err(self.failed::<w::Getattr4res>(s)),
        }
    }

    /// OPEN: the open stateid.
    pub fn open(&mut self) -> Result<Stateid> {
        match self.next()? {
            w::Open4res::Nfs4Ok(ok) => Ok(ok.stateid.into()),
            w::Open4res::Default(s) => Err(self.failed::<w::Open4res>(s)),
        }
    }

    /// READ: data (a slice of the reply) and eof.
    pub fn read(&mut self) -> Result<(Bytes, bool)> {
        match self.next()? {
            w::Read4res::Nfs4Ok(w::Read4resok {
                eof,
                data: xdr::Payload::Bytes(data),
            }) => Ok((data, eof)),
            w::Read4res::Nfs4Ok(_) => Err(err!("{}: READ data not in memory", self.what)),
            w::Read4res::Default(s) => Err(self.failed::<w::Read4res>(s)),
        }
    }

    /// READ_PLUS: bytes of data and of holes.
    pub fn read_plus(&mut self) -> Result<ReadPlus> {
        let ok = match self.next()? {
            w::ReadPlus4res::Nfs4Ok(ok) => ok,
            w::ReadPlus4res::Default(s) => return Err(self.failed::<w::ReadPlus4res>(s)),
        };
        let mut r = ReadPlus {
            eof: ok.rpr_eof,
            ..Default::default()
        };
        for c in &ok.rpr_contents {
            match c {
                w::ReadPlusContent::Nfs4ContentData(d) => r.data += d.d_data.len() as u64,
                w::ReadPlusContent::Nfs4ContentHole(h) => r.holes += h.di_length,
                w::ReadPlusContent::Default(t) => {
                    return Err(err!("{}: unknown READ_PLUS content {t:?}", self.what))
                }
            }
        }
        Ok(r)
    }

    /// WRITE: count written.
    pub fn write(&mut self) -> Result<u32> {
        match self.next()? {
            w::Write4res::Nfs4Ok(ok) => Ok(ok.count),
            w::Write4res::Default(s) => Err(self.failed::<w::Write4res>(s)),
        }
    }

    /// READDIR: the cookie verifier and the list.
    pub fn readdir(&mut self) -> Result<w::Readdir4resok> {
        match self.next()? {
            w::Readdir4res::Nfs4Ok(ok) => Ok(ok),
            w::Readdir4res::Default(s) => Err(self.failed::<w::Readdir4res>(s)),
        }
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
    sessionid: w::Sessionid4,
    slots: Slots,
    /// Largest READ / WRITE payload the session allows (at most 1 MiB).
    pub max_io: u32,
    owner_seq: AtomicU32,
}

/// A verifier that differs between runs and owners.
fn verifier(owner: &[u8]) -> w::Verifier4 {
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

/// Channel attributes asked for at CREATE_SESSION.
fn channel(maxreq: u32, maxresp: u32, cached: u32, maxops: u32, reqs: u32) -> w::ChannelAttrs4 {
    w::ChannelAttrs4 {
        ca_headerpadsize: 0,
        ca_maxrequestsize: maxreq,
        ca_maxresponsesize: maxresp,
        ca_maxresponsesize_cached: cached,
        ca_maxoperations: maxops,
        ca_maxrequests: reqs,
        ca_rdma_ird: Vec::new(),
    }
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
        let what = "EXCHANGE_ID";
        let args = A::OpExchangeId(w::ExchangeId4args {
            eia_clientowner: w::ClientOwner4 {
                co_verifier: verifier(owner.as_bytes()),
                co_ownerid: Bytes::copy_from_slice(owner.as_bytes()),
            },
            eia_flags: w::EXCHGID4_FLAG_USE_NON_PNFS,
            eia_state_protect: w::StateProtect4A::Sp4None,
            eia_client_impl_id: Vec::new(),
        });
        let mut r = raw_compound(&rpc, minor, what, args).await?;
        let (clientid, seqid) = match r.next()? {
            w::ExchangeId4res::Nfs4Ok(ok) => (ok.eir_clientid, ok.eir_sequenceid),
            w::ExchangeId4res::Default(s) => return Err(r.failed::<w::ExchangeId4res>(s)),
        };
        // CREATE_SESSION: fore channel 1 MiB + headroom each way, `slots` slots; no back channel.
        let what = "CREATE_SESSION";
        let args = A::OpCreateSession(w::CreateSession4args {
            csa_clientid: clientid,
            csa_sequence: seqid,
            csa_flags: 0,
            csa_fore_chan_attrs: channel((1 << 20) + 8192, (1 << 20) + 8192, 8192, 16, slots),
            csa_back_chan_attrs: channel(4096, 4096, 0, 2, 1),
            csa_cb_program: 0x4000_0000,
            csa_sec_parms: vec![w::CallbackSecParms4::AuthNone],
        });
        let mut r = raw_compound(&rpc, minor, what, args).await?;
        let ok = match r.next()? {
            w::CreateSession4res::Nfs4Ok(ok) => ok,
            w::CreateSession4res::Default(s) => return Err(r.failed::<w::CreateSession4res>(s)),
        };
        let fore = &ok.csr_fore_chan_attrs;
        let nslots = fore.ca_maxrequests.clamp(1, 1024);
        let max_io = (fore.ca_maxrequestsize.min(fore.ca_maxresponsesize))
            .saturating_sub(1024)
            .min(1 << 20);
        // Rounded down to a multiple of 4 KiB so that I/O stays aligned.
        let max_io = max_io & !4095;
        let c = V4 {
            rpc,
            minor,
            clientid,
            sessionid: ok.csr_sessionid,
            slots: Slots {
                sem: Semaphore::new(nslots as usize),
                free: Mutex::new((0..nslots).rev().map(|s| (s, 0)).collect()),
                highest: nslots - 1,
            },
            max_io,
            owner_seq: AtomicU32::new(0),
        };
        let mut r = c
            .compound("RECLAIM_COMPLETE", Ops::new().reclaim_complete())
            .await?;
        r.skip::<w::ReclaimComplete4res>()?;
        Ok(c)
    }

    /// NULL.
    pub async fn null(&self) -> Result<()> {
        self.rpc
            .call(w::NFS4_PROGRAM, w::NFS_V4, w::NFSPROC4_NULL, |_| {})
            .await?;
        Ok(())
    }

    /// DESTROY_SESSION and DESTROY_CLIENTID, so the server drops this client's state now
    /// rather than at lease expiry.
    pub async fn destroy(&self) -> Result<()> {
        let args = A::OpDestroySession(w::DestroySession4args {
            dsa_sessionid: self.sessionid,
        });
        let mut r = raw_compound(&self.rpc, self.minor, "DESTROY_SESSION", args).await?;
        r.skip::<w::DestroySession4res>()?;
        let args = A::OpDestroyClientid(w::DestroyClientid4args {
            dca_clientid: self.clientid,
        });
        let mut r = raw_compound(&self.rpc, self.minor, "DESTROY_CLIENTID", args).await?;
        r.skip::<w::DestroyClientid4res>()
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
        let (args, expect) = ops.into_compound(
            self.minor,
            w::Sequence4args {
                sa_sessionid: self.sessionid,
                sa_sequenceid: seq,
                sa_slotid: slot,
                sa_highest_slotid: self.slots.highest,
                sa_cachethis: false,
            },
        );
        let reply = self
            .rpc
            .call_expect(
                w::NFS4_PROGRAM,
                w::NFS_V4,
                w::NFSPROC4_COMPOUND,
                expect,
                |e| args.encode(e),
            )
            .await?;
        let mut r = Res::new(what, reply)?;
        match r.take()? {
            w::Sequence4res::Nfs4Ok(_) => {
                guard.seq = Some(seq);
                Ok(r)
            }
            w::Sequence4res::Default(status) => {
                // The server did not use the slot: its sequence stays where it was.
                guard.seq = Some(seq.wrapping_sub(1));
                Err(r.failed::<w::Sequence4res>(status))
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
            ops = ops.lookup(c);
            n += 1;
        }
        let mut r = self.compound("LOOKUP path", ops.getfh()).await?;
        r.skip::<w::Putrootfh4res>()?;
        for _ in 0..n {
            r.skip::<w::Lookup4res>()?;
        }
        r.getfh()
    }

    /// OPEN (create or not) of `name` in `dir`.
    pub async fn open(&self, dir: &Bytes, name: &str, create: bool, write: bool) -> Result<Open> {
        let owner = self.new_owner().into();
        let mut r = self
            .compound(
                "OPEN",
                Ops::new()
                    .putfh(dir)
                    .open(self.clientid, owner, name, create, write)
                    .getfh(),
            )
            .await?;
        r.skip::<w::Putfh4res>()?;
        let stateid = r.open()?;
        let fh = r.getfh()?;
        Ok(Open { fh, stateid })
    }

    /// OPEN with create, then CLOSE, in one COMPOUND (as `touch` would): the new handle.
    pub async fn create_closed(&self, dir: &Bytes, name: &str) -> Result<Bytes> {
        let owner = self.new_owner().into();
        let mut r = self
            .compound(
                "OPEN+CLOSE",
                Ops::new()
                    .putfh(dir)
                    .open(self.clientid, owner, name, true, true)
                    .getfh()
                    .close(&Stateid::CURRENT),
            )
            .await?;
        r.skip::<w::Putfh4res>()?;
        r.open()?;
        let fh = r.getfh()?;
        r.skip::<w::Close4res>()?;
        Ok(fh)
    }

    /// CLOSE.
    pub async fn close(&self, f: &Open) -> Result<()> {
        let mut r = self
            .compound("CLOSE", Ops::new().putfh(&f.fh).close(&f.stateid))
            .await?;
        r.skip::<w::Putfh4res>()?;
        r.skip::<w::Close4res>()
    }

    /// GETATTR of the usual attributes.
    pub async fn getattr(&self, fh: &Bytes) -> Result<()> {
        let mut r = self
            .compound("GETATTR", Ops::new().putfh(fh).getattr(&GETATTR_MASK))
            .await?;
        r.skip::<w::Putfh4res>()?;
        r.getattr()
    }

    /// LOOKUP of `name` in `dir` as the Linux client sends it (PUTFH, LOOKUP, GETFH, GETATTR).
    pub async fn lookup(&self, dir: &Bytes, name: &str) -> Result<Bytes> {
        let mut r = self
            .compound(
                "LOOKUP",
                Ops::new()
                    .putfh(dir)
                    .lookup(name)
                    .getfh()
                    .getattr(&GETATTR_MASK),
            )
            .await?;
        r.skip::<w::Putfh4res>()?;
        r.skip::<w::Lookup4res>()?;
        let fh = r.getfh()?;
        r.getattr()?;
        Ok(fh)
    }

    /// WRITE (`stable`: 0 unstable, 1 data sync, 2 file sync); returns the count written.
    pub async fn write(&self, f: &Open, off: u64, data: Bytes, stable: u32) -> Result<u32> {
        let stable = i32::try_from(stable)
            .ok()
            .and_then(w::StableHow4::from_i32)
            .ok_or_else(|| err!("WRITE: no stable_how4 {stable}"))?;
        let mut r = self
            .compound(
                "WRITE",
                Ops::new().putfh(&f.fh).write(&f.stateid, off, stable, data),
            )
            .await?;
        r.skip::<w::Putfh4res>()?;
        r.write()
    }

    /// READ: data and eof.
    pub async fn read(&self, f: &Open, off: u64, count: u32) -> Result<(Bytes, bool)> {
        let mut r = self
            .compound("READ", Ops::new().putfh(&f.fh).read(&f.stateid, off, count))
            .await?;
        r.skip::<w::Putfh4res>()?;
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
        r.skip::<w::Putfh4res>()?;
        r.read_plus()
    }

    /// LAYOUTGET of a flexible-files layout of the whole of the open file `f`.
    pub async fn layoutget(&self, f: &Open, write: bool) -> Result<Layout> {
        let mut r = self
            .compound(
                "LAYOUTGET",
                Ops::new().putfh(&f.fh).layoutget(&f.stateid, write),
            )
            .await?;
        r.skip::<w::Putfh4res>()?;
        let ok = match r.next()? {
            w::Layoutget4res::Nfs4Ok(ok) => ok,
            w::Layoutget4res::Nfs4errLayouttrylater(_) => {
                return Err(r.failed::<w::Layoutget4res>(w::Nfsstat4::NFS4ERR_LAYOUTTRYLATER))
            }
            w::Layoutget4res::Default(s) => return Err(r.failed::<w::Layoutget4res>(s)),
        };
        let layout = ok
            .logr_layout
            .into_iter()
            .find(|l| l.lo_content.loc_type == w::Layouttype4::LAYOUT4_FLEX_FILES)
            .ok_or_else(|| err!("LAYOUTGET: no flexible-files layout in the reply"))?;
        let ff = w::FfLayout4::decode(&mut Decoder::new(layout.lo_content.loc_body))
            .map_err(|e| err!("LAYOUTGET: ff_layout4: {e}"))?;
        Ok(Layout {
            stateid: ok.logr_stateid.into(),
            ff,
        })
    }

    /// GETDEVICEINFO of a flexible-files device: its addresses and NFS versions.
    pub async fn getdeviceinfo(&self, id: &w::Deviceid4) -> Result<w::FfDeviceAddr4> {
        let mut r = self
            .compound("GETDEVICEINFO", Ops::new().getdeviceinfo(id))
            .await?;
        let ok = match r.next()? {
            w::Getdeviceinfo4res::Nfs4Ok(ok) => ok,
            w::Getdeviceinfo4res::Nfs4errToosmall(_) => {
                return Err(r.failed::<w::Getdeviceinfo4res>(w::Nfsstat4::NFS4ERR_TOOSMALL))
            }
            w::Getdeviceinfo4res::Default(s) => return Err(r.failed::<w::Getdeviceinfo4res>(s)),
        };
        w::FfDeviceAddr4::decode(&mut Decoder::new(ok.gdir_device_addr.da_addr_body))
            .map_err(|e| err!("GETDEVICEINFO: ff_device_addr4: {e}"))
    }

    /// LAYOUTCOMMIT after writes up to `end` through the layout `sid` of `fh`.
    pub async fn layoutcommit(&self, fh: &Bytes, sid: &Stateid, end: u64) -> Result<()> {
        let mut r = self
            .compound("LAYOUTCOMMIT", Ops::new().putfh(fh).layoutcommit(sid, end))
            .await?;
        r.skip::<w::Putfh4res>()?;
        r.skip::<w::Layoutcommit4res>()
    }

    /// LAYOUTRETURN of the layout `sid` of `fh`.
    pub async fn layoutreturn(&self, fh: &Bytes, sid: &Stateid) -> Result<()> {
        let mut r = self
            .compound("LAYOUTRETURN", Ops::new().putfh(fh).layoutreturn(sid))
            .await?;
        r.skip::<w::Putfh4res>()?;
        r.skip::<w::Layoutreturn4res>()
    }

    /// COMMIT of the whole file.
    pub async fn commit(&self, fh: &Bytes) -> Result<()> {
        let mut r = self
            .compound("COMMIT", Ops::new().putfh(fh).commit())
            .await?;
        r.skip::<w::Putfh4res>()?;
        r.skip::<w::Commit4res>()
    }

    /// SETATTR of the size through an open stateid.
    pub async fn set_size(&self, f: &Open, size: u64) -> Result<()> {
        let mut r = self
            .compound(
                "SETATTR",
                Ops::new().putfh(&f.fh).set_size(&f.stateid, size),
            )
            .await?;
        r.skip::<w::Putfh4res>()?;
        r.skip::<w::Setattr4res>()
    }

    /// REMOVE of `name` in `dir` (files and empty directories).
    pub async fn remove(&self, dir: &Bytes, name: &str) -> Result<()> {
        let mut r = self
            .compound("REMOVE", Ops::new().putfh(dir).remove(name))
            .await?;
        r.skip::<w::Putfh4res>()?;
        r.skip::<w::Remove4res>()
    }

    /// CREATE of directory `name` in `dir`: its handle.
    pub async fn mkdir(&self, dir: &Bytes, name: &str) -> Result<Bytes> {
        let mut r = self
            .compound("CREATE", Ops::new().putfh(dir).mkdir(name).getfh())
            .await?;
        r.skip::<w::Putfh4res>()?;
        r.skip::<w::Create4res>()?;
        r.getfh()
    }

    /// The whole listing of `dir` (dircount 16 KiB, maxcount 64 KiB per READDIR): the names and
    /// the number of COMPOUNDs.
    pub async fn readdir(&self, dir: &Bytes) -> Result<(Vec<Bytes>, u32)> {
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
            r.skip::<w::Putfh4res>()?;
            let ok = r.readdir()?;
            verf = ok.cookieverf;
            let n = ok.reply.entries.len();
            for e in ok.reply.entries {
                cookie = e.cookie;
                names.push(e.name);
            }
            if ok.reply.eof || n == 0 {
                return Ok((names, calls));
            }
        }
    }
}

/// A COMPOUND of the one operation `op` without SEQUENCE (EXCHANGE_ID, CREATE_SESSION,
/// DESTROY_SESSION, DESTROY_CLIENTID).
async fn raw_compound(rpc: &RpcConn, minor: u32, what: &'static str, op: A) -> Result<Res> {
    let args = w::Compound4args {
        tag: Bytes::new(),
        minorversion: minor,
        argarray: vec![op],
    };
    let reply = rpc
        .call(w::NFS4_PROGRAM, w::NFS_V4, w::NFSPROC4_COMPOUND, |e| {
            args.encode(e)
        })
        .await
        .map_err(|e: RpcError| err!("{what}: {e}"))?;
    Res::new(what, reply)
}

mod ops;

pub use ops::Ops;

#[cfg(test)]
mod tests;
