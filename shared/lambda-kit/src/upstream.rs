//! Calls to upstream HTTP APIs with retries inside the invocation's time budget.
//!
//! 429, 5xx, connection errors and timeouts are retried with full-jitter exponential backoff
//! (honouring `Retry-After`) for as long as the deadline allows. What finally fails becomes
//! one of the crate's upstream errors: `UpstreamTimeout` (504), `Upstream` (502) or, for a
//! request the upstream rejected as invalid, `UpstreamRejected` (4xx) with a short message.
//! Upstream bodies are never passed on verbatim.

use std::time::{Duration, Instant};

use reqwest::{RequestBuilder, Response, StatusCode};
use serde::de::DeserializeOwned;
use serde_json::Value;
use tracing::Instrument;

use domain::{Error, Result};

/// How often and how patiently an upstream call is retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included.
    pub max_attempts: u32,
    /// The longest pause before the second attempt; it doubles with each further attempt.
    pub base_delay: Duration,
    /// The cap on a backoff pause (a `Retry-After` is waited as the upstream asks).
    pub max_delay: Duration,
    /// Longest wait for one attempt (the deadline may cut it shorter).
    pub attempt_timeout: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 4,
            base_delay: Duration::from_millis(200),
            max_delay: Duration::from_secs(2),
            attempt_timeout: Duration::from_secs(10),
        }
    }
}

/// Below this, another attempt could not get an answer back in time.
const MIN_ATTEMPT: Duration = Duration::from_millis(50);

/// The largest upstream body read into memory. Seats.aero's largest searches are a few MB;
/// anything far beyond is refused before it is read in full.
pub const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;

/// One reqwest client per container: connection pools and TLS set-up are reused.
/// Redirects are not followed: requests carry credentials (`Partner-Authorization`, bearer
/// tokens, SigV4) that must never reach another host, and no upstream of ours redirects.
/// TLS trusts the compiled-in roots ([`crate::tls`]), not the system store.
pub fn http_client() -> Result<reqwest::Client> {
    reqwest::Client::builder()
        .tls_backend_preconfigured(crate::tls::client_config()?)
        .user_agent(concat!("tool-calling-lambda/", env!("CARGO_PKG_VERSION")))
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(Duration::from_secs(3))
        .pool_idle_timeout(Duration::from_secs(60))
        .build()
        .map_err(|e| Error::Config(format!("HTTP client: {e}")))
}

enum Failure {
    Timeout,
    Retryable(String),
}

fn is_retryable(status: StatusCode) -> bool {
    status == StatusCode::TOO_MANY_REQUESTS
        || status == StatusCode::REQUEST_TIMEOUT
        || status.is_server_error()
}

/// The wait an upstream asks for: `Retry-After` (seconds), else `ratelimit-reset` (Duffel's
/// and the IETF draft's: seconds to wait, a Unix time, or an HTTP date).
fn retry_after(response: &Response) -> Option<Duration> {
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(secs) = header("retry-after").and_then(|v| v.parse::<u64>().ok()) {
        return Some(Duration::from_secs(secs));
    }
    reset_wait(header("ratelimit-reset")?, std::time::SystemTime::now())
}

/// Seconds below this in `ratelimit-reset` are a wait; above, a Unix time.
const UNIX_TIME_FROM: u64 = 1_000_000_000;

/// How long until a `ratelimit-reset` value, seen at `now`.
fn reset_wait(value: &str, now: std::time::SystemTime) -> Option<Duration> {
    let at = match value.parse::<u64>() {
        Ok(secs) if secs < UNIX_TIME_FROM => return Some(Duration::from_secs(secs)),
        Ok(secs) => std::time::UNIX_EPOCH + Duration::from_secs(secs),
        Err(_) => httpdate::parse_http_date(value).ok()?,
    };
    Some(at.duration_since(now).unwrap_or_default())
}

/// The pause before attempt `attempt + 1`: exponential from `base_delay`, capped at
/// `max_delay`, with full jitter. Shared with clients that retry on their own (Bedrock).
pub fn backoff(policy: &RetryPolicy, attempt: u32) -> Duration {
    let exp = policy
        .base_delay
        .saturating_mul(2u32.saturating_pow(attempt.saturating_sub(1)));
    let cap = exp.min(policy.max_delay);
    // Full jitter: a random point in [0, cap], so concurrent clients spread out.
    cap.mul_f64(fastrand::f64())
}

/// Sends the request built by `build` (called once per attempt) and returns the first
/// response that is not retryable: a success or a client error for [`read_json`] to judge.
/// `attempt_timeout` bounds each whole attempt, body included.
pub async fn send(
    service: &'static str,
    deadline: Instant,
    policy: &RetryPolicy,
    build: impl Fn() -> RequestBuilder,
) -> Result<Response> {
    attempts(
        service,
        deadline,
        policy,
        build,
        Budget::WholeAttempt,
        false,
    )
    .await
}

