//! What the MCP server serves: `MCP_TOOLS`, a comma-separated list of tool names
//! (`search_flights,search_knowledge_base` when unset). Only tools that stand on their own
//! may be listed: `ask_gpt` (the model answering from its own knowledge) never, nor the
//! tools that need a chat (picking a listed flight, the client-rendered ones, handoffs).

use std::fmt;
use std::str::FromStr;

use agent::tools::McpExposure;
use shared::config::Env;
use shared::domain::tool_call::ToolName;

/// The tools an MCP client may list and call, in the order given, without repeats.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServedTools(Vec<ToolName>);

impl ServedTools {
    pub const DEFAULT: &'static [ToolName] =
        &[ToolName::SEARCH_FLIGHTS, ToolName::SEARCH_KNOWLEDGE_BASE];

    pub fn names(&self) -> &[ToolName] {
        &self.0
    }
}

/// The tool `name` stands for, if it may be served; else why not (declared on the tool).
fn servable(name: &str) -> Result<ToolName, String> {
    let unknown = || format!("{name:?} is not a tool of this deployment");
    let tool = ToolName::parse(name).map_err(|_| unknown())?;
    match agent::tools::info(tool).map(|info| info.mcp) {
        Some(McpExposure::Served) => Ok(tool),
        Some(McpExposure::NotServed(why)) => Err(format!("{name} {why}")),
        None => Err(unknown()),
    }
}

impl Default for ServedTools {
    fn default() -> Self {
        Self(Self::DEFAULT.to_vec())
    }
}

impl FromStr for ServedTools {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut tools = Vec::new();
        for name in s.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            let tool = servable(name)?;
            if !tools.contains(&tool) {
                tools.push(tool);
            }
        }
        if tools.is_empty() {
            return Err("name at least one tool".into());
        }
        Ok(Self(tools))
    }
}

impl fmt::Display for ServedTools {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.0.iter().map(|t| t.as_str()).collect();
        f.write_str(&names.join(","))
    }
}

/// Who vouches for a caller (`MCP_AUTH`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CallerAuth {
    /// The user's bearer token, verified by the function as the router does (`jwt`).
    #[default]
    Jwt,
    /// The Function URL's IAM authorization (SigV4); the caller is its IAM principal (`iam`).
    Iam,
}

impl fmt::Display for CallerAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Jwt => "jwt",
            Self::Iam => "iam",
        })
    }
}

impl FromStr for CallerAuth {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "jwt" => Ok(Self::Jwt),
            "iam" => Ok(Self::Iam),
            other => Err(format!("{other:?} is neither jwt nor iam")),
        }
    }
}

/// The server's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub tools: ServedTools,
    pub auth: CallerAuth,
    /// The function's public base URL (`MCP_PUBLIC_URL`), for the protected-resource
    /// document and the 401 challenge; unset, each request's `Host` names it
    /// (`https://<host>`, what a Function URL receives). Set it behind a custom domain.
    pub public_url: Option<reqwest::Url>,
    /// Browser origins that may call (`MCP_ALLOWED_ORIGINS`, comma-separated); a request
    /// with any other `Origin` gets 403. Requests without `Origin` (not browsers) pass.
    pub allowed_origins: Vec<String>,
    /// The largest request body (`MCP_MAX_BODY_BYTES`); larger gets 413.
    pub max_body_bytes: usize,
}

impl Config {
    pub fn from_env(env: &Env) -> shared::Result<Self> {
        let mut r = env.reader();
        let tools = r.parse_or("MCP_TOOLS", ServedTools::default());
        let auth = r.parse_or("MCP_AUTH", CallerAuth::Jwt);
        let public_text = r.optional("MCP_PUBLIC_URL").unwrap_or_default();
        let origins = r.optional("MCP_ALLOWED_ORIGINS").unwrap_or_default();
        let max_body_bytes = r.parse_or("MCP_MAX_BODY_BYTES", 256 * 1024_usize);
        let public_url = match public_text.trim() {
            "" => None,
            text => match reqwest::Url::parse(text) {
                Ok(url) if matches!(url.scheme(), "https" | "http") && url.query().is_none() => {
                    Some(url)
                }
                _ => {
                    return Err(shared::Error::Config(format!(
                        "MCP_PUBLIC_URL={text:?} is not an http(s) URL without a query"
                    )));
                }
            },
        };
        let allowed_origins = origins
            .split(',')
            .map(str::trim)
            .filter(|o| !o.is_empty())
            .map(str::to_owned)
            .collect();
        r.finish(Self {
            tools,
            auth,
            public_url,
            allowed_origins,
            max_body_bytes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(pairs: &[(&str, &str)]) -> Result<Config, String> {
        Config::from_env(&Env::from_pairs(pairs.iter().copied())).map_err(|e| e.to_string())
    }

    #[test]
    fn the_default_serves_the_searches() {
        let served = config(&[]).unwrap_or_else(|e| panic!("{e}")).tools;
        assert_eq!(
            served.names(),
            [ToolName::SEARCH_FLIGHTS, ToolName::SEARCH_KNOWLEDGE_BASE]
        );
        assert_eq!(served.to_string(), "search_flights,search_knowledge_base");
    }

    #[test]
    fn ask_gpt_chat_only_and_unknown_tools_are_refused_by_name() {
        let err = config(&[("MCP_TOOLS", "search_flights, ask_gpt")]).unwrap_err();
        assert!(
            err.contains("ask_gpt answers from the model's own knowledge"),
            "{err}"
        );
        let err = config(&[("MCP_TOOLS", "select_flight")]).unwrap_err();
        assert!(
            err.contains("select_flight works only inside a chat"),
            "{err}"
        );
        let err = config(&[("MCP_TOOLS", "rm_rf")]).unwrap_err();
        assert!(err.contains("\"rm_rf\" is not a tool"), "{err}");
        assert!(config(&[("MCP_TOOLS", " , ")]).is_err());
        let served = config(&[("MCP_TOOLS", "award_value,award_value ,search_flights")])
            .unwrap_or_else(|e| panic!("{e}"))
            .tools;
        assert_eq!(
            served.names(),
            [ToolName::new("award_value"), ToolName::SEARCH_FLIGHTS]
        );
    }
}
