//! The status monitor (NSM version 1) of this server, and the notifications it sends when the
//! server starts again.
//!
//! Remote hosts call it for one thing: SM_NOTIFY, when they restarted, which makes their locks
//! go. SM_MON, SM_UNMON and SM_UNMON_ALL are for programs on this machine (as rpc.statd takes
//! them only from loopback); such a monitor is called back when its host restarts.

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use nlmwire::*;
use parking_lot::Mutex;
use sunrpc::client::{self, CallOpts, Proto};
use sunrpc::{CallContext, ProcError, Program};
use xdr::{Decoder, Encode, Encoder};

use crate::monitor::HostRecord;
use crate::{decode, LockService};

/// Local monitors (SM_MON) kept at once.
const MAX_MONITORS: usize = 4096;

/// The NSM version 1 program.
pub struct Nsm {
    svc: Arc<LockService>,
    monitors: Mutex<Vec<Mon>>,
}

impl Nsm {
    /// The program over the lock service.
    pub fn new(svc: Arc<LockService>) -> Self {
        Nsm {
            svc,
            monitors: Mutex::new(Vec::new()),
        }
    }

    fn stat_res(&self, ok: bool) -> SmStatRes {
        SmStatRes {
            res_stat: if ok {
                SmRes::stat_succ
            } else {
                SmRes::stat_fail
            },
            state: self.svc.state as i32,
        }
    }

    fn notified(&self, ctx: &CallContext, a: StatChge) {
        let n = self.svc.drop_hosts(Some(ctx.peer.ip()), Some(&a.mon_name));
        self.svc
            .counters
            .hosts_rebooted
            .fetch_add(1, Ordering::Relaxed);
        tracing::info!(
            host = %ctx.peer.ip(),
            name = %String::from_utf8_lossy(&a.mon_name),
            state = a.state,
            dropped = n,
            "a host restarted: its NLM locks are released"
        );
        let calls: Vec<Mon> = self
            .monitors
            .lock()
            .iter()
            .filter(|m| m.mon_id.mon_name == a.mon_name)
            .cloned()
            .collect();
        for m in calls {
            let status = SmStatus {
                mon_name: Bytes::copy_from_slice(&a.mon_name),
                state: a.state,
                r#priv: m.r#priv,
            };
            let id = m.mon_id.my_id;
            let pmap = SocketAddr::new(IpAddr::from([127, 0, 0, 1]), self.svc.cfg.grants.pmap_port);
            let timeout = self.svc.cfg.grants.call_timeout;
            spawn(async move {
                let opts = CallOpts::new(Proto::Udp, timeout, 3).from_server(None);
                let (prog, vers, proc_) = (id.my_prog as u32, id.my_vers as u32, id.my_proc as u32);
                let r = async {
                    let port = client::getport_at(pmap, prog, vers, Proto::Udp, &opts).await?;
                    let to = SocketAddr::new(pmap.ip(), port);
                    client::call(to, prog, vers, proc_, &status, &opts).await
                }
                .await;
                if let Err(e) = r {
                    tracing::warn!(prog, error = %e, "a local monitor was not told of a restart");
                }
            });
        }
    }
}

fn spawn(f: impl std::future::Future<Output = ()> + Send + 'static) {
    if let Ok(h) = tokio::runtime::Handle::try_current() {
        h.spawn(f);
    }
}

impl Program for Nsm {
    fn program(&self) -> u32 {
        SM_PROG
    }

    fn versions(&self) -> (u32, u32) {
        (SM_VERS, SM_VERS)
    }

