//! NFSv4.2 (RFC 7862) with the raw COMPOUND client: READ_PLUS and SEEK on sparse files,
//! ALLOCATE / DEALLOCATE and their effect on the file's allocation, server-side COPY.

// System calls the tests make themselves (signals, limits, device nodes, holes, credentials)
// to set up and check what they test.
#![allow(unsafe_code)]

mod common;

use std::io::Read;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::Path;

use common::nfs4_raw::*;
use common::*;
use nfs4wire::*;

const K64: u64 = 64 * 1024;
const MIB: u64 = 1 << 20;
/// Four times 64 KiB of data followed by 64 KiB of hole: 512 KiB, ending in a hole.
const SPARSE_SIZE: u64 = 8 * K64;

/// Writes the sparse test file with std; returns its expected content.
fn make_sparse(path: &Path) -> Vec<u8> {
    let f = std::fs::File::create(path).unwrap();
    let mut want = vec![0u8; SPARSE_SIZE as usize];
    for i in 0..4u64 {
        let off = i * 2 * K64;
        let data = pattern(100 + i, K64 as usize);
        f.write_all_at(&data, off).unwrap();
        want[off as usize..(off + K64) as usize].copy_from_slice(&data);
    }
    f.set_len(SPARSE_SIZE).unwrap();
    f.sync_all().unwrap();
    want
}

/// Whether the local file system reports a hole at `off` of `path` (SEEK_HOLE).
fn has_hole_at(path: &Path, off: u64) -> bool {
    use std::os::fd::AsRawFd;
    let f = std::fs::File::open(path).unwrap();
    // SAFETY: lseek on a descriptor we own.
    let r = unsafe { libc::lseek(f.as_raw_fd(), off as i64, libc::SEEK_HOLE) };
    r == off as i64
}

/// Merges adjacent segments of the same kind (a server may split extents anywhere).
fn normalize(segs: &[ReadPlusContent]) -> Vec<(bool, u64, u64)> {
    let mut out: Vec<(bool, u64, u64)> = Vec::new();
    for s in segs {
        let (data, off, len) = match s {
            ReadPlusContent::Nfs4ContentData(d) => (true, d.d_offset, d.d_data.len() as u64),
            ReadPlusContent::Nfs4ContentHole(h) => (false, h.di_offset, h.di_length),
            ReadPlusContent::Default(t) => panic!("READ_PLUS content {t:?}"),
        };
        if let Some(last) = out.last_mut() {
            assert_eq!(
                last.1 + last.2,
                off,
                "segments not contiguous: {out:?} then {s:?}"
            );
            if last.0 == data {
                last.2 += len;
                continue;
            }
        }
        out.push((data, off, len));
    }
    out
}

fn read_plus(
    c: &mut V4,
    fh: &[u8],
    sid: &Stateid4,
    offset: u64,
    count: u32,
) -> (bool, Vec<ReadPlusContent>) {
    let r = c
        .call(Ops::new().putfh(fh).read_plus(sid, offset, count))
        .ok("READ_PLUS");
    let ok = r.get(NfsOpnum4::OP_READ_PLUS).read_plus();
    (ok.rpr_eof, ok.rpr_contents.clone())
}

/// Checks that the segments carry exactly `want[offset..offset + len]`.
fn check_content(segs: &[ReadPlusContent], want: &[u8], offset: u64) {
    let mut pos = offset;
    for s in segs {
        match s {
            ReadPlusContent::Nfs4ContentData(Data4 { d_offset, d_data }) => {
                assert_eq!(*d_offset, pos);
                let (o, data) = (*d_offset as usize, payload(d_data));
                assert!(
                    data[..] == want[o..o + data.len()],
                    "data segment at {d_offset} differs"
                );
                pos += data.len() as u64;
            }
            ReadPlusContent::Nfs4ContentHole(DataInfo4 {
                di_offset,
                di_length,
            }) => {
                assert_eq!(*di_offset, pos);
                let o = *di_offset as usize;
                let end = (o + *di_length as usize).min(want.len());
                assert!(
                    want[o..end].iter().all(|b| *b == 0),
                    "hole at {di_offset} over data"
                );
                pos += di_length;
            }
            ReadPlusContent::Default(t) => panic!("READ_PLUS content {t:?}"),
        }
    }
}

