//! The operations of a COMPOUND, built as the generated `nfs_argop4` values.

use bytes::Bytes;
use nfs4wire::{self as w, NfsArgop4 as A};
use xdr::{Encode, Encoder};

use super::Sattr;

/// The callback program this client names in SETCLIENTID and CREATE_SESSION: the client
/// picks it, and the Linux client picks this one.
pub const CB_PROGRAM: u32 = 0x4000_0000;

/// The anonymous stateid (RFC 8881 section 8.2.3: all zeros).
pub const ANON_STATEID: w::Stateid4 = w::Stateid4 {
    seqid: 0,
    other: [0; 12],
};

/// OPEN's openflag4, with the attributes of a create as a [`Sattr`].
#[derive(Debug, Clone)]
pub enum OpenHow {
    /// OPEN4_NOCREATE.
    NoCreate,
    /// UNCHECKED4.
    Unchecked(Sattr),
    /// GUARDED4.
    Guarded(Sattr),
    /// EXCLUSIVE4 (NFSv4.0).
    Exclusive(w::Verifier4),
    /// EXCLUSIVE4_1.
    Exclusive41(w::Verifier4, Sattr),
}

impl OpenHow {
    fn wire(&self) -> w::Openflag4 {
        use w::Createhow4 as C;
        w::Openflag4::Open4Create(match self {
            OpenHow::NoCreate => return w::Openflag4::Default(w::Opentype4::Open4Nocreate),
            OpenHow::Unchecked(s) => C::Unchecked4(s.fattr()),
            OpenHow::Guarded(s) => C::Guarded4(s.fattr()),
            OpenHow::Exclusive(v) => C::Exclusive4(*v),
            OpenHow::Exclusive41(v, s) => C::Exclusive41(w::Creatverfattr {
                cva_verf: *v,
                cva_attrs: s.fattr(),
            }),
        })
    }
}

/// LOCK's locker4 for a lock-owner new to the server (open_to_lock_owner4).
pub fn new_lock_owner(
    open_seqid: u32,
    open_stateid: &w::Stateid4,
    lock_seqid: u32,
    clientid: u64,
    owner: &[u8],
) -> w::Locker4 {
    w::Locker4::True(w::OpenToLockOwner4 {
        open_seqid,
        open_stateid: open_stateid.clone(),
        lock_seqid,
        lock_owner: owner4(clientid, owner),
    })
}

/// LOCK's locker4 for a lock-owner the server knows by its lock stateid.
pub fn exist_lock_owner(lock_stateid: &w::Stateid4, lock_seqid: u32) -> w::Locker4 {
    w::Locker4::False(w::ExistLockOwner4 {
        lock_stateid: lock_stateid.clone(),
        lock_seqid,
    })
}

