//! Reassembles a Converse answer from its stream events.
//!
//! Pure and synchronous, like the OpenAI [`StreamAssembler`](agent_core::llm::StreamAssembler):
//! events go in one by one as the SDK decodes them from the event-stream frames, text
//! deltas come out at once, and [`ConverseAssembler::finish`] yields the [`Completion`].
//! A tool call arrives as a `contentBlockStart` (its id and name) and `contentBlockDelta`
//! pieces of its input JSON, keyed by the block's index; blocks of several calls may
//! interleave. Reasoning blocks are never handed out: they are not the answer.

use std::collections::BTreeMap;

use aws_sdk_bedrockruntime::types::{
    ContentBlockDelta, ContentBlockStart, ConverseStreamOutput, StopReason,
};

use super::SERVICE;
use agent_core::llm::{Completion, FinishReason, ToolCallRequest};
use domain::token_usage::TokenUsage;
use domain::{Error, Result};

/// An answer larger than this (text and tool inputs together) is not a model's answer,
/// and must not grow memory without bound.
const MAX_ANSWER_BYTES: usize = 8 * 1024 * 1024;

/// Builds a completion from a `ConverseStream`'s events.
#[derive(Debug, Default)]
pub struct ConverseAssembler {
    content: String,
    /// Tool-use blocks by their content-block index.
    calls: BTreeMap<i32, PartialCall>,
    received: usize,
    stop_reason: Option<StopReason>,
    usage: Option<TokenUsage>,
}

#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    input: String,
}

impl ConverseAssembler {
    /// An assembler with nothing received yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes the next event; returns its text delta, if it carries one.
    pub fn push(&mut self, event: ConverseStreamOutput) -> Result<Option<String>> {
        match event {
            ConverseStreamOutput::ContentBlockStart(start) => {
                if let Some(ContentBlockStart::ToolUse(tool)) = start.start {
                    let call = self.calls.entry(start.content_block_index).or_default();
                    call.id = tool.tool_use_id;
                    call.name = tool.name;
                }
            }
            ConverseStreamOutput::ContentBlockDelta(delta) => match delta.delta {
                Some(ContentBlockDelta::Text(text)) => {
                    self.count(text.len())?;
                    self.content.push_str(&text);
                    return Ok(Some(text).filter(|t| !t.is_empty()));
                }
                Some(ContentBlockDelta::ToolUse(piece)) => {
                    self.count(piece.input.len())?;
                    self.calls
                        .entry(delta.content_block_index)
                        .or_default()
                        .input
                        .push_str(&piece.input);
                }
                // Reasoning, citations and the like: not the answer.
                _ => {}
            },
            ConverseStreamOutput::MessageStop(stop) => self.stop_reason = Some(stop.stop_reason),
            ConverseStreamOutput::Metadata(meta) => {
                self.usage = meta.usage.map(|u| {
                    let count = |n: i32| u64::try_from(n).unwrap_or_default();
                    let cached = u.cache_read_input_tokens.map_or(0, count);
                    // Converse counts cache reads and writes apart from `inputTokens`; the
                    // usage record's prompt tokens include the cached ones (as OpenAI's do).
                    let prompt = count(u.input_tokens)
                        + cached
                        + u.cache_write_input_tokens.map_or(0, count);
                    let completion = count(u.output_tokens);
                    TokenUsage {
                        prompt_tokens: prompt,
                        completion_tokens: completion,
                        total_tokens: prompt + completion,
                        cached_tokens: cached,
                        estimated: false,
                    }
                });
            }
            // Start of the message, end of a block, and events newer than this SDK.
            _ => {}
        }
        Ok(None)
    }

    /// The text received so far.
    pub fn content(&self) -> &str {
        &self.content
    }

    /// The finished completion. A stream without its `messageStop` was cut off, and a tool
    /// call without a name or id cannot be answered: both are errors.
    pub fn finish(self, model: &str) -> Result<Completion> {
        let Some(stop_reason) = self.stop_reason else {
            return Err(upstream("the stream ended before the answer was complete"));
        };
        let mut tool_calls = Vec::with_capacity(self.calls.len());
        for call in self.calls.into_values() {
            if call.name.is_empty() || call.id.is_empty() {
                return Err(upstream("the model sent a tool call without a name or id"));
            }
            // A tool without parameters may get no input pieces at all.
            let arguments = if call.input.trim().is_empty() {
                "{}".to_owned()
            } else {
                call.input
            };
            tool_calls.push(ToolCallRequest {
                id: call.id,
                name: call.name,
                arguments,
            });
        }
        Ok(Completion {
            model: model.to_owned(),
            content: self.content,
            tool_calls,
            finish_reason: Some(finish_reason(&stop_reason)),
            usage: self.usage,
        })
    }

