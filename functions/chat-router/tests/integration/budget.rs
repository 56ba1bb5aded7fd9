//! The daily budget under concurrency, through the router against DynamoDB Local: each LLM
//! call holds its most expensive likely cost against the user's day before it runs, so
//! turns started at once cannot all spend.

use std::time::Duration;

use crate::common::Rig;
use serde_json::json;
use test_support::fake_llm::Reply;

/// Turns started together by one user.
const TURNS: usize = 12;

/// gpt-4o-mini: a hold is the prompt plus `LLM_MAX_TOKENS` (100,000) of completion at
/// $0.60 per million, a little over $0.06; each call then reports that completion.
const ONE_CALL_USD: f64 = 0.06;

/// Twelve concurrent turns against a budget of one call's cost: the turn-start check passes
/// for all of them (nothing is spent yet), but only one call can hold the budget, so at most
/// one call runs and the day's spend stays within the budget plus one call.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_turns_spend_at_most_one_call_past_the_budget() {
    let rig = Rig::with(
        |vars| {
            vars.push(("USER_DAILY_BUDGET_USD".into(), ONE_CALL_USD.to_string()));
            vars.push(("LLM_MAX_TOKENS".into(), "100000".into()));
        },
        None,
    )
    .await;
    for _ in 0..TURNS {
        rig.llm.push(
            Reply::text("A costly answer.")
                .with_usage(1_000, 100_000)
                .with_chunk_delay(Duration::from_millis(30)),
        );
    }
    let user = test_support::unique("concurrent-spender");
    let token = rig.token(&user);
    let since = time::OffsetDateTime::now_utc() - time::Duration::hours(1);
    let turns = futures::future::join_all(
        (0..TURNS).map(|i| rig.chat(Some(&token), json!({ "message": format!("hello {i}") }))),
    )
    .await;

    let calls = rig.llm.request_count();
    assert!(
        calls <= 1,
        "{calls} model calls for a budget of one call's cost"
    );
    let spent = rig.deps.usage.spent_since(&user, since).await.unwrap();
    assert!(
        spent <= 2.0 * ONE_CALL_USD + 0.001,
        "spent ${spent} against a budget of ${ONE_CALL_USD}"
    );
    // Every other turn was refused for the budget: before its stream (429) or, once begun,
    // with an error event naming it; none ended without saying why.
    let mut refused = 0;
    for turn in &turns {
        if turn.status == 429 {
            assert_eq!(
                turn.json["error"]["details"]["limit"],
                json!("daily_budget")
            );
            refused += 1;
        } else if turn.text() != "A costly answer." {
            let error = turn.first("error");
            assert_eq!(error["code"], json!("rate_limited"), "{error}");
            refused += 1;
        }
    }
    assert_eq!(
        refused,
        TURNS - calls,
        "every turn without a call was refused"
    );

    // The next turn, after the first call was settled, is refused before its stream.
    let later = rig.chat(Some(&token), json!({"message": "more"})).await;
    assert_eq!(later.status, 429, "{}", later.json);
    assert_eq!(rig.llm.request_count(), calls);
}
