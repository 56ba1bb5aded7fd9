//! One request to the MCP endpoint, in this order: the protected-resource document (no
//! token needed), the method and path, the body's size, the caller's token (so a caller
//! without one learns nothing else), the JSON-RPC framing, then the MCP transport.

use std::convert::Infallible;
use std::sync::Arc;
use tracing::Instrument;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use lambda_http::http::{Method, Response, StatusCode, header};
use lambda_http::request::RequestContext;
use lambda_http::{Body, Request, RequestExt};
use rmcp::transport::streamable_http_server::StreamableHttpService;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use serde_json::Value;
use shared::http::auth::{AuthenticatedUser, Authenticator};
use shared::http::error::{ApiError, ErrorCode};
use shared::http::user_id::valid_user_id;

use crate::config::CallerAuth;
use crate::jsonrpc;
use crate::protected::{self, Challenge};
use crate::server::McpTools;

pub type McpResponse = Response<BoxBody<Bytes, Infallible>>;

/// What a request needs, built once per container.
pub struct Deps {
    pub service: StreamableHttpService<McpTools, NeverSessionManager>,
    pub auth: Arc<Authenticator>,
    /// Whether the token or the Function URL's IAM authorization names the caller.
    pub caller_auth: CallerAuth,
    /// The function's public base URL (`MCP_PUBLIC_URL`); `None`: the request's `Host`.
    pub public_url: Option<reqwest::Url>,
    /// The token issuer, named in the protected-resource document.
    pub issuer: String,
    pub max_body_bytes: usize,
}

pub async fn handle(deps: &Deps, request: Request) -> McpResponse {
    let path = request.uri().path().to_owned();
    let Some(base) = public_base(deps, &request) else {
        return error(ApiError::new(
            ErrorCode::BadRequest,
            "the request names no host",
        ));
    };
    if request.method() == Method::GET && protected::metadata_paths().contains(&path) {
        return json(StatusCode::OK, &protected::document(&base, &deps.issuer));
    }
    if path.trim_end_matches('/') != protected::MCP_PATH {
        return error(ApiError::new(ErrorCode::NotFound, "no such route"));
    }
    if request.method() != Method::POST {
        return error(ApiError::new(ErrorCode::MethodNotAllowed, "POST only"))
            .map_with_header(header::ALLOW, "POST");
    }
    let body: &[u8] = match request.body() {
        Body::Empty => b"",
        Body::Text(text) => text.as_bytes(),
        Body::Binary(bytes) => bytes,
        _ => b"",
    };
    if body.len() > deps.max_body_bytes {
        return error(ApiError::payload_too_large());
    }
    let user = match deps.caller_auth {
        CallerAuth::Jwt => match bearer_user(deps, &request).await {
            Ok(user) => user,
            Err(reason) => {
                return error(ApiError::new(
                    ErrorCode::Unauthorized,
                    "a valid bearer token is required",
                ))
                .map_with_header(
                    header::WWW_AUTHENTICATE,
                    &protected::challenge(&base, reason),
                );
            }
        },
        CallerAuth::Iam => match iam_user(&request) {
            Some(user) => user,
            // The Function URL lets no unsigned request through; this is a misconfiguration.
            None => {
                tracing::error!("MCP_AUTH=iam but the request carries no IAM caller");
                return error(ApiError::new(
                    ErrorCode::Forbidden,
                    "this endpoint takes SigV4-signed requests only",
                ));
            }
        },
    };
    if let Err(refusal) = jsonrpc::check(body) {
        return json(StatusCode::BAD_REQUEST, &refusal.body());
    }
    // The call's trace span, a child of the client's `traceparent` when it sends one; its
    // spans (the tool call, the function it calls) go out before the response does.
    let traced = shared::telemetry::server_span("POST", protected::MCP_PATH, |name| {
        request
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    });
    let mut request = request;
    request.extensions_mut().insert(user);
    let response = deps
        .service
        .handle(request)
        .instrument(traced.clone())
        .await;
    shared::telemetry::record_status(&traced, response.status().as_u16());
    drop(traced);
    shared::telemetry::flush().await;
    response
}

/// The verified caller of the request's bearer token, or why there is none.
async fn bearer_user(deps: &Deps, request: &Request) -> Result<AuthenticatedUser, Challenge> {
    let authorization = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    deps.auth.authenticate(authorization).await.map_err(|e| {
        tracing::info!(error = %e, "MCP request refused: no valid token");
        if authorization.is_none() {
            Challenge::NoToken
        } else {
            Challenge::InvalidToken
        }
    })
}

