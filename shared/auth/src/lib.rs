//! Bearer-token authentication (docs/api.md, docs/security.md).
//!
//! A caller sends `Authorization: Bearer <JWT>`. The token is verified either with an HS256
//! shared secret read from Secrets Manager (`JWT_SECRET_NAME`) or with the RS256/ES256 public
//! keys an identity provider publishes as a JWKS (`JWT_JWKS_URL`: Cognito, Supabase, Auth0).
//! Issuer and audience must match, `exp` is required and checked with a small leeway, `nbf`
//! is honoured when present, and the user id is the non-empty `sub` claim. With a Cognito
//! issuer the `token_use` claim must name the configured token type (`JWT_TOKEN_USE`).
//!
//! A bad token is [`Error::Unauthorized`] with a short reason that is safe to show ("token
//! expired", "wrong audience", ...); it never quotes the token. Failing to reach Secrets
//! Manager or the JWKS endpoint is our fault, not the caller's, and stays a 5xx-class error.

#![deny(missing_docs)]

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, KeyAlgorithm, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

use domain::{Error, Result};
use lambda_kit::config::Env;
use lambda_kit::metrics::Metrics;
use lambda_kit::secrets::SecretsCache;
use lambda_kit::upstream::{self, RetryPolicy};

/// Default clock-skew allowance for `exp` and `nbf` (`JWT_LEEWAY_SECS`).
pub const DEFAULT_LEEWAY_SECS: u64 = 30;
/// Largest accepted `JWT_LEEWAY_SECS`: more would let expired tokens through for long.
pub const MAX_LEEWAY_SECS: u64 = 300;
/// Default lifetime of fetched JWKS keys (`JWT_JWKS_CACHE_SECS`).
pub const DEFAULT_JWKS_CACHE_SECS: u64 = 3600;
/// Largest accepted `JWT_JWKS_CACHE_SECS`: keys removed by the IdP must stop working in time.
pub const MAX_JWKS_CACHE_SECS: u64 = 86_400;
/// A token with an unknown `kid` triggers a JWKS refetch at most this often, so tokens with
/// random key ids cannot turn us into a load generator against the identity provider.
pub const UNKNOWN_KID_REFETCH_INTERVAL: Duration = Duration::from_secs(60);
/// RFC 7518 §3.2: an HS256 key must be at least as long as the hash output (256 bits).
pub const MIN_HS256_SECRET_BYTES: usize = 32;

/// Everything a JWKS fetch may take, retries included; a user is waiting.
const JWKS_DEADLINE: Duration = Duration::from_secs(3);
const JWKS_RETRY: RetryPolicy = RetryPolicy {
    max_attempts: 2,
    base_delay: Duration::from_millis(100),
    max_delay: Duration::from_millis(500),
    attempt_timeout: Duration::from_secs(2),
};
/// After a failed refresh, expired keys keep working this long before the next try.
const STALE_RETRY_AFTER: Duration = Duration::from_secs(60);
/// How long past their TTL keys stay in use, and only while refreshing them fails: short,
/// because a key the identity provider withdrew keeps verifying during that time.
const STALE_GRACE: Duration = Duration::from_secs(300);
const JWKS_SERVICE: &str = "jwks";
/// Real tokens are a few KiB at most; anything larger is not worth decoding.
pub const MAX_TOKEN_BYTES: usize = 16 * 1024;

/// Where the keys that verify user tokens come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    /// HS256 with a shared secret: the raw text of the Secrets Manager secret named
    /// `secret_name` is the key (not JSON, not base64-decoded), at least
    /// [`MIN_HS256_SECRET_BYTES`] long.
    SharedSecret {
        /// The secret's name in Secrets Manager.
        secret_name: String,
    },
    /// RS256 or ES256 with the keys of an identity provider's JWKS, kept for `cache_ttl`.
    Jwks {
        /// The identity provider's JWKS URL.
        url: String,
        /// How long fetched keys are kept.
        cache_ttl: Duration,
    },
}

/// Which Cognito token callers must send: the value its `token_use` claim must have
/// (`JWT_TOKEN_USE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenUse {
    /// The ID token (`token_use: "id"`); its `aud` is the app client id.
    Id,
    /// The access token (`token_use: "access"`); Cognito gives it no `aud`, so its
    /// `client_id` is checked against the audience instead.
    Access,
}

impl TokenUse {
    /// The claim's value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Id => "id",
            Self::Access => "access",
        }
    }

    fn parse(value: &str) -> Option<Self> {
        match value.trim() {
            "id" => Some(Self::Id),
            "access" => Some(Self::Access),
            _ => None,
        }
    }

    /// The reason shown for a token without the expected `token_use`.
    fn rejection(self) -> &'static str {
        match self {
            Self::Id => "wrong token type: send the ID token",
            Self::Access => "wrong token type: send the access token",
        }
    }
}

/// Whether `issuer` is a Cognito user pool (`https://cognito-idp.<region>.amazonaws.com/<pool>`).
pub fn is_cognito_issuer(issuer: &str) -> bool {
    reqwest::Url::parse(issuer).is_ok_and(|url| {
        url.scheme() == "https"
            && url.host_str().is_some_and(|host| {
                host.starts_with("cognito-idp.")
                    && (host.ends_with(".amazonaws.com") || host.ends_with(".amazonaws.com.cn"))
            })
    })
}

/// How user tokens are verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthConfig {
    /// Where the verifying keys come from.
    pub verifier: KeySource,
    /// The exact `iss` every token must carry (`JWT_ISSUER`).
    pub issuer: String,
    /// A value the token's `aud` must contain (`JWT_AUDIENCE`).
    pub audience: String,
    /// Clock-skew allowance for `exp` and `nbf` (`JWT_LEEWAY_SECS`, default 30).
    pub leeway: Duration,
    /// The `token_use` every token must carry (`JWT_TOKEN_USE`; unset: `id` for a Cognito
    /// issuer, else no check).
    pub token_use: Option<TokenUse>,
}

