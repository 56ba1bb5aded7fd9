//! The gate's watch over the functions' processes. `cargo lambda watch` starts a function's
//! process at its first invocation and never again: once that process dies (a crash, an
//! out-of-memory kill, a `kill -9` in a test), every later invocation of the function
//! waits in the emulator for nothing. Lambda would start a new environment instead.
//!
//! Before it forwards an invocation, the gate looks for the function's process among the
//! emulator's descendants. A function that had one and has none any more died: the gate
//! runs the restart command (`dev.sh restart-watch`: a new emulator, which starts each
//! function again at its next invocation), waits for the emulator's port, and says so in
//! its log. Invocations of other functions that were running in the old emulator are cut.

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::sync::Mutex;

/// How the gate finds and restarts the emulator.
#[derive(Debug, Clone)]
pub struct Supervision {
    /// The file holding the emulator's process id (the local stack's pidfile).
    pub pidfile: PathBuf,
    /// The command that replaces the emulator (and rewrites `pidfile`).
    pub restart: Vec<String>,
    /// Where the emulator listens: ready again once it accepts connections.
    pub upstream: SocketAddr,
}

/// What the gate knows of the functions' processes.
pub struct Supervisor {
    config: Supervision,
    /// Functions seen running under the current emulator; a restart forgets them.
    seen: Mutex<HashSet<String>>,
}

/// The longest wait for the new emulator's port.
const READY_WITHIN: Duration = Duration::from_secs(60);

impl Supervisor {
    pub fn new(config: Supervision) -> Self {
        Self {
            config,
            seen: Mutex::new(HashSet::new()),
        }
    }

    /// Makes sure `function` can be started: if its process died, the emulator is replaced
    /// first. Concurrent callers wait for one restart.
    pub async fn ensure(&self, function: &str) {
        let mut seen = self.seen.lock().await;
        let Some(emulator) = read_pid(&self.config.pidfile) else {
            return;
        };
        let running = functions_under(Path::new("/proc"), emulator);
        if running.contains_key(function) {
            seen.insert(function.to_owned());
            return;
        }
        if !seen.contains(function) {
            // Its first invocation: the emulator starts it.
            return;
        }
        eprintln!(
            "[gate] {function}: its process died; restarting cargo lambda watch, which starts it again at this invocation"
        );
        let started = Instant::now();
        match self.restart().await {
            Ok(()) => eprintln!(
                "[gate] cargo lambda watch restarted in {} ms",
                started.elapsed().as_millis()
            ),
            Err(e) => eprintln!("[gate] restarting cargo lambda watch failed: {e}"),
        }
        seen.clear();
    }

    async fn restart(&self) -> Result<(), String> {
        let (program, args) = self
            .config
            .restart
            .split_first()
            .ok_or("no restart command")?;
        let mut command = std::process::Command::new(program);
        command.args(args).stdin(Stdio::null());
        let status = tokio::task::spawn_blocking(move || command.status())
            .await
            .map_err(|e| format!("{program}: {e}"))?
            .map_err(|e| format!("{program}: {e}"))?;
        if !status.success() {
            return Err(format!("{program} ended with {status}"));
        }
        let deadline = Instant::now() + READY_WITHIN;
        while tokio::net::TcpStream::connect(self.config.upstream)
            .await
            .is_err()
        {
            if Instant::now() > deadline {
                return Err(format!(
                    "the emulator did not listen on {} within {} s",
                    self.config.upstream,
                    READY_WITHIN.as_secs()
                ));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Ok(())
    }
}

fn read_pid(pidfile: &Path) -> Option<u32> {
    std::fs::read_to_string(pidfile).ok()?.trim().parse().ok()
}

/// The functions running under process `root`, by name (the file name of their program),
/// each with its process id. `proc` is the proc file system's root.
pub fn functions_under(proc: &Path, root: u32) -> HashMap<String, u32> {
    let Ok(entries) = std::fs::read_dir(proc) else {
        return HashMap::new();
    };
    let parents: HashMap<u32, u32> = entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| Some((pid, parent_of(proc, pid)?)))
        .collect();
    let descends = |mut pid: u32| {
        // Bounded: a cycle cannot occur in the process tree, but a racing read might.
        for _ in 0..64 {
            match parents.get(&pid) {
                Some(&parent) if parent == root => return true,
                Some(&parent) if parent > 1 => pid = parent,
                _ => return false,
            }
        }
        false
    };
    parents
        .keys()
        .filter(|&&pid| descends(pid))
        .filter_map(|&pid| Some((program_of(proc, pid)?, pid)))
        .collect()
}

fn parent_of(proc: &Path, pid: u32) -> Option<u32> {
    let status = std::fs::read_to_string(proc.join(pid.to_string()).join("status")).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("PPid:"))?
        .trim()
        .parse()
        .ok()
}

/// The file name of the process's program (its first argument).
fn program_of(proc: &Path, pid: u32) -> Option<String> {
    let cmdline = std::fs::read(proc.join(pid.to_string()).join("cmdline")).ok()?;
    let first = cmdline.split(|&b| b == 0).next()?;
    let path = Path::new(std::str::from_utf8(first).ok()?);
    Some(path.file_name()?.to_str()?.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake proc tree: (pid, parent, program), in a directory of its own.
    fn proc_tree(name: &str, processes: &[(u32, u32, &str)]) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("gate-proc-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (pid, parent, program) in processes {
            let at = dir.join(pid.to_string());
            std::fs::create_dir_all(&at).unwrap_or_else(|e| panic!("{e}"));
            std::fs::write(at.join("status"), format!("Name:\tx\nPPid:\t{parent}\n"))
                .unwrap_or_else(|e| panic!("{e}"));
            std::fs::write(at.join("cmdline"), format!("{program}\0--flag\0"))
                .unwrap_or_else(|e| panic!("{e}"));
        }
        dir
    }

    #[test]
    fn only_the_emulators_descendants_count() {
        let proc = proc_tree(
            "descendants",
            &[
                (100, 1, "/usr/bin/cargo-lambda"),
                (200, 100, "/usr/bin/cargo"),
                (300, 200, "/repo/target/debug/chat-router"),
                (301, 100, "/repo/target/debug/seatsaero-search"),
                // The same binary run by a test, not by the emulator.
                (400, 1, "/repo/target/debug/kb-retrieve"),
            ],
        );
        let running = functions_under(&proc, 100);
        assert_eq!(running.get("chat-router"), Some(&300));
        assert_eq!(running.get("seatsaero-search"), Some(&301));
        assert!(!running.contains_key("kb-retrieve"));
        assert!(functions_under(&proc, 999).is_empty());
        let _ = std::fs::remove_dir_all(&proc);
    }
}
