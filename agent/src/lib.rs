//! The agent runtime: everything between a user's message and the answer, without HTTP or
//! Lambda. chat-router feeds it requests and frames its events as SSE; tool-worker uses its
//! pipeline to run queued tool calls. The flight and kb functions never compile it.
//!
//! # A turn
//!
//! [`Agent::open`] does what can be refused before anything streams (the chat must be the
//! caller's, or is created), then [`Agent::run_turn`] runs the turn to its end, emitting
//! [`TurnEvent`]s to an [`EventSink`]. Its steps, one module each under [`turn`]:
//!
//! ```text
//! open      load the chat and its recent messages (one store call)     turn/load.rs
//! prompt    system prompt + session context + history + the message    turn/prompt.rs
//! loop, at most MAX_TOOL_STEPS rounds with tools offered, then one without:
//!   model   one completion: stream tokens, collect tool calls, usage   turn/model.rs
//!   tools   the step's calls through the pipeline; the step's messages
//!           and state patch written in one chat write                  turn/execute.rs
//!   decide  answer / tool answered directly / next step / repair once /
//!           give up                                                    turn/decide.rs
//! finish    write the answer, emit `final`                             turn/finish.rs
//! ```
//!
//! Events, in order: `Init` → per tool call `ToolStarted`, `ToolResult` → `Token`… →
//! `Final` → `Done`. `Error` may replace `Final` and is always followed by `Done`; `Debug`
//! only for sinks that want it. `Done` comes last, always.
//!
//! The pipeline ([`pipeline`]) runs one step's calls: *admit* (position, known tool,
//! profile, arguments, time budget, rate limit, record-and-claim in the ledger, which
//! dedupes), *run* (concurrently, each under its timeout; background calls go to the tool
//! queue), *record* (fenced finish; a retry on the queue after a passing failure).
//!
//! # Layout
//!
//! - [`llm`]: providers behind [`llm::LlmProvider`] (OpenAI-compatible and Amazon Bedrock's
//!   Converse stream, picked per request by [`llm::Providers`]) and stream reassembly.
//! - [`tools`]: the [`tools::Tool`] trait, the registry, one file per tool.
//! - [`mcp`]: tools of external MCP servers a profile lists, discovered at cold start.
//! - [`profiles`]: agent profiles from `config/agents.toml` (prompt, model, tools, choice).
//! - [`pipeline`]: admit → run → record; [`pipeline::Pipeline::run_job`] for the worker.
//! - [`jobs`]: tool jobs on the SQS tool queue, the retry schedule, the dead-letter queue.
//! - [`runtime`]: configuration and wiring shared by chat-router, tool-worker and mcp-server.
//! - [`alerts`]: checking a fare alert's searches (tool-worker runs it on a schedule).
//! - [`guard`]: the input guard, data blocks for untrusted text, the output guard on the
//!   stream.
//! - [`turn`]: the turn loop; [`events`]: what it emits.
//! - [`language`]: which language a turn's user texts use; [`texts`]: those texts.
//!
//! Errors are `shared::Error`: the runtime fails the same ways the stores and upstream
//! calls it wraps do, and each function maps that one type once to its HTTP envelope.

#![deny(missing_docs)]

pub mod alerts;
pub mod guard;
pub mod jobs;
pub mod language;
pub mod llm;
pub mod mcp;
pub mod pipeline;
pub mod profiles;
pub mod runtime;
mod system_prompt;
pub mod texts;
pub mod timezone;
pub mod turn;

pub use agent_core::{call_status, events, stop};
pub use agent_tools as tools;

pub use events::{EventSink, NoEvents, TurnErrorCode, TurnEvent};
pub use shared::{Error, Result};
pub use stop::StopSignal;
pub use turn::{Agent, CallDecision, MAX_CALLS_STORED_PER_STEP, OpenTurn, TurnInput, TurnSettings};
