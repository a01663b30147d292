//! A raw NFSv4.0 / 4.1 / 4.2 COMPOUND client for the integration tests, built on the raw RPC
//! client of this module and the workspace's XDR codec.
//!
//! The protocol numbers are written out here from the RFCs (RFC 7530, RFC 8881, RFC 7862) rather
//! than taken from the server's crate, so that a wrong number on either side shows up.
//!
//! [`Ops`] encodes the operations of one COMPOUND; [`CompoundRes`] decodes the reply, operation
//! by operation; [`V4`] keeps a connection with its client id and (4.1+) session and slot table.

// Each test file uses a different part of this module.
#![allow(dead_code)]

use std::path::{Component, Path};

use bytes::Bytes;
use xdr::{Decoder, Encode, Encoder};

use super::{RpcClient, RpcReply};

/// NFS program and version 4.
pub const NFS_PROGRAM: u32 = 100003;
/// NFS version 4.
pub const NFS_V4: u32 = 4;
/// COMPOUND procedure.
pub const PROC_COMPOUND: u32 = 1;

/// Operation numbers (RFC 7530 / 8881 / 7862).
#[allow(missing_docs)]
pub mod op {
    pub const ACCESS: u32 = 3;
    pub const CLOSE: u32 = 4;
    pub const COMMIT: u32 = 5;
    pub const CREATE: u32 = 6;
    pub const DELEGRETURN: u32 = 8;
    pub const GETATTR: u32 = 9;
    pub const GETFH: u32 = 10;
    pub const LINK: u32 = 11;
    pub const LOCK: u32 = 12;
    pub const LOCKT: u32 = 13;
    pub const LOCKU: u32 = 14;
    pub const LOOKUP: u32 = 15;
    pub const LOOKUPP: u32 = 16;
    pub const OPEN: u32 = 18;
    pub const OPEN_CONFIRM: u32 = 20;
    pub const PUTFH: u32 = 22;
    pub const PUTROOTFH: u32 = 24;
    pub const READ: u32 = 25;
    pub const READDIR: u32 = 26;
    pub const READLINK: u32 = 27;
    pub const REMOVE: u32 = 28;
    pub const RENAME: u32 = 29;
    pub const RENEW: u32 = 30;
    pub const RESTOREFH: u32 = 31;
    pub const SAVEFH: u32 = 32;
    pub const SETATTR: u32 = 34;
    pub const SETCLIENTID: u32 = 35;
    pub const SETCLIENTID_CONFIRM: u32 = 36;
    pub const WRITE: u32 = 38;
    pub const EXCHANGE_ID: u32 = 42;
    pub const CREATE_SESSION: u32 = 43;
    pub const DESTROY_SESSION: u32 = 44;
    pub const FREE_STATEID: u32 = 45;
    pub const SEQUENCE: u32 = 53;
    pub const DESTROY_CLIENTID: u32 = 57;
    pub const RECLAIM_COMPLETE: u32 = 58;
    pub const ALLOCATE: u32 = 59;
    pub const COPY: u32 = 60;
    pub const DEALLOCATE: u32 = 62;
    pub const READ_PLUS: u32 = 68;
    pub const SEEK: u32 = 69;
    pub const ILLEGAL: u32 = 10044;
}

/// nfsstat4 values.
#[allow(missing_docs)]
pub mod st {
    pub const OK: u32 = 0;
    pub const DELAY: u32 = 10008;
    pub const NOENT: u32 = 2;
    pub const EXIST: u32 = 17;
    pub const BADOWNER: u32 = 10039;
    pub const INVAL: u32 = 22;
    pub const NOTEMPTY: u32 = 66;
    pub const DENIED: u32 = 10010;
    pub const GRACE: u32 = 10013;
    pub const SHARE_DENIED: u32 = 10015;
    pub const NOFILEHANDLE: u32 = 10020;
    pub const STALE_CLIENTID: u32 = 10022;
    pub const BAD_STATEID: u32 = 10025;
    pub const BAD_SEQID: u32 = 10026;
    pub const NO_GRACE: u32 = 10033;
    pub const RECLAIM_BAD: u32 = 10034;
    pub const LOCKS_HELD: u32 = 10037;
    pub const OPENMODE: u32 = 10038;
    pub const BADSESSION: u32 = 10052;
    pub const BADSLOT: u32 = 10053;
    pub const SEQ_MISORDERED: u32 = 10063;
    pub const RETRY_UNCACHED_REP: u32 = 10068;
    pub const OP_NOT_IN_SESSION: u32 = 10071;
}

/// Attribute numbers (fattr4 bits).
#[allow(missing_docs)]
pub mod fa {
    pub const SUPPORTED_ATTRS: u32 = 0;
    pub const TYPE: u32 = 1;
    pub const CHANGE: u32 = 3;
    pub const SIZE: u32 = 4;
    pub const FSID: u32 = 8;
    pub const RDATTR_ERROR: u32 = 11;
    pub const FILEHANDLE: u32 = 19;
    pub const FILEID: u32 = 20;
    pub const MODE: u32 = 33;
    pub const NUMLINKS: u32 = 35;
    pub const OWNER: u32 = 36;
    pub const OWNER_GROUP: u32 = 37;
    pub const SPACE_USED: u32 = 45;
    pub const TIME_ACCESS: u32 = 47;
    pub const TIME_ACCESS_SET: u32 = 48;
    pub const TIME_METADATA: u32 = 52;
    pub const TIME_MODIFY: u32 = 53;
    pub const TIME_MODIFY_SET: u32 = 54;
    pub const MOUNTED_ON_FILEID: u32 = 55;
}

/// OPEN4_SHARE_ACCESS_* and OPEN4_SHARE_DENY_*.
#[allow(missing_docs)]
pub mod share {
    pub const ACCESS_READ: u32 = 1;
    pub const ACCESS_WRITE: u32 = 2;
    pub const ACCESS_BOTH: u32 = 3;
    pub const DENY_NONE: u32 = 0;
    pub const DENY_READ: u32 = 1;
    pub const DENY_WRITE: u32 = 2;
    pub const DENY_BOTH: u32 = 3;
    pub const WANT_READ_DELEG: u32 = 0x0100;
    pub const WANT_WRITE_DELEG: u32 = 0x0200;
    pub const WANT_NO_DELEG: u32 = 0x0400;
}