impl AuthConfig {
    /// Reads `JWT_SECRET_NAME` or `JWT_JWKS_URL` (exactly one), `JWT_ISSUER`, `JWT_AUDIENCE`
    /// and the optional `JWT_LEEWAY_SECS`, `JWT_JWKS_CACHE_SECS` and `JWT_TOKEN_USE`; every
    /// problem is reported in one `Error::Config`.
    pub fn from_env(env: &Env) -> Result<Self> {
        let mut r = env.reader();
        // Empty counts as unset: the SAM template sets the one not in use to "".
        let secret_name = r
            .optional("JWT_SECRET_NAME")
            .filter(|v| !v.trim().is_empty());
        let jwks_url = r.optional("JWT_JWKS_URL").filter(|v| !v.trim().is_empty());
        let issuer = r.required(
            "JWT_ISSUER",
            "the `iss` of user tokens, e.g. the Cognito user pool or Auth0 tenant URL",
        );
        let audience = r.required(
            "JWT_AUDIENCE",
            "the `aud` of user tokens, e.g. the app client id",
        );
        let leeway_secs: u64 = r.parse_or("JWT_LEEWAY_SECS", DEFAULT_LEEWAY_SECS);
        let cache_secs: u64 = r.parse_or("JWT_JWKS_CACHE_SECS", DEFAULT_JWKS_CACHE_SECS);
        let token_use_value = r.optional("JWT_TOKEN_USE").filter(|v| !v.trim().is_empty());

        // The reader cannot take problems of our own, so ours are merged into its error.
        let mut problems = Vec::new();
        if leeway_secs > MAX_LEEWAY_SECS {
            problems.push(format!(
                "JWT_LEEWAY_SECS={leeway_secs} is too large (at most {MAX_LEEWAY_SECS})"
            ));
        }
        if cache_secs == 0 || cache_secs > MAX_JWKS_CACHE_SECS {
            problems.push(format!(
                "JWT_JWKS_CACHE_SECS={cache_secs} is out of range (1..={MAX_JWKS_CACHE_SECS})"
            ));
        }
        let token_use = token_use(token_use_value, &issuer, &mut problems);
        let verifier = key_source(secret_name, jwks_url, cache_secs, &mut problems);

        match r.finish(()) {
            Err(Error::Config(reader_problems)) => problems.insert(0, reader_problems),
            Err(other) => return Err(other),
            Ok(()) => {}
        }
        match verifier {
            Some(verifier) if problems.is_empty() => Ok(Self {
                verifier,
                issuer,
                audience,
                leeway: Duration::from_secs(leeway_secs),
                token_use,
            }),
            _ => Err(Error::Config(problems.join("; "))),
        }
    }
}

/// `JWT_TOKEN_USE` as configured, else `id` for a Cognito issuer; a bad value is a problem.
fn token_use(value: Option<String>, issuer: &str, problems: &mut Vec<String>) -> Option<TokenUse> {
    match value {
        Some(value) => {
            let parsed = TokenUse::parse(&value);
            if parsed.is_none() {
                problems.push(format!(
                    "JWT_TOKEN_USE={value:?} is neither `id` nor `access` (the `token_use` \
                     claim of the Cognito token callers send)"
                ));
            }
            parsed
        }
        None if is_cognito_issuer(issuer) => Some(TokenUse::Id),
        None => None,
    }
}

/// Where the keys come from: exactly one of `JWT_SECRET_NAME` and an http(s) `JWT_JWKS_URL`.
fn key_source(
    secret_name: Option<String>,
    jwks_url: Option<String>,
    cache_secs: u64,
    problems: &mut Vec<String>,
) -> Option<KeySource> {
    const EITHER: &str =
        "set exactly one (an HS256 secret in Secrets Manager, or an identity provider's JWKS URL)";
    match (secret_name, jwks_url) {
        (Some(secret_name), None) => Some(KeySource::SharedSecret { secret_name }),
        (None, Some(url)) => match reqwest::Url::parse(&url) {
            Ok(parsed) if matches!(parsed.scheme(), "https" | "http") => Some(KeySource::Jwks {
                url,
                cache_ttl: Duration::from_secs(cache_secs),
            }),
            _ => {
                problems.push(format!(
                    "JWT_JWKS_URL={url:?} is not an http(s) URL (the identity provider's \
                     JWKS, e.g. https://<issuer>/.well-known/jwks.json)"
                ));
                None
            }
        },
        (Some(_), Some(_)) => {
            problems.push(format!(
                "JWT_SECRET_NAME and JWT_JWKS_URL are both set; {EITHER}"
            ));
            None
        }
        (None, None) => {
            problems.push(format!(
                "neither JWT_SECRET_NAME nor JWT_JWKS_URL is set; {EITHER}"
            ));
            None
        }
    }
}

/// The caller behind a verified token. The token itself is not kept: it goes nowhere.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthenticatedUser {
    /// The token's `sub` claim.
    pub user_id: String,
    /// The token's groups (`cognito:groups`, or a `groups` claim): privileges such as debug
    /// events are granted by group.
    pub groups: Vec<String>,
}

/// Verifies bearer tokens. Build one per container and share it: the JWKS cache lives in it.
pub struct Authenticator {
    /// Counts rejected tokens (`AuthFailures` by reason).
    metrics: Metrics,
    issuer: String,
    audience: String,
    leeway: Duration,
    token_use: Option<TokenUse>,
    keys: Keys,
}

enum Keys {
    SharedSecret {
        secret_name: String,
        secrets: Arc<SecretsCache>,
    },
    Jwks(JwksCache),
}