fn open_read(c: &mut V4, dir: &[u8], name: &str) -> (bytes::Bytes, Stateid4) {
    c.open_ok(
        dir,
        name,
        "reader",
        OPEN4_SHARE_ACCESS_READ,
        OPEN4_SHARE_DENY_NONE,
        OpenHow::NoCreate,
    )
}

#[test]
fn read_plus_returns_data_and_hole_segments() {
    let fx = Fixture::with_metrics();
    let path = fx.export.join("sparse");
    let want = make_sparse(&path);
    assert!(
        has_hole_at(&path, K64),
        "the test file system does not keep holes"
    );
    let hole_path = fx.export.join("all-hole");
    let hole_size = 64 * MIB;
    std::fs::File::create(&hole_path)
        .unwrap()
        .set_len(hole_size)
        .unwrap();

    let mut c = V4::session(fx.server.port, 2, "read-plus");
    let dir = c.path_fh(&fx.export);
    let (fh, sid) = open_read(&mut c, &dir, "sparse");
    let mut compounds = 5; // RECLAIM_COMPLETE, LOOKUP, OPEN (and EXCHANGE_ID, CREATE_SESSION)
    let mut data_bytes = 0u64;

    // The whole file: D H D H D H D H.
    let (eof, segs) = read_plus(&mut c, &fh, &sid, 0, SPARSE_SIZE as u32);
    compounds += 1;
    assert!(eof, "READ_PLUS of the whole file without eof");
    check_content(&segs, &want, 0);
    let mut expect = Vec::new();
    for i in 0..4u64 {
        expect.push((true, 2 * i * K64, K64));
        expect.push((false, (2 * i + 1) * K64, K64));
    }
    assert_eq!(normalize(&segs), expect, "segments: {segs:?}");
    data_bytes += 4 * K64;

    // Ranges that start or end inside an extent.
    for (off, count, seg_want, eof_want) in [
        (
            K64 / 2,
            K64,
            vec![(true, K64 / 2, K64 / 2), (false, K64, K64 / 2)],
            false,
        ),
        (
            K64 + K64 / 2,
            K64,
            vec![(false, K64 + K64 / 2, K64 / 2), (true, 2 * K64, K64 / 2)],
            false,
        ),
        (
            7 * K64 + 10,
            K64,
            vec![(false, 7 * K64 + 10, K64 - 10)],
            true,
        ),
        (SPARSE_SIZE, K64, vec![], true),
        (SPARSE_SIZE + MIB, K64, vec![], true),
    ] {
        let (eof, segs) = read_plus(&mut c, &fh, &sid, off, count as u32);
        compounds += 1;
        check_content(&segs, &want, off);
        assert_eq!(normalize(&segs), seg_want, "READ_PLUS at {off}+{count}");
        assert_eq!(eof, eof_want, "eof of READ_PLUS at {off}+{count}");
        data_bytes += seg_want.iter().filter(|s| s.0).map(|s| s.2).sum::<u64>();
    }
    c.close_ok(&fh, &sid);

    // A file that is one 64 MiB hole: only HOLE segments, covering it all, in 1 MiB reads.
    let (hfh, hsid) = open_read(&mut c, &dir, "all-hole");
    let mut pos = 0u64;
    let mut calls = 0;
    loop {
        let (eof, segs) = read_plus(&mut c, &hfh, &hsid, pos, MIB as u32);
        calls += 1;
        compounds += 1;
        assert!(!segs.is_empty() || eof, "no segments at {pos} before eof");
        for s in &segs {
            match s {
                ReadPlusContent::Nfs4ContentHole(h) => {
                    assert_eq!(h.di_offset, pos, "hole segment not contiguous");
                    assert!(h.di_length > 0);
                    pos += h.di_length;
                }
                ReadPlusContent::Nfs4ContentData(d) => panic!(
                    "DATA segment at {} ({} bytes) in a hole",
                    d.d_offset,
                    d.d_data.len()
                ),
                ReadPlusContent::Default(t) => panic!("READ_PLUS content {t:?}"),
            }
        }
        if eof {
            break;
        }
        assert!(calls <= 64, "READ_PLUS does not advance");
    }
    assert!(pos >= hole_size, "holes cover {pos} of {hole_size}");
    c.close_ok(&hfh, &hsid);

    // The metrics endpoint counts COMPOUNDs; READ_PLUS payload bytes are reported if exported.
    let text = http_get(fx.server.metrics.unwrap(), "/metrics");
    let line = r#"rnfs_rpc_calls_total{program="nfs",proc="COMPOUND"}"#;
    let n = metric(&text, line).unwrap_or_else(|| panic!("{line} missing:\n{text}"));
    assert!(n >= compounds, "COMPOUND count {n} < {compounds}");
    match text
        .lines()
        .find(|l| l.contains("read_plus") && !l.starts_with('#'))
    {
        Some(l) => {
            let v: f64 = l.rsplit(' ').next().unwrap().parse().unwrap();
            assert_eq!(v as u64, data_bytes, "READ_PLUS data bytes metric: {l}");
        }
        None => eprintln!("note: no READ_PLUS metric exported (data bytes sent: {data_bytes})"),
    }
}

