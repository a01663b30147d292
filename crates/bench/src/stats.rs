//! Latency samples, percentiles, sizes and machine facts.

use std::time::Duration;

/// Per-operation latencies in nanoseconds.
#[derive(Debug, Clone, Default)]
pub struct Lat {
    ns: Vec<u64>,
}

impl Lat {
    /// An empty set with room for `n` samples.
    pub fn with_capacity(n: usize) -> Lat {
        Lat {
            ns: Vec::with_capacity(n),
        }
    }

    /// Adds one sample.
    #[inline]
    pub fn push(&mut self, d: Duration) {
        self.ns.push(d.as_nanos() as u64);
    }

    /// Adds all samples of `o`.
    pub fn merge(&mut self, o: Lat) {
        self.ns.extend(o.ns);
    }

    /// Number of samples.
    pub fn len(&self) -> usize {
        self.ns.len()
    }

    /// True when there are no samples.
    pub fn is_empty(&self) -> bool {
        self.ns.is_empty()
    }

    /// Mean in microseconds.
    pub fn mean_us(&self) -> f64 {
        if self.is_empty() {
            return 0.0;
        }
        self.ns.iter().sum::<u64>() as f64 / self.ns.len() as f64 / 1000.0
    }

    /// The `p`-th percentile (0..=100) in microseconds (nearest rank).
    pub fn pct_us(&mut self, p: f64) -> f64 {
        if self.ns.is_empty() {
            return 0.0;
        }
        self.ns.sort_unstable();
        let rank = ((p / 100.0) * self.ns.len() as f64).ceil() as usize;
        self.ns[rank.clamp(1, self.ns.len()) - 1] as f64 / 1000.0
    }
}

/// Parses a size such as `4096`, `4k`, `1M`, `2g` (powers of 1024).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim().to_ascii_lowercase();
    let t = t
        .strip_suffix("ib")
        .or_else(|| t.strip_suffix('b'))
        .unwrap_or(&t);
    let (num, mul) = match t.chars().last() {
        Some('k') => (&t[..t.len() - 1], 1u64 << 10),
        Some('m') => (&t[..t.len() - 1], 1 << 20),
        Some('g') => (&t[..t.len() - 1], 1 << 30),
        _ => (t, 1),
    };
    let n: u64 = num
        .trim()
        .parse()
        .map_err(|_| format!("not a size: {s:?} (e.g. 4096, 4k, 1m, 2g)"))?;
    n.checked_mul(mul)
        .ok_or_else(|| format!("size too large: {s}"))
}

/// A size for people: `4 KiB`, `1 MiB`.
pub fn fmt_size(n: u64) -> String {
    if n >= 1 << 30 && n & ((1 << 30) - 1) == 0 {
        format!("{} GiB", n >> 30)
    } else if n >= 1 << 20 && n & ((1 << 20) - 1) == 0 {
        format!("{} MiB", n >> 20)
    } else if n >= 1 << 10 && n & ((1 << 10) - 1) == 0 {
        format!("{} KiB", n >> 10)
    } else {
        format!("{n} B")
    }
}

/// A value from `/proc/<pid>/status` in KiB (e.g. `VmRSS`, `VmHWM`).
pub fn proc_status_kib(pid: u32, key: &str) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find(|l| l.starts_with(key) && l[key.len()..].starts_with(':'))
        .and_then(|l| l[key.len() + 1..].split_whitespace().next()?.parse().ok())
}

/// CPU time (user + system, ns) of each thread of `pid`, from `/proc/<pid>/task/*/schedstat`
/// (nanoseconds, where `/proc/<pid>/stat` counts clock ticks of 10 ms).
pub fn proc_thread_cpu_ns(pid: u32) -> Option<std::collections::HashMap<u32, u64>> {
    let mut out = std::collections::HashMap::new();
    for e in std::fs::read_dir(format!("/proc/{pid}/task"))
        .ok()?
        .flatten()
    {
        let Some(tid) = e.file_name().to_str().and_then(|t| t.parse().ok()) else {
            continue;
        };
        // a thread may exit between the listing and the read
        if let Ok(s) = std::fs::read_to_string(e.path().join("schedstat")) {
            if let Some(ns) = s.split_whitespace().next().and_then(|v| v.parse().ok()) {
                out.insert(tid, ns);
            }
        }
    }
    Some(out)
}

