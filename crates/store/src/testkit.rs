//! A real etcd cluster for tests: Debian's `etcd` (etcd-server) started as N members on
//! loopback ports under a temporary directory, members stopped and restarted at will, all
//! killed on drop. Not a mock: the same binary a site runs.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One member: its name, ports, and process while it runs.
struct Member {
    name: String,
    client_port: u16,
    peer_port: u16,
    child: Option<Child>,
}

/// An etcd cluster of loopback members.
pub struct EtcdCluster {
    dir: tempfile::TempDir,
    members: Vec<Member>,
    initial: String,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or(0)
}

fn etcd_binary() -> Option<PathBuf> {
    ["/usr/bin/etcd", "/usr/local/bin/etcd"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
}

impl EtcdCluster {
    /// Starts `n` members and waits until the cluster has a leader; None when etcd is not
    /// installed. Panics if it does not come up (with the members' logs).
    pub fn start(n: usize) -> Option<EtcdCluster> {
        etcd_binary()?;
        for attempt in 0..3 {
            let dir = tempfile::tempdir().expect("temporary directory");
            let members: Vec<Member> = (0..n)
                .map(|i| Member {
                    name: format!("m{i}"),
                    client_port: free_port(),
                    peer_port: free_port(),
                    child: None,
                })
                .collect();
            let initial = members
                .iter()
                .map(|m| format!("{}=http://127.0.0.1:{}", m.name, m.peer_port))
                .collect::<Vec<_>>()
                .join(",");
            let mut c = EtcdCluster {
                dir,
                members,
                initial,
            };
            for i in 0..n {
                c.spawn(i, "new");
            }
            if c.wait_healthy(Duration::from_secs(30)) {
                return Some(c);
            }
            // a port taken between choosing and binding it: try other ports
            eprintln!(
                "etcd cluster did not come up (attempt {attempt}):\n{}",
                c.logs()
            );
        }
        panic!("etcd cluster of {n} did not start");
    }

    fn spawn(&mut self, i: usize, state: &str) {
        let m = &self.members[i];
        let data = self.dir.path().join(&m.name);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join(format!("{}.log", m.name)))
            .expect("etcd log file");
        let client = format!("http://127.0.0.1:{}", m.client_port);
        let peer = format!("http://127.0.0.1:{}", m.peer_port);
        let child = Command::new(etcd_binary().expect("etcd"))
            .args(["--name", &m.name])
            .arg("--data-dir")
            .arg(&data)
            .args(["--listen-client-urls", &client])
            .args(["--advertise-client-urls", &client])
            .args(["--listen-peer-urls", &peer])
            .args(["--initial-advertise-peer-urls", &peer])
            .args(["--initial-cluster", &self.initial])
            .args(["--initial-cluster-state", state])
            .args(["--initial-cluster-token", "rnfs-test"])
            // fast elections, so that tests of member loss take seconds
            .args(["--heartbeat-interval", "50", "--election-timeout", "500"])
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("start etcd");
        self.members[i].child = Some(child);
    }

    /// Whether a member answers `/health` with a leader within `limit`.
    fn wait_healthy(&self, limit: Duration) -> bool {
        let t0 = Instant::now();
        while t0.elapsed() < limit {
            if self
                .members
                .iter()
                .filter(|m| m.child.is_some())
                .any(|m| health(m.client_port))
            {
                return true;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        false
    }

    /// The members' client URLs.
    pub fn endpoints(&self) -> Vec<String> {
        self.members
            .iter()
            .map(|m| format!("http://127.0.0.1:{}", m.client_port))
            .collect()
    }

    /// The cluster as rnfsd's `--cluster` takes it.
    pub fn url(&self) -> String {
        let hosts: Vec<String> = self
            .members
            .iter()
            .map(|m| format!("127.0.0.1:{}", m.client_port))
            .collect();
        format!("etcd://{}", hosts.join(","))
    }

    /// Kills member `i` (SIGKILL: as a machine that died).
    pub fn stop(&mut self, i: usize) {
        if let Some(mut c) = self.members[i].child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts member `i` again on its data directory.
    pub fn restart(&mut self, i: usize) {
        if self.members[i].child.is_none() {
            self.spawn(i, "existing");
        }
    }

    /// The members' logs, for a failure message.
    pub fn logs(&self) -> String {
        self.members
            .iter()
            .map(|m| {
                let p = self.dir.path().join(format!("{}.log", m.name));
                let text = std::fs::read_to_string(p).unwrap_or_default();
                let tail: Vec<&str> = text.lines().rev().take(15).collect();
                format!(
                    "--- {}:\n{}",
                    m.name,
                    tail.into_iter().rev().collect::<Vec<_>>().join("\n")
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// GET /health of a member: {"health":"true"} once the cluster has a leader.
fn health(port: u16) -> bool {
    use std::io::{Read, Write};
    let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    if s.write_all(b"GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        .is_err()
    {
        return false;
    }
    let mut body = String::new();
    let _ = s.read_to_string(&mut body);
    body.contains("\"health\":\"true\"")
}

impl Drop for EtcdCluster {
    fn drop(&mut self) {
        for i in 0..self.members.len() {
            self.stop(i);
        }
    }
}