/// nfs_lock_type4.
#[allow(missing_docs)]
pub mod lock_type {
    pub const READ: u32 = 1;
    pub const WRITE: u32 = 2;
    pub const READW: u32 = 3;
    pub const WRITEW: u32 = 4;
}

/// OPEN4_RESULT_CONFIRM.
pub const OPEN4_RESULT_CONFIRM: u32 = 2;
/// nfs_ftype4 NF4REG, NF4DIR, NF4LNK.
pub const NF4REG: u32 = 1;
/// NF4DIR.
pub const NF4DIR: u32 = 2;
/// NF4LNK.
pub const NF4LNK: u32 = 5;
/// stable_how4 FILE_SYNC4.
pub const FILE_SYNC4: u32 = 2;
/// stable_how4 UNSTABLE4.
pub const UNSTABLE4: u32 = 0;
/// data_content4 NFS4_CONTENT_DATA.
pub const CONTENT_DATA: u32 = 0;
/// data_content4 NFS4_CONTENT_HOLE.
pub const CONTENT_HOLE: u32 = 1;

// ---------------------------------------------------------------------------------------------
// Small wire types
// ---------------------------------------------------------------------------------------------

/// A stateid4.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stateid {
    /// seqid.
    pub seqid: u32,
    /// other.
    pub other: [u8; 12],
}

impl Stateid {
    /// The anonymous stateid (all zeros).
    pub const ANON: Stateid = Stateid {
        seqid: 0,
        other: [0; 12],
    };

    fn encode(&self, e: &mut Encoder) {
        e.u32(self.seqid);
        e.opaque_fixed(&self.other);
    }

    fn decode(d: &mut Decoder) -> Stateid {
        let seqid = d.u32().unwrap();
        let mut other = [0u8; 12];
        other.copy_from_slice(&d.opaque_fixed(12).unwrap());
        Stateid { seqid, other }
    }
}

/// settime4.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetTime {
    /// SET_TO_SERVER_TIME4.
    Server,
    /// SET_TO_CLIENT_TIME4 (seconds, nanoseconds).
    Client(i64, u32),
}

/// Attributes to set (fattr4 with the writable attributes this client knows).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sattr {
    /// size.
    pub size: Option<u64>,
    /// mode.
    pub mode: Option<u32>,
    /// owner (a string like "1000").
    pub owner: Option<String>,
    /// owner_group.
    pub group: Option<String>,
    /// time_access_set.
    pub atime: Option<SetTime>,
    /// time_modify_set.
    pub mtime: Option<SetTime>,
}

impl Sattr {
    /// Only a mode.
    pub fn mode(m: u32) -> Sattr {
        Sattr {
            mode: Some(m),
            ..Default::default()
        }
    }

    fn encode(&self, e: &mut Encoder) {
        let mut bits = Vec::new();
        let mut v = Encoder::new();
        let settime = |v: &mut Encoder, t: &SetTime| match t {
            SetTime::Server => v.u32(0),
            SetTime::Client(s, n) => {
                v.u32(1);
                v.i64(*s);
                v.u32(*n);
            }
        };
        if let Some(s) = self.size {
            bits.push(fa::SIZE);
            v.u64(s);
        }
        if let Some(m) = self.mode {
            bits.push(fa::MODE);
            v.u32(m);
        }
        if let Some(o) = &self.owner {
            bits.push(fa::OWNER);
            v.opaque(o.as_bytes());
        }
        if let Some(g) = &self.group {
            bits.push(fa::OWNER_GROUP);
            v.opaque(g.as_bytes());
        }
        if let Some(t) = &self.atime {
            bits.push(fa::TIME_ACCESS_SET);
            settime(&mut v, t);
        }
        if let Some(t) = &self.mtime {
            bits.push(fa::TIME_MODIFY_SET);
            settime(&mut v, t);
        }
        put_bitmap(e, &bits);
        e.opaque(&v.finish().to_bytes());
    }
}

/// Encodes a bitmap4 with the given bits.
pub fn put_bitmap(e: &mut Encoder, bits: &[u32]) {
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

fn get_bitmap(d: &mut Decoder) -> Vec<u32> {
    let n = d.u32().unwrap() as usize;
    assert!(n <= 8, "bitmap of {n} words");
    let mut bits = Vec::new();
    for i in 0..n {
        let w = d.u32().unwrap();
        for b in 0..32 {
            if w & (1 << b) != 0 {
                bits.push(i as u32 * 32 + b);
            }
        }
    }
    bits
}

/// Decoded fattr4 (the attributes this client knows how to decode).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Attrs {
    /// Bits returned.
    pub mask: Vec<u32>,
    pub supported: Option<Vec<u32>>,
    pub ftype: Option<u32>,
    pub change: Option<u64>,
    pub size: Option<u64>,
    pub fsid: Option<(u64, u64)>,
    pub rdattr_error: Option<u32>,
    pub filehandle: Option<Bytes>,
    pub fileid: Option<u64>,
    pub mode: Option<u32>,
    pub nlink: Option<u32>,
    pub owner: Option<String>,
    pub group: Option<String>,
    pub space_used: Option<u64>,
    pub atime: Option<(i64, u32)>,
    pub ctime: Option<(i64, u32)>,
    pub mtime: Option<(i64, u32)>,
    pub mounted_on_fileid: Option<u64>,
}

impl Attrs {
    fn decode(d: &mut Decoder) -> Attrs {
        let mask = get_bitmap(d);
        let vals = d.opaque(1 << 20).unwrap();
        let mut v = Decoder::new(vals);
        let mut a = Attrs {
            mask: mask.clone(),
            ..Default::default()
        };
        let time = |v: &mut Decoder| (v.i64().unwrap(), v.u32().unwrap());
        for b in mask {
            match b {
                fa::SUPPORTED_ATTRS => a.supported = Some(get_bitmap(&mut v)),
                fa::TYPE => a.ftype = Some(v.u32().unwrap()),
                fa::CHANGE => a.change = Some(v.u64().unwrap()),
                fa::SIZE => a.size = Some(v.u64().unwrap()),
                fa::FSID => a.fsid = Some((v.u64().unwrap(), v.u64().unwrap())),
                fa::RDATTR_ERROR => a.rdattr_error = Some(v.u32().unwrap()),
                fa::FILEHANDLE => a.filehandle = Some(v.opaque(128).unwrap()),
                fa::FILEID => a.fileid = Some(v.u64().unwrap()),
                fa::MODE => a.mode = Some(v.u32().unwrap()),
                fa::NUMLINKS => a.nlink = Some(v.u32().unwrap()),
                fa::OWNER => a.owner = Some(v.string(1024).unwrap()),
                fa::OWNER_GROUP => a.group = Some(v.string(1024).unwrap()),
                fa::SPACE_USED => a.space_used = Some(v.u64().unwrap()),
                fa::TIME_ACCESS => a.atime = Some(time(&mut v)),
                fa::TIME_METADATA => a.ctime = Some(time(&mut v)),
                fa::TIME_MODIFY => a.mtime = Some(time(&mut v)),
                fa::MOUNTED_ON_FILEID => a.mounted_on_fileid = Some(v.u64().unwrap()),
                other => panic!("attribute {other} returned but not requested/decodable"),
            }
        }
        assert_eq!(v.remaining(), 0, "bytes left in attr_vals");
        a
    }
}

