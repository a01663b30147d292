//! A raw NFSv4.0 / 4.1 / 4.2 COMPOUND client for the integration tests, on the raw RPC
//! client of this module and the wire types `nfs4wire` generates from RFC 7863's XDR.
//!
//! Its types, numbers and codecs are the ones `nfs4wire` generates from the XDR text of the
//! RFCs, not the server's own tables, so that a wrong number on the server's side shows up.
//!
//! [`Ops`] builds the operations of one COMPOUND; [`CompoundRes`] is the decoded
//! `COMPOUND4res`, with accessors for the results tests read; [`V4`] keeps a connection with
//! its client id and (4.1+) session and slot table.

// Each test file uses a different part of this module.
#![allow(dead_code)]

mod attrs;
mod ops;

use std::path::{Component, Path};

use bytes::Bytes;
use nfs4wire::{self as w, NfsOpnum4 as Op, NfsResop4 as R, Nfsstat4};
use xdr::{Decode, Decoder, Encode};

pub use attrs::*;
pub use ops::*;

use super::{decode_all, encode, RpcClient, RpcReply};

/// The tag of every COMPOUND this client sends.
const TAG: &[u8] = b"rnfs-test";

/// The stateid and recall flag of a read or write delegation (`None` for no delegation).
pub fn delegated(d: &w::OpenDelegation4) -> Option<(&w::Stateid4, bool)> {
    match d {
        w::OpenDelegation4::OpenDelegateRead(r) => Some((&r.stateid, r.recall)),
        w::OpenDelegation4::OpenDelegateWrite(wr) => Some((&wr.stateid, wr.recall)),
        w::OpenDelegation4::OpenDelegateNone | w::OpenDelegation4::OpenDelegateNoneExt(_) => None,
    }
}

/// The bytes of READ or READ_PLUS data, which a decoded reply holds in memory.
pub fn payload(p: &xdr::Payload) -> &Bytes {
    p.in_memory().expect("decoded data is in memory")
}

/// The entries of a READDIR reply's list, in order.
pub fn entries(list: &w::Dirlist4) -> Vec<&w::Entry4> {
    list.entries.iter().collect()
}

/// The result of one operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpRes {
    /// The operation.
    pub op: Op,
    /// Its status.
    pub status: Nfsstat4,
    /// The generated nfs_resop4.
    pub res: R,
}

impl OpRes {
    fn new(res: R) -> OpRes {
        // Every result in nfs_resop4 begins with its nfsstat4 (it is what each result's union
        // switches on, or its first field), right after the operation number: read it there
        // rather than from each of the arms.
        let mut d = Decoder::new(encode(&res));
        let op = Op::decode(&mut d).expect("resop");
        let status = Nfsstat4::decode(&mut d).expect("result status");
        OpRes { op, status, res }
    }

    /// LOCK's or LOCKT's LOCK4denied.
    pub fn denied(&self) -> &w::Lock4denied {
        match &self.res {
            R::OpLock(w::Lock4res::Nfs4errDenied(d))
            | R::OpLockt(w::Lockt4res::Nfs4errDenied(d)) => d,
            r => panic!("not a denied LOCK or LOCKT: {r:?}"),
        }
    }
}

/// Accessors of OpRes for the successful results of the operations named.
macro_rules! ok_results {
    ($($fn:ident: $arm:ident($res:ident) -> $ok:ty;)*) => {
        impl OpRes {
            $(#[doc = concat!("The ", stringify!($ok), " of a successful ", stringify!($arm), ".")]
            pub fn $fn(&self) -> &$ok {
                match &self.res {
                    R::$arm(w::$res::Nfs4Ok(ok)) => ok,
                    r => panic!(concat!("no successful ", stringify!($arm), " result: {:?}"), r),
                }
            })*
        }
    };
}

