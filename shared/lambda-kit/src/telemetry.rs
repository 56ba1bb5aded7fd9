//! Traces: the spans of a request as OpenTelemetry spans, exported over OTLP/HTTP once the
//! invocation's work is done (docs/operations.md#traces). A turn is one trace across
//! functions: the agent's `invoke_agent`, `chat` and `execute_tool` spans (the GenAI
//! semantic conventions), the HTTP calls beneath them, and the tool functions' own spans,
//! joined by the W3C `traceparent` header the router sends them.
//!
//! Spans for the trace are `tracing` spans with the target [`TARGET`] at `TRACE` level: the
//! log output never sees them, and they cost nothing while traces are off. Traces are off
//! unless `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) names a
//! collector; finished spans wait in memory until [`flush`] sends them, which every
//! function calls before its invocation ends (Lambda freezes a container between
//! invocations, so nothing may be left to a background thread).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use tracing_subscriber::Layer;
use tracing_subscriber::filter::dynamic_filter_fn;
use tracing_subscriber::registry::LookupSpan;

use crate::config::Env;
use crate::secrets::SecretsCache;
pub use crate::span_recorder::AttrValue;
use crate::span_recorder::{Attribute, Buffer, Recorder, with_recorded};

/// The target of the spans and events that go into the trace.
pub const TARGET: &str = "otel";

/// The W3C trace-context header.
pub const TRACEPARENT: &str = "traceparent";

static ENABLED: AtomicBool = AtomicBool::new(false);
static BUFFER: OnceLock<Arc<Buffer>> = OnceLock::new();
static EXPORT: OnceLock<Export> = OnceLock::new();
/// The process's resource (`service.name`, `telemetry.sdk.*`), sent with every export.
static RESOURCE: OnceLock<Vec<Attribute>> = OnceLock::new();

/// How long one export may take before its spans are dropped.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(2);
static CAPTURE_CONTENT: AtomicBool = AtomicBool::new(false);
static VIEW_URL: OnceLock<String> = OnceLock::new();

/// The page of trace `id` in the deployment's viewer (`TRACE_VIEW_URL`), if it names one.
pub fn view_url(id: &str) -> Option<String> {
    VIEW_URL
        .get()
        .map(|template| template.replace("{trace_id}", id))
}

/// Whether spans are recorded: a collector is configured.
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// Whether message text, tool arguments and results go into spans
/// (`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`): they are users' data, so
/// only when an operator opts in, as the GenAI conventions say.
pub fn capture_content() -> bool {
    CAPTURE_CONTENT.load(Ordering::Relaxed)
}

/// The `tracing` layer that turns the trace's spans into OpenTelemetry spans; part of the
/// subscriber `crate::observability::init_tracing` installs. It sees only spans and events
/// of [`TARGET`], and only while traces are on.
pub fn layer<S>(service: &str) -> impl Layer<S> + Send + Sync + 'static
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a> + Send + Sync,
{
    let buffer = BUFFER.get_or_init(Arc::default).clone();
    let _ = RESOURCE.set(vec![
        ("service.name", AttrValue::Str(service.to_owned())),
        ("telemetry.sdk.language", AttrValue::Str("rust".into())),
        (
            "telemetry.sdk.name",
            AttrValue::Str(crate::otlp::SCOPE.into()),
        ),
        (
            "telemetry.sdk.version",
            AttrValue::Str(env!("CARGO_PKG_VERSION").into()),
        ),
    ]);
    Recorder::new(buffer)
        // Decided per callsite once: every other callsite stays statically off for this
        // layer, so the log filter alone decides them (a `sometimes` here would make every
        // debug and trace event of every dependency be checked at run time).
        .with_filter(
            dynamic_filter_fn(|meta, _| enabled() && meta.target() == TARGET).with_callsite_filter(
                |meta| {
                    if meta.target() == TARGET {
                        tracing::subscriber::Interest::sometimes()
                    } else {
                        tracing::subscriber::Interest::never()
                    }
                },
            ),
        )
}

/// Where traces go and what they may hold, from the environment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TelemetryConfig {
    /// The traces URL: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, else
    /// `OTEL_EXPORTER_OTLP_ENDPOINT` + `/v1/traces`; `None` (both unset or empty): off.
    pub endpoint: Option<String>,
    /// `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT` (default `false`).
    pub capture_content: bool,
    /// The spans' `service.name`: `OTEL_SERVICE_NAME`, else `AWS_LAMBDA_FUNCTION_NAME`.
    pub service_name: Option<String>,
    /// A trace's page in a viewer, `{trace_id}` standing for its id (`TRACE_VIEW_URL`).
    pub view_url: Option<String>,
    /// Headers of every export (`OTEL_EXPORTER_OTLP_HEADERS`: `api-key=...,x-team=...`).
    pub headers: Option<String>,
    /// The secret holding more of them, in the same form, so a vendor's key stays out of
    /// the environment (`OTEL_EXPORTER_OTLP_HEADERS_SECRET`); its headers win.
    pub headers_secret: Option<String>,
}

