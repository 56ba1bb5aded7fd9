//! The load check of a running `make dev` stack (`cargo run -p dev-stack --bin load-check`).
//!
//! `chats` new chats, each of its own user, all at once. Every chat's first message (a
//! flight search, or for every 25th chat a knowledge-base question) is sent twice at the
//! same moment with one `Idempotency-Key`: `2 × chats` requests in flight together. Once
//! both have their answer, the same message goes to the chat again under a new key (every
//! third chat sends it twice too): the same tool call, which the ledger must answer
//! without running it again. Every request has a deadline; a 503 or 429 is retried after
//! its `Retry-After`, a connection that fails before any answer after a second.
//!
//! Then it checks what a user and the operator would:
//! - hung requests: no complete answer within the deadline;
//! - lost answers: a `200` whose stream ended without `final` and `done`, or an answer that
//!   is not in the chat's history (`GET /chats/{id}/messages`);
//! - duplicate turns: two sends of one key that started two turns, or more user messages
//!   stored than turns accepted;
//! - duplicate executions: from the ledger (`GET /chats/{id}/tool-calls`), more than one
//!   record per dedupe key or more than one succeeded attempt per record, and repeated
//!   calls that were not answered as duplicates (`tool_started.deduped: false`).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::task::JoinSet;

/// Mints the bearer token of a user.
pub type TokenFn = dyn Fn(&str) -> Result<String, String> + Send + Sync;

pub struct Settings {
    /// The chat-router's base URL, e.g. `http://127.0.0.1:9000/lambda-url/chat-router`.
    pub url: String,
    pub chats: usize,
    /// Per request, from its first send to its `done`, retries included.
    pub deadline: Duration,
    /// Per request of the history checks.
    pub check_timeout: Duration,
    /// Makes the users, keys and dates of this run its own.
    pub run: String,
    /// The first departure day, in days from today; chat `i` flies on day `first_day + i`.
    pub first_day: i64,
    pub token: Box<TokenFn>,
}

/// One request as its client saw it.
#[derive(Debug, Default, Clone)]
pub struct Sent {
    /// The HTTP status of the last answer.
    pub status: Option<u16>,
    pub chat_id: Option<String>,
    pub turn_id: Option<String>,
    /// `final.message.content`.
    pub answer: Option<String>,
    /// The code of an `error` event.
    pub error: Option<String>,
    pub done: bool,
    /// No complete answer within the deadline.
    pub hung: bool,
    /// Why the request ended without an answer, when it did.
    pub broken: Option<String>,
    /// `tool_started` events: (tool, job_id, deduped).
    pub tools: Vec<(String, String, bool)>,
    pub refused_503: u32,
    pub refused_429: u32,
    pub reconnects: u32,
    pub latency: Duration,
}

impl Sent {
    /// The turn began and its answer arrived in full.
    fn answered(&self) -> bool {
        self.status == Some(200) && self.done && (self.answer.is_some() || self.error.is_some())
    }

    /// A `200` whose stream did not bring `final` (or `error`) and `done`.
    fn lost(&self) -> bool {
        self.status == Some(200) && !self.hung && !self.answered()
    }
}

/// One chat's requests.
#[derive(Debug, Default)]
pub struct ChatRun {
    pub index: usize,
    pub user: String,
    pub first: Vec<Sent>,
    pub second: Vec<Sent>,
}

impl ChatRun {
    fn chat_id(&self) -> Option<&str> {
        self.first
            .iter()
            .chain(&self.second)
            .find_map(|s| s.chat_id.as_deref())
    }
}

/// What the stored chat says.
#[derive(Debug, Default)]
pub struct Stored {
    pub user_messages: usize,
    pub assistant_answers: Vec<String>,
    /// Ledger records: (id, dedupe_key, attempts started, attempts succeeded).
    pub calls: Vec<(String, String, usize, usize)>,
}