/// createhow4 of OPEN (or no creation).
#[derive(Debug, Clone)]
pub enum OpenHow {
    /// OPEN4_NOCREATE.
    NoCreate,
    /// UNCHECKED4.
    Unchecked(Sattr),
    /// GUARDED4.
    Guarded(Sattr),
    /// EXCLUSIVE4 (NFSv4.0).
    Exclusive([u8; 8]),
    /// EXCLUSIVE4_1.
    Exclusive41([u8; 8], Sattr),
}

/// open_claim4.
#[derive(Debug, Clone)]
pub enum Claim {
    /// CLAIM_NULL with a name in the current directory.
    Null(Vec<u8>),
    /// CLAIM_FH: the current file handle.
    Fh,
    /// CLAIM_PREVIOUS: reclaim of the current file handle after a server restart, with the
    /// delegation type held before.
    Previous(u32),
    /// CLAIM_DELEGATE_CUR: an open under the delegation of the named file in the current
    /// directory.
    DelegCur(Stateid, Vec<u8>),
    /// CLAIM_DELEG_CUR_FH (4.1+): an open under the delegation of the current file.
    DelegCurFh(Stateid),
}

/// locker4 of LOCK.
#[derive(Debug, Clone)]
pub enum Locker {
    /// open_to_lock_owner4: a new lock-owner.
    New {
        open_seqid: u32,
        open_stateid: Stateid,
        lock_seqid: u32,
        clientid: u64,
        owner: Vec<u8>,
    },
    /// exist_lock_owner4.
    Exist { stateid: Stateid, seqid: u32 },
}

// ---------------------------------------------------------------------------------------------
// Encoding the operations
// ---------------------------------------------------------------------------------------------

/// The operations of one COMPOUND, in order.
pub struct Ops {
    e: Encoder,
    /// Operation numbers, in order.
    pub codes: Vec<u32>,
}

impl Default for Ops {
    fn default() -> Self {
        Self::new()
    }
}

impl Ops {
    /// No operations yet.
    pub fn new() -> Ops {
        Ops {
            e: Encoder::new(),
            codes: Vec::new(),
        }
    }

    fn op(mut self, n: u32, f: impl FnOnce(&mut Encoder)) -> Ops {
        self.codes.push(n);
        self.e.u32(n);
        f(&mut self.e);
        self
    }

    /// Number of operations and their encoding.
    pub fn finish(self) -> (u32, Bytes) {
        (self.codes.len() as u32, self.e.finish().to_bytes())
    }

    /// These operations followed by `more`.
    pub fn then(mut self, more: Ops) -> Ops {
        self.codes.extend(more.codes);
        self.e.append(more.e.finish());
        self
    }

    /// An arbitrary operation number with raw argument bytes (a multiple of 4 long).
    pub fn raw(self, n: u32, args: &[u8]) -> Ops {
        self.op(n, |e| e.opaque_fixed(args))
    }

