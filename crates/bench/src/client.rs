//! One file-level interface over NFSv3 and NFSv4.1/4.2, so that every mode runs on either.

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::Bytes;
use nfs3wire::{NfsFh3, StableHow};

use crate::err;
use crate::error::Result;
use crate::rpc::{Cred, Via};
use crate::v3::{self, V3};
use crate::v4::{Open, Stateid, V4};

/// Protocol version the benchmark speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proto {
    /// NFSv3 with MOUNT v3.
    V3,
    /// NFSv4.1 (sessions).
    V41,
    /// NFSv4.2 (READ_PLUS).
    V42,
}

impl Proto {
    /// Parses `v3`, `v4`, `v4.1`, `v4.2`.
    pub fn parse(s: &str) -> std::result::Result<Proto, String> {
        match s {
            "3" | "v3" => Ok(Proto::V3),
            "4" | "v4" | "4.1" | "v4.1" => Ok(Proto::V41),
            "4.2" | "v4.2" => Ok(Proto::V42),
            _ => Err(format!("unknown protocol {s:?} (v3, v4.1, v4.2)")),
        }
    }

    /// The name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Proto::V3 => "v3",
            Proto::V41 => "v4.1",
            Proto::V42 => "v4.2",
        }
    }
}

/// Where the server is and how to talk to it.
#[derive(Debug, Clone)]
pub struct Target {
    /// NFS address.
    pub nfs: SocketAddr,
    /// MOUNT address (NFSv3).
    pub mount: SocketAddr,
    /// Export path for MNT.
    pub export: String,
    /// Path of the export in the NFSv4 pseudo file system.
    pub v4_path: String,
    /// Protocol.
    pub proto: Proto,
    /// Transport of the NFS connections (MOUNT always goes over TCP, as with the kernel).
    pub via: Via,
    /// Caller's credential.
    pub cred: Cred,
    /// Per-call timeout.
    pub timeout: Duration,
}

impl Target {
    /// Resolves `host` with the ports.
    pub fn resolve(host: &str, port: u16, mount_port: u16) -> Result<(SocketAddr, SocketAddr)> {
        let one = |p: u16| -> Result<SocketAddr> {
            (host, p)
                .to_socket_addrs()
                .map_err(|e| err!("cannot resolve {host}: {e}"))?
                .next()
                .ok_or_else(|| err!("{host} has no address"))
        };
        Ok((one(port)?, one(mount_port)?))
    }
}

/// An open regular file.
#[derive(Debug, Clone)]
pub struct File {
    /// Handle.
    pub fh: Bytes,
    /// Open stateid (NFSv4; unused for v3).
    pub sid: Stateid,
}

/// One connection (NFSv4: with its own client id and session).
pub enum Conn {
    /// NFSv3.
    V3(V3),
    /// NFSv4.1 / 4.2.
    V4(V4),
}

fn fh3(b: &Bytes) -> NfsFh3 {
    NfsFh3 { data: b.clone() }
}

/// The NFSv4 open of a file (handle and open stateid).
pub(crate) fn open4(f: &File) -> Open {
    Open {
        fh: f.fh.clone(),
        stateid: f.sid,
    }
}

/// Mount state shared by all connections of a run: the export root and the I/O size limit.
#[derive(Debug, Clone)]
pub struct Session {
    /// Where and how.
    pub target: Target,
    /// Root handle of the export.
    pub root: Bytes,
    /// Largest READ/WRITE payload the server allows (at most 1 MiB).
    pub max_io: u32,
}

impl Session {
    /// Mounts (v3: MNT and FSINFO; v4: a LOOKUP of the path) and checks the server answers.
    pub async fn open(target: Target) -> Result<Session> {
        match target.proto {
            Proto::V3 => {
                let root = v3::mount(
                    target.mount,
                    &target.export,
                    target.cred.clone(),
                    target.timeout,
                )
                .await?;
                let c = V3::connect(target.nfs, target.via, target.cred.clone(), target.timeout)
                    .await?;
                let (rt, wt) = c.fsinfo(&root).await?;
                Ok(Session {
                    root: root.data,
                    max_io: rt.min(wt).min(1 << 20),
                    target,
                })
            }
            Proto::V41 | Proto::V42 => {
                let c = Session::connect_v4(&target, "probe", 4).await?;
                let root = c.path_fh(&target.v4_path).await?;
                c.destroy().await?;
                Ok(Session {
                    root,
                    max_io: c.max_io,
                    target,
                })
            }
        }
    }

