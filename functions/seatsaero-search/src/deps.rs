//! What a request needs, built once per container: the secrets cache, the configuration and
//! the Seats.aero client. Its own module so the handler and the search both depend on it,
//! not on each other.

use std::sync::Arc;

use domain::Result;
use lambda_kit::bootstrap::Basics;
use lambda_kit::config::Env;
use lambda_kit::http::route_access::RouteAccess;
use lambda_kit::metrics::Metrics;
use lambda_kit::secrets::SecretsCache;

use crate::client::SeatsAero;
use crate::config::Config;

/// Clients and configuration, built once per container; clones share them.
#[derive(Clone)]
pub struct Deps {
    pub secrets: SecretsCache,
    pub config: Arc<Config>,
    pub(crate) client: SeatsAero,
    /// Who may call; IAM-authorised callers only unless [`Deps::with_access`] says more.
    pub access: RouteAccess,
    /// Searches by outcome and their latency.
    pub metrics: Metrics,
}

impl Deps {
    pub fn new(http: reqwest::Client, secrets: SecretsCache, config: Config) -> Self {
        let client = SeatsAero::new(http, config.base_url.clone(), config.retry);
        Self {
            secrets,
            config: Arc::new(config),
            client,
            access: RouteAccess::internal_only(),
            metrics: Metrics::discard(),
        }
    }

    /// The clients of a Lambda container, from the environment and the tool functions'
    /// common basics (secrets, access gate, metrics).
    pub async fn from_env(env: &Env) -> Result<Self> {
        let config = Config::from_env(env)?;
        let basics = Basics::from_env(env, "seatsaero-search").await?;
        Ok(Self::new(basics.http, basics.secrets, config)
            .with_access(basics.access)
            .with_metrics(basics.metrics))
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
