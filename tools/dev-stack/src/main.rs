//! `dev-stack fakes`, `dev-stack sqs-bridge` and `dev-stack gate`, started by
//! `infra/local/dev.sh`.

use std::time::Duration;

use clap::Parser;
use dev_stack::bridge::Bridge;
use dev_stack::cli::{Cli, Command};
use dev_stack::fakes::{self, Ports};
use dev_stack::gate::{self, Gate};
use dev_stack::supervise::Supervision;

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
