//! rnfsd's parts that more than its binary needs: the command line (the manual page is
//! generated from it) and systemd's notification protocol.

pub mod config;
pub mod notify;
pub mod takeover;
