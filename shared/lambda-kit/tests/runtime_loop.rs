//! A Runtime API that closes the first poll's connection without an answer, as the local
//! emulator sometimes does: the function polls again and serves the invocation, where
//! lambda_runtime's loop alone would have ended the process.

// Tests and benches fail loudly: unwrap, expect and panic are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// The runtime reads its address from the environment, which only `unsafe` can set.
#![allow(unsafe_code)]

use std::time::Duration;

use lambda_http::lambda_runtime::{self, LambdaEvent, service_fn};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// Reads one request: its head and a `Content-Length` body.
async fn read_request(stream: &mut TcpStream) -> Option<(String, Vec<u8>)> {
    let mut data = Vec::new();
    let mut buf = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = stream.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        data.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8_lossy(&data[..head_end]).into_owned();
    let length = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse::<usize>().ok())?
        })
        .unwrap_or(0);
    let mut body = data[head_end..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&buf[..n]);
    }
    Some((head, body))
}

/// Serves the Runtime API: drops the first poll, hands out one invocation, records its
/// response, then holds every later poll open.
async fn runtime_api(listener: TcpListener, responses: mpsc::Sender<Value>) {
    let mut polls = 0;
    loop {
        let Ok((mut stream, _)) = listener.accept().await else {
            return;
        };
        // One connection may carry several requests (keep-alive).
        loop {
            let Some((head, body)) = read_request(&mut stream).await else {
                break;
            };
            if head.starts_with("GET") && head.contains("/invocation/next") {
                polls += 1;
                match polls {
                    1 => break, // closed without an answer
                    2 => {
                        let event = br#"{"n":41}"#;
                        let reply = format!(
                            "HTTP/1.1 200 OK\r\nlambda-runtime-aws-request-id: req-1\r\n\
                             lambda-runtime-deadline-ms: 4102444800000\r\n\
                             lambda-runtime-invoked-function-arn: arn:aws:lambda:us-east-1:000000000000:function:test\r\n\
                             content-type: application/json\r\ncontent-length: {}\r\n\r\n",
                            event.len()
                        );
                        let _ = stream.write_all(reply.as_bytes()).await;
                        let _ = stream.write_all(event).await;
                    }
                    _ => {
                        tokio::time::sleep(Duration::from_secs(3600)).await;
                    }
                }
            } else if head.contains("/invocation/req-1/response") {
                let _ = responses
                    .send(serde_json::from_slice(&body).unwrap_or(Value::Null))
                    .await;
                let _ = stream
                    .write_all(b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n")
                    .await;
            } else {
                let _ = stream
                    .write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")
                    .await;
            }
        }
    }
}

#[tokio::test]
async fn a_poll_whose_connection_closes_is_made_again() {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("bind: {e}"));
    let address = listener
        .local_addr()
        .unwrap_or_else(|e| panic!("address: {e}"));
    let (tx, mut responses) = mpsc::channel(4);
    tokio::spawn(runtime_api(listener, tx));

    // This test binary holds this one test, so the process environment is its own.
    for (name, value) in [
        ("AWS_LAMBDA_RUNTIME_API", address.to_string()),
        ("AWS_LAMBDA_FUNCTION_NAME", "test".into()),
        ("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "128".into()),
        ("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST".into()),
        ("AWS_LAMBDA_LOG_STREAM_NAME", "test".into()),
        ("AWS_LAMBDA_LOG_GROUP_NAME", "/aws/lambda/test".into()),
    ] {
        // SAFETY: set before any thread of this test reads the environment.
        unsafe { std::env::set_var(name, value) };
    }

    let function = tokio::spawn(lambda_kit::runtime_loop::keep_running(|| {
        lambda_runtime::run(service_fn(|event: LambdaEvent<Value>| async move {
            let n = event.payload["n"].as_i64().unwrap_or_default();
            Ok::<_, lambda_runtime::Error>(json!({ "n": n + 1 }))
        }))
    }));

    let response = tokio::time::timeout(Duration::from_secs(20), responses.recv()).await;
    let finished_early = function.is_finished();
    function.abort();
    assert!(!finished_early, "the function ended after the dropped poll");
    assert_eq!(
        response.ok().flatten(),
        Some(json!({ "n": 42 })),
        "the invocation after the dropped poll was not answered"
    );
}
