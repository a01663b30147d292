//! The metrics registry shared by dispatcher, transports and programs, rendered in the
//! OpenMetrics text format by the Prometheus project's client (`prometheus-client`).
//!
//! What is in it (docs/metrics.md lists every family): per-procedure call counters and latency
//! histograms, transport events and gauges, calls and bytes per client address, NFS errors by
//! status and READ/WRITE bytes by protocol version, and the sources other crates add (NFSv4
//! state, NLM, RDMA, the process).
//!
//! The hot path stays free of locks and lookups: the dispatcher resolves the counters of every
//! procedure when a program is registered and a transport resolves its caller's counters once
//! per connection, so a call updates atomics only. A family member is created under its
//! family's lock on first use (a new procedure name, client address, error status).

use std::collections::HashMap;
use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use parking_lot::{Mutex, RwLock};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{
    DescriptorEncoder, EncodeLabelSet, EncodeMetric, MetricEncoder, NoLabelSet,
};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::{MetricType, TypedMetric};
use prometheus_client::registry::{Metric, Registry};

/// The client library, for crates that add metrics of their own without depending on a
/// version of it that could differ from this registry's.
pub use prometheus_client;

/// Upper bounds (seconds) of the latency histogram buckets.
pub const BUCKETS: [f64; 14] = [
    10e-6, 25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 100e-3, 1.0,
    10.0,
];

/// Client addresses counted apart by default; calls from further addresses count under
/// [`OTHER_CLIENT`], so that a scan from many addresses cannot grow memory.
pub const MAX_CLIENTS: usize = 1024;

/// The `client` label of the addresses past the limit.
pub const OTHER_CLIENT: &str = "other";

/// The kinds of `rnfs_rpc_events_total` the dispatcher and the TCP transport count, exposed
/// from the start (at 0) so that a rate over them has a series before the first event.
pub const EVENT_KINDS: [&str; 17] = [
    "prog_unavail",
    "prog_mismatch",
    "proc_unavail",
    "garbage_args",
    "system_err",
    "auth_error",
    "garbage_message",
    "rpc_mismatch",
    "drc_hit",
    "drc_in_progress",
    "tcp_connection_refused",
    "tcp_record_timeout",
    "tcp_bad_record",
    "backchannel_reply",
    "export_wait",
    "tcp_lone_poll",
    "tcp_lone_poll_found",
];

/// The HTTP content type of [`RpcMetrics::render`]'s text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[derive(Debug, Default)]
struct LatencyCells {
    sum_ns: AtomicU64,
    /// Per bucket (not cumulative), the last one past the largest bound.
    buckets: [AtomicU64; BUCKETS.len() + 1],
}

/// A latency histogram over [`BUCKETS`] kept in atomics: prometheus-client's own `Histogram`
/// takes a lock per observation, and the dispatcher observes every call.
#[derive(Debug, Clone, Default)]
pub struct Latency(Arc<LatencyCells>);

impl Latency {
    /// Records one observation of `secs`.
    pub fn observe(&self, secs: f64) {
        let c = &self.0;
        c.sum_ns.fetch_add((secs * 1e9) as u64, Ordering::Relaxed);
        let i = BUCKETS
            .iter()
            .position(|b| secs <= *b)
            .unwrap_or(BUCKETS.len());
        c.buckets[i].fetch_add(1, Ordering::Relaxed);
    }

    /// Observations so far.
    pub fn count(&self) -> u64 {
        self.0
            .buckets
            .iter()
            .map(|b| b.load(Ordering::Relaxed))
            .sum()
    }
}

impl TypedMetric for Latency {
    const TYPE: MetricType = MetricType::Histogram;
}

impl EncodeMetric for Latency {
    fn encode(&self, mut encoder: MetricEncoder) -> fmt::Result {
        let mut buckets = [(0.0, 0u64); BUCKETS.len() + 1];
        let mut count = 0;
        for (i, b) in buckets.iter_mut().enumerate() {
            // the count is the buckets' sum, so that +Inf never reads below the last bound
            let n = self.0.buckets[i].load(Ordering::Relaxed);
            *b = (BUCKETS.get(i).copied().unwrap_or(f64::INFINITY), n);
            count += n;
        }
        let sum = self.0.sum_ns.load(Ordering::Relaxed) as f64 / 1e9;
        encoder.encode_histogram::<NoLabelSet>(sum, count, &buckets, None)
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }
}

