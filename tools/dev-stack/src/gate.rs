//! `dev-stack gate`: a concurrency gate in front of `cargo lambda watch`.
//!
//! `cargo lambda watch` (1.9.x) keeps each function's pending invocations in a channel of
//! 100 and pushes into it while holding the write lock of the map of all functions' queues;
//! every function instance needs a read lock of that map to take its next invocation. Once
//! 100 invocations of one function wait, the push waits for room that no instance can make,
//! and every function on the port hangs until the emulator is restarted.
//!
//! The gate listens where clients expect the emulator (`WATCH_PORT`) and forwards to it on
//! an internal port, passing request and response bodies through frame by frame (the
//! chat-router's answers are Server-Sent Events). It lets at most `per_function`
//! invocations of each function reach the emulator at once: per function, so a router turn
//! waiting for a tool function never waits behind other router turns. The rest wait in a
//! bounded FIFO queue; a request that finds the queue full, or waits longer than
//! `queue_wait`, is answered `503` with `Retry-After` and the project's JSON error envelope,
//! without reaching the emulator. An invocation counts as running until its response body
//! has ended, even when the client left earlier: the gate then reads the rest of the answer
//! itself (for at most `hold_limit`), because the emulator would keep the invocation queued
//! whether or not anyone waits for it.

use std::collections::HashMap;
use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Request, Response, StatusCode, Uri};
use http_body_util::channel::Channel;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::json;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, oneshot};

use crate::supervise::{Supervision, Supervisor};

/// The body of every answer the gate gives.
pub type GateBody = UnsyncBoxBody<Bytes, io::Error>;

/// How the gate behaves; `dev-stack gate --help` describes each.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where `cargo lambda watch` listens.
    pub upstream: SocketAddr,
    /// Invocations of one function let through at once.
    pub per_function: usize,
    /// Requests of one function that may wait beyond those; more are refused with 503.
    pub queue: usize,
    /// The longest a request waits in the queue before it is refused with 503.
    pub queue_wait: Duration,
    /// How long an invocation whose client left is still counted (its answer read to the
    /// end) before the gate lets it go.
    pub hold_limit: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            upstream: SocketAddr::from(([127, 0, 0, 1], 9100)),
            per_function: 4,
            queue: 128,
            queue_wait: Duration::from_secs(60),
            hold_limit: Duration::from_secs(300),
        }
    }
}

/// Distinct function names the gate keeps a queue for; requests naming further ones share
/// the queue of [`OTHER`]. Names come from request paths, so they are bounded.
const MAX_LANES: usize = 64;
/// The queue of requests that name no function (or one beyond [`MAX_LANES`]).
pub const OTHER: &str = "(other)";
/// Frames buffered between the emulator and a slow client.
const BODY_BUFFER: usize = 16;

/// The function a request invokes: `/lambda-url/<fn>/…` (function URLs) or
/// `/2015-03-31/functions/<fn>/invocations` (the Invoke API, also its streaming form).
pub fn function_of(path: &str) -> Option<&str> {
    let mut segments = path.strip_prefix('/')?.split('/');
    let name = match (segments.next(), segments.next()) {
        (Some("lambda-url"), Some(name)) => name,
        (Some("2015-03-31"), Some("functions")) => {
            let name = segments.next()?;
            match segments.next() {
                Some("invocations" | "response-streaming-invocations") => name,
                _ => return None,
            }
        }
        _ => return None,
    };
    let plausible = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    plausible.then_some(name)
}

/// One function's queue.
struct Lane {
    name: String,
    permits: Arc<Semaphore>,
    waiting: AtomicUsize,
    stats: Mutex<LaneStats>,
}

#[derive(Default)]
struct LaneStats {
    /// Moving average of how long an invocation held its place, in seconds.
    average_hold: f64,
    /// Since the queue last became non-empty: requests that waited, the longest wait, and
    /// requests refused.
    queued: u64,
    longest_wait: Duration,
    refused: u64,
}

impl Lane {
    fn stats(&self) -> std::sync::MutexGuard<'_, LaneStats> {
        self.stats.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Seconds a refused client should wait: the queue ahead of it at the average pace,
    /// between 1 and 30.
    fn retry_after(&self, per_function: usize) -> u64 {
        let waiting = self.waiting.load(Ordering::Relaxed) as f64;
        let average = self.stats().average_hold.max(0.1);
        let seconds = (waiting + 1.0) * average / per_function.max(1) as f64;
        (seconds.ceil() as u64).clamp(1, 30)
    }

