//! A real MIT Kerberos KDC for tests and benchmarks (Debian's krb5-kdc): a realm created under
//! a temporary directory, principals with random keys exported to keytabs, and `krb5kdc` on a
//! loopback port, stopped on drop. Nothing outside the directory is touched; processes that
//! should use the realm get [`Kdc::env`].

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The realm every test KDC serves.
pub const REALM: &str = "RNFS.TEST";

/// A running KDC and its files.
pub struct Kdc {
    dir: PathBuf,
    child: Child,
    /// The KDC's port on 127.0.0.1 (UDP and TCP).
    pub port: u16,
}

/// Why a KDC could not be set up.
#[derive(Debug, thiserror::Error)]
#[error("test KDC: {0}")]
pub struct KdcError(String);

fn free_port() -> Result<u16, KdcError> {
    // a port free for both: bound for TCP, then checked for UDP
    for _ in 0..50 {
        let t = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| KdcError(e.to_string()))?;
        let p = t.local_addr().map_err(|e| KdcError(e.to_string()))?.port();
        if std::net::UdpSocket::bind(("127.0.0.1", p)).is_ok() {
            return Ok(p);
        }
    }
    Err(KdcError("no free port".into()))
}

impl Kdc {
    /// Creates a realm under `dir` (which must exist and be empty) and starts its KDC.
    pub fn start(dir: &Path) -> Result<Kdc, KdcError> {
        Self::start_with(dir, "")
    }

