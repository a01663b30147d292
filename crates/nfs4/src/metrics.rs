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
        )?;
        if let Some(m) = &self.pnfs {
            self.encode_pnfs(m, out)?;
        }
        Ok(())
    }
}

impl Nfs4 {
    /// The pNFS metadata server's figures: per data server, placements, recalls, fences,
    /// stale copies and their repair.
    fn encode_pnfs(&self, m: &pnfs::Mds, out: &mut MetricsOut<'_>) -> fmt::Result {
        let dss = m.data_servers();
        let per_ds = |f: fn(&pnfs::ds::DsCounters) -> &AtomicU64| {
            dss.iter().map(move |d| {
                (
                    [("ds", d.spec().name.as_str())],
                    f(d.counters()).load(Ordering::Relaxed),
                )
            })
        };
        out.counters(
            "rnfs_pnfs_ds_calls_total",
            "NFSv3 calls the MDS made to each data server (placement, I/O through the MDS, repair).",
            per_ds(|c| &c.calls),
        )?;
        out.counters(
            "rnfs_pnfs_ds_errors_total",
            "Those calls that failed.",
            per_ds(|c| &c.errors),
        )?;
        out.counters(
            "rnfs_pnfs_ds_read_bytes_total",
            "File data the MDS read from each data server.",
            per_ds(|c| &c.read_bytes),
        )?;
        out.counters(
            "rnfs_pnfs_ds_written_bytes_total",
            "File data the MDS wrote to each data server.",
            per_ds(|c| &c.written_bytes),
        )?;
        let per_ds_gauge = |f: &dyn Fn(&pnfs::ds::DataServer) -> u64| {
            dss.iter()
                .map(move |d| ([("ds", d.spec().name.as_str())], f(d)))
                .collect::<Vec<_>>()
        };
        out.gauges(
            "rnfs_pnfs_ds_connected",
            "Whether the MDS's connection to each data server is up.",
            per_ds_gauge(&|d| u64::from(d.connected())),
        )?;
        out.gauges(
            "rnfs_pnfs_ds_copies",
            "Copies of files on each data server.",
            per_ds_gauge(&|d| m.copies_on(&d.spec().name) as u64),
        )?;
        out.gauges(
            "rnfs_pnfs_ds_draining",
            "1 for a data server being taken out of service (rnfsctl pnfs-drain).",
            per_ds_gauge(&|d| u64::from(m.is_drained(&d.spec().name))),
        )?;
        out.gauge(
            "rnfs_pnfs_files",
            "Files whose data is placed on the data servers.",
            m.placed_files() as u64,
        )?;
        out.gauge(
            "rnfs_pnfs_stale_files",
            "Placed files with a stale copy (left out of layouts until resynchronised).",
            m.stale_files() as u64,
        )?;
        let c = m.counters();
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        for (name, help, v) in [
            (
                "rnfs_pnfs_recalls_total",
                "CB_LAYOUTRECALLs sent.",
                load(&self.counters.layout_recalls),
            ),
            (
                "rnfs_pnfs_recall_any_total",
                "CB_RECALL_ANYs sent for layouts (more layout stateids than --pnfs-max-layouts).",
                load(&self.counters.layout_recall_any),
            ),
            (
                "rnfs_pnfs_fences_total",
                "Files fenced: their data server files given new owners.",
                load(&c.fences),
            ),
            (
                "rnfs_pnfs_stale_copies_total",
                "Copies marked stale.",
                load(&c.stale_marks),
            ),
            (
                "rnfs_pnfs_resyncs_total",
                "Stale copies resynchronised.",
                load(&c.resyncs),
            ),
            (
                "rnfs_pnfs_resync_bytes_total",
                "Bytes written onto stale copies while resynchronising them.",
                load(&c.resync_bytes),
            ),
            (
                "rnfs_pnfs_client_errors_total",
                "Data server I/O errors clients reported (LAYOUTERROR, LAYOUTRETURN).",
                load(&c.client_errors),
            ),
        ] {
            out.counter(name, help, v)?;
        }
        Ok(())
    }
}
