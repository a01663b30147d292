//! Shared harness for the integration tests: starts the real `rnfsd` binary on 127.0.0.1 and
//! talks to it with a small raw ONC RPC client built on the workspace's own wire types.
//!
//! Every test gets its own server, state directory and export directories, so tests in one file
//! can run in parallel threads.

// System calls the tests make themselves (signals, limits, device nodes, holes, credentials)
// to set up and check what they test.
#![allow(unsafe_code)]
// Each test file uses a different part of this module.
#![allow(dead_code)]

pub mod loopback;
pub mod nfs3_res;
pub mod nfs4_raw;
pub mod nfsrs;

use std::fmt::Debug;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
pub use nfs3_res::*;
use nfs3wire::*;
use sunrpc::msg::{encode_call, AuthSys, Credential};
use xdr::{Decode, Decoder, Encode, Encoder};

/// How long the server may take to print its ready line.
pub const READY_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a reply may take before a test fails.
pub const REPLY_TIMEOUT: Duration = Duration::from_secs(120);
/// The uid/gid the raw client uses unless a test says otherwise.
pub const TEST_UID: u32 = 1000;

// ---------------------------------------------------------------------------------------------
// The server process
// ---------------------------------------------------------------------------------------------

/// How to start `rnfsd`.
#[derive(Clone, Debug, Default)]
pub struct ServerConfig {
    /// `--state-dir`.
    pub state_dir: PathBuf,
    /// One `--export DIR` each (localhost, rw, root_squash, insecure).
    pub exports: Vec<PathBuf>,
    /// `--exports FILE`.
    pub exports_file: Option<PathBuf>,
    /// `--metrics 127.0.0.1:0`.
    pub metrics: bool,
    /// More command-line arguments (limits, timeouts).
    pub args: Vec<String>,
}

/// A running `rnfsd`; killed on drop.
pub struct Server {
    child: Option<Child>,
    /// The configuration it was (last) started with.
    pub cfg: ServerConfig,
    /// Port of NFS + MOUNT on 127.0.0.1.
    pub port: u16,
    /// Address of the metrics endpoint, when enabled.
    pub metrics: Option<SocketAddr>,
    log: Arc<Mutex<Vec<String>>>,
}

