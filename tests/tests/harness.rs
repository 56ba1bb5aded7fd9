//! The fake LLM server and the Lambda-over-HTTP adapter, exercised with a real HTTP client.

// Tests and benches fail loudly: unwrap, expect and panic are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use bytes::Bytes;
use lambda_http::{Body, RequestExt};
use serde_json::{Value, json};
use test_support::fake_llm::{DEFAULT_PROMPT_TOKENS, FakeLlm, Reply, matchers};
use test_support::serve::{BoxError, serve_lambda};

fn chat_body(with_tools: bool, user: &str) -> Value {
    let mut body = json!({
        "model": "gpt-test",
        "stream": true,
        "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": user}],
    });
    if with_tools {
        body["tools"] = json!([{"type": "function", "function": {
            "name": "search_flights", "description": "d", "parameters": {"type": "object"}}}]);
    }
    body
}

async fn post(fake: &FakeLlm, body: &Value) -> reqwest::Response {
    reqwest::Client::new()
        .post(format!("{}/chat/completions", fake.base_url()))
        .json(body)
        .send()
        .await
        .unwrap()
}

/// The JSON events of an SSE text; asserts it ends in `[DONE]`.
fn events(sse: &str) -> Vec<Value> {
    let mut out = Vec::new();
    let mut done = false;
    for block in sse.split("\n\n").filter(|b| !b.is_empty()) {
        let data = block.strip_prefix("data: ").expect(block);
        assert!(!done, "event after [DONE]");
        if data == "[DONE]" {
            done = true;
        } else {
            out.push(serde_json::from_str(data).unwrap());
        }
    }
    assert!(done, "no [DONE] in {sse}");
    out
}

fn streamed_text(events: &[Value]) -> String {
    events
        .iter()
        .filter_map(|e| {
            e.pointer("/choices/0/delta/content")
                .and_then(Value::as_str)
        })
        .collect()
}

/// (index, id, name, arguments, number of argument pieces) per call.
fn streamed_calls(events: &[Value]) -> Vec<(u64, String, String, String, usize)> {
    let mut calls: Vec<(u64, String, String, String, usize)> = Vec::new();
    for delta in events
        .iter()
        .filter_map(|e| e.pointer("/choices/0/delta/tool_calls"))
        .flat_map(|c| c.as_array().unwrap())
    {
        let index = delta["index"].as_u64().unwrap();
        let args = delta
            .pointer("/function/arguments")
            .and_then(Value::as_str)
            .unwrap_or_default();
        match calls.iter_mut().find(|c| c.0 == index) {
            Some(call) => {
                call.3.push_str(args);
                call.4 += 1;
            }
            None => calls.push((
                index,
                delta["id"].as_str().unwrap().to_owned(),
                delta
                    .pointer("/function/name")
                    .and_then(Value::as_str)
                    .unwrap()
                    .to_owned(),
                args.to_owned(),
                0,
            )),
        }
    }
    calls
}

