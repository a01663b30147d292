//! Encoders for seed inputs: RPC calls, NFSv3/MOUNT arguments and NFSv4 COMPOUND operations,
//! through the generated types of `nfs3wire` and `nfs4wire`.

use bytes::Bytes;
use sunrpc::msg::{encode_call, AuthSys, Credential};
use xdr::{Encode, Encoder};

/// NFS program.
pub const NFS: u32 = 100_003;
/// MOUNT program.
pub const MOUNT: u32 = 100_005;

/// AUTH_SYS credential.
pub fn sys(uid: u32, gid: u32) -> Credential {
    Credential::Sys(AuthSys {
        stamp: 0x1234,
        machine: Bytes::from_static(b"fuzzhost"),
        uid,
        gid,
        gids: vec![gid, 100],
    })
}

/// Encodes with `f` and returns the bytes.
pub fn enc(f: impl FnOnce(&mut Encoder)) -> Vec<u8> {
    let mut e = Encoder::new();
    f(&mut e);
    e.finish().to_bytes().to_vec()
}

/// Encodes an XDR value.
pub fn val<T: Encode>(v: &T) -> Vec<u8> {
    enc(|e| e.encode(v))
}

/// A complete call message.
pub fn call(xid: u32, prog: u32, vers: u32, proc_: u32, cred: &Credential, args: &[u8]) -> Vec<u8> {
    let mut e = Encoder::new();
    encode_call(&mut e, xid, prog, vers, proc_, cred);
    let mut v = e.finish().to_bytes().to_vec();
    v.extend_from_slice(args);
    v
}

/// The content of a marker opaque (see [`crate::env::MARKERS`]): encode it as an opaque.
pub fn marker(name: &[u8; 8]) -> Bytes {
    Bytes::copy_from_slice(name)
}

/// NFSv4 COMPOUND arguments, as the generated types of `nfs4wire` encode them.
pub mod v4 {
    use super::*;
    use nfs4wire::*;

    /// COMPOUND4args from encoded operations (each with its opcode).
    pub fn compound(tag: &[u8], minor: u32, ops: &[Vec<u8>]) -> Vec<u8> {
        // the operations stay encoded: a seed may carry one no minor version defines
        let mut v = enc(|e| {
            e.opaque(tag);
            e.u32(minor);
            e.u32(ops.len() as u32);
        });
        for o in ops {
            v.extend_from_slice(o);
        }
        v
    }

    /// An encoded operation.
    fn o(op: NfsArgop4) -> Vec<u8> {
        val(&op)
    }

    /// A stateid from (seqid, other).
    fn sid((seqid, other): (u32, [u8; 12])) -> Stateid4 {
        Stateid4 { seqid, other }
    }

    /// The anonymous stateid.
    pub const ANON: (u32, [u8; 12]) = (0, [0; 12]);
    /// The NFSv4.1 current stateid.
    pub const CURRENT: (u32, [u8; 12]) = (1, [0; 12]);

    /// GETATTR's usual request: type, change, size, fsid, fileid, mode, nlink, owner, group,
    /// space used, times, mounted_on_fileid, plus supported_attrs, fh_expire_type,
    /// lease_time, rdattr_error, filehandle.
    pub const ATTRS: [u32; 2] = [0x0018_0d1f, 0x00b0_a03a];

    /// Bytes of a name.
    fn b(x: &[u8]) -> Bytes {
        Bytes::copy_from_slice(x)
    }

