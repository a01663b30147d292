//! Backend errors. Protocol layers map them to their status codes in one place each.

use std::io;

/// Why a backend operation failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum VfsError {
    /// A system call failed with this errno.
    #[error("errno {0}")]
    Errno(i32),
    /// The handle is well formed but its object no longer exists (or its export is gone).
    #[error("stale file handle")]
    Stale,
    /// The handle is malformed or its integrity check fails.
    #[error("bad file handle")]
    BadHandle,
    /// The caller's address or port may not use this export.
    #[error("access denied by export rules")]
    ExportDenied,
    /// The call's security flavor is not one the export allows (`sec=`).
    #[error("security flavor not allowed by the export")]
    WrongSec,
    /// A modifying call on a read-only export.
    #[error("read-only export")]
    ReadOnly,
    /// A guarded SETATTR whose ctime guard no longer matches.
    #[error("ctime guard mismatch")]
    NotSync,
    /// A READDIR cookie verifier that does not match the directory.
    #[error("bad readdir cookie")]
    BadCookie,
    /// The reply would not hold even one entry in the space the client gave.
    #[error("reply buffer too small")]
    TooSmall,
    /// A name that is empty, too long, or contains `/` or NUL.
    #[error("invalid name")]
    BadName,
    /// An operation not supported on this object type.
    #[error("not supported")]
    NotSupported,
    /// Another client holds state on the object (an NFSv4 delegation) that is being recalled;
    /// the change may be retried shortly.
    #[error("conflicting state is being recalled")]
    Delay,
}

impl VfsError {
    /// The error for a given errno value.
    pub fn errno(e: i32) -> Self {
        if e == libc::ESTALE {
            VfsError::Stale
        } else {
            VfsError::Errno(e)
        }
    }
}

impl From<io::Error> for VfsError {
    fn from(e: io::Error) -> Self {
        VfsError::errno(e.raw_os_error().unwrap_or(libc::EIO))
    }
}

/// Result of a backend operation.
pub type VfsResult<T> = Result<T, VfsError>;
