//! The access token: cached in memory, shared through Secrets Manager, refreshed before
//! expiry and after a 401, one refresh for concurrent requests, endpoint failures as 502.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use crate::common::*;
use domain::clock::ManualClock;
use serde_json::json;
use wiremock::ResponseTemplate;

#[tokio::test]
async fn token_is_cached_in_memory() {
    let fake = fake().await;
    token_endpoint().expect(1).mount(&fake.server).await;
    offers_for(FIXTURE_TOKEN)
        .respond_with(offers_reply())
        .expect(2)
        .mount(&fake.server)
        .await;
    let deps = deps(&fake).await;
    for _ in 0..2 {
        let (status, body, _) = search(&deps).await;
        assert_eq!(status, 200, "{body}");
    }
}

#[tokio::test]
async fn token_is_shared_through_secrets_manager() {
    let fake = fake().await;
    token_endpoint().expect(1).mount(&fake.server).await;
    offers_for(FIXTURE_TOKEN)
        .respond_with(offers_reply())
        .expect(2)
        .mount(&fake.server)
        .await;

    let first_container = deps(&fake).await;
    let (status, body, _) = search(&first_container).await;
    assert_eq!(status, 200, "{body}");

    let stored = stored_token(&fake).await;
    assert_eq!(stored["access_token"], json!(FIXTURE_TOKEN));
    assert_eq!(stored["environment"], json!("test"));
    let expires_at = stored["expires_at"].as_i64().unwrap_or_default();
    let lifetime = expires_at - now_unix();
    assert!((1790..=1800).contains(&lifetime), "expires in {lifetime} s");

    // A container built from scratch: new secrets cache, new token state.
    let second_container = deps(&fake).await;
    let (status, body, _) = search(&second_container).await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn shared_token_near_expiry_is_refreshed() {
    let fake = fake_with_token(
        &json!({"access_token": "almost-expired", "expires_at": now_unix() + 30, "environment": "test"})
            .to_string(),
    )
    .await;
    token_endpoint().expect(1).mount(&fake.server).await;
    offers_for("almost-expired")
        .respond_with(offers_reply())
        .expect(0)
        .mount(&fake.server)
        .await;
    offers_for(FIXTURE_TOKEN)
        .respond_with(offers_reply())
        .expect(1)
        .mount(&fake.server)
        .await;
    let deps = deps(&fake).await;
    let (status, body, _) = search(&deps).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        stored_token(&fake).await["access_token"],
        json!(FIXTURE_TOKEN)
    );
}

