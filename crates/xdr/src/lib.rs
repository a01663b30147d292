//! Zero-copy XDR (RFC 4506).
//!
//! Decoding reads from a [`bytes::Bytes`] so that variable-length opaque data (a WRITE payload,
//! a file name) is returned as a slice of the receive buffer, never copied. Every length read
//! from the wire is checked against both the bytes that remain and a caller-supplied protocol
//! maximum before anything is allocated.
//!
//! Encoding builds a [`Reply`]: a list of segments where bulk payloads (READ data) stay separate
//! buffers. TCP sends the segments with one vectored write; RPC-over-RDMA places a
//! [`Segment::Bulk`] or [`Segment::Pages`] (a DDP-eligible item) directly into the client's
//! Write chunk (RFC 8166, RFC 8267); [`Segment::BodyPages`] are file pages that stay in the
//! message body.

#![forbid(unsafe_code)]

use std::io;
use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};

/// Bulk reply data and the transport's offer of where to make it (see the `payload` crate).
pub use payload::{Pages, Payload, PayloadTarget};

/// Why a buffer could not be decoded as the expected XDR type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum XdrError {
    /// The item needs more bytes than remain in the message.
    #[error("truncated: needed {needed} bytes, {remaining} remain")]
    Truncated {
        /// Bytes the item needs.
        needed: usize,
        /// Bytes left in the buffer.
        remaining: usize,
    },
    /// A length field exceeds the protocol maximum for that item.
    #[error("length {len} exceeds the maximum {max}")]
    TooLong {
        /// Length read from the wire.
        len: u64,
        /// The protocol maximum.
        max: usize,
    },
    /// A boolean was neither 0 nor 1.
    #[error("invalid boolean {0}")]
    BadBool(u32),
    /// A union or enum discriminant that the type does not define.
    #[error("invalid discriminant {0}")]
    BadDiscriminant(u32),
    /// A string that must be UTF-8 (for example a machine name) was not.
    #[error("invalid UTF-8 string")]
    BadUtf8,
}

/// Result of an XDR decode.
pub type Result<T> = std::result::Result<T, XdrError>;

/// Pads `len` up to the next multiple of four, as XDR requires of opaque data.
#[inline]
pub const fn pad4(len: usize) -> usize {
    (len + 3) & !3
}

/// `b` followed by its XDR padding (copied only when it needs padding).
fn padded(b: Bytes) -> Bytes {
    let pad = pad4(b.len()) - b.len();
    if pad == 0 {
        return b;
    }
    let mut out = BytesMut::with_capacity(b.len() + pad);
    out.put_slice(&b);
    out.put_bytes(0, pad);
    out.freeze()
}

/// A cursor over a received message; opaque items are returned as slices of it.
#[derive(Debug, Clone)]
pub struct Decoder {
    buf: Bytes,
}

impl Decoder {
    /// Starts decoding at the beginning of `buf`.
    pub fn new(buf: Bytes) -> Self {
        Self { buf }
    }

    /// Bytes not consumed yet.
    #[inline]
    pub fn remaining(&self) -> usize {
        self.buf.len()
    }

    /// The bytes not consumed yet, without consuming them.
    pub fn peek_rest(&self) -> &Bytes {
        &self.buf
    }

    /// Consumes the decoder and returns what was not decoded.
    pub fn into_rest(self) -> Bytes {
        self.buf
    }

    #[inline]
    fn need(&self, n: usize) -> Result<()> {
        if self.buf.len() < n {
            Err(XdrError::Truncated {
                needed: n,
                remaining: self.buf.len(),
            })
        } else {
            Ok(())
        }
    }

    /// Takes `n` raw bytes (no padding) as a slice of the buffer.
    pub fn take(&mut self, n: usize) -> Result<Bytes> {
        self.need(n)?;
        Ok(self.buf.split_to(n))
    }

    /// Decodes an unsigned 32-bit integer.
    #[inline]
    pub fn u32(&mut self) -> Result<u32> {
        self.need(4)?;
        let v = u32::from_be_bytes([self.buf[0], self.buf[1], self.buf[2], self.buf[3]]);
        bytes::Buf::advance(&mut self.buf, 4);
        Ok(v)
    }

