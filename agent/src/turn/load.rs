//! Step 1: open the turn. The chat and its recent messages come from one store call (two
//! requests in parallel), or the chat is created; background tool results that arrived
//! since are folded into the history.
//! Everything a caller can be refused for (a foreign or missing chat) fails here, before any
//! event is emitted.

use std::time::Instant;

use shared::Result;

use super::{Agent, OpenTurn, TurnInput, TurnState, history, prompt};
use crate::llm::PromptMessage;
use shared::domain::chat::NewMessage;
use shared::domain::flight::Locale;

impl Agent {
    pub async fn open(&self, input: TurnInput) -> Result<OpenTurn> {
        let owner = &input.user_id;
        let (chat, created, mut history) = match input.chat_id.as_deref() {
            Some(id) => {
                let (chat, history) = self
                    .chats
                    .open(owner, id, self.settings.history_max_messages)
                    .await?;
                (chat, false, history)
            }
            None => (self.chats.create(owner).await?, true, Vec::new()),
        };
        history::refresh_background(self.ledger.as_ref(), owner, &chat.id, &mut history).await;
        tracing::info!(chat_id = %chat.id, agent = %input.profile.name, created, "chat turn");
        Ok(OpenTurn {
            input,
            chat,
            created,
            history,
        })
    }

    /// The state the loop starts from: the prompt, the offered tools, the tool budget.
    pub(super) fn start(&self, turn: &OpenTurn) -> TurnState {
        let input = &turn.input;
        let settings = &self.settings;
        let mut prompt = vec![PromptMessage::system(prompt::system_prompt(
            &input.profile,
            &turn.chat.session_state,
        ))];
        prompt.extend(history::select(
            &turn.history,
            settings.history_token_budget,
            settings.tool_result_max_chars,
        ));
        prompt.push(PromptMessage::user(input.message.clone()));
        TurnState {
            chat: turn.chat.clone(),
            locale: Locale::guess(&input.message),
            prompt,
            tools: prompt::offered_tools(&self.pipeline.registry, &input.profile),
            tool_budget: (Instant::now() + settings.tool_budget).min(input.deadline),
            unsaved: vec![NewMessage::user(input.message.clone())],
            repaired: false,
            last_results: Vec::new(),
        }
    }
}
