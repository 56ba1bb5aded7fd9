//! Turns events into terminal output: tokens inline, tool calls and handoffs as status
//! lines (spinners on a terminal), the final answer's flight table, the turn's UI elements
//! (offered flights, numbered quick replies) after the answer, errors on stderr. Quick replies
//! and calls waiting for approval are kept for the caller to act on after the turn. Writes to
//! any `Write` so tests can capture the plain output.

use std::collections::{HashMap, HashSet};
use std::io::{self, Write};
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::{Value, json};
use shared::domain::flight::Locale;

use crate::printable::printable;
use crate::sse::SseEvent;
use crate::table;

/// Debug payloads are cut to this many characters: they can be whole prompts.
const DEBUG_PAYLOAD_CHARS: usize = 200;

/// How to render.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// ANSI colours (only when stdout is a terminal).
    pub color: bool,
    /// indicatif spinners for running tools, drawn on stdout (only on a terminal).
    pub spinners: bool,
    /// Print each raw event as one JSON line instead.
    pub json: bool,
    /// Print `debug` events.
    pub debug: bool,
}

/// A tool call waiting for the user's approval (`approval_required`). Fields are as the
/// server sent them; print them through [`printable`].
#[derive(Debug, Clone, PartialEq)]
pub struct Approval {
    pub job_id: String,
    pub tool: String,
    pub summary: String,
    pub expires_at: Option<String>,
}

/// Renders the events of one turn after another.
pub struct Renderer<W: Write, E: Write> {
    out: W,
    err: E,
    options: Options,
    /// Present only while a spinner runs: once all are finished the next text must not be
    /// redrawn over, so a new `MultiProgress` starts with the next tool.
    progress: Option<MultiProgress>,
    spinners: HashMap<String, ProgressBar>,
    /// Jobs whose "queued" line was already printed.
    queued: HashSet<String>,
    /// Assistant tokens were printed this turn (then `final` does not repeat the text).
    streamed: bool,
    /// The cursor is not at the start of a line.
    line_open: bool,
    failed: bool,
    /// Tables of `flight_options` elements, shown after the answer.
    offered: Vec<String>,
    /// The turn's language (`init.language`), for the tables' notes.
    locale: Locale,
    /// The turn's quick replies (printable): shown after the answer, kept for the next
    /// prompt.
    replies: Vec<String>,
    /// The quick replies still have to be shown.
    replies_pending: bool,
    /// Calls of this turn waiting for approval, until the caller takes them.
    approvals: Vec<Approval>,
}

impl<W: Write, E: Write> Renderer<W, E> {
    /// A renderer writing events to `out` and errors to `err`.
    pub fn new(out: W, err: E, options: Options) -> Self {
        Self {
            out,
            err,
            options,
            progress: None,
            spinners: HashMap::new(),
            queued: HashSet::new(),
            streamed: false,
            line_open: false,
            failed: false,
            offered: Vec::new(),
            locale: Locale::En,
            replies: Vec::new(),
            replies_pending: false,
            approvals: Vec::new(),
        }
    }

    /// Resets the per-turn state; call before each turn's events. The last turn's quick
    /// replies and approvals are dropped: they only answer that turn.
    pub fn begin_turn(&mut self) {
        self.streamed = false;
        self.failed = false;
        self.queued.clear();
        self.offered.clear();
        self.replies.clear();
        self.replies_pending = false;
        self.approvals.clear();
    }

    /// The last turn's quick replies, for the next prompt; they are used once.
    pub fn take_quick_replies(&mut self) -> Vec<String> {
        std::mem::take(&mut self.replies)
    }

    /// The calls of the last turn that wait for the user's approval.
    pub fn take_approvals(&mut self) -> Vec<Approval> {
        std::mem::take(&mut self.approvals)
    }

    /// Whether this turn's stream carried an `error` event.
    pub fn failed(&self) -> bool {
        self.failed
    }

