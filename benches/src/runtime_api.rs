//! A fake Lambda Runtime API (the 2018-06-01 interface a custom runtime polls), for running a
//! function's real binary outside Lambda: `GET /2018-06-01/runtime/invocation/next` hands out
//! the queued events one by one (long-polling while none is queued), and
//! `POST …/invocation/{id}/response` and `…/error` (and `…/init/error`) are collected as
//! [`Outcome`]s. A streamed response (chat-router) arrives as one chunked POST; its outcome is
//! taken when the body ends. The Rust runtime reports an error in mid-stream as a
//! `Lambda-Runtime-Function-Error-Type` line in the body; real trailers are read as well.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::{Mutex, mpsc};
use tokio::task::{JoinHandle, JoinSet};

const PREFIX: &str = "/2018-06-01/runtime/";
/// What the fake tells the function it has per invocation (its deadline header).
const DEADLINE_MS: u64 = 30_000;

/// A function's answer to one invocation.
#[derive(Debug)]
pub struct Outcome {
    pub request_id: String,
    /// When the last byte of the answer arrived.
    pub at: Instant,
    pub kind: OutcomeKind,
}

#[derive(Debug)]
pub enum OutcomeKind {
    /// `…/response`: the HTTP status the function answered with (from the API Gateway
    /// response JSON, or from a streamed response's prelude), `None` if it had none.
    Response {
        status: Option<u16>,
        /// The answer as posted (a streamed one with its prelude).
        body: Bytes,
        /// A streamed response that ended with an error trailer.
        stream_error: Option<String>,
    },
    /// `…/error` or `…/init/error`, with the error body.
    Error(String),
}

impl Outcome {
    /// Whether the answer's body contains `text`.
    pub fn body_contains(&self, text: &str) -> bool {
        match &self.kind {
            OutcomeKind::Response { body, .. } => body
                .windows(text.len().max(1))
                .any(|w| w == text.as_bytes()),
            OutcomeKind::Error(_) => false,
        }
    }

    /// The HTTP status of a successful answer; an error describing anything else.
    pub fn status(&self) -> Result<u16, String> {
        match &self.kind {
            OutcomeKind::Response {
                status: Some(status),
                stream_error: None,
                ..
            } => Ok(*status),
            OutcomeKind::Response {
                stream_error: Some(e),
                ..
            } => Err(format!("stream ended with an error: {e}")),
            OutcomeKind::Response { status: None, .. } => {
                Err("response without a status code".into())
            }
            OutcomeKind::Error(e) => Err(format!("function error: {e}")),
        }
    }
}

struct State {
    events: Mutex<mpsc::UnboundedReceiver<(String, Value)>>,
    polls: mpsc::UnboundedSender<Instant>,
    outcomes: mpsc::UnboundedSender<Outcome>,
    /// Each frame of a response as it arrives (request id, bytes), when tapped.
    frames: Option<mpsc::UnboundedSender<(String, Bytes)>>,
}

/// The running fake; dropping it stops it.
pub struct RuntimeApi {
    addr: SocketAddr,
    events: mpsc::UnboundedSender<(String, Value)>,
    polls: mpsc::UnboundedReceiver<Instant>,
    outcomes: mpsc::UnboundedReceiver<Outcome>,
    frames: Option<mpsc::UnboundedReceiver<(String, Bytes)>>,
    next_id: AtomicU64,
    task: JoinHandle<()>,
}

impl Drop for RuntimeApi {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl RuntimeApi {
    /// Listens on `127.0.0.1:<any free port>`.
    pub async fn start() -> std::io::Result<Self> {
        Self::listen(false).await
    }

    /// As [`RuntimeApi::start`], also handing out each frame of a response as it arrives
    /// ([`RuntimeApi::next_frame`]): what a client of a streamed answer sees, when.
    pub async fn start_tapped() -> std::io::Result<Self> {
        Self::listen(true).await
    }

