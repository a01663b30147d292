//! The NFSv3 and MOUNT v3 calls the benchmark makes (RFC 1813), on the workspace's wire types.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use nfs3::types::*;
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

fn check<T, F>(what: &str, r: Res3<T, F>) -> Result<T> {
    match r {
        Res3::Ok(t) => Ok(t),
        Res3::Fail(s, _) => Err(err!("NFSv3 {what}: {s:?}")),
    }
}

/// MNT of `path` through the MOUNT server at `addr`: the export's root handle.
pub async fn mount(addr: SocketAddr, path: &str, cred: Cred, timeout: Duration) -> Result<Fh3> {
    let rpc = RpcConn::connect(addr, cred, timeout)
        .await
        .map_err(|e| err!("cannot connect to MOUNT at {addr}: {e}"))?;
    let args = MntArgs {
        dirpath: Bytes::copy_from_slice(path.as_bytes()),
    };
    let r = rpc
        .call(MOUNT_PROGRAM, MOUNT_V3, MountProc3::Mnt as u32, |e| {
            args.encode(e)
        })
        .await?;
    match decode::<MountRes3>(r)? {
        MountRes3::Ok(ok) => Ok(ok.fhandle),
        MountRes3::Fail(s) => Err(err!("MNT {path}: {s:?}")),
    }
}

impl V3 {
    /// Connects to the NFS server at `addr` over `via`.
    pub async fn connect(addr: SocketAddr, via: Via, cred: Cred, timeout: Duration) -> Result<V3> {
        let rpc = RpcConn::open(via, addr, cred, timeout)
            .await
            .map_err(|e| err!("cannot connect to NFS at {addr}: {e}"))?;
        Ok(V3 { rpc })
    }

    async fn call(&self, p: NfsProc3, args: &impl Encode) -> Result<Bytes> {
        self.call_expect(p, Expect::Small, args).await
    }

    async fn call_expect(&self, p: NfsProc3, expect: Expect, args: &impl Encode) -> Result<Bytes> {
        Ok(self
            .rpc
            .call_expect(NFS_PROGRAM, NFS_V3, p as u32, expect, |e| args.encode(e))
            .await?)
    }

    /// NULL.
    pub async fn null(&self) -> Result<()> {
        self.call(NfsProc3::Null, &Void).await?;
        Ok(())
    }

    /// FSINFO: (rtmax, wtmax).
    pub async fn fsinfo(&self, fh: &Fh3) -> Result<(u32, u32)> {
        let r = self
            .call(NfsProc3::Fsinfo, &FsinfoArgs { fsroot: fh.clone() })
            .await?;
        let ok = check("FSINFO", decode::<FsinfoRes>(r)?)?;
        Ok((ok.rtmax, ok.wtmax))
    }

    /// GETATTR.
    pub async fn getattr(&self, fh: &Fh3) -> Result<Fattr3> {
        let r = self
            .call(NfsProc3::Getattr, &GetattrArgs { object: fh.clone() })
            .await?;
        check("GETATTR", decode::<GetattrRes>(r)?)
    }

    /// LOOKUP of `name` in `dir`.
    pub async fn lookup(&self, dir: &Fh3, name: &str) -> Result<Fh3> {
        let r = self
            .call(
                NfsProc3::Lookup,
                &LookupArgs {
                    what: dirop(dir, name),
                },
            )
            .await?;
        Ok(check("LOOKUP", decode::<LookupRes>(r)?)?.object)
    }

    /// CREATE (UNCHECKED, mode 0644) of `name` in `dir`.
    pub async fn create(&self, dir: &Fh3, name: &str) -> Result<Fh3> {
        let r = self
            .call(
                NfsProc3::Create,
                &CreateArgs {
                    where_: dirop(dir, name),
                    how: Createhow3::Unchecked(Sattr3 {
                        mode: Some(0o644),
                        ..Default::default()
                    }),
                },
            )
            .await?;
        match check("CREATE", decode::<CreateRes>(r)?)?.obj.0 {
            Some(fh) => Ok(fh),
            None => self.lookup(dir, name).await,
        }
    }

