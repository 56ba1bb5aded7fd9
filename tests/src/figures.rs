//! What the bench binaries share to print their figures: whether this is a full run,
//! latency percentiles and the peak RSS of a process, read from its `/proc` status.

use std::time::Duration;

/// True under `cargo bench`; false when `cargo test --benches` (so `make test`) runs the
/// binary as a short smoke pass.
pub fn full_run() -> bool {
    std::env::args().any(|a| a == "--bench")
}

/// Latency percentiles of a set of samples.
pub struct Percentiles {
    /// The median.
    pub p50: Duration,
    /// The 90th percentile.
    pub p90: Duration,
    /// The 99th percentile.
    pub p99: Duration,
    /// The slowest sample.
    pub max: Duration,
    /// How many samples.
    pub n: usize,
}

impl Percentiles {
    /// The percentiles of `samples` (nearest rank).
    pub fn of(mut samples: Vec<Duration>) -> Self {
        samples.sort_unstable();
        let at = |q: f64| {
            let idx = ((samples.len() as f64 - 1.0) * q).round() as usize;
            samples.get(idx).copied().unwrap_or_default()
        };
        Self {
            p50: at(0.50),
            p90: at(0.90),
            p99: at(0.99),
            max: samples.last().copied().unwrap_or_default(),
            n: samples.len(),
        }
    }

    /// One line of a report: `name`, the count and the percentiles in milliseconds.
    pub fn row(&self, name: &str) -> String {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        format!(
            "{name:<44} n={:<6} p50={:>7.3} ms  p90={:>7.3} ms  p99={:>7.3} ms  max={:>7.3} ms",
            self.n,
            ms(self.p50),
            ms(self.p90),
            ms(self.p99),
            ms(self.max)
        )
    }
}

/// Peak resident set size of this process so far (Linux `VmHWM`), in KiB.
pub fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status_kib(&status, "VmHWM:")
}

/// The figure of `field` (e.g. `VmHWM:`, `Threads:`) in a `/proc/PID/status` text, its `kB`
/// unit dropped.
pub fn status_kib(status: &str, field: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
}
