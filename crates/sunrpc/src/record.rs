//! Record marking for RPC over byte streams (RFC 5531 section 11).
//!
//! A record is one or more fragments, each behind a 4-byte header whose top bit marks the last
//! fragment. The common single-fragment record is returned as a slice of the receive buffer; a
//! multi-fragment record is joined. The total is bounded by a configured maximum.

use bytes::{Buf, Bytes, BytesMut};

/// Bit that marks the last fragment of a record.
pub const LAST_FRAGMENT: u32 = 0x8000_0000;

/// Why the stream cannot be parsed further; the connection must be closed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    /// The record would exceed the configured maximum.
    #[error("record of at least {len} bytes exceeds the maximum {max}")]
    TooLarge {
        /// Bytes announced so far.
        len: usize,
        /// The configured maximum.
        max: usize,
    },
    /// A non-final fragment of length zero, which only a misbehaving peer sends.
    #[error("empty non-final fragment")]
    EmptyFragment,
}

/// Incremental parser that splits a byte stream into records.
#[derive(Debug)]
pub struct RecordReader {
    max_record: usize,
    /// Fragments of the record in progress, when it has more than one.
    partial: BytesMut,
    /// Whether `partial` holds fragments of an unfinished record.
    in_record: bool,
}

impl RecordReader {
    /// A parser that rejects records larger than `max_record` bytes.
    pub fn new(max_record: usize) -> Self {
        Self {
            max_record,
            partial: BytesMut::new(),
            in_record: false,
        }
    }

    /// The bytes needed before the next call to [`RecordReader::next_record`] can make progress,
    /// so the caller can size its next read (bounded by the maximum record size).
    pub fn wanted(&self, buf: &BytesMut) -> usize {
        if buf.len() < 4 {
            return 4 - buf.len();
        }
        let len = (u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) & !LAST_FRAGMENT) as usize;
        (4 + len.min(self.max_record)).saturating_sub(buf.len())
    }

    /// The length of the record `buf` begins when it is a single fragment of at least `min`
    /// bytes (within the maximum) not yet all in `buf`: the caller may then receive it into
    /// memory of its own, [`RecordReader::next_record`] having nothing to join.
    pub fn large_single(&self, buf: &BytesMut, min: usize) -> Option<usize> {
        if self.in_record || buf.len() < 4 {
            return None;
        }
        let hdr = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
        let len = (hdr & !LAST_FRAGMENT) as usize;
        (hdr & LAST_FRAGMENT != 0 && len >= min && len <= self.max_record && buf.len() < 4 + len)
            .then_some(len)
    }

    /// Whether a record has begun but is not complete (bytes of it in `buf` or fragments kept).
    pub fn mid_record(&self, buf: &BytesMut) -> bool {
        self.in_record || !buf.is_empty()
    }

    /// Takes the next complete record out of `buf`, or returns `Ok(None)` if more bytes are needed.
    pub fn next_record(&mut self, buf: &mut BytesMut) -> Result<Option<Bytes>, RecordError> {
        loop {
            if buf.len() < 4 {
                return Ok(None);
            }
            let hdr = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
            let last = hdr & LAST_FRAGMENT != 0;
            let len = (hdr & !LAST_FRAGMENT) as usize;
            let total = self.partial.len().saturating_add(len);
            if total > self.max_record {
                return Err(RecordError::TooLarge {
                    len: total,
                    max: self.max_record,
                });
            }
            if !last && len == 0 {
                return Err(RecordError::EmptyFragment);
            }
            if buf.len() < 4 + len {
                buf.reserve(4 + len - buf.len());
                return Ok(None);
            }
            buf.advance(4);
            let frag = buf.split_to(len);
            if last && !self.in_record {
                return Ok(Some(frag.freeze()));
            }
            self.partial.extend_from_slice(&frag);
            self.in_record = true;
            if last {
                self.in_record = false;
                return Ok(Some(std::mem::take(&mut self.partial).freeze()));
            }
        }
    }
}

