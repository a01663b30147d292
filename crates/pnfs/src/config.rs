//! What a metadata server is told of its data servers: one `--pnfs-ds` per DS, the mirror
//! count, and the synthetic ids it hands out; checked before anything is started.

use std::net::{SocketAddr, ToSocketAddrs};
use std::ops::RangeInclusive;

/// One data server: an NFSv3 export the MDS reaches as a client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DsSpec {
    /// Its name in the configuration, metrics and logs (stable: it names the device).
    pub name: String,
    /// Address of its NFS service (TCP).
    pub addr: SocketAddr,
    /// The exported directory the DS files go in.
    pub export: String,
    /// Port of its MOUNT service; None: the NFS port first (rnfsd serves MOUNT there), then
    /// the host's port mapper (knfsd's mountd).
    pub mount_port: Option<u16>,
    /// Port where it serves NFS over RDMA, advertised to clients before TCP.
    pub rdma_port: Option<u16>,
}

/// Why a configuration is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// A `--pnfs-ds` value that does not parse.
    #[error("--pnfs-ds {0:?}: expected NAME=HOST:PORT:/EXPORT[,rdma=PORT][,mount=PORT]: {1}")]
    BadDs(String, String),
    /// Two data servers with one name.
    #[error("two data servers are named {0:?}")]
    DuplicateName(String),
    /// Two data servers at one address and export.
    #[error("data servers {0:?} and {1:?} are the same export")]
    DuplicateDs(String, String),
    /// More mirrors than data servers to put them on.
    #[error("--pnfs-mirrors {0} needs at least {0} data servers, {1} given")]
    TooFewDs(u32, usize),
    /// A mirror count of 0, or above the client's limit.
    #[error("--pnfs-mirrors {0}: must be 1 to 4")]
    BadMirrors(u32),
    /// A synthetic id range that is empty or covers root.
    #[error("--pnfs-ids {0}: expected LOW-HIGH with 0 < LOW < HIGH")]
    BadIds(String),
}

impl std::str::FromStr for DsSpec {
    type Err = ConfigError;

    fn from_str(s: &str) -> Result<Self, ConfigError> {
        let bad = |why: &str| ConfigError::BadDs(s.to_owned(), why.to_owned());
        let (name, rest) = s.split_once('=').ok_or_else(|| bad("no NAME="))?;
        let valid_name = !name.is_empty()
            && name.len() <= 64
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.');
        if !valid_name {
            return Err(bad("NAME is 1-64 of A-Z a-z 0-9 - _ ."));
        }
        let mut parts = rest.split(',');
        let target = parts.next().unwrap_or_default();
        // HOST:PORT ends where the export path starts
        let at = target.find(":/").ok_or_else(|| bad("no :/EXPORT"))?;
        let (hostport, export) = (&target[..at], &target[at + 1..]);
        let addr = hostport
            .to_socket_addrs()
            .map_err(|e| bad(&format!("{hostport}: {e}")))?
            .next()
            .ok_or_else(|| bad(&format!("{hostport}: no address")))?;
        let mut spec = DsSpec {
            name: name.to_owned(),
            addr,
            export: export.to_owned(),
            mount_port: None,
            rdma_port: None,
        };
        for opt in parts {
            let (k, v) = opt.split_once('=').ok_or_else(|| bad(opt))?;
            let port = v
                .parse::<u16>()
                .ok()
                .filter(|p| *p != 0)
                .ok_or_else(|| bad(&format!("{k}={v}: not a port")))?;
            match k {
                "rdma" => spec.rdma_port = Some(port),
                "mount" => spec.mount_port = Some(port),
                _ => return Err(bad(&format!("unknown option {k}"))),
            }
        }
        Ok(spec)
    }
}

/// How a new file's data servers are chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Placement {
    /// In turn, in configuration order.
    #[default]
    RoundRobin,
    /// The ones with the most space available (FSSTAT), round-robin among equals.
    LeastUsed,
}

impl std::str::FromStr for Placement {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "round-robin" => Ok(Placement::RoundRobin),
            "least-used" => Ok(Placement::LeastUsed),
            _ => Err(format!("{s:?}: expected round-robin or least-used")),
        }
    }
}

/// The data servers of a metadata server and how files are laid out on them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PnfsConfig {
    /// The data servers, in the order given (round-robin placement follows it).
    pub data_servers: Vec<DsSpec>,
    /// Copies of each file, on distinct data servers.
    pub mirrors: u32,
    /// The synthetic uids and gids given to files on the data servers (fencing changes them).
    pub ids: RangeInclusive<u32>,
    /// How a new file's data servers are chosen.
    pub placement: Placement,
    /// Layout stateids the metadata server keeps before it asks clients to return some
    /// (CB_RECALL_ANY).
    pub max_layouts: usize,
}

