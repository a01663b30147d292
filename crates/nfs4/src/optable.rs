//! The NFSv4 operations in one table: per operation number its name, the minor versions that
//! have it, how a COMPOUND treats it, and its handler (the model is knfsd's `nfsd4_ops[]` and
//! Chimera's operation matrix). `compound.rs` keeps the loop and consults this table only.

use xdr::{Decoder, Encode, Encoder};

use crate::compound::{Ctx, Fh, Nfs4, OpFail, OpResult};
use nfs4wire::*;

/// Where an operation stands in its COMPOUND.
#[derive(Debug, Clone, Copy)]
pub struct Pos {
    /// Index of the operation, from 0.
    pub index: usize,
    /// Number of operations in the COMPOUND.
    pub count: usize,
}

/// An operation's handler: decodes its arguments from the decoder, runs, and encodes its
/// result body (what follows NFS4_OK) into the reply, or returns its failure.
pub type Handler = fn(&Nfs4, &mut Ctx<'_>, &mut Decoder, Pos, &mut Encoder) -> OpResult;

/// Encodes an operation's typed result (what follows NFS4_OK) into the COMPOUND reply.
pub fn body<R: Encode>(r: Result<R, OpFail>, out: &mut Encoder) -> OpResult {
    r.map(|r| r.encode(out))
}

/// The handler of an operation whose arguments are the generated type `$args`: decodes them
/// (a malformed one is BADXDR), runs `$run` on them and encodes its typed result.
macro_rules! typed {
    ($args:ty, |$n:ident, $c:ident, $a:ident| $run:expr) => {
        Some(
            |$n: &Nfs4, $c: &mut Ctx<'_>, d: &mut Decoder, _: Pos, out: &mut Encoder| -> OpResult {
                let $a = <$args as xdr::Decode>::decode(d)?;
                body($run, out)
            },
        )
    };
}

