//! Chat store against DynamoDB Local: concurrent session-state patches, message order and
//! owner checks.

use crate::common;

use serde_json::json;
use shared::Error;
use shared::chats::{ChatStore, DynamoChatStore, TurnLease};
use shared::clock::ManualClock;
use shared::domain::chat::{MessageToolCall, NewMessage, Role};
use shared::domain::session::{MemoryEntry, PendingGptQuery, SessionStatePatch};

async fn store() -> DynamoChatStore {
    DynamoChatStore::new(common::dynamodb().await, common::storage().chats_table)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn twenty_concurrent_state_patches_all_survive() {
    let store = store().await;
    let owner = common::unique("user");
    let chat = store.create(&owner).await.unwrap_or_else(|e| panic!("{e}"));

    let patches = futures::future::join_all((0..20).map(|i| {
        let store = store.clone();
        let (owner, chat_id) = (owner.clone(), chat.id.clone());
        tokio::spawn(async move {
            let mut patch = SessionStatePatch::default();
            patch.preferences.insert(format!("k{i}"), json!(i));
            patch.memory.push(MemoryEntry {
                kind: "note".into(),
                content: format!("note {i}"),
                created_at: "2026-11-22T00:00:00Z".into(),
            });
            store.patch_state(&owner, &chat_id, &patch).await
        })
    }))
    .await;
    assert!(
        patches.iter().all(|p| matches!(p, Ok(Ok(_)))),
        "every patch is written"
    );

    let chat = store
        .get(&owner, &chat.id)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(chat.version, 20, "one version per patch");
    for i in 0..20 {
        assert_eq!(
            chat.session_state.preferences.get(&format!("k{i}")),
            Some(&json!(i)),
            "patch {i}"
        );
    }
    assert_eq!(chat.session_state.memory.len(), 20);
}

#[tokio::test]
async fn patches_set_and_clear_fields() {
    let store = store().await;
    let owner = common::unique("user");
    let chat = store.create(&owner).await.unwrap_or_else(|e| panic!("{e}"));
    let set: SessionStatePatch =
        serde_json::from_value(json!({"pending_gpt_query": {"query": "Was ist ein Stopover?"}}))
            .unwrap_or_else(|e| panic!("{e}"));
    let written = store
        .patch_state(&owner, &chat.id, &set)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        written.session_state.pending_gpt_query,
        Some(PendingGptQuery {
            query: "Was ist ein Stopover?".into(),
            asked_at: None
        })
    );
    let clear: SessionStatePatch = serde_json::from_value(json!({"pending_gpt_query": null}))
        .unwrap_or_else(|e| panic!("{e}"));
    let written = store
        .patch_state(&owner, &chat.id, &clear)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(written.session_state.pending_gpt_query, None);
    assert_eq!(written.version, 2);
}

