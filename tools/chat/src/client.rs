//! One turn: `POST {url}/chat`, then the SSE stream read chunk by chunk into the renderer.
//!
//! Every message gets its own `Idempotency-Key`, so sending it again never starts a second
//! turn. A lost connection is retried (at most [`MAX_RETRIES`] times per message, with a
//! growing pause): before the turn's `init` arrived, by sending the same `POST` with the same
//! key (the router answers with that turn's events from `init`); after it, by resuming with
//! `GET {url}/chats/{chat_id}/turns/{turn_id}/events` and `Last-Event-ID`, which sends only
//! the events after the last one shown. Answers other than 2xx are never retried.
//!
//! A tool call waiting for approval is decided with `POST …/tool-calls/{job_id}/approve` or
//! `…/deny`, which answers with the continuation's stream, rendered and resumed like a turn's.
//! That `POST` is never sent twice: the first may have been decided already.

use std::io::Write;
use std::time::Duration;

use reqwest::header::ACCEPT;
use serde_json::{Value, json};

use crate::printable::printable;
use crate::render::Renderer;
use crate::sse::{SseEvent, SseParser};
use crate::state::Session;
use crate::token::Credentials;
use crate::{Error, Result};

/// Longest piece of a non-JSON error body that is shown.
const MAX_ERROR_BODY_CHARS: usize = 500;
/// Most retries (resends and resumes together) for one message.
pub const MAX_RETRIES: u32 = 3;
/// Pause before the first retry; it doubles for each further one (0.5 s, 1 s, 2 s).
const FIRST_RETRY_PAUSE: Duration = Duration::from_millis(500);

/// What the user sends in one turn.
#[derive(Debug, Clone)]
pub struct TurnRequest {
    pub message: String,
    pub agent: Option<String>,
    pub debug: bool,
    /// The user's IANA time zone ("today" for the assistant is the user's date).
    pub timezone: Option<String>,
}

/// The chat-router client.
pub struct Client {
    http: reqwest::Client,
    /// The router's base URL, without a trailing slash.
    base: String,
    endpoint: String,
    credentials: Credentials,
    first_retry_pause: Duration,
}

/// The user's answer to a call that waits for approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Approve,
    /// With the user's reason, if they gave one.
    Deny {
        reason: Option<String>,
    },
}

impl Decision {
    fn verb(&self) -> &'static str {
        match self {
            Self::Approve => "approve",
            Self::Deny { .. } => "deny",
        }
    }

    fn body(&self) -> Value {
        match self {
            Self::Deny {
                reason: Some(reason),
            } => json!({ "reason": reason }),
            _ => json!({}),
        }
    }
}

/// What starts a stream: a message, or a decision on a waiting call.
enum Start<'a> {
    /// `POST /chat`; resent with the same key when no answer came.
    Message { body: &'a Value, key: &'a str },
    /// `POST` to this URL with this body; never resent.
    Decision { url: reqwest::Url, body: Value },
}

/// How far this message's turn has been shown: enough to resume it.
#[derive(Debug, Default)]
struct Progress {
    chat_id: Option<String>,
    turn_id: Option<String>,
    /// `id` of the last event shown.
    last_id: Option<u64>,
    /// Any event was shown (then a turn without ids cannot be resumed without repeats).
    shown: bool,
}

impl Progress {
    /// Chat, turn and last event id, once `init` (with its `turn_id`) was shown.
    fn resume_point(&self) -> Option<(&str, &str, u64)> {
        Some((
            self.chat_id.as_deref()?,
            self.turn_id.as_deref()?,
            self.last_id?,
        ))
    }

    /// A retry can continue without showing anything twice: by resuming, or (nothing shown
    /// yet, and the request may be sent again) by sending it again.
    fn can_continue(&self, resendable: bool) -> bool {
        self.resume_point().is_some() || (resendable && !self.shown)
    }

