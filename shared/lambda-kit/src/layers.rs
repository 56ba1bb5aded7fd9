//! The concerns every tool function's handler opens with, as `tower` layers around a handler
//! that knows nothing of them (the way the Lambda runtime composes its own): the request's
//! trace span, the method (405 with `Allow`), the access gate and the deadline. A function
//! stacks them with [`tool_function`] (or [`tool_route`] around a service of its own) and
//! serves one route:
//!
//! ```text
//! trace span → method → deadline (into the request's extensions) → access gate → handler
//! ```
//!
//! The handler reads its deadline with [`deadline_of`]. Every layer answers with the error
//! envelope where it refuses, so a handler only maps its own errors.

use std::convert::Infallible;
use std::time::{Duration, Instant};

use lambda_http::http::{HeaderValue, Method, header};
use lambda_http::tower::layer::layer_fn;
use lambda_http::tower::util::BoxCloneService;
use lambda_http::tower::{Layer, Service, ServiceBuilder, ServiceExt, service_fn};
use lambda_http::{Body, Request, Response};
use tracing::Instrument;

use crate::http::lambda::{deadline, error_response};
use crate::http::route_access::RouteAccess;
use crate::http::{ApiError, ErrorCode};
use crate::observability::Trace;

/// A function's handler as the runtime serves it: a request in, a response out, never an
/// error (every failure is a response in the error envelope).
pub type Handler = BoxCloneService<Request, Response<Body>, Infallible>;

/// The deadline of the invocation, in the request's extensions ([`deadline_layer`]).
#[derive(Debug, Clone, Copy)]
pub struct Deadline(pub Instant);

/// The invocation's deadline, as [`deadline_layer`] put it into the request; `fallback` from
/// now for a request that did not pass the layer.
pub fn deadline_of(req: &Request, fallback: Duration) -> Instant {
    req.extensions()
        .get::<Deadline>()
        .map_or_else(|| Instant::now() + fallback, |d| d.0)
}

/// One route of a tool function: `method` only, admitted by `access` under `route`, with
/// the deadline of the invocation (`fallback` outside Lambda), inside the request's span.
pub fn tool_route<S>(
    route: &'static str,
    method: Method,
    access: RouteAccess,
    fallback: Duration,
    handler: S,
) -> Handler
where
    S: Service<Request, Response = Response<Body>, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    BoxCloneService::new(
        ServiceBuilder::new()
            .layer(trace_layer())
            .layer(method_layer(method))
            .layer(deadline_layer(fallback))
            .layer(access_layer(access, route))
            .service(handler),
    )
}

/// A tool function's one route ([`tool_route`]) around `admitted`: what the function does
/// with an admitted request, given its dependencies `deps` (cloned per request).
pub fn tool_function<D, F, Fut>(
    route: &'static str,
    method: Method,
    access: RouteAccess,
    fallback: Duration,
    deps: D,
    admitted: F,
) -> Handler
where
    D: Clone + Send + Sync + 'static,
    F: Fn(D, Request) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = Response<Body>> + Send + 'static,
{
    let handler = service_fn(move |req: Request| {
        let answer = admitted(deps.clone(), req);
        async move { Ok::<_, Infallible>(answer.await) }
    });
    tool_route(route, method, access, fallback, handler)
}

/// One request through `handler`, as the runtime serves it (what tests and benches call).
pub async fn call(handler: Handler, req: Request) -> Response<Body> {
    match handler.oneshot(req).await {
        Ok(response) => response,
        Err(never) => match never {},
    }
}

/// Runs the rest of the stack inside a span that carries the caller's X-Ray trace id, so
/// every log line of the request can be found by it, and (while traces are on) inside the
/// request's server span, a child of the caller's `traceparent`; the request's spans are
/// exported before the response goes out.
pub fn trace_layer<S>() -> impl Layer<S, Service = Handler> + Clone
where
    S: Service<Request, Response = Response<Body>, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    layer_fn(|inner: S| {
        BoxCloneService::new(service_fn(move |req: Request| {
            let span = Trace::span(Trace::of(&req).as_ref());
            let traced =
                crate::telemetry::server_span(req.method().as_str(), req.uri().path(), |name| {
                    req.headers()
                        .get(name)
                        .and_then(|v| v.to_str().ok())
                        .map(str::to_owned)
                });
            let answer = inner.clone().oneshot(req).instrument(traced.clone());
            async move {
                let response = answer.await;
                if let Ok(response) = &response {
                    crate::telemetry::record_status(&traced, response.status().as_u16());
                }
                // The request's spans go out before the invocation ends.
                drop(traced);
                crate::telemetry::flush().await;
                response
            }
            .instrument(span)
        }))
    })
}

/// Refuses every other method with 405 and `Allow`.
pub fn method_layer<S>(method: Method) -> impl Layer<S, Service = Handler> + Clone
where
    S: Service<Request, Response = Response<Body>, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    layer_fn(move |inner: S| {
        let method = method.clone();
        BoxCloneService::new(service_fn(move |req: Request| {
            let inner = inner.clone();
            let method = method.clone();
            async move {
                if req.method() != method {
                    return Ok(method_not_allowed(req.method(), &method));
                }
                inner.oneshot(req).await
            }
        }))
    })
}

/// 405 in the error envelope, naming the method to use in the message and in `Allow`.
fn method_not_allowed(used: &Method, allowed: &Method) -> Response<Body> {
    let mut response = error_response(&ApiError::new(
        ErrorCode::MethodNotAllowed,
        format!("{used} is not allowed here; use {allowed}"),
    ));
    if let Ok(value) = HeaderValue::from_str(allowed.as_str()) {
        response.headers_mut().insert(header::ALLOW, value);
    }
    response
}

/// Puts the invocation's deadline (its Lambda context's, less a margin; `fallback` from now
/// outside Lambda) into the request's extensions, for [`deadline_of`].
pub fn deadline_layer<S>(fallback: Duration) -> impl Layer<S, Service = Handler> + Clone
where
    S: Service<Request, Response = Response<Body>, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    layer_fn(move |inner: S| {
        BoxCloneService::new(service_fn(move |mut req: Request| {
            let until = deadline(&req, fallback);
            req.extensions_mut().insert(Deadline(until));
            inner.clone().oneshot(req)
        }))
    })
}

/// Lets through only the callers `access` admits on `route` (it logs each decision and
/// answers a refusal itself).
pub fn access_layer<S>(
    access: RouteAccess,
    route: &'static str,
) -> impl Layer<S, Service = Handler> + Clone
where
    S: Service<Request, Response = Response<Body>, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    layer_fn(move |inner: S| {
        let access = access.clone();
        BoxCloneService::new(service_fn(move |req: Request| {
            let inner = inner.clone();
            let access = access.clone();
            async move {
                if let Err(refused) = access.gate(&req, route).await {
                    return Ok(refused);
                }
                inner.oneshot(req).await
            }
        }))
    })
}