impl Authenticator {
    /// `secrets` is used only with [`KeySource::SharedSecret`], `http` only with
    /// [`KeySource::Jwks`].
    pub fn new(config: AuthConfig, secrets: Arc<SecretsCache>, http: reqwest::Client) -> Self {
        let keys = match config.verifier {
            KeySource::SharedSecret { secret_name } => Keys::SharedSecret {
                secret_name,
                secrets,
            },
            KeySource::Jwks { url, cache_ttl } => Keys::Jwks(JwksCache::new(url, http, cache_ttl)),
        };
        Self {
            metrics: Metrics::discard(),
            issuer: config.issuer,
            audience: config.audience,
            // Also bounds hand-built configs: jsonwebtoken subtracts the leeway from "now".
            leeway: config.leeway.min(Duration::from_secs(MAX_LEEWAY_SECS)),
            token_use: config.token_use,
            keys,
        }
    }

    /// Rejected tokens counted in `metrics`.
    pub fn with_metrics(mut self, metrics: Metrics) -> Self {
        self.metrics = metrics;
        self
    }

    /// Verifies the `Authorization` header's bearer token. A bad or missing token is
    /// `Error::Unauthorized` (401); an unreachable key source is an upstream or secrets error.
    pub async fn authenticate(&self, authorization: Option<&str>) -> Result<AuthenticatedUser> {
        let result = self.verify(authorization).await;
        if let Err(Error::Unauthorized(reason)) = &result {
            tracing::info!(reason, "bearer token rejected");
            self.metrics.auth_failure(reason);
        }
        result
    }

    async fn verify(&self, authorization: Option<&str>) -> Result<AuthenticatedUser> {
        let token = bearer_token(authorization)?;
        let header = token_header(token)?;
        let (algorithm, key) = match &self.keys {
            Keys::SharedSecret {
                secret_name,
                secrets,
            } => {
                // Only HS256: anything else under a shared secret is a confused or forged token.
                if header.alg != "HS256" {
                    return Err(unauthorized("unsupported algorithm"));
                }
                let secret = secrets.get(secret_name).await?;
                check_secret_length(secret.expose()).map_err(|message| Error::Secret {
                    name: secret_name.clone(),
                    message,
                })?;
                let key = DecodingKey::from_secret(secret.expose().as_bytes());
                (Algorithm::HS256, Arc::new(key))
            }
            Keys::Jwks(cache) => {
                // No HS* here: an HMAC token "signed" with a public key is algorithm confusion.
                let algorithm = match header.alg.as_str() {
                    "RS256" => Algorithm::RS256,
                    "ES256" => Algorithm::ES256,
                    _ => return Err(unauthorized("unsupported algorithm")),
                };
                let kid = header
                    .kid
                    .as_deref()
                    .filter(|kid| !kid.is_empty())
                    .ok_or_else(|| unauthorized("unknown signing key"))?;
                let key = cache
                    .key(kid)
                    .await?
                    .ok_or_else(|| unauthorized("unknown signing key"))?;
                if key.algorithm != algorithm {
                    return Err(unauthorized("invalid signature"));
                }
                (algorithm, Arc::clone(&key.key))
            }
        };

        let mut validation = Validation::new(algorithm);
        validation.set_issuer(&[&self.issuer]);
        // The audience is checked below, after `token_use`: a Cognito access token has no
        // `aud`, and "wrong token type" tells its sender more than "wrong audience".
        validation.validate_aud = false;
        validation.set_required_spec_claims(&["exp", "iss", "sub"]);
        validation.leeway = self.leeway.as_secs();
        validation.validate_exp = true;
        validation.validate_nbf = true;

        let data = jsonwebtoken::decode::<Claims>(token, &key, &validation)
            .map_err(|e| unauthorized(rejection(e.kind())))?;
        let claims = data.claims;
        if let Some(expected) = self.token_use
            && claims.token_use.as_deref() != Some(expected.as_str())
        {
            return Err(unauthorized(expected.rejection()));
        }
        if !claims.audience_matches(&self.audience, self.token_use) {
            return Err(unauthorized("wrong audience"));
        }
        let groups = claims.groups();
        let user_id = claims
            .sub
            .filter(|sub| !sub.trim().is_empty())
            .ok_or_else(|| unauthorized("missing subject"))?;
        // The same rule as the tool functions' `x-tool-user`: a subject they would refuse
        // would fail every tool call of every turn.
        if !lambda_kit::http::user_id::valid_user_id(&user_id) {
            return Err(Error::Unauthorized(format!(
                "subject is not a usable user id ({})",
                lambda_kit::http::user_id::USER_ID_RULE
            )));
        }
        Ok(AuthenticatedUser { user_id, groups })
    }
}

/// Claims for local development and tests, signed by [`mint_hs256`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DevClaims {
    /// The user's id.
    pub sub: String,
    /// The issuer the router expects (`JWT_ISSUER`).
    pub iss: String,
    /// The audience the router expects (`JWT_AUDIENCE`).
    pub aud: String,
    /// Expiry, seconds since the Unix epoch.
    pub exp: i64,
    /// Issue time, seconds since the Unix epoch.
    pub iat: i64,
    /// Cognito's group claim, as a user pool sets it.
    #[serde(
        default,
        rename = "cognito:groups",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub groups: Vec<String>,
}

impl DevClaims {
    /// Claims issued now and valid for `lifetime`.
    pub fn new(
        sub: impl Into<String>,
        iss: impl Into<String>,
        aud: impl Into<String>,
        lifetime: Duration,
    ) -> Self {
        let now = unix_now();
        let lifetime = i64::try_from(lifetime.as_secs()).unwrap_or(i64::MAX);
        Self {
            sub: sub.into(),
            iss: iss.into(),
            aud: aud.into(),
            exp: now.saturating_add(lifetime),
            iat: now,
            groups: Vec::new(),
        }
    }
}

