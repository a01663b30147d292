//! rnfsd's admin interface: the messages exchanged on its local Unix socket, and a client.
//!
//! One request per connection: the client writes one JSON object and a newline, rnfsd answers
//! with one JSON object and a newline, then closes. JSON because the same answer serves the
//! human tables of `rnfsctl` and scripts (`rnfsctl --json`); the socket is local and root-only,
//! so there is no authentication beyond the peer's uid.
#![forbid(unsafe_code)]

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub mod cli;
pub mod table;

/// Where rnfsd listens by default.
pub const DEFAULT_SOCKET: &str = "/run/rnfsd/admin.sock";

/// Largest request rnfsd reads (a request is a command name and an argument or two).
pub const MAX_REQUEST: usize = 64 * 1024;

/// What a client asks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "cmd", rename_all = "snake_case")]
pub enum Request {
    /// The exports being served, with their client rules.
    Exports,
    /// The clients: NFSv3 hosts (mounts, NLM locks) and NFSv4 clients (state).
    Clients,
    /// Revoke a client's state: an NFSv4 client id (hex, as `clients` shows it) or an NFSv3
    /// host (its address or NLM name), whose NLM locks are released.
    Evict {
        /// The client, as `clients` names it.
        client: String,
    },
    /// Re-read the exports file(s) and apply the change (as SIGHUP does).
    Reload,
    /// Limits and counters.
    Status,
    /// Take a pNFS data server out of service: no new files go there and its copies move
    /// to the other data servers.
    PnfsDrain {
        /// The data server's name (as `--pnfs-ds` gives it).
        ds: String,
    },
    /// This head's identity and every identity of its cluster (`--cluster`).
    Cluster,
    /// Forget an identity's exports in the cluster's export registry, so that another
    /// identity may export those trees; refused while a head holds the identity.
    ClusterRelease {
        /// The identity (`--node-id`).
        id: String,
    },
}

/// rnfsd's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum Response {
    /// Answer to [`Request::Exports`].
    Exports {
        /// One per export, in configuration order.
        exports: Vec<ExportInfo>,
    },
    /// Answer to [`Request::Clients`].
    Clients {
        /// NFSv3 hosts: those with mounts or NLM state.
        nfs3: Vec<Nfs3Client>,
        /// NFSv4 clients, confirmed or not.
        nfs4: Vec<Nfs4Client>,
        /// RPCSEC_GSS (Kerberos) contexts held, by client address (any program).
        #[serde(default)]
        gss: Vec<GssContextInfo>,
    },
    /// Answer to [`Request::Evict`]: what was released.
    Evicted {
        /// What the evicted client was, as `clients` showed it.
        client: String,
        /// Opens, locks, delegations and NLM locks released.
        released: u64,
    },
    /// Answer to [`Request::Reload`].
    Reloaded {
        /// Exports after the reload.
        exports: usize,
        /// Paths newly exported.
        added: Vec<String>,
        /// Paths no longer exported (their handles are now stale).
        removed: Vec<String>,
        /// Paths whose client rules changed.
        changed: Vec<String>,
    },
    /// Answer to [`Request::Status`].
    Status {
        /// rnfsd's version.
        version: String,
        /// Seconds since start.
        uptime_secs: u64,
        /// Configured limits, by name.
        limits: Vec<(String, u64)>,
        /// Counters and gauges, by name.
        counters: Vec<(String, u64)>,
    },
    /// Answer to [`Request::PnfsDrain`]: the data servers being taken out of service.
    Draining {
        /// Each one, with the copies of files it still holds.
        draining: Vec<(String, u64)>,
    },
    /// Answer to [`Request::Cluster`].
    Cluster {
        /// The identity this head serves (`--node-id`).
        node_id: String,
        /// Its claim's fencing token (the etcd revision of the claim).
        revision: i64,
        /// Whether this head may still answer (its fence holds).
        serving: bool,
        /// The address that follows the identity, if rnfsd moves one.
        service_address: Option<String>,
        /// Whether the NFSv4 / NLM grace period is running here.
        grace: bool,
        /// Every identity with a claim or records in the cluster.
        identities: Vec<IdentityInfo>,
    },
    /// Answer to [`Request::ClusterRelease`]: the registry as it is now.
    Released {
        /// The identity whose exports were forgotten.
        id: String,
        /// Every export still registered, as (identity, path).
        exports: Vec<(String, String)>,
    },
    /// The request failed; nothing changed.
    Error {
        /// Why.
        message: String,
    },
}

