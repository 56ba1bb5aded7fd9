//! Turn records and event logs against DynamoDB Local: one turn per key, chunks read back in
//! order after any sequence, cancel seen by the next append, each write renewing the turn's
//! liveness, overdue or silent turns interrupted once.

use crate::common;

use std::sync::Arc;

use shared::Error;
use shared::clock::{Clock, ManualClock};
use shared::turns::{
    Begun, DynamoTurnStore, StoredEvent, TurnRecord, TurnStatus, TurnStore, turn_id_for_key,
};
use time::{Duration, OffsetDateTime};

async fn store(clock: Arc<ManualClock>) -> DynamoTurnStore {
    DynamoTurnStore::with_clock(
        common::dynamodb().await,
        common::storage().chats_table,
        clock,
    )
}

fn record(owner: &str, key: &str, now: OffsetDateTime) -> TurnRecord {
    TurnRecord {
        turn_id: turn_id_for_key(owner, key),
        owner_id: owner.to_owned(),
        chat_id: common::unique("chat"),
        created: true,
        fingerprint: "f1".into(),
        status: TurnStatus::Running,
        cancel_requested: false,
        deadline: now + Duration::seconds(30),
        created_at: now,
        refusal: None,
        alive_until: None,
        host: 0,
        request: None,
    }
}

fn events(seqs: std::ops::RangeInclusive<u64>) -> Vec<StoredEvent> {
    seqs.map(|seq| StoredEvent {
        seq,
        event: "assistant_token".into(),
        data: format!("{{\"content\":\"t{seq}\"}}"),
    })
    .collect()
}