impl TelemetryConfig {
    /// Reads the configuration; every variable has a default.
    pub fn from_env(env: &Env) -> domain::Result<Self> {
        let mut r = env.reader();
        // The template sets the endpoint empty when traces are off.
        let mut set = |name: &str| {
            r.optional(name)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        let traces = set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
        let base = set("OTEL_EXPORTER_OTLP_ENDPOINT");
        let endpoint =
            traces.or_else(|| base.map(|base| format!("{}/v1/traces", base.trim_end_matches('/'))));
        let capture_content =
            r.parse_or("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", false);
        let service_name = r
            .optional("OTEL_SERVICE_NAME")
            .or_else(|| r.optional("AWS_LAMBDA_FUNCTION_NAME"));
        let view_url = r
            .optional("TRACE_VIEW_URL")
            .filter(|u| u.contains("{trace_id}"));
        let headers = r
            .optional("OTEL_EXPORTER_OTLP_HEADERS")
            .filter(|v| !v.trim().is_empty());
        let headers_secret = r
            .optional("OTEL_EXPORTER_OTLP_HEADERS_SECRET")
            .filter(|v| !v.trim().is_empty());
        r.finish(Self {
            endpoint,
            capture_content,
            service_name,
            view_url,
            headers,
            headers_secret,
        })
    }
}

/// The headers of `text` in `OTEL_EXPORTER_OTLP_HEADERS`' form: `name=value` pairs apart by
/// commas, values percent-encoded where they need to be. An error names the pair by its
/// place, never its value: the value is a credential.
pub fn otlp_headers(text: &str) -> Result<HeaderMap, String> {
    let mut headers = HeaderMap::new();
    for (i, pair) in text.split(',').map(str::trim).enumerate() {
        if pair.is_empty() {
            continue;
        }
        let place = i + 1;
        let (name, value) = pair
            .split_once('=')
            .ok_or_else(|| format!("header {place} is not `name=value`"))?;
        let value = percent_encoding::percent_decode_str(value.trim()).decode_utf8();
        let parsed = (
            HeaderName::from_bytes(name.trim().as_bytes()),
            value.map(|v| HeaderValue::from_str(&v)),
        );
        match parsed {
            (Ok(name), Ok(Ok(value))) if !value.is_empty() => {
                headers.insert(name, value);
            }
            _ => {
                return Err(format!(
                    "header {place} needs a valid name and a value that is not empty"
                ));
            }
        }
    }
    Ok(headers)
}

/// Where and how the spans go: the collector's URL and headers, the process's resource,
/// and the buffer each export is encoded into (`crate::otlp`).
struct Export {
    http: reqwest::Client,
    url: reqwest::Url,
    headers: HeaderMap,
    resource: Vec<Attribute>,
    /// The encoded body and the encoder's scratch, kept between exports.
    body: Mutex<(Vec<u8>, Vec<usize>)>,
}

/// Turns traces on when `env` names a collector ([`TelemetryConfig`]), exporting with
/// `http` and the headers the configured secret holds (read through `secrets`). Returns
/// whether they are on. The exporter is built once per container; the content setting
/// follows the latest call.
pub async fn configure(env: &Env, http: &reqwest::Client, secrets: &SecretsCache) -> bool {
    let config = match TelemetryConfig::from_env(env) {
        Ok(config) => config,
        Err(e) => {
            tracing::warn!(error = %e, "traces off: their configuration is invalid");
            return enabled();
        }
    };
    let Some(endpoint) = config.endpoint else {
        return enabled();
    };
    let mut headers = match config.headers.as_deref().map(otlp_headers) {
        None => HeaderMap::new(),
        Some(Ok(headers)) => headers,
        Some(Err(problem)) => {
            tracing::warn!(
                problem,
                "traces off: OTEL_EXPORTER_OTLP_HEADERS is malformed"
            );
            return enabled();
        }
    };
    if let Some(name) = &config.headers_secret {
        match secrets.get(name).await.map(|v| otlp_headers(v.expose())) {
            Ok(Ok(secret)) => headers.extend(secret),
            // Exports without the collector's key would only be refused.
            Ok(Err(problem)) => {
                tracing::warn!(secret = %name, problem, "traces off: the OTLP headers secret is malformed");
                return enabled();
            }
            Err(e) => {
                tracing::warn!(secret = %name, error = %e, "traces off: the OTLP headers secret could not be read");
                return enabled();
            }
        }
    }
    let url = match reqwest::Url::parse(&endpoint) {
        Ok(url) if matches!(url.scheme(), "http" | "https") => url,
        _ => {
            // Traces are an aid: a bad endpoint must not stop the function.
            tracing::warn!(endpoint = %endpoint, "traces off: the OTLP endpoint is not an http(s) URL");
            return enabled();
        }
    };
    CAPTURE_CONTENT.store(config.capture_content, Ordering::Relaxed);
    if let Some(url) = config.view_url {
        let _ = VIEW_URL.set(url);
    }
    headers.insert(
        reqwest::header::CONTENT_TYPE,
        HeaderValue::from_static("application/x-protobuf"),
    );
    let export = Export {
        http: http.clone(),
        url,
        headers,
        resource: RESOURCE.get().cloned().unwrap_or_default(),
        body: Mutex::new((Vec::with_capacity(8 * 1024), Vec::with_capacity(256))),
    };
    if EXPORT.set(export).is_ok() {
        tracing::info!(endpoint = %endpoint, "traces on: OTLP/HTTP");
    }
    ENABLED.store(true, Ordering::Relaxed);
    enabled()
}

/// Sends the spans finished so far. Every function awaits it before its invocation ends; a
/// failed export is logged and dropped, never the request's failure.
pub async fn flush() {
    let (Some(buffer), Some(export)) = (BUFFER.get(), EXPORT.get()) else {
        return;
    };
    let spans = buffer.take();
    if spans.is_empty() {
        return;
    }
    let body = {
        let mut buffers = export.body.lock().unwrap_or_else(PoisonError::into_inner);
        let (encoded, lengths) = &mut *buffers;
        crate::otlp::encode_export(&export.resource, &spans, encoded, lengths);
        encoded.clone()
    };
    let count = spans.len();
    drop(spans);
    let sent = export
        .http
        .post(export.url.clone())
        .headers(export.headers.clone())
        .timeout(EXPORT_TIMEOUT)
        .body(body)
        .send()
        .await;
    match sent {
        Ok(response) if response.status().is_success() => {}
        Ok(response) => {
            tracing::warn!(
                spans = count,
                status = response.status().as_u16(),
                "the collector refused the spans; they are dropped"
            );
        }
        Err(e) => {
            tracing::warn!(spans = count, error = %e, "exporting spans failed; they are dropped");
        }
    }
}

/// The trace context of `span`, as `traceparent` (and `tracestate`) headers for a call this
/// process makes to one of its own functions. Empty while traces are off.
pub fn headers_of(span: &tracing::Span) -> Vec<(String, String)> {
    if !enabled() {
        return Vec::new();
    }
    with_recorded(span, |r| {
        let parent = format!(
            "00-{}-{}-{}",
            hex::encode(r.trace_id),
            hex::encode(r.span_id),
            if r.sampled { "01" } else { "00" }
        );
        let mut headers = vec![(TRACEPARENT.to_owned(), parent)];
        if !r.trace_state.is_empty() {
            headers.push(("tracestate".to_owned(), r.trace_state.clone()));
        }
        headers
    })
    .unwrap_or_default()
}

/// The id of `span`'s trace, as 32 hex digits; `None` while traces are off.
pub fn trace_id(span: &tracing::Span) -> Option<String> {
    with_recorded(span, |r| hex::encode(r.trace_id))
}

/// A W3C `traceparent`: the trace id, the parent's span id, and whether it is sampled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceParent {
    /// The trace's id.
    pub trace_id: [u8; 16],
    /// The caller's span: the parent of ours.
    pub span_id: [u8; 8],
    /// The caller records the trace (flag `01`).
    pub sampled: bool,
}