/// The counters of one procedure, resolved once and kept by the dispatcher.
#[derive(Debug, Clone)]
pub struct ProcStats {
    calls: Counter,
    latency: Latency,
}

impl ProcStats {
    /// Records one call that took `secs`.
    pub fn observe(&self, secs: f64) {
        self.calls.inc();
        self.latency.observe(secs);
    }

    /// Calls observed.
    pub fn count(&self) -> u64 {
        self.calls.get()
    }
}

/// Calls and bytes of one client address (or of all those past the limit).
#[derive(Debug)]
pub struct ClientStats {
    calls: Counter,
    received: Counter,
    sent: Counter,
}

impl ClientStats {
    /// Records one call message of `received` bytes answered with `sent` bytes (0: none).
    pub fn record(&self, received: usize, sent: usize) {
        self.calls.inc();
        self.received.inc_by(received as u64);
        if sent > 0 {
            self.sent.inc_by(sent as u64);
        }
    }

    /// Calls recorded.
    pub fn calls(&self) -> u64 {
        self.calls.get()
    }
}

/// The counters an NFS program feeds: failed replies (NFSv3) or operations (NFSv4) by status,
/// and READ / WRITE payload bytes, all under the program's `version` label.
#[derive(Debug, Clone)]
pub struct NfsMetrics {
    version: &'static str,
    errors: Family<NfsErrorLabels, Counter>,
    read: Counter,
    written: Counter,
}

impl NfsMetrics {
    /// Counts a reply or operation `op` that failed with `status` (the RFC's name of it).
    pub fn error(&self, op: &'static str, status: &'static str) {
        let labels = NfsErrorLabels {
            version: self.version,
            op,
            status,
        };
        self.errors.get_or_create(&labels).inc();
    }

    /// Counts payload bytes sent by READ (and READ_PLUS data).
    pub fn read(&self, bytes: u64) {
        self.read.inc_by(bytes);
    }