    async fn listen(tapped: bool) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let (events_tx, events_rx) = mpsc::unbounded_channel();
        let (polls_tx, polls_rx) = mpsc::unbounded_channel();
        let (outcomes_tx, outcomes_rx) = mpsc::unbounded_channel();
        let (frames_tx, frames_rx) = if tapped {
            let (tx, rx) = mpsc::unbounded_channel();
            (Some(tx), Some(rx))
        } else {
            (None, None)
        };
        let state = Arc::new(State {
            events: Mutex::new(events_rx),
            polls: polls_tx,
            outcomes: outcomes_tx,
            frames: frames_tx,
        });
        let task = tokio::spawn(serve(listener, state));
        Ok(Self {
            addr,
            events: events_tx,
            polls: polls_rx,
            outcomes: outcomes_rx,
            frames: frames_rx,
            next_id: AtomicU64::new(1),
            task,
        })
    }

    /// The next frame of a response (request id, bytes) of a tapped fake; `None` if it is
    /// not tapped or stopped.
    pub async fn next_frame(&mut self) -> Option<(String, Bytes)> {
        self.frames.as_mut()?.recv().await
    }

    /// `host:port`, the value of `AWS_LAMBDA_RUNTIME_API`.
    pub fn address(&self) -> String {
        self.addr.to_string()
    }

    /// Queues an event for the next poll; returns its request id.
    pub fn push(&self, event: Value) -> String {
        let id = format!("bench-{:08}", self.next_id.fetch_add(1, Ordering::Relaxed));
        // The receiver lives in the server task's state as long as `self`.
        let _ = self.events.send((id.clone(), event));
        id
    }

    /// When the next `GET …/invocation/next` arrived (`None`: the server stopped).
    pub async fn next_poll(&mut self) -> Option<Instant> {
        self.polls.recv().await
    }

    /// The next answer the function posted.
    pub async fn next_outcome(&mut self) -> Option<Outcome> {
        self.outcomes.recv().await
    }
}

async fn serve(listener: TcpListener, state: Arc<State>) {
    let mut connections = JoinSet::new();
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            continue;
        };
        let _ = stream.set_nodelay(true);
        while connections.try_join_next().is_some() {}
        let state = Arc::clone(&state);
        connections.spawn(async move {
            let service = service_fn(move |request| {
                let state = Arc::clone(&state);
                async move { Ok::<_, Infallible>(route(&state, request).await) }
            });
            // The function being killed mid-request is how every run ends.
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

async fn route(state: &State, request: Request<Incoming>) -> Response<Full<Bytes>> {
    let path = request.uri().path().to_owned();
    let Some(rest) = path.strip_prefix(PREFIX) else {
        return plain(StatusCode::NOT_FOUND, "unknown path");
    };
    match (request.method(), rest) {
        (&Method::GET, "invocation/next") => next(state).await,
        (&Method::POST, "init/error") => {
            let body = read(request).await.0;
            finish(state, String::new(), OutcomeKind::Error(text(&body)))
        }
        (&Method::POST, rest) => {
            let Some((id, what)) = rest
                .strip_prefix("invocation/")
                .and_then(|r| r.split_once('/'))
            else {
                return plain(StatusCode::NOT_FOUND, "unknown path");
            };
            let id = id.to_owned();
            match what {
                "response" => {
                    let streamed = request
                        .headers()
                        .get("lambda-runtime-function-response-mode")
                        .is_some_and(|v| v == "streaming");
                    let (body, mut stream_error) = read_tapped(request, &id, state).await;
                    if streamed && stream_error.is_none() {
                        stream_error = inline_error(&body);
                    }
                    let kind = OutcomeKind::Response {
                        status: if streamed {
                            prelude_status(&body)
                        } else {
                            json_status(&body)
                        },
                        body,
                        stream_error,
                    };
                    finish(state, id, kind)
                }
                "error" => {
                    let body = read(request).await.0;
                    finish(state, id, OutcomeKind::Error(text(&body)))
                }
                _ => plain(StatusCode::NOT_FOUND, "unknown path"),
            }
        }
        _ => plain(StatusCode::METHOD_NOT_ALLOWED, "method not allowed"),
    }
}

async fn next(state: &State) -> Response<Full<Bytes>> {
    let _ = state.polls.send(Instant::now());
    // One poller at a time: the runtime polls sequentially.
    let event = state.events.lock().await.recv().await;
    let Some((id, event)) = event else {
        return plain(StatusCode::SERVICE_UNAVAILABLE, "no more events");
    };
    let deadline = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64 + DEADLINE_MS)
        .unwrap_or(DEADLINE_MS);
    let body = serde_json::to_vec(&event).unwrap_or_default();
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "application/json")
        .header("lambda-runtime-aws-request-id", id)
        .header("lambda-runtime-deadline-ms", deadline.to_string())
        .header(
            "lambda-runtime-invoked-function-arn",
            "arn:aws:lambda:us-east-1:123456789012:function:bench",
        )
        .header(
            "lambda-runtime-trace-id",
            "Root=1-00000000-000000000000000000000000",
        )
        .body(Full::new(Bytes::from(body)))
        .unwrap_or_else(|_| plain(StatusCode::INTERNAL_SERVER_ERROR, "bad response"))
}

