//! What each tool says about itself besides its schema: its name, how users call it, and
//! whether mcp-server may serve it. Declared once, on the tool (`Tool::INFO`); the texts,
//! mcp-server, the OpenAPI document and the docs read it from the crate's `CATALOG`.

use shared::domain::flight::Locale;
use shared::domain::tool_call::ToolName;

/// A tool's facts for everything but the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolInfo {
    /// What the model calls it and the ledger records.
    pub name: ToolName,
    /// How users call it mid-sentence.
    pub label: Label,
    /// Its heading on the web chat's tool cards ("Flight search"); the web's build reads it
    /// from the OpenAPI document's `x-tool-titles`.
    pub title: Label,
    /// Whether an MCP client may call it through mcp-server.
    pub mcp: McpExposure,
}

/// A text about a tool in each language a turn speaks. As a label, how users call it
/// mid-sentence, lower-case: "the flight search", "die Flugsuche" (German labels take "die",
/// every one is feminine, so they fit either case); as a title, a heading: "Flight search".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Label {
    /// The English text.
    pub en: &'static str,
    /// The German text.
    pub de: &'static str,
}

impl Label {
    /// The text in `locale`'s language.
    pub fn in_language(self, locale: Locale) -> &'static str {
        match locale {
            Locale::En => self.en,
            Locale::De => self.de,
        }
    }
}

/// Whether mcp-server may serve a tool (`MCP_TOOLS` may name it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum McpExposure {
    /// MCP clients may call it.
    Served,
    /// Never served, and why (said to an operator who names it in `MCP_TOOLS`).
    NotServed(&'static str),
}

/// The turn's own mechanisms, recorded under a name of their own (`ToolName::BUILT_IN`).
pub(crate) const BUILT_IN: &[ToolInfo] = &[
    ToolInfo {
        name: ToolName::HANDOFF,
        label: Label {
            en: "the handoff",
            de: "die Weitergabe",
        },
        title: Label {
            en: "Handoff",
            de: "Weitergabe",
        },
        mcp: McpExposure::NotServed("works only inside a chat"),
    },
    ToolInfo {
        name: ToolName::MCP,
        label: Label {
            en: "the external service",
            de: "die Anfrage beim externen Dienst",
        },
        title: Label {
            en: "External service",
            de: "Externer Dienst",
        },
        mcp: McpExposure::NotServed(
            "stands for other MCP servers' tools, which are theirs to serve",
        ),
    },
];
