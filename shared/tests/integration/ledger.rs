//! Tool-call ledger against DynamoDB Local: dedupe under concurrency, the status state
//! machine, lease takeover with fencing, the audit log and owner checks.

use crate::common;

use std::sync::Arc;

use serde_json::{Value, json};
use shared::Error;
use shared::clock::ManualClock;
use shared::config::LedgerConfig;
use shared::domain::tool_call::{ToolCallStatus, ToolName};
use shared::ledger::{
    Claim, ClaimMode, ClaimRequest, ClaimedCall, DynamoLedger, Outcome, ToolCallLedger,
};
use time::{Duration, OffsetDateTime};

const LEASE: Duration = Duration::seconds(30);

struct Fixture {
    ledger: DynamoLedger,
    clock: Arc<ManualClock>,
    owner: String,
    chat: String,
}

async fn fixture() -> Fixture {
    let clock = Arc::new(ManualClock::new(OffsetDateTime::now_utc()));
    let ledger = DynamoLedger::with_clock(
        common::dynamodb().await,
        common::storage().tool_calls_table,
        LedgerConfig::default(),
        clock.clone(),
    );
    Fixture {
        ledger,
        clock,
        owner: common::unique("user"),
        chat: common::unique("chat"),
    }
}

impl Fixture {
    fn request(&self, args: Value, mode: ClaimMode) -> ClaimRequest {
        ClaimRequest {
            owner_id: self.owner.clone(),
            chat_id: self.chat.clone(),
            tool: ToolName::SEARCH_KNOWLEDGE_BASE,
            request: args,
            mode,
        }
    }

    async fn claim(&self, args: Value) -> Claim {
        self.ledger
            .record_and_claim(self.request(args, ClaimMode::Run { lease: LEASE }))
            .await
            .unwrap_or_else(|e| panic!("record_and_claim: {e}"))
    }

    async fn claimed(&self, args: Value) -> ClaimedCall {
        match self.claim(args).await {
            Claim::Claimed(call) => call,
            Claim::Duplicate(record) => panic!("expected a claim, got duplicate {record:?}"),
        }
    }
}