fn finish(state: &State, request_id: String, kind: OutcomeKind) -> Response<Full<Bytes>> {
    let _ = state.outcomes.send(Outcome {
        request_id,
        at: Instant::now(),
        kind,
    });
    plain(StatusCode::ACCEPTED, "")
}

/// As [`read`], frame by frame, each data frame also sent to the tap (if any) as it arrives.
async fn read_tapped(
    request: Request<Incoming>,
    id: &str,
    state: &State,
) -> (Bytes, Option<String>) {
    let Some(tap) = &state.frames else {
        return read(request).await;
    };
    let mut body = request.into_body();
    let mut all = Vec::new();
    let mut error = None;
    while let Some(frame) = body.frame().await {
        match frame {
            Ok(frame) => {
                if let Some(data) = frame.data_ref() {
                    all.extend_from_slice(data);
                    let _ = tap.send((id.to_owned(), data.clone()));
                } else if let Some(trailers) = frame.trailers_ref() {
                    error = trailers
                        .get("lambda-runtime-function-error-type")
                        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
                }
            }
            Err(e) => return (Bytes::from(all), Some(format!("body not read: {e}"))),
        }
    }
    (Bytes::from(all), error)
}

/// The whole body, and the error a streamed body's trailers report (if any).
async fn read(request: Request<Incoming>) -> (Bytes, Option<String>) {
    match request.into_body().collect().await {
        Ok(collected) => {
            let error = collected.trailers().and_then(|t| {
                t.get("lambda-runtime-function-error-type")
                    .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            });
            (collected.to_bytes(), error)
        }
        Err(e) => (Bytes::new(), Some(format!("body not read: {e}"))),
    }
}

/// `statusCode` of an API Gateway / Function URL response.
fn json_status(body: &[u8]) -> Option<u16> {
    let value: Value = serde_json::from_slice(body).ok()?;
    value["statusCode"]
        .as_u64()
        .and_then(|s| u16::try_from(s).ok())
}

/// A streamed response starts with a JSON prelude (status, headers) ended by 8 NUL bytes.
fn prelude_status(body: &[u8]) -> Option<u16> {
    let end = body.windows(8).position(|w| w == [0u8; 8])?;
    json_status(body.get(..end)?)
}

/// The error line the Rust runtime writes into a stream that failed.
fn inline_error(body: &[u8]) -> Option<String> {
    const MARKER: &[u8] = b"Lambda-Runtime-Function-Error-Type:";
    let at = body.windows(MARKER.len()).position(|w| w == MARKER)?;
    Some(text(body.get(at..)?))
}

fn text(body: &[u8]) -> String {
    String::from_utf8_lossy(body).chars().take(500).collect()
}

fn plain(status: StatusCode, body: &'static str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from_static(body.as_bytes())));
    *response.status_mut() = status;
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prelude_status_reads_the_json_before_the_separator() {
        let mut body = br#"{"statusCode":201,"headers":{}}"#.to_vec();
        body.extend_from_slice(&[0; 8]);
        body.extend_from_slice(b"data: {}\n\n");
        assert_eq!(prelude_status(&body), Some(201));
        assert_eq!(prelude_status(b"no prelude"), None);
    }

    #[test]
    fn json_status_reads_status_code() {
        assert_eq!(json_status(br#"{"statusCode":200,"body":"x"}"#), Some(200));
        assert_eq!(json_status(b"{}"), None);
    }
}