/// Removes ANSI escape sequences (colours) from a log line.
pub fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.peek() == Some(&'[') {
                chars.next();
                // Parameters and intermediates, then one final byte in 0x40..=0x7e.
                for c in chars.by_ref() {
                    if ('\u{40}'..='\u{7e}').contains(&c) {
                        break;
                    }
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

/// Parses the addresses out of the `rnfsd ready:` line: (NFS port, metrics address).
pub fn parse_ready_line(line: &str) -> (u16, Option<SocketAddr>) {
    let rest = &line[line.find("rnfsd ready:").expect("not a ready line")..];
    let mut port = None;
    let mut metrics = None;
    for tok in rest.split_whitespace() {
        if let Some(a) = tok.strip_prefix("nfs+mount=tcp://") {
            let a: SocketAddr = a.parse().expect("bad nfs address in ready line");
            port = Some(a.port());
        } else if let Some(a) = tok.strip_prefix("metrics=http://") {
            let a = a.strip_suffix("/metrics").unwrap_or(a);
            metrics = Some(a.parse().expect("bad metrics address in ready line"));
        }
    }
    (port.expect("no nfs+mount address in ready line"), metrics)
}

impl Server {
    /// Starts `rnfsd` and waits for its ready line.
    pub fn start(cfg: ServerConfig) -> Server {
        let mut s = Server {
            child: None,
            cfg,
            port: 0,
            metrics: None,
            log: Arc::new(Mutex::new(Vec::new())),
        };
        s.spawn();
        s
    }

    /// Exports `dirs` with `--export`, state in `state_dir`.
    pub fn with_exports(state_dir: &Path, dirs: &[&Path]) -> Server {
        Server::start(ServerConfig {
            state_dir: state_dir.to_path_buf(),
            exports: dirs.iter().map(|d| d.to_path_buf()).collect(),
            ..Default::default()
        })
    }

    /// Uses the exports file `file`, state in `state_dir`.
    pub fn with_exports_file(state_dir: &Path, file: &Path) -> Server {
        Server::start(ServerConfig {
            state_dir: state_dir.to_path_buf(),
            exports_file: Some(file.to_path_buf()),
            ..Default::default()
        })
    }

    fn spawn(&mut self) {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_rnfsd"));
        cmd.arg("--listen")
            .arg("127.0.0.1:0")
            .arg("--no-portmap")
            .arg("--state-dir")
            .arg(&self.cfg.state_dir);
        for e in &self.cfg.exports {
            cmd.arg("--export").arg(e);
        }
        if let Some(f) = &self.cfg.exports_file {
            cmd.arg("--exports").arg(f);
        }
        if self.cfg.metrics {
            cmd.arg("--metrics").arg("127.0.0.1:0");
        }
        cmd.args(&self.cfg.args);
        cmd.env("RUST_LOG", "info")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("cannot start rnfsd");
        let stderr = child.stderr.take().expect("no stderr pipe");
        let (tx, rx) = mpsc::channel::<String>();
        let log = self.log.clone();
        std::thread::spawn(move || {
            // Keeps draining stderr for the life of the process so the server never blocks on it.
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                let line = strip_ansi(&line);
                log.lock().unwrap().push(line.clone());
                let _ = tx.send(line);
            }
        });
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) if line.contains("rnfsd ready:") => {
                    let (port, metrics) = parse_ready_line(&line);
                    self.port = port;
                    self.metrics = metrics;
                    break;
                }
                Ok(_) => {}
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!(
                        "rnfsd not ready after {READY_TIMEOUT:?}; log:\n{}",
                        self.log_text()
                    );
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    let status = child.wait();
                    panic!(
                        "rnfsd exited before it was ready ({status:?}); log:\n{}",
                        self.log_text()
                    );
                }
            }
        }
        self.child = Some(child);
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("server not running").id()
    }

    /// A field of /proc/PID/status in KiB (VmRSS: resident now, VmHWM: the peak).
    pub fn status_kib(&self, field: &str) -> u64 {
        let text = std::fs::read_to_string(format!("/proc/{}/status", self.pid()))
            .expect("read /proc/PID/status");
        text.lines()
            .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or_else(|| panic!("no {field} in /proc/PID/status"))
    }

    /// Everything the server logged so far.
    pub fn log_text(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        match &mut self.child {
            Some(c) => matches!(c.try_wait(), Ok(None)),
            None => false,
        }
    }

    /// Stops the server with SIGTERM and returns how it exited (SIGKILL after 20 s).
    pub fn stop(&mut self) -> ExitStatus {
        let mut child = self.child.take().expect("server not running");
        // SAFETY: kill(2) on the pid of a child we own and have not reaped yet.
        unsafe {
            libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(st) = child.try_wait().expect("wait for rnfsd") {
                return st;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let st = child.wait().expect("wait for rnfsd");
                panic!(
                    "rnfsd did not exit within 20 s of SIGTERM (killed: {st:?}); log:\n{}",
                    self.log_text()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Kills the server with SIGKILL (a crash: nothing is flushed or unregistered) and starts
    /// it again with the same configuration.
    pub fn crash_and_restart(&mut self) {
        let mut child = self.child.take().expect("server not running");
        child.kill().expect("SIGKILL rnfsd");
        child.wait().expect("wait for rnfsd");
        self.spawn();
    }

    /// Stops the server and starts it again with the same configuration (same state dir).
    pub fn restart(&mut self) {
        let st = self.stop();
        assert!(
            st.success(),
            "rnfsd exited with {st:?} on SIGTERM; log:\n{}",
            self.log_text()
        );
        self.spawn();
    }

    /// Stops the server and starts it with another configuration.
    pub fn restart_with(&mut self, cfg: ServerConfig) {
        let st = self.stop();
        assert!(st.success(), "rnfsd exited with {st:?} on SIGTERM");
        self.cfg = cfg;
        self.spawn();
    }

    /// A raw RPC client connected to this server, calling as uid/gid [`TEST_UID`].
    pub fn client(&self) -> RpcClient {
        RpcClient::connect(self.port)
    }

    /// An `nfs://` URL for libnfs and nfs-rs: `path` on this server (no query separator added
    /// inside `path`).
    pub fn url(&self, path: &Path) -> String {
        format!(
            "nfs://127.0.0.1{}?version=3&nfsport={p}&mountport={p}",
            path.display(),
            p = self.port
        )
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Directories
// ---------------------------------------------------------------------------------------------

/// Creates `dir` (and parents) with exactly `mode`.
pub fn mkdir_mode(dir: &Path, mode: u32) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode)).unwrap();
    std::fs::canonicalize(dir).unwrap()
}

/// Writes an exports file with one line per `(dir, options)`, all for client 127.0.0.1.
pub fn write_exports(file: &Path, entries: &[(&Path, &str)]) {
    let mut text = String::new();
    for (dir, opts) in entries {
        text.push_str(&format!("{} 127.0.0.1({opts})\n", dir.display()));
    }
    std::fs::write(file, text).unwrap();
}

/// A temporary tree (state dir + one export) and a server on it.
pub struct Fixture {
    /// Owns everything below.
    pub tmp: tempfile::TempDir,
    /// The exported directory (canonical).
    pub export: PathBuf,
    /// The server.
    pub server: Server,
}

impl Fixture {
    /// One world-writable export served with `--export` (rw, root_squash, insecure).
    pub fn new() -> Fixture {
        Self::build(0o777, None, false)
    }

    /// Like [`Fixture::new`] with the metrics endpoint enabled.
    pub fn with_metrics() -> Fixture {
        Self::build(0o777, None, true)
    }

    /// One export of mode `mode` served from an exports file with `options` for 127.0.0.1.
    pub fn with_options(mode: u32, options: &str) -> Fixture {
        Self::build(mode, Some(options), false)
    }

    /// Like [`Fixture::with_metrics`], with more `rnfsd` arguments.
    pub fn with_args(args: &[&str]) -> Fixture {
        Self::build_with(0o777, None, true, args)
    }

    fn build(mode: u32, options: Option<&str>, metrics: bool) -> Fixture {
        Self::build_with(mode, options, metrics, &[])
    }

    fn build_with(mode: u32, options: Option<&str>, metrics: bool, args: &[&str]) -> Fixture {
        let tmp = tempfile::tempdir().unwrap();
        let export = mkdir_mode(&tmp.path().join("export"), mode);
        let state = tmp.path().join("state");
        let mut cfg = ServerConfig {
            state_dir: state,
            metrics,
            args: args.iter().map(|a| a.to_string()).collect(),
            ..Default::default()
        };
        match options {
            None => cfg.exports.push(export.clone()),
            Some(o) => {
                let f = tmp.path().join("exports");
                write_exports(&f, &[(&export, o)]);
                cfg.exports_file = Some(f);
            }
        }
        let server = Server::start(cfg);
        Fixture {
            tmp,
            export,
            server,
        }
    }

    /// A raw client (uid/gid [`TEST_UID`]) and the export's root handle.
    pub fn connect(&self) -> (RpcClient, NfsFh3) {
        let mut c = self.server.client();
        let root = c.mnt_ok(&self.export);
        (c, root)
    }
}

// ---------------------------------------------------------------------------------------------
// The raw RPC client
// ---------------------------------------------------------------------------------------------

/// A decoded RPC reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RpcReply {
    /// MSG_ACCEPTED / SUCCESS with the procedure's result bytes.
    Success(Bytes),
    /// MSG_ACCEPTED / PROG_UNAVAIL.
    ProgUnavail,
    /// MSG_ACCEPTED / PROG_MISMATCH with the supported range.
    ProgMismatch { low: u32, high: u32 },
    /// MSG_ACCEPTED / PROC_UNAVAIL.
    ProcUnavail,
    /// MSG_ACCEPTED / GARBAGE_ARGS.
    GarbageArgs,
    /// MSG_ACCEPTED / SYSTEM_ERR.
    SystemErr,
    /// MSG_DENIED / RPC_MISMATCH with the supported range.
    RpcMismatch { low: u32, high: u32 },
    /// MSG_DENIED / AUTH_ERROR with the auth_stat.
    AuthError(u32),
}

/// auth_stat AUTH_BADCRED.
pub const AUTH_BADCRED: u32 = 1;

/// Splits a reply record into its xid and decoded header.
pub fn parse_reply(rec: Bytes) -> (u32, RpcReply) {
    let mut d = Decoder::new(rec);
    let xid = d.u32().expect("reply xid");
    assert_eq!(d.u32().expect("msg_type"), 1, "message is not a REPLY");
    let r = match d.u32().expect("reply_stat") {
        0 => {
            let _flavor = d.u32().expect("verifier flavor");
            d.opaque(400).expect("verifier body");
            match d.u32().expect("accept_stat") {
                0 => RpcReply::Success(d.into_rest()),
                1 => RpcReply::ProgUnavail,
                2 => RpcReply::ProgMismatch {
                    low: d.u32().unwrap(),
                    high: d.u32().unwrap(),
                },
                3 => RpcReply::ProcUnavail,
                4 => RpcReply::GarbageArgs,
                5 => RpcReply::SystemErr,
                s => panic!("unknown accept_stat {s}"),
            }
        }
        1 => match d.u32().expect("reject_stat") {
            0 => RpcReply::RpcMismatch {
                low: d.u32().unwrap(),
                high: d.u32().unwrap(),
            },
            1 => RpcReply::AuthError(d.u32().unwrap()),
            s => panic!("unknown reject_stat {s}"),
        },
        s => panic!("unknown reply_stat {s}"),
    };
    (xid, r)
}

/// An AUTH_SYS credential for `uid`/`gid`.
pub fn auth_sys(uid: u32, gid: u32) -> Credential {
    Credential::Sys(AuthSys {
        stamp: 1,
        machine: Bytes::from_static(b"rnfs-test"),
        uid,
        gid,
        gids: vec![gid],
    })
}

/// Decodes a complete result; the whole body must be consumed.
pub fn decode_all<R: Decode>(body: Bytes) -> R {
    let mut d = Decoder::new(body);
    let r = R::decode(&mut d).expect("cannot decode the result");
    assert_eq!(d.remaining(), 0, "bytes left after the result");
    r
}

/// Encodes a value into a flat buffer.
pub fn encode<A: Encode + ?Sized>(a: &A) -> Bytes {
    let mut e = Encoder::new();
    a.encode(&mut e);
    e.finish().to_bytes()
}

/// How the raw client reaches the server.
enum Link {
    /// A TCP connection to an `rnfsd` process.
    Tcp(TcpStream),
    /// The server's programs in this process ([`loopback::LocalServer`]).
    Local(Box<loopback::Loopback>),
}

impl Read for Link {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Link::Tcp(s) => s.read(buf),
            Link::Local(l) => l.read(buf),
        }
    }
}

