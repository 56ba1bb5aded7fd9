//! CloudWatch metrics in the Embedded Metric Format (EMF): each data point is one JSON line
//! on stdout, which CloudWatch Logs turns into metrics. No agent and no API call, so a
//! metric costs a `write` and never fails a request.
//!
//! Dimensions stay low-cardinality (function, tool, agent, status, …) so the number of
//! series is bounded; ids (chat, job, trace) go in as properties: searchable in Logs
//! Insights, never a dimension.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value, json};

use crate::config::Env;

/// The namespace unless `METRICS_NAMESPACE` says otherwise (the template sets it per stack).
pub const DEFAULT_NAMESPACE: &str = "ToolCalling";

/// What a metric is measured in, as CloudWatch names the unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// A number of events.
    Count,
    /// A duration.
    Milliseconds,
    /// A plain number (e.g. USD).
    None,
}

impl Unit {
    fn as_str(self) -> &'static str {
        match self {
            Self::Count => "Count",
            Self::Milliseconds => "Milliseconds",
            Self::None => "None",
        }
    }
}

/// Every metric this project emits; the dashboard and the alarms in `template.yaml` use
/// these names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr, strum::VariantArray)]
pub enum Metric {
    /// A tool call ended (by `status`).
    ToolCalls,
    /// From a call's admission to its end.
    ToolLatency,
    /// A call answered from the ledger (a duplicate of an earlier call).
    ToolDedupeHits,
    /// A failed attempt scheduled for another try on the tool queue.
    ToolRetries,
    /// An LLM call ended.
    LlmCalls,
    /// From an LLM call's start to its first streamed token.
    LlmTimeToFirstToken,
    /// An LLM call, from start to end.
    LlmDuration,
    /// An LLM call's prompt tokens.
    LlmInputTokens,
    /// An LLM call's completion tokens.
    LlmOutputTokens,
    /// What an LLM call cost, in USD, when its price is known.
    LlmCostUsd,
    /// An LLM call failed (by `kind`).
    LlmErrors,
    /// A chat turn ended (by `status`).
    Turns,
    /// A chat turn, from start to end.
    TurnDuration,
    /// A turn's model steps.
    TurnSteps,
    /// A turn's tool calls.
    TurnToolCalls,
    /// A request was refused for its credentials (by `reason`).
    AuthFailures,
    /// An attempt the tool worker ran (by `status`).
    WorkerAttempts,
    /// A job the worker gave up on, left in the dead-letter queue.
    WorkerDeadLetters,
    /// A knowledge-base query (by `mode`).
    KbQueries,
    /// A knowledge-base query, from start to end.
    KbQueryLatency,
    /// A flight search against an upstream ended (by `status`).
    SearchRequests,
    /// A flight search against an upstream, from start to end.
    SearchLatency,
}

impl Metric {
    /// The metric's name in CloudWatch (the variant's name).
    pub fn name(self) -> &'static str {
        self.into()
    }

    /// What the metric is measured in.
    pub fn unit(self) -> Unit {
        match self {
            Self::ToolLatency
            | Self::LlmTimeToFirstToken
            | Self::LlmDuration
            | Self::TurnDuration
            | Self::KbQueryLatency
            | Self::SearchLatency => Unit::Milliseconds,
            Self::LlmCostUsd => Unit::None,
            _ => Unit::Count,
        }
    }
}

/// The dimensions a point may carry; each has few values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Dimension {
    /// Set on every point: which function emitted it.
    Function,
    /// The tool called.
    Tool,
    /// The agent profile that ran the turn.
    Agent,
    /// How something ended (`succeeded`, `ok`, an error's kind, …).
    Status,
    /// What kind of error (`timeout`, `upstream`, …).
    Kind,
    /// Why a request was refused.
    Reason,
    /// How the knowledge base answered (`hybrid`, `bm25`).
    Mode,
    /// What an LLM call was for (`chat`, `ask_gpt`).
    Operation,
}

impl Dimension {
    /// The dimension's name in the EMF document.
    pub fn name(self) -> &'static str {
        match self {
            Self::Function => "function",
            Self::Tool => "tool",
            Self::Agent => "agent",
            Self::Status => "status",
            Self::Kind => "kind",
            Self::Reason => "reason",
            Self::Mode => "mode",
            Self::Operation => "operation",
        }
    }
}

