//! `GET /alerts` and `DELETE /alerts/{id}` through the router: a user sees and deletes
//! their own fare alerts; another user's are as missing as ones that never were (404).

use crate::common::Rig;
use serde_json::json;
use shared::domain::alert::CreateFareAlertArgs;

fn args() -> CreateFareAlertArgs {
    serde_json::from_value(json!({
        "origin": "FRA", "destination": "JFK",
        "date_from": test_support::future_date(), "date_to": test_support::future_date(),
        "cabin": "BUSINESS", "max_miles": 80000,
        "max_price": {"amount": 2500, "currency": "eur"}
    }))
    .unwrap_or_else(|e| panic!("{e}"))
}

#[tokio::test]
async fn a_user_lists_and_deletes_their_own_alerts_only() {
    let rig = Rig::start().await;
    let (alice, mallory) = (
        test_support::unique("alice"),
        test_support::unique("mallory"),
    );
    let alert = rig
        .deps
        .alerts
        .create(&alice, &args())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let (alice_token, mallory_token) = (rig.token(&alice), rig.token(&mallory));

    let (status, body) = rig.get(&alice_token, "/alerts").await;
    assert_eq!(status, 200, "{body}");
    let alerts = body["alerts"].as_array().cloned().unwrap_or_default();
    assert_eq!(alerts.len(), 1, "{body}");
    assert_eq!(alerts[0]["id"], json!(alert.id));
    assert_eq!(alerts[0]["origin"], json!("FRA"));
    assert_eq!(
        alerts[0]["max_price"],
        json!({"amount": 2500.0, "currency": "EUR"})
    );
    assert_eq!(alerts[0]["matches"], json!([]));

    let (status, body) = rig.get(&mallory_token, "/alerts").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["alerts"], json!([]), "a stranger sees nothing");

    let path = format!("/alerts/{}", alert.id);
    let (status, body) = rig.delete(&mallory_token, &path).await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(body["error"]["code"], json!("not_found"), "{body}");
    let (status, _) = rig.get(&alice_token, "/alerts").await;
    assert_eq!(status, 200);

    let (status, _) = rig.delete(&alice_token, &path).await;
    assert_eq!(status, 204);
    let (status, body) = rig.delete(&alice_token, &path).await;
    assert_eq!(status, 404, "{body}");
    let (_, body) = rig.get(&alice_token, "/alerts").await;
    assert_eq!(body["alerts"], json!([]));

    let (status, body) = rig.get(&alice_token, &path).await;
    assert_eq!(status, 405, "{body}");
    let (status, body) = rig.delete(&alice_token, "/alerts/not%20an%20id").await;
    assert_eq!(status, 400, "{body}");
}
