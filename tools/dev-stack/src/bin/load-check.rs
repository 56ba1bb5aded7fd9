//! The load check of a running `make dev` stack; see `dev_stack::load` for what it sends
//! and checks. Prints its figures and PASS or FAIL; exits 1 on FAIL.
//!
//!     make dev
//!     cargo run -q -p dev-stack --bin load-check

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use clap::Parser;
use dev_stack::load::{self, Settings};
use shared::http::auth::{DevClaims, mint_hs256};

#[derive(Parser)]
#[command(about = "Concurrent chat turns with duplicates against a running `make dev` stack")]
struct Args {
    /// Base URL of the chat-router.
    #[arg(
        long,
        env = "CHAT_URL",
        default_value = "http://127.0.0.1:9000/lambda-url/chat-router"
    )]
    url: String,
    /// New chats; each sends its first message twice at once (one Idempotency-Key), so
    /// twice this many requests start together.
    #[arg(long, default_value_t = 150)]
    chats: usize,
    /// Seconds each request may take from its first send to its `done`, retries included;
    /// later it counts as hung.
    #[arg(long, default_value_t = 300)]
    deadline_secs: u64,
    /// Seconds each request of the history checks may take.
    #[arg(long, default_value_t = 30)]
    check_timeout_secs: u64,
    /// The first flight's departure, in days from today (chat i flies a day later than
    /// chat i - 1).
    #[arg(long, default_value_t = 20)]
    first_day: i64,
    /// File holding the stack's HS256 secret (written by `make dev`).
    #[arg(long, env = "JWT_SECRET_FILE", default_value = ".local/run/jwt-secret")]
    jwt_secret_file: PathBuf,
    /// `iss` of the minted tokens.
    #[arg(long, env = "JWT_ISSUER", default_value = "http://127.0.0.1/dev")]
    issuer: String,
    /// `aud` of the minted tokens.
    #[arg(long, env = "JWT_AUDIENCE", default_value = "local-dev")]
    audience: String,
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let secret = match std::fs::read_to_string(&args.jwt_secret_file) {
        Ok(secret) => secret.trim().to_owned(),
        Err(e) => {
            eprintln!(
                "load-check: cannot read the JWT secret at {} ({e}): run `make dev` first",
                args.jwt_secret_file.display()
            );
            return ExitCode::from(2);
        }
    };
    let (issuer, audience) = (args.issuer.clone(), args.audience.clone());
    let run = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
        .to_string();
    let settings = Arc::new(Settings {
        url: args.url.trim_end_matches('/').to_owned(),
        chats: args.chats,
        deadline: Duration::from_secs(args.deadline_secs),
        check_timeout: Duration::from_secs(args.check_timeout_secs),
        run,
        first_day: args.first_day,
        token: Box::new(move |user| {
            let claims = DevClaims::new(user, &issuer, &audience, Duration::from_secs(3600));
            mint_hs256(&secret, &claims).map_err(|e| format!("cannot mint a dev token: {e}"))
        }),
    });
    let report = match load::run(Arc::clone(&settings)).await {
        Ok(report) => report,
        Err(e) => {
            eprintln!("load-check: {e}");
            return ExitCode::from(2);
        }
    };
    report.print(&settings);
    if report.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
