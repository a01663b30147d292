//! Encoders for seed inputs: RPC calls, NFSv3/MOUNT arguments (through the nfs3 crate's own
//! types) and NFSv4 COMPOUND operations (written out from RFC 7530, 8881, 7862 and 8276).

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

/// NFSv4 COMPOUND arguments.
pub mod v4 {
    use super::*;
    use nfs4::proto::op;

    /// COMPOUND4args from encoded operations (each with its opcode).
    pub fn compound(tag: &[u8], minor: u32, ops: &[Vec<u8>]) -> Vec<u8> {
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

    fn o(opnum: u32, f: impl FnOnce(&mut Encoder)) -> Vec<u8> {
        enc(|e| {
            e.u32(opnum);
            f(e)
        })
    }

    /// A stateid.
    pub fn stateid(e: &mut Encoder, seqid: u32, other: &[u8; 12]) {
        e.u32(seqid);
        e.opaque_fixed(other);
    }

    /// The anonymous stateid.
    pub const ANON: (u32, [u8; 12]) = (0, [0; 12]);
    /// The NFSv4.1 current stateid.
    pub const CURRENT: (u32, [u8; 12]) = (1, [0; 12]);

    /// A bitmap4.
    pub fn bitmap(e: &mut Encoder, words: &[u32]) {
        e.u32(words.len() as u32);
        for w in words {
            e.u32(*w);
        }
    }

    /// GETATTR's usual request: type, change, size, fsid, fileid, mode, nlink, owner, group,
    /// space used, times, mounted_on_fileid, plus supported_attrs, fh_expire_type,
    /// lease_time, rdattr_error, filehandle.
    pub const ATTRS: [u32; 2] = [0x0018_0d1f, 0x00b0_a03a];

    /// PUTROOTFH.
    pub fn putrootfh() -> Vec<u8> {
        o(op::PUTROOTFH, |_| {})
    }
    /// PUTPUBFH.
    pub fn putpubfh() -> Vec<u8> {
        o(op::PUTPUBFH, |_| {})
    }
    /// PUTFH with a marker handle.
    pub fn putfh(m: &[u8; 8]) -> Vec<u8> {
        o(op::PUTFH, |e| e.opaque(m))
    }
    /// GETFH.
    pub fn getfh() -> Vec<u8> {
        o(op::GETFH, |_| {})
    }
    /// SAVEFH.
    pub fn savefh() -> Vec<u8> {
        o(op::SAVEFH, |_| {})
    }
    /// RESTOREFH.
    pub fn restorefh() -> Vec<u8> {
        o(op::RESTOREFH, |_| {})
    }
    /// LOOKUPP.
    pub fn lookupp() -> Vec<u8> {
        o(op::LOOKUPP, |_| {})
    }
    /// READLINK.
    pub fn readlink() -> Vec<u8> {
        o(op::READLINK, |_| {})
    }
    /// GETATTR.
    pub fn getattr(words: &[u32]) -> Vec<u8> {
        o(op::GETATTR, |e| bitmap(e, words))
    }
    /// LOOKUP.
    pub fn lookup(name: &[u8]) -> Vec<u8> {
        o(op::LOOKUP, |e| e.opaque(name))
    }
    /// ACCESS.
    pub fn access(mask: u32) -> Vec<u8> {
        o(op::ACCESS, |e| e.u32(mask))
    }
    /// READDIR.
    pub fn readdir(cookie: u64, dircount: u32, maxcount: u32, words: &[u32]) -> Vec<u8> {
        o(op::READDIR, |e| {
            e.u64(cookie);
            e.opaque_fixed(&[0; 8]);
            e.u32(dircount);
            e.u32(maxcount);
            bitmap(e, words);
        })
    }
    /// READ or READ_PLUS.
    pub fn read(opnum: u32, sid: (u32, [u8; 12]), offset: u64, count: u32) -> Vec<u8> {
        o(opnum, |e| {
            stateid(e, sid.0, &sid.1);
            e.u64(offset);
            e.u32(count);
        })
    }
    /// WRITE.
    pub fn write(sid: (u32, [u8; 12]), offset: u64, stable: u32, data: &[u8]) -> Vec<u8> {
        o(op::WRITE, |e| {
            stateid(e, sid.0, &sid.1);
            e.u64(offset);
            e.u32(stable);
            e.opaque(data);
        })
    }
    /// COMMIT.
    pub fn commit(offset: u64, count: u32) -> Vec<u8> {
        o(op::COMMIT, |e| {
            e.u64(offset);
            e.u32(count);
        })
    }
    /// fattr4 setting the mode.
    pub fn fattr_mode(e: &mut Encoder, mode: u32) {
        bitmap(e, &[0, 1 << 1]);
        e.opaque(&mode.to_be_bytes());
    }
    /// fattr4 setting size and mode.
    pub fn fattr_size_mode(e: &mut Encoder, size: u64, mode: u32) {
        bitmap(e, &[1 << 4, 1 << 1]);
        let mut v = size.to_be_bytes().to_vec();
        v.extend_from_slice(&mode.to_be_bytes());
        e.opaque(&v);
    }
    /// SETATTR of size and mode.
    pub fn setattr(sid: (u32, [u8; 12]), size: u64, mode: u32) -> Vec<u8> {
        o(op::SETATTR, |e| {
            stateid(e, sid.0, &sid.1);
            fattr_size_mode(e, size, mode);
        })
    }
    /// SETATTR of the size only.
    pub fn setattr_size(sid: (u32, [u8; 12]), size: u64) -> Vec<u8> {
        o(op::SETATTR, |e| {
            stateid(e, sid.0, &sid.1);
            bitmap(e, &[1 << 4]);
            e.opaque(&size.to_be_bytes());
        })
    }
    /// VERIFY (`true`) or NVERIFY of the type attribute.
    pub fn verify(same: bool, ftype: u32) -> Vec<u8> {
        o(if same { op::VERIFY } else { op::NVERIFY }, |e| {
            bitmap(e, &[1 << 1]);
            e.opaque(&ftype.to_be_bytes());
        })
    }
    /// CREATE of a directory (type 2), symbolic link (5, with `link`) or fifo (7).
    pub fn create(ftype: u32, name: &[u8], link: &[u8]) -> Vec<u8> {
        o(op::CREATE, |e| {
            e.u32(ftype);
            match ftype {
                5 => e.opaque(link),
                3 | 4 => {
                    e.u32(1);
                    e.u32(3);
                }
                _ => {}
            }
            e.opaque(name);
            fattr_mode(e, 0o755);
        })
    }
    /// REMOVE.
    pub fn remove(name: &[u8]) -> Vec<u8> {
        o(op::REMOVE, |e| e.opaque(name))
    }
    /// RENAME (saved fh: source dir, current fh: target dir).
    pub fn rename(from: &[u8], to: &[u8]) -> Vec<u8> {
        o(op::RENAME, |e| {
            e.opaque(from);
            e.opaque(to);
        })
    }
    /// LINK (saved fh: the file, current fh: the directory).
    pub fn link(name: &[u8]) -> Vec<u8> {
        o(op::LINK, |e| e.opaque(name))
    }
    /// SECINFO.
    pub fn secinfo(name: &[u8]) -> Vec<u8> {
        o(op::SECINFO, |e| e.opaque(name))
    }
    /// SECINFO_NO_NAME.
    pub fn secinfo_no_name(style: u32) -> Vec<u8> {
        o(op::SECINFO_NO_NAME, |e| e.u32(style))
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
        Previous(u32),
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
        o(op::OPEN, |e| {
            e.u32(seqid);
            e.u32(access);
            e.u32(deny);
            e.u64(clientid);
            e.opaque(owner);
            match how {
                How::NoCreate => e.u32(0),
                How::Unchecked(m) | How::Guarded(m) => {
                    e.u32(1);
                    e.u32(if matches!(how, How::Unchecked(_)) {
                        0
                    } else {
                        1
                    });
                    fattr_mode(e, m);
                }
                How::Exclusive(v) => {
                    e.u32(1);
                    e.u32(2);
                    e.opaque_fixed(&v);
                }
                How::Exclusive41(v, m) => {
                    e.u32(1);
                    e.u32(3);
                    e.opaque_fixed(&v);
                    fattr_mode(e, m);
                }
            }
            match claim {
                Claim::Null(name) => {
                    e.u32(0);
                    e.opaque(name);
                }
                Claim::Previous(t) => {
                    e.u32(1);
                    e.u32(t);
                }
                Claim::Fh => e.u32(4),
            }
        })
    }
    /// OPEN_CONFIRM (NFSv4.0).
    pub fn open_confirm(sid: (u32, [u8; 12]), seqid: u32) -> Vec<u8> {
        o(op::OPEN_CONFIRM, |e| {
            stateid(e, sid.0, &sid.1);
            e.u32(seqid);
        })
    }
    /// OPEN_DOWNGRADE.
    pub fn open_downgrade(sid: (u32, [u8; 12]), seqid: u32, access: u32, deny: u32) -> Vec<u8> {
        o(op::OPEN_DOWNGRADE, |e| {
            stateid(e, sid.0, &sid.1);
            e.u32(seqid);
            e.u32(access);
            e.u32(deny);
        })
    }
    /// CLOSE.
    pub fn close(seqid: u32, sid: (u32, [u8; 12])) -> Vec<u8> {
        o(op::CLOSE, |e| {
            e.u32(seqid);
            stateid(e, sid.0, &sid.1);
        })
    }
    /// LOCK with a new lock owner.
    #[allow(clippy::too_many_arguments)]
    pub fn lock_new(
        locktype: u32,
        offset: u64,
        length: u64,
        open_seqid: u32,
        open_sid: (u32, [u8; 12]),
        lock_seqid: u32,
        clientid: u64,
        owner: &[u8],
    ) -> Vec<u8> {
        o(op::LOCK, |e| {
            e.u32(locktype);
            e.bool(false);
            e.u64(offset);
            e.u64(length);
            e.bool(true);
            e.u32(open_seqid);
            stateid(e, open_sid.0, &open_sid.1);
            e.u32(lock_seqid);
            e.u64(clientid);
            e.opaque(owner);
        })
    }
    /// LOCKT.
    pub fn lockt(locktype: u32, offset: u64, length: u64, clientid: u64, owner: &[u8]) -> Vec<u8> {
        o(op::LOCKT, |e| {
            e.u32(locktype);
            e.u64(offset);
            e.u64(length);
            e.u64(clientid);
            e.opaque(owner);
        })
    }
    /// LOCKU.
    pub fn locku(
        locktype: u32,
        seqid: u32,
        sid: (u32, [u8; 12]),
        offset: u64,
        length: u64,
    ) -> Vec<u8> {
        o(op::LOCKU, |e| {
            e.u32(locktype);
            e.u32(seqid);
            stateid(e, sid.0, &sid.1);
            e.u64(offset);
            e.u64(length);
        })
    }
    /// SETCLIENTID (NFSv4.0).
    pub fn setclientid(verifier: [u8; 8], id: &[u8]) -> Vec<u8> {
        o(op::SETCLIENTID, |e| {
            e.opaque_fixed(&verifier);
            e.opaque(id);
            e.u32(0x4000_0000);
            e.opaque(b"tcp");
            e.opaque(b"127.0.0.1.3.32");
            e.u32(1);
        })
    }
    /// SETCLIENTID_CONFIRM.
    pub fn setclientid_confirm(clientid: u64, confirm: [u8; 8]) -> Vec<u8> {
        o(op::SETCLIENTID_CONFIRM, |e| {
            e.u64(clientid);
            e.opaque_fixed(&confirm);
        })
    }
    /// RENEW.
    pub fn renew(clientid: u64) -> Vec<u8> {
        o(op::RENEW, |e| e.u64(clientid))
    }
    /// RELEASE_LOCKOWNER.
    pub fn release_lockowner(clientid: u64, owner: &[u8]) -> Vec<u8> {
        o(op::RELEASE_LOCKOWNER, |e| {
            e.u64(clientid);
            e.opaque(owner);
        })
    }
    /// EXCHANGE_ID (SP4_NONE, no implementation id).
    pub fn exchange_id(verifier: [u8; 8], owner: &[u8], flags: u32) -> Vec<u8> {
        o(op::EXCHANGE_ID, |e| {
            e.opaque_fixed(&verifier);
            e.opaque(owner);
            e.u32(flags);
            e.u32(0);
            e.u32(0);
        })
    }
    fn channel_attrs(e: &mut Encoder, slots: u32) {
        e.u32(0);
        e.u32(1 << 20);
        e.u32(1 << 20);
        e.u32(4096);
        e.u32(16);
        e.u32(slots);
        e.u32(0);
    }
    /// CREATE_SESSION.
    pub fn create_session(clientid: u64, seq: u32, flags: u32) -> Vec<u8> {
        o(op::CREATE_SESSION, |e| {
            e.u64(clientid);
            e.u32(seq);
            e.u32(flags);
            channel_attrs(e, 8);
            channel_attrs(e, 1);
            e.u32(0x4000_0000);
            e.u32(1);
            e.u32(0); // AUTH_NONE
        })
    }
    /// SEQUENCE.
    pub fn sequence(sessionid: &[u8; 16], seqid: u32, slot: u32, cache: bool) -> Vec<u8> {
        o(op::SEQUENCE, |e| {
            e.opaque_fixed(sessionid);
            e.u32(seqid);
            e.u32(slot);
            e.u32(7);
            e.bool(cache);
        })
    }
    /// RECLAIM_COMPLETE.
    pub fn reclaim_complete(one_fs: bool) -> Vec<u8> {
        o(op::RECLAIM_COMPLETE, |e| e.bool(one_fs))
    }
    /// DESTROY_SESSION.
    pub fn destroy_session(sessionid: &[u8; 16]) -> Vec<u8> {
        o(op::DESTROY_SESSION, |e| e.opaque_fixed(sessionid))
    }
    /// DESTROY_CLIENTID.
    pub fn destroy_clientid(clientid: u64) -> Vec<u8> {
        o(op::DESTROY_CLIENTID, |e| e.u64(clientid))
    }
    /// BIND_CONN_TO_SESSION.
    pub fn bind_conn(sessionid: &[u8; 16], dir: u32) -> Vec<u8> {
        o(op::BIND_CONN_TO_SESSION, |e| {
            e.opaque_fixed(sessionid);
            e.u32(dir);
            e.bool(false);
        })
    }
    /// BACKCHANNEL_CTL.
    pub fn backchannel_ctl() -> Vec<u8> {
        o(op::BACKCHANNEL_CTL, |e| {
            e.u32(0x4000_0000);
            e.u32(1);
            e.u32(0);
        })
    }
    /// TEST_STATEID.
    pub fn test_stateid(ids: &[(u32, [u8; 12])]) -> Vec<u8> {
        o(op::TEST_STATEID, |e| {
            e.u32(ids.len() as u32);
            for (s, other) in ids {
                stateid(e, *s, other);
            }
        })
    }
    /// FREE_STATEID.
    pub fn free_stateid(sid: (u32, [u8; 12])) -> Vec<u8> {
        o(op::FREE_STATEID, |e| stateid(e, sid.0, &sid.1))
    }
    /// DELEGRETURN.
    pub fn delegreturn(sid: (u32, [u8; 12])) -> Vec<u8> {
        o(op::DELEGRETURN, |e| stateid(e, sid.0, &sid.1))
    }
    /// SEEK (what: 0 data, 1 hole).
    pub fn seek(sid: (u32, [u8; 12]), offset: u64, what: u32) -> Vec<u8> {
        o(op::SEEK, |e| {
            stateid(e, sid.0, &sid.1);
            e.u64(offset);
            e.u32(what);
        })
    }
    /// ALLOCATE or DEALLOCATE.
    pub fn allocate(opnum: u32, sid: (u32, [u8; 12]), offset: u64, length: u64) -> Vec<u8> {
        o(opnum, |e| {
            stateid(e, sid.0, &sid.1);
            e.u64(offset);
            e.u64(length);
        })
    }
    /// COPY (saved fh: source, current fh: destination), synchronous, intra-server.
    pub fn copy(
        src: (u32, [u8; 12]),
        dst: (u32, [u8; 12]),
        so: u64,
        d_o: u64,
        count: u64,
    ) -> Vec<u8> {
        o(op::COPY, |e| {
            stateid(e, src.0, &src.1);
            stateid(e, dst.0, &dst.1);
            e.u64(so);
            e.u64(d_o);
            e.u64(count);
            e.bool(false);
            e.bool(true);
            e.u32(0);
        })
    }
    /// CLONE (saved fh: source, current fh: destination).
    pub fn clone_op(
        src: (u32, [u8; 12]),
        dst: (u32, [u8; 12]),
        so: u64,
        d_o: u64,
        count: u64,
    ) -> Vec<u8> {
        o(op::CLONE, |e| {
            stateid(e, src.0, &src.1);
            stateid(e, dst.0, &dst.1);
            e.u64(so);
            e.u64(d_o);
            e.u64(count);
        })
    }
    /// GETXATTR.
    pub fn getxattr(name: &[u8]) -> Vec<u8> {
        o(op::GETXATTR, |e| e.opaque(name))
    }
    /// SETXATTR (option 0: either, 1: create, 2: replace).
    pub fn setxattr(option: u32, name: &[u8], value: &[u8]) -> Vec<u8> {
        o(op::SETXATTR, |e| {
            e.u32(option);
            e.opaque(name);
            e.opaque(value);
        })
    }
    /// LISTXATTRS.
    pub fn listxattrs(cookie: u64, maxcount: u32) -> Vec<u8> {
        o(op::LISTXATTRS, |e| {
            e.u64(cookie);
            e.u32(maxcount);
        })
    }
    /// REMOVEXATTR.
    pub fn removexattr(name: &[u8]) -> Vec<u8> {
        o(op::REMOVEXATTR, |e| e.opaque(name))
    }
    /// An operation number with no arguments (for ILLEGAL and unsupported operations).
    pub fn bare(opnum: u32) -> Vec<u8> {
        o(opnum, |_| {})
    }
}
