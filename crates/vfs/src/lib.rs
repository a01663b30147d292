//! The backend: exports, file handles, caller credentials and the local POSIX file system.

pub mod exports;
