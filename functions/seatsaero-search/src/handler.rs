//! `POST /flights/award`: body → validated `FlightSearchParams` → award search → reply.
//! Every failure is mapped once, by `shared::http::ApiError`, to the error envelope.

use std::sync::Arc;

use lambda_http::http::{HeaderValue, Method, header};
use lambda_http::{Body, Request, Response};
use shared::http::lambda::{deadline, error_response, json_response};
use shared::http::{ApiError, ErrorCode};
use shared::secrets::SecretsCache;

use crate::client::SeatsAero;
use crate::config::Config;
use crate::{request, search};

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

pub async fn handle(deps: &Deps, req: Request) -> Response<Body> {
    let deadline = deadline(&req, deps.config.deadline_fallback);
    if req.method() != Method::POST {
        let mut response = error_response(&ApiError::new(
            ErrorCode::MethodNotAllowed,
            format!("{} is not allowed here; use POST", req.method()),
        ));
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("POST"));
        return response;
    }
    let params = match request::parse(&req) {
        Ok(params) => params,
        Err(error) => return error_response(&error),
    };
    match search::run(deps, &params, deadline).await {
        Ok(result) => json_response(200, &result),
        Err(err) => error_response(&ApiError::from(&err)),
    }
}
