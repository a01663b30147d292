//! The metrics endpoint as Prometheus and the Grafana dashboard in dist/grafana see it: the
//! exposition format, the per-client and per-status counters moving with real calls, and every
//! metric the dashboard queries present in a live scrape.

mod common;

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::SocketAddr;

use bytes::Bytes;
use common::nfs4_raw::*;
use common::*;
use nfs3wire::*;
use nfs4wire::*;

/// The dashboard, as shipped.
const DASHBOARD: &str = include_str!("../../../dist/grafana/rnfsd.json");

/// The RDMA source's text: what it writes when the machine has no RDMA device to serve on.
const RDMA_SOURCE: &str = include_str!("../../rpcrdma/src/metrics.rs");

/// The body of a scrape, after checking its status line and content type.
fn scrape(addr: SocketAddr) -> String {
    let resp = http_get(addr, "/metrics");
    let (head, body) = resp.split_once("\r\n\r\n").expect("an HTTP response");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let ct = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-type").then(|| v.trim())
        })
        .expect("a content type");
    assert_eq!(
        ct,
        "application/openmetrics-text; version=1.0.0; charset=utf-8"
    );
    assert!(body.ends_with("# EOF\n"), "no EOF marker:\n{body}");
    body.to_string()
}

/// Names of the samples in a scrape (`name{...} v` and `name v` lines).
fn sample_names(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split(['{', ' ']).next())
        .map(str::to_string)
        .collect()
}

/// Every `rnfs_...` name in the dashboard's queries and variables.
fn dashboard_names() -> BTreeSet<String> {
    let dash: serde_json::Value = serde_json::from_str(DASHBOARD).expect("valid JSON");
    let mut exprs = Vec::new();
    let panels = dash["panels"].as_array().expect("panels");
    for p in panels {
        for t in p["targets"].as_array().into_iter().flatten() {
            exprs.push(t["expr"].as_str().expect("a query").to_string());
        }
    }
    for v in dash["templating"]["list"].as_array().expect("variables") {
        if let Some(q) = v["definition"].as_str() {
            exprs.push(q.to_string());
        }
    }
    let mut names = BTreeSet::new();
    for e in &exprs {
        let mut rest = e.as_str();
        while let Some(i) = rest.find("rnfs_") {
            let tail = &rest[i..];
            let end = tail
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(tail.len());
            names.insert(tail[..end].to_string());
            rest = &tail[end..];
        }
    }
    names
}

/// Some NFSv3 and NFSv4 traffic with a few errors: three NFSv3 LOOKUPs of a missing name, a
/// 1000-byte NFSv3 WRITE read back, an NFSv4.1 LOOKUP of a missing name, a 300-byte NFSv4
/// WRITE read back.
fn traffic(fx: &Fixture) {
    let (mut c, root) = fx.connect();
    for _ in 0..3 {
        assert!(matches!(c.lookup(&root, "missing"), Lookup3res::Fail(..)));
    }
    let fh = c.create_ok(&root, "f3", 0o644);
    c.write(&fh, 0, Bytes::from(vec![7u8; 1000]), StableHow::FileSync)
        .expect_ok("WRITE");
    c.read(&fh, 0, 1000).expect_ok("READ");

    let mut v4 = V4::session(fx.server.port, 1, "metrics");
    let r = v4.call(Ops::new().putrootfh().lookup("missing"));
    assert_eq!(r.last().status, Nfsstat4::NFS4ERR_NOENT, "{}", r.summary());
    let dir = v4.path_fh(&fx.export);
    let (f4, sid) = v4.open_ok(
        &dir,
        "f4",
        "owner",
        OPEN4_SHARE_ACCESS_BOTH,
        OPEN4_SHARE_DENY_NONE,
        OpenHow::Unchecked(Sattr::mode(0o644)),
    );
    v4.write_all(&f4, &sid, 0, &[9u8; 300]);
    v4.call(Ops::new().putfh(&f4).read(&sid, 0, 300)).ok("READ");
    v4.close_ok(&f4, &sid);
}

