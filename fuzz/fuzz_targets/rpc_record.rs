//! RPC record marking: `sunrpc::record::RecordReader` fed a byte stream in arbitrary chunks.
//!
//! Input: 2 bytes of maximum record size (0..=65535 plus 16), 1 byte seeding the chunk sizes,
//! then the stream. Checks: no panic; the records and the final error (if any) do not depend
//! on how the stream is cut into reads, and equal those of a plain reference parser; `wanted`
//! asks for at least one byte whenever `next_record` needs more.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use sunrpc::record::{RecordError, RecordReader, LAST_FRAGMENT};

#[derive(Debug, PartialEq)]
enum End {
    NeedMore,
    Error(RecordError),
}

/// Feeds `stream` in the chunks given by `sizes` (cycled); returns the records and the end.
fn run(stream: &[u8], max: usize, sizes: &[usize]) -> (Vec<Vec<u8>>, End) {
    let mut r = RecordReader::new(max);
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    let mut pos = 0;
    let mut i = 0;
    loop {
        loop {
            match r.next_record(&mut buf) {
                Ok(Some(rec)) => {
                    assert!(rec.len() <= max, "record over the maximum");
                    out.push(rec.to_vec());
                }
                Ok(None) => {
                    assert!(
                        r.wanted(&buf) > 0,
                        "wanted() is 0 while a record is incomplete"
                    );
                    break;
                }
                Err(e) => return (out, End::Error(e)),
            }
        }
        if pos == stream.len() {
            return (out, End::NeedMore);
        }
        let n = sizes[i % sizes.len()].clamp(1, stream.len() - pos);
        i += 1;
        buf.extend_from_slice(&stream[pos..pos + n]);
        pos += n;
    }
}

/// The reference: records of RFC 5531 section 11 with the reader's checks, in its order.
fn reference(stream: &[u8], max: usize) -> (Vec<Vec<u8>>, End) {
    let mut out = Vec::new();
    let mut partial: Vec<u8> = Vec::new();
    let mut rest = stream;
    loop {
        if rest.len() < 4 {
            return (out, End::NeedMore);
        }
        let hdr = u32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]);
        let last = hdr & LAST_FRAGMENT != 0;
        let len = (hdr & !LAST_FRAGMENT) as usize;
        let total = partial.len() + len;
        if total > max {
            return (out, End::Error(RecordError::TooLarge { len: total, max }));
        }
        if !last && len == 0 {
            return (out, End::Error(RecordError::EmptyFragment));
        }
        if rest.len() < 4 + len {
            return (out, End::NeedMore);
        }
        partial.extend_from_slice(&rest[4..4 + len]);
        rest = &rest[4 + len..];
        if last {
            out.push(std::mem::take(&mut partial));
        }
    }
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 3 {
        return;
    }
    let max = u16::from_be_bytes([data[0], data[1]]) as usize + 16;
    let seed = data[2];
    let stream = &data[3..];
    let want = reference(stream, max);
    let whole = run(stream, max, &[usize::MAX]);
    assert_eq!(whole, want, "whole stream differs from the reference");
    let bytewise = run(stream, max, &[1]);
    assert_eq!(bytewise, want, "byte-by-byte feeding differs");
    let sizes: Vec<usize> = (0..7u32)
        .map(|k| 1 + ((u32::from(seed).wrapping_mul(2654435761).rotate_left(k * 5)) % 97) as usize)
        .collect();
    let chunked = run(stream, max, &sizes);
    assert_eq!(chunked, want, "chunked feeding differs");
});