    /// As [`Kdc::start`], with more `[libdefaults]` lines in the krb5.conf its users get
    /// (`permitted_enctypes = ...` orders the enctypes contexts are made with).
    pub fn start_with(dir: &Path, libdefaults: &str) -> Result<Kdc, KdcError> {
        let io = |e: std::io::Error| KdcError(e.to_string());
        std::fs::write(dir.join("kadm5.acl"), "").map_err(io)?;
        let mut created = false;
        // a port free when looked at may be taken before krb5kdc binds it (other test
        // binaries start KDCs too): then another
        for _ in 0..5 {
            let port = free_port()?;
            Self::configure(dir, libdefaults, port)?;
            if !created {
                run(Self::tool(dir, "kdb5_util").args([
                    "create",
                    "-s",
                    "-r",
                    REALM,
                    "-P",
                    "rnfs-test-master",
                ]))?;
                created = true;
            }
            // krb5kdc under a watchdog that stops it when this process is gone (a test
            // binary that keeps its KDC in a static never drops it)
            let watch = format!(
                "krb5kdc -n -r {REALM} & k=$!; while kill -0 {} 2>/dev/null && kill -0 $k 2>/dev/null; \
                 do sleep 1; done; kill $k 2>/dev/null",
                std::process::id()
            );
            let child = Self::tool(dir, "sh")
                .args(["-c", &watch])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .map_err(|e| KdcError(format!("krb5kdc: {e}")))?;
            let mut me = Kdc {
                dir: dir.to_path_buf(),
                child,
                port,
            };
            // ready when it accepts on its TCP port; gone: the port was taken
            let until = Instant::now() + Duration::from_secs(30);
            loop {
                if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                    return Ok(me);
                }
                if me.child.try_wait().ok().flatten().is_some() || Instant::now() > until {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        Err(KdcError("krb5kdc did not start listening".into()))
    }

    /// Writes krb5.conf and kdc.conf for a KDC on `port`.
    fn configure(dir: &Path, libdefaults: &str, port: u16) -> Result<(), KdcError> {
        let d = dir.display();
        std::fs::write(
            dir.join("krb5.conf"),
            format!(
                "[libdefaults]\n default_realm = {REALM}\n dns_lookup_kdc = false\n \
                 dns_lookup_realm = false\n rdns = false\n dns_canonicalize_hostname = false\n \
                 udp_preference_limit = 1\n{libdefaults}\n\
                 [realms]\n {REALM} = {{\n  kdc = 127.0.0.1:{port}\n }}\n"
            ),
        )
        .map_err(|e| KdcError(e.to_string()))?;
        std::fs::write(
            dir.join("kdc.conf"),
            format!(
                "[kdcdefaults]\n kdc_ports = {port}\n kdc_tcp_ports = {port}\n\
                 [realms]\n {REALM} = {{\n  database_name = {d}/principal\n  \
                 key_stash_file = {d}/stash\n  acl_file = {d}/kadm5.acl\n  \
                 max_life = 10h 0m 0s\n  max_renewable_life = 1d\n }}\n\
                 [logging]\n kdc = FILE:{d}/kdc.log\n"
            ),
        )
        .map_err(|e| KdcError(e.to_string()))
    }

    /// A command of the KDC's tools with the realm's configuration.
    fn tool(dir: &Path, prog: &str) -> Command {
        let mut c = Command::new(prog);
        c.env("KRB5_CONFIG", dir.join("krb5.conf"))
            .env("KRB5_KDC_PROFILE", dir.join("kdc.conf"))
            .stdin(Stdio::null());
        c
    }

    fn kadmin(&self, query: &str) -> Result<(), KdcError> {
        run(Self::tool(&self.dir, "kadmin.local").args(["-r", REALM, "-q", query]))
    }

    /// Adds `principal` with a random key and exports the key to `keytab` (a path in the
    /// KDC's directory is usual).
    pub fn add(&self, principal: &str, keytab: &Path) -> Result<(), KdcError> {
        self.add_with(principal, keytab, None)
    }

    /// As [`Kdc::add`], with keys of `enctypes` only (kadmin's `-e` list, e.g.
    /// `aes256-sha2:normal`): tickets for a service principal made so carry session keys of
    /// those enctypes.
    pub fn add_with(
        &self,
        principal: &str,
        keytab: &Path,
        enctypes: Option<&str>,
    ) -> Result<(), KdcError> {
        let e = enctypes.map(|e| format!("-e {e} ")).unwrap_or_default();
        self.kadmin(&format!("addprinc -randkey {e}{principal}"))?;
        if let Some(list) = enctypes {
            // the KDC otherwise picks session keys from its own preferences
            let names: Vec<&str> = list
                .split(' ')
                .map(|e| e.split(':').next().unwrap_or(e))
                .collect();
            self.kadmin(&format!(
                "setstr {principal} session_enctypes {}",
                names.join(",")
            ))?;
        }
        self.kadmin(&format!("ktadd -k {} {e}{principal}", keytab.display()))
    }

    /// Removes `principal` (its tickets stop being issued).
    pub fn delete(&self, principal: &str) -> Result<(), KdcError> {
        self.kadmin(&format!("delprinc -force {principal}"))
    }

    /// The krb5.conf clients and servers of this realm use.
    pub fn krb5_conf(&self) -> PathBuf {
        self.dir.join("krb5.conf")
    }

    /// The directory of the realm's files.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// What a process needs in its environment to use this realm, with `client_keytab` as
    /// where its initiator credentials come from; tickets go to a cache collection in the
    /// realm's directory (one cache per principal, so several users can be in one process).
    pub fn env(&self, client_keytab: &Path) -> Vec<(&'static str, String)> {
        let cc = self.dir.join("ccache");
        let _ = std::fs::create_dir_all(&cc);
        vec![
            ("KRB5_CONFIG", self.krb5_conf().display().to_string()),
            ("KRB5_CLIENT_KTNAME", client_keytab.display().to_string()),
            ("KRB5CCNAME", format!("DIR:{}", cc.display())),
        ]
    }
}

impl Drop for Kdc {
    fn drop(&mut self) {
        // the watchdog's KDC goes when the watchdog does: at its next check
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn run(c: &mut Command) -> Result<(), KdcError> {
    let out = c
        .output()
        .map_err(|e| KdcError(format!("{:?}: {e}", c.get_program())))?;
    if !out.status.success() {
        return Err(KdcError(format!(
            "{:?} {:?}: {}{}",
            c.get_program(),
            c.get_args().collect::<Vec<_>>(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok(())
}
