//! systemd's service notification protocol (sd_notify(3)), spoken directly: one datagram of
//! `KEY=VALUE` lines to the Unix socket named by `NOTIFY_SOCKET`.
//!
//! Without that variable (not started by systemd with `Type=notify`) every function does
//! nothing. A failed send is logged once and otherwise ignored: the server serves whether or
//! not its manager hears about it, and systemd's own start timeout reports a lost READY=1.

use std::ffi::OsStr;
use std::io;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

/// A socket to the service manager.
#[derive(Debug)]
pub struct Notifier {
    sock: UnixDatagram,
    addr: SocketAddr,
}

impl Notifier {
    /// A notifier for a `NOTIFY_SOCKET` value: an absolute path, or `@name` for a name in the
    /// abstract namespace.
    pub fn new(target: &OsStr) -> io::Result<Notifier> {
        let bytes = target.as_bytes();
        let addr = match bytes.first() {
            Some(b'/') => SocketAddr::from_pathname(target)?,
            Some(b'@') => SocketAddr::from_abstract_name(&bytes[1..])?,
            // systemd >= 254 also passes vsock: addresses, for virtual machines; not ours
            _ => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("NOTIFY_SOCKET={target:?}: neither a path nor @name"),
                ))
            }
        };
        let sock = UnixDatagram::unbound()?;
        Ok(Notifier { sock, addr })
    }

    /// Sends `msg` (newline-separated `KEY=VALUE` assignments) in one datagram.
    pub fn send(&self, msg: &str) -> io::Result<()> {
        self.sock.send_to_addr(msg.as_bytes(), &self.addr).map(drop)
    }

    /// Startup finished: `READY=1` and `STATUS=` with `status`.
    pub fn ready(&self, status: &str) -> io::Result<()> {
        self.send(&format!("READY=1\nSTATUS={}", one_line(status)))
    }

    /// A configuration reload began: `RELOADING=1` with the monotonic time, which systemd
    /// >= 253 requires to tell this reload from an earlier one (older ones ignore it).
    pub fn reloading(&self) -> io::Result<()> {
        self.send(&format!("RELOADING=1\nMONOTONIC_USEC={}", monotonic_usec()))
    }

    /// The reload finished: `READY=1` again.
    pub fn reloaded(&self) -> io::Result<()> {
        self.send("READY=1")
    }

    /// Shutdown began: `STOPPING=1`.
    pub fn stopping(&self) -> io::Result<()> {
        self.send("STOPPING=1")
    }

    /// A free-form status line (`STATUS=`), shown by `systemctl status`.
    pub fn status(&self, text: &str) -> io::Result<()> {
        self.send(&format!("STATUS={}", one_line(text)))
    }
}

/// Tells systemd that rnfsd is ready, with `status` (the listener summary) as its status line.
pub fn ready(status: &str) {
    with_notifier(|n| n.ready(status));
}

/// Tells systemd that rnfsd is re-reading its configuration; [`reloaded`] ends it.
pub fn reloading() {
    with_notifier(Notifier::reloading);
}

/// Tells systemd that a reload begun with [`reloading`] is over (successful or not).
pub fn reloaded() {
    with_notifier(Notifier::reloaded);
}

/// Tells systemd that rnfsd is shutting down.
pub fn stopping() {
    with_notifier(Notifier::stopping);
}

/// Sets the status line `systemctl status rnfsd` shows.
pub fn status(text: &str) {
    with_notifier(|n| n.status(text));
}

/// The notifier for this process's `NOTIFY_SOCKET`, made on first use.
fn global() -> Option<&'static Notifier> {
    static GLOBAL: OnceLock<Option<Notifier>> = OnceLock::new();
    GLOBAL
        .get_or_init(|| {
            let target = std::env::var_os("NOTIFY_SOCKET")?;
            match Notifier::new(&target) {
                Ok(n) => Some(n),
                Err(e) => {
                    tracing::warn!(error = %e, "cannot notify systemd");
                    None
                }
            }
        })
        .as_ref()
}