impl Write for Link {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Link::Tcp(s) => s.write(buf),
            Link::Local(l) => {
                l.send(buf);
                Ok(buf.len())
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Link::Tcp(s) => s.flush(),
            Link::Local(_) => Ok(()),
        }
    }
}

impl Link {
    fn tcp(&self) -> &TcpStream {
        match self {
            Link::Tcp(s) => s,
            Link::Local(_) => panic!("not a TCP connection"),
        }
    }
}

/// A blocking ONC RPC client over one TCP connection (or a [`loopback::Loopback`]).
pub struct RpcClient {
    stream: Link,
    xid: u32,
    /// Credential sent with every call.
    pub cred: Credential,
}

fn name(n: impl AsRef<[u8]>) -> Bytes {
    Bytes::copy_from_slice(n.as_ref())
}

fn first_xid() -> u32 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    (t.subsec_nanos() ^ std::process::id().rotate_left(16)) & 0x7fff_ffff
}

impl RpcClient {
    fn from_stream(stream: TcpStream) -> RpcClient {
        stream.set_nodelay(true).unwrap();
        stream.set_read_timeout(Some(REPLY_TIMEOUT)).unwrap();
        RpcClient {
            stream: Link::Tcp(stream),
            xid: first_xid(),
            cred: auth_sys(TEST_UID, TEST_UID),
        }
    }