/// The handler of an operation without arguments: runs `$run`, encodes its typed result.
macro_rules! no_args {
    (|$n:ident, $c:ident| $run:expr) => {
        Some(
            |$n: &Nfs4, $c: &mut Ctx<'_>, _: &mut Decoder, _: Pos, out: &mut Encoder| -> OpResult {
                body($run, out)
            },
        )
    };
}

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
    /// [`vfs::nowait::IO_MAX`], or the call is alone on its connection
    /// ([`sunrpc::CallContext::alone`]): a larger READ with calls behind it is better handed to
    /// a worker.
    pub const TRY_SMALL_READ: u8 = 8;
    /// Puts a file handle (PUTFH, PUTPUBFH, PUTROOTFH, RESTOREFH): it answers WRONGSEC for the
    /// export's security when the next operation uses the handle as it is (RFC 8881 section
    /// 2.6.3.1.1.7).
    pub const PUTS_FH: u8 = 16;
    /// After a [`PUTS_FH`] operation, deals with the export's security itself (another put,
    /// SAVEFH, LOOKUP, LOOKUPP, OPEN, SECINFO, SECINFO_NO_NAME: RFC 8881 sections
    /// 2.6.3.1.1.1-2.6.3.1.1.5), so the put does not answer WRONGSEC.
    pub const HANDLES_WRONGSEC: u8 = 32;
    /// As [`TRY_SMALL_READ`] for a WRITE (its count: the length of its data, after a
    /// stateid, an offset and how stable): the backend tries it only where files live in
    /// memory, and gives up before writing anywhere else ([`vfs::nowait`]). An operation
    /// after it that gives up has the worker write the same bytes to the same place again.
    pub const TRY_SMALL_WRITE: u8 = 64;
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
    /// next in `d`; `alone`: no other call of the connection waits behind it.
    pub fn may_try(&self, d: &Decoder, alone: bool) -> bool {
        if self.flags & flag::TRY != 0 {
            return true;
        }
        // stateid (16 bytes), offset, then a READ's count, or a WRITE's stable_how and the
        // length of its data
        let write = match self.flags & (flag::TRY_SMALL_READ | flag::TRY_SMALL_WRITE) {
            0 => return false,
            f => f & flag::TRY_SMALL_WRITE != 0,
        };
        let mut a = d.clone();
        a.opaque_fixed(16)
            .and_then(|_| a.u64())
            .and_then(|_| if write { a.u32() } else { Ok(0) })
            .and_then(|_| a.u32())
            .is_ok_and(|count| alone || count <= vfs::nowait::IO_MAX)
    }

    /// Whether this operation changes nothing and reads no file data, so it may use the
    /// current object as an earlier operation found it (a READ looks at the file afresh).
    pub fn changes_nothing(&self) -> bool {
        self.flags & flag::TRY != 0
    }

    /// Whether this operation may start an NFSv4.1+ COMPOUND without SEQUENCE.
    pub fn sessionless(&self) -> bool {
        self.flags & flag::SESSIONLESS != 0
    }

    /// Whether this operation puts a file handle ([`flag::PUTS_FH`]).
    pub fn puts_fh(&self) -> bool {
        self.flags & flag::PUTS_FH != 0
    }

    /// Whether this operation deals with WRONGSEC itself ([`flag::HANDLES_WRONGSEC`]).
    pub fn handles_wrongsec(&self) -> bool {
        self.flags & flag::HANDLES_WRONGSEC != 0
    }

    /// Whether this operation makes the current stateid invalid.
    pub fn clears_stateid(&self) -> bool {
        self.flags & flag::CLEARS_STATEID != 0
    }

    /// Runs the operation in a COMPOUND of minor version `ctx.minor`.
    pub fn run(
        &self,
        n: &Nfs4,
        ctx: &mut Ctx<'_>,
        d: &mut Decoder,
        pos: Pos,
        out: &mut Encoder,
    ) -> OpResult {
        if ctx.minor < self.since {
            return Err(Nfsstat4::NFS4ERR_OP_ILLEGAL.into());
        }
        match self.handler {
            Some(h) if ctx.minor <= self.until => h(n, ctx, d, pos, out),
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
        def_op(
            "ACCESS",
            0,
            ALL,
            TRY,
            typed!(Access4args, |n, c, a| n.access(c, a)),
        ),
        def_op(
            "CLOSE",
            0,
            ALL,
            0,
            typed!(Close4args, |n, c, a| n.close(c, a)),
        ),
        def_op(
            "COMMIT",
            0,
            ALL,
            0,
            typed!(Commit4args, |n, c, a| n.commit(c, a)),
        ),
        def_op(
            "CREATE",
            0,
            ALL,
            CLEARS_STATEID,
            typed!(Create4args, |n, c, a| n.create(c, a)),
        ),
        def_op("DELEGPURGE", 0, ALL, 0, None),
        def_op(
            "DELEGRETURN",
            0,
            ALL,
            0,
            typed!(Delegreturn4args, |n, c, a| n.delegreturn(c, a)),
        ),
        def_op(
            "GETATTR",
            0,
            ALL,
            TRY,
            typed!(Getattr4args, |n, c, a| n.getattr(c, a)),
        ),
        def_op("GETFH", 0, ALL, TRY, no_args!(|n, c| n.getfh(c))),
        def_op("LINK", 0, ALL, 0, typed!(Link4args, |n, c, a| n.link(c, a))),
        def_op("LOCK", 0, ALL, 0, typed!(Lock4args, |n, c, a| n.lock(c, a))),
        def_op(
            "LOCKT",
            0,
            ALL,
            0,
            typed!(Lockt4args, |n, c, a| n.lockt(c, a)),
        ),
        def_op(
            "LOCKU",
            0,
            ALL,
            0,
            typed!(Locku4args, |n, c, a| n.locku(c, a)),
        ),
        def_op(
            "LOOKUP",
            0,
            ALL,
            HANDLES_WRONGSEC | CLEARS_STATEID | TRY,
            typed!(Lookup4args, |n, c, a| n.lookup(c, a)),
        ),
        def_op(
            "LOOKUPP",
            0,
            ALL,
            HANDLES_WRONGSEC | CLEARS_STATEID,
            no_args!(|n, c| n.lookupp(c)),
        ),
        def_op(
            "NVERIFY",
            0,
            ALL,
            0,
            typed!(Nverify4args, |n, c, a| n.verify(c, a.obj_attributes, false)),
        ),
        def_op(
            "OPEN",
            0,
            ALL,
            HANDLES_WRONGSEC,
            typed!(Open4args, |n, c, a| n.open(c, a)),
        ),
        def_op("OPENATTR", 0, ALL, 0, None),
        def_op(
            "OPEN_CONFIRM",
            0,
            0,
            0,
            typed!(OpenConfirm4args, |n, c, a| n.open_confirm(c, a)),
        ),
        def_op(
            "OPEN_DOWNGRADE",
            0,
            ALL,
            0,
            typed!(OpenDowngrade4args, |n, c, a| n.open_downgrade(c, a)),
        ),
        def_op(
            "PUTFH",
            0,
            ALL,
            PUTS_FH | HANDLES_WRONGSEC | CLEARS_STATEID | TRY,
            typed!(Putfh4args, |n, c, a| n.putfh(c, a)),
        ),
        def_op(
            "PUTPUBFH",
            0,
            ALL,
            PUTS_FH | HANDLES_WRONGSEC | CLEARS_STATEID,
            no_args!(|n, c| n.putrootfh(c)),
        ),
        def_op(
            "PUTROOTFH",
            0,
            ALL,
            PUTS_FH | HANDLES_WRONGSEC | CLEARS_STATEID | TRY,
            no_args!(|n, c| n.putrootfh(c)),
        ),
        def_op(
            "READ",
            0,
            ALL,
            TRY_SMALL_READ,
            typed!(Read4args, |n, c, a| n.read(c, a)),
        ),
        def_op(
            "READDIR",
            0,
            ALL,
            0,
            typed!(Readdir4args, |n, c, a| n.readdir(c, a)),
        ),
        def_op("READLINK", 0, ALL, 0, no_args!(|n, c| n.readlink(c))),
        def_op(
            "REMOVE",
            0,
            ALL,
            0,
            typed!(Remove4args, |n, c, a| n.remove(c, a)),
        ),
        def_op(
            "RENAME",
            0,
            ALL,
            0,
            typed!(Rename4args, |n, c, a| n.rename(c, a)),
        ),
        def_op("RENEW", 0, 0, 0, typed!(Renew4args, |n, _c, a| n.renew(a))),
        def_op(
            "RESTOREFH",
            0,
            ALL,
            PUTS_FH | HANDLES_WRONGSEC,
            no_args!(|_n, c| restorefh(c)),
        ),
        def_op(
            "SAVEFH",
            0,
            ALL,
            HANDLES_WRONGSEC,
            no_args!(|_n, c| savefh(c)),
        ),
        def_op(
            "SECINFO",
            0,
            ALL,
            HANDLES_WRONGSEC,
            typed!(Secinfo4args, |n, c, a| n.secinfo(c, a)),
        ),
        def_op(
            "SETATTR",
            0,
            ALL,
            0,
            typed!(Setattr4args, |n, c, a| n.setattr(c, a)),
        ),
        def_op(
            "SETCLIENTID",
            0,
            0,
            0,
            typed!(Setclientid4args, |n, c, a| n.setclientid(c, a)),
        ),
        def_op(
            "SETCLIENTID_CONFIRM",
            0,
            0,
            0,
            typed!(SetclientidConfirm4args, |n, c, a| n
                .setclientid_confirm(c, a)),
        ),
        def_op(
            "VERIFY",
            0,
            ALL,
            0,
            typed!(Verify4args, |n, c, a| n.verify(c, a.obj_attributes, true)),
        ),
        def_op(
            "WRITE",
            0,
            ALL,
            TRY_SMALL_WRITE,
            typed!(Write4args, |n, c, a| n.write(c, a)),
        ),
        def_op(
            "RELEASE_LOCKOWNER",
            0,
            0,
            0,
            typed!(ReleaseLockowner4args, |n, c, a| n.release_lockowner(c, a)),
        ),
        def_op(
            "BACKCHANNEL_CTL",
            1,
            ALL,
            0,
            typed!(BackchannelCtl4args, |n, c, a| n.backchannel_ctl(c, a)),
        ),
        def_op(
            "BIND_CONN_TO_SESSION",
            1,
            ALL,
            SESSIONLESS,
            typed!(BindConnToSession4args, |n, c, a| n.bind_conn(c, a)),
        ),
        def_op(
            "EXCHANGE_ID",
            1,
            ALL,
            SESSIONLESS,
            typed!(ExchangeId4args, |n, c, a| n.exchange_id(c, a)),
        ),
        def_op(
            "CREATE_SESSION",
            1,
            ALL,
            SESSIONLESS,
            typed!(CreateSession4args, |n, c, a| n.create_session(c, a)),
        ),
        def_op(
            "DESTROY_SESSION",
            1,
            ALL,
            SESSIONLESS,
            Some(|n, c, d, p, out| {
                let a = <DestroySession4args as xdr::Decode>::decode(d)?;
                body(n.destroy_session(c, a, p.index, p.count), out)
            }),
        ),
        def_op(
            "FREE_STATEID",
            1,
            ALL,
            0,
            typed!(FreeStateid4args, |n, c, a| n.free_stateid(c, a)),
        ),
        def_op("GET_DIR_DELEGATION", 1, ALL, 0, None),
        def_op(
            "GETDEVICEINFO",
            1,
            ALL,
            0,
            typed!(Getdeviceinfo4args, |n, c, a| n.getdeviceinfo(c, a)),
        ),
        // the Linux client never asks; RFC 8881 section 18.41 lets a server not have it
        def_op("GETDEVICELIST", 1, ALL, 0, None),
        def_op(
            "LAYOUTCOMMIT",
            1,
            ALL,
            0,
            typed!(Layoutcommit4args, |n, c, a| n.layoutcommit(c, a)),
        ),
        def_op(
            "LAYOUTGET",
            1,
            ALL,
            0,
            typed!(Layoutget4args, |n, c, a| n.layoutget(c, a)),
        ),
        def_op(
            "LAYOUTRETURN",
            1,
            ALL,
            0,
            typed!(Layoutreturn4args, |n, c, a| n.layoutreturn(c, a)),
        ),
        def_op(
            "SECINFO_NO_NAME",
            1,
            ALL,
            HANDLES_WRONGSEC,
            typed!(SecinfoNoName4args, |n, c, a| n.secinfo_no_name(c, a)),
        ),
        // Only first in a COMPOUND, where the loop runs it before the table is asked.
        def_op(
            "SEQUENCE",
            1,
            ALL,
            TRY,
            Some(|_, _, _, _, _| Err(Nfsstat4::NFS4ERR_SEQUENCE_POS.into())),
        ),
        def_op("SET_SSV", 1, ALL, 0, None),
        def_op(
            "TEST_STATEID",
            1,
            ALL,
            0,
            typed!(TestStateid4args, |n, c, a| n.test_stateid(c, a)),
        ),
        def_op("WANT_DELEGATION", 1, ALL, 0, None),
        def_op(
            "DESTROY_CLIENTID",
            1,
            ALL,
            SESSIONLESS,
            typed!(DestroyClientid4args, |n, c, a| n.destroy_clientid(c, a)),
        ),
        def_op(
            "RECLAIM_COMPLETE",
            1,
            ALL,
            0,
            typed!(ReclaimComplete4args, |n, c, a| n.reclaim_complete(c, a)),
        ),
        def_op(
            "ALLOCATE",
            2,
            ALL,
            0,
            typed!(Allocate4args, |n, c, a| n.allocate(c, a, false)),
        ),
        def_op("COPY", 2, ALL, 0, typed!(Copy4args, |n, c, a| n.copy(c, a))),
        def_op("COPY_NOTIFY", 2, ALL, 0, None),
        def_op(
            "DEALLOCATE",
            2,
            ALL,
            0,
            typed!(Deallocate4args, |n, c, a| {
                let a = Allocate4args {
                    aa_stateid: a.da_stateid,
                    aa_offset: a.da_offset,
                    aa_length: a.da_length,
                };
                n.allocate(c, a, true)
            }),
        ),
        def_op("IO_ADVISE", 2, ALL, 0, None),
        def_op(
            "LAYOUTERROR",
            2,
            ALL,
            0,
            typed!(Layouterror4args, |n, c, a| n.layouterror(c, a)),
        ),
        def_op(
            "LAYOUTSTATS",
            2,
            ALL,
            0,
            typed!(Layoutstats4args, |n, c, a| n.layoutstats(c, a)),
        ),
        def_op("OFFLOAD_CANCEL", 2, ALL, 0, None),
        def_op("OFFLOAD_STATUS", 2, ALL, 0, None),
        def_op(
            "READ_PLUS",
            2,
            ALL,
            TRY_SMALL_READ,
            typed!(ReadPlus4args, |n, c, a| n.read_plus(c, a)),
        ),
        def_op("SEEK", 2, ALL, 0, typed!(Seek4args, |n, c, a| n.seek(c, a))),
        def_op("WRITE_SAME", 2, ALL, 0, None),
        def_op(
            "CLONE",
            2,
            ALL,
            0,
            typed!(Clone4args, |n, c, a| n.clone_op(c, a)),
        ),
        // RFC 8276 extended attributes, an extension of minor version 2
        def_op(
            "GETXATTR",
            2,
            ALL,
            0,
            typed!(Getxattr4args, |n, c, a| n.getxattr(c, a)),
        ),
        def_op(
            "SETXATTR",
            2,
            ALL,
            0,
            typed!(Setxattr4args, |n, c, a| n.setxattr(c, a)),
        ),
        def_op(
            "LISTXATTRS",
            2,
            ALL,
            0,
            typed!(Listxattrs4args, |n, c, a| n.listxattrs(c, a)),
        ),
        def_op(
            "REMOVEXATTR",
            2,
            ALL,
            0,
            typed!(Removexattr4args, |n, c, a| n.removexattr(c, a)),
        ),
    ]
};

