//! NFSv3 and MOUNT v3 wire types generated from RFC 1813's XDR.
//!
//! Every type, constant and codec here is generated at build time by `rnfs-xdrgen` from
//! `spec/nfs3_prot.x` in the repository (see `spec/README.md`), except the limits the XDR
//! leaves open ([`NFS3_MAX_IO`], [`NFS3_MAXPATHLEN`], [`MAX_LIST_ENTRIES`], ...; in
//! `src/limits.rs`), which the build script gives the generator and which are exported here
//! for the code that fills the same fields.
//!
//! Names follow the `.x`: types in CamelCase (`GETATTR3args` is [`Getattr3args`],
//! `nfs_fh3` is [`NfsFh3`]), fields in snake_case (`type` is `r#type`), constants
//! unchanged (`NFSPROC3_READ`, `ACCESS3_READ`). The generator's settings give the types the
//! shape handlers want:
//!
//! * every result union is `Ok(resok)` or `Fail(status)` / `Fail(status, resfail)`
//!   ([`Getattr3res::Ok`], [`Lookup3res::Fail`], [`Mountres3::Ok`]);
//! * optional data spelt as bool unions is an `Option` ([`PostOpAttr`]`(Option<Fattr3>)`,
//!   [`SetMode3`], [`Sattrguard3`], ...);
//! * linked lists are `Vec`s with the list encoding (`Dirlist3::entries: Vec<Entry3>`,
//!   [`Mountlist`], [`Exports`], `Exportnode::ex_groups`), each bounded by
//!   [`MAX_LIST_ENTRIES`];
//! * `nfsstat3` and `mountstat3` are open (`Nfsstat3(pub u32)` with a constant per value),
//!   so a status this code does not know is carried; other enums reject unknown values;
//! * MOUNT's bare `dirpath` argument and `mountlist` and `exports` results are types of
//!   their own with a codec ([`Dirpath`], [`Mountlist`], [`Exports`]).
//!
//! Decoding is zero-copy for variable-length opaque data and strings (`bytes::Bytes` slices
//! of the received buffer) and checks every length against its bound and against the bytes
//! left before allocating: the `.x` bounds (`NFS3_FHSIZE`, `MNTPATHLEN`, ...), names and
//! paths up to [`NFS3_MAXPATHLEN`] (a name longer than [`NFS3_MAXNAMLEN`] still decodes, so
//! that the procedure can answer NFS3ERR_NAMETOOLONG), READ and WRITE data up to
//! [`NFS3_MAX_IO`]. Encoding keeps bulk data out of the encoder's buffer: READ results' data
//! ([`Read3resok::data`], an `xdr::Payload`: bytes or file pages) and WRITE arguments' data
//! ([`Write3args::data`]) are segments of their own.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod limits;
pub use limits::*;

include!(concat!(env!("OUT_DIR"), "/nfs3_wire.rs"));

#[cfg(test)]
mod tests;
