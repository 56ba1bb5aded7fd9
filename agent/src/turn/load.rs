//! Step 1: open the turn. The chat and its recent messages come from one store call (two
//! requests in parallel), or the chat is created (one transaction with the turn's count and
//! the caller's turn record); background tool results that arrived since are folded into
//! the history.
//! Everything a caller can be refused for (too many turns, the day's budget spent, a
//! foreign or missing chat) fails here, before any event is emitted or anything is stored.

use std::sync::Arc;
use std::time::Instant;

use shared::Result;

use super::decision::TakenDecision;
use super::usage::TurnUsage;
use super::{Agent, OpenTurn, TurnInput, TurnState, history, prompt};
use crate::guard::fence::Fence;
use crate::language;
use crate::llm::PromptMessage;
use crate::profiles::AgentProfile;
use crate::timezone::{UserTimeZone, local_date};
use shared::chats::TurnLease;
use shared::domain::chat::{Chat, Message, NewMessage};
use shared::domain::flight::Locale;
use shared::domain::memory::UserMemory;
use shared::domain::session::{SessionState, SessionStatePatch};

impl Agent {
    /// Opens `input`'s turn: holds the caller's chat and reads its recent messages, or
    /// creates the chat; counts the turn and takes the decision it continues with. A turn
    /// that may not run fails here, before any event.
    pub async fn open(&self, input: TurnInput) -> Result<OpenTurn> {
        let owner = &input.user_id;
        // One turn at a time per chat: the turn holds its chat until it ends, or until its
        // deadline if its host ends it first.
        let left = input.deadline.saturating_duration_since(Instant::now());
        let lease = TurnLease {
            turn_id: input.turn_id.clone(),
            until: self.clock.now() + left,
        };
        // The user's memory is read while the chat is opened: no added wait.
        let opening = async {
            Ok::<_, shared::Error>(match input.chat_id.as_deref() {
                Some(_) if !input.begin_with.is_empty() => {
                    return Err(shared::Error::Invalid(
                        "writes to begin a turn with go with a new chat only".into(),
                    ));
                }
                Some(id) => {
                    let (chat, history, taken) = self.open_existing(&input, id, &lease).await?;
                    (chat, false, history, taken)
                }
                None if input.decision.is_some() => {
                    return Err(shared::Error::Invalid(
                        "a decision continues an existing chat".into(),
                    ));
                }
                // A new chat is created only for a turn that may run, in one write with the
                // turn's count and the caller's record of the turn.
                None => {
                    let mut with = input.begin_with.clone();
                    with.extend(self.admit_new_chat_turn(owner).await?);
                    let chat = self
                        .chats
                        .create_held_with(owner, &input.new_chat_id, &lease, &with)
                        .await?;
                    (chat, true, Vec::new(), None)
                }
            })
        };
        let (opened, memory) = tokio::join!(opening, self.remembered(owner));
        let (chat, created, mut history, decision) = opened?;
        let now = self.clock.now();
        history::refresh_background(self.ledger.as_ref(), owner, &chat.id, &mut history, now).await;
        tracing::info!(chat_id = %chat.id, agent = %input.profile.name, agent_named = input.agent_named, created, "chat turn");
        Ok(OpenTurn {
            input,
            chat,
            created,
            history,
            memory,
            turn_id: lease.turn_id,
            decision,
        })
    }

    /// Takes the existing chat `id` for the turn, with its recent messages, then counts the
    /// turn and takes its decision, if any. The chat is taken before the turn is counted, so
    /// a message refused because the chat is busy (409) or not the user's (404) uses none of
    /// their turns; a turn refused after that lets go of the chat.
    async fn open_existing(
        &self,
        input: &TurnInput,
        id: &str,
        lease: &TurnLease,
    ) -> Result<(Chat, Vec<Message>, Option<TakenDecision>)> {
        let owner = &input.user_id;
        let limit = self.settings.history_max_messages;
        let (chat, history) = self.chats.open_held(owner, id, lease, limit).await?;
        // A decision is taken once the chat is held, so its turn runs alone.
        // A turn taken over from its dead host was counted when it began.
        let admission = if input.resumes {
            Ok(())
        } else {
            self.admit_turn(owner).await
        };
        let admitted = match admission {
            Ok(()) => match &input.decision {
                Some(decision) => self
                    .take_decision(input, &chat.id, decision)
                    .await
                    .map(Some),
                None => Ok(None),
            },
            Err(e) => Err(e),
        };
        match admitted {
            Ok(taken) => Ok((chat, history, taken)),
            Err(e) => {
                self.chats.release(&chat.id, &lease.turn_id).await?;
                Err(e)
            }
        }
    }

