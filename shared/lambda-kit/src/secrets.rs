//! Secrets Manager reads behind an in-memory TTL cache shared by every handler of a
//! container: one network call per secret per TTL, and concurrent first reads of the same
//! secret wait for a single fetch instead of each making their own.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use moka::future::Cache;
use serde::de::DeserializeOwned;

use domain::{Error, Result};

/// A secret value. `Debug` and `Display` never print it, so it cannot leak into logs by a
/// stray `{:?}`; call [`SecretString::expose`] where the value is really needed.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretString(Arc<str>);

impl SecretString {
    /// Wraps a secret's value.
    pub fn new(value: impl Into<Arc<str>>) -> Self {
        Self(value.into())
    }

    /// The value itself; use it where it is needed, never in a log.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for SecretString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SecretString(***)")
    }
}

impl fmt::Display for SecretString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// Where secrets come from: Secrets Manager in production and against moto in tests.
#[async_trait]
pub trait SecretSource: Send + Sync + 'static {
    /// The current value of the secret `name`.
    async fn fetch(&self, name: &str) -> Result<SecretString>;
    /// Writes `value` as the secret `name`'s new value.
    async fn store(&self, name: &str, value: &str) -> Result<()>;
}

/// [`SecretSource`] on Secrets Manager.
pub struct AwsSecretSource {
    client: aws_sdk_secretsmanager::Client,
}

impl AwsSecretSource {
    /// A source reading and writing through `client`.
    pub fn new(client: aws_sdk_secretsmanager::Client) -> Self {
        Self { client }
    }
}

fn secret_error(name: &str, err: impl std::error::Error + 'static) -> Error {
    Error::Secret {
        name: name.to_owned(),
        message: aws_sdk_secretsmanager::error::DisplayErrorContext(err).to_string(),
    }
}

#[async_trait]
impl SecretSource for AwsSecretSource {
    async fn fetch(&self, name: &str) -> Result<SecretString> {
        let out = self
            .client
            .get_secret_value()
            .secret_id(name)
            .send()
            .await
            .map_err(|e| secret_error(name, e))?;
        out.secret_string
            .map(SecretString::new)
            .ok_or_else(|| Error::Secret {
                name: name.to_owned(),
                message: "the secret has no string value".into(),
            })
    }

    async fn store(&self, name: &str, value: &str) -> Result<()> {
        self.client
            .put_secret_value()
            .secret_id(name)
            .secret_string(value)
            .send()
            .await
            .map_err(|e| secret_error(name, e))?;
        Ok(())
    }
}

/// The per-container cache. Clone it freely: clones share the cache.
#[derive(Clone)]
pub struct SecretsCache {
    source: Arc<dyn SecretSource>,
    cache: Cache<String, SecretString>,
}

impl SecretsCache {
    /// A cache over `source` that keeps each value `ttl` after it was fetched (256 secrets at
    /// most).
    pub fn new(source: Arc<dyn SecretSource>, ttl: Duration) -> Self {
        Self {
            source,
            cache: Cache::builder().max_capacity(256).time_to_live(ttl).build(),
        }
    }

    /// The secret's value, from memory when fetched within the TTL. Failures are not cached:
    /// the next read tries again.
    pub async fn get(&self, name: &str) -> Result<SecretString> {
        let source = Arc::clone(&self.source);
        self.cache
            .try_get_with(name.to_owned(), async move { source.fetch(name).await })
            .await
            .map_err(|shared: Arc<Error>| match shared.as_ref() {
                Error::Secret { name, message } => Error::Secret {
                    name: name.clone(),
                    message: message.clone(),
                },
                other => Error::Secret {
                    name: name.to_owned(),
                    message: other.to_string(),
                },
            })
    }

    /// The secret parsed as JSON (e.g. `{"client_id": ..., "client_secret": ...}`). The parse
    /// error names the secret but never quotes its content.
    pub async fn get_json<T: DeserializeOwned>(&self, name: &str) -> Result<T> {
        let value = self.get(name).await?;
        serde_json::from_str(value.expose()).map_err(|e| Error::Secret {
            name: name.to_owned(),
            message: format!(
                "not the expected JSON (line {}, column {})",
                e.line(),
                e.column()
            ),
        })
    }

    /// Writes a new value (e.g. a refreshed shared token) and keeps it in the cache.
    pub async fn put(&self, name: &str, value: &str) -> Result<()> {
        self.source.store(name, value).await?;
        self.cache
            .insert(name.to_owned(), SecretString::new(value))
            .await;
        Ok(())
    }

    /// The values held now, for the output guard: an answer must never contain one. A JSON
    /// secret also gives its string fields (e.g. a client secret).
    pub fn held_values(&self) -> Vec<SecretString> {
        let mut values = Vec::new();
        for (_, value) in self.cache.iter() {
            if let Ok(serde_json::Value::Object(fields)) =
                serde_json::from_str::<serde_json::Value>(value.expose())
            {
                values.extend(
                    fields
                        .values()
                        .filter_map(|v| v.as_str())
                        .map(SecretString::new),
                );
            }
            values.push(value);
        }
        values
    }

    /// Forgets a cached value, e.g. after the service rejected it.
    pub async fn invalidate(&self, name: &str) {
        self.cache.invalidate(name).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_values_do_not_print() {
        let secret = SecretString::new("sk-live-123");
        assert_eq!(format!("{secret:?} {secret}"), "SecretString(***) ***");
        assert_eq!(secret.expose(), "sk-live-123");
    }
}
