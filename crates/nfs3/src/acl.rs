//! The NFSACL v3 program (100227): the POSIX ACLs of files on NFSv3 mounts, which the Linux
//! client's getfacl and setfacl use, served on the NFS port as knfsd serves them
//! (`fs/nfsd/nfs3acl.c`). It has no RFC; its XDR is `spec/nfs_acl.x`.
//!
//! An ACL travels as its POSIX entries (tag, id, rwx), a default ACL's tagged
//! NFS_ACL_DEFAULT; a three-entry ACL is sent with a mask equal to its group entry (four
//! entries, as Solaris expects) and such a mask is dropped again when one comes back.

use std::sync::Arc;

use sunrpc::{CallContext, ProcError, Program};
use vfs::acl::{Ace, AclKind, PosixAcl, Tag, MAX_ENTRIES};
use vfs::{Caller, Node, Vfs, VfsError};
use xdr::{Decode, Decoder, Encode, Encoder};

use crate::convert::{nfsstat, post};
use crate::nfs::client_of;
use nfs3wire::*;

/// The bits of a secattr3 mask that mean something.
const MASK_BITS: u32 = NFS_ACL | NFS_ACLCNT | NFS_DFACL | NFS_DFACLCNT;

/// Serves NFSACL version 3 over the backend.
pub struct NfsAcl {
    vfs: Arc<Vfs>,
    /// State other programs keep on files (NFSv4 delegations), recalled before a SETACL.
    guard: Option<Arc<dyn vfs::ChangeGuard>>,
}

/// An ACL as NFSACL sends it: its entry count, and its entries when they were asked for.
fn encode_acl(acl: Option<&PosixAcl>, n: &Node, entries: bool, flag: u32) -> (u32, Vec<Aclent3>) {
    let Some(acl) = acl else {
        return (0, Vec::new());
    };
    let ent = |e: &Ace| Aclent3 {
        r#type: tag_code(e.tag) | flag,
        id: match e.tag {
            Tag::UserObj => n.attr.uid,
            Tag::GroupObj => n.attr.gid,
            Tag::User(u) => u,
            Tag::Group(g) => g,
            // Solaris expects 0 here
            Tag::Mask | Tag::Other => 0,
        },
        perm: u32::from(e.perm),
    };
    let mut out: Vec<Aclent3> = acl.entries().iter().map(ent).collect();
    if acl.is_minimal() {
        // owner, group, mask (the group's bits), other: the order Solaris VxFS wants
        let group = acl.perm(Tag::GroupObj).unwrap_or(0);
        out.insert(
            2,
            ent(&Ace {
                tag: Tag::Mask,
                perm: group,
            }),
        );
    }
    let count = out.len() as u32;
    (count, if entries { out } else { Vec::new() })
}

fn tag_code(t: Tag) -> u32 {
    match t {
        Tag::UserObj => NFS_ACL_USER_OBJ,
        Tag::User(_) => NFS_ACL_USER,
        Tag::GroupObj => NFS_ACL_GROUP_OBJ,
        Tag::Group(_) => NFS_ACL_GROUP,
        Tag::Mask => NFS_ACL_CLASS,
        Tag::Other => NFS_ACL_OTHER,
    }
}

/// Why a SETACL's ACL is not set.
enum BadAcl {
    /// Not an ACL at all (an unknown tag, more entries than the count): GARBAGE_ARGS, as the
    /// Linux server's decoder refuses it.
    Garbage,
    /// Entries that make no valid ACL: NFS3ERR_INVAL.
    Invalid,
}

/// The ACL a SETACL carries; None (remove it) when it has no entries.
fn decode_acl(count: u32, ents: &[Aclent3]) -> Result<Option<PosixAcl>, BadAcl> {
    if count as usize > MAX_ENTRIES || ents.len() > count as usize {
        return Err(BadAcl::Garbage);
    }
    if ents.is_empty() {
        return Ok(None);
    }
    let mut out = Vec::with_capacity(ents.len());
    for e in ents {
        let tag = match e.r#type & !NFS_ACL_DEFAULT {
            NFS_ACL_USER_OBJ => Tag::UserObj,
            NFS_ACL_USER => Tag::User(e.id),
            NFS_ACL_GROUP_OBJ => Tag::GroupObj,
            NFS_ACL_GROUP => Tag::Group(e.id),
            NFS_ACL_CLASS => Tag::Mask,
            NFS_ACL_OTHER => Tag::Other,
            _ => return Err(BadAcl::Garbage),
        };
        if matches!(tag, Tag::User(u32::MAX) | Tag::Group(u32::MAX)) {
            return Err(BadAcl::Garbage);
        }
        let perm = match tag {
            // Solaris sometimes sets other bits in the mask
            Tag::Mask => e.perm & 7,
            Tag::UserObj | Tag::GroupObj | Tag::Other if e.perm & !7 != 0 => {
                return Err(BadAcl::Garbage)
            }
            _ => e.perm,
        };
        out.push(Ace {
            tag,
            perm: u8::try_from(perm).map_err(|_| BadAcl::Invalid)?,
        });
    }
    let mut acl = PosixAcl::new(out).map_err(|_| BadAcl::Invalid)?;
    // the mask a three-entry ACL was sent with, when it says nothing the group entry does not
    if acl.entries().len() == 4 && acl.perm(Tag::Mask) == acl.perm(Tag::GroupObj) {
        let rest = acl
            .entries()
            .iter()
            .filter(|e| e.tag != Tag::Mask)
            .copied()
            .collect();
        acl = PosixAcl::new(rest).map_err(|_| BadAcl::Invalid)?;
    }
    Ok(Some(acl))
}