#[tokio::test]
async fn text_streams_in_chunks_as_they_are_produced() {
    let fake = FakeLlm::start().await;
    let delay = Duration::from_millis(80);
    fake.push(Reply::text("Hello there, how are you today?").with_chunk_delay(delay));

    let started = Instant::now();
    let mut response = post(&fake, &chat_body(false, "hi")).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut arrivals = Vec::new();
    let mut sse = String::new();
    while let Some(chunk) = response.chunk().await.unwrap() {
        arrivals.push(started.elapsed());
        sse.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    // role + 6 words + finish + usage + [DONE] = 10 events, 9 pauses.
    assert!(
        arrivals.len() >= 5,
        "only {} chunks arrived",
        arrivals.len()
    );
    let first = arrivals[0];
    let last = *arrivals.last().unwrap();
    // Buffered, every chunk would arrive at once; streamed, they spread over 9 pauses.
    assert!(
        last - first >= delay * 7,
        "chunks from {first:?} to {last:?}"
    );

    let events = events(&sse);
    assert_eq!(streamed_text(&events), "Hello there, how are you today?");
    let words = events
        .iter()
        .filter(|e| {
            e.pointer("/choices/0/delta/content")
                .and_then(Value::as_str)
                != Some("")
        })
        .filter(|e| e.pointer("/choices/0/delta/content").is_some())
        .count();
    assert_eq!(words, 6);
    assert!(events.iter().all(|e| e["model"] == "gpt-test"));
    let finish = &events[events.len() - 2];
    assert_eq!(finish["choices"][0]["finish_reason"], "stop");
    let usage = events.last().unwrap();
    assert_eq!(usage["choices"], json!([]));
    assert_eq!(
        usage["usage"],
        json!({"prompt_tokens": DEFAULT_PROMPT_TOKENS, "completion_tokens": 6,
               "total_tokens": DEFAULT_PROMPT_TOKENS + 6})
    );
}

#[tokio::test]
async fn first_byte_delay_holds_back_the_headers() {
    let fake = FakeLlm::start().await;
    fake.push(Reply::text("late").with_first_byte_delay(Duration::from_millis(300)));
    let started = Instant::now();
    let response = post(&fake, &chat_body(false, "hi")).await;
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(response.status(), 200);
}

#[tokio::test]
async fn parallel_tool_calls_stream_their_arguments_in_pieces() {
    let fake = FakeLlm::start().await;
    fake.push(
        Reply::tool_calls(vec![
            (
                "search_flights",
                json!({"origin": "ZRH", "destination": "LHR"}),
            ),
            ("kb_search", json!({"query": "Gepäck"})),
        ])
        .with_usage(100, 20),
    );
    let response = post(&fake, &chat_body(true, "flights")).await;
    let events = events(&response.text().await.unwrap());
    let calls = streamed_calls(&events);
    assert_eq!(calls.len(), 2);
    for (n, (index, id, name, args, pieces)) in calls.iter().enumerate() {
        assert_eq!(*index, n as u64);
        assert_eq!(id, &format!("call_1_{n}"));
        assert!(*pieces >= 2, "{name}: {pieces} pieces");
        let args: Value = serde_json::from_str(args).unwrap();
        let want = if n == 0 {
            json!({"origin": "ZRH", "destination": "LHR"})
        } else {
            json!({"query": "Gepäck"})
        };
        assert_eq!(args, want);
    }
    assert_eq!(calls[0].2, "search_flights");
    assert_eq!(calls[1].2, "kb_search");
    assert_eq!(
        events[events.len() - 2]["choices"][0]["finish_reason"],
        "tool_calls"
    );
    assert_eq!(
        events.last().unwrap()["usage"],
        json!({"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120})
    );
}

#[tokio::test]
async fn raw_arguments_text_text_before_calls_and_non_streaming() {
    let fake = FakeLlm::start().await;
    fake.push(Reply::raw_tool_call("search_flights", "{not json"))
        .push(
            Reply::text("Searching")
                .with_tool_call("kb_search", json!({}))
                .non_streaming(),
        );

    let events = events(
        &post(&fake, &chat_body(true, "x"))
            .await
            .text()
            .await
            .unwrap(),
    );
    let calls = streamed_calls(&events);
    assert_eq!(calls[0].3, "{not json");
    assert!(calls[0].4 >= 2);

    let response = post(&fake, &chat_body(true, "y")).await;
    assert_eq!(response.headers()["content-type"], "application/json");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["object"], "chat.completion");
    assert_eq!(body["model"], "gpt-test");
    let message = &body["choices"][0]["message"];
    assert_eq!(message["content"], "Searching");
    assert_eq!(message["tool_calls"][0]["id"], "call_2_0");
    assert_eq!(message["tool_calls"][0]["function"]["arguments"], "{}");
    assert_eq!(body["choices"][0]["finish_reason"], "tool_calls");
}

#[tokio::test]
async fn error_statuses_and_stream_failures() {
    let fake = FakeLlm::start().await;
    fake.push(Reply::status(500))
        .push(Reply::error(429, "slow down").with_header("Retry-After", "1"))
        .push(Reply::text("one two three").cut_off_after(2))
        .push(Reply::text("partial").then_stream_error("overloaded"));

    let response = post(&fake, &chat_body(false, "a")).await;
    assert_eq!(response.status(), 500);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["message"], "fake LLM: scripted HTTP 500");

    let response = post(&fake, &chat_body(false, "b")).await;
    assert_eq!(response.status(), 429);
    assert_eq!(response.headers()["retry-after"], "1");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["message"], "slow down");

    let response = post(&fake, &chat_body(false, "c")).await;
    assert_eq!(response.status(), 200);
    assert!(response.text().await.is_err(), "the body should break off");

    let sse = post(&fake, &chat_body(false, "d"))
        .await
        .text()
        .await
        .unwrap();
    assert!(!sse.contains("[DONE]"));
    let last = sse.trim_end().rsplit("\n\n").next().unwrap();
    let last: Value = serde_json::from_str(last.strip_prefix("data: ").unwrap()).unwrap();
    assert_eq!(last["error"]["message"], "overloaded");
}

#[tokio::test]
async fn when_replies_go_to_matching_requests_even_when_concurrent() {
    let fake = FakeLlm::start().await;
    fake.push(Reply::text("router answer").with_first_byte_delay(Duration::from_millis(50)))
        .when(matchers::no_tools(), Reply::text("inner answer"))
        .when(
            matchers::last_user_contains("special"),
            Reply::text("special"),
        );
    assert_eq!(fake.pending(), 3);

    let (with_tools, without) = tokio::join!(
        async {
            post(&fake, &chat_body(true, "hello"))
                .await
                .text()
                .await
                .unwrap()
        },
        async {
            post(&fake, &chat_body(false, "inner"))
                .await
                .text()
                .await
                .unwrap()
        },
    );
    assert_eq!(streamed_text(&events(&with_tools)), "router answer");
    assert_eq!(streamed_text(&events(&without)), "inner answer");

    let special = post(&fake, &chat_body(true, "a special one")).await;
    assert_eq!(
        streamed_text(&events(&special.text().await.unwrap())),
        "special"
    );
    assert_eq!(fake.pending(), 0);
}