/// The IAM principal the Function URL verified (`AuthType: AWS_IAM`): `iam:<its ARN>`, so
/// its calls have a ledger scope and limits of their own.
fn iam_user(request: &Request) -> Option<AuthenticatedUser> {
    // A Function URL's event has API Gateway's payload 2.0 shape, and is read as one.
    let Some(RequestContext::ApiGatewayV2(context)) = request.request_context_ref() else {
        return None;
    };
    let iam = context.authorizer.as_ref()?.iam.as_ref()?;
    let principal = iam.user_arn.as_deref().or(iam.caller_id.as_deref())?;
    let user_id = format!("iam:{principal}");
    valid_user_id(&user_id).then(|| AuthenticatedUser {
        user_id,
        groups: Vec::new(),
    })
}

/// The configured public URL, or `https://<Host>`: a Function URL's host is the function's
/// own (AWS routes by it), so a caller cannot point the document elsewhere.
fn public_base(deps: &Deps, request: &Request) -> Option<reqwest::Url> {
    if let Some(url) = &deps.public_url {
        return Some(url.clone());
    }
    let host = request.headers().get(header::HOST)?.to_str().ok()?;
    reqwest::Url::parse(&format!("https://{host}"))
        .ok()
        .filter(|url| url.path() == "/" && url.username().is_empty())
}

fn full(status: StatusCode, content_type: &str, body: String) -> McpResponse {
    let mut response = Response::new(Full::new(Bytes::from(body)).boxed());
    *response.status_mut() = status;
    if let Ok(value) = content_type.parse() {
        response.headers_mut().insert(header::CONTENT_TYPE, value);
    }
    response
}

fn json(status: StatusCode, body: &Value) -> McpResponse {
    full(status, "application/json", body.to_string())
}

