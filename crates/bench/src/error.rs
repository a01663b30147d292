//! The one error type of the benchmark: a message for the operator.

use std::fmt;

/// What went wrong, as a sentence.
#[derive(Debug, Clone)]
pub struct Error(pub String);

/// Result of a benchmark step.
pub type Result<T> = std::result::Result<T, Error>;

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

impl From<crate::rpc::RpcError> for Error {
    fn from(e: crate::rpc::RpcError) -> Self {
        Error(e.to_string())
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error(e.to_string())
    }
}

impl From<xdr::XdrError> for Error {
    fn from(e: xdr::XdrError) -> Self {
        Error(format!("undecodable result: {e}"))
    }
}

/// Builds an [`Error`] from a format string.
#[macro_export]
macro_rules! err {
    ($($t:tt)*) => { $crate::error::Error(format!($($t)*)) };
}
