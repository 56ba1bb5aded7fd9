//! One turn: `POST {url}/chat`, then the SSE stream read chunk by chunk into the renderer.

use std::io::Write;
use std::time::Duration;

use reqwest::header::ACCEPT;
use serde_json::{Value, json};

use crate::render::Renderer;
use crate::sse::SseParser;
use crate::state::Session;
use crate::token::Credentials;
use crate::{Error, Result};

/// Longest piece of a non-JSON error body that is shown.
const MAX_ERROR_BODY_CHARS: usize = 500;

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
    endpoint: String,
    credentials: Credentials,
}

impl Client {
    /// A client for the router at `base_url` (a trailing slash is fine).
    pub fn new(base_url: &str, credentials: Credentials) -> Result<Self> {
        // No overall timeout: a turn streams for as long as its tools and the LLM take.
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .build()?;
        Ok(Self {
            http,
            endpoint: format!("{}/chat", base_url.trim_end_matches('/')),
            credentials,
        })
    }

    /// Sends one message in `session`'s chat and renders the answer as it streams. The chat
    /// id from `init` is remembered at once, so even an interrupted turn can be continued.
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
        let mut response = self
            .http
            .post(&self.endpoint)
            .bearer_auth(self.credentials.bearer()?)
            .header(ACCEPT, "text/event-stream")
            .json(&body)
            .send()
            .await?;
        let status = response.status();
        if !status.is_success() {
            let text = response.text().await.unwrap_or_default();
            return Err(Error::Refused {
                status: status.as_u16(),
                message: error_message(&text),
            });
        }

        renderer.begin_turn();
        let mut parser = SseParser::default();
        while let Some(chunk) = response.chunk().await? {
            for event in parser.push(&chunk) {
                if event.name == "init"
                    && let Some(chat_id) = event.data["chat_id"].as_str()
                {
                    session.remember(chat_id)?;
                }
                renderer.event(&event)?;
                if event.name == "done" {
                    return if renderer.failed() {
                        Err(Error::TurnFailed)
                    } else {
                        Ok(())
                    };
                }
            }
        }
        renderer.finish()?;
        Err(if renderer.failed() {
            Error::TurnFailed
        } else {
            Error::Truncated
        })
    }
}

/// `error.message` of the router's JSON error envelope, else the (shortened) raw body.
fn error_message(body: &str) -> String {
    let envelope: Option<Value> = serde_json::from_str(body).ok();
    if let Some(message) = envelope
        .as_ref()
        .and_then(|v| v["error"]["message"].as_str())
    {
        return message.to_owned();
    }
    match body.trim() {
        "" => "(empty body)".to_owned(),
        text => text.chars().take(MAX_ERROR_BODY_CHARS).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_message_prefers_the_envelope() {
        let envelope = r#"{"error":{"code":"unauthorized","message":"token expired"}}"#;
        assert_eq!(error_message(envelope), "token expired");
        assert_eq!(error_message(" Bad Gateway \n"), "Bad Gateway");
        assert_eq!(error_message(""), "(empty body)");
    }
}