impl NfsAcl {
    /// The program over a backend.
    pub fn new(vfs: Arc<Vfs>) -> Self {
        Self { vfs, guard: None }
    }

    /// Recalls `guard`'s conflicting state before each SETACL (as NFSv3's own changes do).
    pub fn with_change_guard(mut self, guard: Arc<dyn vfs::ChangeGuard>) -> Self {
        self.guard = Some(guard);
        self
    }

    fn auth(&self, ctx: &CallContext, fh: &NfsFh3) -> Result<(Caller, Node), VfsError> {
        let (c, n) = self.vfs.authorize(&fh.data, &client_of(ctx))?;
        if !c.acls {
            // `no_acl`: no ACLs for this client, as if the file system kept none
            return Err(VfsError::NotSupported);
        }
        Ok((c, n))
    }

    fn getacl(&self, ctx: &CallContext, a: Getacl3args) -> Getacl3res {
        let fail = |s, n: Option<&Node>| {
            Getacl3res::Fail(
                s,
                Getacl3resfail {
                    attr: post(n.map(|n| &n.attr)),
                },
            )
        };
        if a.mask & !MASK_BITS != 0 {
            return fail(Nfsstat3::NFS3ERR_INVAL, None);
        }
        let (c, n) = match self.auth(ctx, &a.fh) {
            Ok(x) => x,
            Err(e) => return fail(nfsstat(e), None),
        };
        let read = |kind, wanted: u32| -> Result<Option<PosixAcl>, VfsError> {
            if a.mask & wanted == 0 {
                return Ok(None);
            }
            let acl = self.vfs.get_acl(&c, &n, kind)?;
            Ok(match kind {
                // a file without one has the ACL its mode stands for (Solaris does the same)
                AclKind::Access => Some(acl.unwrap_or_else(|| PosixAcl::from_mode(n.attr.mode))),
                AclKind::Default => acl,
            })
        };
        let access = read(AclKind::Access, NFS_ACL | NFS_ACLCNT);
        let default = read(AclKind::Default, NFS_DFACL | NFS_DFACLCNT);
        let (access, default) = match (access, default) {
            (Ok(a), Ok(d)) => (a, d),
            (Err(e), _) | (_, Err(e)) => return fail(nfsstat(e), Some(&n)),
        };
        let (aclcnt, aclent) = encode_acl(access.as_ref(), &n, a.mask & NFS_ACL != 0, 0);
        let (dfaclcnt, dfaclent) = encode_acl(
            default.as_ref(),
            &n,
            a.mask & NFS_DFACL != 0,
            NFS_ACL_DEFAULT,
        );
        Getacl3res::Ok(Getacl3resok {
            attr: post(Some(&n.attr)),
            acl: Secattr3 {
                mask: a.mask,
                aclcnt,
                aclent,
                dfaclcnt,
                dfaclent,
            },
        })
    }

    fn setacl(&self, ctx: &CallContext, a: Setacl3args) -> Result<Setacl3res, ProcError> {
        let s = &a.acl;
        if s.mask & !MASK_BITS != 0 {
            return Err(ProcError::GarbageArgs);
        }
        // as knfsd: a part the mask leaves out is set to none (removed)
        let parse = |bit: u32, count, ents: &[Aclent3]| match s.mask & bit {
            0 => Ok(None),
            _ => decode_acl(count, ents),
        };
        let access = parse(NFS_ACL, s.aclcnt, &s.aclent);
        let default = parse(NFS_DFACL, s.dfaclcnt, &s.dfaclent);
        let fail = |st, n: Option<&Node>| {
            Setacl3res::Fail(
                st,
                Setacl3resfail {
                    attr: post(n.map(|n| &n.attr)),
                },
            )
        };
        let (access, default) = match (access, default) {
            (Err(BadAcl::Garbage), _) | (_, Err(BadAcl::Garbage)) => {
                return Err(ProcError::GarbageArgs)
            }
            (Err(BadAcl::Invalid), _) | (_, Err(BadAcl::Invalid)) => {
                return Ok(fail(Nfsstat3::NFS3ERR_INVAL, None))
            }
            (Ok(a), Ok(d)) => (a, d),
        };
        let (c, n) = match self.auth(ctx, &a.fh) {
            Ok(x) => x,
            Err(e) => return Ok(fail(nfsstat(e), None)),
        };
        let set = self
            .guard
            .as_ref()
            .map_or(Ok(()), |g| g.before_change(n.file_id()))
            .and_then(|()| self.vfs.set_acl(&c, &n, AclKind::Access, access.as_ref()))
            .and_then(|()| self.vfs.set_acl(&c, &n, AclKind::Default, default.as_ref()));
        let after = self.vfs.getattr(&n).ok();
        Ok(match set {
            Ok(()) => Setacl3res::Ok(Setacl3resok {
                attr: post(after.as_ref()),
            }),
            Err(e) => Setacl3res::Fail(
                nfsstat(e),
                Setacl3resfail {
                    attr: post(after.as_ref()),
                },
            ),
        })
    }
}

