//! The MOUNT v3 program (RFC 1813 section 5): hands out export root handles.

use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;
use sunrpc::{CallContext, ProcError, Program};
use vfs::Vfs;
use xdr::{Decode, Decoder, Encode, Encoder};

use crate::convert::mountstat;
use crate::nfs::client_of;
use crate::types::*;

/// AUTH_SYS, the one flavor we offer.
const AUTH_SYS: u32 = 1;
/// Mount-list entries kept (the list is advisory; bounded so clients cannot grow it forever).
const MAX_MOUNT_LIST: usize = 4096;

/// Serves MOUNT version 3 (and answers version 1 and 2 with PROG_MISMATCH).
pub struct Mount {
    vfs: Arc<Vfs>,
    mounts: Mutex<Vec<MountBody>>,
}

impl Mount {
    /// The MOUNT program over a backend.
    pub fn new(vfs: Arc<Vfs>) -> Self {
        Self {
            vfs,
            mounts: Mutex::new(Vec::new()),
        }
    }

    fn mnt(&self, ctx: &CallContext, a: MntArgs) -> MountRes3 {
        match self.vfs.mount(&a.dirpath, &client_of(ctx)) {
            Ok(fh) => {
                let host = Bytes::from(ctx.peer.ip().to_string());
                let mut m = self.mounts.lock();
                if !m
                    .iter()
                    .any(|e| e.hostname == host && e.directory == a.dirpath)
                    && m.len() < MAX_MOUNT_LIST
                {
                    m.push(MountBody {
                        hostname: host,
                        // a copy: the list outlives the call buffer the path is a slice of
                        directory: Bytes::copy_from_slice(&a.dirpath),
                    });
                }
                tracing::info!(client = %ctx.peer, path = %String::from_utf8_lossy(&a.dirpath), "mounted");
                MountRes3::Ok(MountRes3Ok {
                    fhandle: Fh3(fh),
                    auth_flavors: vec![AUTH_SYS],
                })
            }
            Err(e) => {
                tracing::info!(client = %ctx.peer, path = %String::from_utf8_lossy(&a.dirpath), error = %e, "mount refused");
                MountRes3::Fail(mountstat(e))
            }
        }
    }

    fn export_list(&self) -> Exports {
        Exports(
            self.vfs
                .export_list()
                .into_iter()
                .map(|(path, groups)| ExportNode {
                    dir: Bytes::from(path.into_os_string().into_encoded_bytes()),
                    groups: Groups(
                        groups
                            .into_iter()
                            .filter(|g| g != "*")
                            .map(Bytes::from)
                            .collect(),
                    ),
                })
                .collect(),
        )
    }
}

impl Program for Mount {
    fn program(&self) -> u32 {
        MOUNT_PROGRAM
    }

    fn versions(&self) -> (u32, u32) {
        (MOUNT_V3, MOUNT_V3)
    }

    fn proc_name(&self, _vers: u32, p: u32) -> Option<&'static str> {
        Some(match MountProc3::try_from(p).ok()? {
            MountProc3::Null => "NULL",
            MountProc3::Mnt => "MNT",
            MountProc3::Dump => "DUMP",
            MountProc3::Umnt => "UMNT",
            MountProc3::Umntall => "UMNTALL",
            MountProc3::Export => "EXPORT",
        })
    }

    fn call(&self, ctx: &CallContext, mut args: Decoder, r: &mut Encoder) -> Result<(), ProcError> {
        let p = MountProc3::try_from(ctx.proc_).map_err(|_| ProcError::ProcUnavail)?;
        match p {
            MountProc3::Null => {}
            MountProc3::Mnt => {
                let a = MntArgs::decode(&mut args)?;
                self.mnt(ctx, a).encode(r);
            }
            MountProc3::Dump => MountList(self.mounts.lock().clone()).encode(r),
            MountProc3::Umnt => {
                let a = UmntArgs::decode(&mut args)?;
                let host = Bytes::from(ctx.peer.ip().to_string());
                self.mounts
                    .lock()
                    .retain(|e| !(e.hostname == host && e.directory == a.dirpath));
            }
            MountProc3::Umntall => {
                let host = Bytes::from(ctx.peer.ip().to_string());
                self.mounts.lock().retain(|e| e.hostname != host);
            }
            MountProc3::Export => self.export_list().encode(r),
        }
        Ok(())
    }
}
