//! Secrets cache against moto's Secrets Manager.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use shared::Error;
use shared::secrets::{AwsSecretSource, SecretSource, SecretString, SecretsCache};

/// The real Secrets Manager source, counting the calls that reach it.
struct Counting {
    inner: AwsSecretSource,
    fetches: AtomicUsize,
}

#[async_trait]
impl SecretSource for Counting {
    async fn fetch(&self, name: &str) -> shared::Result<SecretString> {
        self.fetches.fetch_add(1, Ordering::SeqCst);
        // Widen the window in which concurrent readers could race each other.
        tokio::time::sleep(Duration::from_millis(50)).await;
        self.inner.fetch(name).await
    }

    async fn store(&self, name: &str, value: &str) -> shared::Result<()> {
        self.inner.store(name, value).await
    }
}

async fn counting_cache(
    ttl: Duration,
) -> (SecretsCache, Arc<Counting>, aws_sdk_secretsmanager::Client) {
    let client = common::secrets_manager().await;
    let source = Arc::new(Counting {
        inner: AwsSecretSource::new(client.clone()),
        fetches: AtomicUsize::new(0),
    });
    (SecretsCache::new(source.clone(), ttl), source, client)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_cold_reads_make_one_call() {
    let (cache, source, client) = counting_cache(Duration::from_millis(400)).await;
    let name = common::unique("test/api-key");
    client
        .create_secret()
        .name(&name)
        .secret_string("sk-test-value")
        .send()
        .await
        .unwrap_or_else(|e| panic!("create secret: {e}"));

    let reads = futures::future::join_all((0..32).map(|_| {
        let (cache, name) = (cache.clone(), name.clone());
        tokio::spawn(async move { cache.get(&name).await })
    }))
    .await;
    for read in reads {
        let value = read
            .ok()
            .and_then(Result::ok)
            .unwrap_or_else(|| panic!("a read failed"));
        assert_eq!(value.expose(), "sk-test-value");
    }
    assert_eq!(
        source.fetches.load(Ordering::SeqCst),
        1,
        "32 concurrent reads, one fetch"
    );

    // Warm reads stay in memory until the TTL passes.
    cache.get(&name).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(source.fetches.load(Ordering::SeqCst), 1);
    tokio::time::sleep(Duration::from_millis(500)).await;
    cache.get(&name).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        source.fetches.load(Ordering::SeqCst),
        2,
        "refetched after the TTL"
    );
}

#[tokio::test]
async fn failures_name_the_secret_and_are_not_cached() {
    let (cache, source, client) = counting_cache(Duration::from_secs(60)).await;
    let name = common::unique("test/missing");
    match cache.get(&name).await {
        Err(Error::Secret { name: failed, .. }) => assert_eq!(failed, name),
        other => panic!("expected a secret error, got {other:?}"),
    }
    client
        .create_secret()
        .name(&name)
        .secret_string(r#"{"client_id":"id-1","client_secret":"s3cret"}"#)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    #[derive(serde::Deserialize)]
    struct Credentials {
        client_id: String,
    }
    let creds: Credentials = cache
        .get_json(&name)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(creds.client_id, "id-1");
    assert_eq!(
        source.fetches.load(Ordering::SeqCst),
        2,
        "the failure was not cached"
    );

    // Writes go through and replace the cached value.
    cache
        .put(&name, "not json")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let err = cache
        .get_json::<Credentials>(&name)
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains(&name) && !err.contains("not json"), "{err}");
    cache.invalidate(&name).await;
    assert_eq!(
        cache.get(&name).await.ok().map(|v| v.expose().to_owned()),
        Some("not json".into())
    );
}
