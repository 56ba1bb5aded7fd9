//! Figures of another process (Linux): CPU time so far and peak RSS.

use std::time::Duration;

/// CPU time (user + system, all threads, exited ones included) that process `pid` has used
/// so far, from its POSIX CPU-time clock: nanosecond resolution, unlike the clock ticks of
/// `/proc/PID/stat`, which are too coarse for a cold start of a few milliseconds.
#[allow(unsafe_code)] // two libc calls, each with its SAFETY note
pub fn cpu_time(pid: u32) -> std::io::Result<Duration> {
    let pid = libc::pid_t::try_from(pid).map_err(std::io::Error::other)?;
    let mut clock: libc::clockid_t = 0;
    // SAFETY: `clock` is a valid out-pointer; the call only writes it.
    let rc = unsafe { libc::clock_getcpuclockid(pid, &mut clock) };
    if rc != 0 {
        return Err(std::io::Error::from_raw_os_error(rc));
    }
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid out-pointer for one timespec.
    if unsafe { libc::clock_gettime(clock, &mut now) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let secs = u64::try_from(now.tv_sec).map_err(std::io::Error::other)?;
    let nanos = u32::try_from(now.tv_nsec).map_err(std::io::Error::other)?;
    Ok(Duration::new(secs, nanos))
}

/// Peak resident set size of process `pid` so far (`VmHWM`), in KiB.
pub fn peak_rss_kib_of(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    test_support::figures::status_kib(&status, "VmHWM:")
}

/// What process `pid` holds resident now, in KiB, by kind: its heap and stacks (`RssAnon`),
/// its binary's and libraries' pages (`RssFile`), and its thread count: what a peak RSS is
/// made of.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Resident {
    /// Anonymous memory: heap, stacks, allocator arenas.
    pub anon_kib: u64,
    /// File-backed pages: the code and data of the binary and its libraries that were read.
    pub file_kib: u64,
    /// The part of `file_kib` that is the executable's own pages (the rest is shared libraries).
    pub binary_kib: u64,
    /// Threads of the process.
    pub threads: u64,
}

/// [`Resident`] of process `pid`, from `/proc/PID/status`.
pub fn resident_of(pid: u32) -> Option<Resident> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let mut resident = crate::resident(&status);
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).ok()?;
    let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps")).ok()?;
    resident.binary_kib = crate::mapped_rss_kib(&smaps, &exe.to_string_lossy());
    Some(resident)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_cpu_time_grows() {
        let pid = std::process::id();
        let before = cpu_time(pid).unwrap();
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = std::hint::black_box(x.wrapping_add(i * i));
        }
        let after = cpu_time(pid).unwrap();
        assert!(after > before, "{before:?} then {after:?} ({x})");
    }

    #[test]
    fn own_peak_rss_is_read() {
        assert!(peak_rss_kib_of(std::process::id()).unwrap() > 0);
    }
}
