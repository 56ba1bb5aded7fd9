//! UI skills (seed 002's frontend skills): tools whose result the client renders. Nothing
//! runs on the server but the check: the canonical request is the `ui` event's payload,
//! sent to the client and stored with the turn's answer.
//!
//! - `suggest_replies`: 2 to 4 quick replies.
//! - `show_flight_options`: flights of the last list, as cards; the flights are taken from
//!   the chat's state when the call is checked, so the payload is exactly what was listed.

use async_trait::async_trait;

use serde::{Deserialize, Serialize};

use crate::catalog::Label;
use crate::catalog::McpExposure;
use crate::catalog::ToolInfo;
use crate::context::ToolContext;
use crate::deps::ToolDeps;
use crate::typed::Tool;
use shared::Error;
use shared::Result;
use shared::domain::session::OfferedFlight;
use shared::domain::tool_args::{ShowFlightOptionsArgs, SuggestRepliesArgs};
use shared::domain::tool_call::ToolName;
use shared::domain::tool_result::ToolExecutionResult;
use shared::domain::ui::UiKind;

/// `suggest_replies`: quick replies the client shows under the answer.
pub struct SuggestRepliesTool;

/// `suggest_replies`' request and the `quick_replies` payload: the replies, tidied.
#[derive(Debug, Serialize, Deserialize)]
pub struct QuickReplies {
    /// 2 to 4 replies, whitespace tidied, without repeats.
    pub replies: Vec<String>,
}

/// `show_flight_options`' request and the `flight_options` payload: the chosen flights of
/// the last list, each once.
#[derive(Debug, Serialize, Deserialize)]
pub struct FlightCards {
    /// The flights, in the order the model named them.
    pub flights: Vec<OfferedFlight>,
}

#[async_trait]
impl Tool for SuggestRepliesTool {
    const INFO: ToolInfo = ToolInfo {
        name: ToolName::new("suggest_replies"),
        label: Label {
            en: "the reply suggestions",
            de: "die Antwortvorschläge",
        },
        title: Label {
            en: "Suggested replies",
            de: "Antwortvorschläge",
        },
        mcp: McpExposure::NotServed("works only inside a chat"),
    };
    type Args = SuggestRepliesArgs;
    type Request = QuickReplies;
    type Output = ();

    fn build(_: &ToolDeps) -> Result<Self> {
        Ok(Self)
    }

    fn prepare(&self, args: SuggestRepliesArgs, _: &ToolContext) -> Result<QuickReplies> {
        Ok(QuickReplies {
            replies: args.canonical()?,
        })
    }

    async fn run(&self, _: &ToolContext, replies: QuickReplies) -> Result<ToolExecutionResult> {
        Ok(
            ToolExecutionResult::succeeded("The replies are shown to the user under your answer.")
                .with_raw(serde_json::to_value(&replies)?),
        )
    }

    fn ui_kind(&self) -> Option<UiKind> {
        Some(UiKind::QuickReplies)
    }
}

/// `show_flight_options`: flights of the last list as cards.
pub struct ShowFlightOptionsTool;

#[async_trait]
impl Tool for ShowFlightOptionsTool {
    const INFO: ToolInfo = ToolInfo {
        name: ToolName::new("show_flight_options"),
        label: Label {
            en: "the flight cards",
            de: "die Flugkarten",
        },
        title: Label {
            en: "Flight options",
            de: "Flugoptionen",
        },
        mcp: McpExposure::NotServed("works only inside a chat"),
    };
    type Args = ShowFlightOptionsArgs;
    type Request = FlightCards;
    type Output = ();

    fn build(_: &ToolDeps) -> Result<Self> {
        Ok(Self)
    }

    fn prepare(&self, args: ShowFlightOptionsArgs, ctx: &ToolContext) -> Result<FlightCards> {
        let offered = &ctx.session_state.offered_flights;
        let mut flights: Vec<OfferedFlight> = Vec::new();
        for option in args.options {
            let Some(flight) = offered.iter().find(|o| o.option == option) else {
                return Err(Error::Invalid(match offered.len() {
                    0 => "there is no flight list to show: search flights first".into(),
                    n => format!("option {option} is not in the last list (1 to {n})"),
                }));
            };
            if !flights.iter().any(|f| f.option == option) {
                flights.push(flight.clone());
            }
        }
        Ok(FlightCards { flights })
    }

    async fn run(&self, _: &ToolContext, cards: FlightCards) -> Result<ToolExecutionResult> {
        let message = format!(
            "{} flights are shown to the user as cards.",
            cards.flights.len()
        );
        Ok(ToolExecutionResult::succeeded(message).with_raw(serde_json::to_value(&cards)?))
    }

    fn ui_kind(&self) -> Option<UiKind> {
        Some(UiKind::FlightOptions)
    }
}