    /// MKDIR (mode 0755) of `name` in `dir`.
    pub async fn mkdir(&self, dir: &Fh3, name: &str) -> Result<Fh3> {
        let r = self
            .call(
                NfsProc3::Mkdir,
                &MkdirArgs {
                    where_: dirop(dir, name),
                    attributes: Sattr3 {
                        mode: Some(0o755),
                        ..Default::default()
                    },
                },
            )
            .await?;
        match check("MKDIR", decode::<MkdirRes>(r)?)?.obj.0 {
            Some(fh) => Ok(fh),
            None => self.lookup(dir, name).await,
        }
    }

    /// WRITE of `data` at `off`; returns the count written.
    pub async fn write(&self, fh: &Fh3, off: u64, data: Bytes, stable: StableHow) -> Result<u32> {
        let args = WriteArgs {
            file: fh.clone(),
            offset: off,
            count: data.len() as u32,
            stable,
            data,
        };
        let r = self.call(NfsProc3::Write, &args).await?;
        Ok(check("WRITE", decode::<WriteRes>(r)?)?.count)
    }

    /// READ of `count` bytes at `off`: the data and the eof flag.
    pub async fn read(&self, fh: &Fh3, off: u64, count: u32) -> Result<(Bytes, bool)> {
        let r = self
            .call_expect(
                NfsProc3::Read,
                Expect::DataLast(count),
                &ReadArgs {
                    file: fh.clone(),
                    offset: off,
                    count,
                },
            )
            .await?;
        let ok = check("READ", decode::<ReadRes>(r)?)?;
        let data = match ok.data {
            xdr::Payload::Bytes(b) => b,
            xdr::Payload::Pages(_) => return Err(err!("READ: a decoded reply holds bytes")),
        };
        Ok((data, ok.eof))
    }

    /// COMMIT of the whole file.
    pub async fn commit(&self, fh: &Fh3) -> Result<()> {
        let r = self
            .call(
                NfsProc3::Commit,
                &CommitArgs {
                    file: fh.clone(),
                    offset: 0,
                    count: 0,
                },
            )
            .await?;
        check("COMMIT", decode::<CommitRes>(r)?)?;
        Ok(())
    }

    /// SETATTR of the size.
    pub async fn truncate(&self, fh: &Fh3, size: u64) -> Result<()> {
        let r = self
            .call(
                NfsProc3::Setattr,
                &SetattrArgs {
                    object: fh.clone(),
                    new_attributes: Sattr3 {
                        size: Some(size),
                        ..Default::default()
                    },
                    guard: SattrGuard3(None),
                },
            )
            .await?;
        check("SETATTR", decode::<SetattrRes>(r)?)?;
        Ok(())
    }

    /// REMOVE of `name` in `dir`.
    pub async fn remove(&self, dir: &Fh3, name: &str) -> Result<()> {
        let r = self
            .call(
                NfsProc3::Remove,
                &RemoveArgs {
                    object: dirop(dir, name),
                },
            )
            .await?;
        check("REMOVE", decode::<RemoveRes>(r)?)?;
        Ok(())
    }

    /// RMDIR of `name` in `dir`.
    pub async fn rmdir(&self, dir: &Fh3, name: &str) -> Result<()> {
        let r = self
            .call(
                NfsProc3::Rmdir,
                &RmdirArgs {
                    object: dirop(dir, name),
                },
            )
            .await?;
        check("RMDIR", decode::<RmdirRes>(r)?)?;
        Ok(())
    }

    /// The whole listing of `dir` with READDIRPLUS (dircount 16 KiB, maxcount 64 KiB per call):
    /// entry names other than `.` and `..`, and the number of calls made.
    pub async fn readdirplus(&self, dir: &Fh3) -> Result<(Vec<Bytes>, u32)> {
        let mut names = Vec::new();
        let mut cookie = 0;
        let mut verf = [0u8; 8];
        let mut calls = 0;
        loop {
            let r = self
                .call_expect(
                    NfsProc3::Readdirplus,
                    Expect::Large(MAXCOUNT + 4096),
                    &ReaddirplusArgs {
                        dir: dir.clone(),
                        cookie,
                        cookieverf: verf,
                        dircount: 16 * 1024,
                        maxcount: MAXCOUNT,
                    },
                )
                .await?;
            calls += 1;
            let ok = check("READDIRPLUS", decode::<ReaddirplusRes>(r)?)?;
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

fn dirop(dir: &Fh3, name: &str) -> DiropArgs3 {
    DiropArgs3 {
        dir: dir.clone(),
        name: Bytes::copy_from_slice(name.as_bytes()),
    }
}
