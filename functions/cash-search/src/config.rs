//! Configuration of the function, read once at cold start.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use lambda_kit::config::Env;
use lambda_kit::upstream::RetryPolicy;

/// Amadeus Self-Service environment (`AMADEUS_ENV`): the test one has cached, partial data
/// and its own credentials.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AmadeusEnv {
    #[default]
    Test,
    Prod,
}

impl AmadeusEnv {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Test => "test",
            Self::Prod => "prod",
        }
    }

    pub fn default_base_url(self) -> &'static str {
        match self {
            Self::Test => "https://test.api.amadeus.com",
            Self::Prod => "https://api.amadeus.com",
        }
    }
}

impl fmt::Display for AmadeusEnv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for AmadeusEnv {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "test" => Ok(Self::Test),
            "prod" | "production" => Ok(Self::Prod),
            _ => Err("expected `test` or `prod`".into()),
        }
    }
}

/// Which upstream prices cash fares (`CASH_PROVIDER`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CashProvider {
    /// Duffel's offer requests (API v2); anyone can sign up for a test token.
    Duffel,
    /// Amadeus Self-Service flight offers (new sign-ups are closed).
    Amadeus,
}

impl CashProvider {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Duffel => "duffel",
            Self::Amadeus => "amadeus",
        }
    }
}

impl fmt::Display for CashProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for CashProvider {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "duffel" => Ok(Self::Duffel),
            "amadeus" => Ok(Self::Amadeus),
            _ => Err("expected `duffel` or `amadeus`".into()),
        }
    }
}

/// Duffel's settings; read only when it is the provider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DuffelConfig {
    /// `DUFFEL_BASE_URL`, or Duffel's API (test and live tokens share it).
    pub base_url: String,
    /// Secret holding the access token (`duffel_test_…` or `duffel_live_…`).
    pub token_secret: String,
}

/// Duffel's API; whether a search is a test or a live one is the token's.
pub const DUFFEL_BASE_URL: &str = "https://api.duffel.com";

/// An http(s) base URL without a trailing slash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BaseUrl(String);

impl fmt::Display for BaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl BaseUrl {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for BaseUrl {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let url = reqwest::Url::parse(s.trim()).map_err(|e| e.to_string())?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err("expected an http(s) URL".into());
        }
        Ok(Self(url.as_str().trim_end_matches('/').to_owned()))
    }
}

/// An ISO 4217 code, upper case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CurrencyCode(String);