/// RESTOREFH: the saved file handle and stateid become current.
fn restorefh(ctx: &mut Ctx<'_>) -> Result<(), OpFail> {
    let saved = ctx.saved.clone();
    ctx.set_cur(Some(
        saved.ok_or(OpFail::from(Nfsstat4::NFS4ERR_RESTOREFH))?,
    ));
    ctx.cur_sid = ctx.saved_sid;
    Ok(())
}

/// SAVEFH: the current file handle and stateid are saved.
fn savefh(ctx: &mut Ctx<'_>) -> Result<(), OpFail> {
    ctx.saved = Some(ctx.cur()?.clone());
    ctx.saved_sid = ctx.cur_sid;
    Ok(())
}

impl Nfs4 {
    /// PUTFH: the handle becomes current (a real one once its seal checks out).
    fn putfh(&self, ctx: &mut Ctx<'_>, a: Putfh4args) -> Result<(), OpFail> {
        let fh = self.parse_fh(a.object)?;
        if let Fh::Real(b) = &fh {
            self.vfs.check_handle(b)?;
        }
        ctx.set_cur(Some(fh));
        Ok(())
    }

    /// PUTROOTFH and PUTPUBFH: the root of the pseudo file system (or the export that is
    /// the NFSv4 root) becomes current.
    fn putrootfh(&self, ctx: &mut Ctx<'_>) -> Result<(), OpFail> {
        ctx.set_cur(Some(match &self.pseudo().root_export {
            Some(fh) => Fh::Real(fh.clone()),
            None => Fh::Pseudo(crate::pseudo::PseudoId::ROOT),
        }));
        Ok(())
    }

