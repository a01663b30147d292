//! MOUNT v3 and NFSv3 (RFC 1813): the mapping to the backend, and the two programs. The wire
//! types are generated from the protocol's XDR in `nfs3wire`.

pub mod convert;
pub mod mount;
pub mod nfs;
mod result;

pub use mount::Mount;
pub use nfs::Nfs3;