    /// The writers back (tests read what was rendered).
    pub fn into_parts(self) -> (W, E) {
        (self.out, self.err)
    }

    /// `→ agent (reason)`: the turn went to another agent.
    fn handoff(&mut self, data: &Value) -> io::Result<()> {
        let line = match text(&data["reason"]) {
            reason if reason.trim().is_empty() => format!("→ {}", text(&data["to"])),
            reason => format!("→ {} ({})", text(&data["to"]), reason.trim()),
        };
        self.line(&self.paint(DIM, &line))
    }

    /// The turn's error, on stderr.
    fn error(&mut self, data: &Value) -> io::Result<()> {
        self.end_line()?;
        let line = format!(
            "error ({}): {}",
            text(&data["code"]),
            text(&data["message"])
        );
        let line = self.paint(RED, &line);
        writeln!(self.err, "{line}")?;
        self.err.flush()
    }

    /// A debug event, its payload cut short.
    fn debug(&mut self, data: &Value) -> io::Result<()> {
        let payload: String = data["payload"]
            .to_string()
            .chars()
            .take(DEBUG_PAYLOAD_CHARS)
            .collect();
        let line = format!("· {} {payload}", text(&data["type"]));
        self.line(&self.paint(DIM, &line))
    }

    /// Renders one event.
    pub fn event(&mut self, event: &SseEvent) -> io::Result<()> {
        let data = &event.data;
        if event.name == "error" {
            self.failed = true;
        }
        // Kept in `--json` mode too: the prompts after the turn still offer them.
        match event.name.as_str() {
            "approval_required" => self.approval_required(data),
            "ui" if data["kind"] == json!("quick_replies") => self.quick_replies(data),
            _ => {}
        }
        if self.options.json {
            // Written by hand so `event` comes first (serde_json sorts object keys).
            let name = Value::String(event.name.clone());
            return self.write_out(&format!("{{\"event\":{name},\"data\":{data}}}\n"));
        }
        if event.name == "init" {
            self.locale = serde_json::from_value(data["language"].clone()).unwrap_or_default();
        }
        match event.name.as_str() {
            "init" if data["created"] == json!(true) => {
                let line = format!("chat {} (new)", text(&data["chat_id"]));
                self.line(&self.paint(DIM, &line))?;
            }
            "tool_started" => self.tool_started(data)?,
            "tool_progress" => self.tool_progress(data)?,
            "tool_result" => self.tool_result(data)?,
            "assistant_token" => {
                let content = text(&data["content"]);
                if !content.is_empty() {
                    self.streamed = true;
                    self.line_open = !content.ends_with('\n');
                    self.write_out(&content)?;
                }
            }
            "handoff" => self.handoff(data)?,
            "ui" if data["kind"] == json!("flight_options") => {
                if let Some(table) = table::options(&data["payload"], self.locale) {
                    self.offered.push(table);
                }
            }
            // Quick replies were taken above; other kinds are for newer clients.
            "ui" => {}
            "approval_required" => {
                let line = format!(
                    "⏸ {} waits for your approval: {}",
                    tool_name(data),
                    text(&data["summary"])
                );
                self.line(&self.paint(YELLOW, &line))?;
            }
            "final" => self.final_answer(data)?,
            "error" => self.error(data)?,
            "debug" if self.options.debug => self.debug(data)?,
            "done" => {
                // A turn without `final` (an error) still shows what it offered.
                self.show_elements()?;
                self.finish()?;
            }
            _ => {} // unknown events: newer routers may add some
        }
        Ok(())
    }

    /// One line about the client itself (a retry) on stderr. On a terminal the open line of
    /// text is ended first so the notice gets a line of its own; piped output is left as it
    /// is, so the answer stays intact in it.
    pub fn notice(&mut self, text: &str) -> io::Result<()> {
        self.err_line(YELLOW, text)
    }