/// One identity of the cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdentityInfo {
    /// The identity (`--node-id`).
    pub id: String,
    /// The head that holds it (host name and pid), or none while unserved.
    pub holder: Option<String>,
    /// The claim's fencing token; 0 while unheld.
    pub revision: i64,
    /// Seconds left on the claim's lease; -1 when there is none.
    pub lease_ttl_secs: i64,
    /// Whether its grace period runs, as its holder last published it, and since when (Unix
    /// seconds); None when never published.
    #[serde(default)]
    pub grace: Option<(bool, u64)>,
}

/// One export.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExportInfo {
    /// The exported directory.
    pub path: String,
    /// The export's id in file handles (`fsid=` or derived from the path).
    pub fsid: u32,
    /// Whether this export is the NFSv4 root (`fsid=0` / `fsid=root`).
    pub v4_root: bool,
    /// Client rules in order: the client and its options as exports(5) writes them.
    pub rules: Vec<(String, String)>,
}

/// An NFSv3 host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Nfs3Client {
    /// The host's address.
    pub address: String,
    /// Paths it mounted (MOUNT's list; advisory, as in every server).
    pub mounts: Vec<String>,
    /// Its NLM name (`caller_name`), when it has NLM state.
    pub nlm_name: Option<String>,
    /// Its NLM locks.
    pub locks: Vec<LockInfo>,
    /// Its NLM share reservations.
    pub shares: u64,
}

/// A byte-range lock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockInfo {
    /// The file: export-relative path when it can be found, else the file's id.
    pub file: String,
    /// First byte.
    pub offset: u64,
    /// Bytes covered (0: to the end of the file).
    pub length: u64,
    /// Exclusive (write) lock.
    pub exclusive: bool,
}

/// An NFSv4 client.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Nfs4Client {
    /// The client id, hex (what [`Request::Evict`] takes).
    pub id: String,
    /// The client's owner string (co_ownerid), printable characters kept.
    pub owner: String,
    /// Address of its last call, if known.
    pub address: Option<String>,
    /// Minor version.
    pub minor_version: u32,
    /// Confirmed (SETCLIENTID_CONFIRM / CREATE_SESSION done).
    pub confirmed: bool,
    /// Seconds since it last renewed its lease.
    pub idle_secs: u64,
    /// Sessions.
    pub sessions: u64,
    /// Open stateids.
    pub opens: u64,
    /// Lock stateids.
    pub locks: u64,
    /// Delegations.
    pub delegations: u64,
    /// The flavor and principal (or AUTH_SYS uid) it introduced itself with:
    /// `krb5p alice@EXAMPLE.COM`, `sys uid 1000`.
    #[serde(default)]
    pub auth: String,
}

/// An RPCSEC_GSS context.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GssContextInfo {
    /// Address of the client that established it.
    pub address: String,
    /// The Kerberos principal.
    pub principal: String,
    /// The local uid it maps to; none: the export's anonymous user.
    pub uid: Option<u32>,
    /// The services its calls used so far (`krb5`, `krb5i`, `krb5p`).
    pub services: Vec<String>,
    /// Seconds until it expires (its ticket's end).
    pub expires_secs: u64,
    /// What protects its messages (the Kerberos enctype).
    #[serde(default)]
    pub cipher: String,
}

/// Errors of a client of the admin socket.
#[derive(Debug)]
pub enum ClientError {
    /// The socket could not be reached or the exchange failed.
    Io(std::io::Error),
    /// rnfsd's answer was not a [`Response`].
    BadAnswer(String),
}

impl std::fmt::Display for ClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientError::Io(e) => write!(f, "{e}"),
            ClientError::BadAnswer(s) => write!(f, "rnfsd answered something unexpected: {s}"),
        }
    }
}

impl std::error::Error for ClientError {}

/// Sends one request to the socket at `path` and reads the answer.
pub fn call(path: &Path, req: &Request, timeout: Duration) -> Result<Response, ClientError> {
    let mut s = UnixStream::connect(path).map_err(ClientError::Io)?;
    s.set_read_timeout(Some(timeout)).map_err(ClientError::Io)?;
    s.set_write_timeout(Some(timeout))
        .map_err(ClientError::Io)?;
    let mut line = serde_json::to_vec(req).map_err(|e| ClientError::BadAnswer(e.to_string()))?;
    line.push(b'\n');
    s.write_all(&line).map_err(ClientError::Io)?;
    let mut answer = String::new();
    BufReader::new(s)
        .read_line(&mut answer)
        .map_err(ClientError::Io)?;
    serde_json::from_str(&answer).map_err(|e| ClientError::BadAnswer(format!("{e}: {answer:.200}")))
}
