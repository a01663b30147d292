//! Port mapping, so that `mount -t nfs -o vers=3 host:/export` finds NFS and MOUNT.
//!
//! At start-up rnfsd registers its programs with a running rpcbind (PMAP v2 SET over TCP to
//! 127.0.0.1:111). When no rpcbind answers, it serves PMAP v2 itself on port 111 (TCP and UDP):
//! NULL, SET and UNSET (from loopback only), GETPORT and DUMP. rpcbind v3/v4 calls get
//! PROG_MISMATCH, after which the Linux mount helper and kernel fall back to v2 GETPORT.

use std::net::SocketAddr;
use std::time::Duration;

use parking_lot::Mutex;
use sunrpc::{client, CallContext, ProcError, Program};
use xdr::{Decoder, Encoder};

pub use sunrpc::client::{IPPROTO_TCP, IPPROTO_UDP, PMAP_PROGRAM, PMAP_V2};
const MAX_MAPPINGS: usize = 1024;

/// One registration: program, version, protocol and port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mapping {
    /// Program number.
    pub prog: u32,
    /// Version.
    pub vers: u32,
    /// IPPROTO_TCP or IPPROTO_UDP.
    pub prot: u32,
    /// Port.
    pub port: u32,
}

/// Our own PMAP v2 service, for machines without rpcbind.
pub struct Portmap {
    maps: Mutex<Vec<Mapping>>,
}

impl Portmap {
    /// A port mapper that already knows `maps`.
    pub fn new(maps: Vec<Mapping>) -> Self {
        Self {
            maps: Mutex::new(maps),
        }
    }

    fn decode_mapping(d: &mut Decoder) -> Result<Mapping, ProcError> {
        Ok(Mapping {
            prog: d.u32()?,
            vers: d.u32()?,
            prot: d.u32()?,
            port: d.u32()?,
        })
    }
}

impl Program for Portmap {
    fn program(&self) -> u32 {
        PMAP_PROGRAM
    }

    fn versions(&self) -> (u32, u32) {
        (PMAP_V2, PMAP_V2)
    }

    fn proc_name(&self, _vers: u32, p: u32) -> Option<&'static str> {
        Some(match p {
            0 => "NULL",
            1 => "SET",
            2 => "UNSET",
            3 => "GETPORT",
            4 => "DUMP",
            _ => return None,
        })
    }

    fn call(&self, ctx: &CallContext, mut d: Decoder, r: &mut Encoder) -> Result<(), ProcError> {
        match ctx.proc_ {
            0 => Ok(()),
            1 | 2 => {
                let m = Self::decode_mapping(&mut d)?;
                let mut maps = self.maps.lock();
                // Only local services may change the table.
                let ok = ctx.peer.ip().is_loopback()
                    && if ctx.proc_ == 1 {
                        if maps
                            .iter()
                            .any(|x| x.prog == m.prog && x.vers == m.vers && x.prot == m.prot)
                            || maps.len() >= MAX_MAPPINGS
                        {
                            false
                        } else {
                            maps.push(m);
                            true
                        }
                    } else {
                        let before = maps.len();
                        maps.retain(|x| !(x.prog == m.prog && x.vers == m.vers));
                        maps.len() != before
                    };
                r.bool(ok);
                Ok(())
            }
            3 => {
                let m = Self::decode_mapping(&mut d)?;
                let port = self
                    .maps
                    .lock()
                    .iter()
                    .find(|x| x.prog == m.prog && x.vers == m.vers && x.prot == m.prot)
                    .map_or(0, |x| x.port);
                r.u32(port);
                Ok(())
            }
            4 => {
                for m in self.maps.lock().iter() {
                    r.bool(true);
                    r.u32(m.prog);
                    r.u32(m.vers);
                    r.u32(m.prot);
                    r.u32(m.port);
                }
                r.bool(false);
                Ok(())
            }
            _ => Err(ProcError::ProcUnavail),
        }
    }
}

impl xdr::Encode for Mapping {
    fn encode(&self, e: &mut Encoder) {
        e.u32(self.prog);
        e.u32(self.vers);
        e.u32(self.prot);
        e.u32(self.port);
    }
}

/// Sends one PMAP v2 call over TCP and returns its one-word result.
async fn pmap_call(addr: SocketAddr, proc_: u32, m: &Mapping) -> std::io::Result<u32> {
    let opts = client::CallOpts::new(client::Proto::Tcp, Duration::from_secs(2), 1);
    let mut d = client::call(addr, PMAP_PROGRAM, PMAP_V2, proc_, m, &opts)
        .await
        .map_err(std::io::Error::other)?;
    d.u32()
        .map_err(|_| std::io::Error::other("portmap reply malformed"))
}

