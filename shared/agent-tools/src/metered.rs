//! Every billed token is counted: an LLM call's usage is recorded however the call ends.
//! The provider's figures when it sent them; otherwise (a provider that reports none, a
//! stream cut off or failed after text was produced) an estimate, marked `estimated`, so a
//! daily budget never under-counts what was billed. With a daily budget, each call first
//! holds its most expensive likely cost against the user's day (a conditional write) and
//! settles it to what it cost afterwards, so concurrent turns cannot spend past the budget
//! by more than one call's underestimate.

use std::time::Instant;

use shared::domain::json_len::json_len;
use shared::metrics::{Dimension, Metric, Metrics, Point};
use shared::usage::{Hold, Reservation, TokenUsage, UsageRecord, UsageStore};
use shared::{Error, Result};

use agent_core::fallback::{ModelRef, falls_back};
use agent_core::genai;
use agent_core::llm::{Completion, CompletionRequest, FinishReason, LlmProvider, TokenSink};
use agent_core::stop::StopSignal;
use tracing::Instrument;

/// Whose call it is and what for, as the usage record says.
#[derive(Debug, Clone, Copy)]
pub struct UsageScope<'a> {
    /// Whose call it is.
    pub user_id: &'a str,
    /// The chat, for a call made in one.
    pub chat_id: Option<&'a str>,
    /// e.g. `chat`, `ask_gpt`.
    pub operation: &'a str,
}

/// What runs an LLM call and what records it: the provider, the usage store, the metrics.
#[derive(Clone, Copy)]
pub struct Meter<'a> {
    /// Who answers.
    pub llm: &'a dyn LlmProvider,
    /// Where usage and the daily budget are kept.
    pub usage: &'a dyn UsageStore,
    /// Where the call's metrics go.
    pub metrics: &'a Metrics,
}

/// Characters per token in the estimate (the usual rule of thumb for English text).
const CHARS_PER_TOKEN: usize = 4;

/// About how many tokens `chars` characters are.
fn tokens_for(chars: usize) -> u64 {
    u64::try_from(chars.div_ceil(CHARS_PER_TOKEN)).unwrap_or(u64::MAX)
}

/// An estimate for `request` with `completion_chars` characters produced.
pub fn estimate(request: &CompletionRequest, completion_chars: usize) -> TokenUsage {
    let prompt_chars: usize = request
        .messages
        .iter()
        .map(|m| {
            m.content.len()
                + m.tool_calls
                    .iter()
                    .map(|c| c.arguments.len())
                    .sum::<usize>()
        })
        .sum::<usize>()
        + request
            .tools
            .iter()
            .map(|t| t.description.len() + json_len(&t.parameters))
            .sum::<usize>();
    let (prompt_tokens, completion_tokens) =
        (tokens_for(prompt_chars), tokens_for(completion_chars));
    TokenUsage {
        prompt_tokens,
        completion_tokens,
        total_tokens: prompt_tokens.saturating_add(completion_tokens),
        cached_tokens: 0,
        estimated: true,
    }
}

/// What a completion produced, in characters: its text and its tool calls' arguments.
fn produced(completion: &Completion) -> usize {
    completion.content.len()
        + completion
            .tool_calls
            .iter()
            .map(|c| c.name.len() + c.arguments.len())
            .sum::<usize>()
}

/// Runs `request` on `llm` and records its usage in `store` for `scope`. A failure to record
/// is logged, never the caller's failure: losing a usage record must not lose an answer.
/// When `stop` fires first, the stream is abandoned and the text so far comes back as a
/// completion that finished `canceled`, its usage estimated.
///
/// When the model stays unavailable before its first token ([`falls_back`]), the call goes
/// to the request's `fallback` models in turn, models resting after repeated failures last
/// ([`ModelHealth`](agent_core::fallback::ModelHealth)). Each attempt is held, metered and priced on its own; a failure after
/// text was streamed, or of another kind, ends the call as it is.
pub async fn complete_metered(
    meter: Meter<'_>,
    scope: UsageScope<'_>,
    request: &CompletionRequest,
    deadline: Instant,
    tokens: &mut dyn TokenSink,
    stop: Option<&StopSignal>,
) -> Result<Completion> {
    let Some(primary) = request.provider.filter(|_| !request.fallback.is_empty()) else {
        return attempt(meter, scope, request, deadline, tokens, stop, 0)
            .await
            .0;
    };
    let mut candidates = Vec::with_capacity(request.fallback.len() + 1);
    candidates.push(ModelRef {
        provider: primary,
        model: request.model.clone(),
    });
    candidates.extend(request.fallback.iter().cloned());
    let health = meter.llm.health();
    let order = match health {
        Some(health) => health.order(&candidates, Instant::now()),
        None => candidates.iter().collect(),
    };
    let last = order.len() - 1;
    let mut failed_over: Option<&ModelRef> = None;
    for (i, model) in order.into_iter().enumerate() {
        let attempt_request = request.to(model);
        if let Some(from) = failed_over {
            tracing::warn!(operation = scope.operation, from = %from, to = %model, "llm call falls back");
        }
        let (result, streamed) =
            attempt(meter, scope, &attempt_request, deadline, tokens, stop, i).await;
        match &result {
            Ok(_) => {
                if let Some(health) = health {
                    health.answered(model);
                }
                return result;
            }
            Err(e) if !streamed && falls_back(e) => {
                if let Some(health) = health {
                    health.failed(model, Instant::now());
                }
                if i == last || Instant::now() + MIN_FALLBACK_TIME >= deadline {
                    return result;
                }
                failed_over = Some(model);
            }
            Err(_) => return result,
        }
    }
    // `order` is never empty: the primary is in it.
    Err(Error::Config("no model to call".into()))
}

