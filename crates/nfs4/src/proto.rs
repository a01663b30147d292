//! Limits and settings of rnfsd's NFSv4 server that the protocol's XDR does not define (its
//! numbers come from `nfs4wire`, generated from the RFCs' XDR).

/// NFS version 4.
pub const NFS_V4: u32 = 4;
/// Highest minor version served.
pub const MAX_MINOR: u32 = 2;
/// Operations accepted in one COMPOUND.
pub const MAX_OPS: usize = 128;
/// Lease time in seconds.
pub const LEASE_SECONDS: u32 = 90;

/// RFC 8275's `mode_umask` attribute (not in RFC 7863's XDR): a create's mode with the
/// client's umask, which the server applies unless the directory has a default ACL.
pub const FATTR4_MODE_UMASK: u32 = 81;

/// RFC 9754's `open_arguments` attribute (not in RFC 7863's XDR): what OPEN supports.
pub const FATTR4_OPEN_ARGUMENTS: u32 = 86;