    /// Whether `event` is new (a resend replays from `init`); records it if so.
    fn take(&mut self, event: &SseEvent) -> bool {
        if let (Some(id), Some(last)) = (event.id, self.last_id)
            && id <= last
        {
            return false;
        }
        if event.id.is_some() {
            self.last_id = event.id;
        }
        self.shown = true;
        true
    }
}

/// How one response's stream ended.
enum Ended {
    /// With `done`.
    Done,
    /// Broken off: a transport error, or the end of the body without `done`.
    Broken(Error),
}

impl Client {
    /// A client for the router at `base_url` (a trailing slash is fine).
    pub fn new(base_url: &str, credentials: Credentials) -> Result<Self> {
        // No overall timeout: a turn streams for as long as its tools and the LLM take.
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .build()?;
        let base = base_url.trim_end_matches('/').to_owned();
        Ok(Self {
            http,
            endpoint: format!("{base}/chat"),
            base,
            credentials,
            first_retry_pause: FIRST_RETRY_PAUSE,
        })
    }

    /// Sets the pause before the first retry (it doubles for each further one); tests use a
    /// short one.
    #[must_use]
    pub fn with_retry_pause(mut self, first: Duration) -> Self {
        self.first_retry_pause = first;
        self
    }

    /// Sends one message in `session`'s chat and renders the answer as it streams. The chat
    /// id from `init` is remembered at once, so even an interrupted turn can be continued.
    /// A lost connection is retried as the module docs describe; each retry is one line on
    /// the renderer's stderr.
    pub async fn turn<W: Write, E: Write>(
        &self,
        session: &mut Session,
        request: &TurnRequest,
        renderer: &mut Renderer<W, E>,
    ) -> Result<()> {
        let mut body = json!({ "message": request.message });
        if let Some(chat_id) = session.chat_id() {
            body["chat_id"] = json!(chat_id);
        }
        if let Some(agent) = &request.agent {
            body["agent"] = json!(agent);
        }
        if request.debug {
            body["debug"] = json!(true);
        }
        if let Some(zone) = &request.timezone {
            body["timezone"] = json!(zone);
        }
        // One key per message, reused by every resend of it.
        let key = shared::ids::new_id();
        let start = Start::Message {
            body: &body,
            key: &key,
        };
        self.stream(&start, session, renderer).await
    }

    /// Approves or denies the call `job_id` waiting in `session`'s chat and renders the
    /// continuation as it streams. A 404 (no such call of this user) or 409 (decided
    /// already, or expired) is [`Error::Refused`] with the router's message.
    pub async fn decide<W: Write, E: Write>(
        &self,
        session: &mut Session,
        job_id: &str,
        decision: &Decision,
        renderer: &mut Renderer<W, E>,
    ) -> Result<()> {
        let chat_id = session
            .chat_id()
            .ok_or_else(|| Error::Setup("no chat to decide in: pass --chat-id".into()))?;
        let url = route(
            &self.base,
            &["chats", chat_id, "tool-calls", job_id, decision.verb()],
        )?;
        let start = Start::Decision {
            url,
            body: decision.body(),
        };
        self.stream(&start, session, renderer).await
    }

    /// The id of the newest call waiting for the user's approval in `chat_id`, if one
    /// waits: the first such call of `GET /chats/{chat_id}/tool-calls` (most recent first).
    pub async fn waiting_call(&self, chat_id: &str) -> Result<Option<String>> {
        let mut url = route(&self.base, &["chats", chat_id, "tool-calls"])?;
        url.query_pairs_mut().append_pair("limit", "100");
        let listed = self.get_json(url).await?;
        Ok(listed["items"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|call| call["status"] == "awaiting_approval")
            .and_then(|call| call["id"].as_str())
            .map(str::to_owned))
    }

    /// `GET /alerts`: the user's fare alerts as the router lists them.
    pub async fn alerts(&self) -> Result<Value> {
        self.get_json(route(&self.base, &["alerts"])?).await
    }

