//! The external MCP servers of `config/agents.toml` (`[mcp_servers.<name>]`), checked when
//! the catalog loads: a bad URL, an empty allow-list or a name the models cannot carry is a
//! start-up error, not a surprise in a turn.

use std::time::Duration;

use serde::Deserialize;
use shared::limits::RateLimit;

use agent_tools::Approval;
use shared::{Error, Result};

/// Longest tool name the providers accept (OpenAI and Bedrock: 64).
const MAX_OFFERED_NAME: usize = 64;

/// Longest server name: it prefixes every offered name.
const MAX_SERVER_NAME: usize = 20;

/// Between a server's name and its tool's in an offered name; no built-in tool name holds it.
pub const SEPARATOR: &str = "__";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct McpServerEntry {
    url: String,
    #[serde(default)]
    secret: Option<String>,
    allow: Vec<String>,
    #[serde(default)]
    timeout_secs: Option<f64>,
    #[serde(default)]
    discover_timeout_secs: Option<f64>,
    #[serde(default)]
    ttl_secs: Option<u64>,
    #[serde(default)]
    rate_limit: Option<agent_tools::RateLimitEntry>,
    #[serde(default)]
    approval: Approval,
}

/// One external MCP server and what this deployment takes from it.
#[derive(Debug, Clone, PartialEq)]
pub struct McpServerConfig {
    /// The prefix of its tools' offered names (`<name>__<tool>`).
    pub name: String,
    /// Its Streamable HTTP endpoint.
    pub url: String,
    /// Secrets Manager name of a bearer token sent with every request; `None`: no token.
    pub secret: Option<String>,
    /// Its tools that may be offered, by their own names; every other tool is left out.
    pub allow: Vec<String>,
    /// One call's time limit (default 10 s).
    pub timeout: Duration,
    /// How long listing its tools may take at cold start (default 3 s); a server slower
    /// than this has its tools left out until the next discovery.
    pub discover_timeout: Duration,
    /// How long a discovered tool list is used before it is listed again (default 300 s;
    /// shorter when the server's own cache hint says so).
    pub ttl: Duration,
    /// Each of its tools' calls per user and window; `None`: unlimited.
    pub rate_limit: Option<RateLimit>,
    /// Whether its calls wait for the user's approval (a profile may override it for `mcp`).
    pub approval: Approval,
}

impl McpServerConfig {
    /// The name the model sees for the server's tool `tool`.
    pub fn offered_name(&self, tool: &str) -> String {
        format!("{}{SEPARATOR}{tool}", self.name)
    }
}

fn seconds(
    value: Option<f64>,
    default: f64,
    key: &str,
    name: &str,
    source: &str,
) -> Result<Duration> {
    let secs = value.unwrap_or(default);
    if !(secs.is_finite() && secs > 0.0 && secs <= 900.0) {
        return Err(Error::Config(format!(
            "{source}: mcp_servers.{name}.{key} must be in (0, 900], got {secs}"
        )));
    }
    Ok(Duration::from_secs_f64(secs))
}

fn is_name(text: &str) -> bool {
    !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Checks one `[mcp_servers.<name>]` entry (`source` names the file in errors).
pub(crate) fn server(name: &str, entry: McpServerEntry, source: &str) -> Result<McpServerConfig> {
    let fail = |message: String| {
        Err(Error::Config(format!(
            "{source}: mcp_servers.{name}: {message}"
        )))
    };
    if !is_name(name) || name.len() > MAX_SERVER_NAME || name.contains(SEPARATOR) {
        return fail(format!(
            "a server's name prefixes its tools' names, so it must be at most {MAX_SERVER_NAME} letters, digits, `_` or `-` without `{SEPARATOR}`"
        ));
    }
    match reqwest::Url::parse(&entry.url) {
        Ok(url) if matches!(url.scheme(), "https" | "http") && url.host_str().is_some() => {}
        _ => return fail(format!("url must be an http(s) URL, got `{}`", entry.url)),
    }
    if entry.allow.is_empty() {
        return fail("allow must name the tools to offer; none are offered by default".into());
    }
    for tool in &entry.allow {
        let offered = format!("{name}{SEPARATOR}{tool}");
        if !is_name(tool) || offered.len() > MAX_OFFERED_NAME {
            return fail(format!(
                "allow: `{tool}` cannot be offered to a model as `{offered}` (at most {MAX_OFFERED_NAME} letters, digits, `_` or `-`)"
            ));
        }
    }
    if entry.secret.as_deref().is_some_and(|s| s.trim().is_empty()) {
        return fail("secret is empty; leave it out for a server without a token".into());
    }
    let rate_limit = match entry.rate_limit {
        Some(limit) => Some(limit.checked(&format!("mcp_servers.{name}"), source)?),
        None => None,
    };
    let ttl = entry.ttl_secs.unwrap_or(300);
    if !(1..=86_400).contains(&ttl) {
        return fail(format!("ttl_secs must be 1 to 86400, got {ttl}"));
    }
    Ok(McpServerConfig {
        name: name.to_owned(),
        url: entry.url,
        secret: entry.secret,
        allow: entry.allow,
        timeout: seconds(entry.timeout_secs, 10.0, "timeout_secs", name, source)?,
        discover_timeout: seconds(
            entry.discover_timeout_secs,
            3.0,
            "discover_timeout_secs",
            name,
            source,
        )?,
        ttl: Duration::from_secs(ttl),
        rate_limit,
        approval: entry.approval,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(toml_text: &str) -> Result<McpServerConfig> {
        let entry: McpServerEntry =
            toml::from_str(toml_text).map_err(|e| Error::Config(e.to_string()))?;
        server("notes", entry, "test")
    }

    #[test]
    fn a_server_is_checked_when_the_catalog_loads() {
        let ok = parse("url = \"https://mcp.example.com/mcp\"\nallow = [\"lookup\"]\n")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(ok.offered_name("lookup"), "notes__lookup");
        assert_eq!(ok.timeout, Duration::from_secs(10));
        assert_eq!(ok.ttl, Duration::from_secs(300));
        for (bad, says) in [
            ("url = \"ftp://x/mcp\"\nallow = [\"a\"]\n", "http(s) URL"),
            ("url = \"https://x/mcp\"\nallow = []\n", "allow must name"),
            (
                "url = \"https://x/mcp\"\nallow = [\"a.b\"]\n",
                "cannot be offered",
            ),
            (
                &format!(
                    "url = \"https://x/mcp\"\nallow = [\"{}\"]\n",
                    "a".repeat(60)
                ),
                "cannot be offered",
            ),
            (
                "url = \"https://x/mcp\"\nallow = [\"a\"]\ntimeout_secs = 0\n",
                "timeout_secs",
            ),
            (
                "url = \"https://x/mcp\"\nallow = [\"a\"]\nsecret = \" \"\n",
                "secret is empty",
            ),
        ] {
            let err = parse(bad).err().map(|e| e.to_string()).unwrap_or_default();
            assert!(err.contains(says), "{bad}: {err}");
        }
        let entry: McpServerEntry = toml::from_str("url = \"https://x/mcp\"\nallow = [\"a\"]\n")
            .unwrap_or_else(|e| panic!("{e}"));
        let err = server("a__b", entry, "test")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("prefixes its tools"), "{err}");
    }
}
