//! What API Gateway adds to a request its authorizer let through, so tests reach the tool
//! functions' admission rules (`shared::http::route_access`) as a deployed function does.
//!
//! [`crate::serve_lambda`] applies [`iam_authorized`] to requests carrying a SigV4
//! `Authorization` header, as the `/internal` routes' IAM authorizer would (the signature
//! itself is not checked here: that is API Gateway's job, and the router's signing has its
//! own unit test).

use lambda_http::aws_lambda_events::apigw::{
    ApiGatewayRequestAuthorizer, ApiGatewayRequestAuthorizerIamDescription,
    ApiGatewayRequestAuthorizerJwtDescription, ApiGatewayV2httpRequestContext,
};
use lambda_http::request::RequestContext;
use lambda_http::{Request, RequestExt};

/// The account the emulated IAM authorizer reports.
pub const ACCOUNT_ID: &str = "123456789012";

/// `req` as an IAM-authorised route hands it on (the caller a role of this account).
pub fn iam_authorized(req: Request) -> Request {
    let mut iam = ApiGatewayRequestAuthorizerIamDescription::default();
    iam.account_id = Some(ACCOUNT_ID.to_owned());
    iam.user_arn = Some(format!(
        "arn:aws:sts::{ACCOUNT_ID}:assumed-role/test-role/test"
    ));
    let mut authorizer = ApiGatewayRequestAuthorizer::default();
    authorizer.iam = Some(iam);
    with_authorizer(req, authorizer)
}

/// `req` as a JWT-authorised (public) route hands it on, for a token whose `sub` is `sub`.
pub fn jwt_authorized(req: Request, sub: &str) -> Request {
    let mut jwt = ApiGatewayRequestAuthorizerJwtDescription::default();
    jwt.claims.insert("sub".to_owned(), sub.to_owned());
    let mut authorizer = ApiGatewayRequestAuthorizer::default();
    authorizer.jwt = Some(jwt);
    with_authorizer(req, authorizer)
}

/// True for an `Authorization` header of AWS Signature V4.
pub fn is_sigv4(req: &http::request::Parts) -> bool {
    req.headers
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("AWS4-HMAC-SHA256 Credential="))
}

fn with_authorizer(req: Request, authorizer: ApiGatewayRequestAuthorizer) -> Request {
    let mut context = match req.request_context_ref() {
        Some(RequestContext::ApiGatewayV2(context)) => context.clone(),
        _ => ApiGatewayV2httpRequestContext::default(),
    };
    context.authorizer = Some(authorizer);
    req.with_request_context(RequestContext::ApiGatewayV2(context))
}
