//! MOUNT v3 and NFSv3 (RFC 1813).

pub mod types;