impl fmt::Display for CurrencyCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl CurrencyCode {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for CurrencyCode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        if s.len() == 3 && s.bytes().all(|b| b.is_ascii_alphabetic()) {
            Ok(Self(s.to_ascii_uppercase()))
        } else {
            Err("expected a 3-letter ISO 4217 code such as EUR".into())
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Which upstream this deployment searches.
    pub provider: CashProvider,
    /// Duffel's settings when it is the provider.
    pub duffel: Option<DuffelConfig>,
    /// The Amadeus settings below are read when Amadeus is the provider; otherwise the
    /// secret names are empty and nothing uses them.
    pub environment: AmadeusEnv,
    /// `AMADEUS_BASE_URL`, or the environment's public API.
    pub base_url: String,
    /// Secret with `{"client_id", "client_secret"}`.
    pub credentials_secret: String,
    /// Secret holding the access token that all instances share.
    pub token_secret: String,
    pub currency: String,
    /// A token is renewed this long before it expires, so it never dies mid-request.
    pub token_refresh_margin: Duration,
    pub retry: RetryPolicy,
    /// Time budget of a search when there is no Lambda deadline (tests, local runs).
    pub fallback_budget: Duration,
}

impl Config {
    pub fn from_env(env: &Env) -> domain::Result<Self> {
        const HINT: &str = "set by template.yaml; locally `source .local/run/env`";
        let mut r = env.reader();
        // Amadeus stays the default until the template and the local stack choose.
        let provider = r.parse_or("CASH_PROVIDER", CashProvider::Amadeus);
        let duffel_base_url = r
            .parse_or("DUFFEL_BASE_URL", BaseUrl(DUFFEL_BASE_URL.to_owned()))
            .0;
        let duffel = if provider == CashProvider::Duffel {
            let token_secret = r.required(
                "DUFFEL_TOKEN_SECRET",
                &format!("Duffel access token, {HINT}"),
            );
            Some(DuffelConfig {
                base_url: duffel_base_url,
                token_secret,
            })
        } else {
            r.optional("DUFFEL_TOKEN_SECRET");
            None
        };
        let amadeus = provider == CashProvider::Amadeus;
        let mut amadeus_secret = |name: &str, purpose: &str| {
            if amadeus {
                r.required(name, &format!("{purpose}, {HINT}"))
            } else {
                String::new()
            }
        };
        let credentials_secret =
            amadeus_secret("AMADEUS_CREDENTIALS_SECRET", "Amadeus client id and secret");
        let token_secret = amadeus_secret("AMADEUS_TOKEN_SECRET", "shared Amadeus access token");
        let environment = r.parse_or("AMADEUS_ENV", AmadeusEnv::Test);
        let base_url = r
            .parse_or(
                "AMADEUS_BASE_URL",
                BaseUrl(environment.default_base_url().to_owned()),
            )
            .0;
        let config = Self {
            provider,
            duffel,
            environment,
            base_url,
            credentials_secret,
            token_secret,
            currency: r.parse_or("AMADEUS_CURRENCY", CurrencyCode("EUR".into())).0,
            token_refresh_margin: Duration::from_secs(
                r.parse_or("AMADEUS_TOKEN_REFRESH_MARGIN_SECS", 60),
            ),
            retry: RetryPolicy::default(),
            fallback_budget: Duration::from_secs(25),
        };
        r.finish(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> Vec<(&'static str, &'static str)> {
        vec![
            ("AMADEUS_CREDENTIALS_SECRET", "creds"),
            ("AMADEUS_TOKEN_SECRET", "token"),
        ]
    }

    #[test]
    fn defaults() {
        let config =
            Config::from_env(&Env::from_pairs(base())).unwrap_or_else(|e| panic!("config: {e}"));
        assert_eq!(config.environment, AmadeusEnv::Test);
        assert_eq!(config.base_url, "https://test.api.amadeus.com");
        assert_eq!(config.currency, "EUR");
        assert_eq!(config.token_refresh_margin, Duration::from_secs(60));
    }

    #[test]
    fn overrides() {
        let mut pairs = base();
        pairs.extend([
            ("AMADEUS_ENV", "PROD"),
            ("AMADEUS_CURRENCY", "usd"),
            ("AMADEUS_TOKEN_REFRESH_MARGIN_SECS", "30"),
        ]);
        let config = Config::from_env(&Env::from_pairs(pairs.clone()))
            .unwrap_or_else(|e| panic!("config: {e}"));
        assert_eq!(config.base_url, "https://api.amadeus.com");
        assert_eq!(config.currency, "USD");
        assert_eq!(config.token_refresh_margin, Duration::from_secs(30));

        pairs.push(("AMADEUS_BASE_URL", "http://127.0.0.1:9999/"));
        let config =
            Config::from_env(&Env::from_pairs(pairs)).unwrap_or_else(|e| panic!("config: {e}"));
        assert_eq!(config.base_url, "http://127.0.0.1:9999");
    }

    #[test]
    fn duffel_needs_its_token_and_not_amadeus_credentials() {
        let env = Env::from_pairs([("CASH_PROVIDER", "Duffel"), ("DUFFEL_TOKEN_SECRET", "t")]);
        let config = Config::from_env(&env).unwrap_or_else(|e| panic!("config: {e}"));
        assert_eq!(config.provider, CashProvider::Duffel);
        let duffel = config.duffel.unwrap_or_else(|| panic!("duffel settings"));
        assert_eq!(duffel.base_url, "https://api.duffel.com");
        assert_eq!(duffel.token_secret, "t");

        let err = Config::from_env(&Env::from_pairs([("CASH_PROVIDER", "duffel")]))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("DUFFEL_TOKEN_SECRET"), "{err}");
        assert!(!err.contains("AMADEUS"), "{err}");
        let err = Config::from_env(&Env::from_pairs([("CASH_PROVIDER", "sabre")]))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("CASH_PROVIDER"), "{err}");
    }

    #[test]
    fn every_problem_is_named() {
        let env = Env::from_pairs([
            ("AMADEUS_ENV", "staging"),
            ("AMADEUS_CURRENCY", "euro"),
            ("AMADEUS_BASE_URL", "ftp://x"),
        ]);
        let err = Config::from_env(&env)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        for name in [
            "AMADEUS_ENV",
            "AMADEUS_CURRENCY",
            "AMADEUS_BASE_URL",
            "AMADEUS_CREDENTIALS_SECRET",
            "AMADEUS_TOKEN_SECRET",
        ] {
            assert!(err.contains(name), "{err}");
        }
    }
}
