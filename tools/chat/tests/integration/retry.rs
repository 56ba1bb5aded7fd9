//! The client against the router's retry contract, with a scripted local router: every
//! message carries an `Idempotency-Key`; a stream that breaks after `init` is resumed with
//! `GET …/turns/{turn_id}/events` and `Last-Event-ID`, showing each event once; a request
//! that got no answer is sent again with the same key; retries are bounded and answers
//! other than 2xx are not retried.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::{PREFIX, Reply, Seen, TOKEN, frame, router, temp_dir};
use chat::Error;
use chat::client::{Client, TurnRequest};
use chat::render::{Options, Renderer};
use chat::state::Session;
use chat::token::Credentials;
use serde_json::json;
use tokio::io::{AsyncReadExt, copy_bidirectional};
use tokio::net::{TcpListener, TcpStream};

/// What the scripted turn renders, each token once.
const EXPECTED: &str = "\
chat chat-9 (new)
▸ search_flights …
✓ search_flights succeeded
alpha bravo charlie
";

/// The turn's events as the router frames them, ids 0 (`init`) to 7 (`done`).
fn frames() -> Vec<String> {
    vec![
        frame(
            0,
            "init",
            json!({"chat_id": "chat-9", "created": true, "turn_id": "turn-1"}),
        ),
        frame(
            1,
            "tool_started",
            json!({"tool": "search_flights", "job_id": "j1", "deduped": false, "status": "running"}),
        ),
        frame(
            2,
            "tool_result",
            json!({"tool": "search_flights", "job_id": "j1", "status": "succeeded", "metadata": {}}),
        ),
        frame(3, "assistant_token", json!({"content": "alpha "})),
        frame(4, "assistant_token", json!({"content": "bravo "})),
        frame(5, "assistant_token", json!({"content": "charlie"})),
        frame(
            6,
            "final",
            json!({"message": {"role": "assistant", "content": "alpha bravo charlie"}, "session_state": {}, "tool_result": null}),
        ),
        frame(7, "done", json!({})),
    ]
}

/// Frames `from..` of the turn, joined.
fn from(first: usize) -> String {
    frames()[first..].concat()
}

/// Frames `..to` of the turn, joined.
fn until(end: usize) -> String {
    frames()[..end].concat()
}

/// The events after `Last-Event-ID`, as the real router resumes.
fn after(seen: &Seen) -> String {
    let last: usize = seen.last_event_id.as_deref().unwrap().parse().unwrap();
    from(last + 1)
}

/// A TCP front for `backend`: each of the first `drops` connections has its request read
/// and is then closed without an answer (its `Idempotency-Key` is recorded); later ones are
/// passed through.
async fn dropping_front(
    backend: SocketAddr,
    drops: usize,
) -> (SocketAddr, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let dropped: Arc<Mutex<Vec<String>>> = Arc::default();
    let record = Arc::clone(&dropped);
    let connections = AtomicUsize::new(0);
    tokio::spawn(async move {
        loop {
            let Ok((mut client, _)) = listener.accept().await else {
                return;
            };
            if connections.fetch_add(1, Ordering::SeqCst) < drops {
                let request = read_request(&mut client).await;
                record
                    .lock()
                    .unwrap()
                    .push(header_of(&request, "idempotency-key"));
                drop(client);
                continue;
            }
            tokio::spawn(async move {
                if let Ok(mut server) = TcpStream::connect(backend).await {
                    let _ = copy_bidirectional(&mut client, &mut server).await;
                }
            });
        }
    });
    (addr, dropped)
}

/// Reads one HTTP/1.1 request (head and `content-length` body) as text.
async fn read_request(stream: &mut TcpStream) -> String {
    let mut bytes = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        let text = String::from_utf8_lossy(&bytes).into_owned();
        if let Some(end) = text.find("\r\n\r\n") {
            let length: usize = header_of(&text, "content-length").parse().unwrap_or(0);
            if bytes.len() >= end + 4 + length {
                return text;
            }
        }
        match stream.read(&mut buffer).await {
            Ok(0) | Err(_) => return String::from_utf8_lossy(&bytes).into_owned(),
            Ok(n) => bytes.extend_from_slice(&buffer[..n]),
        }
    }
}

fn header_of(request: &str, name: &str) -> String {
    request
        .lines()
        .find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.eq_ignore_ascii_case(name)
                .then(|| value.trim().to_owned())
        })
        .unwrap_or_default()
}