/// The record-marking header for a single-fragment record of `len` bytes.
pub fn record_header(len: usize) -> [u8; 4] {
    (LAST_FRAGMENT | len as u32).to_be_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn frag(last: bool, data: &[u8]) -> Vec<u8> {
        let mut v = ((data.len() as u32) | if last { LAST_FRAGMENT } else { 0 })
            .to_be_bytes()
            .to_vec();
        v.extend_from_slice(data);
        v
    }

    #[test]
    fn single_fragment_is_zero_copy() {
        let mut buf = BytesMut::from(&frag(true, b"abcd")[..]);
        let base = buf.as_ptr() as usize;
        let mut r = RecordReader::new(1024);
        let rec = r.next_record(&mut buf).unwrap().unwrap();
        assert_eq!(&rec[..], b"abcd");
        assert_eq!(rec.as_ptr() as usize, base + 4);
        assert!(buf.is_empty());
    }

    #[test]
    fn multi_fragment_is_joined_and_joined_records_split() {
        let mut v = frag(false, b"ab");
        v.extend(frag(false, b"cd"));
        v.extend(frag(true, b"e"));
        v.extend(frag(true, b"xyz"));
        let mut buf = BytesMut::from(&v[..]);
        let mut r = RecordReader::new(1024);
        assert_eq!(&r.next_record(&mut buf).unwrap().unwrap()[..], b"abcde");
        assert_eq!(&r.next_record(&mut buf).unwrap().unwrap()[..], b"xyz");
        assert_eq!(r.next_record(&mut buf).unwrap(), None);
    }

    #[test]
    fn too_large_is_rejected_from_the_header() {
        let mut buf = BytesMut::from(&[0xff, 0xff, 0xff, 0xff][..]);
        let mut r = RecordReader::new(1 << 20);
        assert!(matches!(
            r.next_record(&mut buf),
            Err(RecordError::TooLarge { .. })
        ));
        // The sum of fragments counts too.
        let mut v = frag(false, &[0; 600]);
        v.extend(frag(true, &[0; 600]));
        let mut buf = BytesMut::from(&v[..]);
        let mut r = RecordReader::new(1000);
        assert!(matches!(
            r.next_record(&mut buf),
            Err(RecordError::TooLarge { .. })
        ));
    }

    #[test]
    fn empty_nonfinal_fragment_rejected() {
        let mut buf = BytesMut::from(&frag(false, b"")[..]);
        assert_eq!(
            RecordReader::new(100).next_record(&mut buf),
            Err(RecordError::EmptyFragment)
        );
    }

    proptest! {
        /// Any split of a stream into reads yields the same records.
        #[test]
        fn arbitrary_splits(records in proptest::collection::vec(
                proptest::collection::vec(proptest::collection::vec(any::<u8>(), 1..20), 1..4), 1..5),
            chunk in 1usize..17) {
            let mut stream = Vec::new();
            let mut expect = Vec::new();
            for rec in &records {
                let mut joined = Vec::new();
                for (i, f) in rec.iter().enumerate() {
                    stream.extend(frag(i + 1 == rec.len(), f));
                    joined.extend_from_slice(f);
                }
                expect.push(joined);
            }
            let mut r = RecordReader::new(1 << 16);
            let mut buf = BytesMut::new();
            let mut got = Vec::new();
            for c in stream.chunks(chunk) {
                buf.extend_from_slice(c);
                while let Some(rec) = r.next_record(&mut buf).unwrap() {
                    got.push(rec.to_vec());
                }
            }
            prop_assert_eq!(got, expect);
        }

        #[test]
        fn garbage_never_panics(v in proptest::collection::vec(any::<u8>(), 0..64)) {
            let mut buf = BytesMut::from(&v[..]);
            let mut r = RecordReader::new(256);
            while let Ok(Some(_)) = r.next_record(&mut buf) {}
        }
    }

    #[test]
    fn large_single_fragments_are_offered_whole() {
        let mut r = RecordReader::new(1 << 20);
        let big = frag(true, &vec![7u8; 100_000]);
        let mut buf = BytesMut::from(&big[..10]);
        assert_eq!(r.large_single(&buf, 65536), Some(100_000));
        assert_eq!(r.large_single(&buf, 100_001), None, "below the minimum");
        buf.extend_from_slice(&big[10..]);
        assert_eq!(r.large_single(&buf, 65536), None, "already all received");
        let mut buf = BytesMut::from(&frag(false, &vec![1u8; 70_000])[..20]);
        assert_eq!(r.large_single(&buf, 65536), None, "not the last fragment");
        // inside a multi-fragment record, never
        let mut two = frag(false, b"ab");
        two.extend_from_slice(&frag(true, &vec![2u8; 70_000])[..8]);
        buf = BytesMut::from(&two[..]);
        assert_eq!(r.next_record(&mut buf).unwrap(), None);
        assert_eq!(r.large_single(&buf, 65536), None);
        // and not beyond the maximum
        let r = RecordReader::new(80_000);
        let buf = BytesMut::from(&frag(true, &vec![3u8; 90_000])[..8]);
        assert_eq!(r.large_single(&buf, 65536), None);
    }
}
