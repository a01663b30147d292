//! The libnfs command line tools (nfs-cp, nfs-ls, nfs-cat from libnfs-utils) against rnfsd.
//!
//! They run as root against a root_squash export, so they act as uid 65534: the export is
//! world-writable (0777).

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::*;

/// Runs a libnfs tool with a time limit; it must succeed.
fn run(tool: &str, args: &[&str]) -> Output {
    let out = Command::new("timeout")
        .arg("120")
        .arg(tool)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {tool} (is libnfs-utils installed?): {e}"));
    assert!(
        out.status.success(),
        "{tool} {args:?} failed with {:?}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn url(fx: &Fixture, rel: &str) -> String {
    let p = if rel.is_empty() {
        fx.export.clone()
    } else {
        fx.export.join(rel)
    };
    fx.server.url(&p)
}

fn path_str(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn nfs_cp_copies_in_and_out() {
    let fx = Fixture::new();
    // Several WRITEs and READs: larger than libnfs' transfer size, not a multiple of 4.
    let data = pattern(42, 5 * 1024 * 1024 + 3);
    let local_in = fx.tmp.path().join("local-in");
    let local_out = fx.tmp.path().join("local-out");
    std::fs::write(&local_in, &data).unwrap();

    run("nfs-cp", &[path_str(&local_in), &url(&fx, "copied.bin")]);
    let on_server = std::fs::read(fx.export.join("copied.bin")).unwrap();
    assert_eq!(on_server.len(), data.len());
    assert!(on_server == data, "content differs after nfs-cp in");

    run("nfs-cp", &[&url(&fx, "copied.bin"), path_str(&local_out)]);
    let back = std::fs::read(&local_out).unwrap();
    assert_eq!(back.len(), data.len());
    assert!(back == data, "content differs after nfs-cp out");

    // An empty file round-trips too.
    let empty = fx.tmp.path().join("empty");
    std::fs::write(&empty, b"").unwrap();
    run("nfs-cp", &[path_str(&empty), &url(&fx, "empty")]);
    assert_eq!(std::fs::read(fx.export.join("empty")).unwrap().len(), 0);
}

#[test]
fn nfs_ls_lists_entries() {
    let fx = Fixture::new();
    std::fs::write(fx.export.join("alpha.txt"), b"12345").unwrap();
    std::fs::write(fx.export.join("beta.bin"), vec![7u8; 4096]).unwrap();
    std::fs::create_dir(fx.export.join("gamma")).unwrap();
    std::fs::write(fx.export.join("gamma/inner"), b"x").unwrap();
    std::os::unix::fs::symlink("alpha.txt", fx.export.join("delta")).unwrap();

    let out = run("nfs-ls", &[&url(&fx, "")]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let line = |name: &str| -> String {
        text.lines()
            .find(|l| l.split_whitespace().last() == Some(name))
            .unwrap_or_else(|| panic!("{name} not listed:\n{text}"))
            .to_string()
    };
    let alpha = line("alpha.txt");
    assert!(alpha.starts_with('-'), "{alpha}");
    assert!(alpha.split_whitespace().any(|w| w == "5"), "size: {alpha}");
    let beta = line("beta.bin");
    assert!(beta.split_whitespace().any(|w| w == "4096"), "size: {beta}");
    assert!(line("gamma").starts_with('d'), "gamma is not a directory");
    assert!(line("delta").starts_with('l'), "delta is not a symlink");
    // inner is below gamma, not in the export's root listing.
    assert!(!text.contains("inner"), "{text}");

    // Recursive listing reaches into the subdirectory.
    let out = run("nfs-ls", &["-R", &url(&fx, "")]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("inner"), "recursive listing:\n{text}");
}

#[test]
fn nfs_cat_prints_file() {
    let fx = Fixture::new();
    let content = b"first line\nsecond line\n\xff\x00binary tail";
    std::fs::write(fx.export.join("cat-me"), content).unwrap();
    let out = run("nfs-cat", &[&url(&fx, "cat-me")]);
    assert_eq!(out.stdout, content);
}