#[tokio::test]
async fn messages_keep_their_order() {
    let store = store().await;
    let owner = common::unique("user");
    let chat = store.create(&owner).await.unwrap_or_else(|e| panic!("{e}"));
    let call = MessageToolCall {
        id: "call_1".into(),
        name: "search_flights".into(),
        arguments: r#"{"origin":"FRA"}"#.into(),
    };
    store
        .append_messages(
            &owner,
            &chat.id,
            vec![
                NewMessage::user("Flüge FRA nach JFK?"),
                NewMessage::assistant("", vec![call.clone()]),
                NewMessage::tool("call_1", Some("tc_1".into()), "3 flights"),
                NewMessage::assistant("Here are 3 flights.", vec![]),
            ],
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    for i in 0..150 {
        // More than one transaction's worth, to cross the 100-action limit.
        store
            .append_messages(&owner, &chat.id, vec![NewMessage::user(format!("m{i}"))])
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }
    let many: Vec<NewMessage> = (0..120)
        .map(|i| NewMessage::user(format!("bulk{i}")))
        .collect();
    store
        .append_messages(&owner, &chat.id, many)
        .await
        .unwrap_or_else(|e| panic!("{e}"));

    let last = store
        .recent_messages(&owner, &chat.id, 3)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let texts: Vec<_> = last.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(texts, vec!["bulk117", "bulk118", "bulk119"]);

    let all = store
        .recent_messages(&owner, &chat.id, 1000)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(all.len(), 4 + 150 + 120);
    assert_eq!(all[0].content, "Flüge FRA nach JFK?");
    assert_eq!(all[1].tool_calls, vec![call]);
    assert_eq!(
        (all[2].role, all[2].tool_call_id.as_deref()),
        (Role::Tool, Some("call_1"))
    );
    assert!(
        all.iter().zip(0u64..).all(|(m, seq)| m.seq == seq),
        "messages are numbered 0, 1, 2, … in insertion order"
    );
    assert_eq!(all[4].content, "m0");
    let chat = store
        .get(&owner, &chat.id)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(chat.message_count, 274);
}

/// Writers that hold an old view of the chat (other hosts, other clocks) append after
/// whatever was written since, each step's messages together, none lost or reordered.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn steps_from_stale_views_are_numbered_after_the_chat_not_by_a_clock() {
    let client = common::dynamodb().await;
    let table = common::storage().chats_table;
    let store = DynamoChatStore::new(client.clone(), table.clone());
    let owner = common::unique("user");
    let stale = store.create(&owner).await.unwrap_or_else(|e| panic!("{e}"));

    let steps = futures::future::join_all((0..10).map(|i| {
        // Half the writers run an hour behind: the order must not care.
        let offset = if i % 2 == 0 { 0 } else { -3600 };
        let clock =
            ManualClock::new(time::OffsetDateTime::now_utc() + time::Duration::seconds(offset));
        let store =
            DynamoChatStore::with_clock(client.clone(), table.clone(), std::sync::Arc::new(clock));
        let chat = stale.clone();
        tokio::spawn(async move {
            let messages = vec![
                NewMessage::user(format!("q{i}")),
                NewMessage::assistant(format!("a{i}"), vec![]),
            ];
            store
                .record_step(&chat, messages, &SessionStatePatch::default())
                .await
        })
    }))
    .await;
    assert!(
        steps.iter().all(|s| matches!(s, Ok(Ok(_)))),
        "every step is written"
    );

    let all = store
        .recent_messages(&owner, &stale.id, 100)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(all.len(), 20);
    assert!(all.iter().zip(0u64..).all(|(m, seq)| m.seq == seq));
    for pair in all.chunks(2) {
        let question = pair[0].content.trim_start_matches('q');
        assert_eq!(
            (
                pair[0].role,
                pair[1].role,
                pair[1].content.trim_start_matches('a')
            ),
            (Role::User, Role::Assistant, question),
            "a step's messages stay together"
        );
    }
}

