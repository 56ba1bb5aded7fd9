//! The per-user memory store against DynamoDB Local: concurrent changes from several chats
//! all survive, forgetting, and users never see each other's memory.

use crate::common;

use serde_json::json;
use shared::Error;
use shared::domain::flight::Cabin;
use shared::domain::memory::{MemoryChange, MemoryNote, TravelPreferences};
use shared::memory::{DynamoMemoryStore, MemoryStore};

async fn store() -> DynamoMemoryStore {
    DynamoMemoryStore::new(common::dynamodb().await, common::storage().chats_table)
}

fn note(i: usize) -> MemoryChange {
    MemoryChange::Remember {
        preferences: TravelPreferences::default(),
        note: Some(MemoryNote {
            id: format!("n{i}"),
            content: format!("note {i}"),
            created_at: "2026-11-23T00:00:00Z".into(),
        }),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ten_concurrent_notes_all_survive_and_stay_the_users_own() {
    let store = store().await;
    let user = common::unique("user");
    let other = common::unique("user");
    assert!(
        store
            .get(&user)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .is_empty()
    );

    let writes = futures::future::join_all((0..10).map(|i| {
        let (store, user) = (store.clone(), user.clone());
        tokio::spawn(async move { store.change(&user, &note(i)).await })
    }))
    .await;
    assert!(
        writes.iter().all(|w| matches!(w, Ok(Ok(_)))),
        "every write lands"
    );
    let memory = store.get(&user).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(memory.notes.len(), 10);
    assert!(
        store
            .get(&other)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .is_empty(),
        "another user remembers nothing"
    );
}

#[tokio::test]
async fn preferences_merge_forget_and_clear() {
    let store = store().await;
    let user = common::unique("user");
    let remember = |v: serde_json::Value| MemoryChange::Remember {
        preferences: serde_json::from_value(v).unwrap_or_default(),
        note: None,
    };
    store
        .change(
            &user,
            &remember(json!({"home_airport": "MUC", "cabin": "BUSINESS"})),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let memory = store
        .change(&user, &remember(json!({"pax": 2})))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(memory.preferences.cabin, Some(Cabin::Business));
    assert_eq!(memory.preferences.pax, Some(2));

    store
        .change(&user, &MemoryChange::Forget("cabin".into()))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let forgotten_twice = store
        .change(&user, &MemoryChange::Forget("cabin".into()))
        .await;
    assert!(matches!(forgotten_twice, Err(Error::NotFound)));
    let memory = store.get(&user).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(memory.preferences.cabin, None);
    assert_eq!(
        memory.preferences.home_airport.map(|c| c.to_string()),
        Some("MUC".to_owned())
    );

    store.clear(&user).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(
        store
            .get(&user)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .is_empty()
    );
    store
        .clear(&user)
        .await
        .unwrap_or_else(|e| panic!("clearing twice: {e}"));
}
