//! The client against a local server that streams a canned turn in small delayed chunks:
//! the token it sends is a valid HS256 dev JWT, the output is what a user sees, and the
//! chat id is kept for the next invocation.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use chat::client::{Client, TurnRequest};
use chat::render::{Options, Renderer};
use chat::state::Session;
use chat::token::Credentials;
use chat::{Args, Error};
use clap::Parser;
use http_body_util::channel::Channel;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Value, json};
use test_support::serve::{BoxError, LocalServer, serve_lambda};

const SECRET: &str = "a-local-dev-secret-that-is-long-enough-for-hs256";
const ISSUER: &str = "http://127.0.0.1/dev";
const AUDIENCE: &str = "local-dev";

const TURN: &str = concat!(
    "event: init\ndata: {\"chat_id\":\"chat-42\",\"created\":true}\n\n",
    ": keep-alive\n\n",
    "event: tool_started\ndata: {\"tool\":\"search_flights\",\"job_id\":\"j1\",\"deduped\":false,\"status\":\"running\"}\n\n",
    "event: tool_result\ndata: {\"tool\":\"search_flights\",\"job_id\":\"j1\",\"status\":\"succeeded\",\"metadata\":{}}\n\n",
    "event: assistant_token\ndata: {\"content\":\"Grüße! \"}\n\n",
    "event: assistant_token\ndata: {\"content\":\"One offer ✈\"}\n\n",
    "event: final\ndata: {\"message\":{\"role\":\"assistant\",\"content\":\"Grüße! One offer ✈\"},\"session_state\":{},",
    "\"tool_result\":{\"seatsResult\":null,\"cashResult\":{\"success\":true,\"results\":{\"count\":1,\"flights\":[",
    "{\"id\":\"a1\",\"provider\":\"amadeus\",\"price\":\"€2,310.00\",\"pricePerPerson\":\"€2,310.00\",\"airline\":\"United\",",
    "\"cabin\":\"Business\",\"tags\":[],\"totalStops\":0,\"miles\":null,\"taxes\":{\"amount\":null,\"currency\":null},\"seatsLeft\":null,",
    "\"outbound\":{\"departure\":{\"airport\":\"FRA\",\"time\":\"2027-03-15T10:05:00\"},\"arrival\":{\"airport\":\"EWR\",\"time\":\"2027-03-15T13:00:00\"},",
    "\"duration\":\"8h 55m\",\"stops\":\"Nonstop\",\"flightNumbers\":\"UA961\"}}]}}}}\n\n",
    "event: done\ndata: {}\n\n",
);

const EXPECTED: &str = "\
chat chat-42 (new)
▸ search_flights …
✓ search_flights succeeded
Grüße! One offer ✈

source  airline  cabin     depart                arrive                duration  stops    price      notes
------  -------  --------  --------------------  --------------------  --------  -------  ---------  -------
cash    United   Business  FRA 2027-03-15 10:05  EWR 2027-03-15 13:00  8h 55m    Nonstop  €2,310.00  one-way
";

/// What the fake router saw of one request.
#[derive(Debug, Clone)]
struct Seen {
    claims: Result<Value, String>,
    accept: String,
    content_type: String,
    body: Value,
}

