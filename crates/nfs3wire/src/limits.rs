// The limits the NFSv3 wire types are decoded with that RFC 1813's XDR leaves open (its
// `<>` bounds). Shared by build.rs (the generator's settings) and the crate (for the code
// that fills or checks the same fields), so that the two cannot disagree.

/// Longest name (`filename3`) a server accepts in a directory: longer ones are still decoded
/// (up to [`NFS3_MAXPATHLEN`]) so that the procedure can answer NFS3ERR_NAMETOOLONG.
pub const NFS3_MAXNAMLEN: usize = 255;
/// Longest `filename3` or `nfspath3` (a symbolic link's target) decoded at all.
pub const NFS3_MAXPATHLEN: usize = 4096;
/// Largest READ or WRITE payload (`opaque data<>`) decoded (1 MiB).
pub const NFS3_MAX_IO: usize = 1 << 20;
/// Most entries decoded in any linked list: READDIR, READDIRPLUS and MOUNT's lists.
pub const MAX_LIST_ENTRIES: usize = 1 << 20;
/// Most security flavors decoded in a MNT reply (`int auth_flavors<>`).
pub const MAX_AUTH_FLAVORS: usize = 64;
/// Bytes of an encoded `fattr3`.
pub const FATTR3_SIZE: usize = 84;