/// Signs `claims` as an HS256 token with `secret` (its raw bytes, as [`Authenticator`] reads
/// the secret). For the local stack's chat client and tests; production tokens come from the
/// identity provider.
pub fn mint_hs256(secret: &str, claims: &DevClaims) -> Result<String> {
    check_secret_length(secret).map_err(Error::Invalid)?;
    jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        claims,
        &EncodingKey::from_secret(secret.as_bytes()),
    )
    .map_err(|e| Error::Invalid(format!("signing the token failed: {e}")))
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

fn check_secret_length(secret: &str) -> std::result::Result<(), String> {
    if secret.len() < MIN_HS256_SECRET_BYTES {
        return Err(format!(
            "the HS256 secret is shorter than {MIN_HS256_SECRET_BYTES} bytes (RFC 7518 §3.2)"
        ));
    }
    Ok(())
}

fn unauthorized(reason: &str) -> Error {
    Error::Unauthorized(reason.to_owned())
}

/// The token of an `Authorization: Bearer <token>` header (scheme case-insensitive).
fn bearer_token(authorization: Option<&str>) -> Result<&str> {
    let value = authorization.unwrap_or_default().trim();
    let (scheme, token) = value
        .split_once(|c: char| c.is_ascii_whitespace())
        .unwrap_or((value, ""));
    let token = token.trim();
    if !scheme.eq_ignore_ascii_case("bearer") || token.is_empty() {
        return Err(unauthorized("missing bearer token"));
    }
    Ok(token)
}

/// The JOSE header fields we choose by. Read by hand because jsonwebtoken's `Header` cannot
/// represent `alg: none` or algorithms it lacks, which must read "unsupported algorithm".
#[derive(Debug, Deserialize)]
struct RawHeader {
    alg: String,
    #[serde(default)]
    kid: Option<String>,
}

fn token_header(token: &str) -> Result<RawHeader> {
    let malformed = || unauthorized("malformed token");
    if token.len() > MAX_TOKEN_BYTES {
        return Err(malformed());
    }
    let mut parts = token.split('.');
    let (Some(header), Some(_), Some(_), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(malformed());
    };
    let bytes = URL_SAFE_NO_PAD.decode(header).map_err(|_| malformed())?;
    serde_json::from_slice(&bytes).map_err(|_| malformed())
}

#[derive(Deserialize)]
struct Claims {
    #[serde(default)]
    sub: Option<String>,
    /// A string or an array of strings; anything else matches no audience.
    #[serde(default)]
    aud: Option<serde_json::Value>,
    /// Cognito: `id` or `access`.
    #[serde(default)]
    token_use: Option<String>,
    /// Cognito access tokens name the app client here instead of in `aud`.
    #[serde(default)]
    client_id: Option<String>,
    /// Read leniently: a malformed group claim grants nothing but does not fail the token.
    #[serde(default, rename = "cognito:groups")]
    cognito_groups: Option<serde_json::Value>,
    #[serde(default)]
    groups: Option<serde_json::Value>,
}

impl Claims {
    /// `aud` must be or contain `audience`. A Cognito access token has no `aud`: then its
    /// `client_id` must be `audience`, as API Gateway's JWT authorizers check it.
    fn audience_matches(&self, audience: &str, token_use: Option<TokenUse>) -> bool {
        match &self.aud {
            Some(serde_json::Value::String(aud)) => aud == audience,
            Some(serde_json::Value::Array(auds)) => {
                auds.iter().any(|aud| aud.as_str() == Some(audience))
            }
            Some(_) => false,
            None => {
                token_use == Some(TokenUse::Access) && self.client_id.as_deref() == Some(audience)
            }
        }
    }

    fn groups(&self) -> Vec<String> {
        [&self.cognito_groups, &self.groups]
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_array())
            .flatten()
            .filter_map(|g| g.as_str())
            .map(str::to_owned)
            .collect()
    }
}

/// The reason shown for a failed verification.
fn rejection(kind: &ErrorKind) -> &'static str {
    match kind {
        ErrorKind::ExpiredSignature => "token expired",
        ErrorKind::ImmatureSignature => "token not yet valid",
        ErrorKind::InvalidIssuer => "wrong issuer",
        ErrorKind::InvalidAudience => "wrong audience",
        ErrorKind::MissingRequiredClaim(claim) => match claim.as_str() {
            "iss" => "wrong issuer",
            "aud" => "wrong audience",
            "sub" => "missing subject",
            _ => "malformed token",
        },
        ErrorKind::InvalidAlgorithm | ErrorKind::MissingAlgorithm => "unsupported algorithm",
        // A published key that cannot verify this token (wrong curve, broken modulus)
        // means the signature cannot be valid.
        ErrorKind::InvalidSignature
        | ErrorKind::InvalidKeyFormat
        | ErrorKind::InvalidEcdsaKey
        | ErrorKind::InvalidRsaKey(_) => "invalid signature",
        _ => "malformed token",
    }
}

/// A usable key from the JWKS and the one algorithm it verifies.
struct JwksKey {
    algorithm: Algorithm,
    key: Arc<DecodingKey>,
}

struct KeySet {
    keys: Arc<HashMap<String, Arc<JwksKey>>>,
    /// When the fetch that produced these keys finished: a request that arrived before then
    /// (while it waited for that fetch) gains nothing from fetching again.
    fetched_at: Instant,
    fresh_until: Instant,
    /// The end of the grace during which these keys serve if refreshing them fails.
    usable_until: Instant,
}

impl KeySet {
    fn get(&self, kid: &str) -> Option<Arc<JwksKey>> {
        self.keys.get(kid).cloned()
    }
}

/// The time the JWKS cache goes by; tests move it forward.
type Clock = Box<dyn Fn() -> Instant + Send + Sync>;

