//! `remember`: keeps what the user states about how they travel (home airport, cabin,
//! programmes, who travels) and short notes, for this chat and their later ones. Flight
//! searches start from the preferences; the model reads both as data on every turn.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use super::{Tool, ToolContext, ToolSchema};
use crate::catalog::{Label, McpExposure, ToolInfo};
use crate::{Error, Result};
use shared::domain::memory::{MemoryChange, MemoryNote, RememberArgs};
use shared::domain::tool_call::ToolName;
use shared::domain::tool_result::ToolExecutionResult;
use shared::memory::MemoryStore;

pub struct RememberTool {
    store: Arc<dyn MemoryStore>,
    schema: ToolSchema,
}

impl RememberTool {
    pub fn new(store: Arc<dyn MemoryStore>) -> Result<Self> {
        Ok(Self {
            store,
            schema: ToolSchema::of::<RememberArgs>(ToolName::REMEMBER)?,
        })
    }
}

impl RememberTool {
    pub const INFO: ToolInfo = ToolInfo {
        name: ToolName::REMEMBER,
        label: Label {
            en: "remembering",
            de: "die Merkfunktion",
        },
        mcp: McpExposure::NotServed("works only inside a chat"),
    };
}

#[async_trait]
impl Tool for RememberTool {
    fn name(&self) -> ToolName {
        Self::INFO.name
    }

    fn schema(&self) -> &ToolSchema {
        &self.schema
    }

    fn prepare(&self, args: Value, _: &ToolContext) -> Result<Value> {
        let args: RememberArgs = self.schema.parse(&args)?;
        args.validate()?;
        Ok(args.canonical())
    }

    async fn execute(&self, ctx: &ToolContext, request: &Value) -> Result<ToolExecutionResult> {
        let args: RememberArgs = serde_json::from_value(request.clone())
            .map_err(|e| Error::Invalid(format!("stored remember request: {e}")))?;
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