#[test]
fn seek_data_and_hole() {
    let fx = Fixture::new();
    let path = fx.export.join("sparse");
    make_sparse(&path);
    std::fs::write(fx.export.join("dense"), vec![1u8; 10_000]).unwrap();
    let mut c = V4::session(fx.server.port, 2, "seek");
    let dir = c.path_fh(&fx.export);
    let (fh, sid) = open_read(&mut c, &dir, "sparse");
    let seek = |c: &mut V4, fh: &[u8], off: u64, what: DataContent4| {
        let r = c.call(Ops::new().putfh(fh).seek(&sid, off, what));
        match &r.last().res {
            NfsResop4::OpSeek(Seek4res::Nfs4Ok(s)) => Ok((s.sr_eof, s.sr_offset)),
            _ => Err(r.status),
        }
    };
    // (from, what, expected offset)
    for (from, what, at) in [
        (0, DataContent4::Nfs4ContentData, 0),
        (0, DataContent4::Nfs4ContentHole, K64),
        (10, DataContent4::Nfs4ContentHole, K64),
        (K64, DataContent4::Nfs4ContentData, 2 * K64),
        (K64 + 7, DataContent4::Nfs4ContentData, 2 * K64),
        (K64 + 7, DataContent4::Nfs4ContentHole, K64 + 7),
        (2 * K64 + 5, DataContent4::Nfs4ContentHole, 3 * K64),
        (6 * K64, DataContent4::Nfs4ContentHole, 7 * K64),
        (7 * K64 + 100, DataContent4::Nfs4ContentHole, 7 * K64 + 100),
    ] {
        assert_eq!(
            seek(&mut c, &fh, from, what),
            Ok((false, at)),
            "SEEK {} from {from}",
            if what == DataContent4::Nfs4ContentData {
                "DATA"
            } else {
                "HOLE"
            }
        );
    }
    // No data after the last data extent: eof.
    let r = seek(&mut c, &fh, 7 * K64, DataContent4::Nfs4ContentData)
        .expect("SEEK DATA in the trailing hole");
    assert!(r.0, "SEEK DATA in the trailing hole without eof: {r:?}");
    // At or beyond the end of the file: NFS4ERR_NXIO (RFC 7862 section 15.11.3).
    assert_eq!(
        seek(&mut c, &fh, SPARSE_SIZE, DataContent4::Nfs4ContentData),
        Err(Nfsstat4::NFS4ERR_NXIO)
    );
    assert_eq!(
        seek(&mut c, &fh, SPARSE_SIZE + 1, DataContent4::Nfs4ContentHole),
        Err(Nfsstat4::NFS4ERR_NXIO)
    );
    c.close_ok(&fh, &sid);

    // A file without holes has only the implicit hole at its end.
    let (dfh, dsid) = open_read(&mut c, &dir, "dense");
    let r = c
        .call(
            Ops::new()
                .putfh(&dfh)
                .seek(&dsid, 100, DataContent4::Nfs4ContentHole),
        )
        .ok("SEEK HOLE in a dense file");
    assert_eq!(
        r.last().seek(),
        &SeekRes4 {
            sr_eof: true,
            sr_offset: 10_000
        }
    );
    c.close_ok(&dfh, &dsid);
}