/// The synthetic ids used when none are given: far from real users and groups.
pub const DEFAULT_IDS: RangeInclusive<u32> = 0x4000_0000..=0x4fff_ffff;

impl PnfsConfig {
    /// Checks the configuration as a whole.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !(1..=4).contains(&self.mirrors) {
            return Err(ConfigError::BadMirrors(self.mirrors));
        }
        if (self.data_servers.len() as u64) < u64::from(self.mirrors) {
            return Err(ConfigError::TooFewDs(self.mirrors, self.data_servers.len()));
        }
        for (i, a) in self.data_servers.iter().enumerate() {
            for b in &self.data_servers[..i] {
                if a.name == b.name {
                    return Err(ConfigError::DuplicateName(a.name.clone()));
                }
                if a.addr == b.addr && a.export == b.export {
                    return Err(ConfigError::DuplicateDs(b.name.clone(), a.name.clone()));
                }
            }
        }
        Ok(())
    }
}

/// Parses `--pnfs-ids LOW-HIGH`.
pub fn parse_ids(s: &str) -> Result<RangeInclusive<u32>, ConfigError> {
    let bad = || ConfigError::BadIds(s.to_owned());
    let (lo, hi) = s.split_once('-').ok_or_else(bad)?;
    let lo: u32 = lo.trim().parse().map_err(|_| bad())?;
    let hi: u32 = hi.trim().parse().map_err(|_| bad())?;
    if lo == 0 || lo >= hi {
        return Err(bad());
    }
    Ok(lo..=hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ds(s: &str) -> Result<DsSpec, ConfigError> {
        s.parse()
    }

    #[test]
    fn data_server_specs() {
        let d = ds("ds1=127.0.0.1:2049:/srv/ds1").unwrap();
        assert_eq!(d.name, "ds1");
        assert_eq!(d.addr, "127.0.0.1:2049".parse().unwrap());
        assert_eq!(d.export, "/srv/ds1");
        assert_eq!((d.rdma_port, d.mount_port), (None, None));
        let d = ds("b=[::1]:2050:/x/y,rdma=20049,mount=635").unwrap();
        assert_eq!(d.addr, "[::1]:2050".parse().unwrap());
        assert_eq!(d.export, "/x/y");
        assert_eq!((d.rdma_port, d.mount_port), (Some(20049), Some(635)));
        for bad in [
            "127.0.0.1:2049:/x",
            "=127.0.0.1:2049:/x",
            "a b=127.0.0.1:2049:/x",
            "a=127.0.0.1:2049",
            "a=127.0.0.1:/x",
            "a=127.0.0.1:2049:/x,rdma=0",
            "a=127.0.0.1:2049:/x,rdma=x",
            "a=127.0.0.1:2049:/x,tls=1",
            "a=127.0.0.1:2049:/x,rdma",
        ] {
            assert!(
                matches!(ds(bad), Err(ConfigError::BadDs(..))),
                "{bad}: {:?}",
                ds(bad)
            );
        }
    }

    #[test]
    fn whole_configurations() {
        let cfg = |dss: &[&str], mirrors| PnfsConfig {
            max_layouts: 1000,
            data_servers: dss.iter().map(|s| s.parse().unwrap()).collect(),
            mirrors,
            ids: DEFAULT_IDS,
            placement: Placement::default(),
        };
        let two = ["a=127.0.0.1:1:/a", "b=127.0.0.1:2:/b"];
        assert_eq!(cfg(&two, 2).validate(), Ok(()));
        assert_eq!(cfg(&two, 3).validate(), Err(ConfigError::TooFewDs(3, 2)));
        assert_eq!(cfg(&two, 0).validate(), Err(ConfigError::BadMirrors(0)));
        assert_eq!(
            cfg(&["a=127.0.0.1:1:/a", "a=127.0.0.1:2:/b"], 1).validate(),
            Err(ConfigError::DuplicateName("a".into()))
        );
        assert_eq!(
            cfg(&["a=127.0.0.1:1:/a", "b=127.0.0.1:1:/a"], 1).validate(),
            Err(ConfigError::DuplicateDs("a".into(), "b".into()))
        );
        assert_eq!(parse_ids("1000-2000"), Ok(1000..=2000));
        assert_eq!("least-used".parse(), Ok(Placement::LeastUsed));
        assert_eq!("round-robin".parse(), Ok(Placement::RoundRobin));
        assert!("random".parse::<Placement>().is_err());
        for bad in ["0-5", "5-5", "9-1", "x-2", "12"] {
            assert!(parse_ids(bad).is_err(), "{bad}");
        }
    }
}
