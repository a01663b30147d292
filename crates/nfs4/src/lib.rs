//! NFSv4.0, 4.1 and 4.2 (RFC 7530, RFC 8881, RFC 7862): COMPOUND processing over the shared
//! backend, with a pseudo file system joining the exports, client and session state, opens,
//! share reservations and byte-range locks.

pub mod acl;
pub mod admin;
pub mod attr;
pub mod compound;
pub mod db;
pub mod idmap;
mod metrics;
mod ops_client;
mod ops_deleg;
mod ops_dir;
mod ops_fh;
mod ops_file;
mod ops_layout;
mod ops_lock;
mod ops_open;
mod ops_xattr;
pub mod optable;
pub mod proto;
pub mod pseudo;
pub mod state;

pub use compound::Nfs4;
