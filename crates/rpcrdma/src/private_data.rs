//! RPC-over-RDMA connection manager private data (RFC 8797 section 4) and inline threshold
//! negotiation.
//!
//! ```text
//!  0               1               2               3
//! +---------------+---------------+---------------+---------------+
//! |                 Format Identifier 0xf6ab0e18                  |
//! +---------------+---------------+---------------+---------------+
//! |  Version (1)  |     Flags     |   Send Size   | Receive Size  |
//! +---------------+---------------+---------------+---------------+
//! ```
//!
//! Flags bit 0: the sender of the private data accepts Send With Invalidate. A size byte `n`
//! means `(n + 1) * 1024` bytes, so 1 KiB..256 KiB are encodable (4096 is 3). A peer that sends
//! no usable private data (absent, shorter than 8 bytes, another format identifier or version)
//! is treated as RFC 8166 3.3.3 prescribes: 1024-byte inline thresholds both ways and no
//! remote invalidation. Bytes after the first eight are ignored: CMs hand the passive side the
//! whole fixed-size private data area, zero-filled.

/// The private data format identifier.
pub const MAGIC: u32 = 0xf6ab_0e18;
/// The private data format version.
pub const VERSION: u8 = 1;
/// Flags bit: the sender accepts Send With Invalidate (remote invalidation).
pub const FLAG_REMOTE_INVALIDATE: u8 = 0x01;
/// Encoded length of the private data.
pub const LEN: usize = 8;
/// Inline threshold assumed for a peer without private data (RFC 8166 3.3.3).
pub const DEFAULT_INLINE: u32 = 1024;
/// Smallest inline size (an encoded 0).
pub const MIN_INLINE: u32 = 1024;
/// Largest encodable inline size (an encoded 255).
pub const MAX_ENCODABLE_INLINE: u32 = 256 * 1024;
/// Largest inline size this implementation configures.
pub const MAX_INLINE: u32 = 64 * 1024;
/// Our default inline size each way (the Linux client's default too).
pub const OUR_DEFAULT_INLINE: u32 = 4096;

/// Encodes an inline size in bytes as its size byte; sizes outside 1 KiB..256 KiB are clamped.
pub fn encode_size(bytes: u32) -> u8 {
    ((bytes.clamp(MIN_INLINE, MAX_ENCODABLE_INLINE) >> 10) - 1) as u8
}

/// Decodes a size byte into bytes.
pub fn decode_size(v: u8) -> u32 {
    (u32::from(v) + 1) << 10
}

/// The content of RPC-over-RDMA private data, sizes in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PrivateData {
    /// Flags bit 0: the sender accepts Send With Invalidate.
    pub remote_invalidate: bool,
    /// Largest message the sender will send.
    pub send_size: u32,
    /// Largest message the sender can receive (its Receive buffer size).
    pub recv_size: u32,
}

impl PrivateData {
    /// Parses private data received from the peer; `None` means "the peer sent none".
    pub fn parse(buf: &[u8]) -> Option<Self> {
        let b = buf.get(..LEN)?;
        if u32::from_be_bytes([b[0], b[1], b[2], b[3]]) != MAGIC || b[4] != VERSION {
            return None;
        }
        Some(PrivateData {
            remote_invalidate: b[5] & FLAG_REMOTE_INVALIDATE != 0,
            send_size: decode_size(b[6]),
            recv_size: decode_size(b[7]),
        })
    }

    /// Encodes the private data (sizes clamped to the encodable range and rounded down to KiB).
    pub fn encode(&self) -> [u8; LEN] {
        let m = MAGIC.to_be_bytes();
        let flags = if self.remote_invalidate {
            FLAG_REMOTE_INVALIDATE
        } else {
            0
        };
        [
            m[0],
            m[1],
            m[2],
            m[3],
            VERSION,
            flags,
            encode_size(self.send_size),
            encode_size(self.recv_size),
        ]
    }
}

/// Our side of the negotiation: the largest inline sizes we are willing to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct InlineConfig {
    max_send: u32,
    max_recv: u32,
    accept_remote_invalidate: bool,
}

impl Default for InlineConfig {
    fn default() -> Self {
        InlineConfig::new(OUR_DEFAULT_INLINE, OUR_DEFAULT_INLINE)
    }
}

impl InlineConfig {
    /// Sizes rounded down to whole KiB and clamped to 1 KiB..64 KiB; we do not accept Send
    /// With Invalidate ourselves (as knfsd, whose private data carries flags 0).
    pub fn new(max_send: u32, max_recv: u32) -> Self {
        let norm = |v: u32| (v & !1023).clamp(MIN_INLINE, MAX_INLINE);
        InlineConfig {
            max_send: norm(max_send),
            max_recv: norm(max_recv),
            accept_remote_invalidate: false,
        }
    }

    /// The same sizes, advertising whether we accept Send With Invalidate from the peer.
    pub fn with_remote_invalidate(mut self, accept: bool) -> Self {
        self.accept_remote_invalidate = accept;
        self
    }

    /// Largest message we send.
    pub fn max_send(&self) -> u32 {
        self.max_send
    }

    /// Largest message we receive (our Receive buffer size).
    pub fn max_recv(&self) -> u32 {
        self.max_recv
    }

    /// The private data we send in the CM exchange.
    pub fn private_data(&self) -> PrivateData {
        PrivateData {
            remote_invalidate: self.accept_remote_invalidate,
            send_size: self.max_send,
            recv_size: self.max_recv,
        }
    }
}

/// The inline thresholds and options in force on a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Negotiated {
    /// Largest message we may send (transport header included).
    pub send: u32,
    /// Largest message the peer will send us; our Receive buffers need this many bytes.
    pub recv: u32,
    /// The peer accepts Send With Invalidate.
    pub remote_invalidate: bool,
}

/// Combines our limits with the peer's private data (`None`: the peer sent none).
pub fn negotiate(ours: InlineConfig, peer: Option<PrivateData>) -> Negotiated {
    let peer = peer.unwrap_or(PrivateData {
        remote_invalidate: false,
        send_size: DEFAULT_INLINE,
        recv_size: DEFAULT_INLINE,
    });
    Negotiated {
        send: ours.max_send.min(peer.recv_size),
        recv: ours.max_recv.min(peer.send_size),
        remote_invalidate: peer.remote_invalidate,
    }
}