#[test]
fn allocate_then_deallocate_changes_allocation() {
    let fx = Fixture::new();
    let path = fx.export.join("alloc");
    let mut c = V4::session(fx.server.port, 2, "alloc");
    let dir = c.path_fh(&fx.export);
    let (fh, sid) = c.open_ok(
        &dir,
        "alloc",
        "writer",
        OPEN4_SHARE_ACCESS_BOTH,
        OPEN4_SHARE_DENY_NONE,
        OpenHow::Unchecked(Sattr::mode(0o644)),
    );
    let blocks = |p: &Path| std::fs::metadata(p).unwrap().blocks();
    assert_eq!(blocks(&path), 0);

    // ALLOCATE reserves the space and extends the file.
    c.call(Ops::new().putfh(&fh).allocate(&sid, 0, 8 * MIB))
        .ok("ALLOCATE");
    let md = std::fs::metadata(&path).unwrap();
    assert_eq!(md.len(), 8 * MIB, "size after ALLOCATE");
    let allocated = md.blocks();
    assert!(
        allocated * 512 >= 8 * MIB,
        "ALLOCATE left {allocated} blocks"
    );
    let data = pattern(7, 3 * MIB as usize);
    c.write_all(&fh, &sid, 0, &data);
    let a = c.getattr(&fh, &[FATTR4_SIZE, FATTR4_SPACE_USED]);
    assert_eq!(a.size, Some(8 * MIB));
    assert!(a.space_used.unwrap() >= 8 * MIB, "space_used {a:?}");

    // DEALLOCATE punches a hole: fewer blocks, same size, zeros where the data was.
    c.call(Ops::new().putfh(&fh).deallocate(&sid, 2 * MIB, 4 * MIB))
        .ok("DEALLOCATE");
    let md = std::fs::metadata(&path).unwrap();
    assert_eq!(md.len(), 8 * MIB, "DEALLOCATE changed the size");
    assert!(
        md.blocks() * 512 <= allocated * 512 - 4 * MIB,
        "blocks {} after DEALLOCATE of 4 MiB, {allocated} before",
        md.blocks()
    );
    let a2 = c.getattr(&fh, &[FATTR4_SIZE, FATTR4_SPACE_USED]);
    assert!(
        a2.space_used.unwrap() + 4 * MIB <= a.space_used.unwrap(),
        "space_used {:?} -> {:?}",
        a.space_used,
        a2.space_used
    );
    let mut content = Vec::new();
    std::fs::File::open(&path)
        .unwrap()
        .read_to_end(&mut content)
        .unwrap();
    assert!(content[..2 * MIB as usize] == data[..2 * MIB as usize]);
    assert!(content[2 * MIB as usize..].iter().all(|b| *b == 0));
    let r = c
        .call(
            Ops::new()
                .putfh(&fh)
                .seek(&sid, 0, DataContent4::Nfs4ContentHole),
        )
        .ok("SEEK HOLE after DEALLOCATE");
    assert_eq!(
        r.last().seek(),
        &SeekRes4 {
            sr_eof: false,
            sr_offset: 2 * MIB
        }
    );

    // Both need a stateid open for writing.
    let (_, rsid) = c.open_ok(
        &dir,
        "alloc",
        "reader",
        OPEN4_SHARE_ACCESS_READ,
        OPEN4_SHARE_DENY_NONE,
        OpenHow::NoCreate,
    );
    for ops in [
        Ops::new().putfh(&fh).allocate(&rsid, 0, MIB),
        Ops::new().putfh(&fh).deallocate(&rsid, 0, MIB),
    ] {
        let r = c.call(ops);
        assert_eq!(r.status, Nfsstat4::NFS4ERR_OPENMODE, "{}", r.summary());
    }
    assert!(std::fs::read(&path).unwrap()[..MIB as usize] == data[..MIB as usize]);
    c.close_ok(&fh, &sid);
}