#[derive(Debug, Default)]
pub struct Report {
    pub requests: usize,
    pub hung: usize,
    pub lost_streams: usize,
    pub lost_from_history: usize,
    pub unchecked_chats: usize,
    pub duplicate_turns: usize,
    pub duplicate_executions: usize,
    pub not_deduped: usize,
    pub ledger_records: usize,
    pub executions: usize,
    pub failed_turns: usize,
    pub other_failures: usize,
    pub refused_503: u64,
    pub refused_429: u64,
    pub reconnects: u64,
    pub latencies: Vec<Duration>,
    pub wall: Duration,
    pub problems: Vec<String>,
}

impl Report {
    pub fn passed(&self) -> bool {
        self.hung == 0
            && self.lost_streams == 0
            && self.lost_from_history == 0
            && self.unchecked_chats == 0
            && self.duplicate_turns == 0
            && self.duplicate_executions == 0
            && self.not_deduped == 0
            && self.failed_turns == 0
            && self.other_failures == 0
    }

    pub fn print(&self, settings: &Settings) {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let (p50, p95, max) = percentiles(&self.latencies);
        println!(
            "load check against {}: {} chats, {} requests ({} at once: every first message sent twice with one Idempotency-Key; then each chat's message again, every third twice), deadline {} s per request",
            settings.url,
            settings.chats,
            self.requests,
            2 * settings.chats,
            settings.deadline.as_secs()
        );
        println!(
            "hung requests (no answer within the deadline): {}",
            self.hung
        );
        println!(
            "lost answers: {} (200 without final and done: {}; answers missing from the chat's history: {}; chats whose history could not be read: {})",
            self.lost_streams + self.lost_from_history + self.unchecked_chats,
            self.lost_streams,
            self.lost_from_history,
            self.unchecked_chats
        );
        println!(
            "duplicate turns (one key, two turns; or a message stored twice): {}",
            self.duplicate_turns
        );
        println!(
            "duplicate executions: {} (ledger records {}, executions {}; repeated calls not answered as duplicates: {})",
            self.duplicate_executions + self.not_deduped,
            self.ledger_records,
            self.executions,
            self.not_deduped
        );
        println!(
            "turns that ended in an error event: {}; requests refused otherwise: {}",
            self.failed_turns, self.other_failures
        );
        println!(
            "retried: {} after 503 from the gate, {} after 429, {} after a failed connection",
            self.refused_503, self.refused_429, self.reconnects
        );
        println!(
            "latency per request (first send to done, retries included): n={} p50={:.0} ms p95={:.0} ms max={:.0} ms",
            self.latencies.len(),
            ms(p50),
            ms(p95),
            ms(max)
        );
        println!("wall time: {:.1} s", self.wall.as_secs_f64());
        for problem in self.problems.iter().take(20) {
            eprintln!("  {problem}");
        }
        if self.problems.len() > 20 {
            eprintln!("  … and {} more", self.problems.len() - 20);
        }
        println!("{}", if self.passed() { "PASS" } else { "FAIL" });
    }
}

/// p50, p95 and the maximum of a set of durations (nearest rank).
pub fn percentiles(samples: &[Duration]) -> (Duration, Duration, Duration) {
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    let at = |q: f64| {
        let rank = (q * sorted.len() as f64).ceil() as usize;
        sorted
            .get(rank.saturating_sub(1))
            .copied()
            .unwrap_or_default()
    };
    (
        at(0.50),
        at(0.95),
        sorted.last().copied().unwrap_or_default(),
    )
}

/// The message chat `index` sends (twice): a flight search on a day of its own, so no two
/// chats share a cached result; every 25th chat a knowledge-base question (the stand-in
/// streams its long answer a word at a time, and the emulator runs one router at once).
pub fn message(settings: &Settings, index: usize) -> String {
    if index % 25 == 24 {
        return "How do mileage upgrades work?".to_owned();
    }
    let day = time::OffsetDateTime::now_utc().date()
        + time::Duration::days(settings.first_day + index as i64);
    format!("Business class from Frankfurt to New York on {day}")
}

