//! Per-procedure call counters and latency histograms, rendered in Prometheus text format.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::RwLock;

/// Upper bounds (seconds) of the latency histogram buckets.
pub const BUCKETS: [f64; 14] = [
    10e-6, 25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 100e-3, 1.0,
    10.0,
];

/// Counters of one procedure.
#[derive(Debug, Default)]
pub struct ProcStats {
    count: AtomicU64,
    sum_ns: AtomicU64,
    buckets: [AtomicU64; BUCKETS.len()],
}

impl ProcStats {
    /// Records one call that took `secs`.
    pub fn observe(&self, secs: f64) {
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum_ns
            .fetch_add((secs * 1e9) as u64, Ordering::Relaxed);
        if let Some(i) = BUCKETS.iter().position(|b| secs <= *b) {
            self.buckets[i].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Calls observed.
    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }
}

/// A source of extra metric lines (a transport, a backend), rendered after the RPC metrics.
pub trait MetricsSource: Send + Sync {
    /// Appends Prometheus text lines.
    fn render(&self, out: &mut String);
}

/// The registry of RPC metrics shared by dispatcher and transports.
#[derive(Default)]
pub struct RpcMetrics {
    procs: RwLock<BTreeMap<(u32, &'static str), Arc<ProcStats>>>,
    errors: RwLock<BTreeMap<&'static str, Arc<AtomicU64>>>,
    gauges: RwLock<BTreeMap<&'static str, Arc<AtomicU64>>>,
    sources: RwLock<Vec<Arc<dyn MetricsSource>>>,
}

impl std::fmt::Debug for RpcMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RpcMetrics").finish_non_exhaustive()
    }
}

fn program_label(prog: u32) -> &'static str {
    match prog {
        100000 => "portmap",
        100003 => "nfs",
        100005 => "mount",
        _ => "other",
    }
}

impl RpcMetrics {
    /// Records one executed call and its latency.
    pub fn observe(&self, prog: u32, name: &'static str, secs: f64) {
        self.stats(prog, name).observe(secs);
    }

    /// The counters of a procedure, created on first use.
    pub fn stats(&self, prog: u32, name: &'static str) -> Arc<ProcStats> {
        if let Some(s) = self.procs.read().get(&(prog, name)) {
            return s.clone();
        }
        self.procs.write().entry((prog, name)).or_default().clone()
    }

    /// Counts an event such as a rejected call or a dropped connection.
    pub fn count_error(&self, kind: &'static str) {
        self.counter(kind).fetch_add(1, Ordering::Relaxed);
    }

    /// A named event counter, created on first use.
    pub fn counter(&self, kind: &'static str) -> Arc<AtomicU64> {
        if let Some(c) = self.errors.read().get(kind) {
            return c.clone();
        }
        self.errors.write().entry(kind).or_default().clone()
    }

    /// A named gauge (current connections, calls in flight), created on first use.
    pub fn gauge(&self, name: &'static str) -> Arc<AtomicU64> {
        if let Some(c) = self.gauges.read().get(name) {
            return c.clone();
        }
        self.gauges.write().entry(name).or_default().clone()
    }

    /// Adds a source of extra metrics.
    pub fn add_source(&self, s: Arc<dyn MetricsSource>) {
        self.sources.write().push(s);
    }

    /// Renders all metrics in Prometheus text exposition format.
    pub fn render(&self) -> String {
        let mut out = String::new();
        out.push_str("# HELP rnfs_rpc_calls_total RPC calls executed, by program and procedure.\n");
        out.push_str("# TYPE rnfs_rpc_calls_total counter\n");
        let procs = self.procs.read();
        for ((prog, name), s) in procs.iter() {
            let _ = writeln!(
                out,
                "rnfs_rpc_calls_total{{program=\"{}\",proc=\"{}\"}} {}",
                program_label(*prog),
                name,
                s.count()
            );
        }
        out.push_str("# HELP rnfs_rpc_latency_seconds Time to execute a call, by procedure.\n");
        out.push_str("# TYPE rnfs_rpc_latency_seconds histogram\n");
        for ((prog, name), s) in procs.iter() {
            let labels = format!("program=\"{}\",proc=\"{}\"", program_label(*prog), name);
            let mut cum = 0;
            for (i, b) in BUCKETS.iter().enumerate() {
                cum += s.buckets[i].load(Ordering::Relaxed);
                let _ = writeln!(
                    out,
                    "rnfs_rpc_latency_seconds_bucket{{{labels},le=\"{b}\"}} {cum}"
                );
            }
            let _ = writeln!(
                out,
                "rnfs_rpc_latency_seconds_bucket{{{labels},le=\"+Inf\"}} {}",
                s.count()
            );
            let _ = writeln!(
                out,
                "rnfs_rpc_latency_seconds_sum{{{labels}}} {}",
                s.sum_ns.load(Ordering::Relaxed) as f64 / 1e9
            );
            let _ = writeln!(
                out,
                "rnfs_rpc_latency_seconds_count{{{labels}}} {}",
                s.count()
            );
        }
        drop(procs);
        out.push_str("# HELP rnfs_rpc_events_total Rejected calls and transport events.\n");
        out.push_str("# TYPE rnfs_rpc_events_total counter\n");
        for (k, v) in self.errors.read().iter() {
            let _ = writeln!(
                out,
                "rnfs_rpc_events_total{{kind=\"{k}\"}} {}",
                v.load(Ordering::Relaxed)
            );
        }
        for (k, v) in self.gauges.read().iter() {
            let _ = writeln!(out, "# TYPE rnfs_{k} gauge");
            let _ = writeln!(out, "rnfs_{k} {}", v.load(Ordering::Relaxed));
        }
        for s in self.sources.read().iter() {
            s.render(&mut out);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_counts_and_histogram() {
        let m = RpcMetrics::default();
        m.observe(100003, "GETATTR", 20e-6);
        m.observe(100003, "GETATTR", 2.0);
        m.count_error("garbage_args");
        m.gauge("tcp_connections").store(3, Ordering::Relaxed);
        let t = m.render();
        assert!(t.contains("rnfs_rpc_calls_total{program=\"nfs\",proc=\"GETATTR\"} 2"));
        assert!(t.contains(
            "rnfs_rpc_latency_seconds_bucket{program=\"nfs\",proc=\"GETATTR\",le=\"0.000025\"} 1"
        ));
        assert!(t.contains(
            "rnfs_rpc_latency_seconds_bucket{program=\"nfs\",proc=\"GETATTR\",le=\"10\"} 2"
        ));
        assert!(t.contains("rnfs_rpc_events_total{kind=\"garbage_args\"} 1"));
        assert!(t.contains("rnfs_tcp_connections 3"));
    }
}
