//! Who may spend the Seats.aero quota: the router and worker over IAM; a user's own token
//! only while the public routes are on, and then at most the per-user limit.

use std::sync::Arc;

use crate::common::{Fake, reply, search_body};
use lambda_http::http::Method;
use lambda_http::{Body, Request};
use lambda_kit::http::route_access::{ON_BEHALF_OF_HEADER, RouteAccess};
use lambda_kit::limits::{DynamoRateLimiter, RateLimit};
use serde_json::Value;
use test_support::gateway::{iam_authorized, jwt_authorized};

fn post(body: &Value) -> Request {
    let mut req = Request::new(Body::Text(body.to_string()));
    *req.method_mut() = Method::POST;
    req
}

async fn limiter() -> Arc<DynamoRateLimiter> {
    Arc::new(DynamoRateLimiter::new(
        test_support::dynamodb().await,
        test_support::require_env("RATE_LIMITS_TABLE"),
    ))
}

const FIVE_A_MINUTE: RateLimit = RateLimit {
    max: 5,
    window: time::Duration::minutes(1),
};

#[tokio::test]
async fn a_user_token_on_the_public_route_while_it_is_off_gets_403_and_no_upstream_call() {
    let fake = Fake::start().await.with_fixtures().await;
    let req = jwt_authorized(post(&search_body()), &test_support::unique("mallory"));
    let (status, body) = reply(seatsaero_search::handle(&fake.deps, req).await);
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["error"]["code"], "forbidden");
    assert!(fake.requests_to("/").await.is_empty());
}

#[tokio::test]
async fn a_request_no_authorizer_vouched_for_gets_403_and_no_upstream_call() {
    let fake = Fake::start().await.with_fixtures().await;
    let mut req = post(&search_body());
    req.headers_mut()
        .insert(ON_BEHALF_OF_HEADER, "someone-else".parse().unwrap());
    let (status, body) = reply(seatsaero_search::handle(&fake.deps, req).await);
    assert_eq!(status, 403, "{body}");
    assert!(fake.requests_to("/").await.is_empty());
}

#[tokio::test]
async fn an_iam_caller_naming_a_malformed_user_gets_400() {
    let fake = Fake::start().await.with_fixtures().await;
    let mut req = post(&search_body());
    req.headers_mut()
        .insert(ON_BEHALF_OF_HEADER, "two words".parse().unwrap());
    let (status, body) = reply(seatsaero_search::handle(&fake.deps, iam_authorized(req)).await);
    assert_eq!(status, 400, "{body}");
    // The documented code, naming the header (`bad_request` is never produced).
    assert_eq!(body["error"]["code"], "validation_failed", "{body}");
    assert_eq!(body["error"]["details"]["field"], ON_BEHALF_OF_HEADER);
    assert!(fake.requests_to("/").await.is_empty());
}

#[tokio::test]
async fn a_body_that_is_a_json_array_is_refused() {
    let fake = Fake::start().await.with_fixtures().await;
    let req = post(&Value::Array(vec![search_body()]));
    let (status, body) = reply(seatsaero_search::handle(&fake.deps, iam_authorized(req)).await);
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["code"], "invalid_json", "{body}");
    assert!(fake.requests_to("/").await.is_empty());
}

/// 20 concurrent calls by one user against a limit of 5: exactly 5 reach Seats.aero. The
/// `x-tool-user` header naming someone else changes nothing on a public route.
#[tokio::test]
async fn with_public_routes_on_the_per_user_limit_holds_under_20_concurrent_calls() {
    let mut fake = Fake::start().await.with_fixtures().await;
    fake.deps = fake.deps.clone().with_access(
        RouteAccess::internal_only().with_public_routes(limiter().await, FIVE_A_MINUTE),
    );
    let user = test_support::unique("eve");
    let victim = test_support::unique("victim");
    let calls = (0..20).map(|_| {
        let mut req = post(&search_body());
        req.headers_mut()
            .insert(ON_BEHALF_OF_HEADER, victim.parse().unwrap());
        let req = jwt_authorized(req, &user);
        let deps = fake.deps.clone();
        async move { reply(seatsaero_search::handle(&deps, req).await) }
    });
    let replies = futures::future::join_all(calls).await;
    let count = |status: u16| replies.iter().filter(|(s, _)| *s == status).count();
    assert_eq!((count(200), count(429)), (5, 15), "{replies:?}");
    let limited = replies
        .iter()
        .find(|(s, _)| *s == 429)
        .map(|(_, b)| b.clone());
    assert_eq!(
        limited.as_ref().map(|b| b["error"]["code"].clone()),
        Some("rate_limited".into())
    );
    assert_eq!(fake.requests_to("/search").await.len(), 5);

    // The header did not charge the user it named: their quota is whole.
    let req = jwt_authorized(post(&search_body()), &victim);
    let (status, body) = reply(seatsaero_search::handle(&fake.deps, req).await);
    assert_eq!(status, 200, "{body}");

    // Internal calls are the chat's, limited there: not counted here.
    let mut req = post(&search_body());
    req.headers_mut()
        .insert(ON_BEHALF_OF_HEADER, user.parse().unwrap());
    let (status, body) = reply(seatsaero_search::handle(&fake.deps, iam_authorized(req)).await);
    assert_eq!(status, 200, "{body}");
}