/// Runs the check; the report says what went wrong.
pub async fn run(settings: Arc<Settings>) -> Result<Report, String> {
    let http = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .build()
        .map_err(|e| format!("building the HTTP client: {e}"))?;
    let started = Instant::now();
    let mut tasks = JoinSet::new();
    for index in 0..settings.chats {
        let (settings, http) = (Arc::clone(&settings), http.clone());
        tasks.spawn(async move { chat(&settings, &http, index).await });
    }
    let mut runs = Vec::with_capacity(settings.chats);
    while let Some(joined) = tasks.join_next().await {
        runs.push(joined.map_err(|e| format!("a chat's task failed: {e}"))?);
    }
    let wall = started.elapsed();
    runs.sort_by_key(|r| r.index);

    // The histories, a few chats at a time.
    let mut stored: HashMap<usize, Result<Stored, String>> = HashMap::new();
    let mut checks = JoinSet::new();
    let mut pending = runs
        .iter()
        .filter_map(|r| Some((r.index, r.user.clone(), r.chat_id()?.to_owned())));
    loop {
        while checks.len() < 8 {
            let Some((index, user, chat_id)) = pending.next() else {
                break;
            };
            let (settings, http) = (Arc::clone(&settings), http.clone());
            checks
                .spawn(async move { (index, read_chat(&settings, &http, &user, &chat_id).await) });
        }
        match checks.join_next().await {
            Some(Ok((index, result))) => {
                stored.insert(index, result);
            }
            Some(Err(e)) => return Err(format!("a history check failed: {e}")),
            None => break,
        }
    }
    Ok(judge(&runs, &stored, wall))
}

/// One chat: the first message twice at once, then the same message again.
async fn chat(settings: &Settings, http: &reqwest::Client, index: usize) -> ChatRun {
    let user = format!("load-{}-{index}", settings.run);
    let text = message(settings, index);
    let first_key = format!("load-{}-{index}-1", settings.run);
    let body = json!({"message": text});
    let (a, b) = tokio::join!(
        send(settings, http, &user, &body, &first_key),
        send(settings, http, &user, &body, &first_key)
    );
    let mut run = ChatRun {
        index,
        user,
        first: vec![a, b],
        second: Vec::new(),
    };
    let Some(chat_id) = run.chat_id().map(str::to_owned) else {
        return run;
    };
    let second_key = format!("load-{}-{index}-2", settings.run);
    let body = json!({"chat_id": chat_id, "message": text});
    run.second = if index.is_multiple_of(3) {
        let (a, b) = tokio::join!(
            send(settings, http, &run.user, &body, &second_key),
            send(settings, http, &run.user, &body, &second_key)
        );
        vec![a, b]
    } else {
        vec![send(settings, http, &run.user, &body, &second_key).await]
    };
    run
}

enum Attempt {
    Ended,
    RetryAfter(Duration),
}

/// One `POST /chat` until its answer ends, retried as the module docs say, within the
/// deadline.
async fn send(
    settings: &Settings,
    http: &reqwest::Client,
    user: &str,
    body: &Value,
    key: &str,
) -> Sent {
    let started = Instant::now();
    let deadline = tokio::time::Instant::now() + settings.deadline;
    let mut sent = Sent::default();
    loop {
        let attempt = tokio::time::timeout_at(
            deadline,
            attempt(settings, http, user, body, key, &mut sent),
        )
        .await;
        match attempt {
            Err(_) => {
                sent.hung = true;
                break;
            }
            Ok(Attempt::Ended) => break,
            Ok(Attempt::RetryAfter(pause)) => {
                if tokio::time::timeout_at(deadline, tokio::time::sleep(pause))
                    .await
                    .is_err()
                {
                    sent.hung = true;
                    break;
                }
            }
        }
    }
    sent.latency = started.elapsed();
    sent
}