    /// A client of the programs served in this process by `server`.
    pub fn loopback(server: &loopback::LocalServer) -> RpcClient {
        RpcClient {
            stream: Link::Local(Box::new(server.connect())),
            xid: first_xid(),
            cred: auth_sys(TEST_UID, TEST_UID),
        }
    }

    /// Connects to 127.0.0.1:`port` from an ephemeral (non-privileged) port.
    pub fn connect(port: u16) -> RpcClient {
        let s = TcpStream::connect(("127.0.0.1", port)).expect("connect to rnfsd");
        Self::from_stream(s)
    }

    /// Connects to 127.0.0.1:`port` from a privileged source port (below 1024; needs root).
    pub fn connect_privileged(port: u16) -> RpcClient {
        use socket2::{Domain, Socket, Type};
        let server: SocketAddr = ([127, 0, 0, 1], port).into();
        let start = 600 + (first_xid() % 400) as u16;
        for i in 0..400u16 {
            let p = 600 + (start - 600 + i) % 400;
            let s = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
            s.set_reuse_address(true).unwrap();
            let local: SocketAddr = ([127, 0, 0, 1], p).into();
            if s.bind(&local.into()).is_err() {
                continue;
            }
            if s.connect(&server.into()).is_ok() {
                return Self::from_stream(s.into());
            }
        }
        panic!("no privileged source port available");
    }