fn with_notifier(f: impl FnOnce(&Notifier) -> io::Result<()>) {
    // One warning, not one per reload: the cause (a manager gone, a wrong variable) persists.
    static WARNED: AtomicBool = AtomicBool::new(false);
    if let Some(n) = global() {
        if let Err(e) = f(n) {
            if !WARNED.swap(true, Ordering::Relaxed) {
                tracing::warn!(error = %e, "cannot notify systemd (further failures not logged)");
            }
        }
    }
}

/// A newline would start a new assignment that the text did not mean.
fn one_line(text: &str) -> String {
    text.replace('\n', " ")
}

/// CLOCK_MONOTONIC in microseconds, the clock systemd compares MONOTONIC_USEC with
/// (`std::time::Instant` reads it too, but does not show its value).
fn monotonic_usec() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    (t.tv_sec as u64) * 1_000_000 + (t.tv_nsec as u64) / 1_000
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn recv(sock: &UnixDatagram) -> String {
        let mut buf = [0u8; 4096];
        let n = sock.recv(&mut buf).expect("a notification");
        String::from_utf8(buf[..n].to_vec()).expect("UTF-8")
    }

    fn listener(sock: UnixDatagram) -> UnixDatagram {
        sock.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        sock
    }

    #[test]
    fn a_socket_path_receives_each_message_exactly() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("notify");
        let sock = listener(UnixDatagram::bind(&path).expect("bind"));
        let n = Notifier::new(path.as_os_str()).expect("notifier");

        n.ready("nfs+mount=tcp://127.0.0.1:2049 metrics=http://127.0.0.1:9100/metrics")
            .expect("send");
        assert_eq!(
            recv(&sock),
            "READY=1\nSTATUS=nfs+mount=tcp://127.0.0.1:2049 metrics=http://127.0.0.1:9100/metrics"
        );

        let before = monotonic_usec();
        n.reloading().expect("send");
        let msg = recv(&sock);
        let after = monotonic_usec();
        let usec: u64 = msg
            .strip_prefix("RELOADING=1\nMONOTONIC_USEC=")
            .unwrap_or_else(|| panic!("not a reload message: {msg:?}"))
            .parse()
            .expect("a number of microseconds");
        assert!(
            (before..=after).contains(&usec),
            "{usec} not in {before}..={after}"
        );

        n.reloaded().expect("send");
        assert_eq!(recv(&sock), "READY=1");
        n.status("two\nlines").expect("send");
        assert_eq!(recv(&sock), "STATUS=two lines");
        n.stopping().expect("send");
        assert_eq!(recv(&sock), "STOPPING=1");
    }

    #[test]
    fn an_abstract_name_receives_messages() {
        let name = format!("rnfs-notify-test-{}", std::process::id());
        let addr = SocketAddr::from_abstract_name(name.as_bytes()).expect("address");
        let sock = listener(UnixDatagram::bind_addr(&addr).expect("bind"));
        let n = Notifier::new(OsStr::new(&format!("@{name}"))).expect("notifier");
        n.stopping().expect("send");
        assert_eq!(recv(&sock), "STOPPING=1");
    }

    #[test]
    fn other_addresses_are_refused() {
        for bad in ["", "relative/path", "vsock:2:1234"] {
            assert!(Notifier::new(OsStr::new(bad)).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_missing_listener_is_an_error_not_a_panic() {
        let dir = tempfile::tempdir().expect("tempdir");
        let n = Notifier::new(dir.path().join("nobody").as_os_str()).expect("notifier");
        assert!(n.stopping().is_err());
    }

    #[test]
    fn the_monotonic_clock_advances() {
        let a = monotonic_usec();
        std::thread::sleep(Duration::from_millis(2));
        assert!(monotonic_usec() >= a + 1_000);
    }
}