fn run() -> ClaimMode {
    ClaimMode::Run { lease: LEASE }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_concurrent_identical_calls_claim_once_twenty_times_over() {
    let f = fixture().await;
    for trial in 0..20 {
        let chat = common::unique("chat");
        let args = json!({"query": "Miles & More Prämienflug", "top_k": 6, "trial": trial});
        let claims = futures::future::join_all((0..50).map(|_| {
            let ledger = f.ledger.clone();
            let request = ClaimRequest {
                owner_id: f.owner.clone(),
                chat_id: chat.clone(),
                tool: ToolName::SEARCH_KNOWLEDGE_BASE,
                request: args.clone(),
                mode: run(),
            };
            tokio::spawn(async move { ledger.record_and_claim(request).await })
        }))
        .await;
        let mut claimed = Vec::new();
        let mut duplicates = Vec::new();
        for claim in claims {
            match claim.ok().and_then(Result::ok) {
                Some(Claim::Claimed(call)) => claimed.push(call),
                Some(Claim::Duplicate(record)) => duplicates.push(record),
                None => panic!("a claim failed in trial {trial}"),
            }
        }
        assert_eq!(claimed.len(), 1, "trial {trial}: exactly one claims");
        assert_eq!(duplicates.len(), 49, "trial {trial}");
        let id = &claimed[0].id;
        assert!(
            duplicates.iter().all(|d| &d.id == id),
            "trial {trial}: same id for all"
        );
        assert!(
            duplicates
                .iter()
                .all(|d| d.status == ToolCallStatus::Running)
        );
        assert_eq!(claimed[0].attempt, 1);
    }
}

#[tokio::test]
async fn duplicate_of_a_succeeded_call_returns_the_stored_response() {
    let f = fixture().await;
    let args = json!({"query": "stopover rules", "top_k": 6});
    let mut executions = 0;
    let mut answers = Vec::new();
    for _ in 0..3 {
        match f.claim(args.clone()).await {
            Claim::Claimed(call) => {
                executions += 1;
                let response = json!({"hits": [{"id": "c1", "score": 0.9}]});
                f.ledger
                    .finish(&call, Outcome::Succeeded(response.clone()))
                    .await
                    .unwrap_or_else(|e| panic!("finish: {e}"));
                answers.push(response);
            }
            Claim::Duplicate(record) => {
                assert_eq!(record.status, ToolCallStatus::Succeeded);
                answers.push(record.response.unwrap_or_default());
            }
        }
        f.clock.advance(Duration::seconds(1));
    }
    assert_eq!(executions, 1);
    assert!(answers.iter().all(|a| a == &answers[0]));
}

#[tokio::test]
async fn failed_timeout_canceled_and_expired_calls_run_again_as_new_attempts() {
    let f = fixture().await;
    let args = json!({"query": "fuel surcharges"});

    let first = f.claimed(args.clone()).await;
    f.ledger
        .finish(&first, Outcome::Failed("upstream 503".into()))
        .await
        .unwrap_or_else(|e| panic!("{e}"));

    let second = f.claimed(args.clone()).await;
    assert_eq!((second.id.as_str(), second.attempt), (first.id.as_str(), 2));
    f.ledger
        .finish(&second, Outcome::Timeout("took 5 s".into()))
        .await
        .unwrap_or_else(|e| panic!("{e}"));

    let third = f.claimed(args.clone()).await;
    assert_eq!(third.attempt, 3);
    f.ledger
        .finish(&third, Outcome::Canceled("user left".into()))
        .await
        .unwrap_or_else(|e| panic!("{e}"));

    let fourth = f.claimed(args.clone()).await;
    assert_eq!(fourth.attempt, 4);
    f.ledger
        .finish(&fourth, Outcome::Succeeded(json!({"ok": 4})))
        .await
        .unwrap_or_else(|e| panic!("{e}"));

    // Within the window the success is reused ...
    f.clock.advance(Duration::minutes(9));
    assert!(matches!(f.claim(args.clone()).await, Claim::Duplicate(_)));
    // ... after it, the call runs again.
    f.clock.advance(Duration::minutes(2));
    let fifth = f.claimed(args.clone()).await;
    assert_eq!(fifth.attempt, 5);
    f.ledger
        .finish(&fifth, Outcome::Succeeded(json!({"ok": 5})))
        .await
        .unwrap_or_else(|e| panic!("{e}"));

    let record = f
        .ledger
        .get(&f.owner, &f.chat, &first.id)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(record.status, ToolCallStatus::Succeeded);
    assert_eq!(record.response, Some(json!({"ok": 5})));
    let audit: Vec<(u32, ToolCallStatus, Option<&str>)> = record
        .attempts
        .iter()
        .map(|a| (a.attempt, a.status, a.error.as_deref()))
        .collect();
    assert_eq!(
        audit,
        vec![
            (5, ToolCallStatus::Succeeded, None),
            (4, ToolCallStatus::Succeeded, None),
            (3, ToolCallStatus::Canceled, Some("user left")),
            (2, ToolCallStatus::Timeout, Some("took 5 s")),
            (1, ToolCallStatus::Failed, Some("upstream 503")),
        ],
        "every attempt, newest first"
    );
    assert!(
        record
            .attempts
            .windows(2)
            .all(|w| w[0].began_at() >= w[1].began_at())
    );

    // A canceled queued call runs again too.
    let queued_args = json!({"query": "queued then canceled"});
    let queued = match f
        .ledger
        .record_and_claim(f.request(queued_args.clone(), ClaimMode::Enqueue))
        .await
    {
        Ok(Claim::Claimed(call)) => call,
        other => panic!("enqueue: {other:?}"),
    };
    assert_eq!(queued.status, ToolCallStatus::Queued);
    let canceled = f
        .ledger
        .cancel(&f.owner, &f.chat, &queued.id)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(canceled.status, ToolCallStatus::Canceled);
    assert_eq!(f.claimed(queued_args).await.attempt, 2);
}

#[tokio::test]
async fn expired_lease_is_taken_over_and_the_old_holder_is_fenced() {
    let f = fixture().await;
    let args = json!({"query": "slow upstream"});
    let old = f.claimed(args.clone()).await;

    // Lease still valid: a second caller is a duplicate of the running call.
    f.clock.advance(Duration::seconds(20));
    match f.claim(args.clone()).await {
        Claim::Duplicate(record) => assert_eq!(record.status, ToolCallStatus::Running),
        Claim::Claimed(_) => panic!("claimed a call whose lease is valid"),
    }

    f.clock.advance(Duration::seconds(11));
    let new = f.claimed(args.clone()).await;
    assert!(new.took_over);
    assert_eq!((new.id.as_str(), new.attempt), (old.id.as_str(), 2));

    let late = f
        .ledger
        .finish(&old, Outcome::Succeeded(json!({"from": "old"})))
        .await;
    assert!(
        matches!(
            late,
            Err(Error::Fenced {
                attempt: 1,
                current: 2,
                ..
            })
        ),
        "old holder must be fenced: {late:?}"
    );
    f.ledger
        .finish(&new, Outcome::Succeeded(json!({"from": "new"})))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    // The old holder's other outcomes are fenced as well, after the new result stands.
    let late = f.ledger.finish(&old, Outcome::Failed("late".into())).await;
    assert!(matches!(late, Err(Error::Fenced { .. })), "{late:?}");

    let record = f
        .ledger
        .get(&f.owner, &f.chat, &old.id)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(record.status, ToolCallStatus::Succeeded);
    assert_eq!(record.response, Some(json!({"from": "new"})));
    assert_eq!(
        record.attempts[1].status,
        ToolCallStatus::Timeout,
        "superseded attempt closed"
    );
    assert!(
        record.attempts[1]
            .error
            .as_deref()
            .is_some_and(|e| e.contains("lease expired"))
    );
}

#[tokio::test]
async fn a_lease_ended_early_is_taken_over_at_once_and_fences_its_old_holder() {
    let f = fixture().await;
    let args = json!({"query": "the dead host's call"});
    let old = f.claimed(args.clone()).await;

    // The lease still runs; its holder is known to be gone: the lease is ended now.
    f.clock.advance(Duration::seconds(1));
    assert!(
        f.ledger
            .expire_lease(&f.chat, &old.id, old.attempt)
            .await
            .unwrap()
    );
    // Once only, and only for the running attempt.
    assert!(
        !f.ledger
            .expire_lease(&f.chat, &old.id, old.attempt)
            .await
            .unwrap()
    );
    assert!(!f.ledger.expire_lease(&f.chat, &old.id, 7).await.unwrap());

    let new = f.claimed(args.clone()).await;
    assert!(new.took_over);
    assert_eq!((new.id.as_str(), new.attempt), (old.id.as_str(), 2));
    let late = f
        .ledger
        .finish(&old, Outcome::Succeeded(json!({"from": "old"})))
        .await;
    assert!(matches!(late, Err(Error::Fenced { .. })), "{late:?}");
    f.ledger
        .finish(&new, Outcome::Succeeded(json!({"from": "new"})))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    // An ended call has no lease to end.
    assert!(
        !f.ledger
            .expire_lease(&f.chat, &old.id, new.attempt)
            .await
            .unwrap()
    );
}

#[tokio::test]
async fn illegal_transitions_are_rejected() {
    let f = fixture().await;
    let illegal = |r: &shared::Result<_>, from: ToolCallStatus, to: ToolCallStatus| {
        assert!(
            matches!(r, Err(Error::IllegalTransition { from: a, to: b, .. }) if *a == from && *b == to),
            "{from} -> {to} must be rejected, got {:?}",
            r.as_ref().map(|_| ())
        );
    };

    // queued -> succeeded / failed (finish without start)
    let queued = match f
        .ledger
        .record_and_claim(f.request(json!({"q": 1}), ClaimMode::Enqueue))
        .await
    {
        Ok(Claim::Claimed(call)) => call,
        other => panic!("{other:?}"),
    };
    illegal(
        &f.ledger
            .finish(&queued, Outcome::Succeeded(json!({})))
            .await,
        ToolCallStatus::Queued,
        ToolCallStatus::Succeeded,
    );
    illegal(
        &f.ledger.finish(&queued, Outcome::Failed("x".into())).await,
        ToolCallStatus::Queued,
        ToolCallStatus::Failed,
    );
    // queued -> queued (requeue is only for failed / timeout)
    illegal(
        &f.ledger.requeue(&f.chat, &queued.id, 1).await.map(|_| ()),
        ToolCallStatus::Queued,
        ToolCallStatus::Queued,
    );

    // Legal path: queued -> running -> failed -> queued -> running -> succeeded.
    let running = f
        .ledger
        .start_queued(&f.chat, &queued.id, 1, LEASE)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(running.status, ToolCallStatus::Running);
    // running -> running is not a start of a queued call
    illegal(
        &f.ledger
            .start_queued(&f.chat, &queued.id, 1, LEASE)
            .await
            .map(|_| ()),
        ToolCallStatus::Running,
        ToolCallStatus::Running,
    );
    // running -> queued
    illegal(
        &f.ledger.requeue(&f.chat, &queued.id, 1).await.map(|_| ()),
        ToolCallStatus::Running,
        ToolCallStatus::Queued,
    );
    f.ledger
        .finish(&running, Outcome::Failed("503".into()))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    // failed -> running directly, and failed -> failed
    illegal(
        &f.ledger
            .start_queued(&f.chat, &queued.id, 1, LEASE)
            .await
            .map(|_| ()),
        ToolCallStatus::Failed,
        ToolCallStatus::Running,
    );
    illegal(
        &f.ledger
            .finish(&running, Outcome::Failed("again".into()))
            .await,
        ToolCallStatus::Failed,
        ToolCallStatus::Failed,
    );
    let retry = f
        .ledger
        .requeue(&f.chat, &queued.id, 1)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((retry.status, retry.attempt), (ToolCallStatus::Queued, 2));
    let running = f
        .ledger
        .start_queued(&f.chat, &queued.id, 2, LEASE)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    f.ledger
        .finish(&running, Outcome::Succeeded(json!({"ok": true})))
        .await
        .unwrap_or_else(|e| panic!("{e}"));

    // succeeded -> running / succeeded / queued / canceled
    illegal(
        &f.ledger
            .start_queued(&f.chat, &queued.id, 2, LEASE)
            .await
            .map(|_| ()),
        ToolCallStatus::Succeeded,
        ToolCallStatus::Running,
    );
    illegal(
        &f.ledger
            .finish(&running, Outcome::Succeeded(json!({})))
            .await,
        ToolCallStatus::Succeeded,
        ToolCallStatus::Succeeded,
    );
    illegal(
        &f.ledger.requeue(&f.chat, &queued.id, 2).await.map(|_| ()),
        ToolCallStatus::Succeeded,
        ToolCallStatus::Queued,
    );
    illegal(
        &f.ledger
            .cancel(&f.owner, &f.chat, &queued.id)
            .await
            .map(|_| ()),
        ToolCallStatus::Succeeded,
        ToolCallStatus::Canceled,
    );

    // canceled -> running / succeeded
    let doomed = match f
        .ledger
        .record_and_claim(f.request(json!({"q": 2}), ClaimMode::Enqueue))
        .await
    {
        Ok(Claim::Claimed(call)) => call,
        other => panic!("{other:?}"),
    };
    f.ledger
        .cancel(&f.owner, &f.chat, &doomed.id)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    illegal(
        &f.ledger
            .start_queued(&f.chat, &doomed.id, 1, LEASE)
            .await
            .map(|_| ()),
        ToolCallStatus::Canceled,
        ToolCallStatus::Running,
    );
    illegal(
        &f.ledger.requeue(&f.chat, &doomed.id, 1).await.map(|_| ()),
        ToolCallStatus::Canceled,
        ToolCallStatus::Queued,
    );

    // A running call can be canceled; its holder's finish is then rejected.
    let live = f.claimed(json!({"q": 3})).await;
    f.ledger
        .cancel(&f.owner, &f.chat, &live.id)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    illegal(
        &f.ledger.finish(&live, Outcome::Succeeded(json!({}))).await,
        ToolCallStatus::Canceled,
        ToolCallStatus::Succeeded,
    );

    let record = f
        .ledger
        .get(&f.owner, &f.chat, &queued.id)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let statuses: Vec<_> = record
        .attempts
        .iter()
        .map(|a| (a.attempt, a.status))
        .collect();
    assert_eq!(
        statuses,
        vec![(2, ToolCallStatus::Succeeded), (1, ToolCallStatus::Failed)]
    );
}

#[tokio::test]
async fn audit_log_lists_a_chats_calls_newest_first_and_only_for_its_owner() {
    let f = fixture().await;
    let mut ids = Vec::new();
    for i in 0..5 {
        let call = f.claimed(json!({"query": format!("q{i}")})).await;
        f.ledger
            .finish(&call, Outcome::Succeeded(json!({"i": i})))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        ids.push(call.id);
        f.clock.advance(Duration::seconds(1));
    }
    ids.reverse();

    let first = f
        .ledger
        .list(&f.owner, &f.chat, 3, None)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(first.items.len(), 3);
    let cursor = first
        .next_cursor
        .clone()
        .unwrap_or_else(|| panic!("a second page"));
    let second = f
        .ledger
        .list(&f.owner, &f.chat, 3, Some(&cursor))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let listed: Vec<_> = first
        .items
        .iter()
        .chain(&second.items)
        .map(|r| r.id.clone())
        .collect();
    assert_eq!(listed, ids, "newest first across pages");

    let stranger = common::unique("stranger");
    let theirs = f
        .ledger
        .list(&stranger, &f.chat, 10, None)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(theirs.items.is_empty(), "another user lists nothing");
    assert!(matches!(
        f.ledger.get(&stranger, &f.chat, &ids[0]).await,
        Err(Error::NotFound)
    ));
    assert!(matches!(
        f.ledger.cancel(&stranger, &f.chat, &ids[0]).await,
        Err(Error::NotFound)
    ));
    // Claiming inside someone else's chat looks like a missing chat, and changes nothing.
    let mut foreign = f.request(json!({"query": "q0"}), run());
    foreign.owner_id = stranger;
    f.clock.advance(Duration::hours(1));
    assert!(matches!(
        f.ledger.record_and_claim(foreign).await,
        Err(Error::NotFound)
    ));
    assert!(matches!(
        f.ledger.list(&f.owner, &f.chat, 3, Some("zz")).await,
        Err(Error::Invalid(_))
    ));
}

#[tokio::test]
async fn round_trips_per_tool_call() {
    let (client, counter) = common::counted_dynamodb().await;
    let ledger = DynamoLedger::new(
        client,
        common::storage().tool_calls_table,
        LedgerConfig::default(),
    );
    let request = ClaimRequest {
        owner_id: common::unique("user"),
        chat_id: common::unique("chat"),
        tool: ToolName::ASK_GPT,
        request: json!({"query": "hello"}),
        mode: run(),
    };
    counter.take();
    let call = match ledger.record_and_claim(request.clone()).await {
        Ok(Claim::Claimed(call)) => call,
        other => panic!("{other:?}"),
    };
    assert_eq!(counter.take(), 1, "record-and-claim is one write");
    ledger
        .finish(&call, Outcome::Succeeded(json!({"answer": 42})))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(counter.take(), 1, "finish is one write");
    match ledger.record_and_claim(request).await {
        Ok(Claim::Duplicate(record)) => assert_eq!(record.response, Some(json!({"answer": 42}))),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        counter.take(),
        1,
        "a duplicate costs its one conditional write, no read"
    );
}

#[tokio::test]
async fn same_flight_search_in_other_key_order_or_case_is_one_call() {
    use shared::domain::flight::FlightSearchInput;
    use shared::ledger::DedupeKey;

    let parse = |text: &str| -> FlightSearchInput {
        serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
    };
    let a = parse(
        r#"{"origin":"FRA","destination":"JFK","depart_date":"2025-03-15","cabin":"BUSINESS","award_only":true}"#,
    );
    let b = parse(
        r#"{"cabin":"business","depart_date":"2025-03-15","destination":"jfk","origin":"fra","pax":1,"loyalty_programs":[]}"#,
    );
    let other_cabin =
        parse(r#"{"origin":"FRA","destination":"JFK","depart_date":"2025-03-15","cabin":"FIRST"}"#);
    let other_date = parse(
        r#"{"origin":"FRA","destination":"JFK","depart_date":"2025-03-16","cabin":"BUSINESS"}"#,
    );
    let other_pax = parse(
        r#"{"origin":"FRA","destination":"JFK","depart_date":"2025-03-15","cabin":"BUSINESS","pax":2}"#,
    );

    let key = |input: &FlightSearchInput| {
        DedupeKey::new("chat-1", ToolName::SEARCH_FLIGHTS, &input.canonical())
    };
    assert_eq!(
        key(&a),
        key(&b),
        "key order, IATA case and spelled-out defaults do not matter"
    );
    for different in [&other_cabin, &other_date, &other_pax] {
        assert_ne!(key(&a), key(different));
    }

    // And through the ledger: the second spelling is a duplicate of the first.
    let f = fixture().await;
    let first = ClaimRequest {
        tool: ToolName::SEARCH_FLIGHTS,
        ..f.request(a.canonical(), run())
    };
    let second = ClaimRequest {
        tool: ToolName::SEARCH_FLIGHTS,
        ..f.request(b.canonical(), run())
    };
    let claimed = match f.ledger.record_and_claim(first).await {
        Ok(Claim::Claimed(call)) => call,
        other => panic!("{other:?}"),
    };
    match f.ledger.record_and_claim(second).await {
        Ok(Claim::Duplicate(record)) => assert_eq!(record.id, claimed.id),
        other => panic!("expected a duplicate, got {other:?}"),
    }
}

/// A queued call that no worker picks up does not block identical calls until its TTL:
/// after its queue deadline, the next identical call takes it over, exactly once among 10
/// concurrent ones, and the job of the old attempt can no longer start.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_queued_call_no_worker_picks_up_is_taken_over_once_after_its_deadline() {
    let f = fixture().await;
    let args = json!({"query": "never picked up"});
    let queued = match f
        .ledger
        .record_and_claim(f.request(args.clone(), ClaimMode::Enqueue))
        .await
        .unwrap_or_else(|e| panic!("{e}"))
    {
        Claim::Claimed(call) => call,
        Claim::Duplicate(record) => panic!("expected a claim, got {record:?}"),
    };

    // Within the deadline (30 minutes by default), an identical call waits for the queue.
    f.clock.advance(Duration::minutes(29));
    match f.claim(args.clone()).await {
        Claim::Duplicate(record) => assert_eq!(record.status, ToolCallStatus::Queued),
        Claim::Claimed(_) => panic!("took over a queued call before its deadline"),
    }

    f.clock.advance(Duration::minutes(2));
    let claims = futures::future::join_all((0..10).map(|_| {
        let ledger = f.ledger.clone();
        let request = f.request(args.clone(), run());
        tokio::spawn(async move { ledger.record_and_claim(request).await })
    }))
    .await;
    let claimed: Vec<ClaimedCall> = claims
        .into_iter()
        .filter_map(|c| match c.ok().and_then(Result::ok) {
            Some(Claim::Claimed(call)) => Some(call),
            Some(Claim::Duplicate(_)) => None,
            None => panic!("a claim failed"),
        })
        .collect();
    assert_eq!(claimed.len(), 1, "exactly one takes it over");
    assert!(claimed[0].took_over);
    assert_eq!(
        (claimed[0].id.as_str(), claimed[0].attempt),
        (queued.id.as_str(), 2)
    );

    let late = f.ledger.start_queued(&f.chat, &queued.id, 1, LEASE).await;
    assert!(late.is_err(), "the old job cannot start: {late:?}");
    let record = f
        .ledger
        .get(&f.owner, &f.chat, &queued.id)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(record.status, ToolCallStatus::Running);
    // Attempts are listed newest first: the superseded queued attempt is closed.
    assert_eq!(record.attempts[1].status, ToolCallStatus::Timeout);
}