/// Below this much time before the deadline, a fallback model is not tried: it could not
/// answer in time.
const MIN_FALLBACK_TIME: std::time::Duration = std::time::Duration::from_millis(500);

/// One attempt of [`complete_metered`] on the request's own model (the `index`-th model
/// tried), in its `chat` span; also whether any text of it was streamed (after which no
/// fallback may run).
async fn attempt(
    meter: Meter<'_>,
    scope: UsageScope<'_>,
    request: &CompletionRequest,
    deadline: Instant,
    tokens: &mut dyn TokenSink,
    stop: Option<&StopSignal>,
    index: usize,
) -> (Result<Completion>, bool) {
    let span = genai::chat(request.provider, &request.model, scope.operation, index);
    genai::record_input(&span, &request.messages);
    let (result, streamed) = metered_call(meter, scope, request, deadline, tokens, stop, &span)
        .instrument(span.clone())
        .await;
    if let Err(e) = &result {
        genai::record_error(&span, e.kind());
    }
    (result, streamed)
}

/// The call of [`attempt`], held against the budget and metered; what it produced goes on
/// `span`.
async fn metered_call(
    meter: Meter<'_>,
    scope: UsageScope<'_>,
    request: &CompletionRequest,
    deadline: Instant,
    tokens: &mut dyn TokenSink,
    stop: Option<&StopSignal>,
    span: &tracing::Span,
) -> (Result<Completion>, bool) {
    let Meter {
        llm,
        usage: store,
        metrics,
    } = meter;
    let reservation = match reserve(store, scope, request).await {
        Ok(reservation) => reservation,
        Err(e) => return (Err(e), false),
    };
    let started = Instant::now();
    let Streamed {
        result,
        first_token,
        streamed,
    } = stream(llm, request, deadline, tokens, stop, started).await;
    let any_streamed = first_token.is_some();
    let (model, usage) = match &result {
        Ok(completion) => (
            completion.model.as_str(),
            completion
                .usage
                .unwrap_or_else(|| estimate(request, produced(completion))),
        ),
        // Text was produced, so tokens were billed; the provider's figures never came.
        Err(_) if streamed > 0 => (request.model.as_str(), estimate(request, streamed)),
        Err(e) => {
            settle(store, reservation.as_ref(), 0.0).await;
            observe(
                metrics,
                scope,
                &request.model,
                started,
                first_token,
                None,
                Some(e),
            );
            return (result, any_streamed);
        }
    };
    let (recorded, cost) = record_usage(store, scope, model, usage).await;
    settle(store, reservation.as_ref(), cost.unwrap_or(0.0)).await;
    if let Ok(completion) = &result {
        genai::record_chat(
            span,
            completion,
            &usage,
            cost,
            first_token.map(|t| t.as_secs_f64() * 1000.0),
        );
    }
    observe(
        metrics,
        scope,
        model,
        started,
        first_token,
        Some((usage, recorded)),
        result.as_ref().err(),
    );
    (result, any_streamed)
}

/// What one model call gave: its result, when its first token came (since the call began)
/// and how many bytes of text it streamed.
struct Streamed {
    result: Result<Completion>,
    first_token: Option<std::time::Duration>,
    streamed: usize,
}

/// Calls the model, passing its tokens on to `tokens`; a `stop` ends the call with the text
/// streamed so far.
async fn stream(
    llm: &dyn LlmProvider,
    request: &CompletionRequest,
    deadline: Instant,
    tokens: &mut dyn TokenSink,
    stop: Option<&StopSignal>,
    started: Instant,
) -> Streamed {
    let mut first_token = None;
    let mut streamed = String::new();
    let mut counting = |text: &str| {
        first_token.get_or_insert_with(|| started.elapsed());
        streamed.push_str(text);
        tokens.token(text);
    };
    let result = match stop {
        Some(stop) => tokio::select! {
            result = llm.complete(request, deadline, &mut counting) => result,
            // The stream is dropped here: the provider stops generating, and the text so
            // far, billed, is what the call produced.
            () = stop.stopped() => Ok(Completion {
                model: request.model.clone(),
                content: std::mem::take(&mut streamed),
                tool_calls: Vec::new(),
                finish_reason: Some(FinishReason::Other("canceled".into())),
                usage: None,
            }),
        },
        None => llm.complete(request, deadline, &mut counting).await,
    };
    Streamed {
        result,
        first_token,
        streamed: streamed.len(),
    }
}