    /// A failure the conversation goes on after (a refused request) on stderr, like
    /// [`Self::notice`].
    pub fn problem(&mut self, text: &str) -> io::Result<()> {
        self.err_line(RED, text)
    }

    /// A question for the user on stdout, without a newline (the answer follows on it).
    pub fn prompt(&mut self, text: &str) -> io::Result<()> {
        self.end_line()?;
        self.write_out(text)
    }

    fn err_line(&mut self, colour: &str, text: &str) -> io::Result<()> {
        if self.options.spinners {
            self.end_line()?;
        }
        let line = self.paint(colour, text);
        let err = &mut self.err;
        let mut write = move || {
            writeln!(err, "{line}")?;
            err.flush()
        };
        match &self.progress {
            Some(progress) => progress.suspend(write),
            None => write(),
        }
    }

    /// Ends the turn's output when the stream stopped early: closes the line and stops
    /// spinners that will never get a result.
    pub fn finish(&mut self) -> io::Result<()> {
        for (_, spinner) in self.spinners.drain() {
            spinner.abandon();
        }
        self.progress = None;
        self.end_line()
    }

    fn tool_started(&mut self, data: &Value) -> io::Result<()> {
        let tool = tool_name(data);
        let job = text(&data["job_id"]);
        let deduped = if data["deduped"] == json!(true) {
            " (deduped)"
        } else {
            ""
        };
        if data["status"] == json!("queued") {
            self.queued.insert(job.clone());
            let line = format!("⏳ {tool} queued in the background (job {job}){deduped}");
            return self.line(&self.paint(YELLOW, &line));
        }
        let message = format!("{tool} …{deduped}");
        if !self.options.spinners {
            return self.line(&format!("▸ {message}"));
        }
        self.end_line()?;
        let progress = self
            .progress
            .get_or_insert_with(|| MultiProgress::with_draw_target(ProgressDrawTarget::stdout()));
        let spinner = progress.add(ProgressBar::new_spinner());
        spinner.set_style(
            ProgressStyle::with_template("{spinner:.cyan} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        spinner.set_message(message);
        spinner.enable_steady_tick(Duration::from_millis(80));
        self.spinners.insert(spinner_key(data), spinner);
        Ok(())
    }

    /// A running call's progress: the spinner's text on a terminal, else a line of its own.
    fn tool_progress(&mut self, data: &Value) -> io::Result<()> {
        let message = text(&data["message"]);
        if let Some(spinner) = self.spinners.get(&spinner_key(data)) {
            spinner.set_message(format!("{} … {message}", tool_name(data)));
            return Ok(());
        }
        self.line(&self.paint(DIM, &format!("  {message}")))
    }

    fn tool_result(&mut self, data: &Value) -> io::Result<()> {
        let Some(line) = self.result_line(data) else {
            return Ok(());
        };
        match self.spinners.remove(&spinner_key(data)) {
            Some(spinner) => {
                if let Ok(style) = ProgressStyle::with_template("{msg}") {
                    spinner.set_style(style);
                }
                spinner.finish_with_message(line);
                if self.spinners.is_empty() {
                    self.progress = None;
                }
                Ok(())
            }
            None => self.line(&line),
        }
    }

    /// The line a finished call gets; `None` for a queued call already announced.
    fn result_line(&self, data: &Value) -> Option<String> {
        let tool = tool_name(data);
        let meta = &data["metadata"];
        let retry = if meta.get("retry_attempt").is_some() {
            " (retry queued)"
        } else {
            ""
        };
        let reason = |label: &str| match detail(&meta["error"]) {
            Some(error) => format!("{label}: {error}"),
            None => label.to_owned(),
        };
        let (colour, line) = match text(&data["status"]).as_str() {
            "succeeded" => (GREEN, format!("✓ {tool} succeeded")),
            "failed" => (RED, format!("✗ {tool} {}", reason("failed"))),
            "rejected" => (RED, format!("✗ {tool} {}", reason("rejected"))),
            "timeout" => (YELLOW, format!("⏱ {tool} timeout")),
            "rate_limited" => match detail(&meta["reset_at"]) {
                Some(reset) => (YELLOW, format!("⏸ {tool} rate limited until {reset}")),
                None => (YELLOW, format!("⏸ {tool} rate limited")),
            },
            "skipped" => (DIM, format!("– {tool} skipped")),
            // Waiting for the user, not failed: `approval_required` follows.
            "awaiting_approval" => (YELLOW, format!("⏸ {tool} awaiting approval")),
            "expired" => (YELLOW, format!("⌛ {tool} expired without approval")),
            "queued" => {
                let job = text(&data["job_id"]);
                if self.queued.contains(&job) {
                    return None;
                }
                (
                    YELLOW,
                    format!("⏳ {tool} queued in the background (job {job})"),
                )
            }
            other => (DIM, format!("· {tool} {other}")),
        };
        Some(self.paint(colour, &format!("{line}{retry}")))
    }

    fn final_answer(&mut self, data: &Value) -> io::Result<()> {
        if !self.streamed {
            let content = text(&data["message"]["content"]);
            if !content.is_empty() {
                self.line_open = true;
                self.write_out(&content)?;
            }
        }
        self.end_line()?;
        if data["message"]["stopped"] == Value::Bool(true) {
            self.line(&self.paint(DIM, "(stopped)"))?;
        }
        // Offered flights are the assistant's pick of the search: they replace its table,
        // which would mostly repeat them.
        if self.offered.is_empty()
            && let Some(table) = table::flights(&data["tool_result"], self.locale)
        {
            self.write_out(&format!("\n{table}\n"))?;
        }
        // The router sends `metadata.notice`; a top-level `notice` is accepted as well.
        let notice = detail(&data["notice"]).or_else(|| detail(&data["metadata"]["notice"]));
        if let Some(notice) = notice {
            self.line(&self.paint(DIM, &notice))?;
        }
        self.show_elements()
    }

    /// `approval_required`: kept for the caller, who asks the user after the turn.
    fn approval_required(&mut self, data: &Value) {
        let Some(job_id) = data["job_id"].as_str().filter(|id| !id.is_empty()) else {
            return; // nothing to approve by
        };
        self.approvals.push(Approval {
            job_id: job_id.to_owned(),
            tool: data["tool"].as_str().unwrap_or("tool").to_owned(),
            summary: data["summary"].as_str().unwrap_or_default().to_owned(),
            expires_at: data["expires_at"].as_str().map(str::to_owned),
        });
    }

    /// `ui` `quick_replies`: the replies as they will be shown and sent (by letter, see
    /// [`reply_index`]).
    fn quick_replies(&mut self, data: &Value) {
        let replies = data["payload"]["replies"].as_array();
        self.replies = replies
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(|reply| printable(reply).trim().to_owned())
            .filter(|reply| !reply.is_empty())
            .collect();
        self.replies_pending = !self.replies.is_empty();
    }

    /// The turn's offered flights and quick replies, once, after the answer.
    fn show_elements(&mut self) -> io::Result<()> {
        if self.options.json {
            return Ok(());
        }
        for table in std::mem::take(&mut self.offered) {
            self.end_line()?;
            self.write_out(&format!("\n{table}\n"))?;
        }
        if std::mem::take(&mut self.replies_pending) {
            let numbered: Vec<String> = ('a'..='z')
                .zip(&self.replies)
                .map(|(letter, reply)| format!("[{letter}] {reply}"))
                .collect();
            self.line(&self.paint(CYAN, &numbered.join("  ")))?;
        }
        Ok(())
    }

    /// Writes `line` on a line of its own.
    fn line(&mut self, line: &str) -> io::Result<()> {
        self.end_line()?;
        self.write_out(&format!("{line}\n"))
    }

    fn end_line(&mut self) -> io::Result<()> {
        if self.line_open {
            self.line_open = false;
            self.write_out("\n")?;
        }
        Ok(())
    }

    /// Writes and flushes at once (tokens must show as they come); hides running spinners
    /// meanwhile so they are redrawn below the text instead of over it.
    fn write_out(&mut self, text: &str) -> io::Result<()> {
        let out = &mut self.out;
        let mut write = move || {
            out.write_all(text.as_bytes())?;
            out.flush()
        };
        match &self.progress {
            Some(progress) => progress.suspend(write),
            None => write(),
        }
    }

    fn paint(&self, colour: &str, text: &str) -> String {
        if self.options.color {
            format!("\x1b[{colour}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }
}

const DIM: &str = "2";
const RED: &str = "31";
const GREEN: &str = "32";
const YELLOW: &str = "33";
const CYAN: &str = "36";

/// A string field of an event, safe to print.
fn text(value: &Value) -> String {
    printable(value.as_str().unwrap_or_default())
}

/// A metadata value worth showing: a non-empty string, or other JSON compactly.
fn detail(value: &Value) -> Option<String> {
    match value {
        Value::Null => None,
        Value::String(s) if s.trim().is_empty() => None,
        Value::String(s) => Some(printable(s)),
        other => Some(printable(&other.to_string())),
    }
}

fn tool_name(data: &Value) -> String {
    Some(text(&data["tool"]))
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| "tool".to_owned())
}

/// Spinners are keyed by job id; calls without one (rejected before running) by tool.
fn spinner_key(data: &Value) -> String {
    data["job_id"]
        .as_str()
        .map(str::to_owned)
        .unwrap_or_else(|| tool_name(data))
}

/// The quick reply a typed line sends: one letter `a`.. (upper case too) is the reply of that
/// letter. Quick replies are lettered, not numbered, so a number stays a pick of the flight
/// with that number.
pub fn reply_index(line: &str) -> Option<usize> {
    let mut chars = line.trim().chars();
    match (chars.next(), chars.next()) {
        (Some(c), None) if c.is_ascii_alphabetic() => {
            Some(usize::from(c.to_ascii_lowercase() as u8 - b'a'))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sse::SseParser;

    /// A recorded turn: two tools (one fails and is retried in the background), tokens,
    /// the final answer with a flight table and a notice, done.
    const RECORDED: &str = r#"event: init
data: {"chat_id":"01JCHAT","created":true}

event: tool_started
data: {"tool":"search_flights","job_id":"j1","deduped":false,"status":"running"}

event: tool_started
data: {"tool":"kb_retrieve","job_id":"j2","deduped":true,"status":"running"}

event: tool_progress
data: {"tool":"search_flights","job_id":"j1","message":"Award search done: 1 found. Still checking cash fares …"}

event: debug
data: {"type":"llm_request","payload":{"messages":3}}

event: tool_result
data: {"tool":"kb_retrieve","job_id":"j2","status":"failed","metadata":{"error":"upstream 503","retry_attempt":1}}

event: tool_result
data: {"tool":"search_flights","job_id":"j1","status":"succeeded","metadata":{}}

event: tool_started
data: {"tool":"search_flights","job_id":"j3","deduped":false,"status":"queued"}

event: tool_result
data: {"tool":"search_flights","job_id":"j3","status":"queued","metadata":{}}

event: tool_result
data: {"tool":"ask_gpt","job_id":null,"status":"rate_limited","metadata":{"reset_at":"2027-03-15T11:00:00Z"}}

event: assistant_token
data: {"content":"Found "}

event: assistant_token
data: {"content":"one flight."}

event: final
data: {"message":{"role":"assistant","content":"Found one flight."},"session_state":{},"tool_result":{"seatsResult":{"success":true,"results":{"count":1,"flights":[{"airline":"LH","cabin":"Business","price":"70,000 miles","outbound":{"departure":{"airport":"FRA","time":"2027-03-15T10:05"},"arrival":{"airport":"JFK","time":"2027-03-15T12:55"},"duration":"8h 50m","stops":"Nonstop"}}]}},"cashResult":null},"metadata":{"notice":"local stack: fake upstreams"}}

event: done
data: {}

"#;

    fn render(options: Options) -> (String, String, bool) {
        let events = SseParser::default().push(RECORDED.as_bytes());
        assert_eq!(events.len(), 14);
        let mut renderer = Renderer::new(Vec::new(), Vec::new(), options);
        renderer.begin_turn();
        for event in &events {
            renderer.event(event).unwrap();
        }
        let failed = renderer.failed();
        let (out, err) = renderer.into_parts();
        (
            String::from_utf8(out).unwrap(),
            String::from_utf8(err).unwrap(),
            failed,
        )
    }

    #[test]
    fn a_stopped_answer_keeps_its_text_and_says_it_stopped() {
        let stream = concat!(
            "event: assistant_token\ndata: {\"content\":\"Once upon\"}\n\n",
            "event: final\ndata: {\"message\":{\"role\":\"assistant\",\"content\":\"Once upon\",",
            "\"stopped\":true},\"session_state\":{},\"tool_result\":null}\n\n",
            "event: done\ndata: {}\n\n",
        );
        let mut renderer = Renderer::new(Vec::new(), Vec::new(), Options::default());
        renderer.begin_turn();
        for event in &SseParser::default().push(stream.as_bytes()) {
            renderer.event(event).unwrap();
        }
        assert!(!renderer.failed());
        let (out, _) = renderer.into_parts();
        assert_eq!(String::from_utf8(out).unwrap(), "Once upon\n(stopped)\n");
    }

    #[test]
    fn plain_output_of_a_recorded_turn() {
        let (out, err, failed) = render(Options::default());
        let expected = "\
chat 01JCHAT (new)
▸ search_flights …
▸ kb_retrieve … (deduped)
  Award search done: 1 found. Still checking cash fares …
✗ kb_retrieve failed: upstream 503 (retry queued)
✓ search_flights succeeded
⏳ search_flights queued in the background (job j3)
⏸ ask_gpt rate limited until 2027-03-15T11:00:00Z
Found one flight.

source  airline  cabin     depart                arrive                duration  stops    price
------  -------  --------  --------------------  --------------------  --------  -------  ------------
award   LH       Business  FRA 2027-03-15 10:05  JFK 2027-03-15 12:55  8h 50m    Nonstop  70,000 miles
local stack: fake upstreams
";
        assert_eq!(out, expected, "\n{out}");
        assert_eq!(err, "");
        assert!(!failed);
    }

    #[test]
    fn debug_events_and_json_lines() {
        let options = Options {
            debug: true,
            ..Options::default()
        };
        let (out, _, _) = render(options);
        assert!(out.contains("\n· llm_request {\"messages\":3}\n"), "{out}");

        let options = Options {
            json: true,
            ..Options::default()
        };
        let (out, _, _) = render(options);
        assert!(out.starts_with("{\"event\":\"init\",\"data\":{"), "{out}");
        let lines: Vec<Value> = out
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 14);
        assert_eq!(
            lines[0],
            json!({"event": "init", "data": {"chat_id": "01JCHAT", "created": true}})
        );
        assert_eq!(lines[13]["event"], "done");
    }

    #[test]
    fn errors_go_to_stderr_and_fail_the_turn() {
        let stream = "event: assistant_token\ndata: {\"content\":\"Let me\"}\n\nevent: error\ndata: {\"code\":\"llm_unavailable\",\"message\":\"the model did not answer\"}\n\nevent: done\ndata: {}\n\n";
        let mut renderer = Renderer::new(
            Vec::new(),
            Vec::new(),
            Options {
                color: true,
                ..Options::default()
            },
        );
        renderer.begin_turn();
        for event in SseParser::default().push(stream.as_bytes()) {
            renderer.event(&event).unwrap();
        }
        assert!(renderer.failed());
        let (out, err) = renderer.into_parts();
        assert_eq!(String::from_utf8(out).unwrap(), "Let me\n");
        assert_eq!(
            String::from_utf8(err).unwrap(),
            "\x1b[31merror (llm_unavailable): the model did not answer\x1b[0m\n"
        );
    }

    /// Renders `stream` as one turn: (stdout, stderr, the renderer for what it kept).
    fn turn(stream: &str, options: Options) -> (String, String, Renderer<Vec<u8>, Vec<u8>>) {
        let mut renderer = Renderer::new(Vec::new(), Vec::new(), options);
        renderer.begin_turn();
        for event in SseParser::default().push(stream.as_bytes()) {
            renderer.event(&event).unwrap();
        }
        let out = String::from_utf8(std::mem::take(&mut renderer.out)).unwrap();
        let err = String::from_utf8(std::mem::take(&mut renderer.err)).unwrap();
        (out, err, renderer)
    }

    /// A specialist's turn: a handoff (its reason from the model, with an escape sequence),
    /// offered flights, quick replies and an unknown UI kind, then the answer.
    const SPECIALIST: &str = concat!(
        "event: handoff\ndata: {\"from\":\"travel\",\"to\":\"flights\",\"reason\":\"wants \\u001b[2Joptions\"}\n\n",
        "event: ui\ndata: {\"kind\":\"flight_options\",\"payload\":{\"flights\":[",
        "{\"option\":1,\"flight\":{\"provider\":\"seatsaero\",\"airline\":\"Lufthansa\",\"cabin\":\"Business\",\"price\":\"70,000 miles\",",
        "\"outbound\":{\"departure\":{\"airport\":\"FRA\",\"time\":\"2027-03-15T10:05:00\"},\"arrival\":{\"airport\":\"JFK\",\"time\":\"2027-03-15T12:55:00\"},\"duration\":\"8h 50m\",\"stops\":\"Nonstop\"}}},",
        "{\"option\":2,\"flight\":{\"provider\":\"amadeus\",\"airline\":\"United\",\"cabin\":\"Business\",\"price\":\"€2,310.00\",\"totalStops\":1,",
        "\"outbound\":{\"departure\":{\"airport\":\"FRA\",\"time\":\"2027-03-15T11:00:00\"},\"arrival\":{\"airport\":\"EWR\",\"time\":\"2027-03-15T16:10:00\"},\"duration\":\"11h 10m\"}}}]}}\n\n",
        "event: ui\ndata: {\"kind\":\"seat_map\",\"payload\":{\"rows\":30}}\n\n",
        "event: ui\ndata: {\"kind\":\"quick_replies\",\"payload\":{\"replies\":[\"Book option 1\",\"\\u001b]0;x\\u0007Show more\"]}}\n\n",
        "event: assistant_token\ndata: {\"content\":\"Two options.\"}\n\n",
        "event: final\ndata: {\"message\":{\"role\":\"assistant\",\"content\":\"Two options.\"},\"tool_result\":",
        "{\"seatsResult\":{\"results\":{\"flights\":[{\"airline\":\"XX\"}]}},\"cashResult\":null}}\n\n",
        "event: done\ndata: {}\n\n",
    );

    #[test]
    fn handoffs_offered_flights_and_quick_replies() {
        let (out, err, mut renderer) = turn(SPECIALIST, Options::default());
        // The offered flights replace the search's table (no "XX" row); the quick replies
        // come last, nearest the prompt; the seat map is for newer clients.
        let expected = "\
→ flights (wants [2Joptions)
Two options.

#  source  airline    cabin     depart                arrive                duration  stops    price
-  ------  ---------  --------  --------------------  --------------------  --------  -------  ------------
1  award   Lufthansa  Business  FRA 2027-03-15 10:05  JFK 2027-03-15 12:55  8h 50m    Nonstop  70,000 miles
2  cash    United     Business  FRA 2027-03-15 11:00  EWR 2027-03-15 16:10  11h 10m   1        €2,310.00
[a] Book option 1  [b] ]0;xShow more
";
        assert_eq!(out, expected, "\n{out}");
        assert_eq!(err, "");
        assert_eq!(
            renderer.take_quick_replies(),
            ["Book option 1", "]0;xShow more"]
        );
        // Taken once; a new turn starts without any.
        assert!(renderer.take_quick_replies().is_empty());
    }

    #[test]
    fn unknown_ui_kinds_are_ignored_and_json_shows_everything_raw() {
        let unknown = concat!(
            "event: ui\ndata: {\"kind\":\"seat_map\",\"payload\":{\"rows\":30}}\n\n",
            "event: ui\ndata: {\"kind\":\"flight_options\",\"payload\":{\"flights\":[]}}\n\n",
            "event: ui\ndata: {\"kind\":\"quick_replies\",\"payload\":{\"replies\":\"not a list\"}}\n\n",
            "event: final\ndata: {\"message\":{\"role\":\"assistant\",\"content\":\"Hi.\"},\"tool_result\":null}\n\n",
            "event: done\ndata: {}\n\n",
        );
        let (out, err, mut renderer) = turn(unknown, Options::default());
        assert_eq!(out, "Hi.\n");
        assert_eq!(err, "");
        assert!(renderer.take_quick_replies().is_empty());

        let json = Options {
            json: true,
            ..Options::default()
        };
        let (out, _, mut renderer) = turn(SPECIALIST, json);
        let events: Vec<Value> = out
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let names: Vec<&str> = events.iter().filter_map(|e| e["event"].as_str()).collect();
        assert_eq!(
            names,
            [
                "handoff",
                "ui",
                "ui",
                "ui",
                "assistant_token",
                "final",
                "done"
            ]
        );
        assert_eq!(events[2]["data"]["kind"], "seat_map");
        // The replies can still be sent by number.
        assert_eq!(renderer.take_quick_replies().len(), 2);
    }

    #[test]
    fn approvals_are_shown_and_kept() {
        let stream = concat!(
            "event: tool_started\ndata: {\"tool\":\"create_fare_alert\",\"job_id\":\"j9\",\"deduped\":false,\"status\":\"running\"}\n\n",
            "event: tool_result\ndata: {\"tool\":\"create_fare_alert\",\"job_id\":\"j9\",\"status\":\"awaiting_approval\",\"metadata\":{}}\n\n",
            "event: approval_required\ndata: {\"job_id\":\"j9\",\"tool\":\"create_fare_alert\",\"arguments\":{\"origin\":\"FRA\"},",
            "\"summary\":\"Fare alert FRA → JFK\",\"expires_at\":\"2027-03-01T10:00:00Z\"}\n\n",
            "event: final\ndata: {\"message\":{\"role\":\"assistant\",\"content\":\"Shall I?\"},\"tool_result\":null}\n\n",
            "event: done\ndata: {}\n\n",
        );
        let (out, err, mut renderer) = turn(stream, Options::default());
        assert_eq!(
            out,
            "▸ create_fare_alert …\n⏸ create_fare_alert awaiting approval\n\
             ⏸ create_fare_alert waits for your approval: Fare alert FRA → JFK\nShall I?\n"
        );
        assert_eq!(err, "");
        assert!(!renderer.failed());
        assert_eq!(
            renderer.take_approvals(),
            [Approval {
                job_id: "j9".into(),
                tool: "create_fare_alert".into(),
                summary: "Fare alert FRA → JFK".into(),
                expires_at: Some("2027-03-01T10:00:00Z".into()),
            }]
        );
        assert!(renderer.take_approvals().is_empty());
    }
}
