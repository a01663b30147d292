//! NFSv3 helpers of the raw client: the status and success arm of every result union, and
//! the values tests build calls from (handles, sattr3s, a NULL call's empty arguments).

use std::fmt::Debug;

use bytes::Bytes;
use nfs3wire::*;
use xdr::{Decode, Decoder, Encode, Encoder};

/// The status and success arm of an NFSv3 result union (`X3res::Ok` / `X3res::Fail`).
pub trait Res3: Debug + Sized {
    /// What the success arm gives the tests: its resok, or the one field of a one-field resok
    /// (GETATTR's attributes, SETATTR's, REMOVE's and RMDIR's wcc data).
    type Ok;
    /// The status word.
    fn status(&self) -> Nfsstat3;
    /// The success arm, or the result itself.
    fn into_ok(self) -> Result<Self::Ok, Self>;
    /// Whether the status is NFS3_OK.
    fn is_ok(&self) -> bool {
        self.status() == Nfsstat3::NFS3_OK
    }
    /// The success arm; panics with the result otherwise.
    fn expect_ok(self, what: &str) -> Self::Ok {
        match self.into_ok() {
            Ok(t) => t,
            Err(r) => panic!("{what}: {:?} ({r:?})", r.status()),
        }
    }
}

macro_rules! res3 {
    ($($res:ident => $ok:ty $(, .$field:ident)?;)*) => {$(
        impl Res3 for $res {
            type Ok = $ok;
            fn status(&self) -> Nfsstat3 {
                self.discriminant()
            }
            fn into_ok(self) -> Result<$ok, Self> {
                match self {
                    $res::Ok(x) => Ok(x $(.$field)?),
                    other => Err(other),
                }
            }
        }
    )*};
}

res3! {
    Getattr3res => Fattr3, .obj_attributes;
    Setattr3res => WccData, .obj_wcc;
    Lookup3res => Lookup3resok;
    Access3res => Access3resok;
    Readlink3res => Readlink3resok;
    Read3res => Read3resok;
    Write3res => Write3resok;
    Create3res => Create3resok;
    Mkdir3res => Mkdir3resok;
    Symlink3res => Symlink3resok;
    Mknod3res => Mknod3resok;
    Remove3res => WccData, .dir_wcc;
    Rmdir3res => WccData, .dir_wcc;
    Rename3res => Rename3resok;
    Link3res => Link3resok;
    Readdir3res => Readdir3resok;
    Readdirplus3res => Readdirplus3resok;
    Fsstat3res => Fsstat3resok;
    Fsinfo3res => Fsinfo3resok;
    Pathconf3res => Pathconf3resok;
    Commit3res => Commit3resok;
}

/// The status of a MNT result.
pub trait MountStatus {
    /// The status word.
    fn status(&self) -> Mountstat3;
}

impl MountStatus for Mountres3 {
    fn status(&self) -> Mountstat3 {
        self.discriminant()
    }
}

/// No arguments (a NULL call), or no result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Void;

impl Encode for Void {
    fn encode(&self, _: &mut Encoder) {}
}

impl Decode for Void {
    fn decode(_: &mut Decoder) -> xdr::Result<Self> {
        Ok(Void)
    }
}

/// A file handle of these bytes.
pub fn fh3(data: Bytes) -> NfsFh3 {
    NfsFh3 { data }
}

/// A sattr3 that sets nothing.
pub fn sattr3() -> Sattr3 {
    Sattr3 {
        mode: SetMode3(None),
        uid: SetUid3(None),
        gid: SetGid3(None),
        size: SetSize3(None),
        atime: SetAtime::Default(TimeHow::DontChange),
        mtime: SetMtime::Default(TimeHow::DontChange),
    }
}

/// A sattr3 that sets the mode only.
pub fn sattr_mode(mode: u32) -> Sattr3 {
    Sattr3 {
        mode: SetMode3(Some(mode)),
        ..sattr3()
    }
}
