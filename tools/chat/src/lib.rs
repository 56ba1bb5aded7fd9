//! A small client for the chat-router's `POST /chat` stream, for local runs and demos:
//! mints a dev token, sends the message, renders events as they arrive (tokens inline, tool
//! calls as status lines, flight results as a table), and remembers the chat for follow-ups.
//! Each message carries an `Idempotency-Key`; a lost connection is retried without a second
//! turn and without showing anything twice (see [`client`]).

pub mod args;
pub mod client;
pub mod printable;
pub mod render;
pub mod sse;
pub mod state;
pub mod table;
pub mod token;

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;

pub use args::Args;
use client::Client;
use render::{Options, Renderer};
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

/// Runs the CLI: one turn with `args.message`, or an interactive loop over stdin lines.
pub async fn run(args: Args) -> Result<()> {
    let credentials = Credentials::from_args(&args)?;
    let client = Client::new(&args.url, credentials)?;
    let mut session = Session::open(args.state_file.clone(), args.chat_id.clone(), args.new)?;
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
    let turn = |message: String| client::TurnRequest {
        message,
        agent: args.agent.clone(),
        debug: args.debug,
        timezone: timezone.clone(),
    };

    if let Some(message) = args.message.clone() {
        return client
            .turn(&mut session, &turn(message), &mut renderer)
            .await;
    }

    // Interactive: the chat id lives in `session` across lines. Reading stdin blocks, which
    // is fine here: nothing else runs on this task while we wait for the user.
    let stdin = std::io::stdin();
    let mut line = String::new();
    loop {
        let mut stdout = std::io::stdout();
        write!(stdout, "you> ")?;
        stdout.flush()?;
        line.clear();
        if stdin.lock().read_line(&mut line)? == 0 {
            writeln!(stdout)?;
            return Ok(());
        }
        let message = line.trim();
        if message == "/quit" {
            return Ok(());
        }
        if message.is_empty() {
            continue;
        }
        match client
            .turn(&mut session, &turn(message.to_owned()), &mut renderer)
            .await
        {
            Ok(()) | Err(Error::TurnFailed) => {}
            // One failed turn (router down, refused) should not end the conversation.
            Err(e) => eprintln!("chat: {e}"),
        }
    }
}
