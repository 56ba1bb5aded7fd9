//! The result cache in front of a tool's execution: an identical call of any user within
//! the tool's `cache_secs` is answered from the stored result, marked `cached: true` in its
//! metadata (so in the `tool_result` event, the audit record and the log). The cache is an
//! optimisation: when it cannot be read or written, the tool simply runs.

use std::time::Duration;

use serde_json::Value;
use shared::cache::CacheKey;
use shared::domain::flight::Locale;
use shared::domain::tool_result::ToolExecutionResult;

use super::Pipeline;
use crate::Result;
use crate::tools::{RegisteredTool, ToolContext};

impl Pipeline {
    /// Runs the tool, or serves the cached result of the same request.
    pub(super) async fn execute_cached(
        &self,
        ctx: &ToolContext,
        registered: &RegisteredTool,
        request: &Value,
    ) -> Result<ToolExecutionResult> {
        let tool = &registered.tool;
        let (Some(cache), Some(ttl), Some(scope)) = (
            &self.cache,
            registered.settings.cache_ttl,
            tool.cache_scope(),
        ) else {
            return tool.execute(ctx, request).await;
        };
        let name = tool.name();
        // The message is written in the user's language: one entry per language.
        let language = match ctx.locale {
            Locale::De => "de",
            Locale::En => "en",
        };
        let key = CacheKey::new(name, &format!("{language} {scope}"), request);
        match cache.get(&key).await {
            Ok(Some(hit)) => {
                tracing::info!(tool = %name, cache = "hit", "tool result served from the cache");
                return Ok(hit.with_metadata("cached", true));
            }
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(tool = %name, error = %e, "result cache unreadable; running the tool")
            }
        }
        let result = tool.execute(ctx, request).await?;
        if result.is_success() {
            self.store(&key, &result, ttl, name).await;
        }
        tracing::info!(tool = %name, cache = "miss", "tool ran");
        Ok(result)
    }

    async fn store(
        &self,
        key: &CacheKey,
        result: &ToolExecutionResult,
        ttl: Duration,
        name: shared::domain::tool_call::ToolName,
    ) {
        let Some(cache) = &self.cache else { return };
        match cache.put(key, result, ttl).await {
            Ok(true) => {}
            Ok(false) => tracing::info!(tool = %name, "result too large to cache"),
            Err(e) => tracing::warn!(tool = %name, error = %e, "result cache not written"),
        }
    }
}
