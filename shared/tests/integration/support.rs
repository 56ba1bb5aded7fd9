//! Requests for a person against DynamoDB Local: kept for the operator, newest first,
//! never overwritten.

use crate::common;

use shared::domain::support::SupportRequest;
use shared::support::{DynamoSupportRequests, SupportRequests};

fn request(id: &str, created_at: &str) -> SupportRequest {
    SupportRequest {
        id: id.to_owned(),
        owner: common::unique("traveller"),
        chat_id: "chat-1".into(),
        summary: "I need a refund for a cancelled flight".into(),
        language: "en".into(),
        created_at: created_at.into(),
    }
}

#[tokio::test]
async fn requests_are_kept_for_the_operator_newest_first_and_never_overwritten() {
    let store = DynamoSupportRequests::new(common::dynamodb().await, common::storage().chats_table);
    // Centuries ahead and later with every run, so no other test's or run's requests come
    // before them.
    let at = |secs: i64| {
        (time::OffsetDateTime::now_utc()
            + time::Duration::days(365 * 900)
            + time::Duration::seconds(secs))
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
    };
    let older = request(&common::unique("SR-a"), &at(0));
    let newer = request(&common::unique("SR-b"), &at(1));
    for r in [&older, &newer] {
        store.record(r).await.unwrap_or_else(|e| panic!("{e}"));
    }
    let newest = store.newest(2).await.unwrap_or_else(|e| panic!("{e}"));
    let ids: Vec<&str> = newest.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, [newer.id.as_str(), older.id.as_str()]);
    assert_eq!(newest[0], newer);
    // The same request again is refused, not written over.
    assert!(store.record(&older).await.is_err());
}
