//! The structured data a tool's result carries (`raw`): what the chat's tables render, what
//! the ledger keeps, and what an MCP client gets as `structuredContent`, with the JSON Schema
//! `tools/list` announces as the tool's `outputSchema`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::flight::FlightSearchResult;

/// What `search_flights` found. A provider that failed or did not run is absent; when the
/// request still lacked something, neither ran and `missing` names what is needed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FlightSearchOutput {
    /// Award (miles) flights, from Seats.aero.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seats_result: Option<FlightSearchResult>,
    /// Cash fares, from the configured cash provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cash_result: Option<FlightSearchResult>,
    /// Fields the search still needs (`origin`, `destination`, `depart_date`); no search ran.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<String>,
}

/// What `search_knowledge_base` found, best first (kb-retrieve's reply, as the tool keeps it).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct KnowledgeBaseOutput {
    /// The passages found, best first.
    pub results: Vec<KnowledgeBasePassage>,
    /// How the passages were ranked: `hybrid` (keywords and meaning), `bm25` (keywords) or
    /// `bedrock` (by an Amazon Bedrock knowledge base).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
}

/// One passage of a knowledge-base document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct KnowledgeBasePassage {
    /// The id of the passage's chunk in the knowledge base.
    pub id: String,
    /// The document the passage comes from.
    pub document_id: String,
    /// The passage's text.
    pub content: String,
    /// Ranking score; higher is better.
    #[serde(default)]
    pub score: Option<f64>,
}
