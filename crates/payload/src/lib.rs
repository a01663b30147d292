//! Bulk data of a reply that travels beside its encoded message (READ data): bytes in memory
//! or file pages that a stream transport splices to its socket, and the transport's offer of
//! where such data may be made ([`PayloadTarget`]).
//!
//! The file system layer produces payloads and the XDR encoder and transports carry them;
//! neither depends on the other for it.

#![forbid(unsafe_code)]

use std::io;
use std::os::fd::BorrowedFd;
use std::sync::Arc;

use bytes::Bytes;

/// File data a stream transport can move to its socket without copying it through memory of
/// ours (on Linux, page-cache pages held in a pipe). Bytes leave in order: what
/// [`Pages::splice_to`] moved is gone, and [`Pages::to_bytes`] keeps a copy of the rest that
/// later moves come from.
pub trait Pages: Send + Sync + std::fmt::Debug {
    /// Total bytes of the payload (padding not included).
    fn len(&self) -> usize;

    /// True for a payload of no bytes.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Moves at most `max` of the bytes not yet moved to the stream socket `to` without
    /// blocking (`more`: the message goes on after them); returns how many moved, or
    /// `WouldBlock` when the socket takes none now.
    fn splice_to(&self, to: BorrowedFd<'_>, max: usize, more: bool) -> io::Result<usize>;

    /// The bytes not yet moved, in memory (for a copy kept after the send, or a transport
    /// that cannot splice).
    fn to_bytes(&self) -> io::Result<Bytes>;
}

/// Where a payload's bytes can be made, as the transport of a call offers them: file pages
/// handed to it (a stream transport that splices), or a buffer of its own (registered memory
/// an RDMA Write sends from). What it offers neither way goes in the producer's own memory.
pub trait PayloadTarget {
    /// Whether the payload may be file pages ([`Payload::Pages`]).
    fn takes_pages(&self) -> bool;
    /// Lets `fill` write into a buffer of the transport of at most `len` bytes and returns the
    /// bytes `fill` says it wrote (its return value); None, without calling `fill`, when the
    /// transport has no buffer to give now.
    fn fill(&self, len: usize, fill: &mut dyn FnMut(&mut [u8]) -> usize) -> Option<Bytes>;
}

/// A bulk payload (the XDR encoder's `opaque_payload` takes one): bytes in memory or file pages.
#[derive(Debug, Clone)]
pub enum Payload {
    /// Bytes in memory.
    Bytes(Bytes),
    /// File pages a stream transport sends without copying.
    Pages(Arc<dyn Pages>),
}

impl Payload {
    /// Length in bytes.
    pub fn len(&self) -> usize {
        match self {
            Payload::Bytes(b) => b.len(),
            Payload::Pages(p) => p.len(),
        }
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes, when they are in memory (a decoded payload always is).
    pub fn in_memory(&self) -> Option<&Bytes> {
        match self {
            Payload::Bytes(b) => Some(b),
            Payload::Pages(_) => None,
        }
    }
}

impl Default for Payload {
    fn default() -> Self {
        Payload::Bytes(Bytes::new())
    }
}

impl PartialEq for Payload {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Payload::Bytes(a), Payload::Bytes(b)) => a == b,
            (Payload::Pages(a), Payload::Pages(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl Eq for Payload {}

impl From<Bytes> for Payload {
    fn from(b: Bytes) -> Self {
        Payload::Bytes(b)
    }
}
