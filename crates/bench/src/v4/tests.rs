//! The typed NFSv4 client against hand-made replies: zero-copy data, errors by name, pairing of
//! results with their operations.

use super::*;

/// A COMPOUND4res as the server sends it: SEQUENCE's result, then `rest`.
fn reply(status: w::Nfsstat4, rest: Vec<w::NfsResop4>) -> Bytes {
    let mut resarray = vec![w::NfsResop4::OpSequence(w::Sequence4res::Nfs4Ok(
        w::Sequence4resok {
            sr_sessionid: [1; 16],
            sr_sequenceid: 1,
            sr_slotid: 0,
            sr_highest_slotid: 0,
            sr_target_highest_slotid: 0,
            sr_status_flags: 0,
        },
    ))];
    resarray.extend(rest);
    let c = w::Compound4res {
        status,
        tag: Bytes::new(),
        resarray,
    };
    let mut e = xdr::Encoder::new();
    c.encode(&mut e);
    e.finish().to_bytes()
}

fn putfh_ok() -> w::NfsResop4 {
    w::NfsResop4::OpPutfh(w::Putfh4res {
        status: w::Nfsstat4::NFS4_OK,
    })
}

/// `b`'s bytes lie inside `buf`.
fn inside(b: &Bytes, buf: &Bytes) -> bool {
    let r = buf.as_ptr() as usize..buf.as_ptr() as usize + buf.len();
    r.contains(&(b.as_ptr() as usize)) && r.contains(&(b.as_ptr() as usize + b.len() - 1))
}

#[test]
fn write_data_goes_out_as_a_segment_of_its_own() {
    let data = Bytes::from(vec![7u8; 4096]);
    let ops = Ops::new().putfh(&Bytes::from_static(b"fh")).write(
        &Stateid::CURRENT,
        0,
        w::StableHow4::Unstable4,
        data.clone(),
    );
    let seq = w::Sequence4args {
        sa_sessionid: [1; 16],
        sa_sequenceid: 1,
        sa_slotid: 0,
        sa_highest_slotid: 0,
        sa_cachethis: false,
    };
    let (c, expect) = ops.into_compound(1, seq);
    assert_eq!(expect, Expect::Small);
    let mut e = xdr::Encoder::new();
    c.encode(&mut e);
    let m = e.finish();
    let bulk: Vec<_> = m
        .segments
        .iter()
        .filter_map(|s| match s {
            xdr::Segment::Bulk(b) => Some(b.as_ptr()),
            _ => None,
        })
        .collect();
    assert_eq!(bulk, [data.as_ptr()], "the caller's buffer, not a copy");
    let back = w::Compound4args::decode(&mut Decoder::new(m.to_bytes())).unwrap();
    assert_eq!(back, c);
}

#[test]
fn read_and_read_plus_data_are_slices_of_the_reply() {
    let wire = reply(
        w::Nfsstat4::NFS4_OK,
        vec![
            putfh_ok(),
            w::NfsResop4::OpRead(w::Read4res::Nfs4Ok(w::Read4resok {
                eof: true,
                data: xdr::Payload::Bytes(Bytes::from(vec![5u8; 1000])),
            })),
        ],
    );
    let mut r = Res::new("READ", wire.clone()).unwrap();
    assert!(matches!(r.take().unwrap(), w::Sequence4res::Nfs4Ok(_)));
    r.skip::<w::Putfh4res>().unwrap();
    let (data, eof) = r.read().unwrap();
    assert!(eof && data.len() == 1000 && inside(&data, &wire));

    let wire = reply(
        w::Nfsstat4::NFS4_OK,
        vec![
            putfh_ok(),
            w::NfsResop4::OpReadPlus(w::ReadPlus4res::Nfs4Ok(w::ReadPlusRes4 {
                rpr_eof: false,
                rpr_contents: vec![
                    w::ReadPlusContent::Nfs4ContentData(w::Data4 {
                        d_offset: 0,
                        d_data: xdr::Payload::Bytes(Bytes::from(vec![1u8; 300])),
                    }),
                    w::ReadPlusContent::Nfs4ContentHole(w::DataInfo4 {
                        di_offset: 300,
                        di_length: 700,
                    }),
                ],
            })),
        ],
    );
    let mut r = Res::new("READ_PLUS", wire).unwrap();
    let _: w::Sequence4res = r.take().unwrap();
    r.skip::<w::Putfh4res>().unwrap();
    let p = r.read_plus().unwrap();
    assert_eq!((p.data, p.holes, p.eof), (300, 700, false));
}

#[test]
fn the_failed_operation_is_named_with_its_status() {
    let wire = reply(
        w::Nfsstat4::NFS4ERR_NOENT,
        vec![
            putfh_ok(),
            w::NfsResop4::OpLookup(w::Lookup4res {
                status: w::Nfsstat4::NFS4ERR_NOENT,
            }),
        ],
    );
    let mut r = Res::new("LOOKUP", wire).unwrap();
    let _: w::Sequence4res = r.take().unwrap();
    r.skip::<w::Putfh4res>().unwrap();
    let e = r.skip::<w::Lookup4res>().unwrap_err();
    assert_eq!(e.0, "LOOKUP: OP_LOOKUP failed with NFS4ERR_NOENT");
    // Nothing follows the failed operation.
    let e = r.getfh().unwrap_err();
    assert!(e.0.starts_with("LOOKUP: no result for OP_GETFH"), "{}", e.0);
}

#[test]
fn a_result_of_another_operation_is_refused() {
    let wire = reply(w::Nfsstat4::NFS4_OK, vec![putfh_ok()]);
    let mut r = Res::new("GETATTR", wire).unwrap();
    let _: w::Sequence4res = r.take().unwrap();
    let e = r.getattr().unwrap_err();
    assert_eq!(
        e.0,
        "GETATTR: result of OP_PUTFH where OP_GETATTR was expected"
    );
}