/// JWKS keys by `kid`, refreshed after a TTL and (throttled) on an unknown `kid`.
struct JwksCache {
    url: String,
    http: reqwest::Client,
    ttl: Duration,
    clock: Clock,
    current: RwLock<Option<Arc<KeySet>>>,
    /// Held across a fetch, so concurrent cold requests wait for one fetch instead of each
    /// making their own.
    refresh: tokio::sync::Mutex<RefreshState>,
}

#[derive(Default)]
struct RefreshState {
    last_unknown_kid_refetch: Option<Instant>,
    /// The last failed fetch: requests that waited for it share its error instead of each
    /// trying again (one after the other, up to [`JWKS_DEADLINE`] each).
    last_failure: Option<(Instant, Error)>,
}

/// A copy of a fetch error for the requests that waited for that fetch.
fn fetch_error_copy(err: &Error) -> Error {
    match err {
        Error::UpstreamTimeout { service } => Error::UpstreamTimeout { service },
        Error::Upstream { service, message } => Error::Upstream {
            service,
            message: message.clone(),
        },
        Error::UpstreamUnavailable { service, message } => Error::UpstreamUnavailable {
            service,
            message: message.clone(),
        },
        other => Error::Upstream {
            service: JWKS_SERVICE,
            message: other.to_string(),
        },
    }
}

impl JwksCache {
    fn new(url: String, http: reqwest::Client, ttl: Duration) -> Self {
        Self::with_clock(url, http, ttl, Box::new(Instant::now))
    }

    fn with_clock(url: String, http: reqwest::Client, ttl: Duration, clock: Clock) -> Self {
        Self {
            url,
            http,
            ttl: ttl.clamp(
                Duration::from_secs(1),
                Duration::from_secs(MAX_JWKS_CACHE_SECS),
            ),
            clock,
            current: RwLock::new(None),
            refresh: tokio::sync::Mutex::new(RefreshState::default()),
        }
    }

    fn now(&self) -> Instant {
        (self.clock)()
    }