/// One data point: a few values sharing one set of dimensions, plus properties.
#[derive(Debug, Clone, Default)]
pub struct Point {
    dimensions: Vec<(Dimension, String)>,
    values: Vec<(Metric, f64)>,
    properties: Map<String, Value>,
    /// Further dimension sets (subsets of `dimensions`) the values are also published under.
    rollups: Vec<Vec<Dimension>>,
}

impl Point {
    /// An empty point.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a dimension and its value.
    pub fn dimension(mut self, dimension: Dimension, value: impl Into<String>) -> Self {
        self.dimensions.push((dimension, value.into()));
        self
    }

    /// Also publishes the values under `function` plus `dimensions` alone (e.g. a tool's
    /// latency over every status); EMF does this within the one document.
    pub fn rollup(mut self, dimensions: &[Dimension]) -> Self {
        self.rollups.push(dimensions.to_vec());
        self
    }

    /// Adds a value of `metric`.
    pub fn value(mut self, metric: Metric, value: f64) -> Self {
        self.values.push((metric, value));
        self
    }

    /// Adds a count of `metric`.
    pub fn count(self, metric: Metric, n: usize) -> Self {
        self.value(metric, n as f64)
    }

    /// Adds a duration of `metric`, in milliseconds.
    pub fn millis(self, metric: Metric, elapsed: Duration) -> Self {
        self.value(metric, elapsed.as_secs_f64() * 1000.0)
    }

    /// A searchable field that is not a dimension (an id, a model name). `None` is left out.
    pub fn property(mut self, name: &str, value: Option<impl Into<Value>>) -> Self {
        if let Some(value) = value {
            self.properties.insert(name.to_owned(), value.into());
        }
        self
    }
}

enum Sink {
    Stdout,
    /// Kept in memory for tests.
    Capture(Mutex<Vec<Value>>),
    Discard,
}

struct Inner {
    namespace: String,
    function: String,
    sink: Sink,
}

/// Where a function's points go; cheap to clone.
#[derive(Clone)]
pub struct Metrics(Arc<Inner>);

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics")
            .field("namespace", &self.0.namespace)
            .field("function", &self.0.function)
            .finish_non_exhaustive()
    }
}

/// Discards: a client built without metrics (tests, tools) emits nothing.
impl Default for Metrics {
    fn default() -> Self {
        Self::discard()
    }
}

/// `doc` and a newline on stdout in one locked write: serialised into one buffer first, not
/// formatted piece by piece through stdout's line writer.
fn write_line(doc: &Value) {
    use std::io::Write;
    let Ok(mut line) = serde_json::to_vec(doc) else {
        return;
    };
    line.push(b'\n');
    // A metric that cannot be written (stdout closed) is not worth failing the request for.
    let _ = std::io::stdout().lock().write_all(&line);
}

