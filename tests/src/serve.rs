//! Serves a Lambda HTTP handler over real HTTP on `127.0.0.1`, for end-to-end tests with an
//! ordinary HTTP client (reqwest, curl, a browser's `EventSource`).
//!
//! Incoming requests become `lambda_http::Request`s shaped like API Gateway HTTP API /
//! Function URL events: absolute URI, headers, body as `Text` (UTF-8) or `Binary`, query
//! string parameters, raw path and an API Gateway v2 request context (with an IAM authorizer's
//! identity when the request is SigV4-signed). Response bodies are
//! passed through frame by frame, so a streaming handler streams.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http_body_util::BodyExt;
use http_body_util::combinators::UnsyncBoxBody;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use lambda_http::RequestExt;
use lambda_http::aws_lambda_events::apigw::ApiGatewayV2httpRequestContext;
use lambda_http::aws_lambda_events::query_map::QueryMap;
use lambda_http::request::RequestContext;
use tokio::net::TcpListener;
use tokio::task::{JoinHandle, JoinSet};

/// Error type of the bodies served here.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Any response body, boxed.
pub(crate) type ResponseBody = UnsyncBoxBody<Bytes, BoxError>;

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;
pub(crate) type Handler =
    Arc<dyn Fn(http::Request<Incoming>) -> BoxFuture<http::Response<ResponseBody>> + Send + Sync>;

/// A server on `127.0.0.1:<random port>`; stops (with its open connections) when dropped.
#[derive(Debug)]
pub struct LocalServer {
    addr: SocketAddr,
    task: JoinHandle<()>,
}

impl LocalServer {
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT`, without a trailing slash.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The URL of `path` (with or without a leading `/`; may carry a query string).
    pub fn url(&self, path: &str) -> String {
        if path.starts_with('/') {
            format!("{}{path}", self.base_url())
        } else {
            format!("{}/{path}", self.base_url())
        }
    }
}

impl Drop for LocalServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Serves `handler` until the returned server is dropped. Works for handlers answering
/// `Response<lambda_http::Body>` (which is an `http_body::Body`) as well as for streaming
/// bodies (what `lambda_http::run_with_streaming_response` takes).
///
/// Panics when no local port can be bound (a test set-up failure).
pub async fn serve_lambda<F, Fut, B>(handler: F) -> LocalServer
where
    F: Fn(lambda_http::Request) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = http::Response<B>> + Send + 'static,
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    let handler = Arc::new(handler);
    let adapter: Handler = Arc::new(move |request| {
        let handler = Arc::clone(&handler);
        Box::pin(async move {
            let request = match to_lambda_request(request).await {
                Ok(request) => request,
                Err(response) => return response,
            };
            let (parts, body) = handler(request).await.into_parts();
            http::Response::from_parts(parts, body.map_err(Into::into).boxed_unsync())
        })
    });
    spawn_server(adapter).await
}

/// Binds `127.0.0.1:0` and serves `handler` on its own task; connections are served
/// concurrently and end with the server.
pub(crate) async fn spawn_server(handler: Handler) -> LocalServer {
    spawn_server_on(0, handler).await
}

/// As [`spawn_server`], on a given port (0: any free one).
pub(crate) async fn spawn_server_on(port: u16, handler: Handler) -> LocalServer {
    let listener = TcpListener::bind(("127.0.0.1", port))
        .await
        .unwrap_or_else(|e| panic!("binding 127.0.0.1:{port} for a local server: {e}"));
    let addr = listener
        .local_addr()
        .unwrap_or_else(|e| panic!("local address of a test server: {e}"));
    let task = tokio::spawn(async move {
        // Owned by this task: aborting the server drops the set, which aborts every
        // connection still open.
        let mut connections = JoinSet::new();
        loop {
            let stream = match listener.accept().await {
                Ok((stream, _)) => {
                    // Small streamed writes must not wait for delayed ACKs (Nagle): that
                    // would add ~40 ms stalls to every measured turn.
                    let _ = stream.set_nodelay(true);
                    stream
                }
                Err(_) => {
                    // E.g. out of file descriptors: wait instead of spinning.
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                    continue;
                }
            };
            while connections.try_join_next().is_some() {}
            let handler = Arc::clone(&handler);
            connections.spawn(async move {
                let service = service_fn(move |request| {
                    let response = handler(request);
                    async move { Ok::<_, Infallible>(response.await) }
                });
                // A client hanging up mid-response is normal in tests.
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    LocalServer { addr, task }
}

/// A response with a plain-text body, for the servers' own errors.
pub(crate) fn text_response(status: u16, text: impl Into<String>) -> http::Response<ResponseBody> {
    let body = http_body_util::Full::new(Bytes::from(text.into()))
        .map_err(|never| match never {})
        .boxed_unsync();
    let mut response = http::Response::new(body);
    *response.status_mut() =
        http::StatusCode::from_u16(status).unwrap_or(http::StatusCode::INTERNAL_SERVER_ERROR);
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

async fn to_lambda_request(
    request: http::Request<Incoming>,
) -> Result<lambda_http::Request, http::Response<ResponseBody>> {
    let (mut parts, body) = request.into_parts();
    let bytes = body
        .collect()
        .await
        .map_err(|e| text_response(400, format!("reading the request body: {e}")))?
        .to_bytes();
    let body = if bytes.is_empty() {
        lambda_http::Body::Empty
    } else {
        match String::from_utf8(bytes.to_vec()) {
            Ok(text) => lambda_http::Body::Text(text),
            Err(e) => lambda_http::Body::Binary(e.into_bytes()),
        }
    };

    let path = parts.uri.path().to_owned();
    let query = parts.uri.query().unwrap_or_default().to_owned();
    // Lambda hands handlers an absolute URI built from the Host header.
    let host = parts
        .headers
        .get(http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("localhost")
        .to_owned();
    let absolute = if query.is_empty() {
        format!("http://{host}{path}")
    } else {
        format!("http://{host}{path}?{query}")
    };
    if let Ok(uri) = absolute.parse() {
        parts.uri = uri;
    }

    let mut context = ApiGatewayV2httpRequestContext::default();
    context.http.method = parts.method.clone();
    context.http.path = Some(path.clone());
    context.http.protocol = Some("HTTP/1.1".into());
    context.http.source_ip = Some("127.0.0.1".into());
    context.http.user_agent = parts
        .headers
        .get(http::header::USER_AGENT)
        .and_then(|h| h.to_str().ok())
        .map(str::to_owned);
    context.request_id = Some(ulid::Ulid::generate().to_string());
    context.stage = Some("$default".into());
    context.domain_name = Some(host);
    context.time_epoch = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or_default();

    let signed = crate::gateway::is_sigv4(&parts);
    let query: QueryMap = query.parse().unwrap_or_default();
    let request = http::Request::from_parts(parts, body)
        .with_raw_http_path(path)
        .with_query_string_parameters(query)
        .with_request_context(RequestContext::ApiGatewayV2(context));
    // As the `/internal` routes' IAM authorizer would (see `crate::gateway`).
    Ok(if signed {
        crate::gateway::iam_authorized(request)
    } else {
        request
    })
}