    /// Calls as `uid`/`gid` from now on.
    pub fn with_user(mut self, uid: u32, gid: u32) -> RpcClient {
        self.cred = auth_sys(uid, gid);
        self
    }

    /// Calls as `uid`/`gid` from now on.
    pub fn set_user(&mut self, uid: u32, gid: u32) {
        self.cred = auth_sys(uid, gid);
    }

    /// A second handle on the same connection, to read replies on another thread while this
    /// one sends.
    pub fn reader(&self) -> RpcClient {
        RpcClient {
            stream: Link::Tcp(self.stream.tcp().try_clone().expect("clone the connection")),
            xid: self.xid,
            cred: self.cred.clone(),
        }
    }

    /// The local (source) port of the connection.
    pub fn local_port(&self) -> u16 {
        self.stream.tcp().local_addr().unwrap().port()
    }

    /// How long a read waits.
    pub fn set_read_timeout(&self, t: Duration) {
        self.stream.tcp().set_read_timeout(Some(t)).unwrap();
    }

    /// A fresh transaction id.
    pub fn next_xid(&mut self) -> u32 {
        self.xid = self.xid.wrapping_add(1);
        self.xid
    }

    /// Encodes a call message (without record marking); returns its xid and bytes.
    pub fn build_call<A: Encode + ?Sized>(
        &mut self,
        prog: u32,
        vers: u32,
        proc_: u32,
        args: &A,
    ) -> (u32, Vec<u8>) {
        let xid = self.next_xid();
        let mut e = Encoder::new();
        encode_call(&mut e, xid, prog, vers, proc_, &self.cred);
        args.encode(&mut e);
        (xid, e.finish().to_bytes().to_vec())
    }

    /// Sends `body` as one record (single last fragment).
    pub fn send_record(&mut self, body: &[u8]) -> io::Result<()> {
        let mut v = Vec::with_capacity(body.len() + 4);
        v.extend_from_slice(&(0x8000_0000u32 | body.len() as u32).to_be_bytes());
        v.extend_from_slice(body);
        self.stream.write_all(&v)
    }

    /// Whether something arrives to be read within `wait` (a TCP connection's next record,
    /// e.g. a callback), without reading it.
    pub fn readable_within(&self, wait: std::time::Duration) -> bool {
        let s = self.stream.tcp();
        s.set_read_timeout(Some(wait)).expect("set a read timeout");
        let got = s.peek(&mut [0u8; 1]).is_ok_and(|n| n > 0);
        s.set_read_timeout(None).expect("clear the read timeout");
        got
    }

    /// Sends raw bytes, record marking included.
    pub fn send_raw(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.stream.write_all(bytes)
    }

    /// Sends a call and returns its xid without waiting for the reply.
    pub fn send_call<A: Encode + ?Sized>(
        &mut self,
        prog: u32,
        vers: u32,
        proc_: u32,
        args: &A,
    ) -> u32 {
        let (xid, body) = self.build_call(prog, vers, proc_, args);
        self.send_record(&body).expect("send call");
        xid
    }

