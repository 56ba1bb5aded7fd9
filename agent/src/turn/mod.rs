//! One chat turn as named steps (the crate doc has the overview): [`Agent::open`] loads the
//! chat, [`Agent::run_turn`] runs the loop and always ends with `Done`.
//!
//! The turn writes as it goes, whether or not anyone still listens: each step's messages
//! and state patch in one chat write when the step ends (the user's message with the
//! first), the answer last. A failure writes what was not yet written before it reports.

mod admit;
mod decide;
mod decision;
mod execute;

pub use decision::CallDecision;
pub use replay::{ReplayedCall, ReplayedStep};

pub use execute::MAX_CALLS_STORED_PER_STEP;
mod finish;
mod guarded;
pub mod handoff;
pub mod history;
mod load;
mod model;
pub(crate) mod prompt;
pub mod replay;
mod usage;

use std::sync::Arc;
use std::time::{Duration, Instant};

use time::Date;

use crate::guard::input::UserMessage;
use shared::chats::ChatStore;
use shared::clock::{Clock, SystemClock};
use shared::companion::Companion;
use shared::domain::chat::{Chat, Message, NewMessage};
use shared::domain::flight::Locale;
use shared::domain::memory::UserMemory;
use shared::domain::session::SessionStatePatch;
use shared::domain::ui::UiElement;
use shared::http::{ApiError, ErrorCode};
use shared::ledger::ToolCallLedger;
use shared::memory::MemoryStore;
use shared::metrics::{Dimension, Metric, Metrics, Point};
use shared::observability::Trace;
use shared::secrets::SecretsCache;
use shared::usage::UsageStore;
use shared::{Error, Result};

use self::decide::Decision;
use self::usage::TurnUsage;
use crate::guard::fence::Fence;
use crate::guard::output::Violation;
use crate::guard::payload::GuardedEvents;
use crate::llm::{LlmProvider, PromptMessage, ToolCallRequest, ToolSpec};
use crate::pipeline::{CallOutcome, CallStatus, Pipeline, StepOutcome};
use crate::profiles::{AgentCatalog, AgentProfile, ModelDefaults};
use crate::runtime::ToolRuntime;
use crate::texts::UserText;
use crate::timezone::UserTimeZone;
use agent_core::events::TraceRef;
use agent_core::events::{EventSink, InitData, TurnErrorCode, TurnEvent};
use agent_core::genai;
use agent_core::stop::StopSignal;
use tracing::Instrument;

/// How turns run; read once per container (chat-router's configuration).
#[derive(Debug, Clone)]
pub struct TurnSettings {
    /// Tool rounds per turn before the model must answer.
    pub max_tool_steps: usize,
    /// Tool calls per message across all steps (seeds 000/001: 5); later calls are refused
    /// and, once it is used up, no tools are offered.
    pub max_tool_calls: usize,
    /// `max_tokens` of every model step whose profile sets none.
    pub default_max_tokens: u32,
    /// Turns one user may start per minute; `None`: no limit.
    pub turns_per_minute: Option<u32>,
    /// What one user's LLM calls may cost per UTC day, in USD; `None`: no budget.
    pub daily_budget_usd: Option<f64>,
    /// Wall time all tool calls of a turn may use together.
    pub tool_budget: Duration,
    /// Messages read from the chat for the prompt.
    pub history_max_messages: u32,
    /// Estimated tokens of history in the prompt.
    pub history_token_budget: usize,
    /// Characters of one tool result in the prompt.
    pub tool_result_max_chars: usize,
    /// The provider and model of profiles that name none.
    pub models: ModelDefaults,
    /// Sent with every answer as `final.metadata.notice`.
    pub stack_notice: Option<String>,
    /// Hosts the answer may link to (`.example.com` allows subdomains); other Markdown
    /// links and images are rewritten to their text.
    pub answer_link_hosts: Vec<String>,
}