    fn held(&self, time: Duration) {
        let mut stats = self.stats();
        let secs = time.as_secs_f64();
        stats.average_hold = if stats.average_hold == 0.0 {
            secs
        } else {
            0.8 * stats.average_hold + 0.2 * secs
        };
    }
}

/// Counts a request as waiting while it exists; says so when the queue empties.
struct Waiting<'a> {
    lane: &'a Lane,
    since: Instant,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        let waited = self.since.elapsed();
        let mut stats = self.lane.stats();
        stats.longest_wait = stats.longest_wait.max(waited);
        if self.lane.waiting.fetch_sub(1, Ordering::AcqRel) == 1 {
            eprintln!(
                "[gate] {}: queue empty again ({} requests waited in it, the longest {:.1} s; {} refused)",
                self.lane.name,
                stats.queued,
                stats.longest_wait.as_secs_f64(),
                stats.refused
            );
            *stats = LaneStats {
                average_hold: stats.average_hold,
                ..LaneStats::default()
            };
        }
    }
}

/// The gate's state: its settings and one queue per function.
pub struct Gate {
    config: Config,
    lanes: Mutex<HashMap<String, Arc<Lane>>>,
    /// Starts a function whose process died again (`crate::supervise`), when configured.
    supervisor: Option<Supervisor>,
}

impl Gate {
    pub fn new(config: Config) -> Arc<Self> {
        Self::supervising(config, None)
    }

    /// A gate that also replaces the emulator when a function's process died.
    pub fn supervising(config: Config, supervision: Option<Supervision>) -> Arc<Self> {
        Arc::new(Self {
            config,
            lanes: Mutex::new(HashMap::new()),
            supervisor: supervision.map(Supervisor::new),
        })
    }

    fn lane(&self, name: &str) -> Arc<Lane> {
        let mut lanes = self.lanes.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(lane) = lanes.get(name) {
            return Arc::clone(lane);
        }
        let name = if lanes.len() >= MAX_LANES - 1 {
            OTHER
        } else {
            name
        };
        Arc::clone(lanes.entry(name.to_owned()).or_insert_with(|| {
            Arc::new(Lane {
                name: name.to_owned(),
                permits: Arc::new(Semaphore::new(self.config.per_function.max(1))),
                waiting: AtomicUsize::new(0),
                stats: Mutex::new(LaneStats::default()),
            })
        }))
    }

    /// Answers one request: through the emulator once the function has room, else 503.
    pub async fn handle(self: Arc<Self>, request: Request<Incoming>) -> Response<GateBody> {
        let function = function_of(request.uri().path());
        let lane = self.lane(function.unwrap_or(OTHER));
        let permit = match self.admit(&lane).await {
            Ok(permit) => permit,
            Err(refusal) => return refusal,
        };
        if let (Some(supervisor), Some(function)) = (&self.supervisor, function) {
            supervisor.ensure(function).await;
        }
        self.forward(lane, permit, request).await
    }

    /// A place among the function's running invocations, after a wait in its queue if
    /// need be; or the 503 that refuses the request.
    async fn admit(&self, lane: &Lane) -> Result<OwnedSemaphorePermit, Response<GateBody>> {
        if let Ok(permit) = Arc::clone(&lane.permits).try_acquire_owned() {
            return Ok(permit);
        }
        let config = &self.config;
        let ahead = lane.waiting.fetch_add(1, Ordering::AcqRel);
        if ahead >= config.queue {
            lane.waiting.fetch_sub(1, Ordering::AcqRel);
            lane.stats().refused += 1;
            let retry = lane.retry_after(config.per_function);
            eprintln!(
                "[gate] {}: refused (503): {} running and the queue is full ({} waiting); Retry-After {retry} s",
                lane.name, config.per_function, config.queue
            );
            return Err(busy(
                &lane.name,
                retry,
                format!(
                    "the local stack is busy: {} invocations of {} run and {} wait; try again in {retry} s",
                    config.per_function, lane.name, config.queue
                ),
                "queue_full",
            ));
        }
        if ahead == 0 {
            eprintln!(
                "[gate] {}: {} invocations running; queueing further ones (at most {}, {} s each)",
                lane.name,
                config.per_function,
                config.queue,
                config.queue_wait.as_secs()
            );
        }
        lane.stats().queued += 1;
        let waiting = Waiting {
            lane,
            since: Instant::now(),
        };
        let acquired =
            tokio::time::timeout(config.queue_wait, Arc::clone(&lane.permits).acquire_owned())
                .await;
        match acquired {
            Ok(Ok(permit)) => {
                drop(waiting);
                Ok(permit)
            }
            // The semaphore is never closed; answer as for a timeout should it be.
            Ok(Err(_)) | Err(_) => {
                lane.stats().refused += 1;
                drop(waiting);
                let retry = lane.retry_after(config.per_function);
                let waited = config.queue_wait.as_secs();
                eprintln!(
                    "[gate] {}: refused (503) after waiting {waited} s in the queue; Retry-After {retry} s",
                    lane.name
                );
                Err(busy(
                    &lane.name,
                    retry,
                    format!(
                        "the local stack is busy: a request for {} waited {waited} s without its turn; try again in {retry} s",
                        lane.name
                    ),
                    "queue_timeout",
                ))
            }
        }
    }