/// Like [`send`], for a call to one of this project's own functions: each attempt carries
/// the trace context (`traceparent`), so the function's spans join the caller's trace.
/// Never for third parties, which have no business with our trace ids.
pub async fn send_traced(
    service: &'static str,
    deadline: Instant,
    policy: &RetryPolicy,
    build: impl Fn() -> RequestBuilder,
) -> Result<Response> {
    attempts(service, deadline, policy, build, Budget::WholeAttempt, true).await
}

/// Like [`send`], for streamed answers: `attempt_timeout` bounds only the wait for the
/// response headers; reading the body may take until `deadline` (the caller bounds it).
pub async fn send_streaming(
    service: &'static str,
    deadline: Instant,
    policy: &RetryPolicy,
    build: impl Fn() -> RequestBuilder,
) -> Result<Response> {
    attempts(
        service,
        deadline,
        policy,
        build,
        Budget::UntilHeaders,
        false,
    )
    .await
}

#[derive(Clone, Copy)]
enum Budget {
    WholeAttempt,
    UntilHeaders,
}

/// The attempts of one call, in one client span (its last status, how many attempts).
async fn attempts(
    service: &'static str,
    deadline: Instant,
    policy: &RetryPolicy,
    build: impl Fn() -> RequestBuilder,
    budget: Budget,
    propagate: bool,
) -> Result<Response> {
    let span = crate::telemetry::client_span(service, || {
        build().build_split().1.ok().map(|r| {
            (
                r.method().to_string(),
                r.url().host_str().unwrap_or_default().to_owned(),
            )
        })
    });
    let context = if propagate {
        crate::telemetry::headers_of(&span)
    } else {
        Vec::new()
    };
    let build = || {
        context.iter().fold(build(), |request, (name, value)| {
            request.header(name, value)
        })
    };
    let result = attempts_in(service, deadline, policy, build, budget, &span)
        .instrument(span.clone())
        .await;
    match &result {
        Ok(response) => crate::telemetry::record_status(&span, response.status().as_u16()),
        Err(e) => crate::telemetry::record_error(&span, e.kind()),
    }
    result
}

async fn attempts_in(
    service: &'static str,
    deadline: Instant,
    policy: &RetryPolicy,
    build: impl Fn() -> RequestBuilder,
    budget: Budget,
    span: &tracing::Span,
) -> Result<Response> {
    let mut last = Failure::Timeout;
    for attempt in 1..=policy.max_attempts.max(1) {
        crate::telemetry::record_attempt(span, attempt);
        let left = deadline.saturating_duration_since(Instant::now());
        if left < MIN_ATTEMPT {
            break;
        }
        let mut pause = None;
        let limit = left.min(policy.attempt_timeout);
        // `None`: our own wait for the headers ran out.
        let outcome = match budget {
            Budget::WholeAttempt => Some(build().timeout(limit).send().await),
            Budget::UntilHeaders => tokio::time::timeout(limit, build().timeout(left).send())
                .await
                .ok(),
        };
        match outcome {
            Some(Ok(response)) if is_retryable(response.status()) => {
                tracing::warn!(
                    service,
                    attempt,
                    status = response.status().as_u16(),
                    "upstream answered with a retryable status"
                );
                pause = retry_after(&response);
                last = Failure::Retryable(format!("HTTP {}", response.status().as_u16()));
            }
            Some(Ok(response)) => return Ok(response),
            None => {
                tracing::warn!(service, attempt, "upstream attempt timed out");
                last = Failure::Timeout;
            }
            Some(Err(e)) if e.is_timeout() => {
                tracing::warn!(service, attempt, "upstream attempt timed out");
                last = Failure::Timeout;
            }
            Some(Err(e)) => {
                tracing::warn!(service, attempt, error = %e, "upstream request failed");
                last = Failure::Retryable(if e.is_connect() {
                    "connection failed".into()
                } else {
                    e.to_string()
                });
            }
        }
        if attempt == policy.max_attempts {
            break;
        }
        let pause = pause.unwrap_or_else(|| backoff(policy, attempt));
        if Instant::now() + pause + MIN_ATTEMPT >= deadline {
            break;
        }
        tokio::time::sleep(pause).await;
    }
    Err(match last {
        Failure::Timeout => Error::UpstreamTimeout { service },
        Failure::Retryable(message) => Error::UpstreamUnavailable { service, message },
    })
}

/// Reads a response from [`send`]: a 2xx body parsed as `T`; 401/403 (our credentials) as
/// `Upstream`; other 4xx as `UpstreamRejected` with a short message taken from the usual
/// error fields of the body.
pub async fn read_json<T: DeserializeOwned>(
    service: &'static str,
    response: Response,
) -> Result<T> {
    let bytes = read_success(service, response).await?;
    serde_json::from_slice(&bytes).map_err(|e| Error::Upstream {
        service,
        message: format!("unexpected response body: {e}"),
    })
}

