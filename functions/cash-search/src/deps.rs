//! What a handler needs, built once per container and shared by its invocations.

use std::sync::Arc;

use domain::clock::{Clock, SystemClock};
use lambda_kit::bootstrap::Basics;
use lambda_kit::config::Env;
use lambda_kit::http::route_access::RouteAccess;
use lambda_kit::metrics::Metrics;
use lambda_kit::secrets::SecretsCache;

use crate::config::Config;
use crate::token::TokenProvider;

#[derive(Clone)]
pub struct Deps {
    pub http: reqwest::Client,
    pub config: Arc<Config>,
    /// Lives as long as the container, so a warm container reuses its token (Amadeus).
    pub token: Arc<TokenProvider>,
    /// Secrets of this container (Duffel's token), cached for their TTL.
    pub secrets: SecretsCache,
    /// Today's time, for offers that expire (Duffel) and token expiry (Amadeus).
    pub clock: Arc<dyn Clock>,
    /// Who may call; IAM-authorised callers only unless [`Deps::with_access`] says more.
    pub access: RouteAccess,
    /// Searches by outcome and their latency.
    pub metrics: Metrics,
}

impl Deps {
    /// The clients of a Lambda container, from the environment and the tool functions'
    /// common basics (secrets, access gate, metrics).
    pub async fn from_env(env: &Env) -> domain::Result<Self> {
        let config = Config::from_env(env)?;
        let basics = Basics::from_env(env, "cash-search").await?;
        Ok(Self::new(basics.http, basics.secrets, config)
            .with_access(basics.access)
            .with_metrics(basics.metrics))
    }

    pub fn new(http: reqwest::Client, secrets: SecretsCache, config: Config) -> Self {
        Self::with_clock(http, secrets, config, Arc::new(SystemClock))
    }

    /// With a chosen clock for token and offer expiry (tests move time instead of waiting).
    pub fn with_clock(
        http: reqwest::Client,
        secrets: SecretsCache,
        config: Config,
        clock: Arc<dyn Clock>,
    ) -> Self {
        let token = TokenProvider::new(http.clone(), secrets.clone(), &config, clock.clone());
        Self {
            http,
            config: Arc::new(config),
            token: Arc::new(token),
            secrets,
            clock,
            access: RouteAccess::internal_only(),
            metrics: Metrics::discard(),
        }
    }

    /// With the admission rules of the deployment (`lambda_kit::http::route_access`).
    pub fn with_access(mut self, access: RouteAccess) -> Self {
        self.access = access;
        self
    }

    /// Searches and refusals counted in `metrics`.
    pub fn with_metrics(mut self, metrics: Metrics) -> Self {
        self.access = self.access.with_metrics(metrics.clone());
        self.metrics = metrics;
        self
    }
}