    /// PUTROOTFH.
    pub fn putrootfh() -> Vec<u8> {
        o(NfsArgop4::OpPutrootfh)
    }
    /// PUTPUBFH.
    pub fn putpubfh() -> Vec<u8> {
        o(NfsArgop4::OpPutpubfh)
    }
    /// PUTFH with a marker handle.
    pub fn putfh(m: &[u8; 8]) -> Vec<u8> {
        o(NfsArgop4::OpPutfh(Putfh4args { object: marker(m) }))
    }
    /// GETFH.
    pub fn getfh() -> Vec<u8> {
        o(NfsArgop4::OpGetfh)
    }
    /// SAVEFH.
    pub fn savefh() -> Vec<u8> {
        o(NfsArgop4::OpSavefh)
    }
    /// RESTOREFH.
    pub fn restorefh() -> Vec<u8> {
        o(NfsArgop4::OpRestorefh)
    }
    /// LOOKUPP.
    pub fn lookupp() -> Vec<u8> {
        o(NfsArgop4::OpLookupp)
    }
    /// READLINK.
    pub fn readlink() -> Vec<u8> {
        o(NfsArgop4::OpReadlink)
    }
    /// GETATTR.
    pub fn getattr(words: &[u32]) -> Vec<u8> {
        o(NfsArgop4::OpGetattr(Getattr4args {
            attr_request: words.to_vec(),
        }))
    }
    /// LOOKUP.
    pub fn lookup(name: &[u8]) -> Vec<u8> {
        o(NfsArgop4::OpLookup(Lookup4args { objname: b(name) }))
    }
    /// ACCESS.
    pub fn access(mask: u32) -> Vec<u8> {
        o(NfsArgop4::OpAccess(Access4args { access: mask }))
    }
    /// READDIR.
    pub fn readdir(cookie: u64, dircount: u32, maxcount: u32, words: &[u32]) -> Vec<u8> {
        o(NfsArgop4::OpReaddir(Readdir4args {
            cookie,
            cookieverf: [0; 8],
            dircount,
            maxcount,
            attr_request: words.to_vec(),
        }))
    }
    /// READ.
    pub fn read(s: (u32, [u8; 12]), offset: u64, count: u32) -> Vec<u8> {
        o(NfsArgop4::OpRead(Read4args {
            stateid: sid(s),
            offset,
            count,
        }))
    }
    /// READ_PLUS.
    pub fn read_plus(s: (u32, [u8; 12]), offset: u64, count: u32) -> Vec<u8> {
        o(NfsArgop4::OpReadPlus(ReadPlus4args {
            rpa_stateid: sid(s),
            rpa_offset: offset,
            rpa_count: count,
        }))
    }
    /// WRITE.
    pub fn write(s: (u32, [u8; 12]), offset: u64, stable: StableHow4, data: &[u8]) -> Vec<u8> {
        o(NfsArgop4::OpWrite(Write4args {
            stateid: sid(s),
            offset,
            stable,
            data: b(data),
        }))
    }
    /// COMMIT.
    pub fn commit(offset: u64, count: u32) -> Vec<u8> {
        o(NfsArgop4::OpCommit(Commit4args { offset, count }))
    }
    /// fattr4 setting the mode.
    pub fn fattr_mode(mode: u32) -> Fattr4 {
        Fattr4 {
            attrmask: vec![0, 1 << (FATTR4_MODE - 32)],
            attr_vals: b(&mode.to_be_bytes()),
        }
    }
    /// fattr4 setting size and mode.
    pub fn fattr_size_mode(size: u64, mode: u32) -> Fattr4 {
        let mut v = size.to_be_bytes().to_vec();
        v.extend_from_slice(&mode.to_be_bytes());
        Fattr4 {
            attrmask: vec![1 << FATTR4_SIZE, 1 << (FATTR4_MODE - 32)],
            attr_vals: Bytes::from(v),
        }
    }
    /// SETATTR of size and mode.
    pub fn setattr(s: (u32, [u8; 12]), size: u64, mode: u32) -> Vec<u8> {
        o(NfsArgop4::OpSetattr(Setattr4args {
            stateid: sid(s),
            obj_attributes: fattr_size_mode(size, mode),
        }))
    }
    /// SETATTR of the size only.
    pub fn setattr_size(s: (u32, [u8; 12]), size: u64) -> Vec<u8> {
        o(NfsArgop4::OpSetattr(Setattr4args {
            stateid: sid(s),
            obj_attributes: Fattr4 {
                attrmask: vec![1 << FATTR4_SIZE],
                attr_vals: b(&size.to_be_bytes()),
            },
        }))
    }
    /// VERIFY (`true`) or NVERIFY of the type attribute.
    pub fn verify(same: bool, ftype: NfsFtype4) -> Vec<u8> {
        let obj_attributes = Fattr4 {
            attrmask: vec![1 << FATTR4_TYPE],
            attr_vals: b(&(ftype as u32).to_be_bytes()),
        };
        o(if same {
            NfsArgop4::OpVerify(Verify4args { obj_attributes })
        } else {
            NfsArgop4::OpNverify(Nverify4args { obj_attributes })
        })
    }
    /// CREATE of `objtype` (mode 0755).
    pub fn create(objtype: Createtype4, name: &[u8]) -> Vec<u8> {
        o(NfsArgop4::OpCreate(Create4args {
            objtype,
            objname: b(name),
            createattrs: fattr_mode(0o755),
        }))
    }
    /// A symbolic link's CREATE type.
    pub fn symlink(target: &[u8]) -> Createtype4 {
        Createtype4::Nf4lnk(b(target))
    }
    /// REMOVE.
    pub fn remove(name: &[u8]) -> Vec<u8> {
        o(NfsArgop4::OpRemove(Remove4args { target: b(name) }))
    }
    /// RENAME (saved fh: source dir, current fh: target dir).
    pub fn rename(from: &[u8], to: &[u8]) -> Vec<u8> {
        o(NfsArgop4::OpRename(Rename4args {
            oldname: b(from),
            newname: b(to),
        }))
    }
    /// LINK (saved fh: the file, current fh: the directory).
    pub fn link(name: &[u8]) -> Vec<u8> {
        o(NfsArgop4::OpLink(Link4args { newname: b(name) }))
    }
    /// SECINFO.
    pub fn secinfo(name: &[u8]) -> Vec<u8> {
        o(NfsArgop4::OpSecinfo(Secinfo4args { name: b(name) }))
    }
    /// SECINFO_NO_NAME.
    pub fn secinfo_no_name(style: SecinfoStyle4) -> Vec<u8> {
        o(NfsArgop4::OpSecinfoNoName(style))
    }