    /// Reads whatever bytes arrive (0 at end of stream).
    pub fn read_raw(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.stream.read(buf)
    }

    /// Reads one record (joining fragments).
    pub fn read_record(&mut self) -> io::Result<Bytes> {
        let mut out = Vec::new();
        loop {
            let mut h = [0u8; 4];
            self.stream.read_exact(&mut h)?;
            let h = u32::from_be_bytes(h);
            let len = (h & 0x7fff_ffff) as usize;
            let start = out.len();
            out.resize(start + len, 0);
            self.stream.read_exact(&mut out[start..])?;
            if h & 0x8000_0000 != 0 {
                return Ok(Bytes::from(out));
            }
        }
    }

    /// Reads and decodes the next reply.
    pub fn recv_reply(&mut self) -> (u32, RpcReply) {
        let rec = self.read_record().expect("read reply");
        parse_reply(rec)
    }

    /// One call and its reply (the xid must match).
    pub fn call<A: Encode + ?Sized>(
        &mut self,
        prog: u32,
        vers: u32,
        proc_: u32,
        args: &A,
    ) -> RpcReply {
        let xid = self.send_call(prog, vers, proc_, args);
        let (rxid, r) = self.recv_reply();
        assert_eq!(rxid, xid, "reply xid does not match the call");
        r
    }

    /// An NFSv3 call that must be accepted; returns the decoded result.
    pub fn nfs<A: Encode + ?Sized, R: Decode>(&mut self, p: u32, args: &A) -> R {
        match self.call(NFS3_PROGRAM, NFS_V3, p, args) {
            RpcReply::Success(body) => decode_all(body),
            other => panic!("NFS {p:?}: call not accepted: {other:?}"),
        }
    }

    /// A MOUNT v3 call that must be accepted; returns the decoded result.
    pub fn mount<A: Encode + ?Sized, R: Decode>(&mut self, p: u32, args: &A) -> R {
        match self.call(MOUNTPROG, MOUNTVERS3, p, args) {
            RpcReply::Success(body) => decode_all(body),
            other => panic!("MOUNT {p:?}: call not accepted: {other:?}"),
        }
    }

    // --- MOUNT -------------------------------------------------------------------------------

    /// MNT of `path`.
    pub fn mnt(&mut self, path: impl AsRef<Path>) -> Mountres3 {
        let p = path.as_ref().as_os_str().as_encoded_bytes();
        self.mount(MOUNTPROC_MNT, &Dirpath(name(p)))
    }

    /// MNT of `path`, which must succeed.
    pub fn mnt_ok(&mut self, path: impl AsRef<Path>) -> NfsFh3 {
        match self.mnt(path.as_ref()) {
            Mountres3::Ok(ok) => fh3(ok.fhandle),
            Mountres3::Fail(s) => panic!("MNT {}: {s:?}", path.as_ref().display()),
        }
    }

    // --- NFSv3 -------------------------------------------------------------------------------

    /// NULL (NFS).
    pub fn null(&mut self) -> RpcReply {
        self.call(NFS3_PROGRAM, NFS_V3, NFSPROC3_NULL, &Void)
    }

    /// GETATTR.
    pub fn getattr(&mut self, fh: &NfsFh3) -> Getattr3res {
        self.nfs(NFSPROC3_GETATTR, &Getattr3args { object: fh.clone() })
    }

    /// SETATTR without guard.
    pub fn setattr(&mut self, fh: &NfsFh3, s: Sattr3) -> Setattr3res {
        self.nfs(
            NFSPROC3_SETATTR,
            &Setattr3args {
                object: fh.clone(),
                new_attributes: s,
                guard: Sattrguard3(None),
            },
        )
    }

    /// LOOKUP.
    pub fn lookup(&mut self, dir: &NfsFh3, n: impl AsRef<[u8]>) -> Lookup3res {
        self.nfs(
            NFSPROC3_LOOKUP,
            &Lookup3args {
                what: Diropargs3 {
                    dir: dir.clone(),
                    name: name(n),
                },
            },
        )
    }

