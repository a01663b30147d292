//! What the backend's integration tests share: a backend over one directory, a client, the
//! export's root handle.

use std::net::IpAddr;
use std::path::Path;

use vfs::exports::parse_exports;
use vfs::{Client, Creds, Vfs, VfsConfig};

/// A backend exporting `dir` to 127.0.0.1 with `opts`, its state in `state`.
pub fn vfs_exporting(dir: &Path, opts: &str, state: &Path) -> Vfs {
    let text = format!("{} 127.0.0.1({opts})\n", dir.display());
    Vfs::new(VfsConfig {
        exports: parse_exports(&text, "test").unwrap(),
        state_dir: state.to_path_buf(),
        fd_cache: 64,
    })
    .unwrap()
}

/// A privileged AUTH_SYS client at 127.0.0.1 calling as `uid` (group `uid`).
pub fn client(uid: u32) -> Client {
    Client {
        addr: IpAddr::from([127, 0, 0, 1]),
        privileged: true,
        ident: Some(Creds {
            uid,
            gid: uid,
            groups: vec![].into(),
        }),
        flavor: vfs::exports::SecFlavor::Sys,
    }
}

/// The root handle of the export of `dir`, mounted as root.
pub fn root_fh(vfs: &Vfs, dir: &Path) -> bytes::Bytes {
    vfs.mount(dir.as_os_str().as_encoded_bytes(), &client(0))
        .unwrap()
        .0
}