/// A fake chat-router: checks the bearer token like the real one (HS256, issuer,
/// audience), answers 401 with the JSON error envelope when it is wrong, else streams
/// `turn` in chunks of `chunk` bytes with a small delay between them.
async fn fake_router(turn: &'static str, chunk: usize) -> (LocalServer, Arc<Mutex<Vec<Seen>>>) {
    let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let record = Arc::clone(&seen);
    let server = serve_lambda(move |request: lambda_http::Request| {
        let record = Arc::clone(&record);
        async move {
            let header = |name: &str| {
                request
                    .headers()
                    .get(name)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_owned()
            };
            let claims = verify(&header("authorization"));
            let ok = claims.is_ok() && request.uri().path() == "/lambda-url/chat-router/chat";
            record.lock().unwrap().push(Seen {
                claims,
                accept: header("accept"),
                content_type: header("content-type"),
                body: serde_json::from_slice(request.body().as_ref()).unwrap_or_default(),
            });
            let (mut sender, body) = Channel::<Bytes, BoxError>::new(4);
            let (status, chunks): (u16, Vec<Bytes>) = if ok {
                let chunks = turn
                    .as_bytes()
                    .chunks(chunk)
                    .map(Bytes::copy_from_slice)
                    .collect();
                (200, chunks)
            } else {
                let envelope =
                    json!({"error": {"code": "unauthorized", "message": "invalid token"}});
                (401, vec![Bytes::from(envelope.to_string())])
            };
            tokio::spawn(async move {
                for chunk in chunks {
                    if sender.send_data(chunk).await.is_err() {
                        return;
                    }
                    tokio::time::sleep(Duration::from_millis(3)).await;
                }
            });
            http::Response::builder()
                .status(status)
                .header(
                    "content-type",
                    if ok {
                        "text/event-stream"
                    } else {
                        "application/json"
                    },
                )
                .body(body)
                .unwrap()
        }
    })
    .await;
    (server, seen)
}

fn verify(authorization: &str) -> Result<Value, String> {
    let token = authorization
        .strip_prefix("Bearer ")
        .ok_or("no bearer token")?;
    let mut validation = Validation::new(Algorithm::HS256);
    validation.set_issuer(&[ISSUER]);
    validation.set_audience(&[AUDIENCE]);
    validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
    jsonwebtoken::decode::<Value>(
        token,
        &DecodingKey::from_secret(SECRET.as_bytes()),
        &validation,
    )
    .map(|data| data.claims)
    .map_err(|e| e.to_string())
}

