//! The model clients: an OpenAI Chat Completions client (streaming, tools, parallel tool
//! calls; also Gemini's OpenAI-compatible endpoint, OpenRouter, vLLM and Ollama) behind the
//! feature `openai`, and Amazon Bedrock's Converse stream behind `bedrock`. Both implement
//! `agent_core::llm::LlmProvider`; [`Clients`] builds them for the agent runtime
//! (`agent_core::llm::LlmClients`). chat-router and tool-worker depend on this crate;
//! mcp-server, which never calls a model, does not.

#![deny(missing_docs)]

#[cfg(feature = "bedrock")]
pub mod bedrock;
#[cfg(feature = "openai")]
mod openai;
#[cfg(feature = "openai")]
mod stream;

use std::sync::Arc;

use agent_core::llm::{ClientSettings, LlmClients, LlmProvider, Provider};
use domain::{Error, Result};
use lambda_kit::secrets::SecretsCache;

#[cfg(feature = "bedrock")]
pub use bedrock::BedrockClient;
#[cfg(feature = "openai")]
pub use openai::{ApiKey, OpenAiClient, OpenAiConfig};
#[cfg(feature = "openai")]
pub use stream::StreamAssembler;

/// The clients this function can build: OpenAI-compatible ones always (with the feature),
/// Bedrock's when it has a Bedrock Runtime client or the SDK configuration to build one.
#[derive(Clone, Default)]
pub struct Clients {
    #[cfg(feature = "bedrock")]
    bedrock: Option<BedrockSource>,
}

/// Where a Bedrock client comes from.
#[cfg(feature = "bedrock")]
#[derive(Clone)]
enum BedrockSource {
    /// Built when a provider first needs it: a deployment that never uses Bedrock does not
    /// pay for building it (its endpoint rules are read at construction) in every cold start.
    Sdk(Box<aws_config::SdkConfig>),
    /// Given (tests point one at a local fake).
    Client(aws_sdk_bedrockruntime::Client),
}

impl Clients {
    /// Clients for the OpenAI-compatible API only.
    pub fn new() -> Self {
        Self::default()
    }

    /// The clients of a Lambda container; the Bedrock client is built by the first
    /// [`LlmClients::connect`] to Bedrock.
    pub fn from_sdk(sdk: &aws_config::SdkConfig) -> Self {
        #[cfg(not(feature = "bedrock"))]
        let _ = sdk;
        Self {
            #[cfg(feature = "bedrock")]
            bedrock: Some(BedrockSource::Sdk(Box::new(sdk.clone()))),
        }
    }

    /// With this Bedrock Runtime client (tests point one at a local fake).
    #[cfg(feature = "bedrock")]
    pub fn with_bedrock(mut self, client: aws_sdk_bedrockruntime::Client) -> Self {
        self.bedrock = Some(BedrockSource::Client(client));
        self
    }
}

impl LlmClients for Clients {
    fn connect(
        &self,
        provider: Provider,
        settings: &ClientSettings,
        secrets: &Arc<SecretsCache>,
        http: &reqwest::Client,
    ) -> Result<Arc<dyn LlmProvider>> {
        #[cfg(not(feature = "openai"))]
        let _ = (secrets, http);
        #[cfg(not(any(feature = "openai", feature = "bedrock")))]
        let _ = settings;
        match provider {
            #[cfg(feature = "openai")]
            Provider::OpenAi => {
                let key = match &settings.key_secret {
                    Some(name) => ApiKey::Secret {
                        cache: secrets.clone(),
                        name: name.clone(),
                    },
                    None => ApiKey::None,
                };
                let config = OpenAiConfig {
                    base_url: settings.base_url.clone(),
                    stream_usage: settings.stream_usage,
                    retry: settings.retry,
                };
                Ok(Arc::new(OpenAiClient::new(http.clone(), config, key)))
            }
            #[cfg(feature = "bedrock")]
            Provider::Bedrock => {
                let client = match &self.bedrock {
                    Some(BedrockSource::Client(client)) => Some(client.clone()),
                    Some(BedrockSource::Sdk(sdk)) => Some(bedrock::sdk_client(sdk)),
                    None => None,
                };
                let Some(client) = client else {
                    return Err(Error::Config(
                        "LLM_PROVIDER or an agent profile uses bedrock, but this function has no Bedrock client".into(),
                    ));
                };
                Ok(Arc::new(
                    BedrockClient::new(client, settings.retry)
                        .with_prompt_cache(settings.bedrock_prompt_cache),
                ))
            }
            #[allow(unreachable_patterns)]
            other => Err(Error::Config(format!(
                "this function was built without the {other} client"
            ))),
        }
    }
}