    /// Sends the request to the emulator and streams its answer back. The exchange runs in
    /// a task of its own that holds the function's place until the answer has ended, so a
    /// client that leaves does not free the place of an invocation the emulator still has.
    async fn forward(
        &self,
        lane: Arc<Lane>,
        permit: OwnedSemaphorePermit,
        request: Request<Incoming>,
    ) -> Response<GateBody> {
        let (head_tx, head_rx) = oneshot::channel();
        let upstream = self.config.upstream;
        let hold_limit = self.config.hold_limit;
        tokio::spawn(async move {
            let started = Instant::now();
            relay(upstream, request, head_tx, hold_limit, &lane.name).await;
            lane.held(started.elapsed());
            drop(permit);
        });
        match head_rx.await {
            Ok(Ok(response)) => response,
            Ok(Err(message)) => {
                let body = json!({"error": {
                    "code": "upstream_error",
                    "message": format!("the local Lambda emulator (cargo lambda watch) did not answer: {message}"),
                }});
                error_response(StatusCode::BAD_GATEWAY, &body, None)
            }
            Err(_) => {
                let body = json!({"error": {"code": "internal", "message": "internal error"}});
                error_response(StatusCode::INTERNAL_SERVER_ERROR, &body, None)
            }
        }
    }
}

type Head = Result<Response<GateBody>, String>;

/// One exchange with the emulator: the answer's head goes to `head_tx`, its body frame by
/// frame after it; once the client is gone, the rest is read and dropped (at most
/// `hold_limit`).
async fn relay(
    upstream: SocketAddr,
    request: Request<Incoming>,
    mut head_tx: oneshot::Sender<Head>,
    hold_limit: Duration,
    name: &str,
) {
    let exchange = exchange(upstream, request);
    tokio::pin!(exchange);
    let answer = tokio::select! {
        answer = &mut exchange => answer,
        () = head_tx.closed() => {
            eprintln!("[gate] {name}: the client left before the answer began; waiting for it to end (at most {} s)", hold_limit.as_secs());
            match tokio::time::timeout(hold_limit, &mut exchange).await {
                Ok(answer) => answer,
                Err(_) => {
                    eprintln!("[gate] {name}: gave up waiting for an answer nobody reads");
                    return;
                }
            }
        }
    };
    let response = match answer {
        Ok(response) => response,
        Err(message) => {
            eprintln!("[gate] {name}: {message}");
            let _ = head_tx.send(Err(message));
            return;
        }
    };
    let (mut parts, mut upstream_body) = response.into_parts();
    strip_hop_by_hop(&mut parts.headers);
    let (mut tx, body) = Channel::<Bytes, io::Error>::new(BODY_BUFFER);
    let mut reading = head_tx
        .send(Ok(Response::from_parts(parts, body.boxed_unsync())))
        .is_ok();
    let mut deadline = (!reading).then(|| tokio::time::Instant::now() + hold_limit);
    loop {
        let frame = match deadline {
            None => upstream_body.frame().await,
            Some(at) => match tokio::time::timeout_at(at, upstream_body.frame()).await {
                Ok(frame) => frame,
                Err(_) => {
                    eprintln!("[gate] {name}: gave up reading an answer nobody reads");
                    return;
                }
            },
        };
        match frame {
            None => return,
            Some(Ok(frame)) => {
                if reading && tx.send(frame).await.is_err() {
                    reading = false;
                    deadline = Some(tokio::time::Instant::now() + hold_limit);
                    eprintln!(
                        "[gate] {name}: the client left during the answer; reading it to its end (at most {} s)",
                        hold_limit.as_secs()
                    );
                }
            }
            Some(Err(e)) => {
                eprintln!("[gate] {name}: the emulator's answer broke off: {e}");
                if reading {
                    tx.abort(io::Error::other(e));
                }
                return;
            }
        }
    }
}

