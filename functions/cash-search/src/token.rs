//! The Amadeus access token (OAuth2 client credentials, seed 000 §6.3).
//!
//! Looked up in order: this container's memory; the Secrets Manager secret that every
//! instance shares (`{"access_token", "expires_at" (unix seconds), "environment"}`); the
//! token endpoint, whose answer is then written back to that secret. A token counts as
//! usable until `refresh margin` before its expiry, so it never dies in the middle of a
//! search. Refreshes in one container are serialised by a mutex with a re-check after
//! acquiring it, so concurrent requests share one refresh.

use std::sync::{Arc, RwLock};
use std::time::Instant;

use domain::clock::Clock;
use domain::{Error, Result};
use lambda_kit::secrets::{SecretString, SecretsCache};
use lambda_kit::upstream::{self, RetryPolicy};
use reqwest::StatusCode;
use serde::{Deserialize, Serialize};
use time::{Duration, OffsetDateTime};

use crate::config::{AmadeusEnv, Config};
use crate::lenient;

/// Upstream name in errors and logs ("Amadeus is unavailable; try again later").
pub const SERVICE: &str = "Amadeus";

/// Lifetime assumed when the token endpoint does not say (Amadeus issues 1799 s).
const DEFAULT_LIFETIME_SECS: u64 = 600;
/// Longest lifetime believed, so a bogus `expires_in` cannot pin a token for ever.
const MAX_LIFETIME_SECS: u64 = 24 * 3600;

/// A bearer token and when it expires. `Debug` does not print the value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessToken {
    value: SecretString,
    expires_at: OffsetDateTime,
}

impl AccessToken {
    /// The value for the `Authorization: Bearer` header.
    pub fn expose(&self) -> &str {
        self.value.expose()
    }

    pub fn expires_at(&self) -> OffsetDateTime {
        self.expires_at
    }

    fn usable(&self, now: OffsetDateTime, margin: Duration) -> bool {
        now.checked_add(margin).is_some_and(|t| t < self.expires_at)
    }
}

/// `{"client_id", "client_secret"}`; deliberately without `Debug`.
#[derive(Deserialize)]
struct Credentials {
    client_id: String,
    client_secret: String,
}

/// The shared secret's JSON. The stack creates it as `{}`, which reads as "no token".
/// `Debug` does not print the token.
#[derive(Default, Serialize, Deserialize)]
#[serde(default)]
struct StoredToken {
    access_token: String,
    expires_at: i64,
    environment: String,
}

impl std::fmt::Debug for StoredToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredToken")
            .field("access_token", &"***")
            .field("expires_at", &self.expires_at)
            .field("environment", &self.environment)
            .finish()
    }
}

#[derive(Default, Deserialize)]
#[serde(default)]
struct TokenReply {
    access_token: String,
    #[serde(deserialize_with = "lenient::opt_u64")]
    expires_in: Option<u64>,
}

pub struct TokenProvider {
    http: reqwest::Client,
    secrets: SecretsCache,
    token_url: String,
    environment: AmadeusEnv,
    credentials_secret: String,
    token_secret: String,
    margin: Duration,
    retry: RetryPolicy,
    clock: Arc<dyn Clock>,
    current: RwLock<Option<AccessToken>>,
    refresh: tokio::sync::Mutex<()>,
}

