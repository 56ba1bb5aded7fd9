//! OAuth 2.0 Protected Resource Metadata (RFC 9728), as MCP's authorization asks: the
//! document that names the authorization server (the deployment's token issuer), where it
//! lives, and the `WWW-Authenticate` challenge of a 401 that points to it.

use serde_json::{Value, json};

/// Where the document of `resource` lives: the well-known path inserted between the host
/// and the resource's path (`https://h/mcp` → `https://h/.well-known/oauth-protected-resource/mcp`).
pub fn metadata_url(resource: &reqwest::Url) -> String {
    let origin = resource.origin().ascii_serialization();
    format!("{origin}{}", metadata_path(resource))
}

/// The path part of [`metadata_url`].
pub fn metadata_path(resource: &reqwest::Url) -> String {
    format!("{WELL_KNOWN}{}", resource.path().trim_end_matches('/'))
}

/// RFC 9728's well-known path.
pub const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// The document: this resource, its one authorization server, tokens in the header only.
pub fn document(resource: &reqwest::Url, issuer: &str) -> Value {
    json!({
        "resource": resource.as_str(),
        "authorization_servers": [issuer],
        "bearer_methods_supported": ["header"],
        "resource_name": "Tool-calling MCP server",
    })
}

/// The challenge of a 401. `reason` is one of ours (never the caller's text), so the header
/// holds no quote a client did not expect.
pub fn challenge(resource: &reqwest::Url, reason: Challenge) -> String {
    let url = metadata_url(resource);
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
            metadata_url(&url("https://abc.lambda-url.us-east-1.on.aws/mcp")),
            "https://abc.lambda-url.us-east-1.on.aws/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            metadata_url(&url("https://h.example/")),
            "https://h.example/.well-known/oauth-protected-resource"
        );
        let issuer = "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_Abc";
        let doc = document(&url("https://h.example/mcp"), issuer);
        assert_eq!(doc["resource"], json!("https://h.example/mcp"));
        assert_eq!(doc["authorization_servers"], json!([issuer]));
    }

    #[test]
    fn a_401_points_to_the_document() {
        let resource = url("https://h.example/mcp");
        assert_eq!(
            challenge(&resource, Challenge::InvalidToken),
            "Bearer error=\"invalid_token\", resource_metadata=\"https://h.example/.well-known/oauth-protected-resource/mcp\""
        );
        assert!(!challenge(&resource, Challenge::NoToken).contains("error="));
    }
}