    /// Counts payload bytes received by WRITE.
    pub fn written(&self, bytes: u64) {
        self.written.inc_by(bytes);
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ProcLabels {
    program: &'static str,
    proc: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabel {
    kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ClientLabel {
    client: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct VersionLabel {
    version: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct NfsErrorLabels {
    version: &'static str,
    op: &'static str,
    status: &'static str,
}

/// Calls and bytes per client address, bounded.
#[derive(Default)]
struct Clients {
    by_addr: RwLock<HashMap<IpAddr, Arc<ClientStats>>>,
    other: OnceLock<Arc<ClientStats>>,
    calls: Family<ClientLabel, Counter>,
    received: Family<ClientLabel, Counter>,
    sent: Family<ClientLabel, Counter>,
}

impl Clients {
    fn stats(&self, label: String) -> Arc<ClientStats> {
        let l = ClientLabel { client: label };
        Arc::new(ClientStats {
            calls: self.calls.get_or_create_owned(&l),
            received: self.received.get_or_create_owned(&l),
            sent: self.sent.get_or_create_owned(&l),
        })
    }

    fn other(&self) -> Arc<ClientStats> {
        self.other
            .get_or_init(|| self.stats(OTHER_CLIENT.to_string()))
            .clone()
    }

    fn get(&self, ip: IpAddr, max: usize) -> Arc<ClientStats> {
        let known = self.by_addr.read();
        if let Some(s) = known.get(&ip) {
            return s.clone();
        }
        // full: an unknown address takes no write lock (a scan must not serialise callers)
        if known.len() >= max {
            return self.other();
        }
        drop(known);
        let mut known = self.by_addr.write();
        if let Some(s) = known.get(&ip) {
            return s.clone();
        }
        if known.len() >= max {
            return self.other();
        }
        let s = self.stats(ip.to_string());
        known.insert(ip, s.clone());
        s
    }
}

/// A source of metric families computed at scrape time (a transport, NFSv4's state, NLM, the
/// process), added with [`RpcMetrics::add_source`].
pub trait MetricsSource: Send + Sync {
    /// Writes this source's metric families.
    fn encode(&self, out: &mut MetricsOut<'_>) -> fmt::Result;
}

/// What a [`MetricsSource`] writes its families to. Names are the exposed ones: a counter's
/// ends in `_total` (the encoder writes the family's name without it, as OpenMetrics wants).
pub struct MetricsOut<'a>(DescriptorEncoder<'a>);

fn family_name(name: &str) -> &str {
    name.strip_suffix("_total").unwrap_or(name)
}

impl MetricsOut<'_> {
    /// One counter without labels.
    pub fn counter(&mut self, name: &str, help: &str, v: u64) -> fmt::Result {
        self.0
            .encode_descriptor(family_name(name), help, None, MetricType::Counter)?
            .encode_counter::<NoLabelSet, _, u64>(&v, None)
    }

    /// One counter without labels, of a fractional value (seconds).
    pub fn counter_f64(&mut self, name: &str, help: &str, v: f64) -> fmt::Result {
        self.0
            .encode_descriptor(family_name(name), help, None, MetricType::Counter)?
            .encode_counter::<NoLabelSet, _, f64>(&v, None)
    }

    /// One gauge without labels.
    pub fn gauge(&mut self, name: &str, help: &str, v: u64) -> fmt::Result {
        self.0
            .encode_descriptor(name, help, None, MetricType::Gauge)?
            .encode_gauge(&v)
    }

    /// A counter family: one value per label set (`[("kind", "open")]`).
    pub fn counters<L: EncodeLabelSet>(
        &mut self,
        name: &str,
        help: &str,
        series: impl IntoIterator<Item = (L, u64)>,
    ) -> fmt::Result {
        let mut m = self
            .0
            .encode_descriptor(family_name(name), help, None, MetricType::Counter)?;
        for (labels, v) in series {
            m.encode_family(&labels)?
                .encode_counter::<NoLabelSet, _, u64>(&v, None)?;
        }
        Ok(())
    }

    /// A gauge family: one value per label set.
    pub fn gauges<L: EncodeLabelSet>(
        &mut self,
        name: &str,
        help: &str,
        series: impl IntoIterator<Item = (L, u64)>,
    ) -> fmt::Result {
        let mut m = self
            .0
            .encode_descriptor(name, help, None, MetricType::Gauge)?;
        for (labels, v) in series {
            m.encode_family(&labels)?.encode_gauge(&v)?;
        }
        Ok(())
    }
}

/// A [`MetricsSource`] as the registry's collector.
struct Source(Arc<dyn MetricsSource>);

impl fmt::Debug for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("MetricsSource")
    }
}

impl Collector for Source {
    fn encode(&self, encoder: DescriptorEncoder) -> fmt::Result {
        self.0.encode(&mut MetricsOut(encoder))
    }
}

/// The registry of metrics shared by dispatcher, transports and programs.
pub struct RpcMetrics {
    registry: RwLock<Registry>,
    calls: Family<ProcLabels, Counter>,
    latency: Family<ProcLabels, Latency>,
    events: Family<KindLabel, Counter>,
    gauges: Mutex<HashMap<&'static str, Gauge>>,
    /// Calls being executed (all transports), set from `running` at each scrape.
    in_flight: Gauge,
    /// The dispatchers' counts of calls running; a dispatcher gone no longer counts.
    running: RwLock<Vec<std::sync::Weak<std::sync::atomic::AtomicUsize>>>,
    clients: Clients,
    max_clients: usize,
    nfs_errors: Family<NfsErrorLabels, Counter>,
    nfs_read: Family<VersionLabel, Counter>,
    nfs_written: Family<VersionLabel, Counter>,
}

impl std::fmt::Debug for RpcMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RpcMetrics").finish_non_exhaustive()
    }
}

fn program_label(prog: u32) -> &'static str {
    // rpcbind's names for them
    match prog {
        100000 => "portmap",
        100003 => "nfs",
        100005 => "mount",
        100021 => "nlockmgr",
        100024 => "status",
        _ => "other",
    }
}

