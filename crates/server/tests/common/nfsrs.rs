//! Checks shared by the nfs-rs tests of every NFS version.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use nfs_rs::{Mount, Time};

/// Through `m`, truncates the 1000-byte file `fh` (all ones, at `path` on the server) to 100
/// bytes, extends it to 5000 (zeros after byte 100), sets atime and mtime with nanoseconds, and
/// checks each step on the server's file; returns the final attributes and the times set.
pub async fn truncate_extend_and_set_times(
    m: &dyn Mount,
    fh: &bytes::Bytes,
    path: &Path,
) -> (nfs_rs::Attr, Time, Time) {
    m.setattr(fh.clone(), None, None, None, None, Some(100), None, None)
        .await
        .expect("truncate");
    assert_eq!(std::fs::metadata(path).unwrap().len(), 100);
    m.setattr(fh.clone(), None, None, None, None, Some(5000), None, None)
        .await
        .expect("extend");
    let content = std::fs::read(path).unwrap();
    assert_eq!(content.len(), 5000);
    assert!(content[..100].iter().all(|b| *b == 1));
    assert!(content[100..].iter().all(|b| *b == 0));

    let at = Time {
        seconds: 1_000_000_000,
        nseconds: 123_456_789,
    };
    let mt = Time {
        seconds: 1_500_000_000,
        nseconds: 987_654_321,
    };
    m.setattr(fh.clone(), None, None, None, None, None, Some(at), Some(mt))
        .await
        .expect("set times");
    let md = std::fs::metadata(path).unwrap();
    assert_eq!((md.atime(), md.atime_nsec()), (1_000_000_000, 123_456_789));
    assert_eq!((md.mtime(), md.mtime_nsec()), (1_500_000_000, 987_654_321));
    let a = m.getattr(fh.clone()).await.expect("getattr");
    (a, at, mt)
}
