//! UI skills (seed 002's frontend skills): tools whose result the client renders. Nothing
//! runs on the server but the check: the canonical request is the `ui` event's payload,
//! sent to the client and stored with the turn's answer.
//!
//! - `suggest_replies`: 2 to 4 quick replies.
//! - `show_flight_options`: flights of the last list, as cards; the flights are taken from
//!   the chat's state when the call is checked, so the payload is exactly what was listed.

use async_trait::async_trait;
use serde_json::{Value, json};

use super::{Tool, ToolContext, ToolSchema};
use crate::catalog::{Label, McpExposure, ToolInfo};
use crate::{Error, Result};
use shared::domain::session::OfferedFlight;
use shared::domain::tool_args::{ShowFlightOptionsArgs, SuggestRepliesArgs};
use shared::domain::tool_call::ToolName;
use shared::domain::tool_result::ToolExecutionResult;
use shared::domain::ui::UiKind;

pub struct SuggestRepliesTool {
    schema: ToolSchema,
}

impl SuggestRepliesTool {
    pub fn new() -> Result<Self> {
        Ok(Self {
            schema: ToolSchema::of::<SuggestRepliesArgs>(ToolName::SUGGEST_REPLIES)?,
        })
    }
}

impl SuggestRepliesTool {
    pub const INFO: ToolInfo = ToolInfo {
        name: ToolName::SUGGEST_REPLIES,
        label: Label {
            en: "the reply suggestions",
            de: "die Antwortvorschläge",
        },
        mcp: McpExposure::NotServed("works only inside a chat"),
    };
}

#[async_trait]
impl Tool for SuggestRepliesTool {
    fn name(&self) -> ToolName {
        Self::INFO.name
    }

    fn schema(&self) -> &ToolSchema {
        &self.schema
    }

    fn prepare(&self, args: Value, _: &ToolContext) -> Result<Value> {
        let args: SuggestRepliesArgs = self.schema.parse(&args)?;
        Ok(json!({ "replies": args.canonical()? }))
    }

    async fn execute(&self, _: &ToolContext, request: &Value) -> Result<ToolExecutionResult> {
        Ok(
            ToolExecutionResult::succeeded("The replies are shown to the user under your answer.")
                .with_raw(request.clone()),
        )
    }

    fn ui_kind(&self) -> Option<UiKind> {
        Some(UiKind::QuickReplies)
    }
}

pub struct ShowFlightOptionsTool {
    schema: ToolSchema,
}

impl ShowFlightOptionsTool {
    pub fn new() -> Result<Self> {
        Ok(Self {
            schema: ToolSchema::of::<ShowFlightOptionsArgs>(ToolName::SHOW_FLIGHT_OPTIONS)?,
        })
    }
}

impl ShowFlightOptionsTool {
    pub const INFO: ToolInfo = ToolInfo {
        name: ToolName::SHOW_FLIGHT_OPTIONS,
        label: Label {
            en: "the flight cards",
            de: "die Flugkarten",
        },
        mcp: McpExposure::NotServed("works only inside a chat"),
    };
}

#[async_trait]
impl Tool for ShowFlightOptionsTool {
    fn name(&self) -> ToolName {
        Self::INFO.name
    }

    fn schema(&self) -> &ToolSchema {
        &self.schema
    }

    fn prepare(&self, args: Value, ctx: &ToolContext) -> Result<Value> {
        let args: ShowFlightOptionsArgs = self.schema.parse(&args)?;
        let offered = &ctx.session_state.offered_flights;
        let mut flights: Vec<&OfferedFlight> = Vec::new();
        for option in args.options {
            let Some(flight) = offered.iter().find(|o| o.option == option) else {
                return Err(Error::Invalid(match offered.len() {
                    0 => "there is no flight list to show: search flights first".into(),
                    n => format!("option {option} is not in the last list (1 to {n})"),
                }));
            };
            if !flights.iter().any(|f| f.option == option) {
                flights.push(flight);
            }
        }
        Ok(json!({ "flights": flights }))
    }

    async fn execute(&self, _: &ToolContext, request: &Value) -> Result<ToolExecutionResult> {
        let shown = request["flights"].as_array().map_or(0, Vec::len);
        let message = format!("{shown} flights are shown to the user as cards.");
        Ok(ToolExecutionResult::succeeded(message).with_raw(request.clone()))
    }

    fn ui_kind(&self) -> Option<UiKind> {
        Some(UiKind::FlightOptions)
    }
}
