//! Logging: JSON lines in Lambda (CloudWatch Logs Insights can query the fields), readable
//! text locally. The filter comes from `RUST_LOG` (default `info`).

use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

/// Installs the global subscriber once; later calls (e.g. from tests) are no-ops. Two
/// layers, each with its own filter: the log lines (`RUST_LOG`) and the trace's spans
/// (`crate::telemetry`), which stay out of the log whatever its level.
pub fn init_tracing() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let in_lambda = std::env::var_os("AWS_LAMBDA_FUNCTION_NAME").is_some();
    let log = if in_lambda {
        tracing_subscriber::fmt::layer()
            .with_target(true)
            .json()
            .flatten_event(true)
            // Every enclosing span's fields (the runtime's `requestId`, our `xrayTraceId`,
            // `chat_id`, `job_id`), so one query finds every line of a turn.
            .with_current_span(true)
            .with_span_list(true)
            .with_ansi(false)
            .with_filter(filter)
            .boxed()
    } else {
        tracing_subscriber::fmt::layer()
            .with_target(true)
            .compact()
            .with_filter(filter)
            .boxed()
    };
    let result = tracing_subscriber::registry()
        .with(log)
        .with(crate::telemetry::layer(&service_name()))
        .try_init();
    // Already installed (a second handler in the same process, or a test harness): keep it.
    drop(result);
}

/// The trace's `service.name`: `OTEL_SERVICE_NAME`, else the Lambda function's name, else
/// this program's.
fn service_name() -> String {
    crate::telemetry::TelemetryConfig::from_env(&crate::config::Env::from_process())
        .ok()
        .and_then(|c| c.service_name)
        .or_else(|| {
            std::env::args()
                .next()
                .and_then(|p| p.rsplit('/').next().map(str::to_owned))
        })
        .unwrap_or_else(|| "tool-calling".into())
}

/// The X-Ray trace header, which the chat-router passes on to the functions its tools call.
pub const TRACE_HEADER: &str = "x-amzn-trace-id";

/// The trace of one request: its root id (for logs) and the header to pass on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trace {
    /// `1-<8 hex>-<24 hex>`.
    pub root: String,
    /// What goes into `X-Amzn-Trace-Id` on the calls this request makes.
    pub header: String,
}

impl Trace {
    /// The request's trace: the invocation's own (Lambda's context, trusted as it is) or,
    /// without one, the `X-Amzn-Trace-Id` header a caller sent. The header is untrusted:
    /// only a well-formed root id is kept, so nothing else from it reaches a log or a call.
    pub fn of(req: &lambda_http::Request) -> Option<Self> {
        use lambda_http::RequestExt;
        let header = req
            .headers()
            .get(TRACE_HEADER)
            .and_then(|v| v.to_str().ok())
            .and_then(root_of)
            .map(|root| Self {
                header: format!("Root={root}"),
                root: root.to_owned(),
            });
        let invocation = req
            .lambda_context_ref()
            .and_then(|c| c.xray_trace_id.as_deref())
            .and_then(|id| {
                root_of(id).map(|root| Self {
                    root: root.to_owned(),
                    header: id.to_owned(),
                })
            });
        // Behind an HTTP API the function starts a trace of its own; the caller's root ties
        // its logs to the chat turn that called it. The same root: the invocation's header
        // also names its segment as the parent of the calls it makes.
        match (header, invocation) {
            (Some(caller), Some(own)) if caller.root == own.root => Some(own),
            (Some(caller), _) => Some(caller),
            (None, own) => own,
        }
    }

    /// A trace header from AWS itself (e.g. SQS's `AWSTraceHeader`), kept as it is when it
    /// has a well-formed root.
    pub fn parse(header: &str) -> Option<Self> {
        root_of(header).map(|root| Self {
            root: root.to_owned(),
            header: header.to_owned(),
        })
    }

    /// The span a request's work runs in: every log line inside carries the trace id.
    pub fn span(trace: Option<&Self>) -> tracing::Span {
        let root = trace.map(|t| t.root.as_str());
        tracing::info_span!("request", xrayTraceId = root)
    }
}

/// The `Root=` id of an `X-Amzn-Trace-Id` value, if it has a well-formed one.
pub fn root_of(header: &str) -> Option<&str> {
    let root = header
        .split(';')
        .find_map(|part| part.trim().strip_prefix("Root="))?;
    let mut parts = root.split('-');
    let well_formed = parts.next() == Some("1")
        && parts
            .next()
            .is_some_and(|t| t.len() == 8 && t.bytes().all(|b| b.is_ascii_hexdigit()))
        && parts
            .next()
            .is_some_and(|u| u.len() == 24 && u.bytes().all(|b| b.is_ascii_hexdigit()))
        && parts.next().is_none();
    well_formed.then_some(root)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_well_formed_root_is_taken_from_a_trace_header() {
        let good = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1";
        assert_eq!(root_of(good), Some("1-5759e988-bd862e3fe1be46a994272793"));
        assert_eq!(
            root_of("Root=1-5759e988-bd862e3fe1be46a994272793"),
            Some("1-5759e988-bd862e3fe1be46a994272793")
        );
        for bad in [
            "",
            "Sampled=1",
            "Root=1-5759e988-bd862e3fe1be46a99427279",
            "Root=2-5759e988-bd862e3fe1be46a994272793",
            "Root=1-5759e988-bd862e3fe1be46a994272793-x",
            "Root=1-5759e98g-bd862e3fe1be46a994272793",
            "Root=1-5759e988-bd862e3fe1be46a994272793\n{\"level\":\"ERROR\"}",
        ] {
            assert_eq!(root_of(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_callers_header_is_passed_on_as_its_root_alone() {
        let mut req = lambda_http::Request::new(lambda_http::Body::Empty);
        req.headers_mut().insert(
            TRACE_HEADER,
            lambda_http::http::HeaderValue::from_static(
                "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Evil=x",
            ),
        );
        assert_eq!(
            Trace::of(&req),
            Some(Trace {
                root: "1-5759e988-bd862e3fe1be46a994272793".into(),
                header: "Root=1-5759e988-bd862e3fe1be46a994272793".into(),
            })
        );
        assert_eq!(
            Trace::of(&lambda_http::Request::new(lambda_http::Body::Empty)),
            None
        );
    }
}
