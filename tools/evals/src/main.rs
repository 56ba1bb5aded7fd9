//! `evals` (`make eval`): tool-calling evals against the configured model; docs/evals.md.

use std::process::ExitCode;

use clap::Parser;

#[tokio::main]
async fn main() -> ExitCode {
    match evals::cli::main(evals::cli::Args::parse()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("evals: {e}");
            ExitCode::FAILURE
        }
    }
}
