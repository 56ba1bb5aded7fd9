//! `kb-ingest [PATHS]...`: see `kb-ingest --help`.

use std::process::ExitCode;

use clap::Parser;
use kb_ingest::{Args, Progress, run};
use shared::config::Env;
use tracing_subscriber::EnvFilter;

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    // Warnings (retries, throttling) on stderr; progress and the summary on stdout.
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn"));
    drop(
        tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(std::io::stderr)
            .compact()
            .try_init(),
    );
    let progress = Progress::for_stdout();
    match run(&args, &Env::from_process(), &progress).await {
        Ok(report) => {
            println!("kb-ingest: {report}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            progress.finish();
            eprintln!("kb-ingest: {e}");
            ExitCode::FAILURE
        }
    }
}
