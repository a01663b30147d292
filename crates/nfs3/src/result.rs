//! NFSv3 results as the dispatcher sees them: what each tells the metrics, how large a listing
//! is before it is encoded, and the decode-run-encode step every procedure goes through.

use nfs3wire::*;
use sunrpc::ProcError;
use xdr::{Decode, Decoder, Encode, Encoder};

/// Bytes of a READDIR or READDIRPLUS reply around its entries: status, post_op_attr, verifier,
/// end of list and eof.
pub(crate) const DIR_REPLY_FIXED: usize = 4 + 4 + FATTR3_SIZE + 8 + 4 + 4;

/// A READDIR or READDIRPLUS entry with its encoded size.
pub(crate) trait DirReplyEntry {
    /// Bytes the entry takes in the reply, its list word included.
    fn wire_len(&self) -> usize;
}

/// Bytes of an entry's fileid, name and cookie: what READDIRPLUS's `dircount` counts.
fn dir_info_len(name: &[u8]) -> usize {
    8 + 4 + xdr::pad4(name.len()) + 8
}

impl DirReplyEntry for Entry3 {
    fn wire_len(&self) -> usize {
        4 + dir_info_len(&self.name)
    }
}

impl DirReplyEntry for Entryplus3 {
    fn wire_len(&self) -> usize {
        let attrs = 4 + self.name_attributes.0.as_ref().map_or(0, |_| FATTR3_SIZE);
        let fh = 4 + self
            .name_handle
            .0
            .as_ref()
            .map_or(0, |fh| 4 + xdr::pad4(fh.data.len()));
        4 + dir_info_len(&self.name) + attrs + fh
    }
}

/// What a procedure's result tells the metrics.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Done {
    /// The result's status.
    pub(crate) status: Nfsstat3,
    /// READ payload bytes sent.
    pub(crate) read: u32,
    /// WRITE payload bytes written.
    pub(crate) written: u32,
}

/// A procedure's result: every NFSv3 result is a union on its status.
pub(crate) trait Res3: Encode {
    fn done(&self) -> Done;
    /// Bytes of the encoded result when it is large (0: small or unknown), reserved before
    /// encoding it.
    fn size_hint(&self) -> usize {
        0
    }
}

macro_rules! res3 {
    ($($t:ty),*) => {$(
        impl Res3 for $t {
            fn done(&self) -> Done {
                Done { status: self.discriminant(), read: 0, written: 0 }
            }
        }
    )*};
}

res3!(
    Getattr3res,
    Setattr3res,
    Lookup3res,
    Access3res,
    Readlink3res,
    Create3res,
    Mkdir3res,
    Symlink3res,
    Mknod3res,
    Remove3res,
    Rmdir3res,
    Rename3res,
    Link3res,
    Fsstat3res,
    Fsinfo3res,
    Pathconf3res,
    Commit3res
);

/// Listings: their size is known before they are encoded.
macro_rules! res3_listing {
    ($($t:ident),*) => {$(
        impl Res3 for $t {
            fn done(&self) -> Done {
                Done { status: self.discriminant(), read: 0, written: 0 }
            }
            fn size_hint(&self) -> usize {
                match self {
                    $t::Ok(ok) => dir_reply_len(&ok.reply.entries),
                    $t::Fail(..) => 0,
                }
            }
        }
    )*};
}

res3_listing!(Readdir3res, Readdirplus3res);

/// Bytes of a listing's reply: its entries and the fixed part around them.
fn dir_reply_len(entries: &[impl DirReplyEntry]) -> usize {
    DIR_REPLY_FIXED + entries.iter().map(DirReplyEntry::wire_len).sum::<usize>()
}

impl Res3 for Read3res {
    fn done(&self) -> Done {
        let read = match self {
            Read3res::Ok(ok) => ok.count,
            Read3res::Fail(..) => 0,
        };
        Done {
            status: self.discriminant(),
            read,
            written: 0,
        }
    }
}

impl Res3 for Write3res {
    fn done(&self) -> Done {
        let written = match self {
            Write3res::Ok(ok) => ok.count,
            Write3res::Fail(..) => 0,
        };
        Done {
            status: self.discriminant(),
            read: 0,
            written,
        }
    }
}

/// Decodes a procedure's arguments, runs it, and appends its result.
pub(crate) fn run<A: Decode, R: Res3>(
    args: Decoder,
    reply: &mut Encoder,
    f: impl FnOnce(A) -> R,
) -> Result<Done, ProcError> {
    let mut args = args;
    let a = A::decode(&mut args).map_err(|_| ProcError::GarbageArgs)?;
    let r = f(a);
    reply.reserve(r.size_hint());
    r.encode(reply);
    Ok(r.done())
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn encoded_len(r: &impl Encode) -> usize {
        let mut e = Encoder::new();
        r.encode(&mut e);
        e.finish().wire_len()
    }

    fn fattr() -> Fattr3 {
        let t = Nfstime3 {
            seconds: 1,
            nseconds: 2,
        };
        Fattr3 {
            r#type: Ftype3::Nf3reg,
            mode: 0o644,
            nlink: 1,
            uid: 0,
            gid: 0,
            size: 3,
            used: 4096,
            rdev: Specdata3 {
                specdata1: 0,
                specdata2: 0,
            },
            fsid: 7,
            fileid: 9,
            atime: t.clone(),
            mtime: t.clone(),
            ctime: t,
        }
    }

    #[test]
    fn a_listings_size_hint_is_its_encoded_length() {
        // names of every length modulo 4, entries with and without attributes and handle
        let plus: Vec<Entryplus3> = (0..9)
            .map(|i| Entryplus3 {
                fileid: i,
                name: Bytes::from(vec![b'n'; i as usize + 1]),
                cookie: i + 1,
                name_attributes: PostOpAttr((i % 2 == 0).then(fattr)),
                name_handle: PostOpFh3((i % 3 != 0).then(|| NfsFh3 {
                    data: Bytes::from(vec![7u8; 26 + i as usize]),
                })),
            })
            .collect();
        let plain: Vec<Entry3> = plus
            .iter()
            .map(|e| Entry3 {
                fileid: e.fileid,
                name: e.name.clone(),
                cookie: e.cookie,
            })
            .collect();
        for n in [0, 1, plus.len()] {
            let r = Readdirplus3res::Ok(Readdirplus3resok {
                dir_attributes: PostOpAttr(Some(fattr())),
                cookieverf: [1; 8],
                reply: Dirlistplus3 {
                    entries: plus[..n].to_vec(),
                    eof: true,
                },
            });
            assert_eq!(r.size_hint(), encoded_len(&r), "{n} entries (plus)");
            let r = Readdir3res::Ok(Readdir3resok {
                dir_attributes: PostOpAttr(Some(fattr())),
                cookieverf: [1; 8],
                reply: Dirlist3 {
                    entries: plain[..n].to_vec(),
                    eof: false,
                },
            });
            assert_eq!(r.size_hint(), encoded_len(&r), "{n} entries");
        }
    }
}