/// The project's error envelope with its status.
fn error(err: ApiError) -> McpResponse {
    let status = StatusCode::from_u16(err.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    full(status, "application/json", err.body())
}

trait WithHeader {
    fn map_with_header(self, name: header::HeaderName, value: &str) -> Self;
}

impl WithHeader for McpResponse {
    fn map_with_header(mut self, name: header::HeaderName, value: &str) -> Self {
        if let Ok(value) = value.parse() {
            self.headers_mut().insert(name, value);
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use async_trait::async_trait;
    use serde_json::json;
    use shared::http::auth::{AuthConfig, DevClaims, KeySource, mint_hs256};
    use shared::secrets::{SecretSource, SecretString, SecretsCache};

    use super::*;
    use agent::llm::ToolSpec;

    const KEY: &str = "a-test-signing-key-that-is-long-enough-0123456789";
    const ISSUER: &str = "https://issuer.test/";
    const AUDIENCE: &str = "mcp-tests";

    /// The signing key, as Secrets Manager would hold it.
    struct Key;

    #[async_trait]
    impl SecretSource for Key {
        async fn fetch(&self, _: &str) -> shared::Result<SecretString> {
            Ok(SecretString::new(KEY))
        }
        async fn store(&self, _: &str, _: &str) -> shared::Result<()> {
            Ok(())
        }
    }

    fn deps() -> Deps {
        let config = AuthConfig {
            verifier: KeySource::SharedSecret {
                secret_name: "jwt".into(),
            },
            issuer: ISSUER.into(),
            audience: AUDIENCE.into(),
            leeway: Duration::from_secs(30),
            token_use: None,
        };
        let secrets = Arc::new(SecretsCache::new(Arc::new(Key), Duration::from_secs(60)));
        let auth = Authenticator::new(config, secrets, reqwest::Client::new());
        let served = crate::server::Served {
            tools: Arc::new(
                crate::listing::tool(
                    &ToolSpec {
                        name: "search_flights".into(),
                        description: "Search flights".into(),
                        parameters: json!({"type": "object"}).into(),
                    },
                    None,
                )
                .into_iter()
                .collect(),
            ),
            names: Arc::new(vec![shared::domain::tool_call::ToolName::SEARCH_FLIGHTS]),
            pipeline: None,
        };
        Deps {
            service: crate::server::service(served, Vec::new(), 1 << 20),
            auth: Arc::new(auth),
            caller_auth: CallerAuth::Jwt,
            public_url: None,
            issuer: ISSUER.into(),
            max_body_bytes: 1 << 16,
        }
    }

    fn token(audience: &str) -> String {
        let claims = DevClaims::new("user-1", ISSUER, audience, Duration::from_secs(600));
        mint_hs256(KEY, &claims).unwrap_or_else(|e| panic!("{e}"))
    }

    fn request(method: &str, path: &str, token: Option<&str>, body: &str) -> Request {
        let mut builder = lambda_http::http::Request::builder()
            .method(method)
            .uri(format!("https://mcp.example{path}"))
            .header("host", "mcp.example")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/list");
        if let Some(token) = token {
            builder = builder.header("authorization", format!("Bearer {token}"));
        }
        builder
            .body(Body::Text(body.to_owned()))
            .unwrap_or_else(|e| panic!("{e}"))
    }

    async fn send(request: Request) -> (u16, String, Value) {
        let response = handle(&deps(), request).await;
        let status = response.status().as_u16();
        let challenge = response
            .headers()
            .get(header::WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let (_, body) = test_support::json_response(response).await;
        (status, challenge, body)
    }

    const LIST: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{
        "io.modelcontextprotocol/protocolVersion":"2026-07-28",
        "io.modelcontextprotocol/clientCapabilities":{},
        "io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}}}"#;

    #[tokio::test]
    async fn the_metadata_is_public_and_a_401_points_to_it() {
        let (status, _, doc) = send(request(
            "GET",
            "/.well-known/oauth-protected-resource/mcp",
            None,
            "",
        ))
        .await;
        assert_eq!(status, 200);
        assert_eq!(doc["authorization_servers"], json!([ISSUER]));

        let (status, challenge, body) = send(request("POST", "/mcp", None, LIST)).await;
        assert_eq!(status, 401, "{body}");
        assert!(
            challenge.contains(
                "resource_metadata=\"https://mcp.example/.well-known/oauth-protected-resource/mcp\""
            ),
            "{challenge}"
        );
        assert!(!challenge.contains("invalid_token"));

        let mut expired = DevClaims::new("user-1", ISSUER, AUDIENCE, Duration::from_secs(600));
        expired.exp = expired.iat - 3600;
        let expired = mint_hs256(KEY, &expired).unwrap_or_else(|e| panic!("{e}"));
        for bad in [token("another-audience"), expired, "not.a.token".to_owned()] {
            let (status, challenge, _) = send(request("POST", "/mcp", Some(&bad), LIST)).await;
            assert_eq!(status, 401);
            assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");
        }
    }

    #[tokio::test]
    async fn a_valid_token_lists_the_tools_and_bad_framing_gets_json_rpc_errors() {
        let good = token(AUDIENCE);
        let (status, _, body) = send(request("POST", "/mcp", Some(&good), LIST)).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["result"]["tools"][0]["name"], json!("search_flights"));

        let (status, _, body) = send(request("POST", "/mcp", Some(&good), "{oops")).await;
        assert_eq!(
            (status, body["error"]["code"].clone()),
            (400, json!(-32700))
        );
        let (status, _, body) = send(request("POST", "/mcp", Some(&good), "[]")).await;
        assert_eq!(
            (status, body["error"]["code"].clone()),
            (400, json!(-32600))
        );

        let (status, _, _) = send(request("GET", "/mcp", Some(&good), "")).await;
        assert_eq!(status, 405);
        let (status, _, _) = send(request("POST", "/other", Some(&good), LIST)).await;
        assert_eq!(status, 404);
        let big = " ".repeat((1 << 16) + 1);
        let (status, _, _) = send(request("POST", "/mcp", Some(&good), &big)).await;
        assert_eq!(status, 413);
    }

    /// The deploy hook invokes each new version with these (functions/deploy-hook).
    #[tokio::test]
    async fn sample_events_get_their_status() {
        for event in test_support::sample_events("mcp-server") {
            let request = lambda_http::request::from_str(&event.text)
                .unwrap_or_else(|e| panic!("{}: {e}", event.name));
            let (status, _, body) = send(request).await;
            assert_eq!(status, event.expected_status, "{}: {body}", event.name);
        }
    }

    /// With `MCP_AUTH=iam` the Function URL's verified principal is the caller; a request
    /// without one (never let through by an IAM Function URL) is refused, not served.
    #[tokio::test]
    async fn with_iam_the_signed_principal_is_the_caller() {
        let mut deps = deps();
        deps.caller_auth = CallerAuth::Iam;
        let event = |authorizer: Value| {
            let text = std::fs::read_to_string(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../events/mcp-server/tools-list-no-token-401.json"
            ))
            .unwrap_or_else(|e| panic!("{e}"));
            let mut event: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
            event["requestContext"]["authorizer"] = authorizer;
            lambda_http::request::from_str(&event.to_string()).unwrap_or_else(|e| panic!("{e}"))
        };
        let signed = event(json!({"iam": {
            "accessKey": "AKIAEXAMPLE", "accountId": "123456789012",
            "callerId": "AROAEXAMPLE:agent", "userId": "AROAEXAMPLE:agent",
            "userArn": "arn:aws:sts::123456789012:assumed-role/agent-role/agent"}}));
        let response = handle(&deps, signed).await;
        assert_eq!(response.status(), 200);
        let response = handle(&deps, event(Value::Null)).await;
        assert_eq!(response.status(), 403);
    }
}
