//! The NFSv4 operations in one table: per operation number its name, the minor versions that
//! have it, how a COMPOUND treats it, and its handler (the model is knfsd's `nfsd4_ops[]` and
//! Chimera's operation matrix). `compound.rs` keeps the loop and consults this table only.

use xdr::Decoder;

use crate::compound::{Ctx, Fh, Nfs4, OpFail, OpResult};
use crate::proto::NFS4_FHSIZE;
use nfs4wire::{NfsOpnum4, Nfsstat4};

/// Where an operation stands in its COMPOUND.
#[derive(Debug, Clone, Copy)]
pub struct Pos {
    /// Index of the operation, from 0.
    pub index: usize,
    /// Number of operations in the COMPOUND.
    pub count: usize,
}

/// An operation's handler: decodes its arguments from the decoder, runs, and returns its
/// result body (after the status) or its failure.
pub type Handler = fn(&Nfs4, &mut Ctx<'_>, &mut Decoder, Pos) -> OpResult;

/// What a COMPOUND does with an operation beside running it.
pub mod flag {
    /// May start an NFSv4.1+ COMPOUND without SEQUENCE (RFC 8881 section 2.10.6.2).
    pub const SESSIONLESS: u8 = 1;
    /// Changes the current file handle without returning a stateid, which makes the current
    /// stateid invalid (RFC 8881 section 16.2.3.1.2).
    pub const CLEARS_STATEID: u8 = 2;
    /// Changes nothing, so a COMPOUND tried without blocking may run it and give up after it
    /// ([`vfs::nowait`]).
    pub const TRY: u8 = 4;
    /// As [`TRY`] when its count (after a stateid and an offset) is at most
    /// [`vfs::nowait::READ_MAX`]: a larger READ is cheaper handed to a worker.
    pub const TRY_SMALL_READ: u8 = 8;
}

/// One operation.
#[derive(Debug)]
pub struct OpDef {
    /// Its name in the RFCs.
    pub name: &'static str,
    /// First minor version that has it; in an earlier one its number is OP_ILLEGAL.
    pub since: u32,
    /// Last minor version that has it; in a later one it is NOTSUPP (NFSv4.0's client and
    /// open-owner operations, which sessions replace).
    pub until: u32,
    /// [`flag`] bits.
    pub flags: u8,
    /// None: not supported (NOTSUPP).
    pub handler: Option<Handler>,
}

impl OpDef {
    /// Whether a COMPOUND tried without blocking may run this operation, whose arguments are
    /// next in `d`.
    pub fn may_try(&self, d: &Decoder) -> bool {
        if self.flags & flag::TRY != 0 {
            return true;
        }
        if self.flags & flag::TRY_SMALL_READ == 0 {
            return false;
        }
        // stateid (16 bytes), offset, count
        let mut a = d.clone();
        a.opaque_fixed(16)
            .and_then(|_| a.u64())
            .and_then(|_| a.u32())
            .is_ok_and(|count| count <= vfs::nowait::READ_MAX)
    }

    /// Whether this operation may start an NFSv4.1+ COMPOUND without SEQUENCE.
    pub fn sessionless(&self) -> bool {
        self.flags & flag::SESSIONLESS != 0
    }

    /// Whether this operation makes the current stateid invalid.
    pub fn clears_stateid(&self) -> bool {
        self.flags & flag::CLEARS_STATEID != 0
    }

    /// Runs the operation in a COMPOUND of minor version `ctx.minor`.
    pub fn run(&self, n: &Nfs4, ctx: &mut Ctx<'_>, d: &mut Decoder, pos: Pos) -> OpResult {
        if ctx.minor < self.since {
            return Err(Nfsstat4::NFS4ERR_OP_ILLEGAL.into());
        }
        match self.handler {
            Some(h) if ctx.minor <= self.until => h(n, ctx, d, pos),
            _ => Err(Nfsstat4::NFS4ERR_NOTSUPP.into()),
        }
    }
}

/// The operation with number `opnum`; None for a number no minor version defines.
pub fn def(opnum: NfsOpnum4) -> Option<&'static OpDef> {
    let i = opnum.0.checked_sub(FIRST)? as usize;
    OPS.get(i)
}