#[test]
fn copy_between_files() {
    let fx = Fixture::new();
    let src_data = pattern(21, MIB as usize);
    std::fs::write(fx.export.join("src"), &src_data).unwrap();
    let mut c = V4::session(fx.server.port, 2, "copy");
    let dir = c.path_fh(&fx.export);
    let (sfh, ssid) = open_read(&mut c, &dir, "src");
    let (dfh, dsid) = c.open_ok(
        &dir,
        "dst",
        "writer",
        OPEN4_SHARE_ACCESS_BOTH,
        OPEN4_SHARE_DENY_NONE,
        OpenHow::Guarded(Sattr::mode(0o644)),
    );
    let copy = |c: &mut V4, so: u64, d_o: u64, n: u64| {
        c.call(
            Ops::new()
                .putfh(&sfh)
                .savefh()
                .putfh(&dfh)
                .copy(&ssid, &dsid, so, d_o, n),
        )
    };
    let r = copy(&mut c, 0, 0, MIB).ok("COPY");
    let ok = r.last().copy();
    assert_eq!(ok.cr_response.wr_count, MIB);
    assert_eq!(
        ok.cr_response.wr_callback_id.len(),
        0,
        "synchronous COPY with a callback id"
    );
    assert!(ok.cr_requirements.cr_synchronous);
    let dst = std::fs::read(fx.export.join("dst")).unwrap();
    assert_eq!(dst.len(), src_data.len());
    assert!(dst == src_data, "copied content differs");

    // A range into the middle and past the end of the destination.
    copy(&mut c, 4096, MIB - 100, 65536).ok("COPY range");
    let dst = std::fs::read(fx.export.join("dst")).unwrap();
    assert_eq!(dst.len() as u64, MIB - 100 + 65536);
    assert!(dst[..(MIB - 100) as usize] == src_data[..(MIB - 100) as usize]);
    assert!(dst[(MIB - 100) as usize..] == src_data[4096..4096 + 65536]);

    // Beyond the source's end: NFS4ERR_INVAL (RFC 7862 section 15.2.3).
    let r = copy(&mut c, MIB - 10, 0, 100);
    assert_eq!(r.status, Nfsstat4::NFS4ERR_INVAL, "{}", r.summary());
    // The destination needs write access.
    let r = c.call(
        Ops::new()
            .putfh(&sfh)
            .savefh()
            .putfh(&sfh)
            .copy(&ssid, &ssid, 0, 0, 10),
    );
    assert_ne!(
        r.status,
        Nfsstat4::NFS4_OK,
        "COPY onto a file opened read-only"
    );
    c.close_ok(&sfh, &ssid);
    c.close_ok(&dfh, &dsid);
}

/// Reads a whole file with READ_PLUS in 1 MiB requests and rebuilds its bytes.
fn read_plus_whole(c: &mut V4, fh: &[u8], sid: &Stateid4, size: u64) -> Vec<u8> {
    let mut out = vec![0u8; size as usize];
    let mut pos = 0u64;
    loop {
        let (eof, segs) = read_plus(c, fh, sid, pos, MIB as u32);
        let mut next = pos;
        for s in &segs {
            match s {
                ReadPlusContent::Nfs4ContentData(d) => {
                    let o = d.d_offset as usize;
                    out[o..o + d.d_data.len()].copy_from_slice(payload(&d.d_data));
                    next = next.max(d.d_offset + d.d_data.len() as u64);
                }
                ReadPlusContent::Nfs4ContentHole(h) => next = next.max(h.di_offset + h.di_length),
                ReadPlusContent::Default(t) => panic!("READ_PLUS content {t:?}"),
            }
        }
        if eof || next >= size {
            break;
        }
        assert!(next > pos, "READ_PLUS does not advance at {pos}");
        pos = next;
    }
    out
}

