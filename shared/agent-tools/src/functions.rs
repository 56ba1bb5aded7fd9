//! Calls from tools to this project's own functions (flight search, knowledge base) over
//! their HTTP API.
//!
//! The chat-router and the tool worker both call the `/internal/...` routes, which use IAM
//! authorization, and sign each request with their role's credentials (SigV4). The user a
//! call is for goes in the signed `x-tool-user` header, which only those routes trust
//! (`shared::http::route_access`). A user's token is never forwarded: it stays with the
//! chat-router, so a tool call cannot be replayed with it, nor can the user spend the
//! upstreams' quota past the chat's limits.

use std::sync::Arc;
use std::time::SystemTime;

use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
use aws_sigv4::sign::v4;
use aws_smithy_runtime_api::client::identity::Identity;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::context::ToolContext;
use shared::Error;
use shared::Result;
use shared::http::route_access::ON_BEHALF_OF_HEADER;
use shared::observability::TRACE_HEADER;
use shared::upstream::{self, RetryPolicy};

/// Signs requests with AWS Signature V4 for API Gateway (`execute-api`).
#[derive(Clone)]
pub struct SigV4Signer {
    credentials: SharedCredentialsProvider,
    region: String,
}

impl std::fmt::Debug for SigV4Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigV4Signer")
            .field("region", &self.region)
            .finish_non_exhaustive()
    }
}

impl SigV4Signer {
    /// Signs with `credentials` for API Gateway in `region`.
    pub fn new(credentials: SharedCredentialsProvider, region: impl Into<String>) -> Self {
        Self {
            credentials,
            region: region.into(),
        }
    }

    /// The SDK configuration's credentials and region; `None` when it has neither.
    pub fn from_sdk_config(config: &aws_config::SdkConfig) -> Option<Self> {
        Some(Self {
            credentials: config.credentials_provider()?,
            region: config.region()?.to_string(),
        })
    }

    /// The headers that sign a JSON `POST` of `body` to `url` with `headers` (which are
    /// signed too, so they cannot be changed on the way).
    pub async fn sign_post(
        &self,
        url: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Result<Vec<(String, String)>> {
        let credentials = self
            .credentials
            .provide_credentials()
            .await
            .map_err(|e| Error::Config(format!("AWS credentials for signing: {e}")))?;
        let identity: Identity = credentials.into();
        let params = v4::SigningParams::builder()
            .identity(&identity)
            .region(&self.region)
            .name("execute-api")
            .time(SystemTime::now())
            .settings(SigningSettings::default())
            .build()
            .map_err(|e| Error::Config(format!("SigV4 parameters: {e}")))?
            .into();
        let signable = SignableRequest::new(
            "POST",
            url,
            headers.iter().copied(),
            SignableBody::Bytes(body),
        )
        .map_err(|e| Error::Invalid(format!("cannot sign a request to {url}: {e}")))?;
        let (instructions, _) = sign(signable, &params)
            .map_err(|e| Error::Invalid(format!("cannot sign a request to {url}: {e}")))?
            .into_parts();
        Ok(instructions
            .headers()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect())
    }
}

pub(crate) const JSON: &str = "application/json";

/// HTTP client for a tool's calls to other functions of this project.
#[derive(Clone, Debug)]
pub struct FunctionClient {
    http: reqwest::Client,
    retry: RetryPolicy,
    /// Without one (local runs, where no API Gateway checks) requests go unsigned.
    signer: Option<Arc<SigV4Signer>>,
}

impl FunctionClient {
    /// A client over `http`, retrying as `retry` says; `signer` signs the IAM routes' calls (`None` locally).
    pub fn new(http: reqwest::Client, retry: RetryPolicy, signer: Option<SigV4Signer>) -> Self {
        Self {
            http,
            retry,
            signer: signer.map(Arc::new),
        }
    }