/// The lowest operation number (ACCESS).
const FIRST: u32 = NfsOpnum4::OP_ACCESS.0;
/// Every minor version rnfsd serves.
const ALL: u32 = crate::proto::MAX_MINOR;

const fn def_op(
    name: &'static str,
    since: u32,
    until: u32,
    flags: u8,
    h: Option<Handler>,
) -> OpDef {
    OpDef {
        name,
        since,
        until,
        flags,
        handler: h,
    }
}

/// The operations, indexed by number - [`FIRST`]; the test below checks each row's place.
static OPS: [OpDef; (NfsOpnum4::OP_REMOVEXATTR.0 - FIRST + 1) as usize] = {
    use flag::*;
    [
        def_op("ACCESS", 0, ALL, TRY, Some(|n, c, d, _| n.access(c, d))),
        def_op("CLOSE", 0, ALL, 0, Some(|n, c, d, _| n.close(c, d))),
        def_op("COMMIT", 0, ALL, 0, Some(|n, c, d, _| n.commit(c, d))),
        def_op(
            "CREATE",
            0,
            ALL,
            CLEARS_STATEID,
            Some(|n, c, d, _| n.create(c, d)),
        ),
        def_op("DELEGPURGE", 0, ALL, 0, None),
        def_op(
            "DELEGRETURN",
            0,
            ALL,
            0,
            Some(|n, c, d, _| n.delegreturn(c, d)),
        ),
        def_op("GETATTR", 0, ALL, TRY, Some(|n, c, d, _| n.getattr(c, d))),
        def_op("GETFH", 0, ALL, TRY, Some(|n, c, _, _| n.getfh(c))),
        def_op("LINK", 0, ALL, 0, Some(|n, c, d, _| n.link(c, d))),
        def_op("LOCK", 0, ALL, 0, Some(|n, c, d, _| n.lock(c, d))),
        def_op("LOCKT", 0, ALL, 0, Some(|n, c, d, _| n.lockt(c, d))),
        def_op("LOCKU", 0, ALL, 0, Some(|n, c, d, _| n.locku(c, d))),
        def_op(
            "LOOKUP",
            0,
            ALL,
            CLEARS_STATEID,
            Some(|n, c, d, _| n.lookup(c, d)),
        ),
        def_op(
            "LOOKUPP",
            0,
            ALL,
            CLEARS_STATEID,
            Some(|n, c, _, _| n.lookupp(c)),
        ),
        def_op(
            "NVERIFY",
            0,
            ALL,
            0,
            Some(|n, c, d, _| n.verify(c, d, false)),
        ),
        def_op("OPEN", 0, ALL, 0, Some(|n, c, d, _| n.open(c, d))),
        def_op("OPENATTR", 0, ALL, 0, None),
        def_op(
            "OPEN_CONFIRM",
            0,
            0,
            0,
            Some(|n, c, d, _| n.open_confirm(c, d)),
        ),
        def_op(
            "OPEN_DOWNGRADE",
            0,
            ALL,
            0,
            Some(|n, c, d, _| n.open_downgrade(c, d)),
        ),
        def_op(
            "PUTFH",
            0,
            ALL,
            CLEARS_STATEID | TRY,
            Some(|n, c, d, _| n.putfh(c, d)),
        ),
        def_op(
            "PUTPUBFH",
            0,
            ALL,
            CLEARS_STATEID,
            Some(|n, c, _, _| n.putrootfh(c)),
        ),
        def_op(
            "PUTROOTFH",
            0,
            ALL,
            CLEARS_STATEID | TRY,
            Some(|n, c, _, _| n.putrootfh(c)),
        ),
        def_op(
            "READ",
            0,
            ALL,
            TRY_SMALL_READ,
            Some(|n, c, d, _| n.read(c, d)),
        ),
        def_op("READDIR", 0, ALL, 0, Some(|n, c, d, _| n.readdir(c, d))),
        def_op("READLINK", 0, ALL, 0, Some(|n, c, _, _| n.readlink(c))),
        def_op("REMOVE", 0, ALL, 0, Some(|n, c, d, _| n.remove(c, d))),
        def_op("RENAME", 0, ALL, 0, Some(|n, c, d, _| n.rename(c, d))),
        def_op("RENEW", 0, 0, 0, Some(|n, _, d, _| n.renew(d))),
        def_op("RESTOREFH", 0, ALL, 0, Some(|_, c, _, _| restorefh(c))),
        def_op("SAVEFH", 0, ALL, 0, Some(|_, c, _, _| savefh(c))),
        def_op("SECINFO", 0, ALL, 0, Some(|n, c, d, _| n.secinfo(c, d))),
        def_op("SETATTR", 0, ALL, 0, Some(|n, c, d, _| n.setattr(c, d))),
        def_op(
            "SETCLIENTID",
            0,
            0,
            0,
            Some(|n, c, d, _| n.setclientid(c, d)),
        ),
        def_op(
            "SETCLIENTID_CONFIRM",
            0,
            0,
            0,
            Some(|n, c, d, _| n.setclientid_confirm(c, d)),
        ),
        def_op("VERIFY", 0, ALL, 0, Some(|n, c, d, _| n.verify(c, d, true))),
        def_op("WRITE", 0, ALL, 0, Some(|n, c, d, _| n.write(c, d))),
        def_op(
            "RELEASE_LOCKOWNER",
            0,
            0,
            0,
            Some(|n, c, d, _| n.release_lockowner(c, d)),
        ),
        def_op(
            "BACKCHANNEL_CTL",
            1,
            ALL,
            0,
            Some(|n, c, d, _| n.backchannel_ctl(c, d)),
        ),
        def_op(
            "BIND_CONN_TO_SESSION",
            1,
            ALL,
            SESSIONLESS,
            Some(|n, c, d, _| n.bind_conn(c, d)),
        ),
        def_op(
            "EXCHANGE_ID",
            1,
            ALL,
            SESSIONLESS,
            Some(|n, c, d, _| n.exchange_id(c, d)),
        ),
        def_op(
            "CREATE_SESSION",
            1,
            ALL,
            SESSIONLESS,
            Some(|n, c, d, _| n.create_session(c, d)),
        ),
        def_op(
            "DESTROY_SESSION",
            1,
            ALL,
            SESSIONLESS,
            Some(|n, c, d, p| n.destroy_session(c, d, p.index, p.count)),
        ),
        def_op(
            "FREE_STATEID",
            1,
            ALL,
            0,
            Some(|n, c, d, _| n.free_stateid(c, d)),
        ),
        def_op("GET_DIR_DELEGATION", 1, ALL, 0, None),
        def_op("GETDEVICEINFO", 1, ALL, 0, None),
        def_op("GETDEVICELIST", 1, ALL, 0, None),
        def_op("LAYOUTCOMMIT", 1, ALL, 0, None),
        def_op("LAYOUTGET", 1, ALL, 0, None),
        def_op("LAYOUTRETURN", 1, ALL, 0, None),
        def_op(
            "SECINFO_NO_NAME",
            1,
            ALL,
            0,
            Some(|n, c, d, _| n.secinfo_no_name(c, d)),
        ),
        // Only first in a COMPOUND, where the loop runs it before the table is asked.
        def_op(
            "SEQUENCE",
            1,
            ALL,
            TRY,
            Some(|_, _, _, _| Err(Nfsstat4::NFS4ERR_SEQUENCE_POS.into())),
        ),
        def_op("SET_SSV", 1, ALL, 0, None),
        def_op(
            "TEST_STATEID",
            1,
            ALL,
            0,
            Some(|n, c, d, _| n.test_stateid(c, d)),
        ),
        def_op("WANT_DELEGATION", 1, ALL, 0, None),
        def_op(
            "DESTROY_CLIENTID",
            1,
            ALL,
            SESSIONLESS,
            Some(|n, c, d, _| n.destroy_clientid(c, d)),
        ),
        def_op(
            "RECLAIM_COMPLETE",
            1,
            ALL,
            0,
            Some(|n, c, d, _| n.reclaim_complete(c, d)),
        ),
        def_op(
            "ALLOCATE",
            2,
            ALL,
            0,
            Some(|n, c, d, _| n.allocate(c, d, false)),
        ),
        def_op("COPY", 2, ALL, 0, Some(|n, c, d, _| n.copy(c, d))),
        def_op("COPY_NOTIFY", 2, ALL, 0, None),
        def_op(
            "DEALLOCATE",
            2,
            ALL,
            0,
            Some(|n, c, d, _| n.allocate(c, d, true)),
        ),
        def_op("IO_ADVISE", 2, ALL, 0, None),
        def_op("LAYOUTERROR", 2, ALL, 0, None),
        def_op("LAYOUTSTATS", 2, ALL, 0, None),
        def_op("OFFLOAD_CANCEL", 2, ALL, 0, None),
        def_op("OFFLOAD_STATUS", 2, ALL, 0, None),
        def_op(
            "READ_PLUS",
            2,
            ALL,
            TRY_SMALL_READ,
            Some(|n, c, d, _| n.read_plus(c, d)),
        ),
        def_op("SEEK", 2, ALL, 0, Some(|n, c, d, _| n.seek(c, d))),
        def_op("WRITE_SAME", 2, ALL, 0, None),
        def_op("CLONE", 2, ALL, 0, Some(|n, c, d, _| n.clone_op(c, d))),
        // RFC 8276 extended attributes, an extension of minor version 2
        def_op("GETXATTR", 2, ALL, 0, Some(|n, c, d, _| n.getxattr(c, d))),
        def_op("SETXATTR", 2, ALL, 0, Some(|n, c, d, _| n.setxattr(c, d))),
        def_op(
            "LISTXATTRS",
            2,
            ALL,
            0,
            Some(|n, c, d, _| n.listxattrs(c, d)),
        ),
        def_op(
            "REMOVEXATTR",
            2,
            ALL,
            0,
            Some(|n, c, d, _| n.removexattr(c, d)),
        ),
    ]
};