async fn attempt(
    settings: &Settings,
    http: &reqwest::Client,
    user: &str,
    body: &Value,
    key: &str,
    sent: &mut Sent,
) -> Attempt {
    let token = match (settings.token)(user) {
        Ok(token) => token,
        Err(e) => {
            sent.broken = Some(e);
            return Attempt::Ended;
        }
    };
    let response = http
        .post(format!("{}/chat", settings.url))
        .bearer_auth(token)
        .header("idempotency-key", key)
        .json(body)
        .send()
        .await;
    let mut response = match response {
        Ok(response) => response,
        Err(e) if e.is_connect() || e.is_request() => {
            sent.reconnects += 1;
            sent.broken = Some(format!("no answer: {e}"));
            return Attempt::RetryAfter(Duration::from_secs(1));
        }
        Err(e) => {
            sent.broken = Some(format!("no answer: {e}"));
            return Attempt::Ended;
        }
    };
    let status = response.status().as_u16();
    sent.status = Some(status);
    if status == 503 || status == 429 {
        if status == 503 {
            sent.refused_503 += 1;
        } else {
            sent.refused_429 += 1;
        }
        let seconds = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(1)
            .clamp(1, 60);
        return Attempt::RetryAfter(Duration::from_secs(seconds));
    }
    if status != 200 {
        let text = response.text().await.unwrap_or_default();
        sent.broken = Some(format!(
            "HTTP {status}: {}",
            text.chars().take(200).collect::<String>()
        ));
        return Attempt::Ended;
    }
    sent.broken = None;
    let mut events = SseBuffer::default();
    loop {
        let chunk = match response.chunk().await {
            Ok(Some(chunk)) => chunk,
            Ok(None) => {
                sent.broken = Some("the stream ended before done".to_owned());
                return Attempt::Ended;
            }
            Err(e) => {
                sent.broken = Some(format!("the stream broke off: {e}"));
                return Attempt::Ended;
            }
        };
        for (name, data) in events.push(&chunk) {
            match name.as_str() {
                "init" => {
                    sent.chat_id = data["chat_id"].as_str().map(str::to_owned);
                    sent.turn_id = data["turn_id"].as_str().map(str::to_owned);
                }
                "tool_started" => sent.tools.push((
                    data["tool"].as_str().unwrap_or_default().to_owned(),
                    data["job_id"].as_str().unwrap_or_default().to_owned(),
                    data["deduped"].as_bool().unwrap_or(false),
                )),
                "final" => {
                    sent.answer = data["message"]["content"].as_str().map(str::to_owned);
                }
                "error" => sent.error = data["code"].as_str().map(str::to_owned),
                "done" => {
                    sent.done = true;
                    return Attempt::Ended;
                }
                _ => {}
            }
        }
    }
}

/// Splits a Server-Sent Events stream into (event, data) as frames complete.
#[derive(Default)]
pub struct SseBuffer {
    pending: Vec<u8>,
}

impl SseBuffer {
    pub fn push(&mut self, chunk: &[u8]) -> Vec<(String, Value)> {
        self.pending.extend_from_slice(chunk);
        let mut events = Vec::new();
        while let Some(end) = find_blank_line(&self.pending) {
            let frame: Vec<u8> = self.pending.drain(..end.1).collect();
            let text = String::from_utf8_lossy(&frame[..end.0]);
            let mut name = "message".to_owned();
            let mut data = String::new();
            for line in text.lines() {
                if let Some(v) = line.strip_prefix("event:") {
                    name = v.trim().to_owned();
                } else if let Some(v) = line.strip_prefix("data:") {
                    if !data.is_empty() {
                        data.push('\n');
                    }
                    data.push_str(v.strip_prefix(' ').unwrap_or(v));
                }
            }
            if !data.is_empty() || name != "message" {
                events.push((name, serde_json::from_str(&data).unwrap_or(Value::Null)));
            }
        }
        events
    }
}

/// The end of the first frame (before its blank line) and where the next one starts.
fn find_blank_line(bytes: &[u8]) -> Option<(usize, usize)> {
    let lf = bytes
        .windows(2)
        .position(|w| w == b"\n\n")
        .map(|i| (i, i + 2));
    let crlf = bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| (i, i + 4));
    match (lf, crlf) {
        (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
        (a, b) => a.or(b),
    }
}