/// A fresh directory under the OS temp dir with the secret in it.
fn temp_dir(secret: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(test_support::unique("chat-cli"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("jwt-secret"), format!("{secret}\n")).unwrap();
    dir
}

fn args(server: &LocalServer, dir: &Path, extra: &[&str]) -> Args {
    let url = server.url("/lambda-url/chat-router/");
    let secret = dir.join("jwt-secret");
    let state = dir.join("run/chat-id");
    let mut argv = vec![
        "chat",
        "--url",
        &url,
        "--user",
        "ada",
        "--issuer",
        ISSUER,
        "--audience",
        AUDIENCE,
        "--jwt-secret-file",
        secret.to_str().unwrap(),
        "--state-file",
        state.to_str().unwrap(),
    ];
    argv.extend_from_slice(extra);
    Args::try_parse_from(argv).unwrap()
}

/// One turn as `chat` runs it, with the output captured.
async fn run_turn(args: &Args, message: &str) -> (Result<(), Error>, String, String) {
    let credentials = match Credentials::from_args(args) {
        Ok(credentials) => credentials,
        Err(e) => return (Err(e), String::new(), String::new()),
    };
    let client = Client::new(&args.url, credentials).unwrap();
    let mut session =
        Session::open(args.state_file.clone(), args.chat_id.clone(), args.new).unwrap();
    let mut renderer = Renderer::new(Vec::new(), Vec::new(), Options::default());
    let request = TurnRequest {
        message: message.to_owned(),
        agent: args.agent.clone(),
        debug: args.debug,
        timezone: Some("Europe/Berlin".into()),
    };
    let result = client.turn(&mut session, &request, &mut renderer).await;
    let (out, err) = renderer.into_parts();
    (
        result,
        String::from_utf8(out).unwrap(),
        String::from_utf8(err).unwrap(),
    )
}

#[tokio::test]
async fn a_streamed_turn_is_rendered_and_the_chat_is_continued() {
    // 7-byte chunks split "ü", "ß" and "✈" somewhere in the stream.
    let (server, seen) = fake_router(TURN, 7).await;
    let dir = temp_dir(SECRET);
    let args = args(&server, &dir, &["--agent", "travel"]);

    let (result, out, err) = run_turn(&args, "Business class FRA to JFK on 2027-03-15").await;
    result.unwrap();
    assert_eq!(out, EXPECTED, "\n{out}");
    assert_eq!(err, "");
    let state = std::fs::read_to_string(dir.join("run/chat-id")).unwrap();
    assert_eq!(state.trim(), "chat-42");

    // A follow-up invocation continues the remembered chat.
    let (result, _, _) = run_turn(&args, "and in First?").await;
    result.unwrap();
    // `--new` starts over.
    let (result, _, _) = run_turn(&self::args(&server, &dir, &["--new", "--debug"]), "hi").await;
    result.unwrap();

    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3);
    let claims = seen[0].claims.clone().unwrap();
    assert_eq!(claims["sub"], "ada");
    let lifetime = claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap();
    assert_eq!(lifetime, 3600);
    assert_eq!(seen[0].accept, "text/event-stream");
    assert_eq!(seen[0].content_type, "application/json");
    assert_eq!(
        seen[0].body,
        json!({"message": "Business class FRA to JFK on 2027-03-15", "agent": "travel", "timezone": "Europe/Berlin"})
    );
    assert_eq!(
        seen[1].body,
        json!({"message": "and in First?", "chat_id": "chat-42", "agent": "travel", "timezone": "Europe/Berlin"})
    );
    assert_eq!(
        seen[2].body,
        json!({"message": "hi", "debug": true, "timezone": "Europe/Berlin"})
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn refusals_turn_errors_and_cut_streams_are_errors() {
    let (server, _) = fake_router(TURN, 64).await;

    // A secret the router does not know: 401 with the envelope's message.
    let dir = temp_dir("another-secret-that-is-also-long-enough-123");
    let (result, _, _) = run_turn(&args(&server, &dir, &[]), "hi").await;
    match result {
        Err(e @ Error::Refused { status: 401, .. }) => {
            assert_eq!(e.to_string(), "the router answered 401: invalid token");
        }
        other => panic!("{other:?}"),
    }
    assert!(!dir.join("run/chat-id").exists());

    // No secret file: a hint instead of a token.
    std::fs::remove_file(dir.join("jwt-secret")).unwrap();
    let (result, _, _) = run_turn(&args(&server, &dir, &[]), "hi").await;
    let message = result.unwrap_err().to_string();
    assert!(
        message.contains("run `make dev` first, or pass --token"),
        "{message}"
    );
    let _ = std::fs::remove_dir_all(&dir);

    // An `error` event: printed to stderr, the turn fails after `done`.
    let failing = concat!(
        "event: init\ndata: {\"chat_id\":\"chat-7\",\"created\":false}\n\n",
        "event: error\ndata: {\"code\":\"llm_unavailable\",\"message\":\"the model did not answer\"}\n\n",
        "event: done\ndata: {}\n\n",
    );
    let (server, _) = fake_router(failing, 5).await;
    let dir = temp_dir(SECRET);
    let (result, out, err) = run_turn(&args(&server, &dir, &[]), "hi").await;
    assert!(matches!(result, Err(Error::TurnFailed)), "{result:?}");
    assert_eq!(out, "");
    assert_eq!(err, "error (llm_unavailable): the model did not answer\n");
    let state = std::fs::read_to_string(dir.join("run/chat-id")).unwrap();
    assert_eq!(state.trim(), "chat-7");

    // A stream that stops before `done`.
    let cut = "event: init\ndata: {\"chat_id\":\"chat-8\",\"created\":true}\n\nevent: assistant_token\ndata: {\"content\":\"Half\"}\n\n";
    let (server, _) = fake_router(cut, 9).await;
    let (result, out, _) = run_turn(&args(&server, &dir, &[]), "hi").await;
    assert!(matches!(result, Err(Error::Truncated)), "{result:?}");
    assert_eq!(out, "chat chat-8 (new)\nHalf\n");
    let _ = std::fs::remove_dir_all(&dir);
}
