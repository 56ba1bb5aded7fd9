//! Token counts of one model call, as the providers report them: the LLM clients fill them
//! in, the usage store prices and keeps them.

use serde::{Deserialize, Serialize};

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Token counts as an OpenAI-compatible API reports them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenUsage {
    /// Tokens of the request (the prompt), cached ones included.
    pub prompt_tokens: u64,
    /// Tokens the model generated.
    pub completion_tokens: u64,
    /// Prompt and completion tokens together, as reported (else their sum).
    pub total_tokens: u64,
    /// Of the prompt tokens, those the provider served from its prompt cache (OpenAI's
    /// `prompt_tokens_details.cached_tokens`); billed at a lower rate.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cached_tokens: u64,
    /// Counted by us, not reported by the provider (it sent no figures, or the call broke
    /// off after tokens were billed).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub estimated: bool,
}