#[tokio::test]
async fn shared_token_far_from_expiry_is_used_but_not_another_environments() {
    let valid = json!({"access_token": "shared-token", "expires_at": now_unix() + 1000, "environment": "test"});
    let fake = fake_with_token(&valid.to_string()).await;
    token_endpoint().expect(0).mount(&fake.server).await;
    offers_for("shared-token")
        .respond_with(offers_reply())
        .expect(1)
        .mount(&fake.server)
        .await;
    let (status, body, _) = search(&deps(&fake).await).await;
    assert_eq!(status, 200, "{body}");

    let prod = json!({"access_token": "prod-token", "expires_at": now_unix() + 1000, "environment": "prod"});
    let fake = fake_with_token(&prod.to_string()).await;
    token_endpoint().expect(1).mount(&fake.server).await;
    offers_for(FIXTURE_TOKEN)
        .respond_with(offers_reply())
        .expect(1)
        .mount(&fake.server)
        .await;
    let (status, body, _) = search(&deps(&fake).await).await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn refresh_margin_applies_to_the_memory_copy() {
    // The container's clock moves past expiry - margin: the next search fetches a new token.
    let fake = fake().await;
    token_endpoint_answering(token_reply("first"))
        .up_to_n_times(1)
        .expect(1)
        .mount(&fake.server)
        .await;
    token_endpoint_answering(token_reply("second"))
        .expect(1)
        .mount(&fake.server)
        .await;
    for token in ["first", "second"] {
        offers_for(token)
            .respond_with(offers_reply())
            .expect(1)
            .mount(&fake.server)
            .await;
    }
    let clock = Arc::new(ManualClock::new(time::OffsetDateTime::now_utc()));
    let deps = deps_with(config(&fake), clock.clone()).await;
    assert_eq!(search(&deps).await.0, 200);
    // 1799 s lifetime, 60 s margin.
    clock.advance(time::Duration::seconds(1740));
    assert_eq!(search(&deps).await.0, 200);
}

#[tokio::test]
async fn stale_cached_copy_of_the_shared_secret_is_not_trusted() {
    let fake = fake_with_token(
        &json!({"access_token": "old", "expires_at": now_unix() + 1000, "environment": "test"})
            .to_string(),
    )
    .await;
    token_endpoint().expect(0).mount(&fake.server).await;
    for token in ["old", "new"] {
        offers_for(token)
            .respond_with(offers_reply())
            .expect(1)
            .mount(&fake.server)
            .await;
    }
    let clock = Arc::new(ManualClock::new(time::OffsetDateTime::now_utc()));
    let deps = deps_with(config(&fake), clock.clone()).await;
    assert_eq!(search(&deps).await.0, 200);

    // Another instance refreshed the shared token; this container's secrets cache still
    // holds the old copy when its clock passes the old token's expiry.
    put_stored_token(
        &fake,
        &json!({"access_token": "new", "expires_at": now_unix() + 5000, "environment": "test"}),
    )
    .await;
    clock.advance(time::Duration::seconds(1000));
    let (status, body, _) = search(&deps).await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn unauthorized_offers_refresh_the_token_once() {
    let fake = fake().await;
    token_endpoint_answering(token_reply("revoked"))
        .up_to_n_times(1)
        .expect(1)
        .mount(&fake.server)
        .await;
    token_endpoint_answering(token_reply("fresh"))
        .expect(1)
        .mount(&fake.server)
        .await;
    offers_for("revoked")
        .respond_with(
            ResponseTemplate::new(401).set_body_json(
                json!({"errors": [{"code": 38192, "title": "Invalid access token"}]}),
            ),
        )
        .expect(1)
        .mount(&fake.server)
        .await;
    offers_for("fresh")
        .respond_with(offers_reply())
        .expect(2)
        .mount(&fake.server)
        .await;
    let deps = deps(&fake).await;
    let (status, body, _) = search(&deps).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["results"]["count"], json!(2));
    // The rejected token was replaced in the shared secret too.
    assert_eq!(stored_token(&fake).await["access_token"], json!("fresh"));
    // And in memory: the next search uses the fresh token without another refresh.
    assert_eq!(search(&deps).await.0, 200);
}

#[tokio::test]
async fn a_second_401_is_a_502() {
    let fake = fake().await;
    token_endpoint().expect(2).mount(&fake.server).await;
    offers_for(FIXTURE_TOKEN)
        .respond_with(ResponseTemplate::new(401))
        .expect(2)
        .mount(&fake.server)
        .await;
    let deps = deps(&fake).await;
    let (status, body, _) = search(&deps).await;
    assert_eq!(status, 502, "{body}");
    assert_eq!(body["error"]["code"], json!("upstream_error"));
}

#[tokio::test]
async fn concurrent_searches_share_one_refresh() {
    let fake = fake().await;
    token_endpoint_answering(token_reply(FIXTURE_TOKEN).set_delay(Duration::from_millis(300)))
        .expect(1)
        .mount(&fake.server)
        .await;
    offers_for(FIXTURE_TOKEN)
        .respond_with(offers_reply())
        .expect(10)
        .mount(&fake.server)
        .await;
    let deps = deps(&fake).await;
    let searches = (0..10).map(|_| search(&deps));
    for (status, body, _) in futures::future::join_all(searches).await {
        assert_eq!(status, 200, "{body}");
    }
}

#[tokio::test]
async fn refused_credentials_are_a_502_without_secrets() {
    let fake = fake().await;
    token_endpoint_answering(ResponseTemplate::new(401).set_body_raw(
        test_support::fixture("amadeus/oauth2_token_error_401_example.spec.json"),
        "application/json",
    ))
    .expect(1) // not retried: the same credentials would fail again
    .mount(&fake.server)
    .await;
    offers_for(FIXTURE_TOKEN)
        .respond_with(offers_reply())
        .expect(0)
        .mount(&fake.server)
        .await;
    let deps = deps(&fake).await;
    let (status, body, text) = search(&deps).await;
    assert_eq!(status, 502, "{body}");
    assert_eq!(body["error"]["code"], json!("upstream_error"));
    for secret in [
        CLIENT_ID,
        CLIENT_SECRET,
        "invalid_client",
        "Client credentials",
    ] {
        assert!(!text.contains(secret), "{text}");
    }
}

#[tokio::test]
async fn failing_token_endpoint_is_a_502() {
    let fake = fake().await;
    token_endpoint_answering(ResponseTemplate::new(500).set_body_string("token service down"))
        .expect(3)
        .mount(&fake.server)
        .await;
    let (status, body, text) = search(&deps(&fake).await).await;
    assert_eq!(status, 502, "{body}");
    assert!(!text.contains("token service down"), "{text}");

    // A 200 without a token is no better.
    let tokenless = common::fake().await;
    token_endpoint_answering(
        ResponseTemplate::new(200).set_body_json(json!({"state": "approved"})),
    )
    .expect(1)
    .mount(&tokenless.server)
    .await;
    let (status, body, _) = search(&deps(&tokenless).await).await;
    assert_eq!(status, 502, "{body}");
}
