//! Command-line arguments. No `Debug` derive: the struct may hold a bearer token.

use std::path::PathBuf;

use clap::Parser;

/// Where `make dev` writes the router's URL while the stack runs.
const ROUTER_URL_FILE: &str = ".local/run/router-url";

/// The local stack's router: the URL `make dev` wrote, else the one on `WATCH_PORT` (9000
/// unless set), as `infra/local/dev.sh` starts it.
pub fn local_router_url() -> String {
    if let Some(url) = std::fs::read_to_string(ROUTER_URL_FILE)
        .ok()
        .map(|text| text.trim().to_owned())
        .filter(|url| url.starts_with("http://") || url.starts_with("https://"))
    {
        return url;
    }
    let port = std::env::var("WATCH_PORT")
        .ok()
        .and_then(|p| p.trim().parse::<u16>().ok())
        .unwrap_or(9000);
    format!("http://127.0.0.1:{port}/lambda-url/chat-router")
}

/// Chat with the chat-router from the terminal.
#[derive(Parser)]
#[command(name = "chat", version)]
pub struct Args {
    /// The message to send. Without it: interactive mode, one turn per stdin line until
    /// EOF or `/quit`; a letter answers with that quick reply (a number is sent as typed, so
    /// it picks a flight from the table), and calls that need approval
    /// are asked about after the turn (when stdin is a terminal).
    pub message: Option<String>,

    /// Base URL of the chat-router; the request goes to `{url}/chat`. Default: the local
    /// stack's (the URL `make dev` wrote to `.local/run/router-url`, else port `WATCH_PORT`
    /// or 9000).
    #[arg(long, env = "CHAT_URL", default_value_t = local_router_url())]
    pub url: String,

    /// `sub` of the locally minted token.
    #[arg(long, env = "CHAT_USER", default_value = "dev-user")]
    pub user: String,

    /// Agent profile to use (sent as `agent`).
    #[arg(long)]
    pub agent: Option<String>,

    /// Continue this chat instead of the remembered one.
    #[arg(long, conflicts_with = "new")]
    pub chat_id: Option<String>,

    /// Start a new chat.
    #[arg(long)]
    pub new: bool,

    /// Where the last chat id is kept between runs.
    #[arg(long, default_value = ".local/run/chat-id")]
    pub state_file: PathBuf,

    /// Print each raw event as one JSON line instead of rendering it.
    #[arg(long)]
    pub json: bool,

    /// Ask the router for debug events and print them.
    #[arg(long)]
    pub debug: bool,

    /// File holding the HS256 secret used to mint the dev token.
    #[arg(long, env = "JWT_SECRET_FILE", default_value = ".local/run/jwt-secret")]
    pub jwt_secret_file: PathBuf,

    /// `iss` of the minted token.
    #[arg(long, env = "JWT_ISSUER", default_value = "http://127.0.0.1/dev")]
    pub issuer: String,

    /// `aud` of the minted token.
    #[arg(long, env = "JWT_AUDIENCE", default_value = "local-dev")]
    pub audience: String,

    /// Approve the tool call JOB_ID that waits for approval in the chat (`--chat-id`, else
    /// the remembered one), and show how the turn goes on. `last` approves the newest call
    /// that waits.
    #[arg(long, value_name = "JOB_ID", conflicts_with_all = ["message", "new", "deny", "alerts"])]
    pub approve: Option<String>,

    /// Deny the tool call JOB_ID that waits for approval in the chat, and show how the turn
    /// goes on. `last` denies the newest call that waits.
    #[arg(long, value_name = "JOB_ID", conflicts_with_all = ["message", "new", "alerts"])]
    pub deny: Option<String>,

    /// The reason sent with `--deny`.
    #[arg(long, requires = "deny")]
    pub reason: Option<String>,

    /// List your fare alerts: each with what it watches, its checks and what it found (with
    /// --json: one JSON object a line).
    #[arg(long, conflicts_with_all = ["message", "new", "chat_id"])]
    pub alerts: bool,

    /// Send this bearer token instead of minting one.
    #[arg(long, env = "CHAT_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
}
