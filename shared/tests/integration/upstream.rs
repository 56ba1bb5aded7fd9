//! The shared HTTP client against local servers: credentials never follow a redirect, and
//! an oversized body is refused before it is read in full.

use std::time::{Duration, Instant};

use serde_json::Value;
use shared::Error;
use shared::upstream::{MAX_BODY_BYTES, RetryPolicy, http_client, read_json, send};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

const CREDENTIAL: &str = "pa-test-credential";

async fn get(url: String) -> shared::Result<Value> {
    let client = http_client()?;
    let deadline = Instant::now() + Duration::from_secs(10);
    let response = send("seatsaero", deadline, &RetryPolicy::default(), || {
        client
            .get(&url)
            .header("Partner-Authorization", CREDENTIAL)
            .bearer_auth(CREDENTIAL)
    })
    .await?;
    read_json("seatsaero", response).await
}

#[tokio::test]
async fn a_redirect_is_not_followed_and_the_credential_stays_home() {
    let elsewhere = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200).set_body_string("{}"))
        .mount(&elsewhere)
        .await;
    let upstream = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(
            ResponseTemplate::new(302)
                .insert_header("location", format!("{}/collect", elsewhere.uri())),
        )
        .mount(&upstream)
        .await;

    let result = get(format!("{}/search", upstream.uri())).await;
    assert!(
        matches!(result, Err(Error::UpstreamRejected { status: 302, .. })),
        "{result:?}"
    );
    let seen = elsewhere.received_requests().await.unwrap_or_default();
    assert!(
        seen.is_empty(),
        "the other host got {} request(s)",
        seen.len()
    );
}

/// The server declares 50 MB and sends one byte, then holds the connection: only a client
/// that refuses on the declared length returns at all.
#[tokio::test]
async fn a_body_over_the_cap_is_refused_without_reading_it() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut request = [0u8; 4096];
                let _ = socket.read(&mut request).await;
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{{",
                    50 * 1024 * 1024
                );
                let _ = socket.write_all(head.as_bytes()).await;
                tokio::time::sleep(Duration::from_secs(60)).await;
            });
        }
    });
    let result = tokio::time::timeout(
        Duration::from_secs(20),
        get(format!("http://{addr}/search")),
    )
    .await
    .unwrap_or_else(|_| panic!("the client waited for the body instead of refusing it"));
    match result {
        Err(Error::Upstream { message, .. }) => assert!(message.contains("limit"), "{message}"),
        other => panic!("expected a refusal, got {other:?}"),
    }
    const { assert!(MAX_BODY_BYTES < 50 * 1024 * 1024) };
}
