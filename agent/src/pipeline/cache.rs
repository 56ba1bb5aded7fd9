//! The result cache in front of a tool's execution: an identical call of any user within
//! the tool's `cache_secs` is answered from the stored result, marked `cached: true` in its
//! metadata (so in the `tool_result` event, the audit record and the log). A fresh result
//! is stored in the same write that ends its call in the ledger (no request of its own), so
//! a result whose call was canceled meanwhile is not cached. The cache is an optimisation:
//! when it cannot be read or written, the tool simply runs.

use serde_json::Value;
use shared::cache::CacheKey;
use shared::companion::Companion;
use shared::domain::flight::Locale;
use shared::domain::tool_result::ToolExecutionResult;

use super::Pipeline;
use agent_tools::{RegisteredTool, ToolContext};
use shared::Result;

impl Pipeline {
    /// Runs the tool, or serves the cached result of the same request. A fresh successful
    /// result comes with its cache entry, to write with the call's finishing write.
    pub(super) async fn execute_cached(
        &self,
        ctx: &ToolContext,
        registered: &RegisteredTool,
        request: &Value,
    ) -> Result<(ToolExecutionResult, Option<Companion>)> {
        let tool = &registered.tool;
        let (Some(cache), Some(ttl), Some(scope)) = (
            &self.cache,
            registered.settings.cache_ttl,
            tool.cache_scope(),
        ) else {
            return Ok((tool.execute(ctx, request).await?, None));
        };
        let name = tool.name();
        // The message is written in the user's language: one entry per language.
        let language = match ctx.locale {
            Locale::De => "de",
            Locale::En => "en",
        };
        let key = CacheKey::new(name, &format!("{language} {scope}"), request);
        match cache.get(&key).await {
            Ok(Some(mut hit)) => {
                tracing::info!(tool = %name, cache = "hit", "tool result served from the cache");
                hit.append(&saved_note(ctx.locale, ttl));
                return Ok((hit.with_metadata("cached", true), None));
            }
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(tool = %name, error = %e, "result cache unreadable; running the tool")
            }
        }
        let result = tool.execute(ctx, request).await?;
        tracing::info!(tool = %name, cache = "miss", "tool ran");
        if !result.is_success() {
            return Ok((result, None));
        }
        let entry = match cache.put_companion(&key, &result, ttl) {
            Ok(Some(entry)) => Some(entry),
            Ok(None) => {
                tracing::info!(tool = %name, "result too large to cache");
                None
            }
            Err(e) => {
                tracing::warn!(tool = %name, error = %e, "result cache not written");
                None
            }
        };
        Ok((result, entry))
    }
}

/// Said under a result served from the cache, so the user knows its age at most.
fn saved_note(locale: Locale, ttl: std::time::Duration) -> String {
    let minutes = ttl.as_secs().div_ceil(60).max(1);
    match locale {
        Locale::De => format!(
            "\n\n(Gespeichertes Ergebnis: dieselbe Suche lief vor höchstens {minutes} Min.)"
        ),
        Locale::En => format!("\n\n(Saved result: the same search ran at most {minutes} min ago.)"),
    }
}
