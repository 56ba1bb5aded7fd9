//! Amazon Bedrock through the Converse API (`ConverseStream`), with tools.
//!
//! The request is mapped in [`request`], the streamed answer reassembled in [`assemble`].
//! Attempts follow the OpenAI client's rules: throttling, 5xx and connection failures are
//! retried with backoff inside the deadline until the stream opens; once it streams,
//! nothing is retried (text may already be on its way to the user), and an error event in
//! the stream (`modelStreamErrorException`, `throttlingException`, ...) fails the call.
//!
//! The SDK's own retries are off (ours know the turn's deadline), and so is its
//! stalled-stream protection: a model may think longer before its first token than that
//! protection's grace period, and the deadline bounds every wait anyway.
//!
//! Bedrock's error messages are upstream text: only their codes (`ThrottlingException`)
//! and HTTP statuses are logged or put into errors.

mod assemble;
mod request;

use std::time::{Duration, Instant};

use async_trait::async_trait;
use aws_sdk_bedrockruntime::Client;
use aws_sdk_bedrockruntime::config::StalledStreamProtectionConfig;
use aws_sdk_bedrockruntime::config::http::HttpResponse;
use aws_sdk_bedrockruntime::config::retry::RetryConfig;
use aws_sdk_bedrockruntime::config::timeout::TimeoutConfig;
use aws_sdk_bedrockruntime::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_bedrockruntime::operation::converse_stream::ConverseStreamError;
use aws_sdk_bedrockruntime::primitives::event_stream::EventReceiver;
use aws_sdk_bedrockruntime::types::ConverseStreamOutput;
use aws_sdk_bedrockruntime::types::error::ConverseStreamOutputError;

pub use assemble::ConverseAssembler;
pub use request::{ConverseParts, converse_parts, document, json};

use agent_core::llm::{Completion, CompletionRequest, LlmProvider, TokenSink};
use domain::{Error, Result};
use lambda_kit::upstream::RetryPolicy;

pub(crate) const SERVICE: &str = "llm";

/// Below this, another attempt could not get an answer back in time.
const MIN_ATTEMPT: Duration = Duration::from_millis(50);
/// The SDK's default for opening a connection, kept when the other timeouts are ours.
const CONNECT_TIMEOUT: Duration = Duration::from_millis(3100);

/// The Bedrock Runtime client of a container: the SDK configuration (region, credentials,
/// `AWS_ENDPOINT_URL_BEDROCK_RUNTIME` for a local fake) without the SDK's retries and
/// stalled-stream protection (see the module notes).
pub fn sdk_client(sdk: &aws_config::SdkConfig) -> Client {
    Client::from_conf(sdk_config(sdk).build())
}

/// As [`sdk_client`], reaching the Bedrock Runtime at `endpoint` (a local fake in tests).
pub fn sdk_client_at(sdk: &aws_config::SdkConfig, endpoint: &str) -> Client {
    Client::from_conf(sdk_config(sdk).endpoint_url(endpoint).build())
}

/// The configuration behind [`sdk_client`], for callers that add to it (tests set the
/// endpoint of their fake).
pub fn sdk_config(sdk: &aws_config::SdkConfig) -> aws_sdk_bedrockruntime::config::Builder {
    aws_sdk_bedrockruntime::config::Builder::from(sdk)
        .retry_config(RetryConfig::disabled())
        .stalled_stream_protection(StalledStreamProtectionConfig::disabled())
        .timeout_config(
            TimeoutConfig::builder()
                .connect_timeout(CONNECT_TIMEOUT)
                .build(),
        )
}

/// The Bedrock [`LlmProvider`]. Cheap to clone.
#[derive(Debug, Clone)]
pub struct BedrockClient {
    client: Client,
    /// Retries before the stream opens; `attempt_timeout` bounds the wait for it.
    retry: RetryPolicy,
    /// Whether requests end their system prompt with a cache point (`BEDROCK_PROMPT_CACHE`).
    prompt_cache: bool,
}

/// How one attempt to open the stream failed.
enum Failure {
    Timeout,
    Retryable(String),
    Final(Error),
}

impl BedrockClient {
    /// A client over the SDK's `client`, retrying as `retry` says before the first byte.
    pub fn new(client: Client, retry: RetryPolicy) -> Self {
        Self {
            client,
            retry,
            prompt_cache: false,
        }
    }

    /// Caches the tool definitions and the system prompt with a cache point, for models
    /// that support prompt caching ([`ConverseParts::cache_system_prompt`]).
    pub fn with_prompt_cache(mut self, on: bool) -> Self {
        self.prompt_cache = on;
        self
    }

