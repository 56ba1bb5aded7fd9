//! Titan Text Embeddings V2 on Amazon Bedrock (`InvokeModel`): `{"inputText", "dimensions",
//! "normalize"}` in, `{"embedding", "inputTextTokenCount"}` out, one text per call.
//!
//! The SDK retries throttling and 5xx; the caller's deadline bounds every call. Errors carry
//! Bedrock's error code only, never its message (upstream text).

use std::time::Instant;

use aws_sdk_bedrockruntime::error::ProvideErrorMetadata;
use aws_sdk_bedrockruntime::primitives::Blob;
use serde::{Deserialize, Serialize};

pub use aws_sdk_bedrockruntime::Client;

use super::SERVICE;
use domain::{Error, Result};

/// Texts embedded at once: Titan takes one per call, so a batch is a few calls in flight.
const IN_FLIGHT: usize = 8;

/// The Bedrock Runtime client of a container, from its SDK configuration (region,
/// credentials, `AWS_ENDPOINT_URL_BEDROCK_RUNTIME` for a local fake).
pub fn client(sdk: &aws_config::SdkConfig) -> Client {
    Client::new(sdk)
}

/// As [`client`], reaching the Bedrock Runtime at `endpoint` (a local fake).
pub fn client_at(sdk: &aws_config::SdkConfig, endpoint: &str) -> Client {
    Client::from_conf(
        aws_sdk_bedrockruntime::config::Builder::from(sdk)
            .endpoint_url(endpoint)
            .build(),
    )
}

/// Titan text embeddings through Bedrock Runtime's `InvokeModel`.
#[derive(Debug, Clone)]
pub struct BedrockEmbeddings {
    client: Client,
    model: String,
    dimensions: u32,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TitanRequest<'a> {
    input_text: &'a str,
    dimensions: u32,
    /// Unit vectors, as the cosine similarity of the search expects.
    normalize: bool,
}

#[derive(Deserialize)]
struct TitanResponse {
    #[serde(default)]
    embedding: Vec<f32>,
}

impl BedrockEmbeddings {
    /// A client of `model` over the SDK's `client`, asking for `dimensions`-long vectors.
    pub fn new(client: Client, model: impl Into<String>, dimensions: u32) -> Self {
        Self {
            client,
            model: model.into(),
            dimensions,
        }
    }

    /// The model the vectors come from.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The vectors' length.
    pub fn dimensions(&self) -> u32 {
        self.dimensions
    }

    /// One embedding per input, in input order, each of the configured length. An empty
    /// `inputs` makes no call.
    pub async fn embed(&self, inputs: &[String], deadline: Instant) -> Result<Vec<Vec<f32>>> {
        let mut out = Vec::with_capacity(inputs.len());
        for batch in inputs.chunks(IN_FLIGHT) {
            let calls = batch.iter().map(|text| self.embed_one(text, deadline));
            for vector in futures::future::join_all(calls).await {
                out.push(vector?);
            }
        }
        Ok(out)
    }

    async fn embed_one(&self, text: &str, deadline: Instant) -> Result<Vec<f32>> {
        let body = serde_json::to_vec(&TitanRequest {
            input_text: text,
            dimensions: self.dimensions,
            normalize: true,
        })?;
        let call = self
            .client
            .invoke_model()
            .model_id(&self.model)
            .content_type("application/json")
            .accept("application/json")
            .body(Blob::new(body))
            .send();
        let output = match tokio::time::timeout_at(deadline.into(), call).await {
            Err(_) => return Err(Error::UpstreamTimeout { service: SERVICE }),
            Ok(Err(e)) => {
                let code = e.code().unwrap_or("no answer").to_owned();
                return Err(Error::Upstream {
                    service: SERVICE,
                    message: format!("Bedrock InvokeModel failed: {code}"),
                });
            }
            Ok(Ok(output)) => output,
        };
        let parsed: TitanResponse =
            serde_json::from_slice(output.body.as_ref()).map_err(|e| Error::Upstream {
                service: SERVICE,
                message: format!("Bedrock embeddings answer is not Titan's: {e}"),
            })?;
        let expected = usize::try_from(self.dimensions).unwrap_or(usize::MAX);
        if parsed.embedding.len() != expected {
            return Err(Error::Upstream {
                service: SERVICE,
                message: format!(
                    "asked for {} dimensions, got {}",
                    self.dimensions,
                    parsed.embedding.len()
                ),
            });
        }
        if parsed.embedding.iter().any(|x| !x.is_finite()) {
            return Err(Error::Upstream {
                service: SERVICE,
                message: "embedding with a non-finite value".into(),
            });
        }
        Ok(parsed.embedding)
    }
}