    /// `GET url` as JSON; an answer other than 2xx is [`Error::Refused`].
    async fn get_json(&self, url: reqwest::Url) -> Result<Value> {
        let response = self
            .http
            .get(url)
            .bearer_auth(self.credentials.bearer()?)
            .header(ACCEPT, "application/json")
            .send()
            .await?;
        let status = response.status();
        let text = response.text().await?;
        if !status.is_success() {
            return Err(Error::Refused {
                status: status.as_u16(),
                message: error_message(&text),
            });
        }
        serde_json::from_str(&text).map_err(|_| Error::Refused {
            status: status.as_u16(),
            message: format!("not JSON: {}", error_message(&text)),
        })
    }

    /// Renders the stream `start` answers with, retrying as the module docs describe.
    async fn stream<W: Write, E: Write>(
        &self,
        start: &Start<'_>,
        session: &mut Session,
        renderer: &mut Renderer<W, E>,
    ) -> Result<()> {
        let resendable = matches!(start, Start::Message { .. });
        let mut progress = Progress::default();
        let mut retries = 0u32;
        let mut begun = false;
        loop {
            let sent = match progress.resume_point() {
                Some((chat_id, turn_id, last_id)) => self.resume(chat_id, turn_id, last_id).await,
                None => self.start(start).await,
            };
            let (broken, cause) = match sent {
                Ok(response) if !response.status().is_success() => {
                    let status = response.status();
                    let text = response.text().await.unwrap_or_default();
                    if begun {
                        renderer.finish()?;
                    }
                    return Err(Error::Refused {
                        status: status.as_u16(),
                        message: error_message(&text),
                    });
                }
                Ok(mut response) => {
                    if !begun {
                        renderer.begin_turn();
                        begun = true;
                    }
                    match read(&mut response, &mut progress, session, renderer).await? {
                        Ended::Done => {
                            return if renderer.failed() {
                                Err(Error::TurnFailed)
                            } else {
                                Ok(())
                            };
                        }
                        Ended::Broken(error) => (error, "connection lost"),
                    }
                }
                Err(Error::Http(error)) if retryable(&error) => {
                    (Error::Http(error), "request failed")
                }
                Err(error) => {
                    if begun {
                        renderer.finish()?;
                    }
                    return Err(error);
                }
            };
            if retries >= MAX_RETRIES || !progress.can_continue(resendable) {
                renderer.finish()?;
                return Err(if renderer.failed() {
                    Error::TurnFailed
                } else {
                    broken
                });
            }
            retries += 1;
            let next = match progress.resume_point() {
                Some((_, turn_id, last_id)) => {
                    format!("resuming turn {turn_id} after event {last_id}")
                }
                None => "sending the message again".to_owned(),
            };
            renderer.notice(&format!(
                "{cause}; {next} (retry {retries} of {MAX_RETRIES})"
            ))?;
            tokio::time::sleep(self.first_retry_pause * 2u32.pow(retries - 1)).await;
        }
    }

    /// `POST /chat` with the message's idempotency key, or the decision's `POST`.
    async fn start(&self, start: &Start<'_>) -> Result<reqwest::Response> {
        let request = match start {
            Start::Message { body, key } => self
                .http
                .post(&self.endpoint)
                .header("idempotency-key", *key)
                .json(body),
            Start::Decision { url, body } => self.http.post(url.clone()).json(body),
        };
        Ok(request
            .bearer_auth(self.credentials.bearer()?)
            .header(ACCEPT, "text/event-stream")
            .send()
            .await?)
    }

    /// `GET /chats/{chat_id}/turns/{turn_id}/events` after event `last_id`.
    async fn resume(
        &self,
        chat_id: &str,
        turn_id: &str,
        last_id: u64,
    ) -> Result<reqwest::Response> {
        let url = route(&self.base, &["chats", chat_id, "turns", turn_id, "events"])?;
        Ok(self
            .http
            .get(url)
            .bearer_auth(self.credentials.bearer()?)
            .header(ACCEPT, "text/event-stream")
            .header("last-event-id", last_id.to_string())
            .send()
            .await?)
    }
}