    fn snapshot(&self) -> Option<Arc<KeySet>> {
        self.current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn store(&self, set: KeySet) {
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = Some(Arc::new(set));
    }

    /// The key for `kid`; `None` when the identity provider does not publish it.
    async fn key(&self, kid: &str) -> Result<Option<Arc<JwksKey>>> {
        let arrived = self.now();
        if let Some(set) = self.snapshot().filter(|set| arrived < set.fresh_until)
            && let Some(key) = set.get(kid)
        {
            return Ok(Some(key));
        }

        let mut state = self.refresh.lock().await;
        let now = self.now();
        let current = self.snapshot();
        if let Some(set) = current.as_ref().filter(|set| now < set.fresh_until) {
            if let Some(key) = set.get(kid) {
                return Ok(Some(key));
            }
            // This request waited for a fetch that ended after it arrived: those keys are as
            // new as a refetch would get.
            if set.fetched_at >= arrived {
                return Ok(None);
            }
            if state
                .last_unknown_kid_refetch
                .is_some_and(|at| now.duration_since(at) < UNKNOWN_KID_REFETCH_INTERVAL)
            {
                return Ok(None);
            }
            // The IdP may have rotated its keys since our last fetch.
            state.last_unknown_kid_refetch = Some(now);
            let fresh = self.fetch().await?;
            let key = fresh.get(kid);
            self.store(fresh);
            return Ok(key);
        }

        // Cold, or the TTL ran out.
        if let Some((_, err)) = state.last_failure.as_ref().filter(|(at, _)| *at >= arrived) {
            return Err(fetch_error_copy(err));
        }
        match self.fetch().await {
            Ok(fresh) => {
                let key = fresh.get(kid);
                self.store(fresh);
                Ok(key)
            }
            Err(err) => {
                state.last_failure = Some((self.now(), fetch_error_copy(&err)));
                // An IdP outage should not lock every user out: while refreshing fails, keys
                // stay in use up to STALE_GRACE past their TTL, retried every
                // STALE_RETRY_AFTER, before the error reaches callers. A refresh that
                // succeeds replaces them at once.
                match current {
                    Some(stale) if now < stale.usable_until => {
                        tracing::warn!(error = %err, "JWKS refresh failed; using the previous keys");
                        let key = stale.get(kid);
                        self.store(KeySet {
                            keys: Arc::clone(&stale.keys),
                            fetched_at: stale.fetched_at,
                            fresh_until: (now + STALE_RETRY_AFTER).min(stale.usable_until),
                            usable_until: stale.usable_until,
                        });
                        Ok(key)
                    }
                    _ => Err(err),
                }
            }
        }
    }

    async fn fetch(&self) -> Result<KeySet> {
        let started = Instant::now();
        let response = upstream::send(JWKS_SERVICE, started + JWKS_DEADLINE, &JWKS_RETRY, || {
            self.http
                .get(&self.url)
                .header(reqwest::header::ACCEPT, "application/json")
        })
        .await?;
        let raw: RawJwks =
            upstream::read_json(JWKS_SERVICE, response)
                .await
                .map_err(|e| match e {
                    // A 4xx from the JWKS endpoint is our misconfiguration, not the caller's.
                    Error::UpstreamRejected { status, .. } => Error::Upstream {
                        service: JWKS_SERVICE,
                        message: format!("HTTP {status}"),
                    },
                    other => other,
                })?;
        let keys = usable_keys(raw);
        tracing::info!(keys = keys.len(), "fetched the JWKS");
        let fetched_at = self.now();
        let fresh_until = fetched_at + self.ttl;
        Ok(KeySet {
            keys: Arc::new(keys),
            fetched_at,
            fresh_until,
            usable_until: fresh_until + STALE_GRACE,
        })
    }
}

/// Keys are parsed one by one so that one exotic key does not make the whole set unusable.
#[derive(Deserialize)]
struct RawJwks {
    keys: Vec<serde_json::Value>,
}

/// The signing keys we can use, by `kid`: RSA for RS256 and P-256 for ES256. Encryption
/// keys, keys without a `kid` and keys declared for another algorithm are skipped.
fn usable_keys(raw: RawJwks) -> HashMap<String, Arc<JwksKey>> {
    raw.keys
        .into_iter()
        .filter_map(|value| {
            let jwk: Jwk = serde_json::from_value(value).ok()?;
            let kid = jwk.common.key_id.clone().filter(|kid| !kid.is_empty())?;
            if jwk
                .common
                .public_key_use
                .as_ref()
                .is_some_and(|usage| *usage != PublicKeyUse::Signature)
            {
                return None;
            }
            let algorithm = match &jwk.algorithm {
                AlgorithmParameters::RSA(_) => Algorithm::RS256,
                AlgorithmParameters::EllipticCurve(ec) if ec.curve == EllipticCurve::P256 => {
                    Algorithm::ES256
                }
                _ => return None,
            };
            let declared_ok = match jwk.common.key_algorithm {
                None => true,
                Some(KeyAlgorithm::RS256) => algorithm == Algorithm::RS256,
                Some(KeyAlgorithm::ES256) => algorithm == Algorithm::ES256,
                Some(_) => false,
            };
            if !declared_ok {
                return None;
            }
            let key = DecodingKey::from_jwk(&jwk).ok()?;
            Some((
                kid,
                Arc::new(JwksKey {
                    algorithm,
                    key: Arc::new(key),
                }),
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn reason(result: Result<impl std::fmt::Debug>) -> String {
        match result {
            Err(Error::Unauthorized(reason)) => reason,
            other => format!("not unauthorized: {other:?}"),
        }
    }

    #[test]
    fn bearer_scheme_is_case_insensitive_and_trimmed() {
        assert_eq!(bearer_token(Some("Bearer abc")).ok(), Some("abc"));
        assert_eq!(bearer_token(Some("  bearer \t abc  ")).ok(), Some("abc"));
        assert_eq!(bearer_token(Some("BEARER abc")).ok(), Some("abc"));
        for header in [
            None,
            Some(""),
            Some("Bearer"),
            Some("Bearer   "),
            Some("Basic abc"),
        ] {
            assert_eq!(
                reason(bearer_token(header)),
                "missing bearer token",
                "{header:?}"
            );
        }
    }

    fn encode_header(header: serde_json::Value) -> String {
        format!("{}.e30.c2ln", URL_SAFE_NO_PAD.encode(header.to_string()))
    }

    #[test]
    fn headers() {
        let header = token_header(&encode_header(json!({"alg": "none"})));
        assert_eq!(header.map(|h| h.alg).ok().as_deref(), Some("none"));
        let header = token_header(&encode_header(json!({"alg": "RS256", "kid": "k1"})));
        assert_eq!(header.ok().and_then(|h| h.kid).as_deref(), Some("k1"));
        for garbage in ["", "abc", "a.b", "a.b.c.d", "!!!.e30.c2ln", "e30.e30.c2ln"] {
            assert_eq!(
                reason(token_header(garbage)),
                "malformed token",
                "{garbage}"
            );
        }
        assert_eq!(
            reason(token_header(&"a".repeat(MAX_TOKEN_BYTES + 1))),
            "malformed token"
        );
    }

    fn jwt_env(extra: &[(&str, &str)]) -> Env {
        let mut pairs = vec![
            ("JWT_ISSUER", "https://issuer.example"),
            ("JWT_AUDIENCE", "chat"),
        ];
        pairs.extend_from_slice(extra);
        Env::from_pairs(pairs)
    }

    fn config_error(env: &Env) -> String {
        match AuthConfig::from_env(env) {
            Err(Error::Config(message)) => message,
            other => format!("not a config error: {other:?}"),
        }
    }

    #[test]
    fn config_from_env() {
        let config = AuthConfig::from_env(&jwt_env(&[("JWT_SECRET_NAME", "stack/jwt")])).ok();
        assert_eq!(
            config,
            Some(AuthConfig {
                verifier: KeySource::SharedSecret {
                    secret_name: "stack/jwt".into()
                },
                issuer: "https://issuer.example".into(),
                audience: "chat".into(),
                leeway: Duration::from_secs(DEFAULT_LEEWAY_SECS),
                token_use: None,
            })
        );

        let env = jwt_env(&[
            (
                "JWT_JWKS_URL",
                "https://issuer.example/.well-known/jwks.json",
            ),
            ("JWT_LEEWAY_SECS", "5"),
            ("JWT_JWKS_CACHE_SECS", "600"),
        ]);
        let config = AuthConfig::from_env(&env).ok();
        assert_eq!(
            config.as_ref().map(|c| &c.verifier),
            Some(&KeySource::Jwks {
                url: "https://issuer.example/.well-known/jwks.json".into(),
                cache_ttl: Duration::from_secs(600),
            })
        );
        assert_eq!(config.map(|c| c.leeway), Some(Duration::from_secs(5)));
    }

    #[test]
    fn cognito_issuers() {
        for issuer in [
            "https://cognito-idp.eu-central-1.amazonaws.com/eu-central-1_AbC123",
            "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_EXAMPLE",
            "https://cognito-idp.cn-north-1.amazonaws.com.cn/cn-north-1_X",
        ] {
            assert!(is_cognito_issuer(issuer), "{issuer}");
        }
        for issuer in [
            "http://127.0.0.1/dev",
            "https://tenant.eu.auth0.com/",
            "https://abc.supabase.co/auth/v1",
            "http://cognito-idp.us-east-1.amazonaws.com/us-east-1_X",
            "https://cognito-idp.us-east-1.amazonaws.com.evil.example/x",
            "https://evil.example/cognito-idp.us-east-1.amazonaws.com",
            "not a url",
        ] {
            assert!(!is_cognito_issuer(issuer), "{issuer}");
        }
    }

    #[test]
    fn token_use_from_env() {
        let token_use = |pairs: &[(&str, &str)]| {
            let mut pairs = pairs.to_vec();
            pairs.push(("JWT_SECRET_NAME", "stack/jwt"));
            pairs.push(("JWT_AUDIENCE", "chat"));
            AuthConfig::from_env(&Env::from_pairs(pairs)).map(|c| c.token_use)
        };
        let cognito = "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_EXAMPLE";
        // Cognito: ID tokens unless told otherwise (what the README's walkthrough sends).
        assert_eq!(
            token_use(&[("JWT_ISSUER", cognito)]).ok(),
            Some(Some(TokenUse::Id))
        );
        assert_eq!(
            token_use(&[("JWT_ISSUER", cognito), ("JWT_TOKEN_USE", "")]).ok(),
            Some(Some(TokenUse::Id))
        );
        assert_eq!(
            token_use(&[("JWT_ISSUER", cognito), ("JWT_TOKEN_USE", "access")]).ok(),
            Some(Some(TokenUse::Access))
        );
        // Other issuers have no `token_use`: no check unless asked for.
        assert_eq!(
            token_use(&[("JWT_ISSUER", "http://127.0.0.1/dev")]).ok(),
            Some(None)
        );
        assert_eq!(
            token_use(&[
                ("JWT_ISSUER", "https://x.example/"),
                ("JWT_TOKEN_USE", "id")
            ])
            .ok(),
            Some(Some(TokenUse::Id))
        );

        let err = config_error(&jwt_env(&[
            ("JWT_SECRET_NAME", "s"),
            ("JWT_TOKEN_USE", "refresh"),
        ]));
        assert!(
            err.contains("JWT_TOKEN_USE=\"refresh\" is neither `id` nor `access`"),
            "{err}"
        );
    }

    fn claims(value: serde_json::Value) -> Claims {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn audience_is_aud_or_an_access_tokens_client_id() {
        let access = Some(TokenUse::Access);
        let id = Some(TokenUse::Id);
        for token_use in [None, id, access] {
            assert!(claims(json!({"aud": "chat"})).audience_matches("chat", token_use));
            assert!(claims(json!({"aud": ["x", "chat"]})).audience_matches("chat", token_use));
            assert!(!claims(json!({"aud": "other"})).audience_matches("chat", token_use));
            assert!(!claims(json!({"aud": 1})).audience_matches("chat", token_use));
            assert!(!claims(json!({})).audience_matches("chat", token_use));
            // A present `aud` decides, as with API Gateway's authorizer.
            let both = claims(json!({"aud": "other", "client_id": "chat"}));
            assert!(!both.audience_matches("chat", token_use));
        }
        let access_token = claims(json!({"token_use": "access", "client_id": "chat"}));
        assert!(access_token.audience_matches("chat", access));
        assert!(!access_token.audience_matches("other", access));
        assert!(!access_token.audience_matches("chat", id));
        assert!(!access_token.audience_matches("chat", None));
    }

    /// A clock that runs with real time plus whatever the test skips ahead.
    fn skippable_clock() -> (Arc<std::sync::Mutex<Duration>>, Clock) {
        let skipped = Arc::new(std::sync::Mutex::new(Duration::ZERO));
        let read = Arc::clone(&skipped);
        let clock: Clock = Box::new(move || Instant::now() + *read.lock().unwrap());
        (skipped, clock)
    }

    fn jwks(kids: &[&str]) -> serde_json::Value {
        let keys: Vec<_> = kids
            .iter()
            .map(|kid| json!({"kty": "RSA", "kid": kid, "n": "AQAB", "e": "AQAB"}))
            .collect();
        json!({ "keys": keys })
    }

    async fn serve(server: &wiremock::MockServer, response: wiremock::ResponseTemplate) {
        server.reset().await;
        wiremock::Mock::given(wiremock::matchers::method("GET"))
            .respond_with(response)
            .mount(server)
            .await;
    }

    fn ok_jwks(kids: &[&str]) -> wiremock::ResponseTemplate {
        wiremock::ResponseTemplate::new(200).set_body_json(jwks(kids))
    }

    #[tokio::test]
    async fn expired_keys_serve_a_few_minutes_and_only_while_the_jwks_is_down() {
        let ttl = Duration::from_secs(600);
        let server = wiremock::MockServer::start().await;
        serve(&server, ok_jwks(&["k1"])).await;
        let (skipped, clock) = skippable_clock();
        let skip_to = |d: Duration| *skipped.lock().unwrap() = d;
        let http = lambda_kit::upstream::http_client().unwrap();
        let cache = JwksCache::with_clock(server.uri(), http, ttl, clock);
        assert!(cache.key("k1").await.unwrap().is_some());

        // The identity provider is down after the TTL: the expired keys still serve.
        serve(&server, wiremock::ResponseTemplate::new(503)).await;
        skip_to(ttl + Duration::from_secs(1));
        assert!(cache.key("k1").await.unwrap().is_some());
        assert!(!server.received_requests().await.unwrap().is_empty());
        skip_to(ttl + STALE_GRACE - Duration::from_secs(5));
        assert!(cache.key("k1").await.unwrap().is_some());

        // Past the grace they do not: the fetch error reaches the caller.
        skip_to(ttl + STALE_GRACE + Duration::from_secs(1));
        let err = cache.key("k1").await.err();
        assert!(
            matches!(
                err,
                Some(Error::UpstreamUnavailable {
                    service: "jwks",
                    ..
                })
            ),
            "{err:?}"
        );

        // Back up: the fresh keys replace the old ones, which served only during the outage.
        serve(&server, ok_jwks(&["k2"])).await;
        skip_to(ttl + STALE_GRACE + STALE_RETRY_AFTER + Duration::from_secs(2));
        assert!(cache.key("k2").await.unwrap().is_some());
        assert!(cache.key("k1").await.unwrap().is_none());
    }

    #[tokio::test]
    async fn a_reachable_jwks_replaces_expired_keys_without_grace() {
        let ttl = Duration::from_secs(600);
        let server = wiremock::MockServer::start().await;
        serve(&server, ok_jwks(&["k1"])).await;
        let (skipped, clock) = skippable_clock();
        let http = lambda_kit::upstream::http_client().unwrap();
        let cache = JwksCache::with_clock(server.uri(), http, ttl, clock);
        assert!(cache.key("k1").await.unwrap().is_some());

        // The provider withdrew k1: right after the TTL it no longer verifies.
        serve(&server, ok_jwks(&["k2"])).await;
        *skipped.lock().unwrap() = ttl + Duration::from_secs(1);
        assert!(cache.key("k1").await.unwrap().is_none());
        assert!(cache.key("k2").await.unwrap().is_some());
    }

    #[tokio::test]
    async fn a_cold_cache_has_no_grace() {
        let server = wiremock::MockServer::start().await;
        serve(&server, wiremock::ResponseTemplate::new(503)).await;
        let (_, clock) = skippable_clock();
        let http = lambda_kit::upstream::http_client().unwrap();
        let cache = JwksCache::with_clock(server.uri(), http, Duration::from_secs(600), clock);
        assert!(cache.key("k1").await.is_err());
    }

    #[test]
    fn config_problems_are_reported_together() {
        let err = config_error(&Env::default());
        for expected in [
            "JWT_ISSUER",
            "JWT_AUDIENCE",
            "neither JWT_SECRET_NAME nor JWT_JWKS_URL",
        ] {
            assert!(err.contains(expected), "{err}");
        }

        let err = config_error(&jwt_env(&[
            ("JWT_SECRET_NAME", "s"),
            ("JWT_JWKS_URL", "https://x/jwks"),
        ]));
        assert!(err.contains("both set; set exactly one"), "{err}");

        let err = config_error(&jwt_env(&[
            ("JWT_JWKS_URL", "not a url"),
            ("JWT_LEEWAY_SECS", "3600"),
            ("JWT_JWKS_CACHE_SECS", "0"),
        ]));
        for expected in [
            "JWT_JWKS_URL=",
            "JWT_LEEWAY_SECS=3600",
            "JWT_JWKS_CACHE_SECS=0",
        ] {
            assert!(err.contains(expected), "{err}");
        }

        let err = config_error(&jwt_env(&[
            ("JWT_SECRET_NAME", "s"),
            ("JWT_LEEWAY_SECS", "x"),
        ]));
        assert!(err.contains("JWT_LEEWAY_SECS=\"x\" is invalid"), "{err}");
    }

    #[test]
    fn debug_shows_the_user() {
        let user = AuthenticatedUser {
            user_id: "u-1".into(),
            groups: Vec::new(),
        };
        assert!(format!("{user:?}").contains("u-1"));
    }

    #[test]
    fn only_usable_signing_keys_are_kept() {
        let rsa = |kid: &str| json!({"kty": "RSA", "kid": kid, "n": "AQAB", "e": "AQAB"});
        let raw = RawJwks {
            keys: vec![
                rsa("plain"),
                json!({"kty": "RSA", "kid": "declared", "alg": "RS256", "use": "sig", "n": "AQAB", "e": "AQAB"}),
                json!({"kty": "RSA", "kid": "enc", "use": "enc", "n": "AQAB", "e": "AQAB"}),
                json!({"kty": "RSA", "kid": "rs512", "alg": "RS512", "n": "AQAB", "e": "AQAB"}),
                json!({"kty": "RSA", "n": "AQAB", "e": "AQAB"}),
                json!({"kty": "EC", "kid": "p256", "crv": "P-256", "x": "AQAB", "y": "AQAB"}),
                json!({"kty": "EC", "kid": "p384", "crv": "P-384", "x": "AQAB", "y": "AQAB"}),
                json!({"kty": "oct", "kid": "hmac", "k": "c2VjcmV0"}),
                json!({"kty": "weird", "kid": "weird"}),
            ],
        };
        let keys = usable_keys(raw);
        let mut kids: Vec<_> = keys
            .iter()
            .map(|(kid, key)| (kid.as_str(), key.algorithm))
            .collect();
        kids.sort_by_key(|(kid, _)| *kid);
        assert_eq!(
            kids,
            [
                ("declared", Algorithm::RS256),
                ("p256", Algorithm::ES256),
                ("plain", Algorithm::RS256)
            ]
        );
    }

    #[test]
    fn rejection_reasons() {
        assert_eq!(rejection(&ErrorKind::ExpiredSignature), "token expired");
        assert_eq!(
            rejection(&ErrorKind::MissingRequiredClaim("sub".into())),
            "missing subject"
        );
        assert_eq!(
            rejection(&ErrorKind::MissingRequiredClaim("exp".into())),
            "malformed token"
        );
        assert_eq!(
            rejection(&ErrorKind::InvalidAlgorithm),
            "unsupported algorithm"
        );
        assert_eq!(rejection(&ErrorKind::InvalidEcdsaKey), "invalid signature");
    }

    #[test]
    fn minting_needs_a_long_enough_secret() {
        let claims = DevClaims::new("u", "iss", "aud", Duration::from_secs(60));
        assert_eq!(claims.exp - claims.iat, 60);
        assert!(matches!(
            mint_hs256("short", &claims),
            Err(Error::Invalid(_))
        ));
        let token = mint_hs256(&"k".repeat(MIN_HS256_SECRET_BYTES), &claims);
        assert_eq!(token.map(|t| t.split('.').count()).ok(), Some(3));
    }
}
