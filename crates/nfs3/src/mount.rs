//! The MOUNT v3 program (RFC 1813 section 5): hands out export root handles.

use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;
use sunrpc::{CallContext, ProcError, Program};
use vfs::exports::SecFlavor;
use vfs::Vfs;
use xdr::{Decode, Decoder, Encode, Encoder};

use crate::convert::mountstat;
use crate::nfs::client_of;
use nfs3wire::*;

/// The flavor numbers MOUNT's reply lists (RFC 5531; the Kerberos pseudo-flavors of
/// RFC 2623 section 2.2).
fn flavor_number(f: &SecFlavor) -> i32 {
    match f {
        SecFlavor::None => 0,
        SecFlavor::Sys => 1,
        SecFlavor::Krb5 => 390003,
        SecFlavor::Krb5i => 390004,
        SecFlavor::Krb5p => 390005,
    }
}
/// Mount-list entries kept (the list is advisory; bounded so clients cannot grow it forever).
const MAX_MOUNT_LIST: usize = 4096;

/// Serves MOUNT version 3 (and answers version 1 and 2 with PROG_MISMATCH).
pub struct Mount {
    vfs: Arc<Vfs>,
    mounts: Mutex<Vec<Mountbody>>,
}

impl Mount {
    /// The MOUNT program over a backend.
    pub fn new(vfs: Arc<Vfs>) -> Self {
        Self {
            vfs,
            mounts: Mutex::new(Vec::new()),
        }
    }

    fn mnt(&self, ctx: &CallContext, Dirpath(dirpath): Dirpath) -> Mountres3 {
        match self.vfs.mount(&dirpath, &client_of(ctx)) {
            Ok((fh, flavors)) => {
                let host = Bytes::from(ctx.peer.ip().to_string());
                let mut m = self.mounts.lock();
                if !m
                    .iter()
                    .any(|e| e.ml_hostname == host && e.ml_directory.0 == dirpath)
                    && m.len() < MAX_MOUNT_LIST
                {
                    m.push(Mountbody {
                        ml_hostname: host,
                        // a copy: the list outlives the call buffer the path is a slice of
                        ml_directory: Dirpath(Bytes::copy_from_slice(&dirpath)),
                    });
                }
                tracing::info!(client = %ctx.peer, path = %String::from_utf8_lossy(&dirpath), "mounted");
                Mountres3::Ok(Mountres3Ok {
                    fhandle: fh,
                    auth_flavors: flavors.iter().map(flavor_number).collect(),
                })
            }
            Err(e) => {
                tracing::info!(client = %ctx.peer, path = %String::from_utf8_lossy(&dirpath), error = %e, "mount refused");
                Mountres3::Fail(mountstat(e))
            }
        }
    }

    /// The mount list: (host address, path) as clients reported them (advisory).
    pub fn mounts(&self) -> Vec<(String, String)> {
        self.mounts
            .lock()
            .iter()
            .map(|m| {
                (
                    String::from_utf8_lossy(&m.ml_hostname).into_owned(),
                    String::from_utf8_lossy(&m.ml_directory.0).into_owned(),
                )
            })
            .collect()
    }

    /// Drops host `addr`'s entries from the mount list (an evicted client).
    pub fn forget_host(&self, addr: &str) -> usize {
        let mut m = self.mounts.lock();
        let before = m.len();
        m.retain(|e| e.ml_hostname != addr.as_bytes());
        before - m.len()
    }

    fn export_list(&self) -> Exports {
        Exports(
            self.vfs
                .export_list()
                .into_iter()
                .map(|(path, groups)| Exportnode {
                    ex_dir: Dirpath(Bytes::from(path.into_os_string().into_encoded_bytes())),
                    ex_groups: groups
                        .into_iter()
                        .filter(|g| g != "*")
                        .map(|g| Groupnode {
                            gr_name: Bytes::from(g),
                        })
                        .collect(),
                })
                .collect(),
        )
    }
}

impl Program for Mount {
    fn program(&self) -> u32 {
        MOUNTPROG
    }

    fn versions(&self) -> (u32, u32) {
        (MOUNTVERS3, MOUNTVERS3)
    }

    fn proc_name(&self, _vers: u32, p: u32) -> Option<&'static str> {
        Some(match p {
            MOUNTPROC_NULL => "NULL",
            MOUNTPROC_MNT => "MNT",
            MOUNTPROC_DUMP => "DUMP",
            MOUNTPROC_UMNT => "UMNT",
            MOUNTPROC_UMNTALL => "UMNTALL",
            MOUNTPROC_EXPORT => "EXPORT",
            _ => return None,
        })
    }

    fn call(&self, ctx: &CallContext, mut args: Decoder, r: &mut Encoder) -> Result<(), ProcError> {
        match ctx.proc_ {
            MOUNTPROC_NULL => {}
            MOUNTPROC_MNT => {
                let a = Dirpath::decode(&mut args)?;
                self.mnt(ctx, a).encode(r);
            }
            MOUNTPROC_DUMP => Mountlist(self.mounts.lock().clone()).encode(r),
            MOUNTPROC_UMNT => {
                let Dirpath(dirpath) = Dirpath::decode(&mut args)?;
                let host = Bytes::from(ctx.peer.ip().to_string());
                self.mounts
                    .lock()
                    .retain(|e| !(e.ml_hostname == host && e.ml_directory.0 == dirpath));
            }
            MOUNTPROC_UMNTALL => {
                let host = Bytes::from(ctx.peer.ip().to_string());
                self.mounts.lock().retain(|e| e.ml_hostname != host);
            }
            MOUNTPROC_EXPORT => self.export_list().encode(r),
            _ => return Err(ProcError::ProcUnavail),
        }
        Ok(())
    }
}
