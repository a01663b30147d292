//! The NFSv4 state and data-path counters in the Prometheus text format.

use crate::compound::Nfs4;

impl sunrpc::metrics::MetricsSource for Nfs4 {
    fn render(&self, out: &mut String) {
        use std::fmt::Write as _;
        let (clients, sessions, opens, locks, delegs) = {
            let s = self.state.lock();
            let (mut o, mut l, mut d) = (0, 0, 0);
            for v in s.states.values() {
                match v {
                    crate::state::StateObj::Open(_) => o += 1,
                    crate::state::StateObj::Lock(_) => l += 1,
                    crate::state::StateObj::Deleg(_) => d += 1,
                }
            }
            (s.clients.len(), s.sessions.len(), o, l, d)
        };
        let _ = writeln!(out, "# TYPE rnfs_nfs4_state gauge");
        for (k, v) in [
            ("clients", clients),
            ("sessions", sessions),
            ("opens", opens),
            ("lock_stateids", locks),
            ("delegations", delegs),
        ] {
            let _ = writeln!(out, "rnfs_nfs4_state{{kind=\"{k}\"}} {v}");
        }
        let c = &self.counters;
        let load = |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);
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
            let _ = writeln!(out, "# HELP {name} {help}");
            let _ = writeln!(out, "# TYPE {name} counter");
            let _ = writeln!(out, "{name} {v}");
        }
        let _ = writeln!(
            out,
            "# HELP rnfs_nfs4_reclaims_total Reclaiming OPENs and LOCKs admitted during grace, \
             and delegations granted again with a reclaimed OPEN."
        );
        let _ = writeln!(out, "# TYPE rnfs_nfs4_reclaims_total counter");
        let _ = writeln!(
            out,
            "rnfs_nfs4_reclaims_total{{kind=\"open\"}} {}",
            load(&c.reclaimed_opens)
        );
        let _ = writeln!(
            out,
            "rnfs_nfs4_reclaims_total{{kind=\"lock\"}} {}",
            load(&c.reclaimed_locks)
        );
        let _ = writeln!(
            out,
            "rnfs_nfs4_reclaims_total{{kind=\"delegation\"}} {}",
            load(&c.reclaimed_delegations)
        );
    }
}
