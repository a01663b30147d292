//! One data server as the metadata server reaches it: an NFSv3 client over a persistent
//! channel, as root (the DS export must not squash the MDS's root), with the calls the MDS
//! makes: find the export's root, create a file's backing file with its synthetic owner,
//! change that owner (fencing), truncate, read, write and commit (I/O through the MDS),
//! remove, and list the directory (the reconciler).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use bytes::Bytes;
use nfs3wire::*;
use sunrpc::channel::{Channel, ChannelOpts};
use sunrpc::client::CallError;
use sunrpc::{AuthSys, Credential};
use xdr::{Decode, Encode};

use crate::config::DsSpec;

/// Why a call to a data server failed.
#[derive(Debug, thiserror::Error)]
pub enum DsError {
    /// The RPC failed (no connection, no reply, a rejected call).
    #[error("{0}")]
    Rpc(#[from] CallError),
    /// The DS answered with an NFS error.
    #[error("NFS3 status {}", .0 .0)]
    Nfs(Nfsstat3),
    /// MOUNT refused the export.
    #[error("MOUNT status {}", .0 .0)]
    Mount(Mountstat3),
    /// A reply that does not decode.
    #[error("malformed reply")]
    Garbage,
}

impl From<xdr::XdrError> for DsError {
    fn from(_: xdr::XdrError) -> Self {
        DsError::Garbage
    }
}

/// What the DS's FSINFO says of its I/O sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IoSizes {
    /// Largest READ.
    pub rsize: u32,
    /// Largest WRITE.
    pub wsize: u32,
}

/// A DS's root handle and I/O sizes, found once.
#[derive(Debug, Clone)]
struct Root {
    fh: NfsFh3,
    sizes: IoSizes,
}

/// What the MDS did with one data server, for the metrics.
#[derive(Debug, Default)]
pub struct DsCounters {
    /// Calls made.
    pub calls: AtomicU64,
    /// Calls that failed (no reply, or an NFS error other than an expected one).
    pub errors: AtomicU64,
    /// File data read (I/O through the MDS, resynchronisation).
    pub read_bytes: AtomicU64,
    /// File data written.
    pub written_bytes: AtomicU64,
}

/// A data server (see the module comment).
pub struct DataServer {
    spec: DsSpec,
    chan: Channel,
    root: OnceLock<Root>,
    cred: Credential,
    counters: DsCounters,
}

/// A sattr3 that sets nothing.
fn no_change() -> Sattr3 {
    Sattr3 {
        mode: SetMode3(None),
        uid: SetUid3(None),
        gid: SetGid3(None),
        size: SetSize3(None),
        atime: SetAtime::Default(TimeHow::DontChange),
        mtime: SetMtime::Default(TimeHow::DontChange),
    }
}