fn ok<T>(r: shared::Result<T>) -> T {
    r.unwrap_or_else(|e| panic!("{e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ten_concurrent_begins_with_one_key_make_one_turn() {
    let clock = Arc::new(ManualClock::new(OffsetDateTime::now_utc()));
    let store = store(clock.clone()).await;
    let owner = common::unique("user");
    let first = record(&owner, "key-1", clock.now());
    let results = futures::future::join_all((0..10).map(|i| {
        let store = store.clone();
        let mut record = first.clone();
        record.chat_id = format!("chat-{i}");
        tokio::spawn(async move { store.begin(&record).await })
    }))
    .await;
    let begun: Vec<Begun> = results
        .into_iter()
        .map(|r| ok(r.unwrap_or_else(|e| panic!("{e}"))))
        .collect();
    let new = begun.iter().filter(|b| **b == Begun::New).count();
    assert_eq!(new, 1, "one request begins the turn");
    let chats: std::collections::HashSet<String> = begun
        .iter()
        .filter_map(|b| match b {
            Begun::Existing(r) => Some(r.chat_id.clone()),
            Begun::New => None,
        })
        .collect();
    assert_eq!(chats.len(), 1, "every resend sees the same turn and chat");
}

#[tokio::test]
async fn events_come_back_in_order_after_any_sequence() {
    let clock = Arc::new(ManualClock::new(OffsetDateTime::now_utc()));
    let store = store(clock.clone()).await;
    let owner = common::unique("user");
    let turn = record(&owner, "key", clock.now());
    assert_eq!(ok(store.begin(&turn).await), Begun::New);
    assert!(!ok(store.append(&turn, &events(1..=3)).await));
    assert!(!ok(store.append(&turn, &events(4..=4)).await));
    let mut last = events(5..=6);
    last.push(StoredEvent {
        seq: 7,
        event: "done".into(),
        data: "{}".into(),
    });
    assert!(ok(store.finish(&turn, &last).await));

    let seqs = |events: Vec<StoredEvent>| events.iter().map(|e| e.seq).collect::<Vec<_>>();
    assert_eq!(
        seqs(ok(store.events_after(&turn, 0).await)),
        (1..=7).collect::<Vec<_>>()
    );
    assert_eq!(
        seqs(ok(store.events_after(&turn, 2).await)),
        (3..=7).collect::<Vec<_>>()
    );
    assert_eq!(seqs(ok(store.events_after(&turn, 4).await)), vec![5, 6, 7]);
    assert!(ok(store.events_after(&turn, 7).await).is_empty());

    let stored = ok(store.get(&owner, &turn.chat_id, &turn.turn_id).await);
    assert_eq!(stored.status, TurnStatus::Finished);
    assert!(matches!(
        store
            .get("someone-else", &turn.chat_id, &turn.turn_id)
            .await,
        Err(Error::NotFound)
    ));
    assert!(matches!(
        store.get(&owner, "other-chat", &turn.turn_id).await,
        Err(Error::NotFound)
    ));
    // A finished turn cannot be interrupted, and a resend finds it finished.
    assert!(!ok(store.interrupt(&turn, &events(8..=8)).await));
    assert!(
        matches!(ok(store.begin(&turn).await), Begun::Existing(r) if r.status == TurnStatus::Finished)
    );
}

#[tokio::test]
async fn a_cancel_is_seen_by_the_next_append_and_the_events_still_go_in() {
    let clock = Arc::new(ManualClock::new(OffsetDateTime::now_utc()));
    let store = store(clock.clone()).await;
    let owner = common::unique("user");
    let turn = record(&owner, "key", clock.now());
    ok(store.begin(&turn).await);
    assert!(!ok(store.cancel_requested(&turn).await));
    assert!(matches!(
        store
            .request_cancel("intruder", &turn.chat_id, &turn.turn_id)
            .await,
        Err(Error::NotFound)
    ));
    let canceled = ok(store
        .request_cancel(&owner, &turn.chat_id, &turn.turn_id)
        .await);
    assert!(canceled.cancel_requested);
    assert!(
        ok(store.append(&turn, &events(1..=2)).await),
        "the append reports the cancel"
    );
    assert_eq!(ok(store.events_after(&turn, 0).await).len(), 2);
    assert!(ok(store.cancel_requested(&turn).await));
}

#[tokio::test]
async fn an_overdue_turn_is_interrupted_once_and_a_refused_key_may_begin_again() {
    let clock = Arc::new(ManualClock::new(OffsetDateTime::now_utc()));
    let store = store(clock.clone()).await;
    let owner = common::unique("user");
    let turn = record(&owner, "key", clock.now());
    ok(store.begin(&turn).await);
    ok(store.append(&turn, &events(1..=1)).await);
    assert!(
        !ok(store.interrupt(&turn, &events(2..=2)).await),
        "not overdue yet"
    );
    clock.advance(Duration::seconds(31));
    let ending = events(2..=2);
    let (a, b) = tokio::join!(
        store.interrupt(&turn, &ending),
        store.interrupt(&turn, &ending)
    );
    assert_eq!(u8::from(ok(a)) + u8::from(ok(b)), 1, "one reader ends it");
    assert!(
        !ok(store.finish(&turn, &events(2..=3)).await),
        "a late finish writes nothing"
    );
    assert_eq!(ok(store.events_after(&turn, 0).await).len(), 2);

    let other = record(&owner, "refused-key", clock.now());
    ok(store.begin(&other).await);
    ok(store
        .refuse(&other, serde_json::json!({"code": "rate_limited"}))
        .await);
    let again = TurnRecord {
        created_at: clock.now() + Duration::seconds(1),
        ..other.clone()
    };
    assert_eq!(
        ok(store.begin(&again).await),
        Begun::New,
        "a refused turn's key may try again"
    );
}

#[tokio::test]
async fn each_write_renews_a_turn_and_a_silent_one_is_ended_and_learns_it() {
    let clock = Arc::new(ManualClock::new(OffsetDateTime::now_utc()));
    let store = store(clock.clone()).await;
    let owner = common::unique("user");
    let mut turn = record(&owner, "key-alive", clock.now());
    turn.alive_until = Some(clock.now() + shared::turns::LIVENESS);
    assert_eq!(ok(store.begin(&turn).await), Begun::New);

    // A write 3 s later (events, or none while the turn waits) keeps it alive: 5 s on.
    clock.advance(Duration::seconds(3));
    assert!(!ok(store.append(&turn, &events(1..=2)).await));
    clock.advance(Duration::seconds(3));
    assert!(!ok(store.append(&turn, &[]).await));
    let read = ok(store.get(&owner, &turn.chat_id, &turn.turn_id).await);
    assert_eq!(
        read.alive_until,
        Some(clock.now() + shared::turns::LIVENESS)
    );
    assert!(!read.overdue(clock.now() + Duration::seconds(4)));
    // Then silence: 6 s without a write is overdue, long before the deadline (30 s).
    assert!(read.overdue(clock.now() + Duration::seconds(6)));
    clock.advance(Duration::seconds(6));
    let ending = events(3..=4);
    assert!(ok(store.interrupt(&read, &ending).await));

    // The host was only slow: its next write learns the turn was ended, and adds nothing.
    assert!(ok(store.append(&turn, &events(3..=3)).await));
    assert!(ok(store.append(&turn, &[]).await));
    let log = ok(store.events_from(&turn, 0).await);
    let seqs: Vec<u64> = log.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, [1, 2, 3, 4]);
    assert_eq!(log[2], ending[0], "the interruption's, not the host's");
}

#[tokio::test]
async fn a_silent_turn_is_taken_over_once_and_its_old_host_is_fenced_off() {
    let clock = Arc::new(ManualClock::new(OffsetDateTime::now_utc()));
    let store = store(clock.clone()).await;
    let owner = common::unique("user");
    let mut turn = record(&owner, "key-take", clock.now());
    turn.alive_until = Some(clock.now() + shared::turns::LIVENESS);
    assert_eq!(ok(store.begin(&turn).await), Begun::New);
    assert!(!ok(store.append(&turn, &events(0..=0)).await));

    // Alive: nobody takes it.
    let later = clock.now() + Duration::seconds(60);
    assert_eq!(ok(store.take_over(&turn, later).await), None);
    // Silent for 6 s: one request takes it, a second finds it taken.
    clock.advance(Duration::seconds(6));
    let Some(taken) = ok(store.take_over(&turn, later).await) else {
        panic!("the silent turn was not taken over");
    };
    assert_eq!(taken.host, 1);
    assert_eq!(taken.deadline, later);
    assert_eq!(ok(store.take_over(&turn, later).await), None);
    let read = ok(store.get(&owner, &turn.chat_id, &turn.turn_id).await);
    assert_eq!(read, taken);
    assert!(!read.overdue(clock.now()));

    // The old host comes back: its writes fail and tell it to stop; the new host's hold.
    assert!(ok(store.append(&turn, &events(1..=1)).await));
    assert!(ok(store.append(&turn, &[]).await));
    assert!(!ok(store.finish(&turn, &events(1..=2)).await));
    assert!(!ok(store.append(&taken, &events(1..=2)).await));
    assert!(ok(store.finish(&taken, &events(3..=4)).await));
    let log = ok(store.events_from(&turn, 0).await);
    let seqs: Vec<u64> = log.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, [0, 1, 2, 3, 4]);
    let read = ok(store.get(&owner, &turn.chat_id, &turn.turn_id).await);
    assert_eq!(read.status, TurnStatus::Finished);
}