/// Reads a `traceparent` strictly (W3C Trace Context, level 1): `None` for anything
/// malformed, so that a bad header starts a trace of its own. A later version's header is
/// read by its first four parts, as the specification asks.
pub fn parse_traceparent(header: &str) -> Option<TraceParent> {
    let header = header.trim();
    let mut parts = header.split('-');
    let (version, trace, span, flags) =
        (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    let lower_hex = |s: &str, len: usize| {
        s.len() == len && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    };
    if !lower_hex(version, 2) || version == "ff" || !lower_hex(flags, 2) {
        return None;
    }
    if version == "00" && parts.next().is_some() {
        return None;
    }
    if !lower_hex(trace, 32) || !lower_hex(span, 16) {
        return None;
    }
    let mut parent = TraceParent {
        trace_id: [0; 16],
        span_id: [0; 8],
        sampled: false,
    };
    hex::decode_to_slice(trace, &mut parent.trace_id).ok()?;
    hex::decode_to_slice(span, &mut parent.span_id).ok()?;
    let flags = u8::from_str_radix(flags, 16).ok()?;
    parent.sampled = flags & 1 == 1;
    let invalid = parent.trace_id == [0; 16] || parent.span_id == [0; 8];
    (!invalid).then_some(parent)
}

/// Makes `span` a child of the trace a caller sent in `traceparent` (parsed strictly:
/// anything malformed starts a trace of its own); its `tracestate` is passed on.
pub fn continue_from(span: &tracing::Span, get: impl Fn(&str) -> Option<String>) {
    if !enabled() {
        return;
    }
    let Some(parent) = get(TRACEPARENT).as_deref().and_then(parse_traceparent) else {
        return;
    };
    let state = get("tracestate")
        .filter(|s| is_trace_state(s))
        .unwrap_or_default();
    with_recorded(span, |r| {
        r.trace_id = parent.trace_id;
        r.parent = Some(parent.span_id);
        r.parent_is_remote = true;
        r.sampled = parent.sampled;
        r.trace_state = state.trim().to_owned();
    });
}

/// Whether `header` is a W3C `tracestate` this process may pass on and export: at most 512
/// characters, at most 32 `key=value` members, keys of `[a-z0-9_-*/@]`, values of printable
/// ASCII without `,` and `=`. Anything else is a caller's text we do not carry.
pub fn is_trace_state(header: &str) -> bool {
    const MAX_LEN: usize = 512;
    const MAX_MEMBERS: usize = 32;
    let members: Vec<&str> = header
        .split(',')
        .map(str::trim)
        .filter(|m| !m.is_empty())
        .collect();
    let key_char = |c: char| matches!(c, 'a'..='z' | '0'..='9' | '_' | '-' | '*' | '/' | '@');
    let value_char = |c: char| matches!(c, ' '..='~') && c != ',' && c != '=';
    header.len() <= MAX_LEN
        && members.len() <= MAX_MEMBERS
        && members.iter().all(|member| {
            member.split_once('=').is_some_and(|(key, value)| {
                !key.is_empty()
                    && key.chars().all(key_char)
                    && !value.is_empty()
                    && value.chars().all(value_char)
            })
        })
}

/// An outgoing HTTP call to `service`, as a client span (`method`, `server.address` from
/// `peek`, called only while traces are on). The status and attempts are recorded on it.
pub fn client_span(
    service: &'static str,
    peek: impl FnOnce() -> Option<(String, String)>,
) -> tracing::Span {
    if !enabled() {
        return tracing::Span::none();
    }
    let (method, host) = peek().unwrap_or_default();
    tracing::trace_span!(
        target: TARGET,
        "http",
        otel.name = %method,
        otel.kind = "client",
        http.request.method = %method,
        server.address = %host,
        app.upstream.service = service,
        app.http.attempts = tracing::field::Empty,
        http.response.status_code = tracing::field::Empty,
        error.type = tracing::field::Empty,
    )
}

/// The attempt a call is on.
pub fn record_attempt(span: &tracing::Span, attempt: u32) {
    if !span.is_none() {
        span.record("app.http.attempts", i64::from(attempt));
    }
}

/// The status a call ended with; a 5xx marks the span failed.
pub fn record_status(span: &tracing::Span, status: u16) {
    if span.is_none() {
        return;
    }
    // As i64: OpenTelemetry has no unsigned integers (a u16 would arrive as text).
    span.record("http.response.status_code", i64::from(status));
    if status >= 500 {
        record_error(span, &status.to_string());
    }
}

/// A failed call or request: `error.type` and the span's status.
pub fn record_error(span: &tracing::Span, kind: &str) {
    if span.is_none() {
        return;
    }
    span.record("error.type", kind);
    with_recorded(span, |r| r.error = Some(kind.to_owned()));
}

/// Sets an attribute `span` has no field for (an array, text only an operator's opt-in
/// lets in).
pub fn set_attribute(span: &tracing::Span, key: &'static str, value: AttrValue) {
    with_recorded(span, |r| {
        crate::span_recorder::set_attribute(&mut r.attributes, key, value);
    });
}

/// The span of a request a function serves: `<method> <route>`, a child of the caller's
/// trace when its `traceparent` is well-formed.
pub fn server_span(
    method: &str,
    route: &str,
    get: impl Fn(&str) -> Option<String>,
) -> tracing::Span {
    if !enabled() {
        return tracing::Span::none();
    }
    let span = tracing::trace_span!(
        target: TARGET,
        "request",
        otel.name = %format!("{method} {route}"),
        otel.kind = "server",
        http.request.method = %method,
        http.route = %route,
        http.response.status_code = tracing::field::Empty,
        error.type = tracing::field::Empty,
    );
    continue_from(&span, get);
    span
}

/// The span of a queue message a function processes (`name`), a child of the trace its
/// sender put in the message's attributes (`get` reads one by name).
pub fn consumer_span(name: &str, get: impl Fn(&str) -> Option<String>) -> tracing::Span {
    if !enabled() {
        return tracing::Span::none();
    }
    let span = tracing::trace_span!(
        target: TARGET,
        "process",
        otel.name = %name,
        otel.kind = "consumer",
        messaging.system = "aws_sqs",
        messaging.operation.type = "process",
        error.type = tracing::field::Empty,
    );
    continue_from(&span, get);
    span
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn otlp_headers_are_read_as_the_environment_variable_writes_them() {
        let headers = otlp_headers(" api-key = k%3D1 ,x-team=t, ").unwrap();
        assert_eq!(headers.len(), 2);
        assert_eq!(headers["api-key"], "k=1");
        assert_eq!(headers["x-team"], "t");
        assert!(otlp_headers("").unwrap().is_empty());
        for bad in ["just-a-key", "bad name=s3cret", "x-team=", "a=1,s3cret"] {
            let err = otlp_headers(bad).unwrap_err();
            assert!(err.contains("header"), "{bad}: {err}");
            assert!(!err.contains("s3cret"), "the value leaked: {err}");
        }
    }

    #[test]
    fn traceparent_is_read_strictly() {
        let good = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        let parent = parse_traceparent(good).unwrap();
        assert_eq!(
            hex::encode(parent.trace_id),
            "0af7651916cd43dd8448eb211c80319c"
        );
        assert_eq!(hex::encode(parent.span_id), "b7ad6b7169203331");
        assert!(parent.sampled);
        let unsampled = good.replace("-01", "-00");
        assert!(!parse_traceparent(&unsampled).unwrap().sampled);
        // A later version is read by its first four parts.
        assert!(parse_traceparent(&format!("{}-extra", good.replacen("00", "cc", 1))).is_some());
        for bad in [
            "",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331",
            "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",
            "00-00000000000000000000000000000000-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
            "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra",
            "00-0af7651916cd43dd8448eb211c8031-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-0g",
        ] {
            assert_eq!(parse_traceparent(bad), None, "{bad}");
        }
    }

    #[test]
    fn only_a_well_formed_tracestate_is_passed_on() {
        for good in [
            "",
            "vendor=v1",
            "rojo=00f067aa0ba902b7, congo=t61rcWkgMzE",
            "a@b/c*d_e-f=x y",
        ] {
            assert!(is_trace_state(good), "{good}");
        }
        let long = format!("k={}", "v".repeat(600));
        let many = (0..33)
            .map(|i| format!("k{i}=v"))
            .collect::<Vec<_>>()
            .join(",");
        for bad in [
            "novalue", "Key=v", "k=", "k=a=b", "k=\u{1}", "k=ü", &long, &many,
        ] {
            assert!(!is_trace_state(bad), "{bad}");
        }
    }

    #[tokio::test]
    async fn empty_endpoints_leave_traces_off() {
        let env = Env::from_pairs([
            ("OTEL_EXPORTER_OTLP_ENDPOINT".to_owned(), String::new()),
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT".to_owned(),
                " ".to_owned(),
            ),
        ]);
        let http = reqwest::Client::new();
        let secrets = SecretsCache::new(std::sync::Arc::new(NoSecrets), Duration::from_secs(60));
        assert!(!configure(&env, &http, &secrets).await);
        assert!(headers_of(&tracing::Span::current()).is_empty());
    }

    struct NoSecrets;

    #[async_trait::async_trait]
    impl crate::secrets::SecretSource for NoSecrets {
        async fn fetch(&self, name: &str) -> domain::Result<crate::secrets::SecretString> {
            Err(domain::Error::Secret {
                name: name.to_owned(),
                message: "none here".into(),
            })
        }
        async fn store(&self, _: &str, _: &str) -> domain::Result<()> {
            Ok(())
        }
    }
}