#[test]
fn clients_errors_and_bytes_count_real_calls() {
    let fx = Fixture::with_metrics();
    let addr = fx.server.metrics.expect("metrics endpoint");
    let before = scrape(addr);
    let calls = r#"rnfs_client_calls_total{client="127.0.0.1"}"#;
    let received = r#"rnfs_client_received_bytes_total{client="127.0.0.1"}"#;
    let sent = r#"rnfs_client_sent_bytes_total{client="127.0.0.1"}"#;
    let calls0 = metric(&before, calls).unwrap_or(0);
    traffic(&fx);
    let t = scrape(addr);

    let v3_noent = r#"rnfs_nfs_errors_total{version="3",op="LOOKUP",status="NFS3ERR_NOENT"}"#;
    assert_eq!(metric(&t, v3_noent), Some(3), "{t}");
    let v4_noent = r#"rnfs_nfs_errors_total{version="4",op="LOOKUP",status="NFS4ERR_NOENT"}"#;
    assert_eq!(metric(&t, v4_noent), Some(1), "{t}");
    assert_eq!(
        metric(&t, r#"rnfs_nfs_write_bytes_total{version="3"}"#),
        Some(1000)
    );
    assert_eq!(
        metric(&t, r#"rnfs_nfs_read_bytes_total{version="3"}"#),
        Some(1000)
    );
    assert_eq!(
        metric(&t, r#"rnfs_nfs_write_bytes_total{version="4"}"#),
        Some(300)
    );
    assert_eq!(
        metric(&t, r#"rnfs_nfs_read_bytes_total{version="4"}"#),
        Some(300)
    );
    // MNT, 3 LOOKUPs, CREATE, WRITE, READ and the NFSv4 COMPOUNDs: all from 127.0.0.1
    let calls1 = metric(&t, calls).expect("calls of 127.0.0.1");
    assert!(calls1 >= calls0 + 7 + 8, "calls {calls0} -> {calls1}");
    // the WRITEs' data came in, the READs' went out
    assert!(metric(&t, received).expect("received") > 1300, "{t}");
    assert!(metric(&t, sent).expect("sent") > 1300, "{t}");
    let other = r#"rnfs_client_calls_total{client="other"}"#;
    assert_eq!(metric(&t, other), None, "{t}");
    // the export's own counters: both versions' data, and every call on its objects
    let export = |f: &str| {
        format!(
            "rnfs_export_{f}_total{{export=\"{}\"}}",
            fx.export.display()
        )
    };
    assert_eq!(metric(&t, &export("write_bytes")), Some(1300), "{t}");
    assert_eq!(metric(&t, &export("read_bytes")), Some(1300), "{t}");
    assert!(metric(&t, &export("calls")).is_some_and(|n| n >= 10), "{t}");
    assert_eq!(metric(&t, "rnfs_rpc_calls_in_flight "), Some(0));
}

#[test]
fn every_metric_the_dashboard_queries_is_exposed() {
    let names = dashboard_names();
    assert!(names.len() > 20, "few names found: {names:?}");
    let fx = Fixture::with_metrics();
    let addr = fx.server.metrics.expect("metrics endpoint");
    traffic(&fx);
    let live = sample_names(&scrape(addr));
    let rdma_live = live.iter().any(|n| n.starts_with("rnfs_rdma_"));
    let mut missing = Vec::new();
    for n in &names {
        let found = live.contains(n)
            // without an RDMA device here, the RDMA source's own names stand in
            || (!rdma_live && n.starts_with("rnfs_rdma_") && RDMA_SOURCE.contains(&format!("\"{n}\"")));
        if !found {
            missing.push(n.clone());
        }
    }
    assert!(
        missing.is_empty(),
        "the dashboard queries metrics rnfsd does not expose: {missing:?}\nlive: {live:?}"
    );
}

#[test]
fn the_dashboard_imports_with_a_datasource_variable() {
    let dash: serde_json::Value = serde_json::from_str(DASHBOARD).expect("valid JSON");
    assert_eq!(dash["uid"], "rnfsd");
    let vars = dash["templating"]["list"].as_array().expect("variables");
    assert!(
        vars.iter().any(|v| v["name"] == "datasource"
            && v["type"] == "datasource"
            && v["query"] == "prometheus"),
        "no Prometheus datasource variable"
    );
    for p in dash["panels"].as_array().expect("panels") {
        if p["type"] == "row" {
            continue;
        }
        assert_eq!(
            p["datasource"]["uid"], "${datasource}",
            "panel {}",
            p["title"]
        );
        let targets = p["targets"].as_array().expect("targets");
        assert!(!targets.is_empty(), "panel {} has no query", p["title"]);
        for t in targets {
            assert_eq!(
                t["datasource"]["uid"], "${datasource}",
                "panel {}",
                p["title"]
            );
            let expr = t["expr"].as_str().expect("a query");
            assert!(expr.contains(r#"instance=~"$instance""#), "{expr}");
        }
    }
}

#[test]
fn other_paths_and_methods_are_refused() {
    let fx = Fixture::with_metrics();
    let addr = fx.server.metrics.expect("metrics endpoint");
    assert!(http_get(addr, "/").starts_with("HTTP/1.1 200"));
    assert!(http_get(addr, "/nope").starts_with("HTTP/1.1 404"));
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(
        s,
        "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    assert!(out.starts_with("HTTP/1.1 405"), "{out}");
}

#[test]
fn idle_connections_are_bounded_and_closed() {
    let fx = Fixture::with_metrics();
    let addr = fx.server.metrics.expect("metrics endpoint");
    // as many connections as the endpoint serves at once, none sending a request
    let idle: Vec<std::net::TcpStream> = (0..16)
        .map(|_| std::net::TcpStream::connect(addr).unwrap())
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(300));
    // one more is closed unanswered (or reset)
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let _ = write!(s, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    assert!(out.is_empty(), "{}", String::from_utf8_lossy(&out));
    // the idle ones are closed for not sending their request's head in time
    for mut s in idle {
        s.set_read_timeout(Some(std::time::Duration::from_secs(40)))
            .unwrap();
        let mut buf = Vec::new();
        if let Err(e) = s.read_to_end(&mut buf) {
            use std::io::ErrorKind::{TimedOut, WouldBlock};
            assert!(
                !matches!(e.kind(), TimedOut | WouldBlock),
                "an idle connection was not closed"
            );
        }
    }
    assert!(http_get(addr, "/metrics").starts_with("HTTP/1.1 200"));
}
