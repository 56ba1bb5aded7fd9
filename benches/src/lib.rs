//! Helpers for the bench binaries in `benches/benches/`.
//!
//! Each bench runs a short smoke pass under `cargo test` (so CI proves it still works) and the
//! full measurement under `cargo bench`, which passes `--bench`.

pub mod process;
pub mod runtime_api;

pub use test_support::figures::{Percentiles, full_run, peak_rss_kib};

/// The resident kinds of a `/proc/PID/status` text (absent fields read as 0).
fn resident(status: &str) -> process::Resident {
    let field = |name: &str| test_support::figures::status_kib(status, name).unwrap_or_default();
    process::Resident {
        anon_kib: field("RssAnon:"),
        file_kib: field("RssFile:"),
        threads: field("Threads:"),
    }
}