#[tokio::test]
async fn requests_are_recorded_and_unscripted_ones_fail_clearly() {
    let fake = FakeLlm::start().await;
    fake.push(Reply::text("first"));
    post(&fake, &chat_body(true, "one"))
        .await
        .text()
        .await
        .unwrap();
    let response = post(&fake, &chat_body(false, "two")).await;
    assert_eq!(response.status(), 500);
    let body: Value = response.json().await.unwrap();
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("no scripted reply for request #2"),
        "{message}"
    );

    assert_eq!(fake.request_count(), 2);
    let requests = fake.requests();
    assert_eq!(requests[0]["messages"][1]["content"], "one");
    assert!(requests[0].get("tools").is_some());
    assert_eq!(requests[1]["messages"][1]["content"], "two");
    assert_eq!(fake.last_request(), Some(requests[1].clone()));

    let wrong_path = reqwest::get(format!("{}/models", fake.base_url()))
        .await
        .unwrap();
    assert_eq!(wrong_path.status(), 404);
    assert_eq!(fake.request_count(), 2);
}

#[tokio::test]
async fn serve_lambda_round_trip() {
    let server = serve_lambda(|req: lambda_http::Request| async move {
        let query = req.query_string_parameters();
        let body = match req.body() {
            Body::Text(t) => json!({"text": t}),
            Body::Binary(b) => json!({"binary": b.len()}),
            Body::Empty => json!(null),
            _ => json!("other"),
        };
        let echo = json!({
            "method": req.method().as_str(),
            "path": req.uri().path(),
            "raw_path": req.raw_http_path(),
            "a": query.all("a"),
            "b": query.first("b"),
            "header": req.headers().get("x-test").and_then(|v| v.to_str().ok()),
            "has_context": req.request_context_ref().is_some(),
            "body": body,
        });
        let mut response = http::Response::new(Body::Text(echo.to_string()));
        *response.status_mut() = http::StatusCode::CREATED;
        response
            .headers_mut()
            .insert("x-echo", http::HeaderValue::from_static("yes"));
        response
    })
    .await;

    let client = reqwest::Client::new();
    let response = client
        .post(server.url("/chats/c1/messages?a=1&a=2&b=hello%20world"))
        .header("x-test", "42")
        .body(r#"{"message":"hi"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    assert_eq!(response.headers()["x-echo"], "yes");
    let echo: Value = response.json().await.unwrap();
    assert_eq!(
        echo,
        json!({
            "method": "POST", "path": "/chats/c1/messages", "raw_path": "/chats/c1/messages",
            "a": ["1", "2"], "b": "hello world", "header": "42", "has_context": true,
            "body": {"text": "{\"message\":\"hi\"}"},
        })
    );

    let echo: Value = client
        .get(server.url("health"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(echo["method"], "GET");
    assert_eq!(echo["body"], Value::Null);
    assert_eq!(echo["a"], Value::Null);

    let echo: Value = client
        .put(server.url("/bin"))
        .body(vec![0xff_u8, 0xfe, 0x00])
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(echo["body"], json!({"binary": 3}));
}

#[tokio::test]
async fn serve_lambda_streams_response_bodies() {
    let delay = Duration::from_millis(100);
    let server = serve_lambda(move |_req: lambda_http::Request| async move {
        let (mut tx, body) = http_body_util::channel::Channel::<Bytes, BoxError>::new(1);
        tokio::spawn(async move {
            for i in 0..4 {
                if i > 0 {
                    tokio::time::sleep(delay).await;
                }
                if tx
                    .send_data(Bytes::from(format!("event {i}\n")))
                    .await
                    .is_err()
                {
                    return;
                }
            }
        });
        http::Response::new(body)
    })
    .await;

    let started = Instant::now();
    let mut response = reqwest::get(server.url("/stream")).await.unwrap();
    let mut arrivals = Vec::new();
    let mut text = String::new();
    while let Some(chunk) = response.chunk().await.unwrap() {
        arrivals.push(started.elapsed());
        text.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    assert_eq!(text, "event 0\nevent 1\nevent 2\nevent 3\n");
    // Passed through as produced, not buffered until the end.
    let spread = *arrivals.last().unwrap() - arrivals[0];
    assert!(spread >= delay * 2, "chunks spread over {spread:?}");
}

#[tokio::test]
async fn dropping_the_server_stops_it() {
    let server =
        serve_lambda(|_req: lambda_http::Request| async { http::Response::new(Body::Empty) }).await;
    let url = server.url("/");
    assert_eq!(reqwest::get(&url).await.unwrap().status(), 200);
    drop(server);
    tokio::time::sleep(Duration::from_millis(50)).await;
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    assert!(client.get(&url).send().await.is_err());
}