/// Channel attributes for CREATE_SESSION.
pub fn channel(maxreq: u32, maxresp: u32, cached: u32, maxops: u32, reqs: u32) -> w::ChannelAttrs4 {
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

/// A component4, or any other opaque argument.
fn bytes(b: impl AsRef<[u8]>) -> Bytes {
    Bytes::copy_from_slice(b.as_ref())
}

/// An open-owner or lock-owner.
fn owner4(clientid: u64, owner: &[u8]) -> w::StateOwner4 {
    w::StateOwner4 {
        clientid,
        owner: bytes(owner),
    }
}

/// One operation of a COMPOUND.
#[derive(Debug, Clone)]
enum Op {
    /// A generated nfs_argop4.
    Arg(A),
    /// An operation number and argument bytes sent as they are: unknown operations and
    /// arguments that do not decode, which no nfs_argop4 can carry.
    Raw(w::NfsOpnum4, Bytes),
}

impl Encode for Op {
    fn encode(&self, e: &mut Encoder) {
        match self {
            Op::Arg(a) => a.encode(e),
            Op::Raw(n, args) => {
                n.encode(e);
                e.opaque_fixed(args);
            }
        }
    }
}

/// The operations of one COMPOUND, in order.
#[derive(Debug, Clone, Default)]
pub struct Ops {
    ops: Vec<Op>,
}

impl Ops {
    /// No operations yet.
    pub fn new() -> Ops {
        Ops::default()
    }

    /// Any operation, as a generated nfs_argop4.
    pub fn op(mut self, a: A) -> Ops {
        self.ops.push(Op::Arg(a));
        self
    }

    /// Operation number `n` with argument bytes sent as they are (a multiple of 4 long).
    pub fn raw(mut self, n: w::NfsOpnum4, args: &[u8]) -> Ops {
        self.ops.push(Op::Raw(n, bytes(args)));
        self
    }

    /// These operations followed by `more`.
    pub fn then(mut self, more: Ops) -> Ops {
        self.ops.extend(more.ops);
        self
    }

    /// The COMPOUND4args of these operations: a generated `Compound4args`, unless raw
    /// operations are among them.
    pub fn compound_args(self, tag: &'static [u8], minorversion: u32) -> Bytes {
        let mut e = Encoder::new();
        if self.ops.iter().all(|o| matches!(o, Op::Arg(_))) {
            let argarray = (self.ops.into_iter())
                .filter_map(|o| if let Op::Arg(a) = o { Some(a) } else { None })
                .collect();
            let tag = Bytes::from_static(tag);
            e.encode(&w::Compound4args {
                tag,
                minorversion,
                argarray,
            });
        } else {
            // COMPOUND4args laid out as the generated encoder does, the raw operations in place.
            e.opaque(tag);
            e.u32(minorversion);
            e.encode(&self.ops);
        }
        e.finish().to_bytes()
    }
}

/// Ops's builders: each operation's arguments, and the nfs_argop4 they make.
macro_rules! builders {
    ($($(#[$doc:meta])* $name:ident($($arg:ident: $t:ty),*) => $arm:ident$(($args:expr))?;)*) => {
        impl Ops {
            $($(#[$doc])*
            #[allow(clippy::too_many_arguments)]
            pub fn $name(self, $($arg: $t),*) -> Ops {
                self.op(A::$arm$(($args))?)
            })*
        }
    };
}

builders! {
    /// SEQUENCE.
    sequence(sessionid: &w::Sessionid4, seqid: u32, slot: u32, highest: u32, cachethis: bool)
        => OpSequence(w::Sequence4args { sa_sessionid: *sessionid, sa_sequenceid: seqid,
            sa_slotid: slot, sa_highest_slotid: highest, sa_cachethis: cachethis });
    /// PUTROOTFH.
    putrootfh() => OpPutrootfh;
    /// SECINFO_NO_NAME.
    secinfo_no_name(style: w::SecinfoStyle4) => OpSecinfoNoName(style);
    /// PUTFH.
    putfh(fh: &[u8]) => OpPutfh(w::Putfh4args { object: bytes(fh) });
    /// LOOKUP.
    lookup(name: impl AsRef<[u8]>) => OpLookup(w::Lookup4args { objname: bytes(name) });
    /// LOOKUPP.
    lookupp() => OpLookupp;
    /// GETFH.
    getfh() => OpGetfh;
    /// SAVEFH.
    savefh() => OpSavefh;
    /// RESTOREFH.
    restorefh() => OpRestorefh;
    /// GETATTR of the attribute numbers `bits`.
    getattr(bits: &[u32]) => OpGetattr(w::Getattr4args { attr_request: super::bitmap(bits) });
    /// READDIR, with the attribute numbers `bits` of each entry.
    readdir(cookie: u64, cookieverf: w::Verifier4, dircount: u32, maxcount: u32, bits: &[u32])
        => OpReaddir(w::Readdir4args { cookie, cookieverf, dircount, maxcount,
            attr_request: super::bitmap(bits) });
    /// OPEN.
    open(seqid: u32, share_access: u32, share_deny: u32, clientid: u64, owner: &[u8],
        how: &OpenHow, claim: &w::OpenClaim4)
        => OpOpen(w::Open4args { seqid, share_access, share_deny, owner: owner4(clientid, owner),
            openhow: how.wire(), claim: claim.clone() });
    /// OPEN_CONFIRM (NFSv4.0).
    open_confirm(sid: &w::Stateid4, seqid: u32)
        => OpOpenConfirm(w::OpenConfirm4args { open_stateid: sid.clone(), seqid });
    /// CLOSE.
    close(seqid: u32, sid: &w::Stateid4)
        => OpClose(w::Close4args { seqid, open_stateid: sid.clone() });
    /// WRITE.
    write(sid: &w::Stateid4, offset: u64, stable: w::StableHow4, data: &[u8])
        => OpWrite(w::Write4args { stateid: sid.clone(), offset, stable, data: bytes(data) });
    /// READ.
    read(sid: &w::Stateid4, offset: u64, count: u32)
        => OpRead(w::Read4args { stateid: sid.clone(), offset, count });
    /// LOCK.
    lock(locktype: w::NfsLockType4, offset: u64, length: u64, locker: &w::Locker4)
        => OpLock(w::Lock4args { locktype, reclaim: false, offset, length,
            locker: locker.clone() });
    /// LOCK, with `reclaim` set for reclaims during the grace period.
    lock_with(reclaim: bool, locktype: w::NfsLockType4, offset: u64, length: u64,
        locker: &w::Locker4)
        => OpLock(w::Lock4args { locktype, reclaim, offset, length, locker: locker.clone() });
    /// LOCKT.
    lockt(locktype: w::NfsLockType4, offset: u64, length: u64, clientid: u64, owner: &[u8])
        => OpLockt(w::Lockt4args { locktype, offset, length, owner: owner4(clientid, owner) });
    /// LOCKU.
    locku(locktype: w::NfsLockType4, seqid: u32, sid: &w::Stateid4, offset: u64, length: u64)
        => OpLocku(w::Locku4args { locktype, seqid, lock_stateid: sid.clone(), offset,
            length });
    /// SETATTR.
    setattr(sid: &w::Stateid4, s: &Sattr)
        => OpSetattr(w::Setattr4args { stateid: sid.clone(), obj_attributes: s.fattr() });
    /// SETATTR of a fattr4 built by hand (attributes [`Sattr`] does not have).
    setattr_raw(sid: &w::Stateid4, f: w::Fattr4)
        => OpSetattr(w::Setattr4args { stateid: sid.clone(), obj_attributes: f });
    /// CREATE of a directory.
    mkdir(name: impl AsRef<[u8]>, s: &Sattr) => OpCreate(w::Create4args {
        objtype: w::Createtype4::Nf4dir, objname: bytes(name), createattrs: s.fattr() });
    /// REMOVE.
    remove(name: impl AsRef<[u8]>) => OpRemove(w::Remove4args { target: bytes(name) });
    /// RENAME (saved directory / old name to current directory / new name).
    rename(old: impl AsRef<[u8]>, new: impl AsRef<[u8]>)
        => OpRename(w::Rename4args { oldname: bytes(old), newname: bytes(new) });
    /// LINK (saved file into the current directory).
    link(name: impl AsRef<[u8]>) => OpLink(w::Link4args { newname: bytes(name) });
    /// SEEK.
    seek(sid: &w::Stateid4, offset: u64, what: w::DataContent4)
        => OpSeek(w::Seek4args { sa_stateid: sid.clone(), sa_offset: offset, sa_what: what });
    /// READ_PLUS.
    read_plus(sid: &w::Stateid4, offset: u64, count: u32) => OpReadPlus(w::ReadPlus4args {
        rpa_stateid: sid.clone(), rpa_offset: offset, rpa_count: count });
    /// ALLOCATE.
    allocate(sid: &w::Stateid4, offset: u64, length: u64) => OpAllocate(w::Allocate4args {
        aa_stateid: sid.clone(), aa_offset: offset, aa_length: length });
    /// DEALLOCATE.
    deallocate(sid: &w::Stateid4, offset: u64, length: u64) => OpDeallocate(w::Deallocate4args {
        da_stateid: sid.clone(), da_offset: offset, da_length: length });
    /// COPY (intra-server, synchronous) from the saved to the current file handle.
    copy(src: &w::Stateid4, dst: &w::Stateid4, src_offset: u64, dst_offset: u64, count: u64)
        => OpCopy(w::Copy4args { ca_src_stateid: src.clone(), ca_dst_stateid: dst.clone(),
            ca_src_offset: src_offset, ca_dst_offset: dst_offset, ca_count: count,
            ca_consecutive: false, ca_synchronous: true, ca_source_server: Vec::new() });
    /// EXCHANGE_ID with SP4_NONE and no implementation id.
    exchange_id(verifier: w::Verifier4, owner: &[u8], flags: u32)
        => OpExchangeId(w::ExchangeId4args {
            eia_clientowner: w::ClientOwner4 { co_verifier: verifier, co_ownerid: bytes(owner) },
            eia_flags: flags, eia_state_protect: w::StateProtect4A::Sp4None,
            eia_client_impl_id: Vec::new() });
    /// EXCHANGE_ID with SP4_MACH_CRED, asking to enforce and allow `enforce` and `allow`.
    exchange_id_mach_cred(verifier: w::Verifier4, owner: &[u8], flags: u32, enforce: &[u32],
        allow: &[u32])
        => OpExchangeId(w::ExchangeId4args {
            eia_clientowner: w::ClientOwner4 { co_verifier: verifier, co_ownerid: bytes(owner) },
            eia_flags: flags, eia_state_protect: w::StateProtect4A::Sp4MachCred(
                w::StateProtectOps4 { spo_must_enforce: enforce.to_vec(),
                    spo_must_allow: allow.to_vec() }),
            eia_client_impl_id: Vec::new() });
    /// CREATE_SESSION with `slots` fore-channel slots and generous limits.
    create_session(clientid: u64, seq: u32, slots: u32)
        => OpCreateSession(create_session(clientid, seq, slots, 0));
    /// CREATE_SESSION with csa_flags `flags` (CREATE_SESSION4_FLAG_CONN_BACK_CHAN: callbacks
    /// over this connection).
    create_session_flags(clientid: u64, seq: u32, slots: u32, flags: u32)
        => OpCreateSession(create_session(clientid, seq, slots, flags));
    /// DELEGRETURN.
    delegreturn(sid: &w::Stateid4)
        => OpDelegreturn(w::Delegreturn4args { deleg_stateid: sid.clone() });
    /// FREE_STATEID.
    free_stateid(sid: &w::Stateid4)
        => OpFreeStateid(w::FreeStateid4args { fsa_stateid: sid.clone() });
    /// DESTROY_SESSION.
    destroy_session(sessionid: &w::Sessionid4)
        => OpDestroySession(w::DestroySession4args { dsa_sessionid: *sessionid });
    /// DESTROY_CLIENTID.
    destroy_clientid(clientid: u64)
        => OpDestroyClientid(w::DestroyClientid4args { dca_clientid: clientid });
    /// RECLAIM_COMPLETE.
    reclaim_complete(one_fs: bool)
        => OpReclaimComplete(w::ReclaimComplete4args { rca_one_fs: one_fs });
    /// SETCLIENTID with a callback address nobody listens on.
    setclientid(verifier: w::Verifier4, owner: &[u8]) => OpSetclientid(w::Setclientid4args {
        client: w::NfsClientId4 { verifier, id: bytes(owner) },
        callback: w::CbClient4 { cb_program: CB_PROGRAM, cb_location: w::Netaddr4 {
            na_r_netid: bytes("tcp"), na_r_addr: bytes("127.0.0.1.0.0") } },
        callback_ident: 1 });
    /// SETCLIENTID with the callback service at `uaddr` (a universal address over TCP).
    setclientid_at(verifier: w::Verifier4, owner: &[u8], uaddr: &str, ident: u32)
        => OpSetclientid(w::Setclientid4args {
        client: w::NfsClientId4 { verifier, id: bytes(owner) },
        callback: w::CbClient4 { cb_program: CB_PROGRAM, cb_location: w::Netaddr4 {
            na_r_netid: bytes("tcp"), na_r_addr: bytes(uaddr) } },
        callback_ident: ident });
    /// SETCLIENTID_CONFIRM.
    setclientid_confirm(clientid: u64, confirm: w::Verifier4)
        => OpSetclientidConfirm(w::SetclientidConfirm4args { clientid,
            setclientid_confirm: confirm });
    /// RENEW.
    renew(clientid: u64) => OpRenew(w::Renew4args { clientid });
}

/// CREATE_SESSION4args: fore channel of `slots` slots and 2 MiB requests and replies, a
/// small back channel (used with CREATE_SESSION4_FLAG_CONN_BACK_CHAN).
fn create_session(clientid: u64, seq: u32, slots: u32, flags: u32) -> w::CreateSession4args {
    w::CreateSession4args {
        csa_clientid: clientid,
        csa_sequence: seq,
        csa_flags: flags,
        csa_fore_chan_attrs: channel(2 << 20, 2 << 20, 64 * 1024, 16, slots),
        csa_back_chan_attrs: channel(4096, 4096, 0, 2, 1),
        csa_cb_program: CB_PROGRAM,
        csa_sec_parms: vec![w::CallbackSecParms4::AuthNone],
    }
}
