//! rnfsd speaks systemd's notification protocol: with NOTIFY_SOCKET set it sends READY=1 (and
//! the listener summary as STATUS=) once it serves, RELOADING=1 and READY=1 around a reload
//! (SIGHUP), and STOPPING=1 when SIGTERM arrives.
//!
//! The test stands in for systemd: it binds the datagram socket itself and starts rnfsd with
//! the variable pointing at it.

use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn recv(sock: &UnixDatagram, log: &Path) -> String {
    let mut buf = [0u8; 4096];
    match sock.recv(&mut buf) {
        Ok(n) => String::from_utf8_lossy(&buf[..n]).into_owned(),
        Err(e) => panic!(
            "no notification from rnfsd: {e}; log:\n{}",
            std::fs::read_to_string(log).unwrap_or_default()
        ),
    }
}

/// rnfsd on 127.0.0.1 serving one export of `tmp`, killed on drop (a failed test leaves no
/// server behind).
struct Rnfsd {
    child: Child,
    log: PathBuf,
}

impl Rnfsd {
    fn start(tmp: &Path, notify_socket: Option<&Path>) -> Rnfsd {
        let export = tmp.join("export");
        std::fs::create_dir(&export).unwrap();
        let log = tmp.join("rnfsd.log");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_rnfsd"));
        cmd.args([
            "--listen",
            "127.0.0.1:0",
            "--no-portmap",
            "--no-rdma",
            "--no-admin",
        ])
        .arg("--state-dir")
        .arg(tmp.join("state"))
        .arg("--export")
        .arg(&export)
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap());
        match notify_socket {
            Some(p) => cmd.env("NOTIFY_SOCKET", p),
            None => cmd.env_remove("NOTIFY_SOCKET"),
        };
        let child = cmd.spawn().expect("cannot start rnfsd");
        Rnfsd { child, log }
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Rnfsd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn ready_on_start_reloading_on_sighup_and_stopping_on_sigterm() {
    let tmp = tempfile::tempdir().unwrap();
    let sock_path = tmp.path().join("notify.sock");
    let sock = UnixDatagram::bind(&sock_path).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut rnfsd = Rnfsd::start(tmp.path(), Some(&sock_path));

    let ready = recv(&sock, &rnfsd.log);
    let status = ready
        .strip_prefix("READY=1\nSTATUS=")
        .unwrap_or_else(|| panic!("first notification is not READY=1 + STATUS=: {ready:?}"));
    assert!(
        status.starts_with("nfs+mount=tcp://127.0.0.1:"),
        "STATUS= is not the listener summary: {status:?}"
    );
    let text = rnfsd.log_text();
    assert!(
        text.contains(&format!("rnfsd ready: {status}")),
        "STATUS= differs from the ready line; log:\n{text}"
    );

    let st = Command::new("kill")
        .args(["-HUP", &rnfsd.child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success(), "kill -HUP failed");
    let reloading = recv(&sock, &rnfsd.log);
    let usec = reloading
        .strip_prefix("RELOADING=1\nMONOTONIC_USEC=")
        .unwrap_or_else(|| panic!("not RELOADING=1 + MONOTONIC_USEC=: {reloading:?}"));
    assert!(usec.parse::<u64>().is_ok_and(|u| u > 0), "{reloading:?}");
    assert_eq!(recv(&sock, &rnfsd.log), "READY=1");

    let st = Command::new("kill")
        .args(["-TERM", &rnfsd.child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success(), "kill -TERM failed");
    assert_eq!(recv(&sock, &rnfsd.log), "STOPPING=1");

    let deadline = Instant::now() + Duration::from_secs(20);
    let exit = loop {
        if let Some(st) = rnfsd.child.try_wait().unwrap() {
            break st;
        }
        assert!(
            Instant::now() < deadline,
            "rnfsd did not exit within 20 s of SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(exit.success(), "rnfsd exited with {exit:?}");
}

#[test]
fn without_notify_socket_nothing_is_sent_or_warned() {
    // Outside systemd the variable is absent: rnfsd must start as before, without warnings.
    let tmp = tempfile::tempdir().unwrap();
    let mut rnfsd = Rnfsd::start(tmp.path(), None);
    let deadline = Instant::now() + Duration::from_secs(60);
    while !rnfsd.log_text().contains("rnfsd ready:") {
        assert!(
            rnfsd.child.try_wait().unwrap().is_none(),
            "rnfsd exited; log:\n{}",
            rnfsd.log_text()
        );
        assert!(Instant::now() < deadline, "rnfsd not ready after 60 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    let text = rnfsd.log_text();
    assert!(
        !text.contains("notify systemd"),
        "a warning about notification without NOTIFY_SOCKET:\n{text}"
    );
}