/// Connects to the emulator and sends the request over a connection of its own.
async fn exchange(
    upstream: SocketAddr,
    request: Request<Incoming>,
) -> Result<Response<Incoming>, String> {
    let stream = TcpStream::connect(upstream)
        .await
        .map_err(|e| format!("cannot connect to {upstream}: {e}"))?;
    let _ = stream.set_nodelay(true);
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| format!("handshake with {upstream}: {e}"))?;
    tokio::spawn(async move {
        // Ends with the exchange; a broken connection shows in the answer's body.
        let _ = connection.await;
    });
    let (mut parts, body) = request.into_parts();
    strip_hop_by_hop(&mut parts.headers);
    parts.uri = parts
        .uri
        .path_and_query()
        .map(|p| Uri::from(p.clone()))
        .unwrap_or_else(|| Uri::from_static("/"));
    sender
        .send_request(Request::from_parts(parts, body))
        .await
        .map_err(|e| format!("sending the request to {upstream}: {e}"))
}

/// Drops the headers that describe one connection, not the message (RFC 9110 §7.6.1).
fn strip_hop_by_hop(headers: &mut HeaderMap) {
    let named: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|name| HeaderName::try_from(name.trim()).ok())
        .collect();
    for name in named {
        headers.remove(name);
    }
    for name in [
        header::CONNECTION,
        header::TRANSFER_ENCODING,
        header::TE,
        header::TRAILER,
        header::UPGRADE,
        header::PROXY_AUTHORIZATION,
        header::PROXY_AUTHENTICATE,
    ] {
        headers.remove(name);
    }
    headers.remove("keep-alive");
    headers.remove("proxy-connection");
}

/// 503 in the error envelope of the functions (`{"error": {code, message, details}}`).
fn busy(function: &str, retry_after: u64, message: String, reason: &str) -> Response<GateBody> {
    let body = json!({"error": {
        "code": "unavailable",
        "message": message,
        "details": {"function": function, "reason": reason, "retry_after_secs": retry_after},
    }});
    error_response(StatusCode::SERVICE_UNAVAILABLE, &body, Some(retry_after))
}

fn error_response(
    status: StatusCode,
    body: &serde_json::Value,
    retry_after: Option<u64>,
) -> Response<GateBody> {
    let mut response = Response::new(
        Full::new(Bytes::from(body.to_string()))
            .map_err(|never: Infallible| match never {})
            .boxed_unsync(),
    );
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if let Some(seconds) = retry_after {
        headers.insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    }
    response
}

/// Serves the gate on `listener` until the task is dropped.
pub async fn serve(listener: TcpListener, gate: Arc<Gate>) {
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                // E.g. out of file descriptors: wait for some to close.
                eprintln!("[gate] accepting a connection failed: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let gate = Arc::clone(&gate);
        tokio::spawn(async move {
            let service = service_fn(move |request| {
                let gate = Arc::clone(&gate);
                async move { Ok::<_, Infallible>(gate.handle(request).await) }
            });
            // A client that hangs up ends its connection; nothing to report.
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_function_comes_from_either_path() {
        assert_eq!(
            function_of("/lambda-url/chat-router/chats/1/messages"),
            Some("chat-router")
        );
        assert_eq!(function_of("/lambda-url/kb-retrieve"), Some("kb-retrieve"));
        assert_eq!(
            function_of("/2015-03-31/functions/tool-worker/invocations"),
            Some("tool-worker")
        );
        assert_eq!(
            function_of("/2015-03-31/functions/tool-worker/response-streaming-invocations"),
            Some("tool-worker")
        );
        assert_eq!(function_of("/2015-03-31/functions/tool-worker/other"), None);
        assert_eq!(function_of("/"), None);
        assert_eq!(function_of("/lambda-url//x"), None);
        assert_eq!(function_of("/lambda-url/a%20b/x"), None);
        assert_eq!(function_of("/elsewhere/chat-router"), None);
    }

    #[test]
    fn hop_by_hop_headers_are_dropped() {
        let mut headers = HeaderMap::new();
        headers.insert(header::CONNECTION, HeaderValue::from_static("close, x-hop"));
        headers.insert("x-hop", HeaderValue::from_static("1"));
        headers.insert("keep-alive", HeaderValue::from_static("timeout=5"));
        headers.insert(
            header::TRANSFER_ENCODING,
            HeaderValue::from_static("chunked"),
        );
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/event-stream"),
        );
        strip_hop_by_hop(&mut headers);
        assert_eq!(headers.len(), 1);
        assert!(headers.contains_key(header::CONTENT_TYPE));
    }
}
