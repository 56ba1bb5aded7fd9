//! Tools the LLM can call: one file per tool, each implementing [`Tool`], and the one list
//! that registers them ([`tools!`] below). Which tools a conversation may use is the agent
//! profile's business (`agent::profiles`); how a step's calls run is the pipeline's
//! (`agent::pipeline`).
//!
//! Adding a tool: a file here implementing [`Tool`], its `mod` line and its line in
//! `tools!`, and its settings in `config/agents.toml`. `docs/adding-a-tool.md` walks
//! through it with [`award_value`] as the example.

#![deny(missing_docs)]

pub mod ask_gpt;
pub mod award_value;
pub mod catalog;
pub mod contact_support;
mod context;
mod deps;
mod dyn_tool;
pub mod fare_alert;
mod flight_message;
mod flight_rows;
pub mod flights;
mod functions;
mod kb_passage;
pub mod knowledge_base;
pub mod metered;
mod registry;
pub mod remember;
mod schema;
pub mod select_flight;
mod settings;
mod typed;
pub mod ui;

use std::sync::Arc;

pub use catalog::{Label, McpExposure, ToolInfo};
pub use deps::{FunctionUrls, ToolDeps};
pub use functions::{FunctionClient, SigV4Signer};
pub use schema::{Dialect, ToolSchema};
pub use settings::RateLimitEntry;
pub use settings::{
    Approval, DEFAULT_RETRY_BASE_SECS, MAX_DELAY, RetryOn, RetrySchedule, ToolSettings,
};
pub use typed::{Tool, TypedTool, with_output};

pub use context::{Progress, ToolContext};
pub use dyn_tool::{DynTool, default_approval_summary};
pub use registry::{ExternalTools, RegisteredTool, ToolRegistry};

use shared::domain::tool_call::ToolName;
pub use shared::{Error, Result};

/// Declares this deployment's tools, one line each, in the order the model is offered
/// them: [`CATALOG`] (their facts) and [`build_all`] (their instances) come from it.
macro_rules! tools {
    ($($tool:ty),* $(,)?) => {
        /// Every tool's facts (name, label, MCP exposure), in the order of [`build_all`].
        pub const CATALOG: &[ToolInfo] = &[$(<$tool as Tool>::INFO),*];

        /// Every tool, built once per container, in the order the model is offered them.
        pub fn build_all(deps: &ToolDeps) -> Result<Vec<Arc<dyn DynTool>>> {
            Ok(vec![$(TypedTool::<$tool>::build(deps)?),*])
        }
    };
}

tools! {
    flights::SearchFlightsTool,
    knowledge_base::SearchKnowledgeBaseTool,
    ask_gpt::AskGptTool,
    award_value::AwardValueTool,
    remember::RememberTool,
    select_flight::SelectFlightTool,
    ui::SuggestRepliesTool,
    ui::ShowFlightOptionsTool,
    fare_alert::CreateFareAlertTool,
    contact_support::ContactSupportTool,
}

/// The facts of `name`: a tool of [`CATALOG`] or one of the turn's own.
pub fn info(name: ToolName) -> Option<&'static ToolInfo> {
    CATALOG
        .iter()
        .chain(catalog::BUILT_IN)
        .find(|info| info.name == name)
}

/// How users call `name`; "the tool" for a name nobody declared.
pub fn label(name: ToolName) -> Label {
    info(name).map_or(
        Label {
            en: "the tool",
            de: "die Funktion",
        },
        |info| info.label,
    )
}

#[cfg(test)]
mod catalog_tests {
    use super::*;

    /// The names the turn and the stores refer to are tools of the catalog, and no two
    /// tools share a name.
    #[test]
    fn the_names_the_code_refers_to_are_registered_tools_each_once() {
        for name in [
            ToolName::SEARCH_FLIGHTS,
            ToolName::SEARCH_KNOWLEDGE_BASE,
            ToolName::ASK_GPT,
            ToolName::SUGGEST_REPLIES,
        ] {
            assert!(CATALOG.iter().any(|t| t.name == name), "{name}");
        }
        let mut names: Vec<ToolName> = CATALOG.iter().map(|t| t.name).collect();
        names.extend(ToolName::BUILT_IN);
        let count = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), count, "a name is declared twice");
    }
}
