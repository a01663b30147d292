//! The rnfsd process under test, and the temporary trees it serves.

use super::*;
use std::fmt::Debug;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use nfs3wire::*;

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
    /// The port to listen on (127.0.0.1); None: any free one.
    pub port: Option<u16>,
    /// The address to listen on instead of 127.0.0.1 (0.0.0.0: a service address too).
    pub host: Option<std::net::IpAddr>,
    /// More environment variables (a fault layer's LD_PRELOAD).
    pub env: Vec<(String, String)>,
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
        cmd.envs(self.cfg.env.iter().map(|(k, v)| (k, v)));
        cmd.arg("--listen")
            .arg(
                std::net::SocketAddr::new(
                    self.cfg.host.unwrap_or([127, 0, 0, 1].into()),
                    self.cfg.port.unwrap_or(0),
                )
                .to_string(),
            )
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
        // one admin socket per server (the default one is the machine's)
        if !self
            .cfg
            .args
            .iter()
            .any(|a| a == "--admin-socket" || a == "--no-admin")
        {
            cmd.arg("--admin-socket").arg(self.admin_socket());
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

    /// The server's admin socket (in its state directory).
    pub fn admin_socket(&self) -> PathBuf {
        self.cfg.state_dir.join("admin.sock")
    }

    /// Asks the admin socket.
    pub fn admin(&self, req: admin::Request) -> admin::Response {
        admin::call(&self.admin_socket(), &req, Duration::from_secs(30))
            .unwrap_or_else(|e| panic!("admin socket: {e}; log:\n{}", self.log_text()))
    }

    /// Sends `sig` to the server.
    pub fn signal(&self, sig: i32) {
        // SAFETY: kill(2) on the pid of a child we own and have not reaped yet.
        unsafe {
            libc::kill(self.pid() as libc::pid_t, sig);
        }
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

    /// Whether `text` shows in the log within `wait`: a line the server wrote before its last
    /// reply may still be on its way through the pipe the log is read from.
    pub fn logs_within(&self, text: &str, wait: std::time::Duration) -> bool {
        let t = std::time::Instant::now();
        loop {
            if self.log_text().contains(text) {
                return true;
            }
            if t.elapsed() >= wait {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
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

    /// Kills the server with SIGKILL (a machine that died), leaving it stopped.
    pub fn crash(&mut self) {
        let mut child = self.child.take().expect("server not running");
        child.kill().expect("SIGKILL rnfsd");
        child.wait().expect("wait for rnfsd");
    }

    /// The configuration it was started with.
    pub fn config(&self) -> ServerConfig {
        self.cfg.clone()
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

    /// Starts a stopped server again, with configuration `cfg`.
    pub fn start_again(&mut self, cfg: ServerConfig) {
        assert!(self.child.is_none(), "server still running");
        self.cfg = cfg;
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

    /// One export of mode `mode` with `options` for 127.0.0.1, metrics, and more `rnfsd`
    /// arguments.
    pub fn with_options_args(mode: u32, options: &str, args: &[&str]) -> Fixture {
        Self::build_with(mode, Some(options), true, args)
    }

    /// Like [`Fixture::new`] with more environment variables for `rnfsd`.
    pub fn with_env(env: &[(String, String)]) -> Fixture {
        Self::build_env(0o777, None, false, &[], env)
    }

    /// Like [`Fixture::with_args`], with more environment variables for `rnfsd`.
    pub fn with_args_env(args: &[&str], env: &[(String, String)]) -> Fixture {
        Self::build_env(0o777, None, true, args, env)
    }

    fn build(mode: u32, options: Option<&str>, metrics: bool) -> Fixture {
        Self::build_with(mode, options, metrics, &[])
    }

    fn build_with(mode: u32, options: Option<&str>, metrics: bool, args: &[&str]) -> Fixture {
        Self::build_env(mode, options, metrics, args, &[])
    }

    fn build_env(
        mode: u32,
        options: Option<&str>,
        metrics: bool,
        args: &[&str],
        env: &[(String, String)],
    ) -> Fixture {
        let tmp = tempfile::tempdir().unwrap();
        let export = mkdir_mode(&tmp.path().join("export"), mode);
        let state = tmp.path().join("state");
        let mut cfg = ServerConfig {
            state_dir: state,
            metrics,
            args: args.iter().map(|a| a.to_string()).collect(),
            env: env.to_vec(),
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