impl TokenProvider {
    pub fn new(
        http: reqwest::Client,
        secrets: SecretsCache,
        config: &Config,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            http,
            secrets,
            token_url: format!("{}/v1/security/oauth2/token", config.base_url),
            environment: config.environment,
            credentials_secret: config.credentials_secret.clone(),
            token_secret: config.token_secret.clone(),
            margin: Duration::seconds(
                i64::try_from(config.token_refresh_margin.as_secs()).unwrap_or(i64::MAX),
            ),
            retry: config.retry,
            clock,
            current: RwLock::new(None),
            refresh: tokio::sync::Mutex::new(()),
        }
    }

    /// A token that stays valid for at least the refresh margin.
    pub async fn token(&self, deadline: Instant) -> Result<AccessToken> {
        self.obtain(deadline, None).await
    }

    /// A token other than `rejected`, which Amadeus just refused (401): neither the memory
    /// copy nor the shared one is used again if it is that token.
    pub async fn replace_rejected(
        &self,
        rejected: &AccessToken,
        deadline: Instant,
    ) -> Result<AccessToken> {
        self.obtain(deadline, Some(rejected)).await
    }

    async fn obtain(
        &self,
        deadline: Instant,
        rejected: Option<&AccessToken>,
    ) -> Result<AccessToken> {
        let acceptable = |t: &AccessToken| {
            t.usable(self.clock.now(), self.margin) && rejected.is_none_or(|r| r.value != t.value)
        };
        if let Some(token) = self.in_memory().filter(|t| acceptable(t)) {
            return Ok(token);
        }
        let _refreshing = tokio::time::timeout_at(deadline.into(), self.refresh.lock())
            .await
            .map_err(|_| Error::UpstreamTimeout { service: SERVICE })?;
        // Whoever held the lock before us may have refreshed already.
        if let Some(token) = self.in_memory().filter(|t| acceptable(t)) {
            return Ok(token);
        }
        if let Some(token) = self.shared_token(&acceptable).await {
            tracing::debug!("using the Amadeus token shared in Secrets Manager");
            self.remember(&token);
            return Ok(token);
        }
        let token = self.request_new(deadline).await?;
        self.remember(&token);
        self.share(&token).await;
        Ok(token)
    }

    fn in_memory(&self) -> Option<AccessToken> {
        self.current
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    fn remember(&self, token: &AccessToken) {
        *self
            .current
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(token.clone());
    }

    /// The shared token if it is acceptable. The secrets cache may hold a copy older than
    /// the secret (another instance may have refreshed since), so an unacceptable cached
    /// copy is dropped and the secret read once more before giving up.
    async fn shared_token(
        &self,
        acceptable: &impl Fn(&AccessToken) -> bool,
    ) -> Option<AccessToken> {
        for fresh_read in [false, true] {
            if fresh_read {
                self.secrets.invalidate(&self.token_secret).await;
            }
            let raw = match self.secrets.get(&self.token_secret).await {
                Ok(raw) => raw,
                Err(e) => {
                    // Only an optimisation: without it this container fetches its own token.
                    tracing::warn!(error = %e, "could not read the shared Amadeus token");
                    return None;
                }
            };
            if let Some(token) = self.parse_stored(&raw).filter(|t| acceptable(t)) {
                return Some(token);
            }
        }
        None
    }

    fn parse_stored(&self, raw: &SecretString) -> Option<AccessToken> {
        let stored: StoredToken = match serde_json::from_str(raw.expose()) {
            Ok(stored) => stored,
            Err(e) => {
                tracing::warn!(
                    line = e.line(),
                    column = e.column(),
                    "the shared Amadeus token secret is not the expected JSON; ignoring it"
                );
                return None;
            }
        };
        let value = stored.access_token.trim();
        if value.is_empty() || stored.environment != self.environment.as_str() {
            return None;
        }
        Some(AccessToken {
            value: SecretString::new(value),
            expires_at: OffsetDateTime::from_unix_timestamp(stored.expires_at).ok()?,
        })
    }

    async fn share(&self, token: &AccessToken) {
        let stored = StoredToken {
            access_token: token.expose().to_owned(),
            expires_at: token.expires_at.unix_timestamp(),
            environment: self.environment.as_str().to_owned(),
        };
        let written = match serde_json::to_string(&stored) {
            Ok(json) => self.secrets.put(&self.token_secret, &json).await,
            Err(e) => Err(Error::Json(e)),
        };
        if let Err(e) = written {
            tracing::warn!(error = %e, "could not share the Amadeus token; other instances fetch their own");
        }
    }

    /// `POST /v1/security/oauth2/token`. Any failure is ours or Amadeus', never the
    /// caller's: 502 (or 504), with the details in the log and never the credentials.
    async fn request_new(&self, deadline: Instant) -> Result<AccessToken> {
        let credentials: Credentials = self.secrets.get_json(&self.credentials_secret).await?;
        let form = [
            ("grant_type", "client_credentials"),
            ("client_id", credentials.client_id.as_str()),
            ("client_secret", credentials.client_secret.as_str()),
        ];
        let response = upstream::send(SERVICE, deadline, &self.retry, || {
            self.http.post(&self.token_url).form(&form)
        })
        .await?;
        let status = response.status();
        if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
            tracing::error!(
                status = status.as_u16(),
                secret = %self.credentials_secret,
                "Amadeus refused our client credentials; check the credentials secret"
            );
            return Err(upstream_error(
                "the token endpoint refused our client credentials",
            ));
        }
        if !status.is_success() {
            tracing::error!(
                status = status.as_u16(),
                "the Amadeus token endpoint failed"
            );
            return Err(upstream_error(&format!(
                "token endpoint answered HTTP {}",
                status.as_u16()
            )));
        }
        let body = response
            .bytes()
            .await
            .map_err(|e| upstream_error(&format!("reading the token reply failed: {e}")))?;
        // The reply holds the token: report where parsing failed, never what was there.
        let reply: TokenReply = serde_json::from_slice(&body).map_err(|e| {
            upstream_error(&format!(
                "token reply is not the expected JSON (line {}, column {})",
                e.line(),
                e.column()
            ))
        })?;
        let value = reply.access_token.trim();
        if value.is_empty() {
            return Err(upstream_error("token reply has no access_token"));
        }
        let lifetime = reply
            .expires_in
            .unwrap_or(DEFAULT_LIFETIME_SECS)
            .min(MAX_LIFETIME_SECS);
        let lifetime = Duration::seconds(i64::try_from(lifetime).unwrap_or(0));
        let expires_at = self
            .clock
            .now()
            .checked_add(lifetime)
            .ok_or_else(|| upstream_error("token lifetime out of range"))?;
        tracing::info!(%expires_at, "fetched a new Amadeus access token");
        Ok(AccessToken {
            value: SecretString::new(value),
            expires_at,
        })
    }
}

fn upstream_error(message: &str) -> Error {
    Error::Upstream {
        service: SERVICE,
        message: message.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_never_shows_a_token() {
        let stored = StoredToken {
            access_token: "amadeus-token-value".into(),
            expires_at: 1,
            environment: "test".into(),
        };
        let token = AccessToken {
            value: SecretString::new("amadeus-token-value"),
            expires_at: OffsetDateTime::UNIX_EPOCH,
        };
        let printed = format!("{stored:?} {token:?}");
        assert!(!printed.contains("amadeus-token-value"), "{printed}");
    }

    #[test]
    fn usable_respects_the_margin() {
        let now = OffsetDateTime::UNIX_EPOCH + Duration::days(20_000);
        let token = AccessToken {
            value: SecretString::new("t"),
            expires_at: now + Duration::seconds(90),
        };
        assert!(token.usable(now, Duration::seconds(60)));
        assert!(!token.usable(now + Duration::seconds(30), Duration::seconds(60)));
        assert!(!token.usable(now, Duration::MAX));
        assert!(!format!("{token:?}").contains("\"t\""));
    }
}
