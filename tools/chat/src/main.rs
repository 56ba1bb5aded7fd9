//! `chat`: talk to the chat-router from the terminal (see the crate docs).

use std::error::Error as _;
use std::io::ErrorKind;
use std::process::ExitCode;

use chat::Error;
use clap::Parser;

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    match chat::run(chat::Args::parse()).await {
        Ok(()) => ExitCode::SUCCESS,
        // Already printed as it arrived in the stream.
        Err(Error::TurnFailed) => ExitCode::FAILURE,
        // Output piped into `head` and the like: nobody is reading any more.
        Err(Error::Output(e)) if e.kind() == ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("chat: {}", describe(&e));
            ExitCode::FAILURE
        }
    }
}

/// The error with its causes: reqwest's own message hides why a request failed
/// ("connection refused").
fn describe(error: &Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text = format!("{text}: {cause_text}");
        }
        source = cause.source();
    }
    text
}