    /// Decodes a signed 32-bit integer.
    #[inline]
    pub fn i32(&mut self) -> Result<i32> {
        Ok(self.u32()? as i32)
    }

    /// Decodes an unsigned 64-bit hyper integer.
    #[inline]
    pub fn u64(&mut self) -> Result<u64> {
        let hi = self.u32()? as u64;
        let lo = self.u32()? as u64;
        Ok(hi << 32 | lo)
    }

    /// Decodes a signed 64-bit hyper integer.
    #[inline]
    pub fn i64(&mut self) -> Result<i64> {
        Ok(self.u64()? as i64)
    }

    /// Decodes a boolean, rejecting values other than 0 and 1.
    pub fn bool(&mut self) -> Result<bool> {
        match self.u32()? {
            0 => Ok(false),
            1 => Ok(true),
            v => Err(XdrError::BadBool(v)),
        }
    }

    /// Decodes fixed-length opaque data of `n` bytes plus its padding.
    pub fn opaque_fixed(&mut self, n: usize) -> Result<Bytes> {
        let padded = pad4(n);
        self.need(padded)?;
        let data = self.buf.split_to(n);
        bytes::Buf::advance(&mut self.buf, padded - n);
        Ok(data)
    }

    /// Decodes variable-length opaque data of at most `max` bytes, as a slice of the buffer.
    pub fn opaque(&mut self, max: usize) -> Result<Bytes> {
        let len = self.u32()? as usize;
        if len > max {
            return Err(XdrError::TooLong {
                len: len as u64,
                max,
            });
        }
        self.opaque_fixed(len)
    }

    /// Decodes variable-length opaque data of at most `max` bytes into memory of its own, for
    /// values kept after the call (state, caches): a slice would keep the whole call buffer
    /// alive, which over RDMA is a registered bulk buffer of the transport's pool.
    pub fn opaque_owned(&mut self, max: usize) -> Result<Bytes> {
        self.opaque(max).map(|b| Bytes::copy_from_slice(&b))
    }

    /// Decodes a string of at most `max` bytes that must be UTF-8.
    pub fn string(&mut self, max: usize) -> Result<String> {
        let b = self.opaque(max)?;
        String::from_utf8(b.to_vec()).map_err(|_| XdrError::BadUtf8)
    }

    /// Decodes an array length, checked against `max` elements and against the bytes left,
    /// given that each element takes at least `min_elem_size` bytes on the wire.
    pub fn array_len(&mut self, max: usize, min_elem_size: usize) -> Result<usize> {
        let len = self.u32()? as usize;
        if len > max {
            return Err(XdrError::TooLong {
                len: len as u64,
                max,
            });
        }
        let needed = len.saturating_mul(min_elem_size.max(1));
        self.need(needed)?;
        Ok(len)
    }

    /// Decodes a variable-length array of at most `max` elements.
    pub fn array<T>(
        &mut self,
        max: usize,
        min_elem_size: usize,
        mut f: impl FnMut(&mut Self) -> Result<T>,
    ) -> Result<Vec<T>> {
        let n = self.array_len(max, min_elem_size)?;
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            v.push(f(self)?);
        }
        Ok(v)
    }

    /// Decodes an optional item (`*T` in XDR): a boolean followed by the item when true.
    pub fn optional<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T>) -> Result<Option<T>> {
        if self.bool()? {
            Ok(Some(f(self)?))
        } else {
            Ok(None)
        }
    }

    /// Decodes a value with its [`Decode`] implementation.
    pub fn decode<T: Decode>(&mut self) -> Result<T> {
        T::decode(self)
    }
}

/// A type that can be read from XDR.
pub trait Decode: Sized {
    /// Reads one value, consuming exactly its encoded bytes.
    fn decode(d: &mut Decoder) -> Result<Self>;
}

/// A type that can be written as XDR.
pub trait Encode {
    /// Appends the value's encoding.
    fn encode(&self, e: &mut Encoder);
}

