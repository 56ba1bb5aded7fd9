//! Nagle's algorithm off on the connection to the Lambda Runtime API.
//!
//! lambda_runtime 1.5 connects to the Runtime API with Nagle's algorithm on and has no setting
//! for it. A streamed response goes out a chunk at a time, and with Nagle a chunk written
//! while the one before is unacknowledged waits for the peer's delayed ACK (up to 40 ms on
//! Linux): events of the stream are held back, and so is its last chunk, which the caller,
//! Lambda's billed duration and the next invocation all wait for (docs/measurements.md,
//! "Cold start"). So at each invocation of a streaming function, [`no_delay`] finds the
//! runtime's socket among the process's descriptors (the one connected to
//! `AWS_LAMBDA_RUNTIME_API`) and sets `TCP_NODELAY` on it: two system calls when it is the
//! socket of the invocation before, a scan of `/proc/self/fd` when the runtime reconnected.

use std::net::{SocketAddr, ToSocketAddrs};
use std::os::fd::{BorrowedFd, RawFd};
use std::sync::LazyLock;
use std::sync::atomic::{AtomicI32, Ordering};

use socket2::SockRef;

/// The Runtime API's addresses, from `AWS_LAMBDA_RUNTIME_API` (`host:port`).
static RUNTIME_API: LazyLock<Vec<SocketAddr>> = LazyLock::new(|| {
    std::env::var("AWS_LAMBDA_RUNTIME_API")
        .ok()
        .and_then(|api| api.to_socket_addrs().ok())
        .map(Iterator::collect)
        .unwrap_or_default()
});

/// The descriptor found last (-1: none yet).
static KNOWN: AtomicI32 = AtomicI32::new(-1);

/// Turns Nagle's algorithm off on the process's connections to the Runtime API. Never fails:
/// where the socket cannot be found or changed the response only goes out later.
pub fn no_delay() {
    no_delay_to(&RUNTIME_API);
}

/// [`no_delay`] for the connections to `peers`; how many sockets it changed.
fn no_delay_to(peers: &[SocketAddr]) -> usize {
    if peers.is_empty() {
        return 0;
    }
    let known = KNOWN.load(Ordering::Relaxed);
    if known >= 0 && connection_to(known, peers) == Some(true) {
        return 0;
    }
    let Ok(entries) = std::fs::read_dir("/proc/self/fd") else {
        return 0;
    };
    let mut changed = 0;
    for entry in entries.flatten() {
        let Some(fd) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<RawFd>().ok())
        else {
            continue;
        };
        let is_socket = std::fs::read_link(entry.path())
            .is_ok_and(|target| target.to_string_lossy().starts_with("socket:"));
        if is_socket && connection_to(fd, peers) == Some(false) && set_no_delay(fd) {
            KNOWN.store(fd, Ordering::Relaxed);
            changed += 1;
        }
    }
    changed
}

/// For a TCP socket `fd` connected to one of `peers`: whether Nagle is already off
/// (`None`: not such a socket, or not open).
fn connection_to(fd: RawFd, peers: &[SocketAddr]) -> Option<bool> {
    with_socket(fd, |socket| {
        let peer = socket.peer_addr().ok()?.as_socket()?;
        if !peers.contains(&peer) {
            return None;
        }
        socket.tcp_nodelay().ok()
    })
}

fn set_no_delay(fd: RawFd) -> bool {
    with_socket(fd, |socket| socket.set_tcp_nodelay(true).is_ok())
}

/// Runs `f` on descriptor `fd` as a socket, for the length of the call only.
#[allow(unsafe_code)]
fn with_socket<T>(fd: RawFd, f: impl FnOnce(SockRef<'_>) -> T) -> T {
    // SAFETY: the descriptor is borrowed for `f`'s socket options and peer lookup only, all
    // synchronous. Its owner (the runtime's HTTP connection) runs on this same thread in the
    // functions that call this (`current_thread` runtimes), so it cannot close it meanwhile;
    // a descriptor closed or reused in between only makes those calls fail or read another
    // socket's peer, which `connection_to` compares before anything is set.
    let fd = unsafe { BorrowedFd::borrow_raw(fd) };
    f(SockRef::from(&fd))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};

    #[test]
    fn only_the_runtime_api_connection_loses_nagle() {
        let runtime_api = TcpListener::bind("127.0.0.1:0").unwrap();
        let other = TcpListener::bind("127.0.0.1:0").unwrap();
        let to_runtime = TcpStream::connect(runtime_api.local_addr().unwrap()).unwrap();
        let to_other = TcpStream::connect(other.local_addr().unwrap()).unwrap();
        assert!(!to_runtime.nodelay().unwrap());

        let peers = [runtime_api.local_addr().unwrap()];
        assert_eq!(no_delay_to(&peers), 1);
        assert!(to_runtime.nodelay().unwrap());
        assert!(!to_other.nodelay().unwrap());
        // The next invocation finds it done, and a new connection is found again.
        assert_eq!(no_delay_to(&peers), 0);
        drop(to_runtime);
        let again = TcpStream::connect(peers[0]).unwrap();
        assert_eq!(no_delay_to(&peers), 1);
        assert!(again.nodelay().unwrap());
    }

    #[test]
    fn without_a_runtime_api_nothing_is_touched() {
        assert_eq!(no_delay_to(&[]), 0);
    }
}