/// CPU time `pid` used between two [`proc_thread_cpu_ns`] readings (threads that exited in
/// between are not counted; threads started in between count from zero).
pub fn cpu_ns_between(
    before: &std::collections::HashMap<u32, u64>,
    after: &std::collections::HashMap<u32, u64>,
) -> u64 {
    after
        .iter()
        .map(|(tid, &ns)| ns.saturating_sub(before.get(tid).copied().unwrap_or(0)))
        .sum()
}

/// A process's CPU time from a starting point: the server's when its pid is known
/// (`--server-pid`), or rnfs-bench's own.
pub struct ProcCpu(Option<(u32, std::collections::HashMap<u32, u64>)>);

impl ProcCpu {
    /// Starts counting now (nothing is counted without a pid or a readable /proc).
    pub fn start(pid: Option<u32>) -> Self {
        ProcCpu(pid.and_then(|p| Some((p, proc_thread_cpu_ns(p)?))))
    }

    /// Counts rnfs-bench's own threads.
    pub fn own() -> Self {
        Self::start(Some(std::process::id()))
    }

    /// CPU time (ns) of the process's threads since [`ProcCpu::start`].
    pub fn ns(&self) -> Option<u64> {
        let (pid, before) = self.0.as_ref()?;
        Some(cpu_ns_between(before, &proc_thread_cpu_ns(*pid)?))
    }
}

/// The whole machine's CPU time from `/proc/stat` (all CPUs, in clock ticks): how much of it
/// was idle over a phase tells whether the CPUs or a serial path bounded it.
pub struct MachineCpu(Option<(u64, u64)>);

impl MachineCpu {
    /// Starts counting now (nothing is counted without a readable /proc/stat).
    pub fn start() -> Self {
        MachineCpu(
            std::fs::read_to_string("/proc/stat")
                .ok()
                .and_then(|s| idle_and_total(&s)),
        )
    }

    /// Percent of the machine's CPU time that was idle (idle or waiting for I/O) since
    /// [`MachineCpu::start`]; time stolen by the hypervisor counts as not ours, so not at all.
    pub fn idle_pct(&self) -> Option<f64> {
        let (i0, t0) = self.0?;
        let (i1, t1) = idle_and_total(&std::fs::read_to_string("/proc/stat").ok()?)?;
        let total = t1.checked_sub(t0).filter(|t| *t > 0)?;
        Some(100.0 * i1.saturating_sub(i0) as f64 / total as f64)
    }
}

/// (idle + iowait, all but steal and guest time) ticks of the `cpu` line of /proc/stat.
fn idle_and_total(stat: &str) -> Option<(u64, u64)> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    // user nice system idle iowait irq softirq [steal guest guest_nice]; guest time is
    // already in user
    let (&[user, nice, system, idle, iowait, irq, softirq], _) = v.split_first_chunk::<7>()?;
    Some((
        idle + iowait,
        user + nice + system + idle + iowait + irq + softirq,
    ))
}

/// Milliseconds of CPU per GB (10^9 bytes) moved.
pub fn ms_per_gb(cpu_ns: u64, bytes: u64) -> f64 {
    cpu_ns as f64 / 1e6 / (bytes.max(1) as f64 / 1e9)
}

/// Resets the peak RSS (`VmHWM`) of `pid` to its current RSS (writes 5 to clear_refs).
pub fn reset_hwm(pid: u32) -> bool {
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5").is_ok()
}

/// Facts about this machine for the report: CPUs, CPU model, kernel, load.
pub fn machine() -> serde_json::Value {
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0);
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_default();
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    serde_json::json!({
        "nproc": cpus,
        "cpu_model": model,
        "kernel": kernel,
        "loadavg": loadavg(),
    })
}

