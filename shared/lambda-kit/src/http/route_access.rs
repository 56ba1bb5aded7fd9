//! Who may call a tool function (flight search, knowledge base), decided from what API
//! Gateway vouched for in the request context, never from what the caller claims.
//!
//! - **IAM-authorised** requests (the `/internal/...` routes) come from this project's
//!   chat-router and tool worker, signed with their roles (SigV4). They name the user they
//!   act for in [`ON_BEHALF_OF_HEADER`]; that header is trusted on these routes only.
//! - **JWT-authorised** requests come from the optional public routes (template parameter
//!   `PublicToolRoutes`, off by default). Refused with 403 while they are off, so a user's
//!   token cannot reach an upstream past the chat's limits even if such a route exists. When
//!   on, the user is the token's `sub`, the header is ignored, and each user is rate-limited
//!   here (the chat's own limits do not apply to these calls).
//! - Requests with **neither** only exist where no API Gateway stands in front: the local
//!   stack (`cargo lambda watch`). Refused unless `ALLOW_UNAUTHENTICATED_TOOL_CALLS=true`,
//!   which only the local stack sets.

use std::sync::Arc;

use lambda_http::request::RequestContext;
use lambda_http::{Request, RequestExt};
use time::Duration;

use super::user_id::{USER_ID_RULE, valid_user_id};
use super::{ApiError, ErrorCode};
use crate::config::Env;
use crate::limits::{Decision, DynamoRateLimiter, LimitScope, RateLimit, RateLimiter};
use crate::metrics::Metrics;
use domain::{Error, Result};

/// The header in which the router and the worker name the user a tool call is for.
pub const ON_BEHALF_OF_HEADER: &str = "x-tool-user";

/// Default `PUBLIC_ROUTE_CALLS_PER_MINUTE`.
pub const DEFAULT_PUBLIC_CALLS_PER_MINUTE: u32 = 10;

/// Settings read from the environment (see docs/configuration.md).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessConfig {
    /// `PUBLIC_TOOL_ROUTES`: whether JWT-authorised (public) requests are served at all.
    pub public_routes: bool,
    /// `PUBLIC_ROUTE_CALLS_PER_MINUTE`: each user's calls per minute on a public route.
    pub public_calls_per_minute: u32,
    /// `RATE_LIMITS_TABLE`: where public-route counters live (read only when public routes are on).
    pub rate_limits_table: Option<String>,
    /// `ALLOW_UNAUTHENTICATED_TOOL_CALLS`: serve requests no authorizer vouched for (local only).
    pub allow_unauthenticated: bool,
}

impl AccessConfig {
    /// Reads the settings; `RATE_LIMITS_TABLE` is required only with public routes on, and
    /// their calls per minute must be 1 to 10000.
    pub fn from_env(env: &Env) -> Result<Self> {
        let mut r = env.reader();
        let public_routes = r.parse_or("PUBLIC_TOOL_ROUTES", false);
        let public_calls_per_minute = r.parse_or(
            "PUBLIC_ROUTE_CALLS_PER_MINUTE",
            DEFAULT_PUBLIC_CALLS_PER_MINUTE,
        );
        let rate_limits_table = public_routes.then(|| {
            r.required(
                "RATE_LIMITS_TABLE",
                "rate-limit table for the public tool routes; set by template.yaml",
            )
        });
        let allow_unauthenticated = r.parse_or("ALLOW_UNAUTHENTICATED_TOOL_CALLS", false);
        let config = r.finish(Self {
            public_routes,
            public_calls_per_minute,
            rate_limits_table,
            allow_unauthenticated,
        })?;
        if config.public_routes && !(1..=10_000).contains(&config.public_calls_per_minute) {
            return Err(Error::Config(format!(
                "PUBLIC_ROUTE_CALLS_PER_MINUTE={} is invalid: use 1 to 10000",
                config.public_calls_per_minute
            )));
        }
        Ok(config)
    }
}

