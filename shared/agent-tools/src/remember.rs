//! `remember`: keeps what the user states about how they travel (home airport, cabin,
//! programmes, who travels) and short notes, for this chat and their later ones. Flight
//! searches start from the preferences; the model reads both as data on every turn.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use crate::catalog::Label;
use crate::catalog::McpExposure;
use crate::catalog::ToolInfo;
use crate::context::ToolContext;
use crate::deps::ToolDeps;
use crate::typed::Tool;
use shared::Result;
use shared::domain::memory::{MemoryChange, MemoryNote, RememberArgs};
use shared::domain::tool_call::ToolName;
use shared::domain::tool_result::ToolExecutionResult;
use shared::memory::MemoryStore;

/// `remember`: keeps the user's travel preferences and notes.
pub struct RememberTool {
    store: Arc<dyn MemoryStore>,
}

#[async_trait]
impl Tool for RememberTool {
    const INFO: ToolInfo = ToolInfo {
        name: ToolName::new("remember"),
        label: Label {
            en: "remembering",
            de: "die Merkfunktion",
        },
        title: Label {
            en: "Remember",
            de: "Merken",
        },
        mcp: McpExposure::NotServed("works only inside a chat"),
    };
    type Args = RememberArgs;
    type Request = RememberArgs;
    type Output = ();

    fn build(deps: &ToolDeps) -> Result<Self> {
        Ok(Self {
            store: deps.memory.clone(),
        })
    }

    fn canonical(args: &RememberArgs) -> Result<Value> {
        Ok(args.canonical())
    }

    fn prepare(&self, args: RememberArgs, _: &ToolContext) -> Result<RememberArgs> {
        args.validate()?;
        Ok(args)
    }

    async fn run(&self, ctx: &ToolContext, args: RememberArgs) -> Result<ToolExecutionResult> {
        let note = args.note.map(|content| MemoryNote {
            id: shared::ids::new_id(),
            content,
            created_at: time::OffsetDateTime::now_utc()
                .format(&time::format_description::well_known::Rfc3339)
                .unwrap_or_default(),
        });
        let change = MemoryChange::Remember {
            preferences: args.preferences,
            note,
        };
        let memory = self.store.change(&ctx.user_id, &change).await?;
        // For the model, which tells the user in their words; the values are the user's
        // own, so they are not echoed here but read from the memory block next turn.
        let message = format!(
            "Saved for this and the user's later chats ({} preference(s), {} note(s) remembered in all). Confirm briefly; the user can see and delete it with the app's memory settings.",
            count_preferences(&memory.preferences),
            memory.notes.len()
        );
        Ok(ToolExecutionResult::succeeded(message)
            .with_raw(serde_json::to_value(&memory).unwrap_or_default()))
    }
}

fn count_preferences(p: &shared::domain::memory::TravelPreferences) -> usize {
    serde_json::to_value(p)
        .ok()
        .and_then(|v| v.as_object().map(serde_json::Map::len))
        .unwrap_or(0)
}
