//! Limits and settings of rnfsd's NFSv4 server that the protocol's XDR does not define (its
//! numbers come from `nfs4wire`, generated from the RFCs' XDR).

/// NFS version 4.
pub const NFS_V4: u32 = 4;
/// Highest minor version served.
pub const MAX_MINOR: u32 = 2;
/// Largest file handle (NFS4_FHSIZE).
pub const NFS4_FHSIZE: usize = 128;
/// Length of verifiers.
pub const NFS4_VERIFIER_SIZE: usize = 8;
/// Length of session ids.
pub const NFS4_SESSIONID_SIZE: usize = 16;
/// Operations accepted in one COMPOUND.
pub const MAX_OPS: usize = 128;
/// Longest opaque owner / client id strings accepted.
pub const NFS4_OPAQUE_LIMIT: usize = 1024;
/// Lease time in seconds.
pub const LEASE_SECONDS: u32 = 90;

/// RFC 9754's `open_arguments` attribute (not in RFC 7863's XDR): what OPEN supports.
pub const FATTR4_OPEN_ARGUMENTS: u32 = 86;