/// `{base}/{segments…}`, each segment (ids from the server) percent-encoded.
fn route(base: &str, segments: &[&str]) -> Result<reqwest::Url> {
    let invalid = || Error::Setup(format!("--url {base} cannot take a path"));
    let mut url = reqwest::Url::parse(base).map_err(|_| invalid())?;
    url.path_segments_mut()
        .map_err(|()| invalid())?
        .pop_if_empty()
        .extend(segments);
    Ok(url)
}

/// Reads one response's events into the renderer until `done` or until the stream breaks.
/// Only new events are shown (a resent `POST` replays the turn from `init`). Errors other
/// than the stream's own (writing the output, remembering the chat) end the turn.
async fn read<W: Write, E: Write>(
    response: &mut reqwest::Response,
    progress: &mut Progress,
    session: &mut Session,
    renderer: &mut Renderer<W, E>,
) -> Result<Ended> {
    // A fresh parser per response: a half event before the break is dropped, and sent
    // again whole by the resume.
    let mut parser = SseParser::default();
    loop {
        let chunk = match response.chunk().await {
            Ok(Some(chunk)) => chunk,
            Ok(None) => return Ok(Ended::Broken(Error::Truncated)),
            Err(error) => return Ok(Ended::Broken(Error::Http(error))),
        };
        for event in parser.push(&chunk) {
            if !progress.take(&event) {
                continue;
            }
            if event.name == "init" {
                if let Some(chat_id) = event.data["chat_id"].as_str() {
                    session.remember(chat_id)?;
                    progress.chat_id = Some(chat_id.to_owned());
                }
                progress.turn_id = event.data["turn_id"].as_str().map(str::to_owned);
            }
            renderer.event(&event)?;
            if event.name == "done" {
                return Ok(Ended::Done);
            }
        }
    }
}

/// A transport failure (no answer, or the connection dropped) that a retry may get past;
/// not a request that could not even be built.
fn retryable(error: &reqwest::Error) -> bool {
    !(error.is_builder() || error.is_redirect() || error.is_status())
}

/// `error.message` of the router's JSON error envelope (with `error.details.status` when
/// the message does not say it: why a decision came too late), else the (shortened) raw
/// body; safe to print.
fn error_message(body: &str) -> String {
    let envelope: Option<Value> = serde_json::from_str(body).ok();
    if let Some(error) = envelope.as_ref().map(|v| &v["error"])
        && let Some(message) = error["message"].as_str()
    {
        return match error["details"]["status"].as_str() {
            Some(status) if !status.is_empty() && !message.contains(status) => {
                printable(&format!("{message} ({status})"))
            }
            _ => printable(message),
        };
    }
    match body.trim() {
        "" => "(empty body)".to_owned(),
        text => printable(text).chars().take(MAX_ERROR_BODY_CHARS).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_message_prefers_the_envelope() {
        let envelope = r#"{"error":{"code":"unauthorized","message":"token expired"}}"#;
        assert_eq!(error_message(envelope), "token expired");
        let late = r#"{"error":{"code":"conflict","message":"too late to approve","details":{"status":"expired"}}}"#;
        assert_eq!(error_message(late), "too late to approve (expired)");
        let said = r#"{"error":{"code":"conflict","message":"already denied","details":{"status":"denied"}}}"#;
        assert_eq!(error_message(said), "already denied");
        assert_eq!(error_message(" Bad Gateway \n"), "Bad Gateway");
        assert_eq!(error_message(""), "(empty body)");
    }

    #[test]
    fn the_resume_url_keeps_the_base_path_and_encodes_the_ids() {
        let events = |base, chat, turn| route(base, &["chats", chat, "turns", turn, "events"]);
        let url = events("http://127.0.0.1:9000/lambda-url/chat-router", "c 1", "t/2").unwrap();
        assert_eq!(
            url.as_str(),
            "http://127.0.0.1:9000/lambda-url/chat-router/chats/c%201/turns/t%2F2/events"
        );
        let url = events("https://chat.example", "c1", "t1").unwrap();
        assert_eq!(
            url.as_str(),
            "https://chat.example/chats/c1/turns/t1/events"
        );
    }
}