ok_results! {
    getfh: OpGetfh(Getfh4res) -> w::Getfh4resok;
    getattr: OpGetattr(Getattr4res) -> w::Getattr4resok;
    sequence: OpSequence(Sequence4res) -> w::Sequence4resok;
    open: OpOpen(Open4res) -> w::Open4resok;
    create: OpCreate(Create4res) -> w::Create4resok;
    remove: OpRemove(Remove4res) -> w::Remove4resok;
    rename: OpRename(Rename4res) -> w::Rename4resok;
    read: OpRead(Read4res) -> w::Read4resok;
    write: OpWrite(Write4res) -> w::Write4resok;
    readdir: OpReaddir(Readdir4res) -> w::Readdir4resok;
    read_plus: OpReadPlus(ReadPlus4res) -> w::ReadPlusRes4;
    seek: OpSeek(Seek4res) -> w::SeekRes4;
    copy: OpCopy(Copy4res) -> w::Copy4resok;
    exchange_id: OpExchangeId(ExchangeId4res) -> w::ExchangeId4resok;
    create_session: OpCreateSession(CreateSession4res) -> w::CreateSession4resok;
    setclientid: OpSetclientid(Setclientid4res) -> w::Setclientid4resok;
    layoutget: OpLayoutget(Layoutget4res) -> w::Layoutget4resok;
    getdeviceinfo: OpGetdeviceinfo(Getdeviceinfo4res) -> w::Getdeviceinfo4resok;
    layoutcommit: OpLayoutcommit(Layoutcommit4res) -> w::Layoutcommit4resok;
    layoutreturn: OpLayoutreturn(Layoutreturn4res) -> w::LayoutreturnStateid;
    secinfo_no_name: OpSecinfoNoName(Secinfo4res) -> w::Secinfo4resok;
}

/// A decoded COMPOUND4res.
#[derive(Debug, Clone)]
pub struct CompoundRes {
    /// Status of the last operation executed.
    pub status: Nfsstat4,
    /// tag.
    pub tag: Bytes,
    /// Results, in order.
    pub results: Vec<OpRes>,
    /// The whole COMPOUND4res as received.
    pub raw: Bytes,
}

impl CompoundRes {
    /// Decodes a COMPOUND4res.
    pub fn decode(raw: Bytes) -> CompoundRes {
        let c: w::Compound4res = decode_all(raw.clone());
        CompoundRes {
            status: c.status,
            tag: c.tag,
            results: c.resarray.into_iter().map(OpRes::new).collect(),
            raw,
        }
    }

    /// Panics unless the whole COMPOUND succeeded.
    pub fn ok(self, what: &str) -> CompoundRes {
        assert_eq!(
            self.status,
            Nfsstat4::NFS4_OK,
            "{what}: COMPOUND failed: {}",
            self.summary()
        );
        self
    }

    /// (op, status) of every result, for messages.
    pub fn summary(&self) -> String {
        let r: Vec<String> = self
            .results
            .iter()
            .map(|r| format!("{:?}={:?}", r.op, r.status))
            .collect();
        r.join(" ")
    }

    /// The first result of operation `op`.
    pub fn get(&self, op: Op) -> &OpRes {
        self.results
            .iter()
            .find(|r| r.op == op)
            .unwrap_or_else(|| panic!("no result of {op:?}: {}", self.summary()))
    }

    /// The last result.
    pub fn last(&self) -> &OpRes {
        self.results.last().expect("empty COMPOUND result")
    }

    /// The handle of the first GETFH.
    pub fn fh(&self) -> Bytes {
        self.get(Op::OP_GETFH).getfh().object.clone()
    }

    /// The attributes of the first GETATTR.
    pub fn attrs(&self) -> Attrs {
        Attrs::of(&self.get(Op::OP_GETATTR).getattr().obj_attributes)
    }

    /// The stateid of the OPEN.
    pub fn open_stateid(&self) -> w::Stateid4 {
        self.get(Op::OP_OPEN).open().stateid.clone()
    }

