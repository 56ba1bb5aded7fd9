//! The command line of `dev-stack` (its subcommands and their options, some read from the
//! environment), in the library so the docs' settings table can list what it reads.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(about = "Helpers of the local stack (make dev)")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
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