    /// Opens the stream, retrying what may succeed on another attempt.
    async fn open(
        &self,
        model: &str,
        parts: &ConverseParts,
        deadline: Instant,
    ) -> Result<EventReceiver<ConverseStreamOutput, ConverseStreamOutputError>> {
        let mut last = Failure::Timeout;
        let attempts = self.retry.max_attempts.max(1);
        for attempt in 1..=attempts {
            let left = deadline.saturating_duration_since(Instant::now());
            if left < MIN_ATTEMPT {
                break;
            }
            let call = self
                .client
                .converse_stream()
                .model_id(model)
                .set_system((!parts.system.is_empty()).then(|| parts.system.clone()))
                .set_messages(Some(parts.messages.clone()))
                .set_tool_config(parts.tool_config.clone())
                .inference_config(parts.inference.clone())
                .send();
            last = match tokio::time::timeout(left.min(self.retry.attempt_timeout), call).await {
                Ok(Ok(output)) => return Ok(output.stream),
                Err(_) => Failure::Timeout,
                Ok(Err(e)) => classify(&e),
            };
            match &last {
                Failure::Final(_) => break,
                Failure::Timeout => tracing::warn!(attempt, "bedrock attempt timed out"),
                Failure::Retryable(why) => {
                    tracing::warn!(attempt, error = %why, "bedrock attempt failed");
                }
            }
            if attempt == attempts {
                break;
            }
            let pause = lambda_kit::upstream::backoff(&self.retry, attempt);
            if Instant::now() + pause + MIN_ATTEMPT >= deadline {
                break;
            }
            tokio::time::sleep(pause).await;
        }
        Err(match last {
            Failure::Timeout => Error::UpstreamTimeout { service: SERVICE },
            Failure::Retryable(message) => Error::UpstreamUnavailable {
                service: SERVICE,
                message,
            },
            Failure::Final(e) => e,
        })
    }
}

#[async_trait]
impl LlmProvider for BedrockClient {
    async fn complete(
        &self,
        request: &CompletionRequest,
        deadline: Instant,
        tokens: &mut dyn TokenSink,
    ) -> Result<Completion> {
        let started = Instant::now();
        let mut parts = converse_parts(request)?;
        if self.prompt_cache {
            parts.cache_system_prompt()?;
        }
        let mut stream = self
            .open(&request.model, &parts, deadline)
            .await
            .inspect_err(|e| {
                tracing::warn!(model = %request.model, error = %e, "llm request failed");
            })?;
        let mut assembler = ConverseAssembler::new();
        let until = tokio::time::Instant::from_std(deadline);
        loop {
            let event = match tokio::time::timeout_at(until, stream.recv()).await {
                Err(_) => Err(Error::UpstreamTimeout { service: SERVICE }),
                Ok(Err(e)) => Err(stream_error(&e)),
                Ok(Ok(None)) => break,
                Ok(Ok(Some(event))) => Ok(event),
            }
            .inspect_err(|e| {
                tracing::warn!(model = %request.model, error = %e, "llm answer failed");
            })?;
            if let Some(delta) = assembler.push(event)? {
                tokens.token(&delta);
            }
        }
        let completion = assembler.finish(&request.model).inspect_err(|e| {
            tracing::warn!(model = %request.model, error = %e, "llm answer failed");
        })?;
        tracing::info!(
            model = %completion.model,
            provider = "bedrock",
            duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            prompt_tokens = completion.usage.map(|u| u.prompt_tokens),
            completion_tokens = completion.usage.map(|u| u.completion_tokens),
            tool_calls = completion.tool_calls.len(),
            finish_reason = ?completion.finish_reason,
            "llm completion"
        );
        Ok(completion)
    }
}

/// Whether a failed attempt to open the stream is worth another: throttling, 5xx and
/// transport failures are; a refused request or missing permission is not.
fn classify(e: &SdkError<ConverseStreamError, HttpResponse>) -> Failure {
    match e {
        SdkError::ServiceError(service) => {
            let status = service.raw().status().as_u16();
            let err = service.err();
            let code = err.code().unwrap_or("unknown error");
            let what = format!("{code} (HTTP {status})");
            if err.is_throttling_exception()
                || err.is_service_unavailable_exception()
                || err.is_internal_server_exception()
                || err.is_model_not_ready_exception()
                || err.is_model_timeout_exception()
                || status == 429
                || status >= 500
            {
                Failure::Retryable(what)
            } else if err.is_validation_exception() {
                Failure::Final(Error::UpstreamRejected {
                    service: SERVICE,
                    status,
                    message: code.to_owned(),
                })
            } else {
                // Access denied (the role may not invoke this model), an unknown model, a
                // quota: ours to fix, not the caller's.
                Failure::Final(Error::Upstream {
                    service: SERVICE,
                    message: what,
                })
            }
        }
        SdkError::TimeoutError(_) => Failure::Timeout,
        SdkError::DispatchFailure(_) | SdkError::ResponseError(_) => {
            Failure::Retryable("connection failed".into())
        }
        _ => Failure::Final(Error::Upstream {
            service: SERVICE,
            message: "the request could not be sent".into(),
        }),
    }
}

/// An error event or a broken connection after the stream opened: never retried.
fn stream_error<R>(e: &SdkError<ConverseStreamOutputError, R>) -> Error {
    match e {
        SdkError::ServiceError(service) => Error::Upstream {
            service: SERVICE,
            message: format!("the stream failed: {}", stream_error_code(service.err())),
        },
        SdkError::TimeoutError(_) => Error::UpstreamTimeout { service: SERVICE },
        _ => Error::Upstream {
            service: SERVICE,
            message: "the stream broke off".into(),
        },
    }
}

/// The exception's type: its code when the payload names one, else its variant's name.
fn stream_error_code(err: &ConverseStreamOutputError) -> &str {
    if let Some(code) = err.code() {
        return code;
    }
    match err {
        ConverseStreamOutputError::ModelStreamErrorException(_) => "modelStreamErrorException",
        ConverseStreamOutputError::ThrottlingException(_) => "throttlingException",
        ConverseStreamOutputError::ServiceUnavailableException(_) => "serviceUnavailableException",
        ConverseStreamOutputError::InternalServerException(_) => "internalServerException",
        ConverseStreamOutputError::ValidationException(_) => "validationException",
        _ => "unknown error",
    }
}
