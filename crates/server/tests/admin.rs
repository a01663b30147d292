//! Running rnfsd as a service: exports reloaded while clients work (SIGHUP and the admin
//! socket), a broken exports file refused with file:line, the admin socket's listings and
//! eviction, and a SIGTERM that finishes the calls in flight.

mod common;

use std::path::Path;
use std::time::Duration;

use admin::{Request, Response};
use bytes::Bytes;
use common::nfs4_raw::*;
use common::*;
use nfs3wire::*;
use nfs4wire::*;

/// A server on an exports file in a temporary tree.
struct Service {
    tmp: tempfile::TempDir,
    file: std::path::PathBuf,
    server: Server,
}

impl Service {
    fn start(dirs: &[&str], line: impl Fn(&Path) -> String) -> Service {
        let tmp = tempfile::tempdir().unwrap();
        for d in dirs {
            mkdir_mode(&tmp.path().join(d), 0o777);
        }
        let file = tmp.path().join("exports");
        let text: String = dirs
            .iter()
            .map(|d| line(&tmp.path().join(d).canonicalize().unwrap()) + "\n")
            .collect();
        std::fs::write(&file, text).unwrap();
        let server = Server::with_exports_file(&tmp.path().join("state"), &file);
        Service { tmp, file, server }
    }

    fn dir(&self, d: &str) -> std::path::PathBuf {
        self.tmp.path().join(d).canonicalize().unwrap()
    }

    fn rewrite(&self, text: &str) {
        std::fs::write(&self.file, text).unwrap();
    }

    fn reload(&self) -> Response {
        self.server.admin(Request::Reload)
    }