/// A turn as the caller asks for it (already authenticated and validated).
pub struct TurnInput {
    /// The caller: the chat's owner, whose limits, budget and memory the turn uses.
    pub user_id: String,
    /// `None` starts a new chat.
    pub chat_id: Option<String>,
    /// The profile the request named, else the default one.
    pub profile: AgentProfile,
    /// Whether the request named `profile`; if not, the chat's active agent (the last
    /// handoff's target) answers when it has one.
    pub agent_named: bool,
    /// The user's message, normalised where the request was checked.
    pub message: UserMessage,
    /// When the whole turn must be over (the Lambda deadline, less a margin).
    pub deadline: Instant,
    /// The user's time zone as sent with this message; remembered in the chat.
    pub timezone: Option<UserTimeZone>,
    /// The language the request asked for (its `language` field or `Accept-Language`):
    /// the turn's when neither the message nor the chat tells (see [`crate::language`]).
    pub language: Option<Locale>,
    /// This turn's id (the caller's, so a resent request can name the same turn).
    pub turn_id: String,
    /// The id of the chat this turn creates when `chat_id` is `None`.
    pub new_chat_id: String,
    /// Set when the turn is cancelled; it stops at its next safe point.
    pub stop: StopSignal,
    /// Set for a turn that continues after the user approved or denied a call; its
    /// `message` is then empty and unused.
    pub decision: Option<CallDecision>,
    /// The request's X-Ray trace, passed on to the functions the turn's tools call.
    pub trace: Option<Trace>,
    /// Writes the turn begins with or not at all (the caller's turn record, which holds the
    /// idempotency key): they go into the new chat's creating transaction, and a failed
    /// condition of one is the turn's error. Only for a turn that creates its chat; the
    /// caller of a turn in an existing chat writes them first.
    pub begin_with: Vec<Companion>,
    /// This request took the turn over from its host, which died before anything of the
    /// turn but `init` was logged: it runs the turn again in its chat (`chat_id`), which
    /// the turn already holds and counted (see `chat-router`'s `turn_log`).
    pub resumes: bool,
    /// The first model step, as the dead host took it, for a turn taken over after that
    /// host logged the step's calls: the turn goes on from it without asking the model.
    pub replay: Option<ReplayedStep>,
}

/// A turn whose chat is loaded: nothing can be refused any more.
pub struct OpenTurn {
    input: TurnInput,
    chat: Chat,
    created: bool,
    history: Vec<Message>,
    /// What the user asked to be remembered, across their chats.
    memory: Arc<UserMemory>,
    /// Holds the chat until the turn ends (see `ChatStore::open_held`).
    turn_id: String,
    /// The decision this turn continues with, as the ledger took it.
    decision: Option<decision::TakenDecision>,
}

impl OpenTurn {
    /// The turn's chat: the one named, or the one just created.
    pub fn chat_id(&self) -> &str {
        &self.chat.id
    }

    /// This turn's id, under which it holds the chat.
    pub fn turn_id(&self) -> &str {
        &self.turn_id
    }
}

/// The runtime's entry point; cheap to share between requests.
pub struct Agent {
    chats: Arc<dyn ChatStore>,
    memory: Arc<dyn MemoryStore>,
    ledger: Arc<dyn ToolCallLedger>,
    usage: Arc<dyn UsageStore>,
    llm: Arc<dyn LlmProvider>,
    pipeline: Arc<Pipeline>,
    secrets: Arc<SecretsCache>,
    settings: TurnSettings,
    /// What "today" is decided by (a fixed clock in tests).
    clock: Arc<dyn Clock>,
    /// Every profile, for handoffs.
    agents: Arc<AgentCatalog>,
    metrics: Metrics,
}

