//! Configuration of the function, read once at cold start.
//!
//! | variable | default | meaning |
//! | --- | --- | --- |
//! | `SEATSAERO_API_KEY_SECRET` | required | secret holding the partner API key |
//! | `SEATSAERO_BASE_URL` | `https://seats.aero/partnerapi` | partner API base (tests: a fake) |
//! | `SEATSAERO_TAKE` | `100` | `take` of `GET /search` (the API allows 10..=1000) |
//! | `SEATSAERO_TRIP_CONCURRENCY` | `5` | `/trips/{id}` lookups in flight at once, per direction (1..=20) |

use std::time::Duration;

use domain::{Error, Result};
use lambda_kit::config::Env;
use lambda_kit::upstream::RetryPolicy;
use reqwest::Url;

pub const DEFAULT_BASE_URL: &str = "https://seats.aero/partnerapi";
pub const DEFAULT_TAKE: u32 = 100;
pub const DEFAULT_TRIP_CONCURRENCY: usize = 5;
/// Time budget of a request without a Lambda context (local runs, tests).
pub const DEFAULT_DEADLINE_FALLBACK: Duration = Duration::from_secs(25);

#[derive(Debug, Clone)]
pub struct Config {
    pub base_url: Url,
    pub api_key_secret: String,
    pub take: u32,
    pub trip_concurrency: usize,
    /// Retries of each upstream call (429, 5xx, connection errors, timeouts).
    pub retry: RetryPolicy,
    pub deadline_fallback: Duration,
}

impl Config {
    pub fn from_env(env: &Env) -> Result<Self> {
        let mut r = env.reader();
        let api_key_secret = r.required(
            "SEATSAERO_API_KEY_SECRET",
            "secret holding the Seats.aero partner key; set by template.yaml, locally `source .local/run/env`",
        );
        let base_url = r.or("SEATSAERO_BASE_URL", DEFAULT_BASE_URL);
        let take = r.parse_or("SEATSAERO_TAKE", DEFAULT_TAKE);
        let trip_concurrency = r.parse_or("SEATSAERO_TRIP_CONCURRENCY", DEFAULT_TRIP_CONCURRENCY);
        r.finish(())?;

        let mut config = Self::new(&base_url, api_key_secret)?;
        if !(10..=1000).contains(&take) {
            return Err(Error::Config(format!(
                "SEATSAERO_TAKE={take} is invalid: Seats.aero accepts 10 to 1000"
            )));
        }
        if !(1..=20).contains(&trip_concurrency) {
            return Err(Error::Config(format!(
                "SEATSAERO_TRIP_CONCURRENCY={trip_concurrency} is invalid: use 1 to 20"
            )));
        }
        config.take = take;
        config.trip_concurrency = trip_concurrency;
        Ok(config)
    }

    /// Defaults for everything but the base URL and the secret name (tests, benches).
    pub fn new(base_url: &str, api_key_secret: impl Into<String>) -> Result<Self> {
        let url = Url::parse(base_url.trim())
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https") && !u.cannot_be_a_base())
            .ok_or_else(|| {
                Error::Config(format!(
                    "SEATSAERO_BASE_URL={base_url:?} is invalid: expected an http(s) URL"
                ))
            })?;
        Ok(Self {
            base_url: url,
            api_key_secret: api_key_secret.into(),
            take: DEFAULT_TAKE,
            trip_concurrency: DEFAULT_TRIP_CONCURRENCY,
            retry: RetryPolicy::default(),
            deadline_fallback: DEFAULT_DEADLINE_FALLBACK,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(pairs: &[(&str, &str)]) -> String {
        Config::from_env(&Env::from_pairs(pairs.iter().copied()))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    }

    #[test]
    fn defaults() {
        let config = Config::from_env(&Env::from_pairs([("SEATSAERO_API_KEY_SECRET", "s")]))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(config.base_url.as_str(), "https://seats.aero/partnerapi");
        assert_eq!((config.take, config.trip_concurrency), (100, 5));
        assert_eq!(config.api_key_secret, "s");
    }

    #[test]
    fn problems_name_the_variable() {
        assert!(err(&[]).contains("SEATSAERO_API_KEY_SECRET"));
        let secret = ("SEATSAERO_API_KEY_SECRET", "s");
        assert!(err(&[secret, ("SEATSAERO_BASE_URL", "ftp://x")]).contains("SEATSAERO_BASE_URL"));
        assert!(err(&[secret, ("SEATSAERO_TAKE", "5")]).contains("SEATSAERO_TAKE"));
        assert!(err(&[secret, ("SEATSAERO_TRIP_CONCURRENCY", "0")]).contains("CONCURRENCY"));
        assert!(err(&[secret, ("SEATSAERO_TRIP_CONCURRENCY", "x")]).contains("CONCURRENCY"));
    }
}