    /// The user's memory; a turn goes on without it when it cannot be read.
    async fn remembered(&self, owner: &str) -> Arc<UserMemory> {
        match self.memory.get(owner).await {
            Ok(memory) => Arc::new(memory),
            Err(e) => {
                tracing::warn!(error = %e, "user memory unreadable; the turn goes on without it");
                Arc::default()
            }
        }
    }

    /// The state the loop starts from: the prompt, the offered tools, the tool budget.
    pub(super) fn start(&self, turn: &OpenTurn) -> TurnState {
        let input = &turn.input;
        let settings = &self.settings;
        let fence = Fence::new();
        let canary = format!("CANARY-{}", shared::ids::new_id());
        let remembered = &turn.chat.session_state.timezone;
        let zone = input.timezone.clone().or_else(|| {
            remembered
                .as_deref()
                .and_then(|name| UserTimeZone::parse(name).ok())
        });
        let today = local_date(zone.as_ref(), self.clock.now());
        let (locale, language) = turn_language(input, turn.chat.session_state.language);
        let unsaved_patch = SessionStatePatch {
            timezone: input
                .timezone
                .as_ref()
                .map(|z| z.name().to_owned())
                .filter(|name| remembered.as_deref() != Some(name.as_str())),
            language,
            ..SessionStatePatch::default()
        };
        let profile = self.turn_profile(input, &turn.chat.session_state);
        let mut unsaved_patch = unsaved_patch;
        if turn.chat.session_state.active_agent.as_deref() != Some(profile.name.as_str()) {
            unsaved_patch.active_agent = Some(profile.name.clone());
        }
        let turn_prompt = prompt::turn_prompt(&fence, &canary, today);
        let mut prompt = vec![
            PromptMessage::system(prompt::static_prompt(&profile)),
            PromptMessage::system(turn_prompt),
        ];
        prompt.extend(prompt::session_context(&turn.chat.session_state, &fence));
        prompt.extend(prompt::remembered(&turn.memory, &fence));
        prompt.extend(history::select(
            &turn.history,
            settings.history_token_budget,
            settings.tool_result_max_chars,
            &fence,
        ));
        // A decision turn starts from the decision (see `decision`), not a message.
        let unsaved = if input.decision.is_some() {
            Vec::new()
        } else {
            prompt.push(PromptMessage::user(input.message.as_str().to_owned()));
            vec![NewMessage::user(input.message.as_str().to_owned())]
        };
        let mut state = TurnState {
            chat: turn.chat.clone(),
            profile,
            handoffs: 0,
            agent_step: 0,
            fence,
            canary,
            cut: None,
            locale,
            memory: turn.memory.clone(),
            prompt: Arc::new(prompt),
            tools: Arc::default(),
            tool_budget: (Instant::now() + settings.tool_budget).min(input.deadline),
            unsaved,
            repaired: false,
            last_results: Vec::new(),
            calls_left: settings.max_tool_calls,
            today,
            unsaved_patch,
            turn_id: turn.turn_id.clone(),
            released: false,
            ui: Vec::new(),
            started: Instant::now(),
            steps: 0,
            tool_calls: 0,
            usage: TurnUsage::new(self.usage.clone()),
            answered_by: None,
        };
        state.tools = Arc::new(self.offered_tools(&state));
        state
    }

    /// The profile a turn starts with: the one the request named, else the chat's active
    /// agent (where the last handoff left it) while the catalog still has it, else the
    /// default the request was given.
    fn turn_profile(&self, input: &TurnInput, chat: &SessionState) -> AgentProfile {
        if input.agent_named {
            return input.profile.clone();
        }
        chat.active_agent
            .as_deref()
            .and_then(|name| self.agents.profile(Some(name)))
            .cloned()
            .unwrap_or_else(|| input.profile.clone())
    }
}

impl OpenTurn {
    /// The language of every text this turn writes for the user (see [`turn_language`]).
    pub fn language(&self) -> Locale {
        turn_language(&self.input, self.chat.session_state.language).0
    }
}

/// The turn's language, and the language to remember in the chat when it changed: the
/// message's when it tells, else the chat's remembered one, else the request's (its
/// `language` field, else `Accept-Language`), else English. Only a message's language is
/// remembered: it is what the user writes in, where the request's is only a default.
fn turn_language(input: &TurnInput, remembered: Option<Locale>) -> (Locale, Option<Locale>) {
    let written = language::from_message(input.message.as_str());
    let locale = written
        .or(remembered)
        .or(input.language)
        .unwrap_or_default();
    (locale, written.filter(|l| remembered != Some(*l)))
}