/// What a turn carries from step to step.
struct TurnState {
    chat: Chat,
    /// The agent holding the turn (a handoff changes it).
    profile: AgentProfile,
    /// Handoffs made in this turn.
    handoffs: usize,
    /// Steps of the current agent so far (its tool choice forces its first one only).
    agent_step: usize,
    /// The data-block markers of this turn.
    fence: Fence,
    /// In the system prompt; an answer that contains it leaked the prompt.
    canary: String,
    /// The output guard stopped a model step.
    cut: Option<Violation>,
    /// The language of every text this turn writes for the user.
    locale: Locale,
    memory: Arc<UserMemory>,
    prompt: Arc<Vec<PromptMessage>>,
    tools: Arc<Vec<ToolSpec>>,
    tool_budget: Instant,
    /// Messages of this turn not yet written (the user's until the first step ends).
    unsaved: Vec<NewMessage>,
    repaired: bool,
    /// The last step's calls, for `final.tool_result`.
    last_results: Vec<CallOutcome>,
    /// Tool calls this message may still make.
    calls_left: usize,
    /// The user's date now ("today" in the prompt, the past-date check).
    today: Date,
    /// Session-state changes not written yet, merged into the next write with `unsaved`:
    /// the time zone sent with the message (if new), a step's patch.
    unsaved_patch: SessionStatePatch,
    /// This turn, which holds the chat until its last write lets go of it.
    turn_id: String,
    released: bool,
    /// What the client renders with the answer (UI skills, approval boxes), stored with it.
    ui: Vec<UiElement>,
    /// For the turn's metrics: when it started, its model steps and its tool calls.
    started: Instant,
    steps: usize,
    tool_calls: usize,
    /// The model steps' usage records not written yet: they go with the next chat write.
    usage: TurnUsage,
    /// The model that answered the last model step (a fallback's, when it stood in), as
    /// `final.metadata.model` names it.
    answered_by: Option<String>,
}

/// How the loop ended.
enum Ending {
    /// The model's text (empty if it gave none).
    Answer(String),
    /// The tools' messages are the answer (seed 000 §12.1); not yet streamed.
    Direct(String),
    /// A cancel stopped the turn at a safe point; what the turn had streamed as its answer
    /// until then (empty if nothing).
    Stopped(String),
    /// The model made invalid calls twice; the problems, for the log and the error event.
    Unrepairable(String),
    /// A guard stopped the turn; why, for the log and the error event.
    Guarded(String),
    /// A call waits for the user's approval: the turn ends asking for it.
    AwaitingApproval,
}

impl Ending {
    /// How the turn ended, as its metrics say (`status`).
    fn status(&self) -> &'static str {
        match self {
            Self::Answer(_) | Self::Direct(_) => "answered",
            Self::Stopped(_) => "canceled",
            Self::Unrepairable(_) => "unrepairable",
            Self::Guarded(_) => "guarded",
            Self::AwaitingApproval => "awaiting_approval",
        }
    }
}

impl Agent {
    /// An agent on `runtime`'s stores, model clients and pipeline, with `chats`, the
    /// profiles of `agents` (for handoffs) and `settings`; it reads the system clock.
    pub fn new(
        runtime: &ToolRuntime,
        chats: Arc<dyn ChatStore>,
        agents: Arc<AgentCatalog>,
        settings: TurnSettings,
    ) -> Self {
        Self {
            chats,
            memory: runtime.memory.clone(),
            ledger: runtime.ledger.clone(),
            usage: runtime.usage.clone(),
            llm: runtime.llm.clone(),
            pipeline: runtime.pipeline.clone(),
            secrets: runtime.secrets.clone(),
            settings,
            clock: Arc::new(SystemClock),
            agents,
            metrics: runtime.metrics.clone(),
        }
    }

    /// Builds now what every turn reads: the detector's automata, the echo index of the
    /// profiles' system prompts and the handoff tools' schema. A function calls it during
    /// init, which Lambda runs at full CPU, instead of leaving the work to the first user's
    /// turn.
    pub fn warm(&self) {
        crate::guard::detect::warm();
        let _ = self.pipeline.stored_texts.echo();
        handoff::warm();
    }

    /// The same agent, reading the time from `clock`.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Runs `turn` to its end and emits `Done` last, always; in its `invoke_agent` span.
    pub async fn run_turn(&self, turn: OpenTurn, events: &dyn EventSink) {
        let language = match turn.language() {
            Locale::De => "de",
            Locale::En => "en",
        };
        let span = genai::invoke_agent(
            &turn.input.profile.name,
            &turn.chat.id,
            &turn.turn_id,
            language,
        );
        let trace = genai::trace_of(&span);
        let status = self
            .run_turn_in_span(turn, trace, events)
            .instrument(span.clone())
            .await;
        if status == "error" {
            genai::record_error(&span, "turn_failed");
        }
    }

