//! The gate in front of `cargo lambda watch`, against a slow fake emulator: the limit per
//! function holds and does not hold back other functions, a full queue and a long wait are
//! answered 503 with `Retry-After`, answers stream through frame by frame, and a client
//! that leaves keeps its function's place until the answer has ended.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use dev_stack::gate::{self, Config, Gate};
use http_body_util::channel::Channel;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::watch;

type Body = UnsyncBoxBody<Bytes, Infallible>;

/// What the fake emulator saw, per function.
#[derive(Default)]
struct Seen {
    running: HashMap<String, usize>,
    most: HashMap<String, usize>,
    requests: HashMap<String, usize>,
}

/// A fake emulator. `/lambda-url/<fn>/hold` answers once released (stage 1);
/// `/lambda-url/<fn>/stream` sends `one`, `two` at stage 1 and `three` at stage 2, and only
/// then has its invocation ended. Anything else answers at once.
struct Emulator {
    addr: SocketAddr,
    seen: Arc<Mutex<Seen>>,
    stage: watch::Sender<u8>,
}

impl Emulator {
    async fn start() -> Self {
        let listener = bind().await;
        let addr = listener.local_addr().expect("local address");
        let seen = Arc::new(Mutex::new(Seen::default()));
        let (stage, released) = watch::channel(0u8);
        let state = Arc::clone(&seen);
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let (state, released) = (Arc::clone(&state), released.clone());
                tokio::spawn(async move {
                    let service = service_fn(move |request| {
                        let (state, released) = (Arc::clone(&state), released.clone());
                        async move { Ok::<_, Infallible>(answer(request, state, released).await) }
                    });
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Self { addr, seen, stage }
    }

    fn running(&self, function: &str) -> usize {
        let seen = self.seen.lock().expect("lock");
        seen.running.get(function).copied().unwrap_or(0)
    }

    fn most(&self, function: &str) -> usize {
        let seen = self.seen.lock().expect("lock");
        seen.most.get(function).copied().unwrap_or(0)
    }

    fn requests(&self, function: &str) -> usize {
        let seen = self.seen.lock().expect("lock");
        seen.requests.get(function).copied().unwrap_or(0)
    }

    fn release_all(&self) {
        self.stage.send_replace(2);
    }

    fn release_stage(&self, stage: u8) {
        self.stage.send_replace(stage);
    }

    /// Waits until `function` has `n` invocations running (at most 5 s).
    async fn until_running(&self, function: &str, n: usize) {
        for _ in 0..500 {
            if self.running(function) == n {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!(
            "{function}: {} running, expected {n}",
            self.running(function)
        );
    }
}

fn begin(state: &Mutex<Seen>, function: &str) {
    let mut seen = state.lock().expect("lock");
    *seen.requests.entry(function.to_owned()).or_default() += 1;
    let running = seen.running.entry(function.to_owned()).or_default();
    *running += 1;
    let now = *running;
    let most = seen.most.entry(function.to_owned()).or_default();
    *most = (*most).max(now);
}

fn end(state: &Mutex<Seen>, function: &str) {
    let mut seen = state.lock().expect("lock");
    if let Some(running) = seen.running.get_mut(function) {
        *running -= 1;
    }
}

async fn answer(
    request: http::Request<Incoming>,
    state: Arc<Mutex<Seen>>,
    mut released: watch::Receiver<u8>,
) -> http::Response<Body> {
    let path = request.uri().path().to_owned();
    let mut parts = path.trim_start_matches('/').split('/').skip(1);
    let function = parts.next().unwrap_or_default().to_owned();
    let action = parts.next().unwrap_or_default().to_owned();
    begin(&state, &function);
    match action.as_str() {
        "hold" => {
            let _ = released.wait_for(|s| *s >= 1).await;
            end(&state, &function);
            http::Response::new(full("held"))
        }
        "stream" => {
            let (mut tx, body) = Channel::<Bytes, Infallible>::new(1);
            tokio::spawn(async move {
                let _ = tx.send_data(Bytes::from_static(b"one\n\n")).await;
                let _ = released.wait_for(|s| *s >= 1).await;
                let _ = tx.send_data(Bytes::from_static(b"two\n\n")).await;
                let _ = released.wait_for(|s| *s >= 2).await;
                let _ = tx.send_data(Bytes::from_static(b"three\n\n")).await;
                end(&state, &function);
            });
            let mut response = http::Response::new(body.boxed_unsync());
            response.headers_mut().insert(
                http::header::CONTENT_TYPE,
                http::HeaderValue::from_static("text/event-stream"),
            );
            response
        }
        _ => {
            end(&state, &function);
            http::Response::new(full("quick"))
        }
    }
}

fn full(text: &'static str) -> Body {
    Full::new(Bytes::from_static(text.as_bytes())).boxed_unsync()
}

async fn bind() -> TcpListener {
    TcpListener::bind("127.0.0.1:0").await.expect("bind")
}

/// A gate in front of `upstream`; its base URL.
async fn gate(upstream: SocketAddr, per_function: usize, queue: usize, wait: Duration) -> String {
    let listener = bind().await;
    let addr = listener.local_addr().expect("local address");
    let config = Config {
        upstream,
        per_function,
        queue,
        queue_wait: wait,
        hold_limit: Duration::from_secs(30),
    };
    tokio::spawn(gate::serve(listener, Gate::new(config)));
    format!("http://{addr}")
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .expect("client")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_limit_holds_per_function_and_other_functions_pass() {
    let emulator = Emulator::start().await;
    let base = gate(emulator.addr, 2, 50, Duration::from_secs(20)).await;
    let http = client();
    let mut held = Vec::new();
    for _ in 0..6 {
        let request = http.post(format!("{base}/lambda-url/a/hold")).send();
        held.push(tokio::spawn(request));
    }
    emulator.until_running("a", 2).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(emulator.requests("a"), 2, "only two reach the emulator");

    // Another function is not held back by a's queue (nor is the Invoke API's path).
    let quick = http
        .get(format!("{base}/lambda-url/b/quick"))
        .send()
        .await
        .expect("b answers");
    assert_eq!(quick.status(), 200);
    let invoke = http
        .post(format!("{base}/2015-03-31/functions/c/invocations"))
        .body("{}")
        .send()
        .await
        .expect("c answers");
    assert_eq!(invoke.status(), 200);

    emulator.release_all();
    for request in held {
        let response = request.await.expect("task").expect("a answers");
        assert_eq!(response.status(), 200);
        assert_eq!(response.text().await.expect("body"), "held");
    }
    assert_eq!(emulator.requests("a"), 6);
    assert_eq!(emulator.most("a"), 2, "never more than two at once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_full_queue_is_answered_503_with_retry_after() {
    let emulator = Emulator::start().await;
    let base = gate(emulator.addr, 1, 2, Duration::from_secs(20)).await;
    let http = client();
    let mut held = Vec::new();
    for _ in 0..3 {
        let request = http.post(format!("{base}/lambda-url/a/hold")).send();
        held.push(tokio::spawn(request));
    }
    emulator.until_running("a", 1).await;
    tokio::time::sleep(Duration::from_millis(300)).await;

    let refused = http
        .post(format!("{base}/lambda-url/a/hold"))
        .send()
        .await
        .expect("an answer");
    assert_eq!(refused.status(), 503);
    let retry: u64 = refused
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .expect("Retry-After in seconds");
    assert!((1..=30).contains(&retry), "Retry-After {retry}");
    assert_eq!(
        refused.headers().get("content-type").map(|v| v.as_bytes()),
        Some(&b"application/json"[..])
    );
    let body: Value = refused.json().await.expect("JSON");
    assert_eq!(body["error"]["code"], "unavailable");
    assert_eq!(body["error"]["details"]["function"], "a");
    assert_eq!(body["error"]["details"]["reason"], "queue_full");
    assert!(body["error"]["message"].as_str().is_some());

    emulator.release_all();
    for request in held {
        let response = request.await.expect("task").expect("a answers");
        assert_eq!(response.status(), 200, "the queued ones still get through");
    }
    assert_eq!(
        emulator.requests("a"),
        3,
        "the refused one never reached it"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_request_that_waits_too_long_is_answered_503() {
    let emulator = Emulator::start().await;
    let base = gate(emulator.addr, 1, 5, Duration::from_millis(300)).await;
    let http = client();
    let first = tokio::spawn(http.post(format!("{base}/lambda-url/a/hold")).send());
    emulator.until_running("a", 1).await;
    let started = std::time::Instant::now();
    let late = http
        .post(format!("{base}/lambda-url/a/hold"))
        .send()
        .await
        .expect("an answer");
    assert_eq!(late.status(), 503);
    assert!(started.elapsed() >= Duration::from_millis(280));
    assert!(late.headers().contains_key("retry-after"));
    let body: Value = late.json().await.expect("JSON");
    assert_eq!(body["error"]["details"]["reason"], "queue_timeout");
    emulator.release_all();
    let first = first.await.expect("task").expect("answer");
    assert_eq!(first.status(), 200);
    assert_eq!(emulator.requests("a"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn answers_stream_through_frame_by_frame() {
    let emulator = Emulator::start().await;
    let base = gate(emulator.addr, 2, 10, Duration::from_secs(20)).await;
    let mut response = client()
        .post(format!("{base}/lambda-url/a/stream"))
        .send()
        .await
        .expect("an answer");
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers().get("content-type").map(|v| v.as_bytes()),
        Some(&b"text/event-stream"[..])
    );
    // The first frame arrives while the emulator still holds the second.
    let first = tokio::time::timeout(Duration::from_secs(5), response.chunk())
        .await
        .expect("the first frame before the rest")
        .expect("a chunk")
        .expect("not the end");
    assert_eq!(&first[..], b"one\n\n");
    emulator.release_all();
    let mut rest = Vec::new();
    while let Some(chunk) = response.chunk().await.expect("the rest") {
        rest.extend_from_slice(&chunk);
    }
    assert_eq!(rest, b"two\n\nthree\n\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_client_that_leaves_keeps_the_place_until_the_answer_ends() {
    let emulator = Emulator::start().await;
    let base = gate(emulator.addr, 1, 10, Duration::from_secs(20)).await;
    let http = client();
    let mut leaving = http
        .post(format!("{base}/lambda-url/a/stream"))
        .send()
        .await
        .expect("an answer");
    let first = leaving
        .chunk()
        .await
        .expect("a chunk")
        .expect("not the end");
    assert_eq!(&first[..], b"one\n\n");
    drop(leaving);

    let next = tokio::spawn(http.post(format!("{base}/lambda-url/a/quick")).send());
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        emulator.requests("a"),
        1,
        "the emulator still answers the first invocation: the next one waits"
    );
    // The answer goes on after the client left: the gate reads it, the place stays taken.
    emulator.release_stage(1);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        emulator.requests("a"),
        1,
        "the first invocation still streams: the next one waits"
    );
    emulator.release_all();
    let next = next.await.expect("task").expect("answer");
    assert_eq!(next.status(), 200);
    assert_eq!(emulator.requests("a"), 2);
    assert_eq!(emulator.most("a"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_emulator_that_is_down_is_answered_502() {
    // A port nothing listens on: bound, then closed.
    let addr = bind().await.local_addr().expect("local address");
    let base = gate(addr, 1, 1, Duration::from_secs(1)).await;
    let response = client()
        .get(format!("{base}/lambda-url/a/quick"))
        .send()
        .await
        .expect("an answer");
    assert_eq!(response.status(), 502);
    let body: Value = response.json().await.expect("JSON");
    assert_eq!(body["error"]["code"], "upstream_error");
}

/// A stand-in for `cargo lambda watch` and its function: a shell whose child is `sleep`
/// (the "function" named `sleep`); its pid goes into `pidfile`.
fn start_emulator_process(pidfile: &std::path::Path) -> std::process::Child {
    let child = std::process::Command::new("sh")
        .args(["-c", "sleep 300 & wait"])
        .spawn()
        .expect("sh");
    std::fs::write(pidfile, child.id().to_string()).expect("pidfile");
    child
}

fn sleep_pid(emulator: u32) -> Option<u32> {
    dev_stack::supervise::functions_under(std::path::Path::new("/proc"), emulator)
        .get("sleep")
        .copied()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_function_whose_process_died_is_started_again_at_its_next_invocation() {
    let emulator = Emulator::start().await;
    let dir = std::env::temp_dir().join(format!("gate-supervise-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let pidfile = dir.join("watch.pid");
    let restarted = dir.join("restarted");
    let mut first = start_emulator_process(&pidfile);
    // The restart command: a new emulator process in the pidfile, and a mark that it ran.
    let restart = format!(
        "touch '{}'; sh -c 'sleep 300 & wait' >/dev/null 2>&1 & echo $! > '{}'",
        restarted.display(),
        pidfile.display()
    );
    let listener = bind().await;
    let addr = listener.local_addr().expect("local address");
    let config = Config {
        upstream: emulator.addr,
        per_function: 2,
        queue: 2,
        queue_wait: Duration::from_secs(5),
        hold_limit: Duration::from_secs(30),
    };
    let supervision = dev_stack::supervise::Supervision {
        pidfile: pidfile.clone(),
        restart: vec!["sh".into(), "-c".into(), restart],
        upstream: emulator.addr,
    };
    tokio::spawn(gate::serve(
        listener,
        Gate::supervising(config, Some(supervision)),
    ));
    let base = format!("http://{addr}");
    let http = client();
    let invoke = || http.get(format!("{base}/lambda-url/sleep/quick")).send();

    // Wait until the shell has started its child, then invoke: the gate sees it running.
    let mut function = None;
    for _ in 0..50 {
        function = sleep_pid(first.id());
        if function.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let function = function.expect("the function's process under the emulator");
    assert_eq!(invoke().await.expect("answer").status(), 200);
    assert!(!restarted.exists(), "nothing died yet");

    // The function dies; its next invocation restarts the emulator first, then passes.
    std::process::Command::new("kill")
        .args(["-KILL", &function.to_string()])
        .status()
        .expect("kill");
    let _ = first.wait();
    assert_eq!(invoke().await.expect("answer").status(), 200);
    assert!(restarted.exists(), "the restart command ran");
    let new_emulator: u32 = std::fs::read_to_string(&pidfile)
        .expect("pidfile")
        .trim()
        .parse()
        .expect("pid");
    assert_ne!(new_emulator, first.id());
    // The stand-ins this test started: the new emulator's function, then the emulator.
    for pid in [sleep_pid(new_emulator), Some(new_emulator)]
        .into_iter()
        .flatten()
    {
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status();
    }
    let _ = std::fs::remove_dir_all(&dir);
}