    /// RENEW (NFSv4.0): the client's lease starts again; NFS4ERR_CB_PATH_DOWN (the lease
    /// renewed all the same) when it holds delegations the server can no longer recall.
    fn renew(&self, a: Renew4args) -> Result<(), OpFail> {
        let mut s = self.state.lock();
        s.renew(a.clientid)?;
        if s.callback_path_down(a.clientid) {
            return Err(Nfsstat4::NFS4ERR_CB_PATH_DOWN.into());
        }
        Ok(())
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
        assert!(read.may_try(&args(vfs::nowait::IO_MAX), false));
        assert!(!read.may_try(&args(vfs::nowait::IO_MAX + 1), false));
        // alone on its connection, a READ of any size is tried
        assert!(read.may_try(&args(1 << 20), true));
        assert!(!read.may_try(&Decoder::new(bytes::Bytes::from_static(&[0; 8])), true));
        assert!(def(NfsOpnum4::OP_GETATTR)
            .expect("GETATTR")
            .may_try(&args(0), false));
        assert!(!def(NfsOpnum4::OP_COMMIT)
            .expect("COMMIT")
            .may_try(&args(0), true));
    }

    #[test]
    fn writes_are_tried_only_when_small() {
        let write = def(NfsOpnum4::OP_WRITE).expect("WRITE");
        let args = |len: u32| {
            let mut e = xdr::Encoder::new();
            e.opaque_fixed(&[0; 16]);
            e.u64(0);
            e.u32(2); // FILE_SYNC4: the count is what follows
            e.u32(len);
            Decoder::new(e.finish().to_bytes())
        };
        assert!(write.may_try(&args(vfs::nowait::IO_MAX), false));
        assert!(!write.may_try(&args(vfs::nowait::IO_MAX + 1), false));
        assert!(write.may_try(&args(1 << 20), true));
        assert!(!write.may_try(&Decoder::new(bytes::Bytes::from_static(&[0; 24])), true));
        assert!(
            !write.changes_nothing(),
            "a later operation looks at the file afresh"
        );
    }
}