/// Registers `maps` with the rpcbind at `addr`; returns how many were accepted.
pub async fn register(addr: SocketAddr, maps: &[Mapping]) -> std::io::Result<usize> {
    let mut ok = 0;
    for m in maps {
        // A stale registration from an earlier run would make SET fail.
        let _ = pmap_call(addr, 2, m).await;
        if pmap_call(addr, 1, m).await? == 1 {
            ok += 1;
        }
    }
    Ok(ok)
}

/// Removes our registrations from the rpcbind at `addr`.
pub async fn unregister(addr: SocketAddr, maps: &[Mapping]) {
    for m in maps {
        let _ = pmap_call(addr, 2, m).await;
    }
}

/// The mappings of `maps` that no other service holds in the rpcbind at `addr` (a program
/// version registered there at a port other than `ours` belongs to someone else).
pub async fn unclaimed(addr: SocketAddr, maps: &[Mapping], ours: u16) -> Vec<Mapping> {
    let mut out = Vec::new();
    for m in maps {
        match pmap_call(addr, 3, m).await {
            Ok(p) if p == 0 || p == ours as u32 => out.push(*m),
            _ => {}
        }
    }
    out
}

/// Whether something answers PMAP calls at `addr`.
pub async fn rpcbind_running(addr: SocketAddr) -> bool {
    let probe = Mapping {
        prog: PMAP_PROGRAM,
        vers: PMAP_V2,
        prot: IPPROTO_TCP,
        port: 0,
    };
    pmap_call(addr, 3, &probe).await.is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use sunrpc::{Credential, TransportKind};

    fn ctx(proc_: u32, peer: &str) -> CallContext {
        CallContext {
            xid: 1,
            vers: 2,
            proc_,
            cred: Credential::None,
            gss: None,
            peer: peer.parse().unwrap(),
            local: None,
            transport: TransportKind::Udp,
            back: None,
            bulk: None,
            pages: false,
            alone: false,
        }
    }

    fn call(pm: &Portmap, proc_: u32, peer: &str, args: &[u32]) -> Vec<u32> {
        let mut e = Encoder::new();
        for a in args {
            e.u32(*a);
        }
        let mut out = Encoder::new();
        pm.call(
            &ctx(proc_, peer),
            Decoder::new(e.finish().to_bytes()),
            &mut out,
        )
        .unwrap();
        out.finish()
            .to_bytes()
            .chunks(4)
            .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    }

    #[test]
    fn getport_set_unset_dump() {
        let pm = Portmap::new(vec![Mapping {
            prog: 100003,
            vers: 3,
            prot: IPPROTO_TCP,
            port: 2049,
        }]);
        let remote = "10.0.0.2:900";
        let local = "127.0.0.1:900";
        assert_eq!(call(&pm, 3, remote, &[100003, 3, IPPROTO_TCP, 0]), [2049]);
        assert_eq!(call(&pm, 3, remote, &[100003, 4, IPPROTO_TCP, 0]), [0]);
        assert_eq!(call(&pm, 3, remote, &[100003, 3, IPPROTO_UDP, 0]), [0]);
        // Only loopback callers may change the table.
        assert_eq!(call(&pm, 1, remote, &[100024, 1, IPPROTO_TCP, 700]), [0]);
        assert_eq!(call(&pm, 1, local, &[100024, 1, IPPROTO_TCP, 700]), [1]);
        assert_eq!(call(&pm, 1, local, &[100024, 1, IPPROTO_TCP, 701]), [0]);
        assert_eq!(call(&pm, 3, remote, &[100024, 1, IPPROTO_TCP, 0]), [700]);
        assert_eq!(
            call(&pm, 4, remote, &[]),
            [1, 100003, 3, 6, 2049, 1, 100024, 1, 6, 700, 0]
        );
        assert_eq!(call(&pm, 2, remote, &[100024, 1, 0, 0]), [0]);
        assert_eq!(call(&pm, 2, local, &[100024, 1, 0, 0]), [1]);
        assert_eq!(call(&pm, 3, remote, &[100024, 1, IPPROTO_TCP, 0]), [0]);
    }

    #[test]
    fn truncated_args_are_garbage() {
        let pm = Portmap::new(vec![]);
        let mut out = Encoder::new();
        assert_eq!(
            pm.call(
                &ctx(3, "127.0.0.1:1"),
                Decoder::new(bytes::Bytes::from_static(&[0, 0, 0, 1])),
                &mut out
            ),
            Err(ProcError::GarbageArgs)
        );
    }
}
