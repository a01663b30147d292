//! MOUNT v3 and NFSv3 (RFC 1813), with NFSACL v3 (POSIX ACLs over NFSv3): the mapping to the
//! backend, and the three programs. The wire types are generated from the protocols' XDR in
//! `nfs3wire`.

pub mod acl;
pub mod convert;
pub mod mount;
pub mod nfs;
mod result;

pub use acl::NfsAcl;
pub use mount::Mount;
pub use nfs::Nfs3;
