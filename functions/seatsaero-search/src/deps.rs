//! What a request needs, built once per container: the secrets cache, the configuration and
//! the Seats.aero client. Its own module so the handler and the search both depend on it,
//! not on each other.

use std::sync::Arc;

use shared::secrets::SecretsCache;

use crate::client::SeatsAero;
use crate::config::Config;

/// Clients and configuration, built once per container; clones share them.
#[derive(Clone)]
pub struct Deps {
    pub secrets: SecretsCache,
    pub config: Arc<Config>,
    pub(crate) client: SeatsAero,
}

impl Deps {
    pub fn new(http: reqwest::Client, secrets: SecretsCache, config: Config) -> Self {
        let client = SeatsAero::new(http, config.base_url.clone(), config.retry);
        Self {
            secrets,
            config: Arc::new(config),
            client,
        }
    }
}