/// Who a request was admitted for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admitted {
    /// This project's router or worker (IAM), acting for `user_id` when it named one.
    Internal {
        /// The user named in [`ON_BEHALF_OF_HEADER`], if one was.
        user_id: Option<String>,
    },
    /// A user's own call on a public route (JWT subject), counted against their limit.
    Public {
        /// The token's subject.
        user_id: String,
    },
    /// No authorizer in front (local stack only).
    Unauthenticated {
        /// The user named in [`ON_BEHALF_OF_HEADER`], if one was.
        user_id: Option<String>,
    },
}

impl Admitted {
    /// The user the call is for, when known.
    pub fn user_id(&self) -> Option<&str> {
        match self {
            Self::Internal { user_id } | Self::Unauthenticated { user_id } => user_id.as_deref(),
            Self::Public { user_id } => Some(user_id),
        }
    }

    /// For logs: how the caller was authorised.
    pub fn via(&self) -> &'static str {
        match self {
            Self::Internal { .. } => "iam",
            Self::Public { .. } => "public_jwt",
            Self::Unauthenticated { .. } => "unauthenticated_local",
        }
    }
}

/// The admission rules of one function; cheap to clone.
#[derive(Clone, Default)]
pub struct RouteAccess {
    public: Option<PublicLimit>,
    allow_unauthenticated: bool,
    /// Counts refusals (`AuthFailures` by reason).
    metrics: Metrics,
}

#[derive(Clone)]
struct PublicLimit {
    limiter: Arc<dyn RateLimiter>,
    limit: RateLimit,
}

impl std::fmt::Debug for RouteAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RouteAccess")
            .field("public_limit", &self.public.as_ref().map(|p| p.limit))
            .field("allow_unauthenticated", &self.allow_unauthenticated)
            .finish()
    }
}

impl RouteAccess {
    /// Only IAM-authorised requests (the deployed default).
    pub fn internal_only() -> Self {
        Self::default()
    }

    /// From `config`; the DynamoDB client counts public-route calls when those are on.
    pub fn new(config: &AccessConfig, dynamodb: impl FnOnce() -> aws_sdk_dynamodb::Client) -> Self {
        let mut access = Self::internal_only();
        if let (true, Some(table)) = (config.public_routes, &config.rate_limits_table) {
            access = access.with_public_routes(
                Arc::new(DynamoRateLimiter::new(dynamodb(), table.clone())),
                RateLimit {
                    max: config.public_calls_per_minute,
                    window: Duration::minutes(1),
                },
            );
        }
        if config.allow_unauthenticated {
            access = access.allowing_unauthenticated();
        }
        access
    }

    /// Also serves JWT-authorised (public) requests, at most `limit` per user.
    pub fn with_public_routes(mut self, limiter: Arc<dyn RateLimiter>, limit: RateLimit) -> Self {
        self.public = Some(PublicLimit { limiter, limit });
        self
    }

    /// Refusals counted in `metrics`.
    pub fn with_metrics(mut self, metrics: Metrics) -> Self {
        self.metrics = metrics;
        self
    }

    /// Also serves requests no authorizer vouched for (the local stack, tests).
    pub fn allowing_unauthenticated(mut self) -> Self {
        self.allow_unauthenticated = true;
        self
    }

    /// Decides whether `req` may run `route` (e.g. `/flights/award`), counting a public
    /// call against its user's limit. Refusals are the error the client gets: 403 for a
    /// route that is off or a request no authorizer vouched for, 401 for a token without
    /// a subject, 429 over the limit.
    pub async fn admit(&self, req: &Request, route: &'static str) -> Result<Admitted, ApiError> {
        let authorizer = match req.request_context_ref() {
            Some(RequestContext::ApiGatewayV2(context)) => context.authorizer.as_ref(),
            _ => None,
        };
        if authorizer.and_then(|a| a.iam.as_ref()).is_some() {
            return Ok(Admitted::Internal {
                user_id: on_behalf_of(req)?,
            });
        }
        if let Some(jwt) = authorizer.and_then(|a| a.jwt.as_ref()) {
            let Some(public) = &self.public else {
                tracing::warn!(
                    route,
                    "refused a user token: the public tool routes are off"
                );
                return Err(forbidden(
                    "this route is not open to user tokens; tools run through the chat",
                ));
            };
            let user_id = jwt
                .claims
                .get("sub")
                .filter(|sub| valid_user_id(sub))
                .cloned()
                .ok_or_else(|| {
                    ApiError::new(
                        ErrorCode::Unauthorized,
                        "unauthorized: token has no subject",
                    )
                })?;
            return public
                .check(&user_id, route)
                .await
                .map(|()| Admitted::Public { user_id });
        }
        if self.allow_unauthenticated {
            return Ok(Admitted::Unauthenticated {
                user_id: on_behalf_of(req)?,
            });
        }
        tracing::warn!(route, "refused a request no authorizer vouched for");
        Err(forbidden("this route needs IAM authorization"))
    }
}