    /// Waits until the log has a line containing `what` (at most 10 s).
    fn wait_log(&self, what: &str) -> String {
        let until = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let log = self.server.log_text();
            if let Some(l) = log.lines().find(|l| l.contains(what)) {
                return l.to_string();
            }
            assert!(
                std::time::Instant::now() < until,
                "no log line with {what:?}; log:\n{log}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn write(c: &mut RpcClient, fh: &NfsFh3, data: &'static [u8]) -> Write3res {
    c.write(fh, 0, Bytes::from_static(data), StableHow::FileSync)
}

#[test]
fn a_client_keeps_reading_while_its_exports_options_change_and_are_reloaded() {
    let s = Service::start(&["a"], |p| {
        format!("{} 127.0.0.1(rw,no_root_squash,insecure)", p.display())
    });
    let a = s.dir("a");
    std::fs::write(a.join("f"), b"before").unwrap();
    std::fs::set_permissions(
        a.join("f"),
        std::os::unix::fs::PermissionsExt::from_mode(0o666),
    )
    .unwrap();
    let mut c = s.server.client();
    let root = c.mnt_ok(&a);
    let f = c.lookup_ok(&root, "f");
    assert_eq!(write(&mut c, &f, b"BEFORE").status(), Nfsstat3::NFS3_OK);

    // read-only now, through SIGHUP, on the same connection
    s.rewrite(&format!(
        "{} 127.0.0.1(ro,no_root_squash,insecure)\n",
        a.display()
    ));
    s.server.signal(libc::SIGHUP);
    s.wait_log("reload: client rules changed");
    match c.read(&f, 0, 100) {
        Read3res::Ok(ok) => assert_eq!(ok.data.in_memory().map(|b| &b[..]), Some(&b"BEFORE"[..])),
        Read3res::Fail(s, _) => panic!("READ after the reload: {s:?}"),
    }
    assert_eq!(write(&mut c, &f, b"x").status(), Nfsstat3::NFS3ERR_ROFS);

    // and writable again through the admin socket
    s.rewrite(&format!(
        "{} 127.0.0.1(rw,no_root_squash,insecure)\n",
        a.display()
    ));
    match s.reload() {
        Response::Reloaded { changed, .. } => assert_eq!(changed, vec![a.display().to_string()]),
        other => panic!("{other:?}"),
    }
    assert_eq!(write(&mut c, &f, b"AFTER!").status(), Nfsstat3::NFS3_OK);
    assert_eq!(std::fs::read(a.join("f")).unwrap(), b"AFTER!");
}

#[test]
fn a_removed_export_answers_stale_and_a_new_one_mounts_without_a_restart() {
    let s = Service::start(&["a", "b"], |p| {
        format!("{} 127.0.0.1(rw,insecure)", p.display())
    });
    let (a, b) = (s.dir("a"), s.dir("b"));
    // only a is exported at first
    s.rewrite(&format!("{} 127.0.0.1(rw,insecure)\n", a.display()));
    assert!(matches!(s.reload(), Response::Reloaded { .. }));
    let mut c = s.server.client();
    assert!(matches!(c.mnt(&b), Mountres3::Fail(_)));
    let root_a = c.mnt_ok(&a);
    let pid = s.server.pid();

    s.rewrite(&format!("{} 127.0.0.1(rw,insecure)\n", b.display()));
    match s.reload() {
        Response::Reloaded {
            exports,
            added,
            removed,
            ..
        } => {
            assert_eq!(exports, 1);
            assert_eq!(added, vec![b.display().to_string()]);
            assert_eq!(removed, vec![a.display().to_string()]);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(c.getattr(&root_a).status(), Nfsstat3::NFS3ERR_STALE);
    let root_b = c.mnt_ok(&b);
    assert_eq!(c.getattr(&root_b).status(), Nfsstat3::NFS3_OK);
    assert!(matches!(c.mnt(&a), Mountres3::Fail(_)));
    assert_eq!(s.server.pid(), pid, "no restart");

    // NFSv4 sees the new tree: b's path leads to b, a's is gone
    let mut v4 = V4::session(s.server.port, 1, "reload-v4");
    let fh = v4.path_fh(&b);
    assert!(!fh.is_empty());
    let mut ops = Ops::new().putrootfh();
    for comp in a.components().skip(1) {
        ops = ops.lookup(comp.as_os_str().as_encoded_bytes());
    }
    assert_eq!(v4.call(ops).status, Nfsstat4::NFS4ERR_NOENT);
}

#[test]
fn a_broken_exports_file_is_refused_with_file_and_line_and_the_old_one_keeps_serving() {
    let s = Service::start(&["a"], |p| {
        format!("{} 127.0.0.1(rw,insecure)", p.display())
    });
    let a = s.dir("a");
    let mut c = s.server.client();
    let root = c.mnt_ok(&a);
    s.rewrite(&format!(
        "{} 127.0.0.1(rw,insecure)\n/srv/other 127.0.0.1(rw,bogus_option)\n",
        a.display()
    ));
    let want = format!("{}:2:", s.file.display());
    match s.reload() {
        Response::Error { message } => assert!(message.starts_with(&want), "{message}"),
        other => panic!("{other:?}"),
    }
    s.server.signal(libc::SIGHUP);
    let line = s.wait_log("reload refused");
    assert!(line.contains(&want), "{line}");
    // an export that cannot be opened is refused too, naming it
    s.rewrite(&format!(
        "{} 127.0.0.1(rw,insecure)\n{}/missing 127.0.0.1(rw)\n",
        a.display(),
        a.display()
    ));
    match s.reload() {
        Response::Error { message } => assert!(message.contains("missing"), "{message}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(c.getattr(&root).status(), Nfsstat3::NFS3_OK);
    let f = c.create_ok(&root, "still", 0o644);
    assert_eq!(write(&mut c, &f, b"rw").status(), Nfsstat3::NFS3_OK);
}

#[test]
fn the_admin_socket_lists_exports_and_clients_and_status() {
    let s = Service::start(&["a"], |p| {
        format!(
            "{} 127.0.0.1(rw,insecure,fsid=7) 10.0.0.0/8(ro)",
            p.display()
        )
    });
    let a = s.dir("a");
    match s.server.admin(Request::Exports) {
        Response::Exports { exports } => {
            assert_eq!(exports.len(), 1);
            let e = &exports[0];
            assert_eq!(
                (e.path.as_str(), e.fsid, e.v4_root),
                (a.to_str().unwrap(), 7, false)
            );
            assert_eq!(e.rules[0].0, "127.0.0.1");
            assert!(
                e.rules[0].1.starts_with("rw,sync,insecure,root_squash"),
                "{:?}",
                e.rules
            );
            assert_eq!(
                e.rules[1],
                (
                    "10.0.0.0/8".into(),
                    "ro,sync,secure,root_squash,anonuid=65534,anongid=65534".into()
                )
            );
        }
        other => panic!("{other:?}"),
    }
    let mut c = s.server.client();
    c.mnt_ok(&a);
    let mut v4 = V4::session(s.server.port, 1, "listed-client");
    let dir = v4.path_fh(&a);
    v4.open_ok(
        &dir,
        "f",
        "o",
        OPEN4_SHARE_ACCESS_BOTH,
        OPEN4_SHARE_DENY_NONE,
        OpenHow::Unchecked(Sattr::mode(0o644)),
    );
    match s.server.admin(Request::Clients) {
        Response::Clients { nfs3, nfs4, .. } => {
            let h = nfs3
                .iter()
                .find(|h| h.address == "127.0.0.1")
                .expect("NFSv3 host");
            assert_eq!(h.mounts, vec![a.display().to_string()]);
            let v = nfs4
                .iter()
                .find(|c| c.owner == "listed-client")
                .expect("NFSv4 client");
            assert_eq!(v.id, format!("{:016x}", v4.clientid));
            assert_eq!(
                (v.minor_version, v.confirmed, v.sessions, v.opens),
                (1, true, 1, 1)
            );
            assert_eq!(v.address.as_deref(), Some("127.0.0.1"));
        }
        other => panic!("{other:?}"),
    }
    match s.server.admin(Request::Status) {
        Response::Status {
            limits, counters, ..
        } => {
            assert!(limits.iter().any(|(k, v)| k == "lease_time_s" && *v == 90));
            let get = |k: &str| counters.iter().find(|(n, _)| n == k).map(|(_, v)| *v);
            assert_eq!(get("exports"), Some(1));
            assert_eq!(get("nfs4_clients"), Some(1));
            assert!(get("tcp_connections").is_some_and(|n| n >= 2));
        }
        other => panic!("{other:?}"),
    }
    // the table rnfsctl prints names the client too
    let table = admin::table::render(&s.server.admin(Request::Clients));
    assert!(table.contains("listed-client"), "{table}");
}

#[test]
fn evicting_an_nfsv4_client_frees_its_locks_for_another() {
    let s = Service::start(&["a"], |p| {
        format!("{} 127.0.0.1(rw,no_root_squash,insecure)", p.display())
    });
    let a = s.dir("a");
    let mut holder = V4::session(s.server.port, 1, "evict-holder");
    let dir = holder.path_fh(&a);
    let (fh, open) = holder.open_ok(
        &dir,
        "locked",
        "h-open",
        OPEN4_SHARE_ACCESS_BOTH,
        OPEN4_SHARE_DENY_NONE,
        OpenHow::Unchecked(Sattr::mode(0o666)),
    );
    let locker = new_lock_owner(0, &open, 0, holder.clientid, b"h-lock");
    holder
        .call(
            Ops::new()
                .putfh(&fh)
                .lock(NfsLockType4::WriteLt, 0, 100, &locker),
        )
        .ok("holder's LOCK");

    let mut other = V4::session(s.server.port, 1, "evict-other");
    let (_, open2) = other.open_ok(
        &dir,
        "locked",
        "o-open",
        OPEN4_SHARE_ACCESS_BOTH,
        OPEN4_SHARE_DENY_NONE,
        OpenHow::NoCreate,
    );
    let locker2 = new_lock_owner(0, &open2, 0, other.clientid, b"o-lock");
    let r = other.call(
        Ops::new()
            .putfh(&fh)
            .lock(NfsLockType4::WriteLt, 0, 100, &locker2),
    );
    assert_eq!(r.status, Nfsstat4::NFS4ERR_DENIED, "{}", r.summary());

    match s.server.admin(Request::Evict {
        client: format!("{:016x}", holder.clientid),
    }) {
        Response::Evicted { released, .. } => assert!(released >= 2, "{released}"),
        other => panic!("{other:?}"),
    }
    let r = other.call(
        Ops::new()
            .putfh(&fh)
            .lock(NfsLockType4::WriteLt, 0, 100, &locker2),
    );
    assert_eq!(r.status, Nfsstat4::NFS4_OK, "{}", r.summary());
    // the evicted client's session is gone: it has to start over
    let r = holder.call_slot(0, 99, false, Ops::new().putfh(&fh).getattr(&[FATTR4_SIZE]));
    assert_eq!(r.status, Nfsstat4::NFS4ERR_BADSESSION, "{}", r.summary());
    match s.server.admin(Request::Evict {
        client: "nobody".into(),
    }) {
        Response::Error { message } => assert!(message.contains("no client"), "{message}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn sigterm_during_writes_answers_the_calls_in_flight_and_loses_no_acknowledged_write() {
    let s = Service::start(&["a"], |p| {
        format!("{} 127.0.0.1(rw,no_root_squash,insecure)", p.display())
    });
    let a = s.dir("a");
    let block = 64 * 1024;
    let writers: Vec<_> = (0..4u64)
        .map(|w| {
            let mut c = s.server.client();
            let root = c.mnt_ok(&a);
            let fh = c.create_ok(&root, format!("w{w}"), 0o644);
            std::thread::spawn(move || {
                let mut acked = 0u64;
                for i in 0.. {
                    let data = Bytes::from(vec![(w * 16 + i % 16) as u8 + 1; block]);
                    let args = write_args(&fh, i * block as u64, data, StableHow::Unstable);
                    let (xid, body) = c.build_call(NFS3_PROGRAM, NFS_V3, NFSPROC3_WRITE, &args);
                    if c.send_record(&body).is_err() {
                        break;
                    }
                    let Ok(rec) = c.read_record() else { break };
                    let (rxid, r) = parse_reply(rec);
                    assert_eq!(rxid, xid);
                    match r {
                        RpcReply::Success(body) => match decode_all::<Write3res>(body) {
                            Write3res::Ok(ok) => assert_eq!(ok.count as usize, block),
                            Write3res::Fail(f, _) => panic!("WRITE {i}: {f:?}"),
                        },
                        other => panic!("WRITE {i}: {other:?}"),
                    }
                    acked = i + 1;
                }
                acked
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let mut server = s.server;
    let st = server.stop();
    assert!(st.success(), "{st:?}; log:\n{}", server.log_text());
    let log = server.log_text();
    assert!(
        log.contains("stopping: finishing the calls in flight") && log.contains("stopped"),
        "{log}"
    );
    for (w, t) in writers.into_iter().enumerate() {
        let acked = t.join().expect("writer");
        assert!(acked > 0, "writer {w} got no reply before the stop");
        let data = std::fs::read(a.join(format!("w{w}"))).unwrap();
        assert!(
            data.len() as u64 >= acked * block as u64,
            "writer {w}: {} < {acked} blocks",
            data.len()
        );
        for i in 0..acked {
            let at = (i * block as u64) as usize;
            let want = (w as u64 * 16 + i % 16) as u8 + 1;
            assert!(
                data[at..at + block].iter().all(|b| *b == want),
                "writer {w} block {i}"
            );
        }
    }
}

#[test]
fn an_fsid_0_export_is_the_nfsv4_root_as_in_knfsd() {
    let s = Service::start(&["root"], |p| {
        format!("{} 127.0.0.1(rw,insecure,fsid=0)", p.display())
    });
    std::fs::write(s.dir("root").join("top-level"), b"x").unwrap();
    let mut v4 = V4::session(s.server.port, 1, "fsid0");
    let r = v4
        .call(
            Ops::new()
                .putrootfh()
                .lookup(b"top-level")
                .getattr(&[FATTR4_SIZE]),
        )
        .ok("PUTROOTFH, LOOKUP in the fsid=0 export");
    assert_eq!(r.attrs().size, Some(1));
    // and without fsid=0 the root is the pseudo file system again, after a reload
    let root = s.dir("root");
    s.rewrite(&format!("{} 127.0.0.1(rw,insecure)\n", root.display()));
    assert!(matches!(s.reload(), Response::Reloaded { .. }));
    let r = v4.call(Ops::new().putrootfh().lookup(b"top-level"));
    assert_eq!(r.status, Nfsstat4::NFS4ERR_NOENT, "{}", r.summary());
    let fh = v4.path_fh(&root);
    assert!(!fh.is_empty());
}
