//! The NFSv3 and MOUNT v3 calls the benchmark makes (RFC 1813), on the workspace's wire types.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use nfs3wire::*;
use xdr::{Decode, Decoder, Encode};

use crate::err;
use crate::error::Result;
use crate::rdma::Expect;
use crate::rpc::{Cred, RpcConn, Via};

/// READDIRPLUS maxcount.
const MAXCOUNT: u32 = 64 * 1024;

/// An NFSv3 client on one connection.
pub struct V3 {
    /// The connection.
    pub rpc: RpcConn,
}

fn decode<T: Decode>(b: Bytes) -> Result<T> {
    let mut d = Decoder::new(b);
    Ok(T::decode(&mut d)?)
}

/// The success arm of the NFSv3 result union `$res` decoded from `$reply`; an error naming
/// `$what` and the status otherwise.
macro_rules! ok {
    ($res:ident, $what:expr, $reply:expr) => {
        match decode::<$res>($reply)? {
            $res::Ok(ok) => ok,
            other => return Err(err!("NFSv3 {}: {:?}", $what, other.discriminant())),
        }
    };
}

/// MNT of `path` through the MOUNT server at `addr`: the export's root handle.
pub async fn mount(addr: SocketAddr, path: &str, cred: Cred, timeout: Duration) -> Result<NfsFh3> {
    let rpc = RpcConn::connect(addr, cred, timeout)
        .await
        .map_err(|e| err!("cannot connect to MOUNT at {addr}: {e}"))?;
    let args = Dirpath(Bytes::copy_from_slice(path.as_bytes()));
    let r = rpc
        .call(MOUNTPROG, MOUNTVERS3, MOUNTPROC_MNT, |e| args.encode(e))
        .await?;
    match decode::<Mountres3>(r)? {
        Mountres3::Ok(ok) => Ok(NfsFh3 { data: ok.fhandle }),
        Mountres3::Fail(s) => Err(err!("MNT {path}: {s:?}")),
    }
}

impl V3 {
    /// Connects to the NFS server at `addr` over `via`.
    pub async fn connect(addr: SocketAddr, via: Via, cred: Cred, timeout: Duration) -> Result<V3> {
        Self::connect_from(addr, via, cred, timeout, false).await
    }

    /// As [`V3::connect`], from a reserved port with `reserved_port` (see
    /// [`RpcConn::open_from`]).
    pub async fn connect_from(
        addr: SocketAddr,
        via: Via,
        cred: Cred,
        timeout: Duration,
        reserved_port: bool,
    ) -> Result<V3> {
        let rpc = RpcConn::open_from(via, addr, cred, timeout, reserved_port)
            .await
            .map_err(|e| err!("cannot connect to NFS at {addr}: {e}"))?;
        Ok(V3 { rpc })
    }

    async fn call(&self, p: u32, args: &impl Encode) -> Result<Bytes> {
        self.call_expect(p, Expect::Small, args).await
    }

    async fn call_expect(&self, p: u32, expect: Expect, args: &impl Encode) -> Result<Bytes> {
        Ok(self
            .rpc
            .call_expect(NFS3_PROGRAM, NFS_V3, p, expect, |e| args.encode(e))
            .await?)
    }

    /// NULL.
    pub async fn null(&self) -> Result<()> {
        self.rpc
            .call_expect(NFS3_PROGRAM, NFS_V3, NFSPROC3_NULL, Expect::Small, |_| {})
            .await?;
        Ok(())
    }

    /// FSINFO: (rtmax, wtmax).
    pub async fn fsinfo(&self, fh: &NfsFh3) -> Result<(u32, u32)> {
        let r = self
            .call(NFSPROC3_FSINFO, &Fsinfo3args { fsroot: fh.clone() })
            .await?;
        let ok = ok!(Fsinfo3res, "FSINFO", r);
        Ok((ok.rtmax, ok.wtmax))
    }

    /// GETATTR.
    pub async fn getattr(&self, fh: &NfsFh3) -> Result<Fattr3> {
        let r = self
            .call(NFSPROC3_GETATTR, &Getattr3args { object: fh.clone() })
            .await?;
        Ok(ok!(Getattr3res, "GETATTR", r).obj_attributes)
    }

    /// LOOKUP of `name` in `dir`.
    pub async fn lookup(&self, dir: &NfsFh3, name: &str) -> Result<NfsFh3> {
        let r = self
            .call(
                NFSPROC3_LOOKUP,
                &Lookup3args {
                    what: dirop(dir, name),
                },
            )
            .await?;
        Ok(ok!(Lookup3res, "LOOKUP", r).object)
    }

    /// CREATE (UNCHECKED, mode 0644) of `name` in `dir`.
    pub async fn create(&self, dir: &NfsFh3, name: &str) -> Result<NfsFh3> {
        let r = self
            .call(
                NFSPROC3_CREATE,
                &Create3args {
                    r#where: dirop(dir, name),
                    how: Createhow3::Unchecked(sattr(SetMode3(Some(0o644)), SetSize3(None))),
                },
            )
            .await?;
        match ok!(Create3res, "CREATE", r).obj.0 {
            Some(fh) => Ok(fh),
            None => self.lookup(dir, name).await,
        }
    }