/// One turn against the router at `base` (with `PREFIX`), output captured.
async fn run_turn(
    base: &str,
    dir: &std::path::Path,
    message: &str,
) -> (Result<(), Error>, String, String) {
    let client = Client::new(
        &format!("{base}{PREFIX}/"),
        Credentials::Given(TOKEN.into()),
    )
    .unwrap()
    .with_retry_pause(Duration::from_millis(1));
    let mut session = Session::open(dir.join("chat-id"), None, false).unwrap();
    let mut renderer = Renderer::new(Vec::new(), Vec::new(), Options::default());
    let request = TurnRequest {
        message: message.to_owned(),
        agent: None,
        debug: false,
        timezone: None,
    };
    let result = client.turn(&mut session, &request, &mut renderer).await;
    let (out, err) = renderer.into_parts();
    (
        result,
        String::from_utf8(out).unwrap(),
        String::from_utf8(err).unwrap(),
    )
}

fn events_path() -> String {
    format!("{PREFIX}/chats/chat-9/turns/turn-1/events")
}

#[tokio::test]
async fn every_message_carries_its_own_idempotency_key() {
    let (server, seen) = router(|_, _| Reply::Stream(from(0))).await;
    let dir = temp_dir("chat-cli-retry");
    for message in ["hi", "hi"] {
        let (result, out, err) = run_turn(&server.base_url(), &dir, message).await;
        result.unwrap();
        assert_eq!(out, EXPECTED, "\n{out}");
        assert_eq!(err, "");
    }
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    let keys: Vec<String> = seen.iter().map(|s| s.key.clone().unwrap()).collect();
    for key in &keys {
        // A ULID: 26 visible ASCII characters, well inside the router's 1–255.
        assert_eq!(key.len(), 26, "{key}");
        assert!(key.bytes().all(|b| b.is_ascii_alphanumeric()), "{key}");
    }
    // The same text sent twice is two messages: two keys.
    assert_ne!(keys[0], keys[1]);
    assert!(
        seen.iter()
            .all(|s| s.method == "POST" && s.path == format!("{PREFIX}/chat"))
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_stream_ending_without_done_is_resumed_after_the_last_event_id() {
    let (server, seen) = router(|request, n| match n {
        // `init`, the tool, "alpha " and half of "bravo ": then the body just ends.
        0 => {
            let half = &frames()[4][..15];
            Reply::Stream(format!("{}{half}", until(4)))
        }
        _ => Reply::Stream(after(request)),
    })
    .await;
    let dir = temp_dir("chat-cli-retry");
    let (result, out, err) = run_turn(&server.base_url(), &dir, "hi").await;
    result.unwrap();
    assert_eq!(out, EXPECTED, "\n{out}");
    for token in ["alpha", "bravo", "charlie"] {
        assert_eq!(out.matches(token).count(), 1, "{token} in\n{out}");
    }
    assert_eq!(
        err,
        "connection lost; resuming turn turn-1 after event 3 (retry 1 of 3)\n"
    );
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(seen[0].method, "POST");
    let resume = &seen[1];
    assert_eq!(resume.method, "GET");
    assert_eq!(resume.path, events_path());
    assert_eq!(resume.last_event_id.as_deref(), Some("3"));
    assert_eq!(resume.authorization, format!("Bearer {TOKEN}"));
    assert_eq!(resume.accept, "text/event-stream");
    assert_eq!(resume.key, None);
    // The chat was remembered from `init`, before the break.
    let state = std::fs::read_to_string(dir.join("chat-id")).unwrap();
    assert_eq!(state.trim(), "chat-9");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_cut_connection_is_resumed_from_each_last_id_and_nothing_shows_twice() {
    let (server, seen) = router(|_, n| match n {
        0 => Reply::Cut(until(3)),
        1 => Reply::Cut(frames()[3].clone()),
        // A router replaying more than was asked for: the events already shown are skipped.
        _ => Reply::Stream(from(2)),
    })
    .await;
    let dir = temp_dir("chat-cli-retry");
    let (result, out, err) = run_turn(&server.base_url(), &dir, "hi").await;
    result.unwrap();
    assert_eq!(out, EXPECTED, "\n{out}");
    assert_eq!(
        err,
        "connection lost; resuming turn turn-1 after event 2 (retry 1 of 3)\n\
         connection lost; resuming turn turn-1 after event 3 (retry 2 of 3)\n"
    );
    let seen = seen.lock().unwrap().clone();
    let resumes: Vec<(&str, &str, Option<&str>)> = seen[1..]
        .iter()
        .map(|s| {
            (
                s.method.as_str(),
                s.path.as_str(),
                s.last_event_id.as_deref(),
            )
        })
        .collect();
    let path = events_path();
    assert_eq!(
        resumes,
        [
            ("GET", path.as_str(), Some("2")),
            ("GET", path.as_str(), Some("3"))
        ]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_request_without_an_answer_is_sent_again_with_the_same_key() {
    let (server, seen) = router(|_, _| Reply::Stream(from(0))).await;
    let (front, dropped) = dropping_front(server.addr(), 1).await;
    let dir = temp_dir("chat-cli-retry");
    let (result, out, err) = run_turn(&format!("http://{front}"), &dir, "hi").await;
    result.unwrap();
    assert_eq!(out, EXPECTED, "\n{out}");
    assert_eq!(
        err,
        "request failed; sending the message again (retry 1 of 3)\n"
    );
    let dropped = dropped.lock().unwrap().clone();
    let seen = seen.lock().unwrap().clone();
    assert_eq!(dropped.len(), 1);
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].method, "POST");
    assert_eq!(seen[0].key.as_deref(), Some(dropped[0].as_str()));
    assert_eq!(dropped[0].len(), 26);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn retries_are_bounded_and_refusals_are_not_retried() {
    let dir = temp_dir("chat-cli-retry");

    // No answer ever: the message is sent 1 + 3 times, always with the same key.
    let (server, seen) = router(|_, _| Reply::Stream(from(0))).await;
    let (front, dropped) = dropping_front(server.addr(), usize::MAX).await;
    let (result, out, err) = run_turn(&format!("http://{front}"), &dir, "hi").await;
    assert!(matches!(result, Err(Error::Http(_))), "{result:?}");
    assert_eq!(out, "");
    assert_eq!(
        err,
        "request failed; sending the message again (retry 1 of 3)\n\
         request failed; sending the message again (retry 2 of 3)\n\
         request failed; sending the message again (retry 3 of 3)\n"
    );
    let dropped = dropped.lock().unwrap().clone();
    assert_eq!(dropped.len(), 4);
    assert!(
        dropped
            .iter()
            .all(|key| key == &dropped[0] && !key.is_empty())
    );
    assert!(seen.lock().unwrap().is_empty());

    // A turn whose every resume ends without `done`: three resumes, then `Truncated`.
    let (server, seen) = router(|_, n| match n {
        0 => Reply::Stream(until(4)),
        _ => Reply::Stream(String::new()),
    })
    .await;
    let (result, out, err) = run_turn(&server.base_url(), &dir, "hi").await;
    assert!(matches!(result, Err(Error::Truncated)), "{result:?}");
    assert_eq!(
        out,
        "chat chat-9 (new)\n▸ search_flights …\n✓ search_flights succeeded\nalpha \n"
    );
    assert_eq!(err.lines().count(), 3, "{err}");
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 4);
    assert!(
        seen[1..]
            .iter()
            .all(|s| s.last_event_id.as_deref() == Some("3"))
    );

    // Refusals are reported as before, not retried: a 5xx for the message…
    let (server, seen) = router(|_, _| Reply::refused(503, "internal")).await;
    let (result, _, err) = run_turn(&server.base_url(), &dir, "hi").await;
    match result {
        Err(e @ Error::Refused { status: 503, .. }) => {
            assert_eq!(e.to_string(), "the router answered 503: refused: internal");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(err, "");
    assert_eq!(seen.lock().unwrap().len(), 1);

    // …a 409 for a busy chat…
    let (server, seen) = router(|_, _| Reply::refused(409, "turn_in_progress")).await;
    let (result, _, _) = run_turn(&server.base_url(), &dir, "hi").await;
    assert!(
        matches!(result, Err(Error::Refused { status: 409, .. })),
        "{result:?}"
    );
    assert_eq!(seen.lock().unwrap().len(), 1);

    // …and a 404 for the resume.
    let (server, seen) = router(|_, n| match n {
        0 => Reply::Cut(until(2)),
        _ => Reply::refused(404, "not_found"),
    })
    .await;
    let (result, out, _) = run_turn(&server.base_url(), &dir, "hi").await;
    assert!(
        matches!(result, Err(Error::Refused { status: 404, .. })),
        "{result:?}"
    );
    assert_eq!(out, "chat chat-9 (new)\n▸ search_flights …\n");
    assert_eq!(seen.lock().unwrap().len(), 2);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_stream_without_ids_is_not_resumed() {
    // A router without event ids (or `turn_id`): no resume could skip what was shown, so the
    // cut stream is reported as before, without a retry.
    let (server, seen) = router(|_, _| {
        Reply::Stream(
            "event: init\ndata: {\"chat_id\":\"chat-8\",\"created\":true}\n\nevent: assistant_token\ndata: {\"content\":\"Half\"}\n\n"
                .into(),
        )
    })
    .await;
    let dir = temp_dir("chat-cli-retry");
    let (result, out, err) = run_turn(&server.base_url(), &dir, "hi").await;
    assert!(matches!(result, Err(Error::Truncated)), "{result:?}");
    assert_eq!(out, "chat chat-8 (new)\nHalf\n");
    assert_eq!(err, "");
    assert_eq!(seen.lock().unwrap().len(), 1);
    let _ = std::fs::remove_dir_all(&dir);
}
