//! What IAM-signing a tool call costs: SigV4 over a typical flight-search body (about 300
//! bytes) with the user header, as the chat-router and the tool worker do before every call
//! to a tool function (docs/security.md, "Why SigV4 and not Lambda Invoke").
//!
//!     cargo bench -p agent --bench sign
//!
//! `cargo test --benches` (so `make test`) runs it once as a smoke test.

// Tests and benches fail loudly: unwrap, expect and panic are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::hint::black_box;

use agent::tools::SigV4Signer;
use aws_credential_types::Credentials;
use aws_credential_types::provider::SharedCredentialsProvider;
use criterion::{Criterion, criterion_group, criterion_main};

const URL: &str =
    "https://abc123example.execute-api.eu-central-1.amazonaws.com/internal/flights/award";

const BODY: &str = r#"{"origin":"FRA","destination":"JFK","departure_date":"2027-03-15","return_date":"2027-03-29","adults":2,"children":0,"infants":0,"cabin":"business","flexibility_days":0,"max_stops":1,"loyalty_programs":["lufthansa","united"],"alliances":["star_alliance"],"max_results":5,"currency":"EUR"}"#;

fn bench(c: &mut Criterion) {
    let signer = SigV4Signer::new(
        SharedCredentialsProvider::new(Credentials::new(
            "AKIDEXAMPLE",
            "bench-secret-key",
            Some("bench-session-token".into()),
            None,
            "bench",
        )),
        "eu-central-1",
    );
    let runtime = match tokio::runtime::Builder::new_current_thread().build() {
        Ok(runtime) => runtime,
        Err(e) => panic!("runtime: {e}"),
    };
    let headers = [
        ("content-type", "application/json"),
        ("x-tool-user", "9f8e7d6c-5b4a-3210-fedc-ba9876543210"),
    ];
    c.bench_function("sigv4_sign_tool_call", |b| {
        b.iter(|| {
            let signed = runtime.block_on(signer.sign_post(URL, &headers, BODY.as_bytes()));
            black_box(signed.map(|h| h.len()).unwrap_or_default())
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
