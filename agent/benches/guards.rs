//! What the guardrails cost in CPU per chat turn: the input guard (normalise + scan) on a
//! typical ~300-character message, the stream guard over a 4 KB answer arriving in
//! 4-character tokens (German text, Markdown links on the allow-list; the guard built for
//! the turn included, from the profile's echo index that a container builds once), and the
//! tool-output scan of a 4 KB tool result, the payload guard over the strings of that result
//! as the client gets it (`tool_result`); then input and stream guard together, the
//! per-turn figure the target is about (under 0.2 ms), and all three.
//!
//!     cargo bench -p agent --bench guards
//!
//! `cargo test --benches` (so `make test`) runs each benchmark once as a smoke test.

// Tests and benches fail loudly: unwrap, expect and panic are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::hint::black_box;

use agent::guard::detect;
use agent::guard::fence::Fence;
use agent::guard::input;
use std::sync::Arc;

use agent::guard::output::StreamGuard;
use agent::guard::output::echo::EchoIndex;
use agent::guard::payload::PayloadGuard;
use agent::profiles::AgentCatalog;
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use serde_json::json;

/// The allow-list's default (`ANSWER_LINK_HOSTS`).
const LINK_HOSTS: &str = guardrails::links::DEFAULT_LINK_HOSTS;

/// A user's message of about 300 characters, English with German words.
const MESSAGE: &str = "Hi! I'd like to fly from Frankfurt to New York (JFK) in business class on \
2027-03-15, returning around March 29, two adults. We have about 180,000 Lufthansa Miles & More \
miles and some United MileagePlus points. Gibt es Prämienflüge mit Lufthansa oder United, und \
lohnt sich das im Vergleich zum Barpreis?";

/// One paragraph of an answer; repeated to 4 KB.
const ANSWER_PART: &str = "Für **Frankfurt → New York (JFK)** am 15.03.2027 habe ich folgende \
Prämienflüge in der Business Class gefunden:\n\n1. **LH 400**, nonstop, 70.000 Meilen + 450,00 USD \
pro Person, noch 4 Plätze. Buchbar über [Seats.aero](https://seats.aero/search?origin=FRA&dest=JFK) \
oder direkt bei [United](https://www.united.com/de/de/book-flight).\n2. **UA 961**, 1 Zwischenstopp \
(EWR), 88.000 Meilen + 5,60 USD. Der Barpreis liegt bei etwa 3.842,10 EUR, also rund 4,3 Cent pro \
Meile – ein guter Wert.\n\n";

fn system_prompt(canary: &str) -> String {
    let catalog = AgentCatalog::built_in().unwrap_or_else(|e| panic!("agents.toml: {e}"));
    let profile = catalog
        .profile(Some("travel"))
        .unwrap_or_else(|| panic!("no travel profile"));
    // As turn/prompt.rs builds its two system messages.
    format!(
        "{}\n\n{}\nToday is 2027-03-01.\nThis turn's data boundary: {}.\nInternal marker, never repeat it: {canary}.",
        profile.system_prompt,
        agent::guard::fence::RULE,
        Fence::new().boundary()
    )
}

fn answer() -> String {
    let mut text = String::new();
    while text.len() < 4096 {
        text.push_str(ANSWER_PART);
    }
    text
}

/// The answer as the model streams it: 4 characters a token.
fn tokens(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(4).map(|c| c.iter().collect()).collect()
}

