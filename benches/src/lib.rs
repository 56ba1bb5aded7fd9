//! Helpers for the bench binaries in `benches/benches/`.
//!
//! Each bench runs a short smoke pass under `cargo test` (so CI proves it still works) and the
//! full measurement under `cargo bench`, which passes `--bench`.

use std::time::Duration;

pub mod process;
pub mod runtime_api;

/// True under `cargo bench`; false when `cargo test --benches` (so `make test`) runs the binary.
pub fn full_run() -> bool {
    std::env::args().any(|a| a == "--bench")
}

/// Latency percentiles of a set of samples.
pub struct Percentiles {
    pub p50: Duration,
    pub p90: Duration,
    pub p99: Duration,
    pub max: Duration,
    pub n: usize,
}

impl Percentiles {
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
    vm_hwm(&status)
}

/// The resident kinds of a `/proc/PID/status` text (absent fields read as 0).
fn resident(status: &str) -> process::Resident {
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or_default()
    };
    process::Resident {
        anon_kib: field("RssAnon:"),
        file_kib: field("RssFile:"),
        threads: field("Threads:"),
    }
}

/// `VmHWM` of a `/proc/PID/status` text, in KiB.
fn vm_hwm(status: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
}