/// RESTOREFH: the saved file handle and stateid become current.
fn restorefh(ctx: &mut Ctx<'_>) -> OpResult {
    ctx.cur = Some(
        ctx.saved
            .clone()
            .ok_or(OpFail::from(Nfsstat4::NFS4ERR_RESTOREFH))?,
    );
    ctx.cur_sid = ctx.saved_sid;
    Ok(xdr::Encoder::new())
}

/// SAVEFH: the current file handle and stateid are saved.
fn savefh(ctx: &mut Ctx<'_>) -> OpResult {
    ctx.saved = Some(ctx.cur()?.clone());
    ctx.saved_sid = ctx.cur_sid;
    Ok(xdr::Encoder::new())
}

impl Nfs4 {
    /// PUTFH: the handle becomes current (a real one once its seal checks out).
    fn putfh(&self, ctx: &mut Ctx<'_>, d: &mut Decoder) -> OpResult {
        let fh = d.opaque(NFS4_FHSIZE)?;
        let fh = self.parse_fh(&fh)?;
        if let Fh::Real(b) = &fh {
            self.vfs.check_handle(b)?;
        }
        ctx.cur = Some(fh);
        Ok(xdr::Encoder::new())
    }

    /// PUTROOTFH and PUTPUBFH: the root of the pseudo file system (or the export that is
    /// the NFSv4 root) becomes current.
    fn putrootfh(&self, ctx: &mut Ctx<'_>) -> OpResult {
        ctx.cur = Some(match &self.pseudo.root_export {
            Some(fh) => Fh::Real(fh.clone()),
            None => Fh::Pseudo(0),
        });
        Ok(xdr::Encoder::new())
    }