/// Records `usage` of `model` in `scope`: the record when it was stored, and the call's
/// cost (priced without a record when storing it failed).
async fn record_usage(
    store: &dyn UsageStore,
    scope: UsageScope<'_>,
    model: &str,
    usage: TokenUsage,
) -> (Option<UsageRecord>, Option<f64>) {
    let recorded = store
        .record(scope.user_id, scope.chat_id, model, scope.operation, usage)
        .await
        .inspect_err(|e| {
            tracing::error!(operation = scope.operation, error = %e, "recording LLM usage failed");
        })
        .ok();
    let cost = recorded.as_ref().map_or_else(
        || {
            store
                .priced(scope.user_id, scope.chat_id, model, scope.operation, usage)
                .cost_usd
        },
        |record| record.cost_usd,
    );
    (recorded, cost)
}

/// Completion tokens a call without `max_tokens` is held for.
const UNBOUNDED_COMPLETION_TOKENS: usize = 4096;

/// Holds the most `request` can likely cost against the user's daily budget: its prompt
/// and a completion of `max_tokens`. `None` when nothing is held (no budget, an unpriced
/// model); `Error::Limited` when the day's budget cannot take it, and the call must not run.
async fn reserve(
    store: &dyn UsageStore,
    scope: UsageScope<'_>,
    request: &CompletionRequest,
) -> Result<Option<Reservation>> {
    let completion_tokens = request
        .max_tokens
        .map_or(UNBOUNDED_COMPLETION_TOKENS, |t| t as usize);
    let most = estimate(request, completion_tokens.saturating_mul(CHARS_PER_TOKEN));
    let priced = store.priced(
        scope.user_id,
        scope.chat_id,
        &request.model,
        scope.operation,
        most,
    );
    let Some(amount) = priced.cost_usd else {
        return Ok(None);
    };
    match store.reserve(scope.user_id, amount).await? {
        Hold::Unlimited => Ok(None),
        Hold::Reserved(reservation) => Ok(Some(reservation)),
        Hold::Refused { reset_at } => {
            tracing::info!(
                operation = scope.operation,
                "LLM call refused: the user's daily budget cannot take it"
            );
            Err(Error::Limited {
                what: "daily_budget".into(),
                reset_at,
            })
        }
    }
}

/// Replaces the hold with what the call cost. A failure leaves the hold counted (the budget
/// errs on the safe side) and is logged, never the caller's failure.
async fn settle(store: &dyn UsageStore, reservation: Option<&Reservation>, cost_usd: f64) {
    let Some(reservation) = reservation else {
        return;
    };
    if let Err(e) = store.settle(reservation, cost_usd).await {
        tracing::error!(error = %e, "settling the LLM call's budget hold failed");
    }
}

/// The call's metrics: duration, time to first token, tokens and cost, or its error's kind.
fn observe(
    metrics: &Metrics,
    scope: UsageScope<'_>,
    model: &str,
    started: Instant,
    first_token: Option<std::time::Duration>,
    usage: Option<(TokenUsage, Option<UsageRecord>)>,
    error: Option<&shared::Error>,
) {
    let mut point = Point::new()
        .dimension(Dimension::Operation, scope.operation)
        .rollup(&[])
        .count(Metric::LlmCalls, 1)
        .millis(Metric::LlmDuration, started.elapsed())
        .property("model", Some(model))
        .property("chat_id", scope.chat_id);
    if let Some(ttft) = first_token {
        point = point.millis(Metric::LlmTimeToFirstToken, ttft);
    }
    if let Some((usage, record)) = usage {
        point = point
            .value(Metric::LlmInputTokens, usage.prompt_tokens as f64)
            .value(Metric::LlmOutputTokens, usage.completion_tokens as f64);
        if let Some(cost) = record.and_then(|r| r.cost_usd) {
            point = point.value(Metric::LlmCostUsd, cost);
        }
    }
    metrics.emit(point);
    if let Some(error) = error {
        metrics.emit(
            Point::new()
                .dimension(Dimension::Kind, error.kind())
                .rollup(&[])
                .count(Metric::LlmErrors, 1)
                .property("model", Some(model))
                .property("chat_id", scope.chat_id),
        );
    }
}