/// Help text of a gauge made by [`RpcMetrics::gauge`].
fn gauge_help(name: &str) -> &'static str {
    match name {
        "tcp_connections" => "TCP connections open now",
        _ => "A gauge of the RPC layer",
    }
}

impl Default for RpcMetrics {
    fn default() -> Self {
        let m = Self {
            registry: RwLock::new(Registry::default()),
            calls: Family::default(),
            latency: Family::default(),
            events: Family::default(),
            gauges: Mutex::new(HashMap::new()),
            in_flight: Gauge::default(),
            running: RwLock::default(),
            clients: Clients::default(),
            max_clients: MAX_CLIENTS,
            nfs_errors: Family::default(),
            nfs_read: Family::default(),
            nfs_written: Family::default(),
        };
        {
            let mut r = m.registry.write();
            r.register(
                "rnfs_rpc_calls",
                "RPC calls executed, by program and procedure",
                m.calls.clone(),
            );
            r.register(
                "rnfs_rpc_latency_seconds",
                "Time to execute a call, by program and procedure",
                m.latency.clone(),
            );
            r.register(
                "rnfs_rpc_events",
                "Rejected calls and transport events, by kind",
                m.events.clone(),
            );
            r.register(
                "rnfs_rpc_calls_in_flight",
                "Calls being executed now, all transports",
                m.in_flight.clone(),
            );
            r.register(
                "rnfs_client_calls",
                "RPC call messages received, by client address (at most a fixed number of \
                 addresses, the rest under client=\"other\")",
                m.clients.calls.clone(),
            );
            r.register(
                "rnfs_client_received_bytes",
                "Bytes of RPC call messages received, by client address",
                m.clients.received.clone(),
            );
            r.register(
                "rnfs_client_sent_bytes",
                "Bytes of RPC replies sent, by client address",
                m.clients.sent.clone(),
            );
            r.register(
                "rnfs_nfs_errors",
                "NFSv3 replies and NFSv4 operations that failed, by version, procedure or \
                 operation, and status",
                m.nfs_errors.clone(),
            );
            r.register(
                "rnfs_nfs_read_bytes",
                "READ payload bytes sent, by NFS version",
                m.nfs_read.clone(),
            );
            r.register(
                "rnfs_nfs_write_bytes",
                "WRITE payload bytes received, by NFS version",
                m.nfs_written.clone(),
            );
        }
        for kind in EVENT_KINDS {
            m.counter(kind);
        }
        m
    }
}

impl RpcMetrics {
    /// A registry that counts at most `max` client addresses apart (default [`MAX_CLIENTS`]).
    pub fn with_max_clients(mut self, max: usize) -> Self {
        self.max_clients = max;
        self
    }

    /// Records one executed call and its latency.
    pub fn observe(&self, prog: u32, name: &'static str, secs: f64) {
        self.stats(prog, name).observe(secs);
    }

    /// The counters of a procedure, created on first use: keep them, a call then takes no
    /// lock.
    pub fn stats(&self, prog: u32, name: &'static str) -> ProcStats {
        let l = ProcLabels {
            program: program_label(prog),
            proc: name,
        };
        ProcStats {
            calls: self.calls.get_or_create_owned(&l),
            latency: self.latency.get_or_create_owned(&l),
        }
    }

    /// Counts an event such as a rejected call or a dropped connection.
    pub fn count_error(&self, kind: &'static str) {
        self.events.get_or_create(&KindLabel { kind }).inc();
    }

    /// A named event counter (`rnfs_rpc_events_total{kind}`), created on first use.
    pub fn counter(&self, kind: &'static str) -> Counter {
        self.events.get_or_create_owned(&KindLabel { kind })
    }

    /// A named gauge (`rnfs_<name>`: current connections), created on first use.
    pub fn gauge(&self, name: &'static str) -> Gauge {
        let mut gauges = self.gauges.lock();
        if let Some(g) = gauges.get(name) {
            return g.clone();
        }
        let g = Gauge::default();
        self.registry
            .write()
            .register(format!("rnfs_{name}"), gauge_help(name), g.clone());
        gauges.insert(name, g.clone());
        g
    }