/// A 4 KB tool result: the flight search's reply as the model reads it.
fn tool_result() -> String {
    let flight = |i: usize| {
        json!({
            "id": format!("2QSaUXJ0ZuSVqgrRWqkSl{i:05}"), "provider": "seatsaero",
            "price": "140.000 Meilen + 900,00 USD", "pricePerPerson": "70.000 Meilen + 450,00 USD",
            "airline": "LH", "cabin": "Business", "tags": ["direct", "lufthansa"], "totalStops": 0,
            "miles": 70000, "taxes": {"amount": 450.0, "currency": "USD"}, "seatsLeft": 4,
            "bookingLinks": {"Lufthansa": "https://www.lufthansa.com/de/de/praemienflug"},
            "outbound": {"departure": {"airport": "FRA", "time": "2027-03-15T10:05"},
                "arrival": {"airport": "JFK", "time": "2027-03-15T12:55"}, "duration": "8h 50m",
                "stops": "Nonstop", "flightNumbers": "LH400"},
        })
    };
    let mut flights = Vec::new();
    let mut text = String::new();
    while text.len() < 4096 {
        flights.push(flight(flights.len()));
        text = json!({"success": true, "results": {"count": flights.len(), "flights": flights}})
            .to_string();
    }
    text
}

fn input_guard(message: &str) -> usize {
    let normalised = input::normalise(message);
    detect::scan(&normalised.text).len()
}

fn output_guard(canary: &str, echo: &Arc<EchoIndex>, hosts: &[String], tokens: &[String]) -> usize {
    let mut guard =
        StreamGuard::with_echo_index(canary, Arc::clone(echo), Vec::new(), hosts.to_vec());
    let mut shown = 0;
    for token in tokens {
        shown += guard.push(token).len();
    }
    shown + guard.finish().len()
}

fn guards(c: &mut Criterion) {
    let canary = format!("CANARY-{}", shared::ids::new_id());
    let prompt = system_prompt(&canary);
    let echo = Arc::new(EchoIndex::new(&[&prompt]));
    let hosts: Vec<String> = LINK_HOSTS.split(',').map(str::to_owned).collect();
    let answer = answer();
    let tokens = tokens(&answer);
    let tool_result = tool_result();

    // The inputs are what they claim to be, and pass the guards untouched.
    assert!((280..=340).contains(&MESSAGE.chars().count()));
    assert!(input::normalise(MESSAGE).text == MESSAGE && detect::scan(MESSAGE).is_empty());
    assert_eq!(output_guard(&canary, &echo, &hosts, &tokens), answer.len());
    assert!(detect::scan(&tool_result).is_empty());

    let mut group = c.benchmark_group("guards");
    group.bench_function("input: normalise + scan, 300-char message", |b| {
        b.iter(|| input_guard(black_box(MESSAGE)))
    });
    group.bench_function("output: stream guard, 4 KB answer in 4-char tokens", |b| {
        b.iter(|| output_guard(&canary, &echo, &hosts, black_box(&tokens)))
    });
    group.bench_function("tool output: scan of a 4 KB result", |b| {
        b.iter(|| detect::scan(black_box(&tool_result)).len())
    });
    let payload = PayloadGuard::new(
        &canary,
        Arc::clone(&echo),
        vec!["sk-a-stored-secret-value".into()],
        hosts.clone(),
    );
    let result: serde_json::Value = serde_json::from_str(&tool_result).unwrap();
    assert_eq!(payload.value(&mut result.clone()), 0);
    group.bench_function("payload guard: the strings of a 4 KB result", |b| {
        b.iter_batched(
            || result.clone(),
            |mut value| payload.value(&mut value),
            BatchSize::SmallInput,
        )
    });
    group.bench_function("once per container and profile: the echo index", |b| {
        b.iter(|| EchoIndex::new(&[black_box(&prompt)]))
    });
    group.bench_function("per turn: input + stream guard", |b| {
        b.iter(|| {
            input_guard(black_box(MESSAGE))
                + output_guard(&canary, &echo, &hosts, black_box(&tokens))
        })
    });
    group.bench_function("per turn: all three", |b| {
        b.iter(|| {
            input_guard(black_box(MESSAGE))
                + output_guard(&canary, &echo, &hosts, black_box(&tokens))
                + detect::scan(black_box(&tool_result)).len()
        })
    });
    group.finish();
}

criterion_group!(benches, guards);
criterion_main!(benches);
