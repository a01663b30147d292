//! MOUNT v3 and NFSv3 (RFC 1813): wire types, the mapping to the backend, and the two programs.

pub mod convert;
pub mod mount;
pub mod nfs;
pub mod types;

pub use mount::Mount;
pub use nfs::Nfs3;