    async fn connect_v4(t: &Target, who: &str, slots: u32) -> Result<V4> {
        let minor = if t.proto == Proto::V42 { 2 } else { 1 };
        let owner = format!(
            "rnfs-bench.{}.{}.{}",
            std::process::id(),
            who,
            crate::stats::unix_now()
        );
        V4::connect(
            t.nfs,
            t.via,
            t.cred.clone(),
            t.timeout,
            minor,
            slots,
            &owner,
        )
        .await
    }

    /// A new connection able to carry `depth` calls at once.
    pub async fn connect(&self, who: &str, depth: usize) -> Result<Conn> {
        match self.target.proto {
            Proto::V3 => Ok(Conn::V3(
                V3::connect(
                    self.target.nfs,
                    self.target.via,
                    self.target.cred.clone(),
                    self.target.timeout,
                )
                .await?,
            )),
            _ => Ok(Conn::V4(
                Session::connect_v4(&self.target, who, depth.clamp(1, 1024) as u32).await?,
            )),
        }
    }
}

impl Conn {
    /// NULL procedure.
    pub async fn null(&self) -> Result<()> {
        match self {
            Conn::V3(c) => c.null().await,
            Conn::V4(c) => c.null().await,
        }
    }

    /// GETATTR (v4: the attributes the Linux client asks for).
    pub async fn getattr(&self, fh: &Bytes) -> Result<()> {
        match self {
            Conn::V3(c) => c.getattr(&fh3(fh)).await.map(|_| ()),
            Conn::V4(c) => c.getattr(fh).await,
        }
    }

    /// LOOKUP (v4: PUTFH, LOOKUP, GETFH, GETATTR).
    pub async fn lookup(&self, dir: &Bytes, name: &str) -> Result<Bytes> {
        match self {
            Conn::V3(c) => c.lookup(&fh3(dir), name).await.map(|f| f.data),
            Conn::V4(c) => c.lookup(dir, name).await,
        }
    }

    /// Makes a directory.
    pub async fn mkdir(&self, dir: &Bytes, name: &str) -> Result<Bytes> {
        match self {
            Conn::V3(c) => c.mkdir(&fh3(dir), name).await.map(|f| f.data),
            Conn::V4(c) => c.mkdir(dir, name).await,
        }
    }

    /// Creates (or truncates nothing of) a regular file and opens it for writing.
    pub async fn create(&self, dir: &Bytes, name: &str) -> Result<File> {
        match self {
            Conn::V3(c) => Ok(File {
                fh: c.create(&fh3(dir), name).await?.data,
                sid: Stateid::default(),
            }),
            Conn::V4(c) => {
                let o = c.open(dir, name, true, true).await?;
                Ok(File {
                    fh: o.fh,
                    sid: o.stateid,
                })
            }
        }
    }

    /// Opens an existing file (v3: LOOKUP).
    pub async fn open(&self, dir: &Bytes, name: &str, write: bool) -> Result<File> {
        match self {
            Conn::V3(c) => Ok(File {
                fh: c.lookup(&fh3(dir), name).await?.data,
                sid: Stateid::default(),
            }),
            Conn::V4(c) => {
                let o = c.open(dir, name, false, write).await?;
                Ok(File {
                    fh: o.fh,
                    sid: o.stateid,
                })
            }
        }
    }

    /// Closes a file (v3: nothing to do).
    pub async fn close(&self, f: &File) -> Result<()> {
        match self {
            Conn::V3(_) => Ok(()),
            Conn::V4(c) => c.close(&open4(f)).await,
        }
    }