    fn proc_name(&self, _vers: u32, p: u32) -> Option<&'static str> {
        Some(match p {
            0 => "SM_NULL",
            SM_STAT => "SM_STAT",
            SM_MON => "SM_MON",
            SM_UNMON => "SM_UNMON",
            SM_UNMON_ALL => "SM_UNMON_ALL",
            SM_SIMU_CRASH => "SM_SIMU_CRASH",
            SM_NOTIFY => "SM_NOTIFY",
            _ => return None,
        })
    }

    fn call(&self, ctx: &CallContext, args: Decoder, r: &mut Encoder) -> Result<(), ProcError> {
        let local = ctx.peer.ip().is_loopback();
        match ctx.proc_ {
            0 => {}
            SM_STAT => {
                let _: SmName = decode(args)?;
                self.stat_res(true).encode(r);
            }
            SM_MON => {
                let a: Mon = decode(args)?;
                let mut m = self.monitors.lock();
                let ok = local && m.len() < MAX_MONITORS;
                if ok {
                    m.retain(|x| x.mon_id != a.mon_id);
                    m.push(Mon {
                        mon_id: MonId {
                            mon_name: Bytes::copy_from_slice(&a.mon_id.mon_name),
                            my_id: MyId {
                                my_name: Bytes::copy_from_slice(&a.mon_id.my_id.my_name),
                                ..a.mon_id.my_id
                            },
                        },
                        r#priv: a.r#priv,
                    });
                }
                self.stat_res(ok).encode(r);
            }
            SM_UNMON => {
                let a: MonId = decode(args)?;
                if local {
                    self.monitors.lock().retain(|x| x.mon_id != a);
                }
                SmStat {
                    state: self.svc.state as i32,
                }
                .encode(r);
            }
            SM_UNMON_ALL => {
                let a: MyId = decode(args)?;
                if local {
                    self.monitors.lock().retain(|x| x.mon_id.my_id != a);
                }
                SmStat {
                    state: self.svc.state as i32,
                }
                .encode(r);
            }
            SM_SIMU_CRASH => {}
            SM_NOTIFY => self.notified(ctx, decode(args)?),
            _ => return Err(ProcError::ProcUnavail),
        }
        Ok(())
    }
}

/// Tells host `h`, recorded by the last instance, that this server restarted (SM_NOTIFY to its
/// status monitor over UDP, as sm-notify does): retried from 2 s, doubling up to 2 minutes,
/// for 15 minutes.
pub(crate) fn notify_restart(svc: &Arc<LockService>, h: HostRecord) {
    let weak = Arc::downgrade(svc);
    let mon_name = h
        .server
        .map(|ip| ip.to_string())
        .unwrap_or_else(|| svc.hostname.clone());
    let args = StatChge {
        mon_name: Bytes::from(mon_name),
        state: svc.state as i32,
    };
    let pmap = SocketAddr::new(h.addr, svc.cfg.grants.pmap_port);
    let timeout = svc.cfg.grants.call_timeout;
    tokio::spawn(async move {
        let until = Instant::now() + Duration::from_secs(15 * 60);
        let mut delay = Duration::from_secs(2);
        loop {
            let opts = CallOpts::new(Proto::Udp, timeout, 1).from_server(h.server);
            let r = async {
                let port = client::getport_at(pmap, SM_PROG, SM_VERS, Proto::Udp, &opts).await?;
                client::call(
                    SocketAddr::new(h.addr, port),
                    SM_PROG,
                    SM_VERS,
                    SM_NOTIFY,
                    &args,
                    &opts,
                )
                .await
            }
            .await;
            let Some(svc) = weak.upgrade() else {
                return;
            };
            match r {
                Ok(_) => {
                    svc.counters
                        .notifications_sent
                        .fetch_add(1, Ordering::Relaxed);
                    tracing::info!(host = %h.addr, "told of the restart (SM_NOTIFY)");
                    return;
                }
                Err(e) if Instant::now() + delay > until => {
                    svc.counters
                        .notifications_failed
                        .fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(host = %h.addr, error = %e, "not told of the restart: gave up");
                    svc.forget_record(h.addr, h.server);
                    return;
                }
                Err(client::CallError::Io(e))
                    if e.kind() == std::io::ErrorKind::AddrNotAvailable =>
                {
                    // the address the host called is not on this machine yet: a head taking
                    // an identity over brings it up just before it serves (soon, so no back-off)
                    tracing::debug!(host = %h.addr, error = %e, "SM_NOTIFY waits for the service address");
                    drop(svc);
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    continue;
                }
                Err(e) => tracing::debug!(host = %h.addr, error = %e, "SM_NOTIFY not answered yet"),
            }
            drop(svc);
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(120));
        }
    });
}