    /// The traffic counters of the client at `peer`'s address (not port), created on first
    /// use; past the limit of addresses, those of [`OTHER_CLIENT`]. A transport keeps them for
    /// a connection's calls (see [`crate::Origin::client`]).
    pub fn client(&self, peer: SocketAddr) -> Arc<ClientStats> {
        self.clients.get(peer.ip().to_canonical(), self.max_clients)
    }

    /// The counters an NFS program of `version` ("3", "4") feeds.
    pub fn nfs(&self, version: &'static str) -> NfsMetrics {
        let l = VersionLabel { version };
        NfsMetrics {
            version,
            errors: self.nfs_errors.clone(),
            read: self.nfs_read.get_or_create_owned(&l),
            written: self.nfs_written.get_or_create_owned(&l),
        }
    }

    /// Registers a metric of the caller's, for figures that no family here covers: a counter
    /// registered as `foo` is exposed as `foo_total`, and the help text gets a final period.
    pub fn register(&self, name: &str, help: &str, metric: impl Metric) {
        self.registry.write().register(name, help, metric);
    }

    /// Adds a source of metric families computed at scrape time.
    pub fn add_source(&self, s: Arc<dyn MetricsSource>) {
        self.registry
            .write()
            .register_collector(Box::new(Source(s)));
    }

    /// Adds a dispatcher's count of calls running to the calls-in-flight gauge (summed at each
    /// scrape: a call pays for one count, which the dispatcher keeps anyway to drain at a stop).
    pub fn count_in_flight(&self, running: &Arc<std::sync::atomic::AtomicUsize>) {
        let mut all = self.running.write();
        all.retain(|c| c.strong_count() > 0);
        all.push(Arc::downgrade(running));
    }

    /// Renders all metrics in the OpenMetrics text format ([`CONTENT_TYPE`]).
    pub fn render(&self) -> String {
        let running: usize = self
            .running
            .read()
            .iter()
            .filter_map(std::sync::Weak::upgrade)
            .map(|c| c.load(std::sync::atomic::Ordering::Relaxed))
            .sum();
        self.in_flight.set(running as i64);
        let mut out = String::with_capacity(16 << 10);
        if let Err(e) = prometheus_client::encoding::text::encode(&mut out, &self.registry.read()) {
            // a String takes any text: only a source's own error gets here
            tracing::warn!(error = %e, "encoding the metrics failed");
        }
        out
    }
}

/// RPCSEC_GSS events count as kinds of `rnfs_rpc_events_total` (`gss_init`, `gss_replay`,
/// `gss_credproblem`, ...).
impl crate::gss::GssEvents for RpcMetrics {
    fn count(&self, kind: &'static str) {
        self.count_error(kind);
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
        m.observe(100003, "GETATTR", 20.0);
        m.count_error("garbage_args");
        m.gauge("tcp_connections").set(3);
        let t = m.render();
        assert!(
            t.contains("rnfs_rpc_calls_total{program=\"nfs\",proc=\"GETATTR\"} 3\n"),
            "{t}"
        );
        assert!(t.contains("# TYPE rnfs_rpc_latency_seconds histogram\n"));
        assert!(t.contains(
            "rnfs_rpc_latency_seconds_bucket{le=\"0.000025\",program=\"nfs\",proc=\"GETATTR\"} 1\n"
        ));
        assert!(t.contains(
            "rnfs_rpc_latency_seconds_bucket{le=\"10.0\",program=\"nfs\",proc=\"GETATTR\"} 2\n"
        ));
        assert!(t.contains(
            "rnfs_rpc_latency_seconds_bucket{le=\"+Inf\",program=\"nfs\",proc=\"GETATTR\"} 3\n"
        ));
        assert!(t.contains("rnfs_rpc_latency_seconds_count{program=\"nfs\",proc=\"GETATTR\"} 3\n"));
        assert!(t.contains("rnfs_rpc_events_total{kind=\"garbage_args\"} 1\n"));
        assert!(t.contains("rnfs_tcp_connections 3\n"));
        assert!(t.contains("# HELP rnfs_rpc_calls RPC calls executed, by program and procedure.\n"));
        assert!(t.ends_with("# EOF\n"));
    }