    /// LOOKUP that must succeed; returns the handle.
    pub fn lookup_ok(&mut self, dir: &NfsFh3, n: impl AsRef<[u8]>) -> NfsFh3 {
        let what = format!("LOOKUP {:?}", String::from_utf8_lossy(n.as_ref()));
        self.lookup(dir, n).expect_ok(&what).object
    }

    /// ACCESS.
    pub fn access(&mut self, fh: &NfsFh3, mask: u32) -> Access3res {
        self.nfs(
            NFSPROC3_ACCESS,
            &Access3args {
                object: fh.clone(),
                access: mask,
            },
        )
    }

    /// READLINK.
    pub fn readlink(&mut self, fh: &NfsFh3) -> Readlink3res {
        self.nfs(
            NFSPROC3_READLINK,
            &Readlink3args {
                symlink: fh.clone(),
            },
        )
    }

    /// READ.
    pub fn read(&mut self, fh: &NfsFh3, offset: u64, count: u32) -> Read3res {
        self.nfs(
            NFSPROC3_READ,
            &Read3args {
                file: fh.clone(),
                offset,
                count,
            },
        )
    }

    /// Reads a whole file of `size` bytes in chunks of `chunk`.
    pub fn read_all(&mut self, fh: &NfsFh3, chunk: u32) -> Vec<u8> {
        let mut out = Vec::new();
        loop {
            let r = self.read(fh, out.len() as u64, chunk).expect_ok("READ");
            assert_eq!(r.count as usize, r.data.len());
            out.extend_from_slice(r.data.in_memory().expect("decoded"));
            if r.eof {
                return out;
            }
            assert!(r.count > 0, "READ returned no data before eof");
        }
    }

    /// WRITE.
    pub fn write(&mut self, fh: &NfsFh3, offset: u64, data: Bytes, stable: StableHow) -> Write3res {
        self.nfs(NFSPROC3_WRITE, &write_args(fh, offset, data, stable))
    }

