//! The NFSv4 state and data-path counters, a source of the RPC metrics registry.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

use sunrpc::metrics::{MetricsOut, MetricsSource};

use crate::compound::Nfs4;

impl MetricsSource for Nfs4 {
    fn encode(&self, out: &mut MetricsOut<'_>) -> fmt::Result {
        let (clients, sessions, opens, locks, delegs, layouts) = {
            let s = self.state.lock();
            let (mut o, mut l, mut d, mut y) = (0, 0, 0, 0);
            for v in s.states.values() {
                match v {
                    crate::state::StateObj::Open(_) => o += 1,
                    crate::state::StateObj::Lock(_) => l += 1,
                    crate::state::StateObj::Deleg(_) => d += 1,
                    crate::state::StateObj::Layout(_) => y += 1,
                }
            }
            (s.clients.len(), s.sessions.len(), o, l, d, y)
        };
        out.gauges(
            "rnfs_nfs4_state",
            "NFSv4 state held now, by kind.",
            [
                ("clients", clients),
                ("sessions", sessions),
                ("opens", opens),
                ("lock_stateids", locks),
                ("delegations", delegs),
                ("layout_stateids", layouts),
            ]
            .map(|(k, v)| ([("kind", k)], v as u64)),
        )?;
        let c = &self.counters;
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        for (name, help, v) in [
            (
                "rnfs_nfs4_read_plus_data_bytes_total",
                "READ_PLUS payload sent as DATA segments.",
                load(&c.read_plus_data_bytes),
            ),
            (
                "rnfs_nfs4_read_plus_hole_bytes_total",
                "File bytes READ_PLUS described as HOLE segments, sent without payload.",
                load(&c.read_plus_hole_bytes),
            ),
            (
                "rnfs_nfs4_read_bytes_total",
                "READ payload sent.",
                load(&c.read_bytes),
            ),
        ] {
            out.counter(name, help, v)?;
        }
        out.counters(
            "rnfs_nfs4_reclaims_total",
            "Reclaiming OPENs and LOCKs admitted during grace, and delegations granted again \
             with a reclaimed OPEN.",
            [
                ("open", load(&c.reclaimed_opens)),
                ("lock", load(&c.reclaimed_locks)),
                ("delegation", load(&c.reclaimed_delegations)),
            ]
            .map(|(k, v)| ([("kind", k)], v)),
        )
    }
}