/// The 1, 5 and 15 minute load averages.
pub fn loadavg() -> Vec<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| {
            s.split_whitespace()
                .take(3)
                .filter_map(|x| x.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Seconds since the Unix epoch.
pub fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// A small, fast pseudo-random generator (xorshift64*), one per task.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed (any value).
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    /// The next value below `n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) % n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4k"), Ok(4096));
        assert_eq!(parse_size("1M"), Ok(1 << 20));
        assert_eq!(parse_size("2GiB"), Ok(2 << 30));
        assert_eq!(parse_size("512"), Ok(512));
        assert!(parse_size("x").is_err());
        assert_eq!(fmt_size(1 << 20), "1 MiB");
        assert_eq!(fmt_size(4096), "4 KiB");
    }

    #[test]
    fn percentiles() {
        let mut l = Lat::default();
        for i in 1..=100 {
            l.push(Duration::from_micros(i));
        }
        assert_eq!(l.pct_us(99.0), 99.0);
        assert_eq!(l.pct_us(50.0), 50.0);
        assert!((l.mean_us() - 50.5).abs() < 1e-9);
    }

    #[test]
    fn cpu_between_readings_counts_new_threads_from_zero_and_not_exited_ones() {
        let before = std::collections::HashMap::from([(1, 100), (2, 50)]);
        let after = std::collections::HashMap::from([(1, 130), (3, 7)]);
        assert_eq!(cpu_ns_between(&before, &after), 30 + 7);
    }

    #[test]
    fn this_process_threads_cpu_grows_while_it_computes() {
        let pid = std::process::id();
        let a = proc_thread_cpu_ns(pid).expect("own /proc/<pid>/task");
        assert!(a.contains_key(&pid), "the main thread is listed: {a:?}");
        let t0 = std::time::Instant::now();
        let mut x = 0u64;
        while t0.elapsed() < Duration::from_millis(30) {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
        let b = proc_thread_cpu_ns(pid).expect("own /proc/<pid>/task");
        let used = cpu_ns_between(&a, &b);
        // 30 ms of spinning on some thread (ours), in ns; at most the wall time of all threads
        assert!(used >= 10_000_000, "{used} ns");
        assert!(proc_thread_cpu_ns(u32::MAX).is_none());
    }

    #[test]
    fn server_cpu_counts_only_with_a_pid() {
        assert_eq!(ProcCpu::start(None).ns(), None);
        let own = ProcCpu::start(Some(std::process::id()));
        assert!(own.ns().is_some());
        assert_eq!(ms_per_gb(2_000_000, 1_000_000_000), 2.0);
        assert_eq!(ms_per_gb(3_000_000, 500_000_000), 6.0);
    }

    #[test]
    fn machine_idle_comes_from_the_cpu_line() {
        let a = "cpu  100 0 50 800 50 0 0 30 0 0\ncpu0 50 0 25 400 25 0 0 15 0 0\n";
        let b = "cpu  300 0 150 1000 50 0 0 90 0 0\ncpu0 1 1 1 1 1 1 1 1 1 1\n";
        assert_eq!(idle_and_total(a), Some((850, 1000)));
        // 500 ticks passed (steal excluded), 200 of them idle
        let (i0, t0) = idle_and_total(a).unwrap();
        let (i1, t1) = idle_and_total(b).unwrap();
        assert_eq!((i1 - i0, t1 - t0), (200, 500));
        // older kernels' shorter line still parses; a garbled one does not
        assert_eq!(idle_and_total("cpu  1 2 3 4 5 6 7\n"), Some((9, 28)));
        assert_eq!(idle_and_total("cpu  1 2 x 4 5 6 7\n"), None);
        assert_eq!(idle_and_total("cpu0 1 2 3 4 5 6 7\n"), None);
        let m = MachineCpu::start();
        std::thread::sleep(Duration::from_millis(30));
        let idle = m.idle_pct().expect("/proc/stat moves in 30 ms");
        assert!((0.0..=100.0).contains(&idle), "{idle}");
    }

    #[test]
    fn rng_stays_below() {
        let mut r = Rng::new(7);
        assert!((0..1000).all(|_| r.below(10) < 10));
    }
}