    /// How OPEN opens.
    pub enum How {
        /// OPEN4_NOCREATE.
        NoCreate,
        /// OPEN4_CREATE, UNCHECKED4 with a mode.
        Unchecked(u32),
        /// OPEN4_CREATE, GUARDED4 with a mode.
        Guarded(u32),
        /// OPEN4_CREATE, EXCLUSIVE4 with a verifier.
        Exclusive([u8; 8]),
        /// OPEN4_CREATE, EXCLUSIVE4_1 with a verifier and a mode.
        Exclusive41([u8; 8], u32),
    }

    /// What OPEN opens.
    pub enum Claim<'a> {
        /// CLAIM_NULL: a name in the current directory.
        Null(&'a [u8]),
        /// CLAIM_PREVIOUS (reclaim) with a delegation type.
        Previous(OpenDelegationType4),
        /// CLAIM_FH: the current file (NFSv4.1).
        Fh,
    }

    /// OPEN.
    pub fn open(
        seqid: u32,
        access: u32,
        deny: u32,
        clientid: u64,
        owner: &[u8],
        how: How,
        claim: Claim<'_>,
    ) -> Vec<u8> {
        let openhow = match how {
            How::NoCreate => Openflag4::Default(Opentype4::Open4Nocreate),
            How::Unchecked(m) => Openflag4::Open4Create(Createhow4::Unchecked4(fattr_mode(m))),
            How::Guarded(m) => Openflag4::Open4Create(Createhow4::Guarded4(fattr_mode(m))),
            How::Exclusive(v) => Openflag4::Open4Create(Createhow4::Exclusive4(v)),
            How::Exclusive41(v, m) => {
                Openflag4::Open4Create(Createhow4::Exclusive41(Creatverfattr {
                    cva_verf: v,
                    cva_attrs: fattr_mode(m),
                }))
            }
        };
        let claim = match claim {
            Claim::Null(name) => OpenClaim4::ClaimNull(b(name)),
            Claim::Previous(t) => OpenClaim4::ClaimPrevious(t),
            Claim::Fh => OpenClaim4::ClaimFh,
        };
        o(NfsArgop4::OpOpen(Open4args {
            seqid,
            share_access: access,
            share_deny: deny,
            owner: OpenOwner4 {
                clientid,
                owner: b(owner),
            },
            openhow,
            claim,
        }))
    }
    /// OPEN_CONFIRM (NFSv4.0).
    pub fn open_confirm(s: (u32, [u8; 12]), seqid: u32) -> Vec<u8> {
        o(NfsArgop4::OpOpenConfirm(OpenConfirm4args {
            open_stateid: sid(s),
            seqid,
        }))
    }
    /// OPEN_DOWNGRADE.
    pub fn open_downgrade(s: (u32, [u8; 12]), seqid: u32, access: u32, deny: u32) -> Vec<u8> {
        o(NfsArgop4::OpOpenDowngrade(OpenDowngrade4args {
            open_stateid: sid(s),
            seqid,
            share_access: access,
            share_deny: deny,
        }))
    }
    /// CLOSE.
    pub fn close(seqid: u32, s: (u32, [u8; 12])) -> Vec<u8> {
        o(NfsArgop4::OpClose(Close4args {
            seqid,
            open_stateid: sid(s),
        }))
    }
    /// LOCK with a new lock owner.
    #[allow(clippy::too_many_arguments)]
    pub fn lock_new(
        locktype: NfsLockType4,
        offset: u64,
        length: u64,
        open_seqid: u32,
        open_sid: (u32, [u8; 12]),
        lock_seqid: u32,
        clientid: u64,
        owner: &[u8],
    ) -> Vec<u8> {
        o(NfsArgop4::OpLock(Lock4args {
            locktype,
            reclaim: false,
            offset,
            length,
            locker: Locker4::True(OpenToLockOwner4 {
                open_seqid,
                open_stateid: sid(open_sid),
                lock_seqid,
                lock_owner: LockOwner4 {
                    clientid,
                    owner: b(owner),
                },
            }),
        }))
    }
    /// LOCKT.
    pub fn lockt(
        locktype: NfsLockType4,
        offset: u64,
        length: u64,
        clientid: u64,
        owner: &[u8],
    ) -> Vec<u8> {
        o(NfsArgop4::OpLockt(Lockt4args {
            locktype,
            offset,
            length,
            owner: LockOwner4 {
                clientid,
                owner: b(owner),
            },
        }))
    }
    /// LOCKU.
    pub fn locku(
        locktype: NfsLockType4,
        seqid: u32,
        s: (u32, [u8; 12]),
        offset: u64,
        length: u64,
    ) -> Vec<u8> {
        o(NfsArgop4::OpLocku(Locku4args {
            locktype,
            seqid,
            lock_stateid: sid(s),
            offset,
            length,
        }))
    }
    /// SETCLIENTID (NFSv4.0).
    pub fn setclientid(verifier: [u8; 8], id: &[u8]) -> Vec<u8> {
        o(NfsArgop4::OpSetclientid(Setclientid4args {
            client: NfsClientId4 {
                verifier,
                id: b(id),
            },
            callback: CbClient4 {
                cb_program: 0x4000_0000,
                cb_location: Netaddr4 {
                    na_r_netid: b(b"tcp"),
                    na_r_addr: b(b"127.0.0.1.3.32"),
                },
            },
            callback_ident: 1,
        }))
    }
    /// SETCLIENTID_CONFIRM.
    pub fn setclientid_confirm(clientid: u64, confirm: [u8; 8]) -> Vec<u8> {
        o(NfsArgop4::OpSetclientidConfirm(SetclientidConfirm4args {
            clientid,
            setclientid_confirm: confirm,
        }))
    }
    /// RENEW.
    pub fn renew(clientid: u64) -> Vec<u8> {
        o(NfsArgop4::OpRenew(Renew4args { clientid }))
    }
    /// RELEASE_LOCKOWNER.
    pub fn release_lockowner(clientid: u64, owner: &[u8]) -> Vec<u8> {
        o(NfsArgop4::OpReleaseLockowner(ReleaseLockowner4args {
            lock_owner: LockOwner4 {
                clientid,
                owner: b(owner),
            },
        }))
    }
    /// EXCHANGE_ID (SP4_NONE, no implementation id).
    pub fn exchange_id(verifier: [u8; 8], owner: &[u8], flags: u32) -> Vec<u8> {
        o(NfsArgop4::OpExchangeId(ExchangeId4args {
            eia_clientowner: ClientOwner4 {
                co_verifier: verifier,
                co_ownerid: b(owner),
            },
            eia_flags: flags,
            eia_state_protect: StateProtect4A::Sp4None,
            eia_client_impl_id: Vec::new(),
        }))
    }
    /// Channel attributes asking for `slots` slots.
    fn channel_attrs(slots: u32) -> ChannelAttrs4 {
        ChannelAttrs4 {
            ca_headerpadsize: 0,
            ca_maxrequestsize: 1 << 20,
            ca_maxresponsesize: 1 << 20,
            ca_maxresponsesize_cached: 4096,
            ca_maxoperations: 16,
            ca_maxrequests: slots,
            ca_rdma_ird: Vec::new(),
        }
    }
    /// CREATE_SESSION.
    pub fn create_session(clientid: u64, seq: u32, flags: u32) -> Vec<u8> {
        o(NfsArgop4::OpCreateSession(CreateSession4args {
            csa_clientid: clientid,
            csa_sequence: seq,
            csa_flags: flags,
            csa_fore_chan_attrs: channel_attrs(8),
            csa_back_chan_attrs: channel_attrs(1),
            csa_cb_program: 0x4000_0000,
            csa_sec_parms: vec![CallbackSecParms4::AuthNone],
        }))
    }
    /// SEQUENCE.
    pub fn sequence(sessionid: &[u8; 16], seqid: u32, slot: u32, cache: bool) -> Vec<u8> {
        o(NfsArgop4::OpSequence(Sequence4args {
            sa_sessionid: *sessionid,
            sa_sequenceid: seqid,
            sa_slotid: slot,
            sa_highest_slotid: 7,
            sa_cachethis: cache,
        }))
    }
    /// RECLAIM_COMPLETE.
    pub fn reclaim_complete(one_fs: bool) -> Vec<u8> {
        o(NfsArgop4::OpReclaimComplete(ReclaimComplete4args {
            rca_one_fs: one_fs,
        }))
    }
    /// DESTROY_SESSION.
    pub fn destroy_session(sessionid: &[u8; 16]) -> Vec<u8> {
        o(NfsArgop4::OpDestroySession(DestroySession4args {
            dsa_sessionid: *sessionid,
        }))
    }
    /// DESTROY_CLIENTID.
    pub fn destroy_clientid(clientid: u64) -> Vec<u8> {
        o(NfsArgop4::OpDestroyClientid(DestroyClientid4args {
            dca_clientid: clientid,
        }))
    }
    /// BIND_CONN_TO_SESSION.
    pub fn bind_conn(sessionid: &[u8; 16], dir: ChannelDirFromClient4) -> Vec<u8> {
        o(NfsArgop4::OpBindConnToSession(BindConnToSession4args {
            bctsa_sessid: *sessionid,
            bctsa_dir: dir,
            bctsa_use_conn_in_rdma_mode: false,
        }))
    }
    /// BACKCHANNEL_CTL.
    pub fn backchannel_ctl() -> Vec<u8> {
        o(NfsArgop4::OpBackchannelCtl(BackchannelCtl4args {
            bca_cb_program: 0x4000_0000,
            bca_sec_parms: vec![CallbackSecParms4::AuthNone],
        }))
    }
    /// TEST_STATEID.
    pub fn test_stateid(ids: &[(u32, [u8; 12])]) -> Vec<u8> {
        o(NfsArgop4::OpTestStateid(TestStateid4args {
            ts_stateids: ids.iter().copied().map(sid).collect(),
        }))
    }
    /// FREE_STATEID.
    pub fn free_stateid(s: (u32, [u8; 12])) -> Vec<u8> {
        o(NfsArgop4::OpFreeStateid(FreeStateid4args {
            fsa_stateid: sid(s),
        }))
    }
    /// DELEGRETURN.
    pub fn delegreturn(s: (u32, [u8; 12])) -> Vec<u8> {
        o(NfsArgop4::OpDelegreturn(Delegreturn4args {
            deleg_stateid: sid(s),
        }))
    }
    /// SEEK.
    pub fn seek(s: (u32, [u8; 12]), offset: u64, what: DataContent4) -> Vec<u8> {
        o(NfsArgop4::OpSeek(Seek4args {
            sa_stateid: sid(s),
            sa_offset: offset,
            sa_what: what,
        }))
    }
    /// ALLOCATE.
    pub fn allocate(s: (u32, [u8; 12]), offset: u64, length: u64) -> Vec<u8> {
        o(NfsArgop4::OpAllocate(Allocate4args {
            aa_stateid: sid(s),
            aa_offset: offset,
            aa_length: length,
        }))
    }
    /// DEALLOCATE.
    pub fn deallocate(s: (u32, [u8; 12]), offset: u64, length: u64) -> Vec<u8> {
        o(NfsArgop4::OpDeallocate(Deallocate4args {
            da_stateid: sid(s),
            da_offset: offset,
            da_length: length,
        }))
    }
    /// COPY (saved fh: source, current fh: destination), synchronous, intra-server.
    pub fn copy(
        src: (u32, [u8; 12]),
        dst: (u32, [u8; 12]),
        so: u64,
        d_o: u64,
        count: u64,
    ) -> Vec<u8> {
        o(NfsArgop4::OpCopy(Copy4args {
            ca_src_stateid: sid(src),
            ca_dst_stateid: sid(dst),
            ca_src_offset: so,
            ca_dst_offset: d_o,
            ca_count: count,
            ca_consecutive: false,
            ca_synchronous: true,
            ca_source_server: Vec::new(),
        }))
    }
    /// CLONE (saved fh: source, current fh: destination).
    pub fn clone_op(
        src: (u32, [u8; 12]),
        dst: (u32, [u8; 12]),
        so: u64,
        d_o: u64,
        count: u64,
    ) -> Vec<u8> {
        o(NfsArgop4::OpClone(Clone4args {
            cl_src_stateid: sid(src),
            cl_dst_stateid: sid(dst),
            cl_src_offset: so,
            cl_dst_offset: d_o,
            cl_count: count,
        }))
    }
    /// GETXATTR.
    pub fn getxattr(name: &[u8]) -> Vec<u8> {
        o(NfsArgop4::OpGetxattr(Getxattr4args { gxa_name: b(name) }))
    }
    /// SETXATTR.
    pub fn setxattr(option: SetxattrOption4, name: &[u8], value: &[u8]) -> Vec<u8> {
        o(NfsArgop4::OpSetxattr(Setxattr4args {
            sxa_option: option,
            sxa_key: b(name),
            sxa_value: b(value),
        }))
    }
    /// LISTXATTRS.
    pub fn listxattrs(cookie: u64, maxcount: u32) -> Vec<u8> {
        o(NfsArgop4::OpListxattrs(Listxattrs4args {
            lxa_cookie: cookie,
            lxa_maxcount: maxcount,
        }))
    }
    /// REMOVEXATTR.
    pub fn removexattr(name: &[u8]) -> Vec<u8> {
        o(NfsArgop4::OpRemovexattr(Removexattr4args {
            rxa_name: b(name),
        }))
    }
    /// An operation number with no arguments (for ILLEGAL and unsupported operations): raw,
    /// as no generated type carries an operation without its arguments.
    pub fn bare(opnum: NfsOpnum4) -> Vec<u8> {
        enc(|e| e.encode(&opnum))
    }
}