    /// MKDIR (mode 0755) of `name` in `dir`.
    pub async fn mkdir(&self, dir: &NfsFh3, name: &str) -> Result<NfsFh3> {
        let r = self
            .call(
                NFSPROC3_MKDIR,
                &Mkdir3args {
                    r#where: dirop(dir, name),
                    attributes: sattr(SetMode3(Some(0o755)), SetSize3(None)),
                },
            )
            .await?;
        match ok!(Mkdir3res, "MKDIR", r).obj.0 {
            Some(fh) => Ok(fh),
            None => self.lookup(dir, name).await,
        }
    }

    /// WRITE of `data` at `off`; returns the count written.
    pub async fn write(
        &self,
        fh: &NfsFh3,
        off: u64,
        data: Bytes,
        stable: StableHow,
    ) -> Result<u32> {
        let args = Write3args {
            file: fh.clone(),
            offset: off,
            count: data.len() as u32,
            stable,
            data,
        };
        let r = self.call(NFSPROC3_WRITE, &args).await?;
        Ok(ok!(Write3res, "WRITE", r).count)
    }

    /// READ of `count` bytes at `off`: the data and the eof flag.
    pub async fn read(&self, fh: &NfsFh3, off: u64, count: u32) -> Result<(Bytes, bool)> {
        let r = self
            .call_expect(
                NFSPROC3_READ,
                Expect::DataLast(count),
                &Read3args {
                    file: fh.clone(),
                    offset: off,
                    count,
                },
            )
            .await?;
        let ok = ok!(Read3res, "READ", r);
        let data = match ok.data {
            xdr::Payload::Bytes(b) => b,
            xdr::Payload::Pages(_) => return Err(err!("READ: a decoded reply holds bytes")),
        };
        Ok((data, ok.eof))
    }

    /// COMMIT of the whole file.
    pub async fn commit(&self, fh: &NfsFh3) -> Result<()> {
        let r = self
            .call(
                NFSPROC3_COMMIT,
                &Commit3args {
                    file: fh.clone(),
                    offset: 0,
                    count: 0,
                },
            )
            .await?;
        ok!(Commit3res, "COMMIT", r);
        Ok(())
    }

    /// SETATTR of the size.
    pub async fn truncate(&self, fh: &NfsFh3, size: u64) -> Result<()> {
        let r = self
            .call(
                NFSPROC3_SETATTR,
                &Setattr3args {
                    object: fh.clone(),
                    new_attributes: sattr(SetMode3(None), SetSize3(Some(size))),
                    guard: Sattrguard3(None),
                },
            )
            .await?;
        ok!(Setattr3res, "SETATTR", r);
        Ok(())
    }

    /// REMOVE of `name` in `dir`.
    pub async fn remove(&self, dir: &NfsFh3, name: &str) -> Result<()> {
        let r = self
            .call(
                NFSPROC3_REMOVE,
                &Remove3args {
                    object: dirop(dir, name),
                },
            )
            .await?;
        ok!(Remove3res, "REMOVE", r);
        Ok(())
    }

    /// RMDIR of `name` in `dir`.
    pub async fn rmdir(&self, dir: &NfsFh3, name: &str) -> Result<()> {
        let r = self
            .call(
                NFSPROC3_RMDIR,
                &Rmdir3args {
                    object: dirop(dir, name),
                },
            )
            .await?;
        ok!(Rmdir3res, "RMDIR", r);
        Ok(())
    }

    /// The whole listing of `dir` with READDIRPLUS (dircount 16 KiB, maxcount 64 KiB per call):
    /// entry names other than `.` and `..`, and the number of calls made.
    pub async fn readdirplus(&self, dir: &NfsFh3) -> Result<(Vec<Bytes>, u32)> {
        let mut names = Vec::new();
        let mut cookie = 0;
        let mut verf = [0u8; 8];
        let mut calls = 0;
        loop {
            let r = self
                .call_expect(
                    NFSPROC3_READDIRPLUS,
                    Expect::Large(MAXCOUNT + 4096),
                    &Readdirplus3args {
                        dir: dir.clone(),
                        cookie,
                        cookieverf: verf,
                        dircount: 16 * 1024,
                        maxcount: MAXCOUNT,
                    },
                )
                .await?;
            calls += 1;
            let ok = ok!(Readdirplus3res, "READDIRPLUS", r);
            verf = ok.cookieverf;
            for e in &ok.reply.entries {
                cookie = e.cookie;
                if &e.name[..] != b"." && &e.name[..] != b".." {
                    names.push(e.name.clone());
                }
            }
            if ok.reply.eof || ok.reply.entries.is_empty() {
                return Ok((names, calls));
            }
        }
    }
}

/// A sattr3 that sets the mode or the size, or neither.
fn sattr(mode: SetMode3, size: SetSize3) -> Sattr3 {
    Sattr3 {
        mode,
        uid: SetUid3(None),
        gid: SetGid3(None),
        size,
        atime: SetAtime::Default(TimeHow::DontChange),
        mtime: SetMtime::Default(TimeHow::DontChange),
    }
}

fn dirop(dir: &NfsFh3, name: &str) -> Diropargs3 {
    Diropargs3 {
        dir: dir.clone(),
        name: Bytes::copy_from_slice(name.as_bytes()),
    }
}
