//! Secrets Manager reads behind an in-memory TTL cache shared by every handler of a
//! container: one network call per secret per TTL, and concurrent first reads of the same
//! secret wait for a single fetch instead of each making their own.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, PoisonError, RwLock};
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
    /// What the output guards must never let through, kept up to date as values arrive:
    /// every turn asks for it twice, and scanning the cache and parsing each value again
    /// cost more than the rest of the guard's setup.
    held: Arc<RwLock<Held>>,
}

/// The values read so far, by secret: each one's latest value and, for a JSON object, its
/// string fields.
#[derive(Default)]
struct Held {
    by_name: BTreeMap<String, (SecretString, Vec<SecretString>)>,
    all: Arc<[SecretString]>,
}

impl Held {
    /// Keeps `value` as `name`'s, unless it already is.
    fn keep(&mut self, name: &str, value: &SecretString) {
        if self.by_name.get(name).is_some_and(|(v, _)| v == value) {
            return;
        }
        let mut values = Vec::new();
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
        values.push(value.clone());
        self.by_name
            .insert(name.to_owned(), (value.clone(), values));
        self.all = self
            .by_name
            .values()
            .flat_map(|(_, values)| values.iter().cloned())
            .collect();
    }
}

impl SecretsCache {
    /// A cache over `source` that keeps each value `ttl` after it was fetched (256 secrets at
    /// most).
    pub fn new(source: Arc<dyn SecretSource>, ttl: Duration) -> Self {
        Self {
            source,
            cache: Cache::builder().max_capacity(256).time_to_live(ttl).build(),
            held: Arc::default(),
        }
    }

    /// Records `value` as `name`'s in what the guards hold (a read lock when it already is).
    fn hold(&self, name: &str, value: &SecretString) {
        let known = self
            .held
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .by_name
            .get(name)
            .is_some_and(|(v, _)| v == value);
        if !known {
            self.held
                .write()
                .unwrap_or_else(PoisonError::into_inner)
                .keep(name, value);
        }
    }

    /// The secret's value, from memory when fetched within the TTL. Failures are not cached:
    /// the next read tries again.
    pub async fn get(&self, name: &str) -> Result<SecretString> {
        let source = Arc::clone(&self.source);
        self.cache
            .try_get_with(name.to_owned(), async move { source.fetch(name).await })
            .await
            .inspect(|value| self.hold(name, value))
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
        let value = SecretString::new(value);
        self.hold(name, &value);
        self.cache.insert(name.to_owned(), value).await;
        Ok(())
    }

    /// The values read so far, for the output guards: an answer must never contain one. A
    /// JSON secret also gives its string fields (e.g. a client secret). A secret's latest
    /// value stays held after its cache entry expires (until a new value replaces it): the
    /// container still knows it.
    pub fn held_values(&self) -> Arc<[SecretString]> {
        Arc::clone(&self.held.read().unwrap_or_else(PoisonError::into_inner).all)
    }

    /// Forgets a cached value, e.g. after the service rejected it.
    pub async fn invalidate(&self, name: &str) {
        self.cache.invalidate(name).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Secrets in memory, counting the fetches that reach them.
    #[derive(Default)]
    struct Memory {
        values: std::sync::Mutex<BTreeMap<String, String>>,
        fetches: std::sync::atomic::AtomicUsize,
    }

    #[async_trait]
    impl SecretSource for Memory {
        async fn fetch(&self, name: &str) -> Result<SecretString> {
            self.fetches
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let values = self.values.lock().unwrap_or_else(PoisonError::into_inner);
            values
                .get(name)
                .map(|v| SecretString::new(v.as_str()))
                .ok_or(Error::NotFound)
        }
        async fn store(&self, name: &str, value: &str) -> Result<()> {
            let mut values = self.values.lock().unwrap_or_else(PoisonError::into_inner);
            values.insert(name.to_owned(), value.to_owned());
            Ok(())
        }
    }

    fn exposed(values: &[SecretString]) -> Vec<&str> {
        let mut exposed: Vec<&str> = values.iter().map(SecretString::expose).collect();
        exposed.sort_unstable();
        exposed
    }

    #[tokio::test]
    async fn the_guards_hold_each_secrets_latest_value_and_its_fields() {
        let source = Arc::new(Memory::default());
        let json = r#"{"client_id":"cid-1234567","client_secret":"cs-abcdefgh","port":5}"#;
        source.store("llm-key", "sk-live-1").await.unwrap();
        source.store("oauth", json).await.unwrap();
        let cache = SecretsCache::new(source.clone(), Duration::from_secs(60));
        assert!(cache.held_values().is_empty(), "nothing read yet");

        cache.get("llm-key").await.unwrap();
        cache.get("oauth").await.unwrap();
        cache.get("llm-key").await.unwrap();
        assert!(cache.get("missing").await.is_err());
        assert_eq!(
            exposed(&cache.held_values()),
            ["cid-1234567", "cs-abcdefgh", "sk-live-1", json]
        );
        assert_eq!(source.fetches.load(std::sync::atomic::Ordering::SeqCst), 3);

        // A new value replaces the old one in what is held.
        cache.put("llm-key", "sk-live-2").await.unwrap();
        assert_eq!(
            exposed(&cache.held_values()),
            ["cid-1234567", "cs-abcdefgh", "sk-live-2", json]
        );
        // An invalidated secret stays held: the container still knows its value.
        cache.invalidate("oauth").await;
        assert_eq!(cache.held_values().len(), 4);
    }

    #[test]
    fn secret_values_do_not_print() {
        let secret = SecretString::new("sk-live-123");
        assert_eq!(format!("{secret:?} {secret}"), "SecretString(***) ***");
        assert_eq!(secret.expose(), "sk-live-123");
    }
}
