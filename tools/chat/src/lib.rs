//! A small client for the chat-router's `POST /chat` stream, for local runs and demos:
//! mints a dev token, sends the message, renders events as they arrive (tokens inline, tool
//! calls as status lines, flight results as a table), and remembers the chat for follow-ups.
//! Each message carries an `Idempotency-Key`; a lost connection is retried without a second
//! turn and without showing anything twice (see [`client`]). Specialists' handoffs show as
//! status lines, quick replies can be sent by their letter (a number stays a pick
//! from the flight table), and a tool call that needs the user's
//! approval is asked about after the turn (or decided with `--approve` / `--deny`).

pub mod alerts;
pub mod args;
pub mod client;
pub mod printable;
pub mod render;
pub mod sse;
pub mod state;
pub mod table;
pub mod token;

use std::collections::VecDeque;
use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;

pub use args::Args;
use client::{Client, Decision, TurnRequest};
use printable::printable;
use render::{Approval, Options, Renderer};
use serde_json::Value;
use state::Session;
use token::Credentials;

/// The client's one error type. Messages never contain the token or the secret.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Missing or unusable configuration (secret file, arguments).
    #[error("{0}")]
    Setup(String),
    #[error("request to the router failed: {0}")]
    Http(#[from] reqwest::Error),
    /// A non-2xx answer: its status and `error.message` (or the raw body).
    #[error("the router answered {status}: {message}")]
    Refused { status: u16, message: String },
    #[error("the stream ended before the turn was done")]
    Truncated,
    /// The stream carried an `error` event; it has already been printed.
    #[error("the turn ended with an error")]
    TurnFailed,
    #[error("{action} {}: {source}", path.display())]
    File {
        action: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("writing output: {0}")]
    Output(#[from] std::io::Error),
}

/// Result with the client's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Runs the CLI: one turn with `args.message`, a decision on a waiting call (`--approve`,
/// `--deny`), the fare alerts (`--alerts`), or an interactive loop over stdin lines.
pub async fn run(args: Args) -> Result<()> {
    let credentials = Credentials::from_args(&args)?;
    let client = Client::new(&args.url, credentials)?;
    if args.alerts {
        return print_alerts(&client, std::io::stdout(), args.json).await;
    }
    let mut session = Session::open_for(
        args.state_file.clone(),
        &args.url,
        args.chat_id.clone(),
        args.new,
    )?;
    let terminal = std::io::stdout().is_terminal();
    let options = Options {
        color: terminal && !args.json,
        spinners: terminal && !args.json,
        json: args.json,
        debug: args.debug,
    };
    let mut renderer = Renderer::new(std::io::stdout(), std::io::stderr(), options);
    // The system's zone (`TZ` or the OS setting), so "tomorrow" means the user's tomorrow.
    let timezone = jiff::tz::TimeZone::system().iana_name().map(str::to_owned);
    let template = TurnRequest {
        message: String::new(),
        agent: args.agent.clone(),
        debug: args.debug,
        timezone,
    };

    let decision = match (&args.approve, &args.deny) {
        (Some(job), _) => Some((job, Decision::Approve)),
        (None, Some(job)) => Some((
            job,
            Decision::Deny {
                reason: args.reason.clone().filter(|r| !r.trim().is_empty()),
            },
        )),
        (None, None) => None,
    };
    if let Some((job, decision)) = decision {
        let job = waiting_job(&client, &session, job).await?;
        let result = client
            .decide(&mut session, &job, &decision, &mut renderer)
            .await;
        how_to_decide(&mut renderer, &session)?;
        return result;
    }

    if let Some(message) = args.message.clone() {
        let request = TurnRequest {
            message,
            ..template
        };
        let result = client.turn(&mut session, &request, &mut renderer).await;
        how_to_decide(&mut renderer, &session)?;
        return result;
    }

    // Reading stdin blocks, which is fine here: nothing else runs on this task while we
    // wait for the user. Piped input is read as messages only: no questions are asked.
    let asks = std::io::stdin().is_terminal();
    converse(
        &client,
        &mut session,
        &template,
        std::io::stdin().lock(),
        &mut renderer,
        asks,
    )
    .await
}

/// What `--approve` and `--deny` take instead of a job id: the newest call waiting for
/// approval in the chat, so a script need not read the id from the output.
pub const LAST_WAITING: &str = "last";

/// The job `--approve` / `--deny` name: `job`, or for [`LAST_WAITING`] the newest call
/// waiting for approval in `session`'s chat (a usage error when none waits).
pub async fn waiting_job(client: &Client, session: &Session, job: &str) -> Result<String> {
    if job != LAST_WAITING {
        return Ok(job.to_owned());
    }
    let chat_id = session
        .chat_id()
        .ok_or_else(|| Error::Setup("no chat to decide in: pass --chat-id".into()))?;
    client.waiting_call(chat_id).await?.ok_or_else(|| {
        Error::Setup(format!(
            "no tool call waits for approval in chat {}",
            printable(chat_id)
        ))
    })
}

/// The interactive loop: one turn per line of `input` (until EOF or `/quit`), the chat id
/// kept in `session` across lines, `template` for everything but the message. A line that
/// is just a letter `a`.. sends the last turn's quick reply of that letter; a number is sent
/// as typed, because the flight tables are numbered and "2" picks a flight. After each
/// turn, with `asks`, every call waiting for approval is asked about on the next lines of
/// `input`; without it, how to decide it is printed instead. Failed turns and decisions are
/// reported and the loop goes on.
pub async fn converse<R: BufRead, W: Write, E: Write>(
    client: &Client,
    session: &mut Session,
    template: &TurnRequest,
    mut input: R,
    renderer: &mut Renderer<W, E>,
    asks: bool,
) -> Result<()> {
    loop {
        renderer.prompt("you> ")?;
        let Some(line) = read_line(&mut input)? else {
            renderer.prompt("\n")?;
            return Ok(());
        };
        if line == "/quit" {
            return Ok(());
        }
        if line.is_empty() {
            continue;
        }
        let replies = renderer.take_quick_replies();
        let message = match render::reply_index(&line) {
            Some(n) if n < replies.len() => replies[n].clone(),
            _ => line,
        };
        let request = TurnRequest {
            message,
            ..template.clone()
        };
        let result = client.turn(session, &request, renderer).await;
        report(renderer, result)?;
        if !asks {
            how_to_decide(renderer, session)?;
            continue;
        }
        // A continuation may wait for another approval: ask until none is left.
        let mut waiting: VecDeque<Approval> = renderer.take_approvals().into();
        while let Some(approval) = waiting.pop_front() {
            let Some(decision) = ask(&mut input, renderer, &approval)? else {
                // EOF: leave it (and any others) undecided; the next prompt ends the loop.
                renderer.prompt("\n")?;
                hint(renderer, session, &approval)?;
                for approval in &waiting {
                    hint(renderer, session, approval)?;
                }
                break;
            };
            let result = client
                .decide(session, &approval.job_id, &decision, renderer)
                .await;
            report(renderer, result)?;
            waiting.extend(renderer.take_approvals());
        }
    }
}

/// Asks whether to approve `approval`; `None` at the end of the input.
fn ask<R: BufRead, W: Write, E: Write>(
    input: &mut R,
    renderer: &mut Renderer<W, E>,
    approval: &Approval,
) -> Result<Option<Decision>> {
    renderer.prompt(&format!(
        "Approve {}: {}? [y/N] ",
        printable(&approval.tool),
        printable(&approval.summary)
    ))?;
    let Some(answer) = read_line(input)? else {
        return Ok(None);
    };
    if matches!(answer.to_lowercase().as_str(), "y" | "yes") {
        return Ok(Some(Decision::Approve));
    }
    renderer.prompt("Reason (optional): ")?;
    let reason = read_line(input)?.filter(|reason| !reason.is_empty());
    Ok(Some(Decision::Deny { reason }))
}

/// One line of `input`, trimmed; `None` at its end.
fn read_line<R: BufRead>(input: &mut R) -> Result<Option<String>> {
    let mut line = String::new();
    if input.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    Ok(Some(line.trim().to_owned()))
}

/// A turn's or decision's error on stderr: the conversation goes on after it.
fn report<W: Write, E: Write>(renderer: &mut Renderer<W, E>, result: Result<()>) -> Result<()> {
    match result {
        // Already shown as it arrived in the stream.
        Ok(()) | Err(Error::TurnFailed) => Ok(()),
        Err(Error::Output(e)) => Err(Error::Output(e)),
        // One failed turn (router down, refused) should not end the conversation.
        Err(e) => Ok(renderer.problem(&format!("chat: {e}"))?),
    }
}

/// For each call of the last turn that waits for approval, how to decide it (when no
/// question can be asked).
fn how_to_decide<W: Write, E: Write>(
    renderer: &mut Renderer<W, E>,
    session: &Session,
) -> Result<()> {
    for approval in renderer.take_approvals() {
        hint(renderer, session, &approval)?;
    }
    Ok(())
}

fn hint<W: Write, E: Write>(
    renderer: &mut Renderer<W, E>,
    session: &Session,
    approval: &Approval,
) -> Result<()> {
    let job = printable(&approval.job_id);
    let chat = session
        .chat_id()
        .map(|id| format!(" --chat-id {}", printable(id)))
        .unwrap_or_default();
    let until = approval
        .expires_at
        .as_deref()
        .map(|at| format!(" before {}", printable(at)))
        .unwrap_or_default();
    Ok(renderer.notice(&format!(
        "{} waits for your approval{until}: `chat{chat} --approve {job}` \
         or `chat{chat} --deny {job} [--reason TEXT]`",
        printable(&approval.tool)
    ))?)
}

/// `--alerts`: the fare alerts as [`alerts::readable`] says them, or with `--json` each as
/// one JSON line (`[]` and `{alerts: [...]}` are both read).
async fn print_alerts(client: &Client, mut out: impl Write, json: bool) -> Result<()> {
    let listed = client.alerts().await?;
    let alerts = match &listed {
        Value::Array(alerts) => alerts.as_slice(),
        other => match other["alerts"].as_array().or(other["items"].as_array()) {
            Some(alerts) => alerts.as_slice(),
            None => std::slice::from_ref(other),
        },
    };
    if !json {
        for line in alerts::readable(alerts) {
            writeln!(out, "{line}")?;
        }
        return Ok(out.flush()?);
    }
    if alerts.is_empty() {
        writeln!(out, "no fare alerts")?;
    }
    for alert in alerts {
        writeln!(out, "{}", printable(&alert.to_string()))?;
    }
    Ok(out.flush()?)
}
