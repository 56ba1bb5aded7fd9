//! `dev-stack fakes`, `dev-stack sqs-bridge` and `dev-stack gate`, started by
//! `infra/local/dev.sh`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand};
use dev_stack::bridge::Bridge;
use dev_stack::fakes::{self, Ports};
use dev_stack::gate::{self, Gate};
use dev_stack::supervise::Supervision;

#[derive(Parser)]
#[command(about = "Helpers of the local stack (make dev)")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the offline LLM stand-in and fake Seats.aero / Amadeus / Duffel APIs until
    /// stopped.
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
        /// Port of the fake Duffel API (generated offers); leave out to use the real one.
        #[arg(long)]
        duffel_port: Option<u16>,
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
    /// Stand in front of `cargo lambda watch` so it cannot deadlock: let at most a few
    /// invocations of each function through at once, queue the rest (bounded), answer 503
    /// with Retry-After beyond that. Bodies stream through frame by frame.
    Gate {
        /// Where clients send their requests (the port they know as WATCH_PORT).
        #[arg(long, default_value = "127.0.0.1:9000")]
        listen: SocketAddr,
        /// Where `cargo lambda watch` listens.
        #[arg(long, default_value = "127.0.0.1:9100")]
        upstream: SocketAddr,
        /// Invocations of one function let through at once (the emulator hangs for good
        /// once about 100 of one function wait in it).
        #[arg(long, env = "GATE_PER_FUNCTION", default_value_t = 4,
              value_parser = clap::value_parser!(u16).range(1..=50))]
        per_function: u16,
        /// Requests of one function that may wait for their turn; further ones get 503.
        #[arg(long, env = "GATE_QUEUE", default_value_t = 128)]
        queue: usize,
        /// Seconds a request may wait for its turn before it gets 503.
        #[arg(long, env = "GATE_QUEUE_WAIT_SECS", default_value_t = 60)]
        queue_wait_secs: u64,
        /// Seconds an invocation whose client left still counts as running while the gate
        /// reads its answer to the end.
        #[arg(long, default_value_t = 300)]
        hold_secs: u64,
        /// The emulator's pidfile: with `--restart`, a function whose process died is
        /// started again (the emulator is replaced) at its next invocation.
        #[arg(long, requires = "restart")]
        watch_pidfile: Option<PathBuf>,
        /// The command that replaces the emulator (its words; it must rewrite the pidfile).
        #[arg(long, num_args = 1.., allow_hyphen_values = true, requires = "watch_pidfile")]
        restart: Vec<String>,
    },
}

#[tokio::main]
async fn main() -> Result<(), String> {
    match Cli::parse().command {
        Command::Fakes {
            llm_port,
            seatsaero_port,
            amadeus_port,
            duffel_port,
        } => {
            serve_fakes(Ports {
                llm: llm_port,
                seatsaero: seatsaero_port,
                amadeus: amadeus_port,
                duffel: duffel_port,
            })
            .await
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
        Command::Gate {
            listen,
            upstream,
            per_function,
            queue,
            queue_wait_secs,
            hold_secs,
            watch_pidfile,
            restart,
        } => {
            let config = gate::Config {
                upstream,
                per_function: usize::from(per_function),
                queue,
                queue_wait: Duration::from_secs(queue_wait_secs),
                hold_limit: Duration::from_secs(hold_secs),
            };
            let supervision = watch_pidfile.map(|pidfile| Supervision {
                pidfile,
                restart,
                upstream,
            });
            if supervision.is_some() {
                eprintln!(
                    "[gate] a function whose process dies is started again at its next invocation"
                );
            }
            let listener = tokio::net::TcpListener::bind(listen)
                .await
                .map_err(|e| format!("cannot listen on {listen}: {e}"))?;
            eprintln!(
                "[gate] ready: {listen} -> cargo lambda watch at {upstream}; per function {per_function} at once, \
                 {queue} more waiting for at most {queue_wait_secs} s, 503 beyond"
            );
            tokio::select! {
                () = gate::serve(listener, Gate::supervising(config, supervision)) => {}
                () = wait_for_stop() => {}
            }
            Ok(())
        }
    }
}

/// Serves the fakes on `ports` until stopped; `infra/local/dev.sh` waits for "[fakes] ready".
async fn serve_fakes(ports: Ports) -> Result<(), String> {
    let running = fakes::start(ports).await?;
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
    if let Some(s) = &running.duffel {
        eprintln!("[fakes] fake Duffel at {} (generated offers)", s.uri());
    }
    eprintln!("[fakes] ready");
    wait_for_stop().await;
    Ok(())
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