    /// CREATE (GUARDED) with `mode`.
    pub fn create(&mut self, dir: &NfsFh3, n: impl AsRef<[u8]>, mode: u32) -> Create3res {
        self.nfs(
            NFSPROC3_CREATE,
            &Create3args {
                r#where: Diropargs3 {
                    dir: dir.clone(),
                    name: name(n),
                },
                how: Createhow3::Guarded(sattr_mode(mode)),
            },
        )
    }

    /// CREATE that must succeed; returns the new handle.
    pub fn create_ok(&mut self, dir: &NfsFh3, n: impl AsRef<[u8]>, mode: u32) -> NfsFh3 {
        let what = format!("CREATE {:?}", String::from_utf8_lossy(n.as_ref()));
        let ok = self.create(dir, n, mode).expect_ok(&what);
        ok.obj.0.expect("CREATE returned no handle")
    }

    /// MKDIR with `mode`.
    pub fn mkdir(&mut self, dir: &NfsFh3, n: impl AsRef<[u8]>, mode: u32) -> Mkdir3res {
        self.nfs(
            NFSPROC3_MKDIR,
            &Mkdir3args {
                r#where: Diropargs3 {
                    dir: dir.clone(),
                    name: name(n),
                },
                attributes: sattr_mode(mode),
            },
        )
    }

    /// SYMLINK `n` -> `target`.
    pub fn symlink(
        &mut self,
        dir: &NfsFh3,
        n: impl AsRef<[u8]>,
        target: impl AsRef<[u8]>,
    ) -> Symlink3res {
        self.nfs(
            NFSPROC3_SYMLINK,
            &Symlink3args {
                r#where: Diropargs3 {
                    dir: dir.clone(),
                    name: name(n),
                },
                symlink: Symlinkdata3 {
                    symlink_attributes: sattr3(),
                    symlink_data: name(target),
                },
            },
        )
    }

    /// REMOVE.
    pub fn remove(&mut self, dir: &NfsFh3, n: impl AsRef<[u8]>) -> Remove3res {
        self.nfs(
            NFSPROC3_REMOVE,
            &Remove3args {
                object: Diropargs3 {
                    dir: dir.clone(),
                    name: name(n),
                },
            },
        )
    }

    /// RMDIR.
    pub fn rmdir(&mut self, dir: &NfsFh3, n: impl AsRef<[u8]>) -> Rmdir3res {
        self.nfs(
            NFSPROC3_RMDIR,
            &Rmdir3args {
                object: Diropargs3 {
                    dir: dir.clone(),
                    name: name(n),
                },
            },
        )
    }

    /// RENAME.
    pub fn rename(
        &mut self,
        from: &NfsFh3,
        from_name: impl AsRef<[u8]>,
        to: &NfsFh3,
        to_name: impl AsRef<[u8]>,
    ) -> Rename3res {
        self.nfs(
            NFSPROC3_RENAME,
            &Rename3args {
                from: Diropargs3 {
                    dir: from.clone(),
                    name: name(from_name),
                },
                to: Diropargs3 {
                    dir: to.clone(),
                    name: name(to_name),
                },
            },
        )
    }

    /// LINK.
    pub fn link(&mut self, file: &NfsFh3, dir: &NfsFh3, n: impl AsRef<[u8]>) -> Link3res {
        self.nfs(
            NFSPROC3_LINK,
            &Link3args {
                file: file.clone(),
                link: Diropargs3 {
                    dir: dir.clone(),
                    name: name(n),
                },
            },
        )
    }

    /// READDIR.
    pub fn readdir(
        &mut self,
        dir: &NfsFh3,
        cookie: u64,
        cookieverf: [u8; 8],
        count: u32,
    ) -> Readdir3res {
        self.nfs(
            NFSPROC3_READDIR,
            &Readdir3args {
                dir: dir.clone(),
                cookie,
                cookieverf,
                count,
            },
        )
    }

    /// READDIRPLUS.
    pub fn readdirplus(
        &mut self,
        dir: &NfsFh3,
        cookie: u64,
        cookieverf: [u8; 8],
        dircount: u32,
        maxcount: u32,
    ) -> Readdirplus3res {
        self.nfs(
            NFSPROC3_READDIRPLUS,
            &Readdirplus3args {
                dir: dir.clone(),
                cookie,
                cookieverf,
                dircount,
                maxcount,
            },
        )
    }

    /// COMMIT of the whole file.
    pub fn commit(&mut self, fh: &NfsFh3) -> Commit3res {
        self.nfs(
            NFSPROC3_COMMIT,
            &Commit3args {
                file: fh.clone(),
                offset: 0,
                count: 0,
            },
        )
    }

    /// FSINFO.
    pub fn fsinfo(&mut self, fh: &NfsFh3) -> Fsinfo3res {
        self.nfs(NFSPROC3_FSINFO, &Fsinfo3args { fsroot: fh.clone() })
    }
}

/// WRITE3args for `data` at `offset`.
pub fn write_args(fh: &NfsFh3, offset: u64, data: Bytes, stable: StableHow) -> Write3args {
    Write3args {
        file: fh.clone(),
        offset,
        count: data.len() as u32,
        stable,
        data,
    }
}

/// The attributes of a LOOKUP / CREATE result.
pub fn attrs(p: &PostOpAttr) -> &Fattr3 {
    p.0.as_ref().expect("no post-op attributes")
}

/// A NULL call on a new connection succeeds (the server is alive and accepting).
pub fn assert_serves_new_connection(port: u16) {
    let mut c = RpcClient::connect(port);
    assert_eq!(
        c.null(),
        RpcReply::Success(Bytes::new()),
        "NULL on a new connection"
    );
}

/// Deterministic pseudo-random bytes (xorshift64*), different for each `seed`.
pub fn pattern(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut v = Vec::with_capacity(len + 8);
    while v.len() < len {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        v.extend_from_slice(&x.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes());
    }
    v.truncate(len);
    v
}

/// GET `path` from the metrics endpoint at `addr`; the whole HTTP response.
pub fn http_get(addr: SocketAddr, path: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

/// The value of the first sample of `name` (with its labels, if any) in a metrics text.
pub fn metric(text: &str, name: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name))
        .and_then(|rest| rest.trim().parse::<f64>().ok())
        .map(|v| v as u64)
}