/// Like [`read_json`], but a 2xx body is returned as it is, for a caller that parses it
/// into types borrowing from it; it maps the other statuses as [`read_json`] does.
pub async fn read_success(service: &'static str, response: Response) -> Result<Vec<u8>> {
    let status = response.status();
    let bytes = read_body(service, response).await?;
    if status.is_success() {
        return Ok(bytes);
    }
    if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
        return Err(Error::Upstream {
            service,
            message: format!("credentials rejected (HTTP {})", status.as_u16()),
        });
    }
    Err(Error::UpstreamRejected {
        service,
        status: status.as_u16(),
        message: error_summary(&bytes).unwrap_or_else(|| format!("HTTP {}", status.as_u16())),
    })
}

/// The body, if it is at most [`MAX_BODY_BYTES`]: a larger declared length is refused
/// before reading, a larger body as soon as it passes the cap.
pub async fn read_body(service: &'static str, response: Response) -> Result<Vec<u8>> {
    read_capped(service, response, MAX_BODY_BYTES).await
}

async fn read_capped(service: &'static str, mut response: Response, cap: usize) -> Result<Vec<u8>> {
    let too_large = || Error::Upstream {
        service,
        message: format!("response body over the {} MB limit", cap / (1024 * 1024)),
    };
    let declared = response.content_length();
    if declared.is_some_and(|length| length > cap as u64) {
        return Err(too_large());
    }
    // Room for the declared length (at most `cap`), so a large body is not copied again
    // each time the buffer grows.
    let mut body = Vec::with_capacity(declared.map_or(0, |length| length as usize));
    while let Some(chunk) = response.chunk().await.map_err(|e| Error::Upstream {
        service,
        message: format!("reading the body failed: {e}"),
    })? {
        if body.len() + chunk.len() > cap {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// A short, printable summary from common error shapes: `errors[0]`'s `detail` (Amadeus),
/// `message` (Duffel) or `title`,
/// OpenAI's `error.message` (Gemini's compatibility layer wraps it in an array), or a
/// top-level `message` / `error` / `error_description`.
fn error_summary(body: &[u8]) -> Option<String> {
    let parsed: Value = serde_json::from_slice(body).ok()?;
    let value = match &parsed {
        Value::Array(items) => items.first()?,
        other => other,
    };
    let first_error = value.get("errors").and_then(|e| e.get(0));
    let text = first_error
        .and_then(|e| {
            e.get("detail")
                .or_else(|| e.get("message"))
                .or_else(|| e.get("title"))
        })
        .or_else(|| value.get("error").and_then(|e| e.get("message")))
        .or_else(|| value.get("error_description"))
        .or_else(|| value.get("message"))
        .or_else(|| value.get("error").filter(|e| e.is_string()))
        .and_then(Value::as_str)?;
    let clean: String = text.chars().filter(|c| !c.is_control()).take(200).collect();
    (!clean.trim().is_empty()).then_some(clean)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries() {
        let amadeus = br#"{"errors":[{"status":400,"code":477,"title":"INVALID FORMAT","detail":"departureDate must be in the future"}]}"#;
        assert_eq!(
            error_summary(amadeus).as_deref(),
            Some("departureDate must be in the future")
        );
        assert_eq!(
            error_summary(br#"{"message":"bad cabin"}"#).as_deref(),
            Some("bad cabin")
        );
        assert_eq!(error_summary(b"<html>oops</html>"), None);
        let openai = br#"{"error":{"message":"Invalid value for 'tool_choice'.","type":"invalid_request_error","param":"tool_choice","code":null}}"#;
        assert_eq!(
            error_summary(openai).as_deref(),
            Some("Invalid value for 'tool_choice'.")
        );
        let gemini = br#"[{"error":{"code":400,"message":"API key not valid.","status":"INVALID_ARGUMENT"}}]"#;
        assert_eq!(error_summary(gemini).as_deref(), Some("API key not valid."));
        assert_eq!(
            error_summary(br#"{"error":"model not found"}"#).as_deref(),
            Some("model not found")
        );
    }

    #[test]
    fn a_rate_limit_reset_is_a_wait_a_unix_time_or_an_http_date() {
        let now = std::time::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        assert_eq!(reset_wait("7", now), Some(Duration::from_secs(7)));
        assert_eq!(reset_wait("1800000030", now), Some(Duration::from_secs(30)));
        let date = httpdate::fmt_http_date(now + Duration::from_secs(12));
        assert_eq!(reset_wait(&date, now), Some(Duration::from_secs(12)));
        assert_eq!(reset_wait("1799999990", now), Some(Duration::ZERO));
        assert_eq!(reset_wait("soon", now), None);
    }

    #[test]
    fn duffel_errors_give_their_message() {
        let duffel = br#"{"errors":[{"code":"invalid_field","title":"Invalid field","message":"departure_date must be after today","type":"validation_error"}]}"#;
        assert_eq!(
            error_summary(duffel).as_deref(),
            Some("departure_date must be after today")
        );
    }

    #[test]
    fn backoff_stays_under_the_cap() {
        let policy = RetryPolicy::default();
        for attempt in 1..10 {
            assert!(backoff(&policy, attempt) <= policy.max_delay);
        }
    }
}
