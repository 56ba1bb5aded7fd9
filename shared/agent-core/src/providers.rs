//! Which provider answers a request: the deployment's default (`LLM_PROVIDER`) or the one
//! an agent profile names (`provider`), so one router can run one profile on Bedrock and
//! another on OpenAI.

use std::fmt;
use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;

pub use domain::provider::Provider;

use crate::fallback::ModelHealth;
use crate::llm::{Completion, CompletionRequest, LlmProvider, TokenSink};
use crate::{Error, Result};

/// The configured providers, itself an [`LlmProvider`]: each request goes to the provider
/// it names, or to the default one. It keeps the container's [`ModelHealth`] for fallback.
#[derive(Clone)]
pub struct Providers {
    default: Provider,
    clients: Vec<(Provider, Arc<dyn LlmProvider>)>,
    health: Arc<ModelHealth>,
}

impl fmt::Debug for Providers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Providers")
            .field("default", &self.default)
            .field(
                "configured",
                &self.clients.iter().map(|(p, _)| *p).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl Providers {
    /// No provider yet; requests that name none go to `default`.
    pub fn new(default: Provider) -> Self {
        Self {
            default,
            clients: Vec::new(),
            health: Arc::default(),
        }
    }

    /// Adds (or replaces) the client of `provider`.
    pub fn with(mut self, provider: Provider, client: Arc<dyn LlmProvider>) -> Self {
        self.clients.retain(|(p, _)| *p != provider);
        self.clients.push((provider, client));
        self
    }

    /// The provider of requests that name none (`LLM_PROVIDER`).
    pub fn default_provider(&self) -> Provider {
        self.default
    }

    /// Whether `provider` has a client.
    pub fn has(&self, provider: Provider) -> bool {
        self.get(provider).is_some()
    }

    fn get(&self, provider: Provider) -> Option<&Arc<dyn LlmProvider>> {
        self.clients
            .iter()
            .find(|(p, _)| *p == provider)
            .map(|(_, c)| c)
    }
}

#[async_trait]
impl LlmProvider for Providers {
    async fn complete(
        &self,
        request: &CompletionRequest,
        deadline: Instant,
        tokens: &mut dyn TokenSink,
    ) -> Result<Completion> {
        let provider = request.provider.unwrap_or(self.default);
        match self.get(provider) {
            Some(client) => client.complete(request, deadline, tokens).await,
            // Cold start checks every profile's provider; this is a request built elsewhere.
            None => Err(Error::Config(format!(
                "the LLM provider {provider} is not configured in this deployment"
            ))),
        }
    }

    fn health(&self) -> Option<&ModelHealth> {
        Some(&self.health)
    }
}
