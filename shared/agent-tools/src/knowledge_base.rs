//! `search_knowledge_base` (seed 000 §7): asks kb-retrieve, lists the passages found, and
//! when nothing matches leaves `pending_gpt_query` in the session so the next turn can offer
//! `ask_gpt`.

use async_trait::async_trait;
use serde_json::{Value, json};

use crate::catalog::Label;
use crate::catalog::McpExposure;
use crate::catalog::ToolInfo;
use crate::context::ToolContext;
use crate::deps::ToolDeps;
use crate::functions::FunctionClient;
use crate::kb_passage::PassageView;
use crate::typed::Tool;
use shared::Result;
use shared::domain::flight::Locale;
use shared::domain::session::{PendingGptQuery, SessionStatePatch};
use shared::domain::tool_args::KnowledgeBaseArgs;
use shared::domain::tool_call::ToolName;
use shared::domain::tool_output::KnowledgeBaseOutput;
use shared::domain::tool_result::ToolExecutionResult;

/// The function that searches the knowledge base, and its route.
const FUNCTION: &str = "kb-retrieve";
const ROUTE: &str = "/kb/search";

/// Characters of each passage shown in the chat message (seed 000 §7.6).
const SNIPPET_CHARS: usize = 240;

/// `search_knowledge_base`: passages from kb-retrieve.
pub struct SearchKnowledgeBaseTool {
    functions: FunctionClient,
    /// `POST` endpoint of kb-retrieve, e.g. `https://…/kb/search`.
    search_url: String,
}

fn snippet(text: &str) -> String {
    let mut out: String = text.chars().take(SNIPPET_CHARS).collect();
    if text.chars().count() > SNIPPET_CHARS {
        out.push('…');
    }
    out
}

#[async_trait]
impl Tool for SearchKnowledgeBaseTool {
    const INFO: ToolInfo = ToolInfo {
        name: ToolName::new("search_knowledge_base"),
        label: Label {
            en: "the knowledge base search",
            de: "die Suche in der Wissensdatenbank",
        },
        title: Label {
            en: "Knowledge base",
            de: "Wissensdatenbank",
        },
        mcp: McpExposure::Served,
    };
    type Args = KnowledgeBaseArgs;
    type Request = KnowledgeBaseArgs;
    type Output = KnowledgeBaseOutput;

    fn build(deps: &ToolDeps) -> Result<Self> {
        Ok(Self {
            functions: deps.functions.clone(),
            search_url: deps.urls.url(FUNCTION, ROUTE)?,
        })
    }

    /// Passages depend on the query and the knowledge base, not on who asks.
    fn cache_scope(&self) -> Option<String> {
        Some(self.search_url.clone())
    }

    fn prepare(&self, args: KnowledgeBaseArgs, _: &ToolContext) -> Result<KnowledgeBaseArgs> {
        args.validate()?;
        Ok(args)
    }

    fn canonical(args: &KnowledgeBaseArgs) -> Result<Value> {
        Ok(args.canonical())
    }

    async fn run(&self, ctx: &ToolContext, args: KnowledgeBaseArgs) -> Result<ToolExecutionResult> {
        let top_k = args.top_k();
        let body = json!({ "query": args.query, "top_k": top_k });
        let found: KnowledgeBaseOutput = self
            .functions
            .post_json("kb-retrieve", &self.search_url, &body, ctx)
            .await?;
        let de = ctx.locale == Locale::De;
        if found.results.is_empty() {
            return Ok(nothing_found(args.query, de));
        }
        let (message, sources) = listed(&found, de);
        let raw = json!(found);
        Ok(ToolExecutionResult::succeeded(message)
            .with_raw(raw)
            .with_metadata("mode", "rag_docs")
            .with_metadata("query", args.query)
            .with_metadata("top_k", top_k)
            .with_metadata("sources", Value::Array(sources)))
    }
}

/// No passage found: the model may offer `ask_gpt`, which the session remembers.
fn nothing_found(query: String, de: bool) -> ToolExecutionResult {
    let patch = SessionStatePatch {
        pending_gpt_query: Some(Some(PendingGptQuery {
            query: query.clone(),
            asked_at: time::OffsetDateTime::now_utc()
                .format(&time::format_description::well_known::Rfc3339)
                .ok(),
        })),
        ..Default::default()
    };
    let message = if de {
        "Ich habe in unserer Wissensbasis nichts Passendes gefunden. Soll ich die Frage stattdessen allgemein beantworten?"
    } else {
        "I found nothing relevant in our knowledge base. Shall I answer from general knowledge instead?"
    };
    ToolExecutionResult::succeeded(message)
        .with_raw(json!(KnowledgeBaseOutput::default()))
        .with_state_patch(patch)
        .with_metadata("mode", "rag_no_results")
        .with_metadata("suggested_tool", ToolName::ASK_GPT.as_str())
        .with_metadata("query", query)
}

/// The passages found as the model reads them (each with its language, so an answer can
/// quote the user's language or say its source is in another), and as a source list shows
/// them: title and section, text without Markdown; the ids stay for the debug view.
fn listed(found: &KnowledgeBaseOutput, de: bool) -> (String, Vec<Value>) {
    let mut bullets = Vec::with_capacity(found.results.len());
    let mut sources = Vec::with_capacity(found.results.len());
    for (i, hit) in found.results.iter().enumerate() {
        let view = PassageView::of(&hit.document_id, &hit.content);
        let lang = match view.lang {
            Locale::De => "German",
            Locale::En => "English",
        };
        bullets.push(format!(
            "**{}.** [{}, {lang}] {}",
            i + 1,
            hit.document_id,
            snippet(&hit.content)
        ));
        sources.push(json!({
            "id": hit.id,
            "document_id": hit.document_id,
            "title": view.title,
            "section": view.section,
            "lang": view.lang,
            "snippet": snippet(&view.text),
            "score": hit.score,
        }));
    }
    let heading = if de {
        "Ich habe folgende relevante Punkte gefunden:"
    } else {
        "Here is what the knowledge base says:"
    };
    (format!("{heading}\n\n{}", bullets.join("\n\n")), sources)
}