    async fn run_turn_in_span(
        &self,
        turn: OpenTurn,
        trace: Option<TraceRef>,
        events: &dyn EventSink,
    ) -> &'static str {
        events.emit(TurnEvent::Init(InitData {
            chat_id: turn.chat.id.clone(),
            created: turn.created,
            turn_id: turn.turn_id.clone(),
            language: turn.language(),
            trace,
        }));
        // External MCP servers still being listed (a cold start) get their bounded wait.
        if let Some(external) = self.pipeline.registry.external() {
            external.ready().await;
        }
        let mut state = self.start(&turn);
        // From here on every event's payload passes the output guard's checks.
        let guarded = GuardedEvents {
            inner: events,
            guard: self.payload_guard(&state),
        };
        let events: &dyn EventSink = &guarded;
        let OpenTurn {
            input, decision, ..
        } = turn;
        let input = &input;
        if let Some(taken) = decision {
            self.apply_decision(input, &mut state, taken, events).await;
        }
        let (status, result) = match self.run_steps(input, &mut state, events).await {
            Ok(ending) => (
                ending.status(),
                self.finish(&mut state, ending, events).await,
            ),
            Err(e) => ("error", Err(e)),
        };
        let status = if result.is_err() { "error" } else { status };
        if let Err(e) = result {
            self.save_unsaved(&mut state).await;
            tracing::error!(chat_id = %state.chat.id, error = %e, "chat turn failed");
            let code = error_code(&e);
            events.emit(TurnEvent::error(
                code,
                UserText::for_error(code).text(state.locale),
            ));
        }
        // Usage no chat write took (one failed, or there was none) is written on its own.
        state.usage.flush().await;
        // Before `done`: a client may send its next message as soon as it sees it. Usually
        // the turn's last write let go of the chat already.
        if !state.released
            && let Err(e) = self.chats.release(&state.chat.id, &state.turn_id).await
        {
            tracing::error!(chat_id = %state.chat.id, error = %e, "releasing the chat failed; it frees itself at the turn's deadline");
        }
        self.observe_turn(&state, status);
        events.emit(TurnEvent::DONE);
        status
    }

    /// The turn's metrics: duration, model steps and tool calls, by agent and status.
    fn observe_turn(&self, state: &TurnState, status: &'static str) {
        self.metrics.emit(
            Point::new()
                .dimension(Dimension::Agent, state.profile.name.clone())
                .dimension(Dimension::Status, status)
                .rollup(&[Dimension::Agent])
                .rollup(&[])
                .count(Metric::Turns, 1)
                .millis(Metric::TurnDuration, state.started.elapsed())
                .count(Metric::TurnSteps, state.steps)
                .count(Metric::TurnToolCalls, state.tool_calls)
                .property("chat_id", Some(state.chat.id.as_str()))
                .property("turn_id", Some(state.turn_id.as_str())),
        );
    }

    /// The loop: model steps while the model asks for tools, up to the step limit.
    async fn run_steps(
        &self,
        input: &TurnInput,
        state: &mut TurnState,
        events: &dyn EventSink,
    ) -> Result<Ending> {
        // A replayed turn's message passed the guard in its first host.
        if input.replay.is_none()
            && let Some(findings) = self.guard_input(input, state, events)
        {
            return Ok(Ending::Guarded(findings));
        }
        // The answer text the client has seen so far, kept when the user stops the turn.
        let mut spoken = String::new();
        for step in 0..=self.settings.max_tool_steps {
            let models = state.profile.step_models(&self.settings.models);
            // Safe point: no model call for a stopped turn.
            if input.stop.is_stopped() {
                return Ok(Ending::Stopped(spoken));
            }
            let replayed = input.replay.as_ref().filter(|_| step == 0);
            let model::StepReply {
                completion: reply,
                cut,
                offered_tools,
            } = match replayed {
                Some(replayed) => replayed.reply(&models.decision),
                None => {
                    self.model_reply(input, state, &models, step, events)
                        .await?
                }
            };
            state.steps += 1;
            state.answered_by = Some(reply.model.clone());
            // A stop during the step abandoned its stream: what it said so far is the answer.
            if input.stop.is_stopped() {
                return Ok(Ending::Stopped(with_said(spoken, &reply.content)));
            }
            if let Some(violation) = cut {
                state.cut = Some(violation);
                return Ok(Ending::Guarded(violation.as_str().to_owned()));
            }
            if !offered_tools {
                self.refuse_unoffered(input, state, &reply.tool_calls, events)
                    .await;
            }
            if reply.tool_calls.is_empty() || !offered_tools {
                return Ok(Ending::Answer(reply.content));
            }
            // Safe point: the calls of a stopped turn are not started, and running ones
            // are aborted.
            let said = reply.content.clone();
            spoken = with_said(spoken, &said);
            let unrepeated;
            let step_events: &dyn EventSink = match replayed {
                Some(step) => {
                    unrepeated = replay::Unrepeated {
                        inner: events,
                        step,
                    };
                    &unrepeated
                }
                None => events,
            };
            let Some((outcome, handed_to)) =
                self.execute_step(input, state, reply, step_events).await?
            else {
                return Ok(Ending::Stopped(spoken));
            };
            state.agent_step += 1;
            if let Some(to) = handed_to {
                self.switch_agent(state, to);
            }
            let said = (!models.split() && !said.trim().is_empty()).then_some(said);
            if let Some(ending) = self.after_step(state, outcome, said).await? {
                return Ok(ending);
            }
        }
        Ok(Ending::Answer(String::new()))
    }

    /// The model's reply in step `step`. After the last tool round, or once the message's
    /// calls are used up, it is offered no tools: it must answer in text.
    async fn model_reply(
        &self,
        input: &TurnInput,
        state: &TurnState,
        models: &crate::profiles::StepModels,
        step: usize,
        events: &dyn EventSink,
    ) -> Result<model::StepReply> {
        let offer_tools =
            step < self.settings.max_tool_steps && !state.tools.is_empty() && state.calls_left > 0;
        self.step(input, state, models, step, offer_tools, events)
            .await
    }

    /// Refuses the calls of a step that offered no tools: each is recorded as refused, and
    /// the step's text is the answer.
    async fn refuse_unoffered(
        &self,
        input: &TurnInput,
        state: &TurnState,
        calls: &[ToolCallRequest],
        events: &dyn EventSink,
    ) {
        if calls.is_empty() {
            return;
        }
        let ctx = self.tool_context(input, state);
        let refused = self.pipeline.refuse_unoffered(&ctx, calls, events).await;
        tracing::warn!(chat_id = %state.chat.id, calls = refused.len(), "the model called tools in a step that offered none");
    }

    /// What follows a step whose calls ran: `None` asks the model again, else how the turn
    /// ends. `said` is the step's text when it is the answer as streamed (one model writes
    /// both), so UI skills beside it need no further model call.
    async fn after_step(
        &self,
        state: &mut TurnState,
        outcome: StepOutcome,
        said: Option<String>,
    ) -> Result<Option<Ending>> {
        if outcome
            .calls
            .iter()
            .any(|c| c.status == CallStatus::AwaitingApproval)
        {
            state.last_results = outcome.calls;
            return Ok(Some(Ending::AwaitingApproval));
        }
        let registry = &self.pipeline.registry;
        let answers_directly = |tool| {
            registry
                .get(tool)
                .is_some_and(|t| t.tool.answers_directly())
        };
        let audience = decide::Audience {
            locale: state.locale,
            now: self.clock.now(),
        };
        let shows_ui = |tool| {
            registry
                .get(tool)
                .is_some_and(|t| t.tool.ui_kind().is_some())
        };
        let decision = decide::after_tools(
            &outcome,
            state.repaired,
            answers_directly,
            shows_ui,
            audience,
        );
        // A step's messages are written before the model is asked again, so a turn whose
        // host ends later keeps them. A direct answer writes them with itself.
        if matches!(decision, Decision::NextStep | Decision::Repair) {
            self.save(state).await?;
        }
        let ui_only = outcome.calls.iter().all(|c| {
            c.status == CallStatus::Succeeded
                && c.tool
                    .and_then(|t| registry.get(t))
                    .is_some_and(|t| t.tool.ui_kind().is_some())
        });
        let ending = match decision {
            Decision::NextStep => said.filter(|_| ui_only).map(Ending::Answer),
            Decision::Repair => {
                state.repaired = true;
                None
            }
            Decision::AnswerDirectly(text) => Some(Ending::Direct(text)),
            Decision::GiveUp(problems) => Some(Ending::Unrepairable(problems)),
        };
        state.last_results = outcome.calls;
        Ok(ending)
    }

    /// Writes this turn's unwritten messages, state changes and usage in one chat write.
    async fn save(&self, state: &mut TurnState) -> Result<()> {
        let messages = std::mem::take(&mut state.unsaved);
        let patch = std::mem::take(&mut state.unsaved_patch);
        let (records, with) = state.usage.take().unzip();
        let with = with.unwrap_or_default();
        let written = self
            .chats
            .record_step_with(&state.chat, messages, &patch, None, &with)
            .await;
        match written {
            Ok(chat) => {
                state.chat = chat;
                Ok(())
            }
            Err(e) => {
                state.usage.restore(records.unwrap_or_default());
                Err(e)
            }
        }
    }

    /// The turn's last write: as [`Agent::save`], and it lets go of the chat in the same
    /// request.
    async fn save_last(&self, state: &mut TurnState, patch: &SessionStatePatch) -> Result<()> {
        let messages = std::mem::take(&mut state.unsaved);
        let mut merged = state.unsaved_patch.clone();
        merged.merge(patch.clone());
        let (records, with) = state.usage.take().unzip();
        let with = with.unwrap_or_default();
        let turn_id = Some(state.turn_id.as_str());
        match self
            .chats
            .record_step_with(&state.chat, messages.clone(), &merged, turn_id, &with)
            .await
        {
            Ok(chat) => {
                state.chat = chat;
                state.unsaved_patch = SessionStatePatch::default();
                state.released = true;
                Ok(())
            }
            // Kept for the failed turn's last attempt to store them (`save_unsaved`).
            Err(e) => {
                state.unsaved = messages;
                state.usage.restore(records.unwrap_or_default());
                Err(e)
            }
        }
    }

    /// After a failure: best effort, so the user's message is not lost with the turn.
    async fn save_unsaved(&self, state: &mut TurnState) {
        if state.unsaved.is_empty() {
            return;
        }
        if let Err(e) = self.save_last(state, &SessionStatePatch::default()).await {
            tracing::error!(chat_id = %state.chat.id, error = %e, "saving the failed turn's messages failed");
        }
    }
}

/// The `error` event's code for a turn that failed with `e`.
fn error_code(e: &Error) -> TurnErrorCode {
    match e {
        Error::Upstream { .. }
        | Error::UpstreamUnavailable { .. }
        | Error::UpstreamTimeout { .. }
        | Error::UpstreamRejected { .. } => TurnErrorCode::LlmError,
        _ => match ApiError::from(e).code {
            ErrorCode::NotFound => TurnErrorCode::NotFound,
            ErrorCode::Conflict => TurnErrorCode::Conflict,
            ErrorCode::RateLimited => TurnErrorCode::RateLimited,
            _ => TurnErrorCode::Internal,
        },
    }
}

/// `spoken` followed by what a step streamed, a blank line apart.
fn with_said(spoken: String, said: &str) -> String {
    match (spoken.is_empty(), said.trim().is_empty()) {
        (_, true) => spoken,
        (true, false) => said.to_owned(),
        (false, false) => format!("{spoken}\n\n{said}"),
    }
}