    /// SEQUENCE.
    pub fn sequence(
        self,
        sessionid: &[u8; 16],
        seqid: u32,
        slot: u32,
        highest: u32,
        cachethis: bool,
    ) -> Ops {
        self.op(op::SEQUENCE, |e| {
            e.opaque_fixed(sessionid);
            e.u32(seqid);
            e.u32(slot);
            e.u32(highest);
            e.bool(cachethis);
        })
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
    pub fn lookup(self, name: impl AsRef<[u8]>) -> Ops {
        self.op(op::LOOKUP, |e| e.opaque(name.as_ref()))
    }

    /// LOOKUPP.
    pub fn lookupp(self) -> Ops {
        self.op(op::LOOKUPP, |_| {})
    }

    /// GETFH.
    pub fn getfh(self) -> Ops {
        self.op(op::GETFH, |_| {})
    }

    /// SAVEFH.
    pub fn savefh(self) -> Ops {
        self.op(op::SAVEFH, |_| {})
    }

    /// RESTOREFH.
    pub fn restorefh(self) -> Ops {
        self.op(op::RESTOREFH, |_| {})
    }

    /// GETATTR of `bits`.
    pub fn getattr(self, bits: &[u32]) -> Ops {
        self.op(op::GETATTR, |e| put_bitmap(e, bits))
    }

    /// ACCESS.
    pub fn access(self, mask: u32) -> Ops {
        self.op(op::ACCESS, |e| e.u32(mask))
    }

    /// READDIR.
    pub fn readdir(
        self,
        cookie: u64,
        verf: [u8; 8],
        dircount: u32,
        maxcount: u32,
        bits: &[u32],
    ) -> Ops {
        self.op(op::READDIR, |e| {
            e.u64(cookie);
            e.opaque_fixed(&verf);
            e.u32(dircount);
            e.u32(maxcount);
            put_bitmap(e, bits);
        })
    }

    /// OPEN.
    #[allow(clippy::too_many_arguments)]
    pub fn open(
        self,
        seqid: u32,
        access: u32,
        deny: u32,
        clientid: u64,
        owner: &[u8],
        how: &OpenHow,
        claim: &Claim,
    ) -> Ops {
        self.op(op::OPEN, |e| {
            e.u32(seqid);
            e.u32(access);
            e.u32(deny);
            e.u64(clientid);
            e.opaque(owner);
            match how {
                OpenHow::NoCreate => e.u32(0),
                OpenHow::Unchecked(s) => {
                    e.u32(1);
                    e.u32(0);
                    s.encode(e);
                }
                OpenHow::Guarded(s) => {
                    e.u32(1);
                    e.u32(1);
                    s.encode(e);
                }
                OpenHow::Exclusive(v) => {
                    e.u32(1);
                    e.u32(2);
                    e.opaque_fixed(v);
                }
                OpenHow::Exclusive41(v, s) => {
                    e.u32(1);
                    e.u32(3);
                    e.opaque_fixed(v);
                    s.encode(e);
                }
            }
            match claim {
                Claim::Null(name) => {
                    e.u32(0);
                    e.opaque(name);
                }
                Claim::Fh => e.u32(4),
                Claim::Previous(t) => {
                    e.u32(1);
                    e.u32(*t);
                }
                Claim::DelegCur(sid, name) => {
                    e.u32(2);
                    sid.encode(e);
                    e.opaque(name);
                }
                Claim::DelegCurFh(sid) => {
                    e.u32(5);
                    sid.encode(e);
                }
            }
        })
    }

    /// OPEN_CONFIRM (NFSv4.0).
    pub fn open_confirm(self, sid: &Stateid, seqid: u32) -> Ops {
        self.op(op::OPEN_CONFIRM, |e| {
            sid.encode(e);
            e.u32(seqid);
        })
    }

    /// CLOSE.
    pub fn close(self, seqid: u32, sid: &Stateid) -> Ops {
        self.op(op::CLOSE, |e| {
            e.u32(seqid);
            sid.encode(e);
        })
    }

    /// WRITE.
    pub fn write(self, sid: &Stateid, offset: u64, stable: u32, data: &[u8]) -> Ops {
        self.op(op::WRITE, |e| {
            sid.encode(e);
            e.u64(offset);
            e.u32(stable);
            e.opaque(data);
        })
    }

    /// READ.
    pub fn read(self, sid: &Stateid, offset: u64, count: u32) -> Ops {
        self.op(op::READ, |e| {
            sid.encode(e);
            e.u64(offset);
            e.u32(count);
        })
    }

    /// COMMIT.
    pub fn commit(self, offset: u64, count: u32) -> Ops {
        self.op(op::COMMIT, |e| {
            e.u64(offset);
            e.u32(count);
        })
    }

    /// LOCK.
    pub fn lock(self, locktype: u32, offset: u64, length: u64, locker: &Locker) -> Ops {
        self.lock_with(false, locktype, offset, length, locker)
    }

    /// LOCK, with `reclaim` set for reclaims during the grace period.
    pub fn lock_with(
        self,
        reclaim: bool,
        locktype: u32,
        offset: u64,
        length: u64,
        locker: &Locker,
    ) -> Ops {
        self.op(op::LOCK, |e| {
            e.u32(locktype);
            e.bool(reclaim);
            e.u64(offset);
            e.u64(length);
            match locker {
                Locker::New {
                    open_seqid,
                    open_stateid,
                    lock_seqid,
                    clientid,
                    owner,
                } => {
                    e.bool(true);
                    e.u32(*open_seqid);
                    open_stateid.encode(e);
                    e.u32(*lock_seqid);
                    e.u64(*clientid);
                    e.opaque(owner);
                }
                Locker::Exist { stateid, seqid } => {
                    e.bool(false);
                    stateid.encode(e);
                    e.u32(*seqid);
                }
            }
        })
    }

    /// LOCKT.
    pub fn lockt(
        self,
        locktype: u32,
        offset: u64,
        length: u64,
        clientid: u64,
        owner: &[u8],
    ) -> Ops {
        self.op(op::LOCKT, |e| {
            e.u32(locktype);
            e.u64(offset);
            e.u64(length);
            e.u64(clientid);
            e.opaque(owner);
        })
    }

    /// LOCKU.
    pub fn locku(self, locktype: u32, seqid: u32, sid: &Stateid, offset: u64, length: u64) -> Ops {
        self.op(op::LOCKU, |e| {
            e.u32(locktype);
            e.u32(seqid);
            sid.encode(e);
            e.u64(offset);
            e.u64(length);
        })
    }

    /// SETATTR.
    pub fn setattr(self, sid: &Stateid, s: &Sattr) -> Ops {
        self.op(op::SETATTR, |e| {
            sid.encode(e);
            s.encode(e);
        })
    }

    /// CREATE of a directory.
    pub fn mkdir(self, name: impl AsRef<[u8]>, s: &Sattr) -> Ops {
        self.op(op::CREATE, |e| {
            e.u32(NF4DIR);
            e.opaque(name.as_ref());
            s.encode(e);
        })
    }

    /// CREATE of a symbolic link.
    pub fn symlink(self, name: impl AsRef<[u8]>, target: impl AsRef<[u8]>) -> Ops {
        self.op(op::CREATE, |e| {
            e.u32(NF4LNK);
            e.opaque(target.as_ref());
            e.opaque(name.as_ref());
            Sattr::default().encode(e);
        })
    }

    /// READLINK.
    pub fn readlink(self) -> Ops {
        self.op(op::READLINK, |_| {})
    }

    /// REMOVE.
    pub fn remove(self, name: impl AsRef<[u8]>) -> Ops {
        self.op(op::REMOVE, |e| e.opaque(name.as_ref()))
    }

    /// RENAME (saved directory / old name to current directory / new name).
    pub fn rename(self, old: impl AsRef<[u8]>, new: impl AsRef<[u8]>) -> Ops {
        self.op(op::RENAME, |e| {
            e.opaque(old.as_ref());
            e.opaque(new.as_ref());
        })
    }

    /// LINK (saved file into the current directory).
    pub fn link(self, name: impl AsRef<[u8]>) -> Ops {
        self.op(op::LINK, |e| e.opaque(name.as_ref()))
    }

    /// SEEK; `what` is [`CONTENT_DATA`] or [`CONTENT_HOLE`].
    pub fn seek(self, sid: &Stateid, offset: u64, what: u32) -> Ops {
        self.op(op::SEEK, |e| {
            sid.encode(e);
            e.u64(offset);
            e.u32(what);
        })
    }

    /// READ_PLUS.
    pub fn read_plus(self, sid: &Stateid, offset: u64, count: u32) -> Ops {
        self.op(op::READ_PLUS, |e| {
            sid.encode(e);
            e.u64(offset);
            e.u32(count);
        })
    }

    /// ALLOCATE.
    pub fn allocate(self, sid: &Stateid, offset: u64, length: u64) -> Ops {
        self.op(op::ALLOCATE, |e| {
            sid.encode(e);
            e.u64(offset);
            e.u64(length);
        })
    }

    /// DEALLOCATE.
    pub fn deallocate(self, sid: &Stateid, offset: u64, length: u64) -> Ops {
        self.op(op::DEALLOCATE, |e| {
            sid.encode(e);
            e.u64(offset);
            e.u64(length);
        })
    }

    /// COPY (intra-server, synchronous) from the saved to the current file handle.
    pub fn copy(
        self,
        src: &Stateid,
        dst: &Stateid,
        src_offset: u64,
        dst_offset: u64,
        count: u64,
    ) -> Ops {
        self.op(op::COPY, |e| {
            src.encode(e);
            dst.encode(e);
            e.u64(src_offset);
            e.u64(dst_offset);
            e.u64(count);
            e.bool(false); // ca_consecutive
            e.bool(true); // ca_synchronous
            e.u32(0); // no source servers
        })
    }

    /// EXCHANGE_ID with SP4_NONE and no implementation id.
    pub fn exchange_id(self, verifier: [u8; 8], owner: &[u8], flags: u32) -> Ops {
        self.op(op::EXCHANGE_ID, |e| {
            e.opaque_fixed(&verifier);
            e.opaque(owner);
            e.u32(flags);
            e.u32(0); // SP4_NONE
            e.u32(0); // no client_impl_id
        })
    }

    /// CREATE_SESSION with `slots` fore-channel slots and generous limits.
    pub fn create_session(self, clientid: u64, seq: u32, slots: u32) -> Ops {
        self.create_session_flags(clientid, seq, slots, 0)
    }

    /// CREATE_SESSION with `flags` (2: CREATE_SESSION4_FLAG_CONN_BACK_CHAN, callbacks over
    /// this connection).
    pub fn create_session_flags(self, clientid: u64, seq: u32, slots: u32, flags: u32) -> Ops {
        self.op(op::CREATE_SESSION, |e| {
            e.u64(clientid);
            e.u32(seq);
            e.u32(flags);
            for (maxreq, maxresp, cached, maxops, reqs) in [
                (2 << 20, 2 << 20, 64 * 1024, 16, slots),
                (4096, 4096, 0, 2, 1),
            ] {
                e.u32(0); // headerpadsize
                e.u32(maxreq);
                e.u32(maxresp);
                e.u32(cached);
                e.u32(maxops);
                e.u32(reqs);
                e.u32(0); // no rdma_ird
            }
            e.u32(0x4000_0000); // cb_program
            e.u32(1);
            e.u32(0); // AUTH_NONE
        })
    }

    /// DELEGRETURN.
    pub fn delegreturn(self, sid: &Stateid) -> Ops {
        self.op(op::DELEGRETURN, |e| sid.encode(e))
    }

    /// DESTROY_SESSION.
    pub fn destroy_session(self, sessionid: &[u8; 16]) -> Ops {
        self.op(op::DESTROY_SESSION, |e| e.opaque_fixed(sessionid))
    }

    /// DESTROY_CLIENTID.
    pub fn destroy_clientid(self, clientid: u64) -> Ops {
        self.op(op::DESTROY_CLIENTID, |e| e.u64(clientid))
    }

    /// RECLAIM_COMPLETE.
    pub fn reclaim_complete(self, one_fs: bool) -> Ops {
        self.op(op::RECLAIM_COMPLETE, |e| e.bool(one_fs))
    }

    /// SETCLIENTID with a dummy callback.
    pub fn setclientid(self, verifier: [u8; 8], owner: &[u8]) -> Ops {
        self.op(op::SETCLIENTID, |e| {
            e.opaque_fixed(&verifier);
            e.opaque(owner);
            e.u32(0x4000_0000); // cb_program
            e.opaque(b"tcp");
            e.opaque(b"127.0.0.1.0.0");
            e.u32(1); // callback_ident
        })
    }

    /// SETCLIENTID_CONFIRM.
    pub fn setclientid_confirm(self, clientid: u64, confirm: [u8; 8]) -> Ops {
        self.op(op::SETCLIENTID_CONFIRM, |e| {
            e.u64(clientid);
            e.opaque_fixed(&confirm);
        })
    }

    /// RENEW.
    pub fn renew(self, clientid: u64) -> Ops {
        self.op(op::RENEW, |e| e.u64(clientid))
    }
}

/// Raw bytes given to [`RpcClient::call`] as already-encoded arguments.
struct RawArgs(Bytes);

impl Encode for RawArgs {
    fn encode(&self, e: &mut Encoder) {
        e.opaque_fixed(&self.0);
    }
}

/// COMPOUND4args: tag, minor version and the operations.
pub fn compound_args(tag: &[u8], minor: u32, ops: Ops) -> Bytes {
    let (n, body) = ops.finish();
    let mut e = Encoder::new();
    e.opaque(tag);
    e.u32(minor);
    e.u32(n);
    e.opaque_fixed(&body);
    e.finish().to_bytes()
}

// ---------------------------------------------------------------------------------------------
// Decoding the results
// ---------------------------------------------------------------------------------------------

/// change_info4.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChangeInfo {
    /// atomic.
    pub atomic: bool,
    /// before.
    pub before: u64,
    /// after.
    pub after: u64,
}

