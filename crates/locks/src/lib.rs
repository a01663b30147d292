//! The byte-range lock manager that NFSv4 and NLM (NFSv3's lock protocol) share: one table
//! of locks per file, so that a lock taken through one protocol conflicts with the other's;
//! the queue of NLM's blocked requests, granted in order when a range frees whichever
//! protocol freed it; and the one grace period after a restart during which only reclaims
//! take locks.
//!
//! Ranges are `[start, end)` with `end == u64::MAX` meaning "to the end of the file", merged
//! and split per owner with POSIX semantics (a new lock replaces the owner's own over its
//! range). Everything lives behind one short mutex that no file-system call runs under; a
//! protocol's own state lock, when it has one, is taken before it, never after.

#![forbid(unsafe_code)]

mod grace;
mod table;

pub use grace::{GracePeriod, Participant};
pub use table::{
    Granted, Limits, Lock, LockManager, LockOutcome, OtherState, Owner, Protocol, Share, Totals,
    WaiterId,
};

/// Identifies a file across handles and exports (see [`vfs::FileId`]).
pub type FileKey = vfs::FileId;

#[cfg(test)]
mod tests;