/// A chat written before messages were numbered: its ULID-keyed messages stay first.
#[tokio::test]
async fn a_chat_from_before_numbering_keeps_its_old_messages_first() {
    let client = common::dynamodb().await;
    let table = common::storage().chats_table;
    let store = DynamoChatStore::new(client.clone(), table.clone());
    let owner = common::unique("user");
    let chat_id = common::unique("legacy");
    let now = "2026-11-01T10:00:00Z";
    let av = |v: &str| aws_sdk_dynamodb::types::AttributeValue::S(v.to_owned());
    let mut items = vec![std::collections::HashMap::from([
        ("pk".to_owned(), av(&format!("CHAT#{chat_id}"))),
        ("sk".to_owned(), av("META")),
        ("chat_id".to_owned(), av(&chat_id)),
        ("owner_id".to_owned(), av(&owner)),
        (
            "version".to_owned(),
            aws_sdk_dynamodb::types::AttributeValue::N("0".into()),
        ),
        ("created_at".to_owned(), av(now)),
        ("updated_at".to_owned(), av(now)),
    ])];
    for (ulid, role, content) in [
        ("01JBX0000000000000000000A1", "user", "old question"),
        ("01JBX0000000000000000000A2", "assistant", "old answer"),
    ] {
        items.push(std::collections::HashMap::from([
            ("pk".to_owned(), av(&format!("CHAT#{chat_id}"))),
            ("sk".to_owned(), av(&format!("MSG#{ulid}"))),
            ("chat_id".to_owned(), av(&chat_id)),
            ("owner_id".to_owned(), av(&owner)),
            ("message_id".to_owned(), av(ulid)),
            ("role".to_owned(), av(role)),
            ("content".to_owned(), av(content)),
            ("created_at".to_owned(), av(now)),
        ]));
    }
    for item in items {
        client
            .put_item()
            .table_name(&table)
            .set_item(Some(item))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }

    let chat = store
        .get(&owner, &chat_id)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let messages = vec![
        NewMessage::user("new question"),
        NewMessage::assistant("new answer", vec![]),
    ];
    let chat = store
        .record_step(&chat, messages, &SessionStatePatch::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(chat.message_count, 2);
    store
        .append_messages(&owner, &chat_id, vec![NewMessage::user("next")])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let all = store
        .recent_messages(&owner, &chat_id, 10)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let texts: Vec<_> = all.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(
        texts,
        [
            "old question",
            "old answer",
            "new question",
            "new answer",
            "next"
        ]
    );
}

#[tokio::test]
async fn another_user_can_neither_read_nor_change_a_chat() {
    let store = store().await;
    let owner = common::unique("user");
    let stranger = common::unique("stranger");
    let chat = store.create(&owner).await.unwrap_or_else(|e| panic!("{e}"));
    store
        .append_messages(&owner, &chat.id, vec![NewMessage::user("private")])
        .await
        .unwrap_or_else(|e| panic!("{e}"));

    let mut patch = SessionStatePatch::default();
    patch.preferences.insert("hijack".into(), json!(true));
    assert!(matches!(
        store.get(&stranger, &chat.id).await,
        Err(Error::NotFound)
    ));
    assert!(matches!(
        store.patch_state(&stranger, &chat.id, &patch).await,
        Err(Error::NotFound)
    ));
    assert!(matches!(
        store.recent_messages(&stranger, &chat.id, 10).await,
        Err(Error::NotFound)
    ));
    assert!(matches!(
        store
            .append_messages(&stranger, &chat.id, vec![NewMessage::user("spam")])
            .await,
        Err(Error::NotFound)
    ));
    // A chat that does not exist looks the same.
    assert!(matches!(
        store.get(&owner, "no-such-chat").await,
        Err(Error::NotFound)
    ));

    let chat = store
        .get(&owner, &chat.id)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(chat.version, 0, "nothing changed");
    let messages = store
        .recent_messages(&owner, &chat.id, 10)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(messages.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_step_writes_its_messages_and_patch_together_and_keeps_concurrent_patches() {
    let store = store().await;
    let owner = common::unique("user");
    let chat = store.create(&owner).await.unwrap_or_else(|e| panic!("{e}"));

    // Another writer patches after the turn read the chat: the step's view is stale.
    let mut theirs = SessionStatePatch::default();
    theirs.preferences.insert("seat".into(), json!("aisle"));
    store
        .patch_state(&owner, &chat.id, &theirs)
        .await
        .unwrap_or_else(|e| panic!("{e}"));

    let mut ours = SessionStatePatch::default();
    ours.preferences.insert("cabin".into(), json!("business"));
    let written = store
        .record_step(
            &chat,
            vec![
                NewMessage::user("hi"),
                NewMessage::assistant("hello", Vec::new()),
            ],
            &ours,
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(written.version, 2, "re-read, then written on top");
    assert_eq!(
        written.session_state.preferences.get("seat"),
        Some(&json!("aisle"))
    );
    assert_eq!(
        written.session_state.preferences.get("cabin"),
        Some(&json!("business"))
    );

    let (stored, messages) = store
        .open(&owner, &chat.id, 10)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(stored.version, written.version);
    assert_eq!(stored.session_state, written.session_state);
    let texts: Vec<&str> = messages.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(texts, ["hi", "hello"]);

    // Without a patch: the messages only, and the chat comes back as it was.
    let same = store
        .record_step(
            &written,
            vec![NewMessage::user("again")],
            &SessionStatePatch::default(),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(same.version, written.version);
    assert_eq!(
        store
            .recent_messages(&owner, &chat.id, 10)
            .await
            .map(|m| m.len())
            .ok(),
        Some(3)
    );
}

#[tokio::test]
async fn a_step_and_open_refuse_a_foreign_chat() {
    let store = store().await;
    let owner = common::unique("user");
    let stranger = common::unique("stranger");
    let chat = store.create(&owner).await.unwrap_or_else(|e| panic!("{e}"));
    let mut forged = chat.clone();
    forged.owner_id = stranger.clone();
    let mut patch = SessionStatePatch::default();
    patch.preferences.insert("x".into(), json!(1));
    for patch in [patch, SessionStatePatch::default()] {
        assert!(matches!(
            store
                .record_step(&forged, vec![NewMessage::user("spam")], &patch)
                .await,
            Err(Error::NotFound)
        ));
    }
    assert!(matches!(
        store.open(&stranger, &chat.id, 10).await,
        Err(Error::NotFound)
    ));
    let (_, messages) = store
        .open(&owner, &chat.id, 10)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(messages.is_empty(), "nothing was written for the stranger");
}

fn lease(turn_id: &str, secs: i64) -> TurnLease {
    TurnLease {
        turn_id: turn_id.to_owned(),
        until: time::OffsetDateTime::now_utc() + time::Duration::seconds(secs),
    }
}

/// One turn at a time: a held chat refuses another turn with the holder's id; the last
/// step lets go of it in its own write; an expired lease is taken over, and the late last
/// step of the turn that lost it writes its messages but leaves the new holder's lease.
#[tokio::test]
async fn a_turn_lease_holds_the_chat_until_the_last_step_or_its_deadline() {
    let store = store().await;
    let owner = common::unique("lease");
    let chat = store
        .create_held(&owner, &shared::ids::new_id(), &lease("t1", 60))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    match store
        .open_held(&owner, &chat.id, &lease("t2", 60), 10)
        .await
    {
        Err(Error::TurnInProgress { turn_id }) => assert_eq!(turn_id, "t1"),
        other => panic!("expected TurnInProgress, got {other:?}"),
    }
    assert!(matches!(
        store
            .open_held("someone-else", &chat.id, &lease("t9", 60), 10)
            .await,
        Err(Error::NotFound)
    ));
    let patch = SessionStatePatch {
        timezone: Some("Europe/Berlin".into()),
        ..SessionStatePatch::default()
    };
    let answer = vec![
        NewMessage::user("hi"),
        NewMessage::assistant("hello", Vec::new()),
    ];
    let written = store
        .record_last_step(&chat, answer, &patch, "t1")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        written.session_state.timezone.as_deref(),
        Some("Europe/Berlin")
    );

    // Released: the next turn takes it, and sees the first turn's messages.
    let (_, history) = store
        .open_held(&owner, &chat.id, &lease("t2", -1), 10)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(history.len(), 2);
    // t2's lease is already past its deadline (its host ended it): t3 takes over.
    let (held, _) = store
        .open_held(&owner, &chat.id, &lease("t3", 60), 10)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    // t2's late last step is written, but t3 keeps the chat.
    store
        .record_last_step(
            &held,
            vec![NewMessage::user("late")],
            &SessionStatePatch::default(),
            "t2",
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    match store
        .open_held(&owner, &chat.id, &lease("t4", 60), 10)
        .await
    {
        Err(Error::TurnInProgress { turn_id }) => assert_eq!(turn_id, "t3"),
        other => panic!("expected TurnInProgress, got {other:?}"),
    }
    store
        .release(&chat.id, "t3")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let (_, history) = store
        .open_held(&owner, &chat.id, &lease("t4", 60), 10)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(history.last().map(|m| m.content.as_str()), Some("late"));
}
