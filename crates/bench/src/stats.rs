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
    fn rng_stays_below() {
        let mut r = Rng::new(7);
        assert!((0..1000).all(|_| r.below(10) < 10));
    }
}
