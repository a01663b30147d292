//! Counters of the RPC-over-RDMA transport, a source of the RPC metrics registry.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use sunrpc::metrics::{MetricsOut, MetricsSource};
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
    fn encode(&self, out: &mut MetricsOut<'_>) -> fmt::Result {
        let g = |c: &AtomicU64| c.load(Ordering::Relaxed);
        out.gauge(
            "rnfs_rdma_connections",
            "RPC-over-RDMA connections open now.",
            g(&self.connections),
        )?;
        let counters: [(&str, &str, &AtomicU64); 18] = [
            (
                "rnfs_rdma_connections_accepted_total",
                "Connections accepted.",
                &self.connections_accepted,
            ),
            (
                "rnfs_rdma_connections_refused_total",
                "Connection requests refused (no device, limit reached, setup failure).",
                &self.connections_refused,
            ),
            (
                "rnfs_rdma_fatal_closes_total",
                "Connections closed for a fatal error (credit overrun, completion error).",
                &self.fatal_closes,
            ),
            (
                "rnfs_rdma_calls_inline_total",
                "Calls that arrived wholly inline.",
                &self.calls_inline,
            ),
            (
                "rnfs_rdma_calls_read_chunk_total",
                "Calls with Read chunks (data pulled with RDMA Read).",
                &self.calls_read_chunk,
            ),
            (
                "rnfs_rdma_calls_long_total",
                "Calls carried wholly in a Position-Zero Read chunk (RDMA_NOMSG).",
                &self.calls_long,
            ),
            (
                "rnfs_rdma_replies_inline_total",
                "Replies sent wholly inline.",
                &self.replies_inline,
            ),
            (
                "rnfs_rdma_replies_write_chunk_total",
                "Replies whose payload went into a Write chunk.",
                &self.replies_write_chunk,
            ),
            (
                "rnfs_rdma_replies_reply_chunk_total",
                "Replies written into the Reply chunk (RDMA_NOMSG).",
                &self.replies_reply_chunk,
            ),
            (
                "rnfs_rdma_errors_sent_total",
                "RDMA_ERROR messages sent.",
                &self.errors_sent,
            ),
            (
                "rnfs_rdma_dropped_total",
                "Messages dropped without an answer.",
                &self.dropped,
            ),
            (
                "rnfs_rdma_read_bytes_total",
                "Bytes pulled with RDMA Read.",
                &self.read_bytes,
            ),
            (
                "rnfs_rdma_write_bytes_total",
                "Bytes placed with RDMA Write.",
                &self.write_bytes,
            ),
            (
                "rnfs_rdma_staged_bytes_total",
                "Bytes copied into registered staging buffers before an RDMA Write.",
                &self.staged_bytes,
            ),
            (
                "rnfs_rdma_call_copied_bytes_total",
                "Inline bytes copied into the buffer a call with Read chunks is rebuilt in.",
                &self.call_copied_bytes,
            ),
            (
                "rnfs_rdma_send_with_invalidate_total",
                "Replies sent with Send With Invalidate.",
                &self.send_with_invalidate,
            ),
            (
                "rnfs_rdma_backward_calls_total",
                "Calls sent to the client over the back channel (RFC 8167).",
                &self.backward_calls,
            ),
            (
                "rnfs_rdma_backward_replies_total",
                "The client's replies to back-channel calls.",
                &self.backward_replies,
            ),
        ];
        for (name, help, c) in counters {
            out.counter(name, help, g(c))?;
        }
        out.gauge(
            "rnfs_rdma_registrations",
            "Memory registrations since start (constant after start-up).",
            verbs::registrations(),
        )?;
        let devices = self.devices.lock();
        if devices.is_empty() {
            return Ok(());
        }
        let per_device = |v: &dyn Fn(&Device) -> u64| {
            devices
                .iter()
                .map(|d| ([("device", d.name().to_string())], v(d)))
                .collect::<Vec<_>>()
        };
        out.counters(
            "rnfs_rdma_srq_reposts_total",
            "Receive buffers posted again to the shared receive queue.",
            per_device(&|d| d.srq().reposted()),
        )?;
        out.counters(
            "rnfs_rdma_srq_repost_batches_total",
            "Batches the receive buffers were posted again in.",
            per_device(&|d| d.srq().repost_batches()),
        )?;
        out.gauges(
            "rnfs_rdma_srq_posted",
            "Receive buffers posted to the shared receive queue now.",
            per_device(&|d| d.srq().posted() as u64),
        )?;
        let per_class = |v: &dyn Fn(&Device, Class) -> usize| {
            let mut series = Vec::new();
            for d in devices.iter() {
                for c in Class::ALL {
                    let labels = [
                        ("device", d.name().to_string()),
                        ("class", c.name().to_string()),
                    ];
                    series.push((labels, v(d, c) as u64));
                }
            }
            series
        };
        out.gauges(
            "rnfs_rdma_pool_bytes",
            "Registered pool memory per class, fixed at start-up (class recv: the shared \
             receive queue's buffers, whatever the number of connections).",
            per_class(&|d, c| {
                let cfg = d.pool().config();
                cfg.count(c) * cfg.size(c)
            }),
        )?;
        out.gauges(
            "rnfs_rdma_pool_buffers_in_use",
            "Pool buffers in use now, per class.",
            per_class(&|d, c| d.pool().in_use(c)),
        )?;
        out.gauges(
            "rnfs_rdma_pool_buffers_high_water",
            "Most pool buffers in use at once since start, per class.",
            per_class(&|d, c| d.pool().high_water(c)),
        )
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
        let reg = sunrpc::metrics::RpcMetrics::default();
        reg.add_source(Arc::new(m));
        let s = reg.render();
        assert!(s.contains("rnfs_rdma_connections 2\n"));
        assert!(s.contains("rnfs_rdma_calls_inline_total 1\n"));
        assert!(s.contains("rnfs_rdma_write_bytes_total 4096\n"));
        assert!(s.contains("rnfs_rdma_registrations 0\n"));
    }
}