impl Metrics {
    /// One failed authentication, by why (a fixed, short reason such as `token expired`).
    pub fn auth_failure(&self, reason: &str) {
        let reason: String = reason
            .chars()
            .take(40)
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '_'
                }
            })
            .collect();
        self.emit(
            Point::new()
                .dimension(Dimension::Reason, reason)
                .count(Metric::AuthFailures, 1),
        );
    }

    /// One flight search ended: `ok`, or its error's kind.
    pub fn search(&self, started: std::time::Instant, error: Option<&crate::Error>) {
        self.emit(
            Point::new()
                .dimension(Dimension::Status, error.map_or("ok", crate::Error::kind))
                .rollup(&[])
                .count(Metric::SearchRequests, 1)
                .millis(Metric::SearchLatency, started.elapsed()),
        );
    }

    fn with(function: &str, namespace: String, sink: Sink) -> Self {
        Self(Arc::new(Inner {
            namespace,
            function: function.to_owned(),
            sink,
        }))
    }

    /// EMF lines on stdout, in the namespace `METRICS_NAMESPACE` names.
    pub fn stdout(function: &str, env: &Env) -> Self {
        let namespace = env.reader().or("METRICS_NAMESPACE", DEFAULT_NAMESPACE);
        Self::with(function, namespace, Sink::Stdout)
    }

    /// Points kept in memory; [`Metrics::captured`] returns them.
    pub fn capture(function: &str) -> Self {
        Self::with(
            function,
            DEFAULT_NAMESPACE.to_owned(),
            Sink::Capture(Mutex::default()),
        )
    }

    /// Points go nowhere.
    pub fn discard() -> Self {
        Self::with("none", DEFAULT_NAMESPACE.to_owned(), Sink::Discard)
    }

    /// The EMF documents emitted so far (empty unless made by [`Metrics::capture`]).
    pub fn captured(&self) -> Vec<Value> {
        match &self.0.sink {
            Sink::Capture(docs) => docs.lock().unwrap_or_else(PoisonError::into_inner).clone(),
            _ => Vec::new(),
        }
    }

    /// Writes `point` to the sink; a point without values is dropped.
    pub fn emit(&self, point: Point) {
        if matches!(self.0.sink, Sink::Discard) || point.values.is_empty() {
            return;
        }
        let doc = self.document(point);
        match &self.0.sink {
            Sink::Stdout => write_line(&doc),
            Sink::Capture(docs) => docs
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(doc),
            Sink::Discard => {}
        }
    }

    /// The EMF document of `point`, with `function` as its first dimension.
    fn document(&self, point: Point) -> Value {
        let timestamp = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        let mut doc = point.properties;
        let mut names = vec![Dimension::Function.name()];
        doc.insert("function".into(), self.0.function.clone().into());
        for (dimension, value) in point.dimensions {
            names.push(dimension.name());
            doc.insert(dimension.name().into(), value.into());
        }
        let mut sets = vec![names];
        for rollup in point.rollups {
            let mut set = vec![Dimension::Function.name()];
            set.extend(rollup.into_iter().map(Dimension::name));
            sets.push(set);
        }
        let mut metrics = Vec::new();
        for (metric, value) in point.values {
            metrics.push(json!({"Name": metric.name(), "Unit": metric.unit().as_str()}));
            doc.insert(metric.name().into(), value.into());
        }
        doc.insert(
            "_aws".into(),
            json!({
                "Timestamp": timestamp,
                "CloudWatchMetrics": [{
                    "Namespace": self.0.namespace,
                    "Dimensions": sets,
                    "Metrics": metrics,
                }],
            }),
        );
        Value::Object(doc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_point_is_an_emf_document_with_the_function_dimension_first() {
        let metrics = Metrics::capture("chat-router");
        metrics.emit(
            Point::new()
                .dimension(Dimension::Tool, "search_flights")
                .dimension(Dimension::Status, "succeeded")
                .rollup(&[Dimension::Tool])
                .count(Metric::ToolCalls, 1)
                .millis(Metric::ToolLatency, Duration::from_millis(250))
                .property("chat_id", Some("c1"))
                .property("job_id", None::<String>),
        );
        let docs = metrics.captured();
        assert_eq!(docs.len(), 1);
        let doc = &docs[0];
        let directive = &doc["_aws"]["CloudWatchMetrics"][0];
        assert_eq!(directive["Namespace"], DEFAULT_NAMESPACE);
        assert_eq!(
            directive["Dimensions"],
            json!([["function", "tool", "status"], ["function", "tool"]])
        );
        assert_eq!(
            directive["Metrics"],
            json!([
                {"Name": "ToolCalls", "Unit": "Count"},
                {"Name": "ToolLatency", "Unit": "Milliseconds"}
            ])
        );
        assert_eq!(doc["function"], "chat-router");
        assert_eq!(doc["tool"], "search_flights");
        assert_eq!(doc["ToolCalls"], 1.0);
        assert_eq!(doc["ToolLatency"], 250.0);
        assert_eq!(doc["chat_id"], "c1");
        assert!(doc.get("job_id").is_none());
        assert!(doc["_aws"]["Timestamp"].as_u64().is_some_and(|t| t > 0));
    }

    #[test]
    fn a_point_without_values_is_not_emitted() {
        let metrics = Metrics::capture("f");
        metrics.emit(Point::new().dimension(Dimension::Tool, "x"));
        assert!(metrics.captured().is_empty());
    }

    #[test]
    fn the_namespace_comes_from_the_environment() {
        let env = Env::from_pairs([("METRICS_NAMESPACE", "Stack/prod")]);
        let metrics = Metrics::stdout("f", &env);
        assert_eq!(metrics.0.namespace, "Stack/prod");
    }
}