/// LOCK4denied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockDenied {
    /// offset of the conflicting lock.
    pub offset: u64,
    /// length of the conflicting lock.
    pub length: u64,
    /// its type.
    pub locktype: u32,
    /// its owner's client id.
    pub clientid: u64,
    /// its owner.
    pub owner: Bytes,
}

/// One READ_PLUS segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    /// NFS4_CONTENT_DATA.
    Data { offset: u64, data: Bytes },
    /// NFS4_CONTENT_HOLE.
    Hole { offset: u64, length: u64 },
}

/// A READDIR entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    /// cookie.
    pub cookie: u64,
    /// name.
    pub name: Bytes,
    /// attributes.
    pub attrs: Attrs,
}

/// The decoded body of one operation's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Res {
    /// No body (or an error without a body).
    None,
    /// SEQUENCE4resok.
    Sequence {
        sessionid: [u8; 16],
        seqid: u32,
        slot: u32,
        highest: u32,
        target_highest: u32,
        flags: u32,
    },
    /// GETFH.
    Fh(Bytes),
    /// GETATTR.
    Attrs(Box<Attrs>),
    /// ACCESS.
    Access { supported: u32, access: u32 },
    /// READDIR.
    Readdir {
        verf: [u8; 8],
        entries: Vec<DirEntry>,
        eof: bool,
    },
    /// OPEN4resok.
    Open {
        stateid: Stateid,
        cinfo: ChangeInfo,
        rflags: u32,
        attrset: Vec<u32>,
        delegation: u32,
        /// The stateid of a read (delegation 1) or write (2) delegation.
        deleg: Option<Stateid>,
        /// The delegation is to be returned at once.
        recall: bool,
    },
    /// OPEN_CONFIRM, CLOSE, LOCK, LOCKU: a stateid.
    Stateid(Stateid),
    /// WRITE.
    Write {
        count: u32,
        committed: u32,
        verf: [u8; 8],
    },
    /// READ.
    Read { eof: bool, data: Bytes },
    /// COMMIT.
    Commit([u8; 8]),
    /// LOCK / LOCKT with NFS4ERR_DENIED.
    Denied(LockDenied),
    /// SETATTR (status OK or not): attributes set.
    Attrsset(Vec<u32>),
    /// CREATE.
    Create {
        cinfo: ChangeInfo,
        attrset: Vec<u32>,
    },
    /// REMOVE, LINK.
    Cinfo(ChangeInfo),
    /// RENAME.
    Rename {
        source: ChangeInfo,
        target: ChangeInfo,
    },
    /// READLINK.
    Link(Bytes),
    /// SEEK.
    Seek { eof: bool, offset: u64 },
    /// READ_PLUS.
    ReadPlus { eof: bool, segments: Vec<Segment> },
    /// COPY.
    Copy {
        callback_ids: u32,
        count: u64,
        committed: u32,
        verf: [u8; 8],
        consecutive: bool,
        synchronous: bool,
    },
    /// EXCHANGE_ID.
    ExchangeId {
        clientid: u64,
        seqid: u32,
        flags: u32,
    },
    /// CREATE_SESSION.
    CreateSession {
        sessionid: [u8; 16],
        seqid: u32,
        flags: u32,
        fore_slots: u32,
        fore_maxops: u32,
    },
    /// SETCLIENTID.
    SetClientId { clientid: u64, confirm: [u8; 8] },
}

