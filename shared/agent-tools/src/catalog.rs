//! What each tool says about itself besides its schema: its name, how users call it, and
//! whether mcp-server may serve it. Declared once, on the tool (`Tool::INFO`); the texts,
//! mcp-server, the OpenAPI document and the docs read it from [`CATALOG`].

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
const BUILT_IN: &[ToolInfo] = &[
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

/// The facts of `name`: a tool of [`CATALOG`] or one of the turn's own.
pub fn info(name: ToolName) -> Option<&'static ToolInfo> {
    crate::CATALOG
        .iter()
        .chain(BUILT_IN)
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
mod tests {
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
            assert!(crate::CATALOG.iter().any(|t| t.name == name), "{name}");
        }
        let mut names: Vec<ToolName> = crate::CATALOG.iter().map(|t| t.name).collect();
        names.extend(ToolName::BUILT_IN);
        let count = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), count, "a name is declared twice");
    }
}
