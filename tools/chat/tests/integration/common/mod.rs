//! A scripted local router for the client's tests: it records what each request carried
//! and answers the n-th one as the test's script says (a stream, a stream cut off, or a
//! JSON error envelope), in small chunks like a real stream.

#![allow(dead_code)] // Each test file uses a part.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::channel::Channel;
use serde_json::{Value, json};
use test_support::serve::{BoxError, LocalServer, serve_lambda};

pub const PREFIX: &str = "/lambda-url/chat-router";
pub const TOKEN: &str = "test-token";

/// One SSE frame as the router writes it.
pub fn frame(id: u64, event: &str, data: Value) -> String {
    format!("id: {id}\nevent: {event}\ndata: {data}\n\n")
}

/// What the fake router saw of one request.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub authorization: String,
    pub accept: String,
    pub key: Option<String>,
    pub last_event_id: Option<String>,
    /// The JSON body (`null` when there was none).
    pub body: Value,
}

/// One scripted answer.
pub enum Reply {
    /// 200, these bytes in small chunks, then a clean end of the body.
    Stream(String),
    /// 200, these bytes, then the connection is cut (the body fails).
    Cut(String),
    /// The router's JSON error envelope: status, code, message, details.
    Refuse(u16, &'static str, String, Value),
}

impl Reply {
    /// A refusal whose message only names its code.
    pub fn refused(status: u16, code: &'static str) -> Self {
        Self::Refuse(status, code, format!("refused: {code}"), Value::Null)
    }
}

type Script = dyn Fn(&Seen, usize) -> Reply + Send + Sync;

/// A router answering the n-th request (from 0) with `script(request, n)`.
pub async fn router(
    script: impl Fn(&Seen, usize) -> Reply + Send + Sync + 'static,
) -> (LocalServer, Arc<Mutex<Vec<Seen>>>) {
    let script: Arc<Script> = Arc::new(script);
    let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let record = Arc::clone(&seen);
    let server = serve_lambda(move |request: lambda_http::Request| {
        let header = |name: &str| {
            request
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let this = Seen {
            method: request.method().to_string(),
            path: request.uri().path().to_owned(),
            authorization: header("authorization").unwrap_or_default(),
            accept: header("accept").unwrap_or_default(),
            key: header("idempotency-key"),
            last_event_id: header("last-event-id"),
            body: serde_json::from_slice(request.body().as_ref()).unwrap_or_default(),
        };
        let n = {
            let mut seen = record.lock().unwrap();
            seen.push(this.clone());
            seen.len() - 1
        };
        let reply = script(&this, n);
        async move {
            let (mut sender, body) = Channel::<Bytes, BoxError>::new(4);
            let (status, content_type, bytes, cut) = match reply {
                Reply::Stream(text) => (200, "text/event-stream", text.into_bytes(), false),
                Reply::Cut(text) => (200, "text/event-stream", text.into_bytes(), true),
                Reply::Refuse(status, code, message, details) => {
                    let mut error = json!({"code": code, "message": message});
                    if !details.is_null() {
                        error["details"] = details;
                    }
                    let envelope = json!({ "error": error }).to_string().into_bytes();
                    (status, "application/json", envelope, false)
                }
            };
            tokio::spawn(async move {
                for chunk in bytes.chunks(11) {
                    if sender
                        .send_data(Bytes::copy_from_slice(chunk))
                        .await
                        .is_err()
                    {
                        return;
                    }
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                if cut {
                    // Let the bytes reach the client first.
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    sender.abort("connection cut".into());
                }
            });
            http::Response::builder()
                .status(status)
                .header("content-type", content_type)
                .body(body)
                .unwrap()
        }
    })
    .await;
    (server, seen)
}

/// A fresh directory for the client's state file.
pub fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(test_support::unique(name));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
