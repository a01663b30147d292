//! pNFS flexible files (RFC 8435) as a metadata server sees it: the data servers it reaches as
//! an NFSv3 client ([`ds`]), how it is told of them ([`config`]), where each file's data is
//! placed and the durable record of it ([`map`]), and the service that ties them together and
//! serves I/O through the MDS ([`mds`]). The NFSv4 layout operations live in the nfs4 crate
//! and ask [`mds::Mds`] for placements and devices.

#![forbid(unsafe_code)]

pub mod config;
pub mod ds;
pub mod map;
pub mod mds;

pub use config::{DsSpec, PnfsConfig};
pub use mds::{DeviceId, DeviceInfo, FileLayout, LayoutMirror, Mds};
