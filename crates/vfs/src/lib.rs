//! The backend: exports, file handles, caller credentials and the local POSIX file system.
//!
//! Protocol layers (NFSv3, NFSv4) call [`fs::Vfs`] with a [`fs::Caller`] admitted by the export
//! rules; all checks on who may reach what live here, once, for every protocol version.

pub mod acl;
mod cache;
pub mod cred;
pub mod error;
pub mod exports;
pub mod fs;
pub mod handle;
pub mod nowait;
pub mod pages;
// The system calls the backend makes through libc: the one module of vfs with `unsafe`.
#[allow(unsafe_code)]
mod sys;
pub mod types;

/// User and group names from the system's databases (NSS), for NFSv4 owner strings.
pub mod nss {
    pub use crate::sys::{group_id, group_name, user_id, user_name};
}

pub use cache::IdHasher;
pub use cred::Creds;
pub use error::{VfsError, VfsResult};
pub use fs::{Caller, ChangeGuard, Client, DirChange, Node, RemoteData, Vfs, VfsConfig};
pub use types::*;
