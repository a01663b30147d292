//! NFSv4 wire types generated from the RFCs' XDR.
//!
//! Every type, constant and codec here is generated at build time by `rnfs-xdrgen` from the
//! XDR text in the repository's `spec/` directory (see `spec/README.md`):
//!
//! * `spec/nfs4_prot.x`: the NFSv4.2 XDR of RFC 7863 (which covers minor versions 0, 1
//!   and 2);
//! * `spec/nfs4_xattr.x`: the extended-attribute operations of RFC 8276, whose additions to
//!   `nfsstat4`, `nfs_opnum4`, `nfs_argop4` and `nfs_resop4` the build script applies;
//! * `spec/rpc_deps.x`: the RPC definitions RFC 7863 takes from the RPC headers
//!   (`AUTH_NONE`, `AUTH_SYS`, `RPCSEC_GSS`, `authsys_parms`).
//!
//! Names follow the `.x`: types in CamelCase (`OPEN4args` is [`Open4args`], `nfs_argop4` is
//! [`NfsArgop4`]), fields in snake_case (`type` is `r#type`), constants unchanged. Unions are
//! Rust enums with one variant per case label and a `Default(discriminant, ..)` variant for a
//! `default` arm. `nfsstat4`, `nfs_opnum4` and `nfs_cb_opnum4` are open (`Nfsstat4(pub u32)`
//! with a constant per value), so unknown numbers are carried; other enums reject unknown
//! values. Decoding is zero-copy for variable-length opaque data and strings (they are
//! `bytes::Bytes` slices of the received buffer) and checks every length against its bound
//! and against the bytes left before allocating. Encoding keeps bulk data out of the
//! encoder's buffer: READ and READ_PLUS results' data (`Read4resok::data`, `Data4::d_data`, an
//! `xdr::Payload`: bytes or file pages) and WRITE arguments' data (`Write4args::data`) are segments of their own.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

include!(concat!(env!("OUT_DIR"), "/nfs4_wire.rs"));

#[cfg(test)]
mod tests;