impl RouteAccess {
    /// [`RouteAccess::admit`] for a handler: logs whom it admitted, and turns a refusal into
    /// the response to send.
    pub async fn gate<B: From<String>>(
        &self,
        req: &Request,
        route: &'static str,
    ) -> Result<Admitted, lambda_http::http::Response<B>> {
        match self.admit(req, route).await {
            Ok(admitted) => {
                tracing::info!(
                    route,
                    via = admitted.via(),
                    user_id = admitted.user_id(),
                    "call admitted"
                );
                Ok(admitted)
            }
            Err(error) => {
                match error.code {
                    ErrorCode::Unauthorized => self.metrics.auth_failure("no subject"),
                    ErrorCode::Forbidden => self.metrics.auth_failure("route refused"),
                    _ => {}
                }
                Err(super::lambda::error_response(&error))
            }
        }
    }
}

impl PublicLimit {
    async fn check(&self, user_id: &str, route: &'static str) -> Result<(), ApiError> {
        match self
            .limiter
            .check_scope(user_id, LimitScope::Route(route), self.limit)
            .await
        {
            Ok(Decision::Allowed { .. }) => Ok(()),
            Ok(Decision::Limited { reset_at }) => {
                tracing::info!(route, "public route call over its user's limit");
                Err(ApiError::rate_limited(route, reset_at))
            }
            Err(e) => Err(ApiError::from(&e)),
        }
    }
}

fn forbidden(message: &str) -> ApiError {
    ApiError::new(ErrorCode::Forbidden, message)
}

/// The user named in [`ON_BEHALF_OF_HEADER`]: absent is fine (a job for no user), malformed is
/// 400 `validation_failed` naming the header.
fn on_behalf_of(req: &Request) -> Result<Option<String>, ApiError> {
    let Some(value) = req.headers().get(ON_BEHALF_OF_HEADER) else {
        return Ok(None);
    };
    value
        .to_str()
        .ok()
        .filter(|v| valid_user_id(v))
        .map(|v| Some(v.to_owned()))
        .ok_or_else(|| {
            ApiError::new(
                ErrorCode::ValidationFailed,
                format!("{ON_BEHALF_OF_HEADER} is not a valid user id ({USER_ID_RULE})"),
            )
            .with_details(serde_json::json!({ "field": ON_BEHALF_OF_HEADER }))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_routes_are_off_and_local_access_is_refused_by_default() {
        let config = AccessConfig::from_env(&Env::from_pairs::<String, String>([]))
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(!config.public_routes);
        assert!(!config.allow_unauthenticated);
        assert_eq!(config.rate_limits_table, None);
    }

    #[test]
    fn public_routes_need_the_rate_limit_table_and_a_sane_limit() {
        let on = |extra: &[(&str, &str)]| {
            let mut pairs = vec![("PUBLIC_TOOL_ROUTES", "true")];
            pairs.extend_from_slice(extra);
            AccessConfig::from_env(&Env::from_pairs(pairs))
        };
        assert!(on(&[]).is_err());
        assert!(
            on(&[
                ("RATE_LIMITS_TABLE", "t"),
                ("PUBLIC_ROUTE_CALLS_PER_MINUTE", "0")
            ])
            .is_err()
        );
        let config = on(&[("RATE_LIMITS_TABLE", "t")]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            config.public_calls_per_minute,
            DEFAULT_PUBLIC_CALLS_PER_MINUTE
        );
    }
}