/// The result of one operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpRes {
    /// resop.
    pub op: u32,
    /// nfsstat4.
    pub status: u32,
    /// Decoded body.
    pub res: Res,
}

fn arr8(b: Bytes) -> [u8; 8] {
    b[..].try_into().unwrap()
}

fn arr16(b: Bytes) -> [u8; 16] {
    b[..].try_into().unwrap()
}

fn cinfo(d: &mut Decoder) -> ChangeInfo {
    ChangeInfo {
        atomic: d.bool().unwrap(),
        before: d.u64().unwrap(),
        after: d.u64().unwrap(),
    }
}

fn channel_attrs(d: &mut Decoder) -> (u32, u32) {
    let _pad = d.u32().unwrap();
    let _maxreq = d.u32().unwrap();
    let _maxresp = d.u32().unwrap();
    let _cached = d.u32().unwrap();
    let maxops = d.u32().unwrap();
    let maxreqs = d.u32().unwrap();
    let n = d.u32().unwrap();
    for _ in 0..n {
        d.u32().unwrap();
    }
    (maxreqs, maxops)
}

fn decode_op(opnum: u32, status: u32, d: &mut Decoder) -> Res {
    let ok = status == st::OK;
    match opnum {
        op::LOCK | op::LOCKT if status == st::DENIED => Res::Denied(LockDenied {
            offset: d.u64().unwrap(),
            length: d.u64().unwrap(),
            locktype: d.u32().unwrap(),
            clientid: d.u64().unwrap(),
            owner: d.opaque(1024).unwrap(),
        }),
        op::SETATTR => Res::Attrsset(get_bitmap(d)),
        op::SETCLIENTID if status == 10017 => {
            // NFS4ERR_CLID_INUSE: clientaddr4.
            d.opaque(1024).unwrap();
            d.opaque(1024).unwrap();
            Res::None
        }
        _ if !ok => Res::None,
        op::SEQUENCE => Res::Sequence {
            sessionid: arr16(d.opaque_fixed(16).unwrap()),
            seqid: d.u32().unwrap(),
            slot: d.u32().unwrap(),
            highest: d.u32().unwrap(),
            target_highest: d.u32().unwrap(),
            flags: d.u32().unwrap(),
        },
        op::GETFH => Res::Fh(d.opaque(128).unwrap()),
        op::GETATTR => Res::Attrs(Box::new(Attrs::decode(d))),
        op::ACCESS => Res::Access {
            supported: d.u32().unwrap(),
            access: d.u32().unwrap(),
        },
        op::READDIR => {
            let verf = arr8(d.opaque_fixed(8).unwrap());
            let mut entries = Vec::new();
            while d.bool().unwrap() {
                entries.push(DirEntry {
                    cookie: d.u64().unwrap(),
                    name: d.opaque(4096).unwrap(),
                    attrs: Attrs::decode(d),
                });
            }
            Res::Readdir {
                verf,
                entries,
                eof: d.bool().unwrap(),
            }
        }
        op::OPEN => {
            let stateid = Stateid::decode(d);
            let cinfo = cinfo(d);
            let rflags = d.u32().unwrap();
            let attrset = get_bitmap(d);
            let delegation = d.u32().unwrap();
            let mut deleg = None;
            let mut recall = false;
            match delegation {
                0 => {}
                1 | 2 => {
                    // open_read_delegation4: stateid, recall, nfsace4 permissions;
                    // open_write_delegation4 has nfs_space_limit4 before the permissions.
                    deleg = Some(Stateid::decode(d));
                    recall = d.bool().unwrap();
                    if delegation == 2 {
                        match d.u32().unwrap() {
                            1 => {
                                d.u64().unwrap();
                            }
                            2 => {
                                d.u32().unwrap();
                                d.u32().unwrap();
                            }
                            other => panic!("nfs_space_limit4 of kind {other}"),
                        }
                    }
                    for _ in 0..3 {
                        d.u32().unwrap();
                    }
                    d.opaque(1024).unwrap();
                }
                3 => {
                    // OPEN_DELEGATE_NONE_EXT: why, and for CONTENTION / RESOURCE a bool.
                    let why = d.u32().unwrap();
                    if why == 1 || why == 2 {
                        d.bool().unwrap();
                    }
                }
                other => panic!("OPEN granted a delegation ({other}); not decodable here"),
            }
            Res::Open {
                stateid,
                cinfo,
                rflags,
                attrset,
                delegation,
                deleg,
                recall,
            }
        }
        op::OPEN_CONFIRM | op::CLOSE | op::LOCK | op::LOCKU => Res::Stateid(Stateid::decode(d)),
        op::WRITE => Res::Write {
            count: d.u32().unwrap(),
            committed: d.u32().unwrap(),
            verf: arr8(d.opaque_fixed(8).unwrap()),
        },
        op::READ => Res::Read {
            eof: d.bool().unwrap(),
            data: d.opaque(16 << 20).unwrap(),
        },
        op::COMMIT => Res::Commit(arr8(d.opaque_fixed(8).unwrap())),
        op::CREATE => Res::Create {
            cinfo: cinfo(d),
            attrset: get_bitmap(d),
        },
        op::REMOVE | op::LINK => Res::Cinfo(cinfo(d)),
        op::RENAME => Res::Rename {
            source: cinfo(d),
            target: cinfo(d),
        },
        op::READLINK => Res::Link(d.opaque(4096).unwrap()),
        op::SEEK => Res::Seek {
            eof: d.bool().unwrap(),
            offset: d.u64().unwrap(),
        },
        op::READ_PLUS => {
            let eof = d.bool().unwrap();
            let n = d.u32().unwrap();
            let mut segments = Vec::new();
            for _ in 0..n {
                segments.push(match d.u32().unwrap() {
                    CONTENT_DATA => Segment::Data {
                        offset: d.u64().unwrap(),
                        data: d.opaque(16 << 20).unwrap(),
                    },
                    CONTENT_HOLE => Segment::Hole {
                        offset: d.u64().unwrap(),
                        length: d.u64().unwrap(),
                    },
                    other => panic!("READ_PLUS content type {other}"),
                });
            }
            Res::ReadPlus { eof, segments }
        }
        op::COPY => {
            let callback_ids = d.u32().unwrap();
            for _ in 0..callback_ids {
                Stateid::decode(d);
            }
            Res::Copy {
                callback_ids,
                count: d.u64().unwrap(),
                committed: d.u32().unwrap(),
                verf: arr8(d.opaque_fixed(8).unwrap()),
                consecutive: d.bool().unwrap(),
                synchronous: d.bool().unwrap(),
            }
        }
        op::EXCHANGE_ID => {
            let clientid = d.u64().unwrap();
            let seqid = d.u32().unwrap();
            let flags = d.u32().unwrap();
            assert_eq!(d.u32().unwrap(), 0, "state protection other than SP4_NONE");
            d.u64().unwrap(); // so_minor_id
            d.opaque(1024).unwrap(); // so_major_id
            d.opaque(1024).unwrap(); // server scope
            let n = d.u32().unwrap();
            assert!(n <= 1, "eir_server_impl_id<1> with {n} entries");
            for _ in 0..n {
                d.opaque(1024).unwrap();
                d.opaque(1024).unwrap();
                d.i64().unwrap();
                d.u32().unwrap();
            }
            Res::ExchangeId {
                clientid,
                seqid,
                flags,
            }
        }
        op::CREATE_SESSION => {
            let sessionid = arr16(d.opaque_fixed(16).unwrap());
            let seqid = d.u32().unwrap();
            let flags = d.u32().unwrap();
            let (fore_slots, fore_maxops) = channel_attrs(d);
            channel_attrs(d);
            Res::CreateSession {
                sessionid,
                seqid,
                flags,
                fore_slots,
                fore_maxops,
            }
        }
        op::SETCLIENTID => Res::SetClientId {
            clientid: d.u64().unwrap(),
            confirm: arr8(d.opaque_fixed(8).unwrap()),
        },
        op::PUTFH
        | op::PUTROOTFH
        | op::LOOKUP
        | op::LOOKUPP
        | op::SAVEFH
        | op::RESTOREFH
        | op::LOCKT
        | op::SETCLIENTID_CONFIRM
        | op::RENEW
        | op::DESTROY_SESSION
        | op::FREE_STATEID
        | op::DESTROY_CLIENTID
        | op::RECLAIM_COMPLETE
        | op::DELEGRETURN
        | op::ALLOCATE
        | op::DEALLOCATE => Res::None,
        other => panic!("no decoder for the result of operation {other}"),
    }
}