/// The issue's sparse criteria on loopback: a 1 GiB file that is all hole reads back as zeros
/// while the server sends under 1 MiB of READ_PLUS data, and a file of alternating 64 KiB data
/// and holes reads back identical.
#[test]
fn read_plus_gib_hole_costs_no_payload_and_alternating_file_is_identical() {
    let fx = Fixture::with_metrics();
    let hole = fx.export.join("gib-hole");
    std::fs::File::create(&hole)
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    let alt = fx.export.join("alternating");
    let f = std::fs::File::create(&alt).unwrap();
    let size = 8 * MIB;
    let mut want = vec![0u8; size as usize];
    let mut off = 0;
    while off < size {
        let chunk: Vec<u8> = (0..K64)
            .map(|i| (i as u8) ^ (off / K64) as u8 | 1)
            .collect();
        f.write_all_at(&chunk, off).unwrap();
        want[off as usize..(off + K64) as usize].copy_from_slice(&chunk);
        off += 2 * K64;
    }
    f.set_len(size).unwrap();
    drop(f);
    assert!(
        has_hole_at(&alt, K64),
        "the test file system does not keep holes"
    );

    let metrics = fx.server.metrics.unwrap();
    let data_metric = "rnfs_nfs4_read_plus_data_bytes_total";
    let before = metric(&http_get(metrics, "/metrics"), data_metric).unwrap_or(0);
    let mut c = V4::session(fx.server.port, 2, "gib-hole");
    let dir = c.path_fh(&fx.export);
    let (fh, sid) = open_read(&mut c, &dir, "gib-hole");
    let got = read_plus_whole(&mut c, &fh, &sid, 1 << 30);
    assert!(
        got.iter().all(|b| *b == 0),
        "the hole did not read as zeros"
    );
    c.close_ok(&fh, &sid);
    let after = metric(&http_get(metrics, "/metrics"), data_metric)
        .unwrap_or_else(|| panic!("{data_metric} not exported"));
    assert!(
        after - before < MIB,
        "1 GiB of hole cost {} bytes of READ_PLUS data",
        after - before
    );

    let (fh, sid) = open_read(&mut c, &dir, "alternating");
    let got = read_plus_whole(&mut c, &fh, &sid, size);
    assert!(got == want, "alternating data/hole file differs");
    c.close_ok(&fh, &sid);
}

/// READ_PLUS and READ of a file without holes, with READ data spliced from the page cache: the
/// same bytes, one data segment, EOF where the file ends; a sparse file still has its holes.
#[test]
fn read_plus_and_read_spliced_from_the_page_cache() {
    let fx = Fixture::with_args(&["--splice-reads", "always"]);
    let size = 3 * MIB + 777;
    let want: Vec<u8> = (0..size).map(|i| (i % 253) as u8 | 1).collect();
    std::fs::write(fx.export.join("dense"), &want).unwrap();
    let sparse = make_sparse(&fx.export.join("sparse"));
    let mut c = V4::session(fx.server.port, 2, "spliced");
    let dir = c.path_fh(&fx.export);
    let (fh, sid) = open_read(&mut c, &dir, "dense");
    for (off, count) in [(0, MIB), (4096, MIB), (size - 100, MIB), (MIB, K64 + 3)] {
        let (eof, segs) = read_plus(&mut c, &fh, &sid, off, count as u32);
        assert_eq!(segs.len(), 1, "one data segment at {off}");
        check_content(&segs, &want, off);
        let end = (off + count).min(size);
        assert!(
            matches!(&segs[0], ReadPlusContent::Nfs4ContentData(d) if d.d_data.len() as u64 == end - off)
        );
        assert_eq!(eof, end == size, "eof at {off}");
        let r = c
            .call(Ops::new().putfh(&fh).read(&sid, off, count as u32))
            .ok("READ");
        let ok = r.get(NfsOpnum4::OP_READ).read();
        assert!(
            payload(&ok.data)[..] == want[off as usize..end as usize],
            "READ at {off}"
        );
        assert_eq!(ok.eof, end == size);
    }
    assert!(read_plus_whole(&mut c, &fh, &sid, size) == want);
    c.close_ok(&fh, &sid);
    let (sfh, ssid) = open_read(&mut c, &dir, "sparse");
    let (_, segs) = read_plus(&mut c, &sfh, &ssid, 0, MIB as u32);
    assert!(
        segs.iter()
            .any(|s| matches!(s, ReadPlusContent::Nfs4ContentHole(_))),
        "the sparse file's holes are kept"
    );
    check_content(&segs, &sparse, 0);
    c.close_ok(&sfh, &ssid);
}
