//! `dev-stack fakes` and `dev-stack sqs-bridge`, started by `infra/local/up.sh`.

use clap::{Parser, Subcommand};
use dev_stack::bridge::Bridge;
use dev_stack::fakes::{self, Ports};

#[derive(Parser)]
#[command(about = "Helpers of the local stack (make dev)")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the offline LLM stand-in and fake Seats.aero / Amadeus APIs until stopped.
    Fakes {
        /// Port of the LLM stand-in (`/v1/chat/completions`); leave out to use a real LLM.
        #[arg(long)]
        llm_port: Option<u16>,
        /// Port of the fake Seats.aero partner API; leave out to use the real one.
        #[arg(long)]
        seatsaero_port: Option<u16>,
        /// Port of the fake Amadeus API; leave out to use the real one.
        #[arg(long)]
        amadeus_port: Option<u16>,
    },
    /// Feed the tool queue to the tool-worker running under `cargo lambda watch`.
    SqsBridge {
        #[arg(long, env = "TOOL_QUEUE_URL")]
        queue_url: String,
        #[arg(
            long,
            default_value = "http://127.0.0.1:9000/2015-03-31/functions/tool-worker/invocations"
        )]
        invoke_url: String,
    },
}

#[tokio::main]
async fn main() -> Result<(), String> {
    match Cli::parse().command {
        Command::Fakes {
            llm_port,
            seatsaero_port,
            amadeus_port,
        } => {
            let running = fakes::start(Ports {
                llm: llm_port,
                seatsaero: seatsaero_port,
                amadeus: amadeus_port,
            })
            .await?;
            if let Some(llm) = &running.llm {
                eprintln!("[fakes] offline LLM stand-in at {}", llm.base_url());
            }
            if let Some(s) = &running.seatsaero {
                eprintln!(
                    "[fakes] fake Seats.aero at {} (recorded fixture data)",
                    s.uri()
                );
            }
            if let Some(s) = &running.amadeus {
                eprintln!(
                    "[fakes] fake Amadeus at {} (recorded fixture data)",
                    s.uri()
                );
            }
            eprintln!("[fakes] ready");
            wait_for_stop().await;
            Ok(())
        }
        Command::SqsBridge {
            queue_url,
            invoke_url,
        } => {
            let sdk = shared::aws::sdk_config().await;
            let bridge = Bridge {
                sqs: aws_sdk_sqs::Client::new(&sdk),
                queue_url,
                invoke_url,
                http: reqwest::Client::new(),
            };
            eprintln!("[sqs-bridge] polling the tool queue for the tool-worker");
            tokio::select! {
                () = bridge.run() => {}
                () = wait_for_stop() => {}
            }
            Ok(())
        }
    }
}

async fn wait_for_stop() {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(term) => term,
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
            return;
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}
