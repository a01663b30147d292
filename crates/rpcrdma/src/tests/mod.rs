//! In-crate tests: codec round trips and byte-exact layouts, validation and dispositions,
//! private data, DDP planning and Read chunk splicing.

use bytes::Bytes;

use crate::header::{Header, Proc, RdmaSegment, ReadChunk, WriteChunk, RPCRDMA_VERSION};

mod ddp;
mod header;
mod private_data;
mod read_plan;
mod validation;

/// A segment.
fn seg(handle: u32, length: u32, offset: u64) -> RdmaSegment {
    RdmaSegment {
        handle,
        length,
        offset,
    }
}

/// Big-endian words as bytes.
fn words(ws: &[u32]) -> Vec<u8> {
    ws.iter().flat_map(|w| w.to_be_bytes()).collect()
}

/// `n` bytes of an RPC message whose first word is `xid`, the rest a recognisable pattern.
fn rpc_bytes(xid: u32, n: usize) -> Vec<u8> {
    let mut v: Vec<u8> = (0..n).map(|i| (i * 7 + 1) as u8).collect();
    if n >= 4 {
        v[..4].copy_from_slice(&xid.to_be_bytes());
    }
    v
}

/// A call header of the given type and chunks.
fn call(
    xid: u32,
    proc_: Proc,
    read_list: Vec<ReadChunk>,
    write_list: Vec<WriteChunk>,
    reply_chunk: Option<WriteChunk>,
) -> Header {
    Header {
        xid,
        vers: RPCRDMA_VERSION,
        credits: 128,
        proc_,
        read_list,
        write_list,
        reply_chunk,
    }
}

/// A received message: the encoded header followed by `inline`.
fn message(h: &Header, inline: &[u8]) -> Bytes {
    let mut v = h.encode().to_vec();
    v.extend_from_slice(inline);
    Bytes::from(v)
}