/// One piece of an encoded message.
#[derive(Debug, Clone)]
pub enum Segment {
    /// Bytes that travel in the message body.
    Inline(Bytes),
    /// A bulk opaque payload (for example READ data) without its XDR padding. On TCP it is sent
    /// followed by `pad4(len) - len` zero bytes; over RDMA it may be placed in a Write chunk.
    Bulk(Bytes),
    /// A bulk opaque payload held as file pages (see [`Pages`]), padded like [`Segment::Bulk`].
    Pages(Arc<dyn Pages>),
    /// File pages of an opaque that is not DDP-eligible (RFC 8267), padded like
    /// [`Segment::Bulk`]: a stream transport sends them like [`Segment::Pages`], RPC-over-RDMA
    /// with the message's other bytes (inline or in the Reply chunk), never in a Write chunk.
    BodyPages(Arc<dyn Pages>),
}

impl PartialEq for Segment {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Segment::Inline(a), Segment::Inline(b)) | (Segment::Bulk(a), Segment::Bulk(b)) => {
                a == b
            }
            (Segment::Pages(a), Segment::Pages(b))
            | (Segment::BodyPages(a), Segment::BodyPages(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl Eq for Segment {}

impl Segment {
    /// The bytes of the segment (padding not included); `None` for [`Segment::Pages`], whose
    /// bytes are not in memory.
    pub fn bytes(&self) -> Option<&Bytes> {
        match self {
            Segment::Inline(b) | Segment::Bulk(b) => Some(b),
            Segment::Pages(_) | Segment::BodyPages(_) => None,
        }
    }

    /// Length on a byte stream, padding included.
    pub fn wire_len(&self) -> usize {
        match self {
            Segment::Inline(b) => b.len(),
            Segment::Bulk(b) => pad4(b.len()),
            Segment::Pages(p) | Segment::BodyPages(p) => pad4(p.len()),
        }
    }

    /// Zero bytes that follow the segment on a byte stream (XDR padding of a bulk payload).
    pub fn padding(&self) -> usize {
        match self {
            Segment::Inline(_) => 0,
            Segment::Bulk(b) => pad4(b.len()) - b.len(),
            Segment::Pages(p) | Segment::BodyPages(p) => pad4(p.len()) - p.len(),
        }
    }
}

/// An encoded message as a list of segments, ready for a vectored send.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reply {
    /// The segments in wire order.
    pub segments: Vec<Segment>,
}

impl Reply {
    /// Total length on a byte stream.
    pub fn wire_len(&self) -> usize {
        self.segments.iter().map(Segment::wire_len).sum()
    }

    /// The same message with its bulk payloads copied into memory of its own, for a reply kept
    /// after it is sent (a session's reply cache): a READ payload may be a transport's
    /// registered buffer, which must go back to its pool, or file pages that leave once sent.
    pub fn detached(&self) -> io::Result<Reply> {
        let segments = self
            .segments
            .iter()
            .map(|s| {
                Ok(match s {
                    Segment::Inline(b) => Segment::Inline(b.clone()),
                    Segment::Bulk(b) => Segment::Bulk(Bytes::copy_from_slice(b)),
                    Segment::Pages(p) => Segment::Bulk(p.to_bytes()?),
                    Segment::BodyPages(p) => Segment::Inline(padded(p.to_bytes()?)),
                })
            })
            .collect::<io::Result<_>>()?;
        Ok(Reply { segments })
    }

    /// Flattens the message into one contiguous buffer (with padding), for caches and tests;
    /// file pages that cannot be read become zeros (replies that may hold pages are kept with
    /// [`Reply::detached`] instead).
    pub fn to_bytes(&self) -> Bytes {
        let mut out = BytesMut::with_capacity(self.wire_len());
        for s in &self.segments {
            match s {
                Segment::Inline(b) | Segment::Bulk(b) => out.put_slice(b),
                Segment::Pages(p) | Segment::BodyPages(p) => match p.to_bytes() {
                    Ok(b) if b.len() == p.len() => out.put_slice(&b),
                    _ => out.put_bytes(0, p.len()),
                },
            }
            out.put_bytes(0, s.padding());
        }
        out.freeze()
    }
}

/// Inline segments up to this size are copied by [`Encoder::append`] instead of kept apart.
pub const APPEND_COPY_MAX: usize = 1024;

/// Smallest allocation of an encoder's inline buffer.
const INLINE_CHUNK: usize = 256;

/// Builds an XDR message; bulk payloads are kept as separate segments instead of being copied.
#[derive(Debug, Default)]
pub struct Encoder {
    cur: BytesMut,
    segments: Vec<Segment>,
}

impl Encoder {
    /// An empty encoder; its inline buffer is allocated by the first write, so an operation
    /// that answers nothing but its status costs no allocation.
    pub fn new() -> Self {
        Self::with_capacity(0)
    }

    /// An empty encoder whose first inline buffer holds `cap` bytes before growing.
    pub fn with_capacity(cap: usize) -> Self {
        Self {
            cur: BytesMut::with_capacity(cap),
            segments: Vec::new(),
        }
    }

    /// Bytes encoded so far, bulk segments counted with their padding.
    pub fn len(&self) -> usize {
        self.segments.iter().map(Segment::wire_len).sum::<usize>() + self.cur.len()
    }

    /// True when nothing has been encoded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends an unsigned 32-bit integer.
    #[inline]
    pub fn u32(&mut self, v: u32) {
        self.put(&v.to_be_bytes());
    }

    /// Appends a signed 32-bit integer.
    #[inline]
    pub fn i32(&mut self, v: i32) {
        self.put(&v.to_be_bytes());
    }

    /// Appends an unsigned 64-bit hyper integer.
    #[inline]
    pub fn u64(&mut self, v: u64) {
        self.put(&v.to_be_bytes());
    }

    /// Appends a signed 64-bit hyper integer.
    #[inline]
    pub fn i64(&mut self, v: i64) {
        self.put(&v.to_be_bytes());
    }

    /// Appends a boolean.
    #[inline]
    pub fn bool(&mut self, v: bool) {
        self.u32(v as u32);
    }

    /// Appends fixed-length opaque data with its padding.
    #[inline]
    pub fn opaque_fixed(&mut self, data: &[u8]) {
        self.room(pad4(data.len()));
        self.cur.extend_from_slice(data);
        self.cur
            .extend_from_slice(&[0; 3][..pad4(data.len()) - data.len()]);
    }

    /// Appends `bytes` inline. `BytesMut::extend_from_slice` inlines, so an integer's few
    /// bytes become one store; bytes' `put_slice`, which does not, costs a call to `memcpy`
    /// for each.
    #[inline]
    fn put(&mut self, bytes: &[u8]) {
        self.room(bytes.len());
        self.cur.extend_from_slice(bytes);
    }

    /// Appends variable-length opaque data (length, bytes, padding), copying it inline.
    #[inline]
    pub fn opaque(&mut self, data: &[u8]) {
        self.u32(data.len() as u32);
        self.opaque_fixed(data);
    }

    /// Appends variable-length opaque data whose bytes stay a separate segment (no copy).
    pub fn opaque_bulk(&mut self, data: Bytes) {
        self.u32(data.len() as u32);
        self.flush_inline();
        self.segments.push(Segment::Bulk(data));
    }

    /// Appends variable-length opaque data held in memory or as file pages (see [`Pages`]),
    /// as a separate segment.
    pub fn opaque_payload(&mut self, data: Payload) {
        match data {
            Payload::Bytes(b) => self.opaque_bulk(b),
            Payload::Pages(p) => {
                self.u32(p.len() as u32);
                self.flush_inline();
                self.segments.push(Segment::Pages(p));
            }
        }
    }

    /// Appends variable-length opaque data that is not DDP-eligible (RFC 8267) and may be
    /// large or file pages (READ_PLUS data): bytes stay a segment of their own without a copy
    /// (short ones are copied), pages become [`Segment::BodyPages`]; both are part of the
    /// message body on every transport.
    pub fn opaque_body_payload(&mut self, data: Payload) {
        match data {
            Payload::Bytes(b) if b.len() <= APPEND_COPY_MAX => self.opaque(&b),
            Payload::Bytes(b) => {
                self.u32(b.len() as u32);
                let pad = pad4(b.len()) - b.len();
                self.flush_inline();
                self.segments.push(Segment::Inline(b));
                self.put(&[0; 3][..pad]);
            }
            Payload::Pages(p) => {
                self.u32(p.len() as u32);
                self.flush_inline();
                self.segments.push(Segment::BodyPages(p));
            }
        }
    }

    /// Appends an optional item.
    pub fn optional<T>(&mut self, v: Option<&T>, f: impl FnOnce(&mut Self, &T)) {
        match v {
            Some(x) => {
                self.bool(true);
                f(self, x);
            }
            None => self.bool(false),
        }
    }

    /// Appends a value with its [`Encode`] implementation.
    pub fn encode<T: Encode + ?Sized>(&mut self, v: &T) {
        v.encode(self)
    }

    /// Appends already-encoded segments (for example a cached reply body). Small inline
    /// segments are copied: a few bytes of memcpy cost less than a segment of their own, which
    /// means another allocation here and another iovec at the send.
    pub fn append(&mut self, reply: Reply) {
        for s in reply.segments {
            match s {
                Segment::Inline(b) if b.len() <= APPEND_COPY_MAX => {
                    self.put(&b);
                }
                s => {
                    self.flush_inline();
                    self.segments.push(s);
                }
            }
        }
    }

    /// Appends what `other` encoded, moving its segments and copying its unflushed inline
    /// bytes: a message built in two parts (a header whose values are known only after the
    /// body) without freezing the body into a [`Reply`] first, which allocates.
    pub fn append_encoder(&mut self, other: Encoder) {
        if !other.segments.is_empty() {
            self.flush_inline();
            for s in other.segments {
                match s {
                    Segment::Inline(b) if b.len() <= APPEND_COPY_MAX => self.put(&b),
                    s => {
                        self.flush_inline();
                        self.segments.push(s);
                    }
                }
            }
        }
        self.put(&other.cur);
    }

    /// Drops everything encoded after the first `len` bytes: an item that turned out not to
    /// belong (an operation's result replaced by its error). `len` must be a length this
    /// encoder had, so that no bulk segment is cut in two.
    pub fn truncate(&mut self, len: usize) {
        let mut end = self.len();
        if end <= len {
            return;
        }
        let cur_start = end - self.cur.len();
        if len >= cur_start {
            self.cur.truncate(len - cur_start);
            return;
        }
        self.cur.clear();
        end = cur_start;
        while let Some(last) = self.segments.last_mut() {
            let start = end - last.wire_len();
            if len > start {
                match last {
                    Segment::Inline(b) => b.truncate(len - start),
                    // not at a length this encoder had: keep the whole payload
                    Segment::Bulk(_) | Segment::Pages(_) | Segment::BodyPages(_) => {
                        debug_assert!(false, "truncate inside a bulk segment");
                    }
                }
                return;
            }
            self.segments.pop();
            end = start;
            if end == len {
                return;
            }
        }
    }

    /// Makes room for `n` more inline bytes at once: a result that knows its size (a long
    /// listing) is encoded without regrowing and copying its buffer on the way.
    pub fn reserve(&mut self, n: usize) {
        self.room(n);
    }

    /// The inline bytes written since the last take, as one value that shares this encoder's
    /// buffer (no copy): many small values (each entry's attributes in a listing) encoded in
    /// turn into one allocation. Only for encoders without bulk segments.
    pub fn take_bytes(&mut self) -> Bytes {
        debug_assert!(
            self.segments.is_empty(),
            "take_bytes of an encoder with bulk segments"
        );
        self.cur.split().freeze()
    }

    /// Makes room for `n` more inline bytes; the first write of an empty encoder and a full
    /// buffer allocate here, at least [`INLINE_CHUNK`] bytes so small writes do not regrow.
    #[inline]
    fn room(&mut self, n: usize) {
        if self.cur.capacity() - self.cur.len() < n {
            self.grow(n);
        }
    }

    #[cold]
    fn grow(&mut self, n: usize) {
        self.cur.reserve(n.max(INLINE_CHUNK));
    }

    fn flush_inline(&mut self) {
        if !self.cur.is_empty() {
            // The bytes after the flushed ones stay this encoder's buffer when there is a
            // useful amount left, so flushing does not allocate.
            let done = if self.cur.capacity() - self.cur.len() >= 64 {
                self.cur.split()
            } else {
                std::mem::take(&mut self.cur)
            };
            self.segments.push(Segment::Inline(done.freeze()));
        }
    }

    /// Finishes the message.
    pub fn finish(mut self) -> Reply {
        self.flush_inline();
        Reply {
            segments: self.segments,
        }
    }
}

/// XDR `void`: nothing on the wire (the result of an operation that only has a status).
impl Encode for () {
    fn encode(&self, _: &mut Encoder) {}
}

/// A variable-length array: its count, then each element.
impl<T: Encode> Encode for [T] {
    fn encode(&self, e: &mut Encoder) {
        e.u32(self.len() as u32);
        for x in self {
            x.encode(e);
        }
    }
}

/// A variable-length array: its count, then each element.
impl<T: Encode> Encode for Vec<T> {
    fn encode(&self, e: &mut Encoder) {
        self.as_slice().encode(e)
    }
}

impl Decode for u32 {
    fn decode(d: &mut Decoder) -> Result<Self> {
        d.u32()
    }
}
impl Encode for u32 {
    fn encode(&self, e: &mut Encoder) {
        e.u32(*self)
    }
}
impl Decode for u64 {
    fn decode(d: &mut Decoder) -> Result<Self> {
        d.u64()
    }
}
impl Encode for u64 {
    fn encode(&self, e: &mut Encoder) {
        e.u64(*self)
    }
}
impl Decode for bool {
    fn decode(d: &mut Decoder) -> Result<Self> {
        d.bool()
    }
}
impl Encode for bool {
    fn encode(&self, e: &mut Encoder) {
        e.bool(*self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn truncate_drops_inline_and_bulk_tails() {
        let mut e = Encoder::new();
        e.u32(1);
        let mark = e.len();
        e.u32(2);
        e.opaque_bulk(Bytes::from_static(b"abcde"));
        e.u32(3);
        e.truncate(mark);
        e.u32(4);
        assert_eq!(e.len(), 8);
        assert_eq!(&e.finish().to_bytes()[..], &[0, 0, 0, 1, 0, 0, 0, 4]);

        // a mark inside an inline segment that a bulk payload flushed
        let mut e = Encoder::new();
        e.u32(7);
        e.u32(8);
        e.opaque_bulk(Bytes::from_static(b"xy"));
        e.truncate(4);
        assert_eq!(&e.finish().to_bytes()[..], &[0, 0, 0, 7]);

        // a mark right after a bulk payload keeps it
        let mut e = Encoder::new();
        e.opaque_bulk(Bytes::from_static(b"xy"));
        let mark = e.len();
        e.u32(9);
        e.truncate(mark);
        assert_eq!(&e.finish().to_bytes()[..], &[0, 0, 0, 2, b'x', b'y', 0, 0]);
    }

    #[test]
    fn append_encoder_keeps_order_and_payloads() {
        let mut body = Encoder::new();
        body.u32(2);
        body.opaque_bulk(Bytes::from(vec![5u8; 2000]));
        body.u32(3);
        let mut head = Encoder::new();
        head.u32(1);
        head.append_encoder(body);
        let r = head.finish();
        // the large payload stays a segment of its own
        assert!(r
            .segments
            .iter()
            .any(|s| matches!(s, Segment::Bulk(b) if b.len() == 2000)));
        let b = r.to_bytes();
        assert_eq!(&b[..12], &[0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 7, 208]);
        assert_eq!(&b[b.len() - 4..], &[0, 0, 0, 3]);
        assert_eq!(b.len(), 4 + 4 + 4 + 2000 + 4);

        let mut small = Encoder::new();
        small.u32(6);
        let mut e = Encoder::new();
        e.u32(5);
        e.append_encoder(small);
        assert_eq!(&e.finish().to_bytes()[..], &[0, 0, 0, 5, 0, 0, 0, 6]);
    }

    fn dec(v: Vec<u8>) -> Decoder {
        Decoder::new(Bytes::from(v))
    }

    #[test]
    fn taken_values_hold_what_was_written_since_the_last_take() {
        let mut e = Encoder::with_capacity(64);
        e.u32(7);
        e.opaque(b"ab");
        let first = e.take_bytes();
        e.u64(1);
        let second = e.take_bytes();
        assert_eq!(&first[..], &[0, 0, 0, 7, 0, 0, 0, 2, b'a', b'b', 0, 0]);
        assert_eq!(&second[..], &[0, 0, 0, 0, 0, 0, 0, 1]);
        assert!(e.take_bytes().is_empty());
        // past the first buffer's capacity
        for _ in 0..100 {
            e.u32(9);
        }
        assert_eq!(e.take_bytes().len(), 400);
    }

    #[test]
    fn truncated_integer() {
        assert_eq!(
            dec(vec![0, 0, 1]).u32(),
            Err(XdrError::Truncated {
                needed: 4,
                remaining: 3
            })
        );
    }

    #[test]
    fn huge_opaque_length_is_rejected_before_allocation() {
        let mut d = dec(vec![0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4]);
        assert!(matches!(d.opaque(1 << 20), Err(XdrError::TooLong { .. })));
        let mut d = dec(vec![0, 0, 0, 8, 1, 2, 3, 4]);
        assert!(matches!(d.opaque(1 << 20), Err(XdrError::Truncated { .. })));
    }

    #[test]
    fn array_length_checked_against_remaining() {
        let mut d = dec(vec![0, 0, 0, 100, 0, 0, 0, 1]);
        assert!(matches!(
            d.array(1000, 4, |d| d.u32()),
            Err(XdrError::Truncated { .. })
        ));
        let mut d = dec(vec![0, 0, 0, 100]);
        assert!(matches!(
            d.array(10, 4, |d| d.u32()),
            Err(XdrError::TooLong { .. })
        ));
    }

    #[test]
    fn bad_bool() {
        assert_eq!(dec(vec![0, 0, 0, 2]).bool(), Err(XdrError::BadBool(2)));
    }

    #[test]
    fn opaque_is_zero_copy() {
        let buf = Bytes::from(vec![0, 0, 0, 3, b'a', b'b', b'c', 0, 9, 9, 9, 9]);
        let base = buf.as_ptr() as usize;
        let mut d = Decoder::new(buf);
        let o = d.opaque(16).unwrap();
        assert_eq!(&o[..], b"abc");
        assert_eq!(o.as_ptr() as usize, base + 4);
        assert_eq!(d.remaining(), 4);
    }

    #[test]
    fn bulk_segment_keeps_payload_separate_and_pads_on_flatten() {
        let mut e = Encoder::new();
        e.u32(7);
        let payload = Bytes::from_static(b"hello");
        e.opaque_bulk(payload.clone());
        e.u32(9);
        let r = e.finish();
        assert_eq!(r.segments.len(), 3);
        assert_eq!(r.segments[1], Segment::Bulk(payload));
        assert_eq!(r.wire_len(), 4 + 4 + 8 + 4);
        assert_eq!(
            &r.to_bytes()[..],
            &[0, 0, 0, 7, 0, 0, 0, 5, b'h', b'e', b'l', b'l', b'o', 0, 0, 0, 0, 0, 0, 9]
        );
    }

    /// Pages held in memory, for the body-payload tests.
    #[derive(Debug)]
    struct MemPages(Bytes);

    impl Pages for MemPages {
        fn len(&self) -> usize {
            self.0.len()
        }
        fn splice_to(
            &self,
            _to: std::os::fd::BorrowedFd<'_>,
            _max: usize,
            _more: bool,
        ) -> io::Result<usize> {
            Err(io::Error::from(io::ErrorKind::Unsupported))
        }
        fn to_bytes(&self) -> io::Result<Bytes> {
            Ok(self.0.clone())
        }
    }

    #[test]
    fn a_body_payload_is_never_a_ddp_item_and_reads_like_an_opaque() {
        let long = Bytes::from(vec![7u8; APPEND_COPY_MAX + 3]);
        let pages: Arc<dyn Pages> = Arc::new(MemPages(Bytes::from_static(b"pages")));
        for (data, kept) in [
            (Payload::Bytes(Bytes::from_static(b"short")), false),
            (Payload::Bytes(long.clone()), true),
            (Payload::Pages(pages.clone()), true),
        ] {
            let plain = match &data {
                Payload::Bytes(b) => b.clone(),
                Payload::Pages(p) => p.to_bytes().unwrap(),
            };
            let mut e = Encoder::new();
            e.u32(1);
            e.opaque_body_payload(data);
            e.u32(2);
            let r = e.finish();
            // no Bulk or Pages segment: an RDMA transport pairs only those with Write chunks
            assert!(r
                .segments
                .iter()
                .all(|s| matches!(s, Segment::Inline(_) | Segment::BodyPages(_))));
            // a long payload or pages stay a segment of their own (no copy)
            assert_eq!(r.segments.len() > 1, kept);
            let mut want = Encoder::new();
            want.u32(1);
            want.opaque(&plain);
            want.u32(2);
            let want = want.finish().to_bytes();
            assert_eq!(r.to_bytes(), want);
            assert_eq!(r.wire_len(), want.len());
            // a kept copy stays out of Write chunks too, padding included
            let d = r.detached().unwrap();
            assert!(d.segments.iter().all(|s| matches!(s, Segment::Inline(_))));
            assert_eq!(d.to_bytes(), want);
        }
        let mut e = Encoder::new();
        e.opaque_body_payload(Payload::Pages(pages.clone()));
        assert_eq!(e.finish().segments[1], Segment::BodyPages(pages));
    }

    proptest! {
        #[test]
        fn roundtrip_scalars(a: u32, b: u64, c: i32, d: i64, f: bool) {
            let mut e = Encoder::new();
            e.u32(a); e.u64(b); e.i32(c); e.i64(d); e.bool(f);
            let mut x = Decoder::new(e.finish().to_bytes());
            prop_assert_eq!(x.u32().unwrap(), a);
            prop_assert_eq!(x.u64().unwrap(), b);
            prop_assert_eq!(x.i32().unwrap(), c);
            prop_assert_eq!(x.i64().unwrap(), d);
            prop_assert_eq!(x.bool().unwrap(), f);
            prop_assert_eq!(x.remaining(), 0);
        }

        #[test]
        fn roundtrip_opaque(v in proptest::collection::vec(any::<u8>(), 0..300), bulk: bool) {
            let mut e = Encoder::new();
            if bulk { e.opaque_bulk(Bytes::from(v.clone())) } else { e.opaque(&v) }
            e.u32(0xdead_beef);
            let flat = e.finish().to_bytes();
            prop_assert_eq!(flat.len() % 4, 0);
            let mut x = Decoder::new(flat);
            prop_assert_eq!(&x.opaque(300).unwrap()[..], &v[..]);
            prop_assert_eq!(x.u32().unwrap(), 0xdead_beef);
        }

        #[test]
        fn appending_keeps_the_bytes_and_every_bulk_payload_apart(
            parts in proptest::collection::vec(
                (proptest::collection::vec(any::<u8>(), 0..1500), any::<bool>()), 0..8),
            head: u32,
        ) {
            // What a COMPOUND does: each operation encodes on its own, the results are appended
            // to a body that is appended after a header.
            let mut flat = Encoder::new();
            let mut body = Encoder::new();
            let mut payloads = Vec::new();
            for (i, (bytes, bulk)) in parts.iter().enumerate() {
                body.u32(0);
                flat.u32(0);
                let mut op = Encoder::new();
                op.u32(i as u32);
                flat.u32(i as u32);
                if *bulk {
                    op.opaque_bulk(Bytes::from(bytes.clone()));
                    payloads.push(bytes.clone());
                } else {
                    op.opaque(bytes);
                }
                flat.opaque(bytes);
                body.append(op.finish());
            }
            let mut out = Encoder::new();
            out.u32(head);
            out.append(body.finish());
            let r = out.finish();
            let mut want = Encoder::new();
            want.u32(head);
            want.append(flat.finish());
            prop_assert_eq!(r.to_bytes(), want.finish().to_bytes());
            let bulk: Vec<Vec<u8>> = r.segments.iter()
                .filter_map(|s| match s { Segment::Bulk(b) => Some(b.to_vec()), _ => None })
                .collect();
            prop_assert_eq!(bulk, payloads);
        }

        #[test]
        fn decoding_garbage_never_panics(v in proptest::collection::vec(any::<u8>(), 0..64)) {
            let mut x = dec(v);
            let _ = x.array(8, 4, |d| d.opaque(16));
            let _ = x.string(32);
            let _ = x.optional(|d| d.u64());
        }
    }
}
