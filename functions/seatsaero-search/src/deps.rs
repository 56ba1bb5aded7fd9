//! What a request needs, built once per container: the secrets cache, the configuration and
//! the Seats.aero client. Its own module so the handler and the search both depend on it,
//! not on each other.

use std::sync::Arc;

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