    /// Creates a file and closes it at once (`touch`): its handle.
    pub async fn touch(&self, dir: &Bytes, name: &str) -> Result<Bytes> {
        match self {
            Conn::V3(c) => c.create(&fh3(dir), name).await.map(|f| f.data),
            Conn::V4(c) => c.create_closed(dir, name).await,
        }
    }

    /// WRITE; `stable` is 0 (unstable), 1 (data sync) or 2 (file sync).
    pub async fn write(&self, f: &File, off: u64, data: Bytes, stable: u32) -> Result<u32> {
        let len = data.len() as u32;
        let n = match self {
            Conn::V3(c) => {
                let how = StableHow::from_i32(stable as i32).unwrap_or(StableHow::FileSync);
                c.write(&fh3(&f.fh), off, data, how).await?
            }
            Conn::V4(c) => c.write(&open4(f), off, data, stable).await?,
        };
        if n != len {
            return Err(err!("short WRITE: {n} of {len} bytes at {off}"));
        }
        Ok(n)
    }

    /// READ: bytes returned and eof.
    pub async fn read(&self, f: &File, off: u64, count: u32) -> Result<(usize, bool)> {
        match self {
            Conn::V3(c) => c
                .read(&fh3(&f.fh), off, count)
                .await
                .map(|(d, e)| (d.len(), e)),
            Conn::V4(c) => c
                .read(&open4(f), off, count)
                .await
                .map(|(d, e)| (d.len(), e)),
        }
    }

    /// READ_PLUS (NFSv4.2 only): data bytes, hole bytes, eof.
    pub async fn read_plus(&self, f: &File, off: u64, count: u32) -> Result<(u64, u64, bool)> {
        match self {
            Conn::V4(c) if c.minor >= 2 => c
                .read_plus(&open4(f), off, count)
                .await
                .map(|r| (r.data, r.holes, r.eof)),
            _ => Err(err!("READ_PLUS needs NFSv4.2 (--proto v4.2)")),
        }
    }

    /// COMMIT of the whole file.
    pub async fn commit(&self, f: &File) -> Result<()> {
        match self {
            Conn::V3(c) => c.commit(&fh3(&f.fh)).await,
            Conn::V4(c) => c.commit(&f.fh).await,
        }
    }

    /// Sets the size of an open file.
    pub async fn set_size(&self, f: &File, size: u64) -> Result<()> {
        match self {
            Conn::V3(c) => c.truncate(&fh3(&f.fh), size).await,
            Conn::V4(c) => c.set_size(&open4(f), size).await,
        }
    }

    /// Removes a file.
    pub async fn remove(&self, dir: &Bytes, name: &str) -> Result<()> {
        match self {
            Conn::V3(c) => c.remove(&fh3(dir), name).await,
            Conn::V4(c) => c.remove(dir, name).await,
        }
    }

    /// Removes an empty directory.
    pub async fn rmdir(&self, dir: &Bytes, name: &str) -> Result<()> {
        match self {
            Conn::V3(c) => c.rmdir(&fh3(dir), name).await,
            Conn::V4(c) => c.remove(dir, name).await,
        }
    }

    /// Lists a directory (v3 READDIRPLUS, v4 READDIR with attributes): names and calls made.
    pub async fn readdir(&self, dir: &Bytes) -> Result<(Vec<Bytes>, u32)> {
        match self {
            Conn::V3(c) => c.readdirplus(&fh3(dir)).await,
            Conn::V4(c) => c.readdir(dir).await,
        }
    }

    /// Ends the connection's NFSv4 client state (v3: nothing to do).
    pub async fn shutdown(&self) -> Result<()> {
        match self {
            Conn::V3(_) => Ok(()),
            Conn::V4(c) => c.destroy().await,
        }
    }

    /// Reply bytes received on this connection so far.
    pub fn rx_bytes(&self) -> u64 {
        match self {
            Conn::V3(c) => c.rpc.rx_bytes.load(Ordering::Relaxed),
            Conn::V4(c) => c.rpc.rx_bytes.load(Ordering::Relaxed),
        }
    }
}
