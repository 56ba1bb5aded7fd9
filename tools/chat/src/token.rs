//! The bearer token: given, or minted locally from the dev stack's HS256 secret.

use std::path::Path;
use std::time::Duration;

use shared::http::auth::{DevClaims, mint_hs256};

use crate::{Args, Error, Result};

/// Lifetime of a minted token.
const LIFETIME: Duration = Duration::from_secs(3600);

/// Where tokens come from. No `Debug`: it holds a secret.
pub enum Credentials {
    /// A token passed with `--token` / `CHAT_TOKEN`.
    Given(String),
    /// Mint a fresh HS256 token per turn, so long interactive sessions never expire.
    Mint {
        secret: String,
        user: String,
        issuer: String,
        audience: String,
    },
}

impl Credentials {
    /// `--token` if given, else the secret from `--jwt-secret-file` (trimmed).
    pub fn from_args(args: &Args) -> Result<Self> {
        if let Some(token) = args.token.as_deref().map(str::trim)
            && !token.is_empty()
        {
            return Ok(Self::Given(token.to_owned()));
        }
        Ok(Self::Mint {
            secret: read_secret(&args.jwt_secret_file)?,
            user: args.user.clone(),
            issuer: args.issuer.clone(),
            audience: args.audience.clone(),
        })
    }

    /// The token to send now.
    pub fn bearer(&self) -> Result<String> {
        match self {
            Self::Given(token) => Ok(token.clone()),
            Self::Mint {
                secret,
                user,
                issuer,
                audience,
            } => {
                let claims = DevClaims::new(user, issuer, audience, LIFETIME);
                // shared's message names the problem (e.g. a short secret), never the secret.
                mint_hs256(secret, &claims)
                    .map_err(|e| Error::Setup(format!("cannot mint a dev token: {e}")))
            }
        }
    }
}

fn read_secret(path: &Path) -> Result<String> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(text.trim().to_owned()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(Error::Setup(format!(
            "no JWT secret at {}: run `make dev` first, or pass --token",
            path.display()
        ))),
        Err(source) => Err(Error::File {
            action: "reading",
            path: path.to_owned(),
            source,
        }),
    }
}