    /// The stateid returned by the first result of `op` (OPEN, OPEN_CONFIRM, CLOSE, LOCK,
    /// LOCKU).
    pub fn stateid(&self, op: Op) -> w::Stateid4 {
        match &self.get(op).res {
            R::OpOpen(w::Open4res::Nfs4Ok(ok)) => ok.stateid.clone(),
            R::OpOpenConfirm(w::OpenConfirm4res::Nfs4Ok(ok)) => ok.open_stateid.clone(),
            R::OpClose(w::Close4res::Nfs4Ok(s)) | R::OpLocku(w::Locku4res::Nfs4Ok(s)) => s.clone(),
            R::OpLock(w::Lock4res::Nfs4Ok(ok)) => ok.lock_stateid.clone(),
            r => panic!("{op:?}: {r:?}"),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The client
// ---------------------------------------------------------------------------------------------

/// An NFSv4 client on one connection: the client id and, for 4.1 and later, one session.
pub struct V4 {
    /// The RPC connection.
    pub rpc: RpcClient,
    /// Minor version of every COMPOUND.
    pub minor: u32,
    /// Client id from SETCLIENTID or EXCHANGE_ID.
    pub clientid: u64,
    /// Session id (4.1+).
    pub sessionid: w::Sessionid4,
    /// Last sequence id used in each slot (4.1+).
    pub slots: Vec<u32>,
    /// The client owner string.
    pub owner: Vec<u8>,
}

/// A verifier that differs between runs and owners.
pub fn boot_verifier(owner: &[u8]) -> w::Verifier4 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in owner {
        h = (h ^ *b as u64).wrapping_mul(0x1000_0000_01b3);
    }
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos() as u64;
    (h ^ t).to_be_bytes()
}

/// Already-encoded arguments for [`RpcClient::call`].
struct RawArgs(Bytes);

impl Encode for RawArgs {
    fn encode(&self, e: &mut xdr::Encoder) {
        e.opaque_fixed(&self.0);
    }
}

impl V4 {
    /// A connection without client state yet.
    pub fn connect(port: u16, minor: u32, owner: &str) -> V4 {
        V4::over(RpcClient::connect(port), minor, owner)
    }

    /// Client `owner` of NFSv4.`minor` over `rpc`, without client state yet.
    pub fn over(rpc: RpcClient, minor: u32, owner: &str) -> V4 {
        V4 {
            rpc,
            minor,
            clientid: 0,
            sessionid: [0; 16],
            slots: Vec::new(),
            owner: owner.as_bytes().to_vec(),
        }
    }

    /// Connects and sets up NFSv4.`minor` (1 or 2) state: EXCHANGE_ID, CREATE_SESSION with 8
    /// slots, RECLAIM_COMPLETE.
    pub fn session(port: u16, minor: u32, owner: &str) -> V4 {
        let mut c = V4::connect(port, minor, owner);
        c.establish(8);
        c
    }

    /// Connects and sets up NFSv4.0 state: SETCLIENTID, SETCLIENTID_CONFIRM.
    pub fn v40(port: u16, owner: &str) -> V4 {
        let mut c = V4::connect(port, 0, owner);
        c.establish_v40();
        c
    }

    /// SETCLIENTID and SETCLIENTID_CONFIRM (NFSv4.0) on this connection.
    pub fn establish_v40(&mut self) {
        let verf = boot_verifier(&self.owner);
        let owner = self.owner.clone();
        let r = self
            .compound(Ops::new().setclientid(verf, &owner))
            .ok("SETCLIENTID");
        let ok = r.get(Op::OP_SETCLIENTID).setclientid();
        self.compound(Ops::new().setclientid_confirm(ok.clientid, ok.setclientid_confirm))
            .ok("SETCLIENTID_CONFIRM");
        self.clientid = ok.clientid;
    }

    /// EXCHANGE_ID, CREATE_SESSION and RECLAIM_COMPLETE on this connection.
    pub fn establish(&mut self, slots: u32) {
        self.establish_with(slots, true);
    }

    /// EXCHANGE_ID and CREATE_SESSION, then RECLAIM_COMPLETE unless the client is about to
    /// reclaim state after a server restart.
    pub fn establish_with(&mut self, slots: u32, reclaim_complete: bool) {
        self.establish_flags(slots, reclaim_complete, 0);
    }

    /// Like [`V4::establish`], with the session's back channel on this connection: the
    /// server may send callbacks (CB_RECALL) on it, read them with `rpc.read_record()`.
    pub fn establish_back_channel(&mut self, slots: u32) {
        self.establish_flags(slots, true, w::CREATE_SESSION4_FLAG_CONN_BACK_CHAN);
    }

    /// [`V4::establish_back_channel`] without RECLAIM_COMPLETE: a client about to reclaim.
    pub fn establish_back_channel_to_reclaim(&mut self, slots: u32) {
        self.establish_flags(slots, false, w::CREATE_SESSION4_FLAG_CONN_BACK_CHAN);
    }

    /// EXCHANGE_ID (non-pNFS) for this client's owner; returns the client id and the sequence
    /// id its CREATE_SESSION must use.
    pub fn exchange_id(&mut self) -> (u64, u32) {
        let verf = boot_verifier(&self.owner);
        let owner = self.owner.clone();
        let r = self
            .compound(Ops::new().exchange_id(verf, &owner, w::EXCHGID4_FLAG_USE_NON_PNFS))
            .ok("EXCHANGE_ID");
        let ok = r.get(Op::OP_EXCHANGE_ID).exchange_id();
        (ok.eir_clientid, ok.eir_sequenceid)
    }

    fn establish_flags(&mut self, slots: u32, reclaim_complete: bool, flags: u32) {
        let (clientid, seqid) = self.exchange_id();
        let r = self
            .compound(Ops::new().create_session_flags(clientid, seqid, slots, flags))
            .ok("CREATE_SESSION");
        let ok = r.get(Op::OP_CREATE_SESSION).create_session();
        self.clientid = clientid;
        self.sessionid = ok.csr_sessionid;
        self.slots = vec![0; ok.csr_fore_chan_attrs.ca_maxrequests as usize];
        if reclaim_complete {
            self.call(Ops::new().reclaim_complete(false))
                .ok("RECLAIM_COMPLETE");
        }
    }

    /// One COMPOUND with exactly these operations (no SEQUENCE added).
    pub fn compound(&mut self, ops: Ops) -> CompoundRes {
        let args = RawArgs(ops.compound_args(TAG, self.minor));
        let (prog, vers, proc_) = (w::NFS4_PROGRAM, w::NFS_V4, w::NFSPROC4_COMPOUND);
        match self.rpc.call(prog, vers, proc_, &args) {
            RpcReply::Success(b) => CompoundRes::decode(b),
            other => panic!("COMPOUND not accepted: {other:?}"),
        }
    }

    /// A COMPOUND on slot `slot` with sequence id `seqid` (4.1+); the slot table is not touched.
    pub fn call_slot(&mut self, slot: u32, seqid: u32, cachethis: bool, ops: Ops) -> CompoundRes {
        let highest = self.slots.len().saturating_sub(1) as u32;
        let sid = self.sessionid;
        self.compound(
            Ops::new()
                .sequence(&sid, seqid, slot, highest, cachethis)
                .then(ops),
        )
    }

    /// A COMPOUND: with SEQUENCE on slot 0 for 4.1+, as is for 4.0.
    pub fn call(&mut self, ops: Ops) -> CompoundRes {
        if self.minor == 0 {
            return self.compound(ops);
        }
        let seq = self.slots[0].wrapping_add(1);
        self.slots[0] = seq;
        let r = self.call_slot(0, seq, false, ops);
        assert_eq!(
            r.results.first().map(|x| (x.op, x.status)),
            Some((Op::OP_SEQUENCE, Nfsstat4::NFS4_OK)),
            "SEQUENCE failed: {}",
            r.summary()
        );
        r
    }

    /// The handle of `path` (an absolute export path) through the pseudo file system.
    pub fn path_fh(&mut self, path: &Path) -> Bytes {
        let mut ops = Ops::new().putrootfh();
        for c in path.components() {
            if let Component::Normal(n) = c {
                ops = ops.lookup(n.as_encoded_bytes());
            }
        }
        self.call(ops.getfh())
            .ok(&format!("LOOKUP {}", path.display()))
            .fh()
    }

    /// OPEN with CLAIM_PREVIOUS (4.1+, a reclaim in the grace period) of `fh` for this
    /// client's open-owner `owner`; returns the whole result (PUTFH, OPEN, GETFH).
    pub fn reclaim_open(&mut self, fh: &[u8], owner: &[u8], access: u32, deny: u32) -> CompoundRes {
        let claim = w::OpenClaim4::ClaimPrevious(w::OpenDelegationType4::OpenDelegateNone);
        let ops = Ops::new().putfh(fh).open(
            0,
            access,
            deny,
            self.clientid,
            owner,
            &OpenHow::NoCreate,
            &claim,
        );
        self.call(ops.getfh())
    }

    /// The handle of `name` in directory `dir` (LOOKUP that must succeed).
    pub fn lookup_fh(&mut self, dir: &[u8], name: &str) -> Bytes {
        self.call(Ops::new().putfh(dir).lookup(name).getfh())
            .ok(&format!("LOOKUP {name}"))
            .fh()
    }

    /// OPEN (4.1+) of `name` in `dir` for this client's open-owner `owner`; returns the whole
    /// result (PUTFH, OPEN, GETFH).
    pub fn open(
        &mut self,
        dir: &[u8],
        name: &str,
        owner: &str,
        access: u32,
        deny: u32,
        how: OpenHow,
    ) -> CompoundRes {
        let claim = w::OpenClaim4::ClaimNull(Bytes::copy_from_slice(name.as_bytes()));
        let open = Ops::new().putfh(dir).open(
            0,
            access,
            deny,
            self.clientid,
            owner.as_bytes(),
            &how,
            &claim,
        );
        self.call(open.getfh())
    }

    /// OPEN that must succeed (4.1+); returns the file handle and open stateid.
    pub fn open_ok(
        &mut self,
        dir: &[u8],
        name: &str,
        owner: &str,
        access: u32,
        deny: u32,
        how: OpenHow,
    ) -> (Bytes, w::Stateid4) {
        let r = self
            .open(dir, name, owner, access, deny, how)
            .ok(&format!("OPEN {name}"));
        (r.fh(), r.open_stateid())
    }

    /// CLOSE (4.1+) that must succeed.
    pub fn close_ok(&mut self, fh: &[u8], sid: &w::Stateid4) {
        self.call(Ops::new().putfh(fh).close(0, sid)).ok("CLOSE");
    }

    /// WRITE (FILE_SYNC) of all of `data` at `offset`, in chunks of at most 1 MiB.
    pub fn write_all(&mut self, fh: &[u8], sid: &w::Stateid4, offset: u64, data: &[u8]) {
        for (i, chunk) in data.chunks(1 << 20).enumerate() {
            let off = offset + (i << 20) as u64;
            let ops = Ops::new()
                .putfh(fh)
                .write(sid, off, w::StableHow4::FileSync4, chunk);
            let r = self.call(ops).ok("WRITE");
            let count = r.get(Op::OP_WRITE).write().count;
            assert_eq!(count as usize, chunk.len(), "short WRITE");
        }
    }

    /// GETATTR of the attribute numbers `bits` on `fh`.
    pub fn getattr(&mut self, fh: &[u8], bits: &[u32]) -> Attrs {
        self.call(Ops::new().putfh(fh).getattr(bits))
            .ok("GETATTR")
            .attrs()
    }

    /// The next call on this connection's back channel (within 20 s): its XID and the whole
    /// record.
    pub fn next_callback(&mut self) -> (u32, Bytes) {
        let cb = match self.rpc.take_callback() {
            Some(cb) => cb,
            None => {
                assert!(
                    self.rpc.readable_within(std::time::Duration::from_secs(20)),
                    "no callback on the connection"
                );
                self.rpc
                    .read_record()
                    .expect("a callback on the connection")
            }
        };
        assert_eq!(&cb[4..8], &[0, 0, 0, 0], "not an RPC call");
        (u32::from_be_bytes([cb[0], cb[1], cb[2], cb[3]]), cb)
    }

    /// Answers CB_COMPOUND `xid` with NFS4_OK: CB_SEQUENCE, then `res`.
    pub fn answer_callback(&mut self, xid: u32, res: w::NfsCbResop4) {
        let mut e = xdr::Encoder::new();
        sunrpc::msg::encode_accepted(&mut e, xid, sunrpc::msg::AcceptStat::Success);
        e.encode(&w::CbCompound4res {
            status: Nfsstat4::NFS4_OK,
            tag: Bytes::new(),
            resarray: vec![
                w::NfsCbResop4::OpCbSequence(w::CbSequence4res::Nfs4Ok(w::CbSequence4resok {
                    csr_sessionid: [0; 16],
                    csr_sequenceid: 1,
                    csr_slotid: 0,
                    csr_highest_slotid: 0,
                    csr_target_highest_slotid: 0,
                })),
                res,
            ],
        });
        self.rpc
            .send_record(&e.finish().to_bytes())
            .expect("send the callback reply");
    }

    /// DESTROY_SESSION and DESTROY_CLIENTID (4.1+).
    pub fn destroy(&mut self) {
        let sid = self.sessionid;
        self.compound(Ops::new().destroy_session(&sid))
            .ok("DESTROY_SESSION");
        let id = self.clientid;
        self.compound(Ops::new().destroy_clientid(id))
            .ok("DESTROY_CLIENTID");
    }
}
