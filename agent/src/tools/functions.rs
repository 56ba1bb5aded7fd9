//! Calls from tools to this project's own functions (flight search, knowledge base) over
//! their HTTP API.
//!
//! In a chat turn the user's bearer token is forwarded, so the routes' JWT authorizer checks
//! the same user. The tool worker has no user token: it calls the `/internal/...` routes,
//! which use IAM authorization, and signs its requests with its role's credentials (SigV4).

use std::sync::Arc;
use std::time::SystemTime;

use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
use aws_sigv4::sign::v4;
use aws_smithy_runtime_api::client::identity::Identity;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::ToolContext;
use crate::{Error, Result};
use shared::secrets::SecretString;
use shared::upstream::{self, RetryPolicy};

/// On whose behalf a tool runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caller {
    /// A user in a chat turn: their `Authorization` header is forwarded (never printed:
    /// `Debug` shows it redacted).
    User { authorization: SecretString },
    /// A backend job (the tool worker): requests are signed with the function's IAM role.
    Service,
}

impl Caller {
    /// For logs: which credentials were sent.
    pub fn kind(&self) -> &'static str {
        match self {
            Caller::User { .. } => "user token",
            Caller::Service => "IAM (SigV4)",
        }
    }
}

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
    /// The SDK configuration's credentials and region; `None` when it has neither.
    pub fn from_sdk_config(config: &aws_config::SdkConfig) -> Option<Self> {
        Some(Self {
            credentials: config.credentials_provider()?,
            region: config.region()?.to_string(),
        })
    }

    /// The headers that sign a JSON `POST` of `body` to `url`.
    async fn headers(&self, url: &str, body: &[u8]) -> Result<Vec<(String, String)>> {
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
            [("content-type", JSON)].into_iter(),
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

const JSON: &str = "application/json";

/// HTTP client for a tool's calls to other functions of this project.
#[derive(Clone, Debug)]
pub struct FunctionClient {
    http: reqwest::Client,
    retry: RetryPolicy,
    /// For [`Caller::Service`]; without one (local runs) requests go unsigned.
    signer: Option<Arc<SigV4Signer>>,
}

impl FunctionClient {
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
        let auth: Vec<(String, String)> = match (&ctx.caller, &self.signer) {
            (Caller::User { authorization }, _) => {
                vec![(
                    "authorization".to_owned(),
                    authorization.expose().to_owned(),
                )]
            }
            (Caller::Service, Some(signer)) => signer.headers(url, &bytes).await?,
            (Caller::Service, None) => Vec::new(),
        };
        let response = upstream::send(service, ctx.deadline, &self.retry, || {
            auth.iter().fold(
                self.http
                    .post(url)
                    .header(reqwest::header::CONTENT_TYPE, JSON)
                    .body(bytes.clone()),
                |request, (name, value)| request.header(name, value),
            )
        })
        .await?;
        let status = response.status();
        if status == reqwest::StatusCode::UNAUTHORIZED || status == reqwest::StatusCode::FORBIDDEN {
            // Our own route refusing our own credentials is a deployment error (a token
            // the route's authorizer does not accept, a role without `execute-api:Invoke`):
            // retrying, or trying another route, would only hide it.
            tracing::error!(
                service,
                status = status.as_u16(),
                caller = ctx.caller.kind(),
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
        let caller = Caller::User {
            authorization: SecretString::new("Bearer eyJ-user-token-value"),
        };
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
        let printed = format!("{caller:?} {signer:?}");
        for secret in [
            "eyJ-user-token-value",
            "example-secret-key-value",
            "session-token-value",
        ] {
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
            .headers("https://api.example.com/internal/kb/search", b"{}")
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
        assert!(authorization.contains("content-type"));
        assert!(!get("x-amz-date").is_empty());
        assert_eq!(get("x-amz-security-token"), "session");
        assert!(!format!("{signer:?}").contains("example-secret"));
    }
}
