//! `select_flight`: records the flight the user picks from the last search's list ("I'll
//! take number 3") in the chat's `selected_itineraries`, so later turns know which one is
//! meant. The choice is resolved against the chat's state when the call is checked, so the
//! stored request says exactly which flight was picked.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::catalog::Label;
use crate::catalog::McpExposure;
use crate::catalog::ToolInfo;
use crate::context::ToolContext;
use crate::deps::ToolDeps;
use crate::typed::Tool;
use shared::Error;
use shared::Result;
use shared::domain::flight::FlightSearchInput;
use shared::domain::session::{FlightRequestSnapshot, OfferedFlight, SessionStatePatch};
use shared::domain::tool_args::SelectFlightArgs;
use shared::domain::tool_call::ToolName;
use shared::domain::tool_result::ToolExecutionResult;

/// Picks kept per chat; the oldest goes first.
const MAX_SELECTED: usize = 10;

/// The checked request: the flight picked, the search that listed it (whose party the price
/// is for) and the chat's picks with it.
#[derive(Debug, Serialize, Deserialize)]
pub struct Selection {
    chosen: OfferedFlight,
    search: FlightRequestSnapshot,
    selected: Vec<Value>,
}

/// `select_flight`: records the flight the user picks from the last list.
pub struct SelectFlightTool;

#[async_trait]
impl Tool for SelectFlightTool {
    const INFO: ToolInfo = ToolInfo {
        name: ToolName::new("select_flight"),
        label: Label {
            en: "the flight selection",
            de: "die Flugauswahl",
        },
        title: Label {
            en: "Select flight",
            de: "Flug auswählen",
        },
        mcp: McpExposure::NotServed("works only inside a chat"),
    };
    type Args = SelectFlightArgs;
    type Request = Selection;
    type Output = ();

    fn build(_: &ToolDeps) -> Result<Self> {
        Ok(Self)
    }

    fn prepare(&self, args: SelectFlightArgs, ctx: &ToolContext) -> Result<Selection> {
        let offered = &ctx.session_state.offered_flights;
        let search = ctx.session_state.last_flight_request.clone();
        let (Some(chosen), Some(search)) =
            (offered.iter().find(|o| o.option == args.option), search)
        else {
            return Err(Error::Invalid(match offered.len() {
                0 => "there is no flight list to choose from: search flights first".into(),
                n => format!("option {} is not in the last list (1 to {n})", args.option),
            }));
        };
        let mut selected: Vec<Value> = ctx
            .session_state
            .selected_itineraries
            .iter()
            .filter(|s| s["flight"]["id"] != json!(chosen.flight.id))
            .cloned()
            .collect();
        selected.push(json!(chosen));
        let excess = selected.len().saturating_sub(MAX_SELECTED);
        selected.drain(..excess);
        Ok(Selection {
            chosen: chosen.clone(),
            search,
            selected,
        })
    }

    async fn run(&self, ctx: &ToolContext, selection: Selection) -> Result<ToolExecutionResult> {
        // The party and cabin of the search that listed the flight: the price is theirs.
        let input = FlightSearchInput::from(&selection.search);
        let message = crate::flight_message::picked(
            &input,
            &selection.chosen,
            ctx.locale,
            time::OffsetDateTime::now_utc(),
        );
        let patch = SessionStatePatch {
            selected_itineraries: Some(selection.selected),
            ..Default::default()
        };
        Ok(ToolExecutionResult::succeeded(message)
            .with_raw(json!(selection.chosen))
            .with_state_patch(patch))
    }
}
