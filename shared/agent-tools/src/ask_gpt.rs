//! `ask_gpt` (seed 000 §8): a plain completion without tools, for general questions the
//! knowledge base cannot answer. Its usage is recorded like every other LLM call.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};

use crate::catalog::Label;
use crate::catalog::McpExposure;
use crate::catalog::ToolInfo;
use crate::context::ToolContext;
use crate::deps::ToolDeps;
use crate::metered::{Meter, UsageScope, complete_metered};
use crate::typed::Tool;
use agent_core::llm::{CompletionRequest, LlmProvider, NoTokens, PromptMessage, ToolChoice};
use shared::Error;
use shared::Result;
use shared::domain::session::SessionStatePatch;
use shared::domain::tool_args::AskGptArgs;
use shared::domain::tool_call::ToolName;
use shared::domain::tool_result::ToolExecutionResult;
use shared::metrics::Metrics;
use shared::usage::UsageStore;

pub use crate::deps::AskGptConfig;

/// `ask_gpt`: one completion without tools, from the model's own knowledge.
pub struct AskGptTool {
    llm: Arc<dyn LlmProvider>,
    usage: Arc<dyn UsageStore>,
    metrics: Metrics,
    config: AskGptConfig,
}

#[async_trait]
impl Tool for AskGptTool {
    const INFO: ToolInfo = ToolInfo {
        name: ToolName::new("ask_gpt"),
        label: Label {
            en: "the research assistant",
            de: "die Recherche",
        },
        title: Label {
            en: "General answer",
            de: "Allgemeine Antwort",
        },
        mcp: McpExposure::NotServed("answers from the model's own knowledge, never served"),
    };
    type Args = AskGptArgs;
    type Request = AskGptArgs;
    type Output = ();

    fn build(deps: &ToolDeps) -> Result<Self> {
        Ok(Self {
            llm: deps.llm.clone(),
            usage: deps.usage.clone(),
            metrics: deps.metrics.clone(),
            config: deps.ask_gpt.clone(),
        })
    }

    /// Seed 000 §8.5 clamps an out-of-range temperature rather than refusing the call.
    fn tidy(args: &mut Value, _: &ToolContext) {
        if let Some(t) = args.get_mut("temperature")
            && let Some(n) = t.as_f64()
        {
            *t = json!(n.clamp(0.0, 1.0));
        }
    }

    fn prepare(&self, args: AskGptArgs, _: &ToolContext) -> Result<AskGptArgs> {
        args.validate()?;
        Ok(args)
    }

    fn canonical(args: &AskGptArgs) -> Result<Value> {
        Ok(args.canonical())
    }

    async fn run(&self, ctx: &ToolContext, args: AskGptArgs) -> Result<ToolExecutionResult> {
        let mut messages = vec![PromptMessage::system(self.config.system_prompt.clone())];
        if let Some(context) = args.context.as_deref().filter(|c| !c.trim().is_empty()) {
            messages.push(PromptMessage::user(format!("Context:\n{context}")));
        }
        messages.push(PromptMessage::user(args.query.clone()));
        let request = CompletionRequest {
            // The deployment's default provider and its model.
            provider: Some(self.config.provider),
            model: self.config.model.clone(),
            messages: messages.into(),
            tools: Default::default(),
            tool_choice: ToolChoice::None,
            temperature: self
                .config
                .accepts_temperature()
                .then(|| args.temperature() as f32),
            max_tokens: Some(self.config.max_tokens),
            fallback: self.config.fallback.clone(),
        };
        let scope = UsageScope {
            user_id: &ctx.user_id,
            chat_id: Some(&ctx.chat_id),
            operation: "ask_gpt",
        };
        let meter = Meter {
            llm: self.llm.as_ref(),
            usage: self.usage.as_ref(),
            metrics: &self.metrics,
        };
        let completion =
            complete_metered(meter, scope, &request, ctx.deadline, &mut NoTokens, None).await?;
        let content = completion.content.trim().to_owned();
        if content.is_empty() {
            return Err(Error::Upstream {
                service: "llm",
                message: "empty answer".into(),
            });
        }
        let web_search = args.web_search.unwrap_or(false);
        // The question a knowledge-base miss left for the model is answered now.
        let answered = SessionStatePatch {
            pending_gpt_query: Some(None),
            ..SessionStatePatch::default()
        };
        Ok(ToolExecutionResult::succeeded(content.clone())
            .with_state_patch(answered)
            .with_raw(json!({
                "message": content,
                "metadata": {
                    "model": completion.model,
                    "finish_reason": completion.finish_reason,
                    "web_search": web_search,
                }
            }))
            .with_metadata("mode", "gpt")
            .with_metadata("web_search", web_search))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temperature_is_left_out_for_fixed_models() {
        let mut config = AskGptConfig {
            provider: agent_core::llm::Provider::OpenAi,
            model: "GPT-5-mini".into(),
            fallback: Default::default(),
            system_prompt: String::new(),
            fixed_temperature_models: vec!["gpt-5".into(), "o1".into()],
            max_tokens: 1024,
        };
        assert!(!config.accepts_temperature());
        config.model = "gpt-4o-mini".into();
        assert!(config.accepts_temperature());
    }
}
