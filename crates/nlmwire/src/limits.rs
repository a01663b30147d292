// The limits the NLM v4 and NSM wire types are decoded with where the XDR's own bounds are
// wider than the protocol needs. Shared by build.rs (the generator's settings) and the crate
// (for the code that fills or checks the same fields), so that the two cannot disagree.

/// Longest file handle (`nlm4_lock.fh`, `nlm4_share.fh`: a `netobj`) decoded: NLM v4 carries
/// NFSv3 file handles, at most `NFS3_FHSIZE` (64) bytes.
pub const NLM4_FHSIZE: usize = 64;
/// Longest other `netobj` decoded (cookies, owner handles `oh`): `MAX_NETOBJ_SZ`, the bound of
/// `<rpc/xdr.h>`'s `xdr_netobj` that `spec/nlm_deps.x` restates.
pub const NLM4_MAX_NETOBJ: usize = 1024;
/// Longest `caller_name` decoded in a lock or share request: `LM_MAXSTRLEN`, the bound RFC 1813
/// (appendix II) gives; FreeBSD's `nlm_prot.x` writes `MAXNAMELEN` (`LM_MAXSTRLEN + 1`).
pub const NLM4_MAX_CALLER_NAME: usize = 1024;