    fn count(&mut self, bytes: usize) -> Result<()> {
        self.received = self.received.saturating_add(bytes);
        if self.received > MAX_ANSWER_BYTES {
            return Err(upstream("the answer is too large"));
        }
        Ok(())
    }
}

fn finish_reason(reason: &StopReason) -> FinishReason {
    match reason {
        StopReason::EndTurn | StopReason::StopSequence => FinishReason::Stop,
        StopReason::ToolUse => FinishReason::ToolCalls,
        StopReason::MaxTokens | StopReason::ModelContextWindowExceeded => FinishReason::Length,
        StopReason::ContentFiltered | StopReason::GuardrailIntervened => {
            FinishReason::ContentFilter
        }
        other => FinishReason::Other(other.as_str().to_owned()),
    }
}

fn upstream(message: &str) -> Error {
    Error::Upstream {
        service: SERVICE,
        message: message.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use aws_sdk_bedrockruntime::types::{
        ContentBlockDeltaEvent, ContentBlockStartEvent, ContentBlockStopEvent, ConversationRole,
        ConverseStreamMetadataEvent, MessageStartEvent, MessageStopEvent, TokenUsage as WireUsage,
        ToolUseBlockDelta, ToolUseBlockStart,
    };

    use super::*;

    fn start() -> ConverseStreamOutput {
        ConverseStreamOutput::MessageStart(
            MessageStartEvent::builder()
                .role(ConversationRole::Assistant)
                .build()
                .unwrap_or_else(|e| panic!("{e}")),
        )
    }

    fn text(index: i32, text: &str) -> ConverseStreamOutput {
        ConverseStreamOutput::ContentBlockDelta(
            ContentBlockDeltaEvent::builder()
                .content_block_index(index)
                .delta(ContentBlockDelta::Text(text.into()))
                .build()
                .unwrap_or_else(|e| panic!("{e}")),
        )
    }

    fn tool_start(index: i32, id: &str, name: &str) -> ConverseStreamOutput {
        ConverseStreamOutput::ContentBlockStart(
            ContentBlockStartEvent::builder()
                .content_block_index(index)
                .start(ContentBlockStart::ToolUse(
                    ToolUseBlockStart::builder()
                        .tool_use_id(id)
                        .name(name)
                        .build()
                        .unwrap_or_else(|e| panic!("{e}")),
                ))
                .build()
                .unwrap_or_else(|e| panic!("{e}")),
        )
    }

    fn input(index: i32, piece: &str) -> ConverseStreamOutput {
        ConverseStreamOutput::ContentBlockDelta(
            ContentBlockDeltaEvent::builder()
                .content_block_index(index)
                .delta(ContentBlockDelta::ToolUse(
                    ToolUseBlockDelta::builder()
                        .input(piece)
                        .build()
                        .unwrap_or_else(|e| panic!("{e}")),
                ))
                .build()
                .unwrap_or_else(|e| panic!("{e}")),
        )
    }

    fn block_stop(index: i32) -> ConverseStreamOutput {
        ConverseStreamOutput::ContentBlockStop(
            ContentBlockStopEvent::builder()
                .content_block_index(index)
                .build()
                .unwrap_or_else(|e| panic!("{e}")),
        )
    }

    fn stop(reason: StopReason) -> ConverseStreamOutput {
        ConverseStreamOutput::MessageStop(
            MessageStopEvent::builder()
                .stop_reason(reason)
                .build()
                .unwrap_or_else(|e| panic!("{e}")),
        )
    }

    fn metadata(input: i32, output: i32, cached: Option<i32>) -> ConverseStreamOutput {
        ConverseStreamOutput::Metadata(
            ConverseStreamMetadataEvent::builder()
                .usage(
                    WireUsage::builder()
                        .input_tokens(input)
                        .output_tokens(output)
                        .total_tokens(input + output)
                        .set_cache_read_input_tokens(cached)
                        .build()
                        .unwrap_or_else(|e| panic!("{e}")),
                )
                .build(),
        )
    }

    /// `text` cut into pieces at the char boundaries in `cuts` (byte offsets).
    fn cut(text: &str, cuts: &[usize]) -> Vec<String> {
        let mut pieces = Vec::new();
        let mut from = 0;
        for &at in cuts {
            pieces.push(text[from..at].to_owned());
            from = at;
        }
        pieces.push(text[from..].to_owned());
        pieces
    }

    fn run(events: Vec<ConverseStreamOutput>) -> (Vec<String>, Result<Completion>) {
        let mut assembler = ConverseAssembler::new();
        let mut deltas = Vec::new();
        for event in events {
            match assembler.push(event) {
                Ok(Some(delta)) => deltas.push(delta),
                Ok(None) => {}
                Err(e) => return (deltas, Err(e)),
            }
        }
        (deltas, assembler.finish("amazon.nova-lite-v1:0"))
    }

    /// The events of an answer with text and two interleaved tool calls, the text and both
    /// inputs cut at `cut_at` (a byte offset, clamped to each and moved to a char boundary).
    fn answer(cut_at: usize) -> Vec<ConverseStreamOutput> {
        let boundary = |s: &str| {
            let mut at = cut_at.min(s.len());
            while !s.is_char_boundary(at) {
                at -= 1;
            }
            at
        };
        let words = "Suche läuft: zwei Anfragen";
        let first = r#"{"origin":"ZRH","destination":"NRT","cabin":"First"}"#;
        let second = r#"{"query":"Gepäck €"}"#;
        let mut events = vec![start()];
        events.extend(cut(words, &[boundary(words)]).iter().map(|t| text(0, t)));
        events.push(block_stop(0));
        events.push(tool_start(1, "tooluse_a", "search_flights"));
        events.push(tool_start(2, "tooluse_b", "search_knowledge_base"));
        // The two calls' pieces alternate.
        let (a, b) = (
            cut(first, &[boundary(first)]),
            cut(second, &[boundary(second)]),
        );
        for (pa, pb) in a.iter().zip(&b) {
            events.push(input(1, pa));
            events.push(input(2, pb));
        }
        events.extend([block_stop(1), block_stop(2), stop(StopReason::ToolUse)]);
        events.push(metadata(120, 45, None));
        events
    }

    #[test]
    fn text_and_interleaved_tool_calls_are_reassembled_at_every_split() {
        for at in 0..=60 {
            let (deltas, completion) = run(answer(at));
            let completion = completion.unwrap_or_else(|e| panic!("split at {at}: {e}"));
            assert_eq!(
                deltas.concat(),
                "Suche läuft: zwei Anfragen",
                "split at {at}"
            );
            assert!(deltas.iter().all(|d| !d.is_empty()));
            assert_eq!(completion.content, "Suche läuft: zwei Anfragen");
            let calls: Vec<_> = completion
                .tool_calls
                .iter()
                .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str()))
                .collect();
            assert_eq!(
                calls,
                [
                    (
                        "tooluse_a",
                        "search_flights",
                        r#"{"origin":"ZRH","destination":"NRT","cabin":"First"}"#
                    ),
                    (
                        "tooluse_b",
                        "search_knowledge_base",
                        r#"{"query":"Gepäck €"}"#
                    )
                ],
                "split at {at}"
            );
            assert_eq!(completion.finish_reason, Some(FinishReason::ToolCalls));
            assert_eq!(
                completion
                    .usage
                    .map(|u| (u.prompt_tokens, u.completion_tokens)),
                Some((120, 45))
            );
        }
    }

    #[test]
    fn the_stream_cut_at_every_frame_boundary_is_an_error_until_the_stop() {
        let events = answer(7);
        let stop_at = events
            .iter()
            .position(|e| matches!(e, ConverseStreamOutput::MessageStop(_)))
            .unwrap_or_default();
        for end in 0..=events.len() {
            let (deltas, completion) = run(events[..end].to_vec());
            // Text is handed out as it comes, whatever follows.
            assert!("Suche läuft: zwei Anfragen".starts_with(&deltas.concat()));
            if end <= stop_at {
                assert!(completion.is_err(), "cut after {end} events completed");
            } else {
                let completion = completion.unwrap_or_else(|e| panic!("{end}: {e}"));
                assert_eq!(completion.tool_calls.len(), 2);
                // Usage comes after the stop; without it the caller estimates.
                assert_eq!(completion.usage.is_some(), end == events.len());
            }
        }
    }

    #[test]
    fn stop_reasons_usage_and_empty_inputs() {
        let (_, done) = run(vec![
            start(),
            tool_start(0, "t", "suggest_replies"),
            block_stop(0),
            stop(StopReason::MaxTokens),
            metadata(10, 2, Some(6)),
        ]);
        let done = done.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(done.tool_calls[0].arguments, "{}");
        assert_eq!(done.finish_reason, Some(FinishReason::Length));
        let usage = done.usage.unwrap_or_default();
        assert_eq!(
            (usage.prompt_tokens, usage.cached_tokens, usage.total_tokens),
            (16, 6, 18)
        );
        for (reason, expected) in [
            (StopReason::EndTurn, FinishReason::Stop),
            (StopReason::GuardrailIntervened, FinishReason::ContentFilter),
            (
                StopReason::MalformedToolUse,
                FinishReason::Other("malformed_tool_use".into()),
            ),
        ] {
            let (_, done) = run(vec![stop(reason)]);
            assert_eq!(done.ok().and_then(|d| d.finish_reason), Some(expected));
        }
        let (_, nameless) = run(vec![input(3, "{}"), stop(StopReason::ToolUse)]);
        assert!(nameless.is_err());
    }
}
