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
        binary_kib: 0,
        threads: field("Threads:"),
    }
}

/// Resident KiB of the mappings of file `path` in a `/proc/PID/smaps` text: how much of the
/// file-backed pages are the executable's own rather than its libraries'.
fn mapped_rss_kib(smaps: &str, path: &str) -> u64 {
    let mut in_file = false;
    let mut total = 0;
    for line in smaps.lines() {
        // A mapping's header starts with its address range; its fields are `Name:   value kB`.
        let is_header = line
            .split_whitespace()
            .next()
            .is_some_and(|first| first.contains('-') && !first.ends_with(':'));
        if is_header {
            in_file = line.split_whitespace().nth(5) == Some(path);
        } else if in_file && let Some(rest) = line.strip_prefix("Rss:") {
            total += rest
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<u64>()
                .unwrap_or_default();
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rss_of_one_file_sums_its_mappings_only() {
        let smaps = "\
55d0-55e0 r--p 00000000 fd:01 42   /opt/fn/bootstrap
Rss:                 120 kB
Pss:                 120 kB
55e0-56f0 r-xp 00010000 fd:01 42   /opt/fn/bootstrap
Rss:                3000 kB
7f00-7f10 r-xp 00000000 fd:01 7    /usr/lib/libc.so.6
Rss:                 900 kB
7f20-7f30 rw-p 00000000 00:00 0
Rss:                  64 kB
";
        assert_eq!(mapped_rss_kib(smaps, "/opt/fn/bootstrap"), 3120);
        assert_eq!(mapped_rss_kib(smaps, "/usr/lib/libc.so.6"), 900);
        assert_eq!(mapped_rss_kib(smaps, "/nowhere"), 0);
    }
}