    #[test]
    fn kept_handles_count_without_the_registry() {
        let m = RpcMetrics::default();
        let s = m.stats(100005, "MNT");
        s.observe(1e-3);
        s.observe(1e-3);
        assert_eq!(m.stats(100005, "MNT").count(), 2);
        m.counter("drc_hit").inc();
        m.count_error("drc_hit");
        let t = m.render();
        assert!(t.contains("rnfs_rpc_calls_total{program=\"mount\",proc=\"MNT\"} 2\n"));
        assert!(t.contains("rnfs_rpc_events_total{kind=\"drc_hit\"} 2\n"));
    }

    #[test]
    fn clients_are_bounded() {
        let m = RpcMetrics::default().with_max_clients(2);
        let a = |i: u8| SocketAddr::from(([10, 0, 0, i], 700 + i as u16));
        m.client(a(1)).record(100, 20);
        // another port of the same address is the same client
        m.client(SocketAddr::from(([10, 0, 0, 1], 9)))
            .record(100, 0);
        // an IPv4-mapped IPv6 address is the IPv4 client
        let mapped: SocketAddr = "[::ffff:10.0.0.1]:5".parse().unwrap();
        m.client(mapped).record(1, 1);
        m.client(a(2)).record(10, 10);
        for i in 3..50 {
            m.client(a(i)).record(1, 1);
        }
        let t = m.render();
        assert!(
            t.contains("rnfs_client_calls_total{client=\"10.0.0.1\"} 3\n"),
            "{t}"
        );
        assert!(t.contains("rnfs_client_received_bytes_total{client=\"10.0.0.1\"} 201\n"));
        assert!(t.contains("rnfs_client_sent_bytes_total{client=\"10.0.0.1\"} 21\n"));
        assert!(t.contains("rnfs_client_calls_total{client=\"10.0.0.2\"} 1\n"));
        assert!(t.contains("rnfs_client_calls_total{client=\"other\"} 47\n"));
        assert_eq!(t.matches("rnfs_client_calls_total{").count(), 3);
    }

    #[test]
    fn nfs_errors_and_bytes() {
        let m = RpcMetrics::default();
        let v3 = m.nfs("3");
        v3.error("LOOKUP", "NFS3ERR_NOENT");
        v3.error("LOOKUP", "NFS3ERR_NOENT");
        v3.read(4096);
        m.nfs("4").written(10);
        let t = m.render();
        assert!(t.contains(
            "rnfs_nfs_errors_total{version=\"3\",op=\"LOOKUP\",status=\"NFS3ERR_NOENT\"} 2\n"
        ));
        assert!(t.contains("rnfs_nfs_read_bytes_total{version=\"3\"} 4096\n"));
        assert!(t.contains("rnfs_nfs_write_bytes_total{version=\"4\"} 10\n"));
    }

    struct Fixed;

    impl MetricsSource for Fixed {
        fn encode(&self, out: &mut MetricsOut<'_>) -> fmt::Result {
            out.counter("rnfs_test_things_total", "Things.", 7)?;
            out.gauge("rnfs_test_level", "A level.", 3)?;
            out.counter_f64("rnfs_test_seconds_total", "Seconds.", 1.5)?;
            out.gauges(
                "rnfs_test_state",
                "States.",
                [([("kind", "a")], 1), ([("kind", "b")], 2)],
            )?;
            out.counters("rnfs_test_by_total", "By.", [([("k", "x"), ("j", "y")], 4)])
        }
    }

    #[test]
    fn sources_keep_their_names() {
        let m = RpcMetrics::default();
        m.add_source(Arc::new(Fixed));
        let t = m.render();
        assert!(
            t.contains("# TYPE rnfs_test_things counter\nrnfs_test_things_total 7\n"),
            "{t}"
        );
        assert!(t.contains("# TYPE rnfs_test_level gauge\nrnfs_test_level 3\n"));
        assert!(t.contains("rnfs_test_seconds_total 1.5\n"));
        assert!(t.contains("rnfs_test_state{kind=\"a\"} 1\nrnfs_test_state{kind=\"b\"} 2\n"));
        assert!(t.contains("rnfs_test_by_total{k=\"x\",j=\"y\"} 4\n"));
    }
}