/// The chat's stored messages and ledger records.
async fn read_chat(
    settings: &Settings,
    http: &reqwest::Client,
    user: &str,
    chat_id: &str,
) -> Result<Stored, String> {
    let mut stored = Stored::default();
    let messages = get_all(settings, http, user, &format!("chats/{chat_id}/messages")).await?;
    for item in messages {
        match item["role"].as_str() {
            Some("user") => stored.user_messages += 1,
            Some("assistant") => {
                if let Some(content) = item["content"].as_str() {
                    stored.assistant_answers.push(content.to_owned());
                }
            }
            _ => {}
        }
    }
    let calls = get_all(settings, http, user, &format!("chats/{chat_id}/tool-calls")).await?;
    for call in calls {
        let attempts = call["attempts"].as_array().cloned().unwrap_or_default();
        let started = attempts
            .iter()
            .filter(|a| a.get("started_at").is_some_and(|v| !v.is_null()))
            .count();
        let succeeded = attempts
            .iter()
            .filter(|a| a["status"].as_str() == Some("succeeded"))
            .count();
        stored.calls.push((
            call["id"].as_str().unwrap_or_default().to_owned(),
            call["dedupe_key"].as_str().unwrap_or_default().to_owned(),
            started,
            succeeded,
        ));
    }
    Ok(stored)
}

/// Every item of a paged listing (`limit=100`, following `next_cursor`).
async fn get_all(
    settings: &Settings,
    http: &reqwest::Client,
    user: &str,
    route: &str,
) -> Result<Vec<Value>, String> {
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..20 {
        let token = (settings.token)(user)?;
        let mut request = http
            .get(format!("{}/{route}", settings.url))
            .bearer_auth(token)
            .timeout(settings.check_timeout)
            .query(&[("limit", "100")]);
        if let Some(cursor) = &cursor {
            request = request.query(&[("cursor", cursor)]);
        }
        let response = request
            .send()
            .await
            .map_err(|e| format!("GET {route}: {e}"))?;
        let status = response.status();
        if status.as_u16() == 503 {
            tokio::time::sleep(Duration::from_secs(1)).await;
            continue;
        }
        let page: Value = response
            .json()
            .await
            .map_err(|e| format!("GET {route}: {e}"))?;
        if !status.is_success() {
            return Err(format!("GET {route}: HTTP {status}: {page}"));
        }
        items.extend(page["items"].as_array().cloned().unwrap_or_default());
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return Ok(items),
        }
    }
    Err(format!("GET {route}: more pages than expected"))
}