impl DataServer {
    /// The data server of `spec`; nothing is connected before the first call.
    pub fn new(spec: DsSpec, timeout: Duration) -> Self {
        let chan = Channel::new(
            spec.addr,
            ChannelOpts {
                timeout,
                ..ChannelOpts::default()
            },
        );
        let machine = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_owned())
            .unwrap_or_else(|_| "rnfsd".into());
        DataServer {
            spec,
            chan,
            root: OnceLock::new(),
            counters: DsCounters::default(),
            cred: Credential::Sys(AuthSys {
                stamp: 0,
                machine: Bytes::from(machine),
                uid: 0,
                gid: 0,
                gids: Vec::new(),
            }),
        }
    }

    /// Its configuration.
    pub fn spec(&self) -> &DsSpec {
        &self.spec
    }

    /// What the MDS did with this DS.
    pub fn counters(&self) -> &DsCounters {
        &self.counters
    }

    /// Whether a connection to the DS is up now.
    pub fn connected(&self) -> bool {
        self.chan.connected()
    }

    fn nfs<R: Decode>(&self, proc_: u32, args: &dyn Encode) -> Result<R, DsError> {
        self.counters.calls.fetch_add(1, Ordering::Relaxed);
        let r = self
            .chan
            .call(NFS3_PROGRAM, NFS_V3, proc_, &self.cred, args)
            .map_err(DsError::from)
            .and_then(|mut d| Ok(R::decode(&mut d)?));
        if r.is_err() {
            self.counters.errors.fetch_add(1, Ordering::Relaxed);
        }
        r
    }

    /// NULL: whether the DS answers.
    pub fn ping(&self) -> Result<(), DsError> {
        self.chan
            .call(NFS3_PROGRAM, NFS_V3, NFSPROC3_NULL, &self.cred, &Void)?;
        Ok(())
    }

    /// The export's root handle and I/O sizes (MOUNT and FSINFO the first time).
    fn root(&self) -> Result<&Root, DsError> {
        if let Some(r) = self.root.get() {
            return Ok(r);
        }
        let fh = self.mount()?;
        let sizes =
            match self.nfs::<Fsinfo3res>(NFSPROC3_FSINFO, &Fsinfo3args { fsroot: fh.clone() })? {
                Fsinfo3res::Ok(ok) => IoSizes {
                    rsize: ok.rtmax.clamp(4096, NFS3_MAX_IO as u32),
                    wsize: ok.wtmax.clamp(4096, NFS3_MAX_IO as u32),
                },
                Fsinfo3res::Fail(s, _) => return Err(DsError::Nfs(s)),
            };
        Ok(self.root.get_or_init(|| Root { fh, sizes }))
    }

    /// MNT of the export: at the configured port, else at the NFS port (rnfsd), else where
    /// the host's port mapper says mountd is (knfsd).
    fn mount(&self) -> Result<NfsFh3, DsError> {
        let path = Dirpath(Bytes::from(self.spec.export.clone().into_bytes()));
        let mnt = |addr: SocketAddr| -> Result<NfsFh3, DsError> {
            let ch = Channel::new(addr, mount_opts());
            let mut d = ch.call(MOUNTPROG, MOUNTVERS3, MOUNTPROC_MNT, &self.cred, &path)?;
            match Mountres3::decode(&mut d)? {
                Mountres3::Ok(ok) => Ok(NfsFh3 { data: ok.fhandle }),
                Mountres3::Fail(s) => Err(DsError::Mount(s)),
            }
        };
        if let Some(p) = self.spec.mount_port {
            return mnt(SocketAddr::new(self.spec.addr.ip(), p));
        }
        match self
            .chan
            .call(MOUNTPROG, MOUNTVERS3, MOUNTPROC_MNT, &self.cred, &path)
        {
            Ok(mut d) => match Mountres3::decode(&mut d)? {
                Mountres3::Ok(ok) => Ok(NfsFh3 { data: ok.fhandle }),
                Mountres3::Fail(s) => Err(DsError::Mount(s)),
            },
            // PROG_UNAVAIL: not served here; ask the port mapper
            Err(CallError::Rejected) => {
                let pmap = Channel::new(
                    SocketAddr::new(self.spec.addr.ip(), sunrpc::client::PMAP_PORT),
                    mount_opts(),
                );
                let mut d = pmap.call(
                    sunrpc::client::PMAP_PROGRAM,
                    sunrpc::client::PMAP_V2,
                    sunrpc::client::PMAPPROC_GETPORT,
                    &Credential::None,
                    &GetPort(MOUNTPROG, MOUNTVERS3),
                )?;
                match d.u32()? {
                    0 => Err(DsError::Rpc(CallError::NotRegistered)),
                    p => mnt(SocketAddr::new(
                        self.spec.addr.ip(),
                        u16::try_from(p).map_err(|_| DsError::Garbage)?,
                    )),
                }
            }
            Err(e) => Err(e.into()),
        }
    }

    /// The bytes available on the DS's export (FSSTAT).
    pub fn available(&self) -> Result<u64, DsError> {
        let fh = self.root()?.fh.clone();
        match self.nfs::<Fsstat3res>(NFSPROC3_FSSTAT, &Fsstat3args { fsroot: fh })? {
            Fsstat3res::Ok(ok) => Ok(ok.abytes),
            Fsstat3res::Fail(s, _) => Err(DsError::Nfs(s)),
        }
    }

    /// The DS's largest READ and WRITE.
    pub fn io_sizes(&self) -> Result<IoSizes, DsError> {
        Ok(self.root()?.sizes)
    }

    /// Creates `name` in the export's directory, owned by `uid`:`gid` with `mode`; a file of
    /// that name left by an earlier attempt is taken over (its owner set again, its data
    /// truncated). Returns its handle.
    pub fn create(&self, name: &[u8], uid: u32, gid: u32, mode: u32) -> Result<NfsFh3, DsError> {
        let dir = self.root()?.fh.clone();
        let attrs = Sattr3 {
            mode: SetMode3(Some(mode)),
            uid: SetUid3(Some(uid)),
            gid: SetGid3(Some(gid)),
            ..no_change()
        };
        let args = Create3args {
            r#where: Diropargs3 {
                dir: dir.clone(),
                name: Bytes::copy_from_slice(name),
            },
            how: Createhow3::Guarded(attrs.clone()),
        };
        match self.nfs::<Create3res>(NFSPROC3_CREATE, &args)? {
            Create3res::Ok(ok) => match ok.obj.0 {
                Some(fh) => Ok(fh),
                None => self.lookup(name),
            },
            Create3res::Fail(Nfsstat3::NFS3ERR_EXIST, _) => {
                let fh = self.lookup(name)?;
                self.setattr(
                    &fh,
                    Sattr3 {
                        size: SetSize3(Some(0)),
                        ..attrs
                    },
                )?;
                Ok(fh)
            }
            Create3res::Fail(s, _) => Err(DsError::Nfs(s)),
        }
    }

    /// The handle of `name` in the export's directory.
    pub fn lookup(&self, name: &[u8]) -> Result<NfsFh3, DsError> {
        let dir = self.root()?.fh.clone();
        let args = Lookup3args {
            what: Diropargs3 {
                dir,
                name: Bytes::copy_from_slice(name),
            },
        };
        match self.nfs::<Lookup3res>(NFSPROC3_LOOKUP, &args)? {
            Lookup3res::Ok(ok) => Ok(ok.object),
            Lookup3res::Fail(s, _) => Err(DsError::Nfs(s)),
        }
    }

    fn setattr(&self, fh: &NfsFh3, attrs: Sattr3) -> Result<(), DsError> {
        let args = Setattr3args {
            object: fh.clone(),
            new_attributes: attrs,
            guard: Sattrguard3(None),
        };
        match self.nfs::<Setattr3res>(NFSPROC3_SETATTR, &args)? {
            Setattr3res::Ok(_) => Ok(()),
            Setattr3res::Fail(s, _) => Err(DsError::Nfs(s)),
        }
    }

    /// Gives the file a new owner (fencing: I/O with the old synthetic ids is refused).
    pub fn chown(&self, fh: &NfsFh3, uid: u32, gid: u32) -> Result<(), DsError> {
        self.setattr(
            fh,
            Sattr3 {
                uid: SetUid3(Some(uid)),
                gid: SetGid3(Some(gid)),
                ..no_change()
            },
        )
    }

    /// Sets the file's size.
    pub fn truncate(&self, fh: &NfsFh3, size: u64) -> Result<(), DsError> {
        self.setattr(
            fh,
            Sattr3 {
                size: SetSize3(Some(size)),
                ..no_change()
            },
        )
    }

    /// The file's attributes.
    pub fn getattr(&self, fh: &NfsFh3) -> Result<Fattr3, DsError> {
        match self.nfs::<Getattr3res>(NFSPROC3_GETATTR, &Getattr3args { object: fh.clone() })? {
            Getattr3res::Ok(ok) => Ok(ok.obj_attributes),
            Getattr3res::Fail(s) => Err(DsError::Nfs(s)),
        }
    }

    /// Up to `count` bytes at `offset`, and whether they reach the end of the file.
    pub fn read(&self, fh: &NfsFh3, offset: u64, count: u32) -> Result<(Bytes, bool), DsError> {
        let args = Read3args {
            file: fh.clone(),
            offset,
            count,
        };
        match self.nfs::<Read3res>(NFSPROC3_READ, &args)? {
            Read3res::Ok(ok) => {
                let data = match ok.data {
                    xdr::Payload::Bytes(b) => b,
                    xdr::Payload::Pages(p) => p.to_bytes().map_err(|_| DsError::Garbage)?,
                };
                self.counters
                    .read_bytes
                    .fetch_add(data.len() as u64, Ordering::Relaxed);
                Ok((data, ok.eof))
            }
            Read3res::Fail(s, _) => Err(DsError::Nfs(s)),
        }
    }

    /// Writes `data` at `offset` (all of it, in as many WRITEs as the DS's size takes) with
    /// `stable`; returns the weakest commitment the DS made and its write verifier.
    pub fn write(
        &self,
        fh: &NfsFh3,
        offset: u64,
        data: Bytes,
        stable: StableHow,
    ) -> Result<(StableHow, Writeverf3), DsError> {
        let wsize = self.root()?.sizes.wsize as usize;
        let mut done = 0usize;
        let mut committed = StableHow::FileSync;
        let mut verf = [0u8; 8];
        while done < data.len() || data.is_empty() {
            let end = (done + wsize).min(data.len());
            let args = Write3args {
                file: fh.clone(),
                offset: offset + done as u64,
                count: (end - done) as u32,
                stable,
                data: data.slice(done..end),
            };
            match self.nfs::<Write3res>(NFSPROC3_WRITE, &args)? {
                Write3res::Ok(ok) => {
                    if ok.count == 0 && end > done {
                        return Err(DsError::Nfs(Nfsstat3::NFS3ERR_IO));
                    }
                    done += ok.count as usize;
                    self.counters
                        .written_bytes
                        .fetch_add(u64::from(ok.count), Ordering::Relaxed);
                    if (ok.committed as u32) < (committed as u32) {
                        committed = ok.committed;
                    }
                    verf = ok.verf;
                }
                Write3res::Fail(s, _) => return Err(DsError::Nfs(s)),
            }
            if data.is_empty() {
                break;
            }
        }
        Ok((committed, verf))
    }

    /// COMMIT of the whole file; returns the write verifier.
    pub fn commit(&self, fh: &NfsFh3) -> Result<Writeverf3, DsError> {
        let args = Commit3args {
            file: fh.clone(),
            offset: 0,
            count: 0,
        };
        match self.nfs::<Commit3res>(NFSPROC3_COMMIT, &args)? {
            Commit3res::Ok(ok) => Ok(ok.verf),
            Commit3res::Fail(s, _) => Err(DsError::Nfs(s)),
        }
    }

    /// Removes `name` from the export's directory; a name already gone is not an error.
    pub fn remove(&self, name: &[u8]) -> Result<(), DsError> {
        let dir = self.root()?.fh.clone();
        let args = Remove3args {
            object: Diropargs3 {
                dir,
                name: Bytes::copy_from_slice(name),
            },
        };
        match self.nfs::<Remove3res>(NFSPROC3_REMOVE, &args)? {
            Remove3res::Ok(_) => Ok(()),
            Remove3res::Fail(Nfsstat3::NFS3ERR_NOENT, _) => Ok(()),
            Remove3res::Fail(s, _) => Err(DsError::Nfs(s)),
        }
    }

    /// The names in the export's directory (without `.` and `..`).
    pub fn list(&self) -> Result<Vec<Bytes>, DsError> {
        let dir = self.root()?.fh.clone();
        let mut names = Vec::new();
        let (mut cookie, mut cookieverf) = (0u64, [0u8; 8]);
        loop {
            let args = Readdir3args {
                dir: dir.clone(),
                cookie,
                cookieverf,
                count: 32 * 1024,
            };
            let ok = match self.nfs::<Readdir3res>(NFSPROC3_READDIR, &args)? {
                Readdir3res::Ok(ok) => ok,
                Readdir3res::Fail(s, _) => return Err(DsError::Nfs(s)),
            };
            cookieverf = ok.cookieverf;
            for e in &ok.reply.entries {
                cookie = e.cookie;
                if e.name.as_ref() != b"." && e.name.as_ref() != b".." {
                    names.push(e.name.clone());
                }
            }
            if ok.reply.eof || ok.reply.entries.is_empty() {
                return Ok(names);
            }
        }
    }
}

/// How MOUNT and the port mapper are called: once, briefly.
fn mount_opts() -> ChannelOpts {
    ChannelOpts {
        timeout: Duration::from_secs(5),
        tries: 1,
        ..ChannelOpts::default()
    }
}

/// No arguments.
struct Void;

impl Encode for Void {
    fn encode(&self, _: &mut xdr::Encoder) {}
}

/// PMAPPROC_GETPORT's mapping for TCP (the port field unused).
struct GetPort(u32, u32);

impl Encode for GetPort {
    fn encode(&self, e: &mut xdr::Encoder) {
        e.u32(self.0);
        e.u32(self.1);
        e.u32(sunrpc::client::IPPROTO_TCP);
        e.u32(0);
    }
}
