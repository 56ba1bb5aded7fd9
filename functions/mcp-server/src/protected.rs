//! OAuth 2.0 Protected Resource Metadata (RFC 9728), as MCP's authorization asks: the
//! document that names the authorization server (the deployment's token issuer), where it
//! lives, and the `WWW-Authenticate` challenge of a 401 that points to it.

use serde_json::{Value, json};

/// The MCP endpoint's path within the function (what a Function URL hands the function).
pub const MCP_PATH: &str = "/mcp";

/// RFC 9728's well-known path.
pub const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// The endpoint's public URL: the function's public base (`https://<id>.lambda-url.<region>.on.aws`,
/// a custom domain, or the local emulator's `/lambda-url/mcp-server` prefix) plus [`MCP_PATH`].
pub fn resource(base: &reqwest::Url) -> String {
    format!("{}{MCP_PATH}", base.as_str().trim_end_matches('/'))
}

/// Where the document lives: the well-known path between the base and the MCP path
/// (`https://h/mcp` → `https://h/.well-known/oauth-protected-resource/mcp`, RFC 9728's form).
pub fn metadata_url(base: &reqwest::Url) -> String {
    format!(
        "{}{WELL_KNOWN}{MCP_PATH}",
        base.as_str().trim_end_matches('/')
    )
}

/// The paths (within the function) that answer with the document: its own, and the bare
/// well-known path clients also try.
pub fn metadata_paths() -> [String; 2] {
    [format!("{WELL_KNOWN}{MCP_PATH}"), WELL_KNOWN.to_owned()]
}

/// The document: this resource, its one authorization server, tokens in the header only.
pub fn document(base: &reqwest::Url, issuer: &str) -> Value {
    json!({
        "resource": resource(base),
        "authorization_servers": [issuer],
        "bearer_methods_supported": ["header"],
        "resource_name": "Tool-calling MCP server",
    })
}

/// The challenge of a 401. `reason` is one of ours (never the caller's text), so the header
/// holds no quote a client did not expect.
pub fn challenge(base: &reqwest::Url, reason: Challenge) -> String {
    let url = metadata_url(base);
    match reason {
        Challenge::NoToken => format!("Bearer resource_metadata=\"{url}\""),
        Challenge::InvalidToken => {
            format!("Bearer error=\"invalid_token\", resource_metadata=\"{url}\"")
        }
    }
}

/// Why a request is refused: no token at all (RFC 6750 says: no error code), or one that
/// failed verification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Challenge {
    NoToken,
    InvalidToken,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> reqwest::Url {
        reqwest::Url::parse(s).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn the_document_lives_under_the_well_known_path_of_the_resource() {
        assert_eq!(
            metadata_url(&url("https://abc.lambda-url.us-east-1.on.aws")),
            "https://abc.lambda-url.us-east-1.on.aws/.well-known/oauth-protected-resource/mcp"
        );
        // The local emulator serves the function under a prefix; the document follows it.
        assert_eq!(
            metadata_url(&url("http://127.0.0.1:9000/lambda-url/mcp-server")),
            "http://127.0.0.1:9000/lambda-url/mcp-server/.well-known/oauth-protected-resource/mcp"
        );
        let issuer = "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_Abc";
        let doc = document(&url("https://h.example/"), issuer);
        assert_eq!(doc["resource"], json!("https://h.example/mcp"));
        assert_eq!(doc["authorization_servers"], json!([issuer]));
    }

    #[test]
    fn a_401_points_to_the_document() {
        let base = url("https://h.example");
        assert_eq!(
            challenge(&base, Challenge::InvalidToken),
            "Bearer error=\"invalid_token\", resource_metadata=\"https://h.example/.well-known/oauth-protected-resource/mcp\""
        );
        assert!(!challenge(&base, Challenge::NoToken).contains("error="));
    }
}