    /// RENEW (NFSv4.0): the client's lease starts again.
    fn renew(&self, d: &mut Decoder) -> OpResult {
        let id = d.u64()?;
        self.state.lock().renew(id)?;
        Ok(xdr::Encoder::new())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each row sits at its operation's number, under the RFCs' name for it.
    #[test]
    fn every_row_is_at_its_number() {
        let names: [(NfsOpnum4, &str); 10] = [
            (NfsOpnum4::OP_ACCESS, "ACCESS"),
            (NfsOpnum4::OP_PUTFH, "PUTFH"),
            (NfsOpnum4::OP_RELEASE_LOCKOWNER, "RELEASE_LOCKOWNER"),
            (NfsOpnum4::OP_BACKCHANNEL_CTL, "BACKCHANNEL_CTL"),
            (NfsOpnum4::OP_SEQUENCE, "SEQUENCE"),
            (NfsOpnum4::OP_RECLAIM_COMPLETE, "RECLAIM_COMPLETE"),
            (NfsOpnum4::OP_ALLOCATE, "ALLOCATE"),
            (NfsOpnum4::OP_READ_PLUS, "READ_PLUS"),
            (NfsOpnum4::OP_CLONE, "CLONE"),
            (NfsOpnum4::OP_REMOVEXATTR, "REMOVEXATTR"),
        ];
        for (n, name) in names {
            assert_eq!(def(n).map(|d| d.name), Some(name), "operation {n:?}");
        }
        assert!(def(NfsOpnum4(0)).is_none() && def(NfsOpnum4(2)).is_none());
        assert!(def(NfsOpnum4(NfsOpnum4::OP_REMOVEXATTR.0 + 1)).is_none());
        assert!(def(NfsOpnum4::OP_ILLEGAL).is_none());
        // the minor versions: 4.0's own operations end at 0, 4.1's and 4.2's start there
        for n in (NfsOpnum4::OP_ACCESS.0..=NfsOpnum4::OP_REMOVEXATTR.0).map(NfsOpnum4) {
            let d = def(n).expect("every number in the range is defined");
            let since = match n {
                _ if n < NfsOpnum4::OP_BACKCHANNEL_CTL => 0,
                _ if n < NfsOpnum4::OP_ALLOCATE => 1,
                _ => 2,
            };
            assert_eq!(d.since, since, "{}", d.name);
            let v40_only = matches!(
                n,
                NfsOpnum4::OP_OPEN_CONFIRM
                    | NfsOpnum4::OP_RENEW
                    | NfsOpnum4::OP_SETCLIENTID
                    | NfsOpnum4::OP_SETCLIENTID_CONFIRM
                    | NfsOpnum4::OP_RELEASE_LOCKOWNER
            );
            assert_eq!(d.until == 0, v40_only, "{}", d.name);
        }
    }

    #[test]
    fn reads_are_tried_only_when_small() {
        let read = def(NfsOpnum4::OP_READ).expect("READ");
        let args = |count: u32| {
            let mut e = xdr::Encoder::new();
            e.opaque_fixed(&[0; 16]);
            e.u64(0);
            e.u32(count);
            Decoder::new(e.finish().to_bytes())
        };
        assert!(read.may_try(&args(vfs::nowait::READ_MAX)));
        assert!(!read.may_try(&args(vfs::nowait::READ_MAX + 1)));
        assert!(!read.may_try(&Decoder::new(bytes::Bytes::from_static(&[0; 8]))));
        assert!(def(NfsOpnum4::OP_GETATTR)
            .expect("GETATTR")
            .may_try(&args(0)));
        assert!(!def(NfsOpnum4::OP_WRITE).expect("WRITE").may_try(&args(0)));
    }
}