impl Program for NfsAcl {
    fn program(&self) -> u32 {
        NFS_ACL_PROGRAM
    }

    fn versions(&self) -> (u32, u32) {
        (NFS_ACL_V3, NFS_ACL_V3)
    }

    fn proc_name(&self, _vers: u32, p: u32) -> Option<&'static str> {
        Some(match p {
            ACLPROC3_NULL => "NULL",
            ACLPROC3_GETACL => "GETACL",
            ACLPROC3_SETACL => "SETACL",
            _ => return None,
        })
    }

    /// GETACL and SETACL begin with the handle of the object.
    fn admission(&self, _vers: u32, p: u32, args: &Decoder) -> Option<u64> {
        if p == ACLPROC3_NULL {
            return None;
        }
        crate::convert::export_of_args(&self.vfs, args)
    }

    fn call(&self, ctx: &CallContext, mut args: Decoder, r: &mut Encoder) -> Result<(), ProcError> {
        match ctx.proc_ {
            ACLPROC3_NULL => {}
            ACLPROC3_GETACL => {
                let a = Getacl3args::decode(&mut args)?;
                self.getacl(ctx, a).encode(r);
            }
            ACLPROC3_SETACL => {
                let a = Setacl3args::decode(&mut args)?;
                self.setacl(ctx, a)?.encode(r);
            }
            _ => return Err(ProcError::ProcUnavail),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ent(t: u32, id: u32, perm: u32) -> Aclent3 {
        Aclent3 {
            r#type: t,
            id,
            perm,
        }
    }

    #[test]
    fn a_minimal_acl_comes_back_without_the_mask_it_was_sent_with() {
        let sent = [
            ent(NFS_ACL_USER_OBJ, 0, 6),
            ent(NFS_ACL_GROUP_OBJ, 0, 4),
            ent(NFS_ACL_CLASS, 0, 4 | 0o70),
            ent(NFS_ACL_OTHER, 0, 0),
        ];
        let acl = decode_acl(4, &sent).ok().flatten().unwrap();
        assert!(acl.is_minimal());
        assert_eq!(acl.mode_bits(), 0o640);
    }

    #[test]
    fn bad_acls_are_garbage_or_invalid() {
        let ok = [
            ent(NFS_ACL_USER_OBJ, 0, 7),
            ent(NFS_ACL_USER, 1001, 5),
            ent(NFS_ACL_GROUP_OBJ, 0, 5),
            ent(NFS_ACL_CLASS, 0, 7),
            ent(NFS_ACL_OTHER, 0, 0),
        ];
        assert!(matches!(decode_acl(5, &ok), Ok(Some(_))));
        let pick = |idx: &[usize]| -> Vec<Aclent3> { idx.iter().map(|&i| ok[i].clone()).collect() };
        // more entries than the count, a count past the limit, an unknown tag
        assert!(matches!(decode_acl(4, &ok), Err(BadAcl::Garbage)));
        assert!(matches!(decode_acl(1025, &ok), Err(BadAcl::Garbage)));
        let mut bad = ok.clone();
        bad[1].r#type = 0x40;
        assert!(matches!(decode_acl(5, &bad), Err(BadAcl::Garbage)));
        // a named entry without a mask, and the same user twice: no valid ACL
        let no_mask = pick(&[0, 1, 2, 4]);
        assert!(matches!(decode_acl(4, &no_mask), Err(BadAcl::Invalid)));
        let twice = pick(&[0, 1, 1, 2, 3, 4]);
        assert!(matches!(decode_acl(6, &twice), Err(BadAcl::Invalid)));
        // a named user's perm beyond rwx
        let mut wide = ok.clone();
        wide[1].perm = 0o17;
        assert!(matches!(decode_acl(5, &wide), Err(BadAcl::Invalid)));
        // no entries: remove the ACL
        assert!(matches!(decode_acl(0, &[]), Ok(None)));
    }
}