/// Counts what went wrong.
fn judge(
    runs: &[ChatRun],
    stored: &HashMap<usize, Result<Stored, String>>,
    wall: Duration,
) -> Report {
    let mut report = Report {
        wall,
        ..Report::default()
    };
    for run in runs {
        let chat = run.index;
        let all: Vec<&Sent> = run.first.iter().chain(&run.second).collect();
        for sent in &all {
            report.requests += 1;
            report.refused_503 += u64::from(sent.refused_503);
            report.refused_429 += u64::from(sent.refused_429);
            report.reconnects += u64::from(sent.reconnects);
            if sent.hung {
                report.hung += 1;
                report
                    .problems
                    .push(format!("chat {chat}: a request hung ({:?})", sent.broken));
                continue;
            }
            report.latencies.push(sent.latency);
            if sent.lost() {
                report.lost_streams += 1;
                report
                    .problems
                    .push(format!("chat {chat}: lost answer: {:?}", sent.broken));
            } else if sent.error.is_some() {
                report.failed_turns += 1;
                report
                    .problems
                    .push(format!("chat {chat}: error event {:?}", sent.error));
            } else if !sent.answered() {
                report.other_failures += 1;
                report
                    .problems
                    .push(format!("chat {chat}: no answer: {:?}", sent.broken));
            }
        }
        // One key, one turn.
        let mut accepted_turns = HashSet::new();
        for sends in [&run.first, &run.second] {
            let turns: HashSet<&str> = sends.iter().filter_map(|s| s.turn_id.as_deref()).collect();
            if turns.len() > 1 {
                report.duplicate_turns += turns.len() - 1;
                report.problems.push(format!(
                    "chat {chat}: one Idempotency-Key began {} turns",
                    turns.len()
                ));
            }
            accepted_turns.extend(turns);
        }
        let chat_ids: HashSet<&str> = all.iter().filter_map(|s| s.chat_id.as_deref()).collect();
        if chat_ids.len() > 1 {
            report.duplicate_turns += chat_ids.len() - 1;
            report
                .problems
                .push(format!("chat {chat}: one chat became {}", chat_ids.len()));
        }
        // The follow-up repeats the first turn's call: the ledger must answer it (when the
        // first turn made no call, e.g. it failed, the follow-up's is the first).
        let first_jobs: HashSet<&str> = run
            .first
            .iter()
            .flat_map(|s| s.tools.iter().map(|t| t.1.as_str()))
            .collect();
        let mut not_deduped = HashSet::new();
        for (_, job, deduped) in run.second.iter().flat_map(|s| &s.tools) {
            if !deduped && first_jobs.contains(job.as_str()) {
                not_deduped.insert(job.as_str());
            }
        }
        if !not_deduped.is_empty() {
            report.not_deduped += not_deduped.len();
            report.problems.push(format!(
                "chat {chat}: the repeated call ran again ({not_deduped:?})"
            ));
        }
        if run.chat_id().is_none() {
            continue;
        }
        match stored.get(&chat) {
            None => {}
            Some(Err(e)) => {
                report.unchecked_chats += 1;
                report
                    .problems
                    .push(format!("chat {chat}: history unreadable: {e}"));
            }
            Some(Ok(stored)) => {
                if stored.user_messages > accepted_turns.len() {
                    report.duplicate_turns += stored.user_messages - accepted_turns.len();
                    report.problems.push(format!(
                        "chat {chat}: {} user messages stored for {} turns",
                        stored.user_messages,
                        accepted_turns.len()
                    ));
                }
                let mut missing = HashSet::new();
                for sent in &all {
                    if let (Some(turn), Some(answer)) = (&sent.turn_id, &sent.answer)
                        && !stored.assistant_answers.iter().any(|a| a == answer)
                    {
                        missing.insert(turn.as_str());
                    }
                }
                if !missing.is_empty() {
                    report.lost_from_history += missing.len();
                    report.problems.push(format!(
                        "chat {chat}: {} answers not in the history",
                        missing.len()
                    ));
                }
                let mut keys: HashMap<&str, usize> = HashMap::new();
                for (id, key, started, succeeded) in &stored.calls {
                    report.ledger_records += 1;
                    report.executions += started;
                    *keys.entry(key.as_str()).or_default() += 1;
                    if *succeeded > 1 {
                        report.duplicate_executions += succeeded - 1;
                        report.problems.push(format!(
                            "chat {chat}: call {id} succeeded {succeeded} times"
                        ));
                    }
                }
                for (key, records) in keys {
                    if records > 1 {
                        report.duplicate_executions += records - 1;
                        report.problems.push(format!(
                            "chat {chat}: {records} ledger records for dedupe key {key}"
                        ));
                    }
                }
            }
        }
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_split_anywhere_come_out_whole() {
        let stream = b"id: 0\nevent: init\ndata: {\"chat_id\":\"c1\",\"turn_id\":\"t1\"}\n\nid: 1\r\nevent: done\r\ndata: {}\r\n\r\n";
        for cut in 0..stream.len() {
            let mut buffer = SseBuffer::default();
            let mut events = buffer.push(&stream[..cut]);
            events.extend(buffer.push(&stream[cut..]));
            let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
            assert_eq!(names, ["init", "done"], "cut at {cut}");
            assert_eq!(events[0].1["chat_id"], "c1");
        }
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let samples: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        let (p50, p95, max) = percentiles(&samples);
        assert_eq!(p50, Duration::from_millis(50));
        assert_eq!(p95, Duration::from_millis(95));
        assert_eq!(max, Duration::from_millis(100));
        assert_eq!(percentiles(&[]).2, Duration::ZERO);
    }
}