    /// POSTs `body` as JSON to `url` for `ctx`'s caller, retrying transient failures until
    /// `ctx.deadline`, and reads the JSON answer (see [`upstream::read_json`] for errors).
    pub async fn post_json<T: DeserializeOwned>(
        &self,
        service: &'static str,
        url: &str,
        body: &impl Serialize,
        ctx: &ToolContext,
    ) -> Result<T> {
        let bytes = serde_json::to_vec(body)?;
        let mut headers: Vec<(String, String)> = vec![
            ("content-type".to_owned(), JSON.to_owned()),
            (ON_BEHALF_OF_HEADER.to_owned(), ctx.user_id.clone()),
        ];
        if let Some(signer) = &self.signer {
            let to_sign: Vec<(&str, &str)> = headers
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            let signature = signer.sign_post(url, &to_sign, &bytes).await?;
            headers.extend(signature);
        }
        // Unsigned: API Gateway adds its own segment to the header on the way.
        if let Some(trace) = &ctx.trace_header {
            headers.push((TRACE_HEADER.to_owned(), trace.clone()));
        }
        // Our own function: it joins the turn's trace.
        let response = upstream::send_traced(service, ctx.deadline, &self.retry, || {
            headers.iter().fold(
                self.http.post(url).body(bytes.clone()),
                |request, (name, value)| request.header(name, value),
            )
        })
        .await?;
        let status = response.status();
        if status == reqwest::StatusCode::UNAUTHORIZED || status == reqwest::StatusCode::FORBIDDEN {
            // Our own route refusing our own credentials is a deployment error (a role
            // without `execute-api:Invoke`, a URL that is not an IAM route): retrying, or
            // trying another route, would only hide it.
            tracing::error!(
                service,
                status = status.as_u16(),
                credentials = if self.signer.is_some() {
                    "IAM (SigV4)"
                } else {
                    "none (unsigned)"
                },
                "this project's own route refused our credentials; check the authorizer and the IAM grants"
            );
            return Err(Error::Config(format!(
                "{service} refused this deployment's credentials (HTTP {})",
                status.as_u16()
            )));
        }
        upstream::read_json(service, response).await
    }
}

#[cfg(test)]
mod tests {
    use aws_credential_types::Credentials;

    use super::*;

    /// What holds a credential prints it redacted: a log line with `{:?}` leaks nothing.
    #[test]
    fn debug_output_never_shows_a_credential() {
        let signer = SigV4Signer {
            credentials: SharedCredentialsProvider::new(Credentials::new(
                "AKIDEXAMPLE",
                "example-secret-key-value",
                Some("session-token-value".into()),
                None,
                "test",
            )),
            region: "eu-central-1".into(),
        };
        let printed = format!("{signer:?}");
        for secret in ["example-secret-key-value", "session-token-value"] {
            assert!(!printed.contains(secret), "{printed}");
        }
    }

    #[tokio::test]
    async fn service_requests_are_signed_for_execute_api() {
        let signer = SigV4Signer {
            credentials: SharedCredentialsProvider::new(Credentials::new(
                "AKIDEXAMPLE",
                "example-secret",
                Some("session".into()),
                None,
                "test",
            )),
            region: "eu-central-1".into(),
        };
        let headers = signer
            .sign_post(
                "https://api.example.com/internal/kb/search",
                &[("content-type", JSON), (ON_BEHALF_OF_HEADER, "user-1")],
                b"{}",
            )
            .await
            .unwrap_or_default();
        let get = |name: &str| {
            headers
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
                .unwrap_or_default()
        };
        let authorization = get("authorization");
        assert!(authorization.starts_with("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/"));
        assert!(authorization.contains("/eu-central-1/execute-api/aws4_request"));
        // The user header is among the signed ones: it cannot be changed on the way.
        assert!(authorization.contains("x-tool-user"), "{authorization}");
        assert!(authorization.contains("content-type"));
        assert!(!get("x-amz-date").is_empty());
        assert_eq!(get("x-amz-security-token"), "session");
        assert!(!format!("{signer:?}").contains("example-secret"));
    }
}
