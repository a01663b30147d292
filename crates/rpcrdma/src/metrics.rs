//! Counters of the RPC-over-RDMA transport, rendered with the RPC metrics (Prometheus text).

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use sunrpc::metrics::MetricsSource;
use verbs::{Class, Device};

/// Transport counters; gauges are marked as such in the rendering.
#[derive(Default)]
pub struct RdmaMetrics {
    /// Connections open now (gauge).
    pub connections: AtomicU64,
    /// Connections accepted since start.
    pub connections_accepted: AtomicU64,
    /// Connection requests refused (no device, limit reached, setup failure).
    pub connections_refused: AtomicU64,
    /// Calls that arrived wholly inline (no Read chunk).
    pub calls_inline: AtomicU64,
    /// Calls with Read chunks (data items pulled with RDMA Read).
    pub calls_read_chunk: AtomicU64,
    /// Calls carried wholly in a Position-Zero Read chunk (RDMA_NOMSG long calls).
    pub calls_long: AtomicU64,
    /// Replies sent wholly inline.
    pub replies_inline: AtomicU64,
    /// Replies whose payload went into a Write chunk.
    pub replies_write_chunk: AtomicU64,
    /// Replies written into the Reply chunk (RDMA_NOMSG).
    pub replies_reply_chunk: AtomicU64,
    /// RDMA_ERROR messages sent.
    pub errors_sent: AtomicU64,
    /// Messages dropped without an answer (invalid, or no RPC reply).
    pub dropped: AtomicU64,
    /// Bytes pulled with RDMA Read.
    pub read_bytes: AtomicU64,
    /// Bytes placed with RDMA Write.
    pub write_bytes: AtomicU64,
    /// Bytes copied into registered staging buffers before an RDMA Write.
    pub staged_bytes: AtomicU64,
    /// Inline bytes copied into the buffer a call with Read chunks is rebuilt in (its RPC
    /// header and arguments; the chunks' data is never copied).
    pub call_copied_bytes: AtomicU64,
    /// Calls sent to the client over the back channel (RFC 8167).
    pub backward_calls: AtomicU64,
    /// The client's replies to them.
    pub backward_replies: AtomicU64,
    /// Replies sent with Send With Invalidate.
    pub send_with_invalidate: AtomicU64,
    /// Connections closed for a fatal error (credit overrun, completion error...).
    pub fatal_closes: AtomicU64,
    devices: Mutex<Vec<Arc<verbs::Device>>>,
}

impl std::fmt::Debug for RdmaMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RdmaMetrics").finish_non_exhaustive()
    }
}

impl RdmaMetrics {
    /// Adds one to a counter.
    pub fn inc(c: &AtomicU64) {
        c.fetch_add(1, Ordering::Relaxed);
    }

    /// Adds `n` to a counter.
    pub fn add(c: &AtomicU64, n: u64) {
        c.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn set_devices(&self, d: Vec<Arc<verbs::Device>>) {
        *self.devices.lock() = d;
    }
}

impl MetricsSource for RdmaMetrics {
    fn render(&self, out: &mut String) {
        let g = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let _ = writeln!(out, "# TYPE rnfs_rdma_connections gauge");
        let _ = writeln!(out, "rnfs_rdma_connections {}", g(&self.connections));
        let counters: [(&str, &AtomicU64); 18] = [
            ("connections_accepted", &self.connections_accepted),
            ("connections_refused", &self.connections_refused),
            ("fatal_closes", &self.fatal_closes),
            ("calls_inline", &self.calls_inline),
            ("calls_read_chunk", &self.calls_read_chunk),
            ("calls_long", &self.calls_long),
            ("replies_inline", &self.replies_inline),
            ("replies_write_chunk", &self.replies_write_chunk),
            ("replies_reply_chunk", &self.replies_reply_chunk),
            ("errors_sent", &self.errors_sent),
            ("dropped", &self.dropped),
            ("read_bytes", &self.read_bytes),
            ("write_bytes", &self.write_bytes),
            ("staged_bytes", &self.staged_bytes),
            ("call_copied_bytes", &self.call_copied_bytes),
            ("send_with_invalidate", &self.send_with_invalidate),
            ("backward_calls", &self.backward_calls),
            ("backward_replies", &self.backward_replies),
        ];
        for (name, c) in &counters {
            let _ = writeln!(out, "# TYPE rnfs_rdma_{name}_total counter");
            let _ = writeln!(out, "rnfs_rdma_{name}_total {}", g(c));
        }
        let _ = writeln!(out, "# HELP rnfs_rdma_registrations Memory registrations since start (constant after start-up).");
        let _ = writeln!(out, "# TYPE rnfs_rdma_registrations gauge");
        let _ = writeln!(out, "rnfs_rdma_registrations {}", verbs::registrations());
        let devices = self.devices.lock();
        if devices.is_empty() {
            return;
        }
        let per_device = |out: &mut String, name: &str, kind: &str, v: &dyn Fn(&Device) -> u64| {
            let _ = writeln!(out, "# TYPE {name} {kind}");
            for d in devices.iter() {
                let _ = writeln!(out, "{name}{{device=\"{}\"}} {}", d.name(), v(d));
            }
        };
        per_device(out, "rnfs_rdma_srq_reposts_total", "counter", &|d| {
            d.srq().reposted()
        });
        per_device(out, "rnfs_rdma_srq_repost_batches_total", "counter", &|d| {
            d.srq().repost_batches()
        });
        per_device(out, "rnfs_rdma_srq_posted", "gauge", &|d| {
            d.srq().posted() as u64
        });
        let per_class = |out: &mut String, name: &str, v: &dyn Fn(&Device, Class) -> usize| {
            let _ = writeln!(out, "# TYPE {name} gauge");
            for d in devices.iter() {
                for c in Class::ALL {
                    let _ = writeln!(
                        out,
                        "{name}{{device=\"{}\",class=\"{}\"}} {}",
                        d.name(),
                        c.name(),
                        v(d, c)
                    );
                }
            }
        };
        let _ = writeln!(out, "# HELP rnfs_rdma_pool_bytes Registered pool memory per class, fixed at start-up (class recv: the shared receive queue's buffers, whatever the number of connections).");
        per_class(out, "rnfs_rdma_pool_bytes", &|d, c| {
            let cfg = d.pool().config();
            cfg.count(c) * cfg.size(c)
        });
        per_class(out, "rnfs_rdma_pool_buffers_in_use", &|d, c| {
            d.pool().in_use(c)
        });
        per_class(out, "rnfs_rdma_pool_buffers_high_water", &|d, c| {
            d.pool().high_water(c)
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counters_without_devices() {
        let m = RdmaMetrics::default();
        RdmaMetrics::inc(&m.calls_inline);
        RdmaMetrics::add(&m.write_bytes, 4096);
        m.connections.store(2, Ordering::Relaxed);
        let mut s = String::new();
        m.render(&mut s);
        assert!(s.contains("rnfs_rdma_connections 2\n"));
        assert!(s.contains("rnfs_rdma_calls_inline_total 1\n"));
        assert!(s.contains("rnfs_rdma_write_bytes_total 4096\n"));
        assert!(s.contains("rnfs_rdma_registrations 0\n"));
    }
}