/// A decoded COMPOUND4res.
#[derive(Debug, Clone)]
pub struct CompoundRes {
    /// Status of the last operation executed.
    pub status: u32,
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
        let mut d = Decoder::new(raw.clone());
        let status = d.u32().unwrap();
        let tag = d.opaque(1024).unwrap();
        let n = d.u32().unwrap();
        let mut results = Vec::new();
        for _ in 0..n {
            let op = d.u32().unwrap();
            let status = d.u32().unwrap();
            let res = decode_op(op, status, &mut d);
            results.push(OpRes { op, status, res });
        }
        assert_eq!(d.remaining(), 0, "bytes left after COMPOUND4res");
        CompoundRes {
            status,
            tag,
            results,
            raw,
        }
    }

    /// Panics unless the whole COMPOUND succeeded.
    pub fn ok(self, what: &str) -> CompoundRes {
        assert_eq!(
            self.status,
            st::OK,
            "{what}: COMPOUND failed: {}",
            self.summary()
        );
        self
    }

    /// (op, status) of every result, for messages.
    pub fn summary(&self) -> String {
        self.results
            .iter()
            .map(|r| format!("{}={}", r.op, r.status))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The first result of operation `opnum`.
    pub fn get(&self, opnum: u32) -> &OpRes {
        self.results
            .iter()
            .find(|r| r.op == opnum)
            .unwrap_or_else(|| panic!("no result of op {opnum}: {}", self.summary()))
    }

    /// The last result.
    pub fn last(&self) -> &OpRes {
        self.results.last().expect("empty COMPOUND result")
    }

    /// The handle of the first GETFH.
    pub fn fh(&self) -> Bytes {
        match &self.get(op::GETFH).res {
            Res::Fh(f) => f.clone(),
            r => panic!("GETFH: {r:?}"),
        }
    }

    /// The attributes of the `i`-th GETATTR.
    pub fn attrs_n(&self, i: usize) -> Attrs {
        match self
            .results
            .iter()
            .filter(|r| r.op == op::GETATTR)
            .nth(i)
            .map(|r| &r.res)
        {
            Some(Res::Attrs(a)) => (**a).clone(),
            r => panic!("GETATTR #{i}: {r:?} ({})", self.summary()),
        }
    }

    /// The attributes of the first GETATTR.
    pub fn attrs(&self) -> Attrs {
        self.attrs_n(0)
    }

    /// The stateid of the OPEN.
    pub fn open_stateid(&self) -> Stateid {
        match &self.get(op::OPEN).res {
            Res::Open { stateid, .. } => *stateid,
            r => panic!("OPEN: {r:?}"),
        }
    }

    /// The stateid returned by the first result of `opnum` (OPEN_CONFIRM, CLOSE, LOCK, LOCKU).
    pub fn stateid(&self, opnum: u32) -> Stateid {
        match &self.get(opnum).res {
            Res::Stateid(s) => *s,
            Res::Open { stateid, .. } => *stateid,
            r => panic!("op {opnum}: {r:?}"),
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
    pub sessionid: [u8; 16],
    /// Last sequence id used in each slot (4.1+).
    pub slots: Vec<u32>,
    /// The client owner string.
    pub owner: Vec<u8>,
}

/// A verifier that differs between runs and owners.
pub fn boot_verifier(owner: &[u8]) -> [u8; 8] {
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
        let Res::SetClientId { clientid, confirm } = r.get(op::SETCLIENTID).res else {
            panic!("SETCLIENTID: {:?}", r.results);
        };
        self.compound(Ops::new().setclientid_confirm(clientid, confirm))
            .ok("SETCLIENTID_CONFIRM");
        self.clientid = clientid;
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
        self.establish_flags(slots, true, 2);
    }

    /// [`V4::establish_back_channel`] without RECLAIM_COMPLETE: a client about to reclaim.
    pub fn establish_back_channel_to_reclaim(&mut self, slots: u32) {
        self.establish_flags(slots, false, 2);
    }

    /// EXCHANGE_ID (non-pNFS) for this client's owner; returns the client id and the sequence
    /// id its CREATE_SESSION must use.
    pub fn exchange_id(&mut self) -> (u64, u32) {
        let verf = boot_verifier(&self.owner);
        let owner = self.owner.clone();
        // EXCHGID4_FLAG_USE_NON_PNFS
        let r = self
            .compound(Ops::new().exchange_id(verf, &owner, 0x1_0000))
            .ok("EXCHANGE_ID");
        let Res::ExchangeId {
            clientid, seqid, ..
        } = r.get(op::EXCHANGE_ID).res
        else {
            panic!("EXCHANGE_ID: {:?}", r.results);
        };
        (clientid, seqid)
    }

    fn establish_flags(&mut self, slots: u32, reclaim_complete: bool, flags: u32) {
        let (clientid, seqid) = self.exchange_id();
        let r = self
            .compound(Ops::new().create_session_flags(clientid, seqid, slots, flags))
            .ok("CREATE_SESSION");
        let Res::CreateSession {
            sessionid,
            fore_slots,
            ..
        } = r.get(op::CREATE_SESSION).res
        else {
            panic!("CREATE_SESSION: {:?}", r.results);
        };
        self.clientid = clientid;
        self.sessionid = sessionid;
        self.slots = vec![0; fore_slots as usize];
        if reclaim_complete {
            self.call(Ops::new().reclaim_complete(false))
                .ok("RECLAIM_COMPLETE");
        }
    }

    /// Sends one COMPOUND with exactly these operations and returns the raw COMPOUND4res.
    pub fn compound_raw(&mut self, minor: u32, ops: Ops) -> Bytes {
        let args = RawArgs(compound_args(b"rnfs-test", minor, ops));
        match self.rpc.call(NFS_PROGRAM, NFS_V4, PROC_COMPOUND, &args) {
            RpcReply::Success(b) => b,
            other => panic!("COMPOUND not accepted: {other:?}"),
        }
    }

    /// One COMPOUND with exactly these operations (no SEQUENCE added).
    pub fn compound(&mut self, ops: Ops) -> CompoundRes {
        let minor = self.minor;
        CompoundRes::decode(self.compound_raw(minor, ops))
    }

    /// A COMPOUND on slot `slot` with sequence id `seqid` (4.1+); the slot table is not touched.
    pub fn call_slot(&mut self, slot: u32, seqid: u32, cachethis: bool, ops: Ops) -> CompoundRes {
        let highest = self.slots.len().saturating_sub(1) as u32;
        let sid = self.sessionid;
        let all = Ops::new()
            .sequence(&sid, seqid, slot, highest, cachethis)
            .then(ops);
        let minor = self.minor;
        CompoundRes::decode(self.compound_raw(minor, all))
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
            Some((op::SEQUENCE, st::OK)),
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
        let clientid = self.clientid;
        self.call(
            Ops::new()
                .putfh(dir)
                .open(
                    0,
                    access,
                    deny,
                    clientid,
                    owner.as_bytes(),
                    &how,
                    &Claim::Null(name.as_bytes().to_vec()),
                )
                .getfh(),
        )
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
    ) -> (Bytes, Stateid) {
        let r = self
            .open(dir, name, owner, access, deny, how)
            .ok(&format!("OPEN {name}"));
        (r.fh(), r.open_stateid())
    }

    /// CLOSE (4.1+) that must succeed.
    pub fn close_ok(&mut self, fh: &[u8], sid: &Stateid) {
        self.call(Ops::new().putfh(fh).close(0, sid)).ok("CLOSE");
    }

    /// WRITE (FILE_SYNC) of all of `data` at `offset`, in chunks of at most 1 MiB.
    pub fn write_all(&mut self, fh: &[u8], sid: &Stateid, offset: u64, data: &[u8]) {
        for (i, chunk) in data.chunks(1 << 20).enumerate() {
            let off = offset + (i << 20) as u64;
            let r = self
                .call(Ops::new().putfh(fh).write(sid, off, FILE_SYNC4, chunk))
                .ok("WRITE");
            match r.get(op::WRITE).res {
                Res::Write { count, .. } => assert_eq!(count as usize, chunk.len(), "short WRITE"),
                ref x => panic!("WRITE: {x:?}"),
            }
        }
    }

    /// GETATTR of `bits` on `fh`.
    pub fn getattr(&mut self, fh: &[u8], bits: &[u32]) -> Attrs {
        self.call(Ops::new().putfh(fh).getattr(bits))
            .ok("GETATTR")
            .attrs()
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
