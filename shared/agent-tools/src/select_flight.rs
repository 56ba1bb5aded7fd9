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
use shared::domain::session::{OfferedFlight, SessionStatePatch};
use shared::domain::tool_args::SelectFlightArgs;
use shared::domain::tool_call::ToolName;
use shared::domain::tool_result::ToolExecutionResult;

/// Picks kept per chat; the oldest goes first.
const MAX_SELECTED: usize = 10;

/// The checked request: the flight picked and the chat's picks with it.
/// The canonical request: the chosen flight and the chat's selections with it.
#[derive(Debug, Serialize, Deserialize)]
pub struct Selection {
    chosen: OfferedFlight,
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
        let Some(chosen) = offered.iter().find(|o| o.option == args.option) else {
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
            selected,
        })
    }

    async fn run(&self, _: &ToolContext, selection: Selection) -> Result<ToolExecutionResult> {
        let f = &selection.chosen.flight;
        let leg = &f.outbound;
        let mut message = format!(
            "Recorded the user's choice, option {}: {}, {}, {} {} → {} {} ({}), {}.",
            selection.chosen.option,
            f.airline,
            f.price,
            leg.departure.airport,
            leg.departure.time,
            leg.arrival.airport,
            leg.arrival.time,
            leg.flight_numbers,
            f.cabin,
        );
        if let Some(links) = &f.booking_links {
            let list: Vec<String> = links.iter().map(|(k, v)| format!("{k}: {v}")).collect();
            message.push_str(&format!(" Booking: {}.", list.join(", ")));
        }
        let patch = SessionStatePatch {
            selected_itineraries: Some(selection.selected),
            ..Default::default()
        };
        Ok(ToolExecutionResult::succeeded(message)
            .with_raw(json!(selection.chosen))
            .with_state_patch(patch))
    }
}
