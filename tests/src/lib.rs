//! Test harness shared by every crate's tests: clients for the local emulators, configured
//! from the environment that `infra/local/emulators.sh start` writes to `.local/run/env` (the
//! README's test command sources it), a request counter, fixtures, unique ids and the
//! fuzzing harness ([`fuzz`]).
//!
//! Without a reachable emulator a test fails and says how to start one; it never skips.

// A test harness: it fails loudly (unwrap, expect, panic) so that the test using it does.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

pub mod airports;
pub mod clock;
pub mod duffel;
pub mod dynamo_faults;
pub mod fake_llm;
pub mod figures;
pub mod fuzz;
pub mod gateway;
pub mod queues;
pub mod serve;
pub mod upstreams;

pub const HOW_TO_START: &str = "start the local emulators and load their settings:\n    \
     infra/local/emulators.sh start && source .local/run/env\n\
     or run the whole suite with `make test`";

/// The value of a variable the emulator scripts set; panics with the how-to when unset.
pub fn require_env(name: &str) -> String {
    match std::env::var(name) {
        Ok(v) if !v.is_empty() => v,
        _ => panic!("{name} is not set, so there is no emulator to test against; {HOW_TO_START}"),
    }
}

pub async fn sdk_config() -> aws_config::SdkConfig {
    require_env("AWS_ENDPOINT_URL_DYNAMODB");
    aws_config::defaults(aws_config::BehaviorVersion::latest())
        .load()
        .await
}

/// A DynamoDB client that has been seen to answer.
pub async fn dynamodb() -> aws_sdk_dynamodb::Client {
    let endpoint = require_env("AWS_ENDPOINT_URL_DYNAMODB");
    let client = aws_sdk_dynamodb::Client::new(&sdk_config().await);
    let probe = tokio::time::timeout(
        Duration::from_secs(10),
        client.list_tables().limit(1).send(),
    )
    .await;
    match probe {
        Ok(Ok(_)) => client,
        Ok(Err(e)) => panic!(
            "DynamoDB Local at {endpoint} did not answer: {}; {HOW_TO_START}",
            aws_sdk_dynamodb::error::DisplayErrorContext(e)
        ),
        Err(_) => panic!("DynamoDB Local at {endpoint} did not answer within 10 s; {HOW_TO_START}"),
    }
}

/// A Secrets Manager client (moto) that has been seen to answer.
pub async fn secrets_manager() -> aws_sdk_secretsmanager::Client {
    let endpoint = require_env("AWS_ENDPOINT_URL_SECRETS_MANAGER");
    let client = aws_sdk_secretsmanager::Client::new(&sdk_config().await);
    let probe = tokio::time::timeout(
        Duration::from_secs(10),
        client.list_secrets().max_results(1).send(),
    )
    .await;
    match probe {
        Ok(Ok(_)) => client,
        _ => panic!("Secrets Manager emulator (moto) at {endpoint} did not answer; {HOW_TO_START}"),
    }
}

/// An SQS client (moto) that has been seen to answer.
pub async fn sqs() -> aws_sdk_sqs::Client {
    let endpoint = require_env("AWS_ENDPOINT_URL_SQS");
    let client = aws_sdk_sqs::Client::new(&sdk_config().await);
    let probe = tokio::time::timeout(Duration::from_secs(10), client.list_queues().send()).await;
    match probe {
        Ok(Ok(_)) => client,
        _ => panic!("SQS emulator (moto) at {endpoint} did not answer; {HOW_TO_START}"),
    }
}

/// Creates a secret with a unique name in the emulator and returns its name.
pub async fn create_secret(prefix: &str, value: &str) -> String {
    let name = unique(prefix);
    let created = secrets_manager()
        .await
        .create_secret()
        .name(&name)
        .secret_string(value)
        .send()
        .await;
    if let Err(e) = created {
        panic!(
            "creating secret {name}: {}",
            aws_sdk_secretsmanager::error::DisplayErrorContext(e)
        );
    }
    name
}

/// A fresh id, so tests sharing the emulator's tables never see each other's items.
/// Creates a table with a string `pk` hash key and a string `sk` range key (the layout of
/// the knowledge-base table) under a unique name starting with `prefix`, for tests that
/// need a table of their own. Returns the name; deleting it is the caller's business.
pub async fn create_pk_sk_table(client: &aws_sdk_dynamodb::Client, prefix: &str) -> String {
    use aws_sdk_dynamodb::types::{
        AttributeDefinition, BillingMode, KeySchemaElement, KeyType, ScalarAttributeType,
    };
    let name = unique(prefix);
    let key = |attribute: &str, key_type| {
        KeySchemaElement::builder()
            .attribute_name(attribute)
            .key_type(key_type)
            .build()
            .unwrap_or_else(|e| panic!("key schema: {e}"))
    };
    let attribute = |attribute: &str| {
        AttributeDefinition::builder()
            .attribute_name(attribute)
            .attribute_type(ScalarAttributeType::S)
            .build()
            .unwrap_or_else(|e| panic!("attribute: {e}"))
    };
    client
        .create_table()
        .table_name(&name)
        .billing_mode(BillingMode::PayPerRequest)
        .key_schema(key("pk", KeyType::Hash))
        .key_schema(key("sk", KeyType::Range))
        .attribute_definitions(attribute("pk"))
        .attribute_definitions(attribute("sk"))
        .send()
        .await
        .unwrap_or_else(|e| {
            panic!(
                "creating table {name}: {}\n{HOW_TO_START}",
                aws_sdk_dynamodb::error::DisplayErrorContext(e)
            )
        });
    name
}

/// A departure date 90 days from the tests' today ([`clock::today`], `YYYY-MM-DD`): always
/// in the future, so flight searches in tests never meet the past-date check, whenever
/// they run.
pub fn future_date() -> String {
    clock::date_in(90).to_string()
}

pub fn unique(prefix: &str) -> String {
    format!("{prefix}-{}", ulid::Ulid::generate())
}

/// Counts the HTTP requests a DynamoDB client sends (retries included): round trips, and
/// which operations they were.
#[derive(Debug, Default, Clone)]
pub struct RequestCounter(Arc<std::sync::Mutex<Vec<String>>>);

impl RequestCounter {
    /// The count since the last call, resetting it.
    pub fn take(&self) -> usize {
        self.take_operations().len()
    }

    /// The operations sent since the last call (`PutItem`, `Query`, ...), in order,
    /// resetting the count.
    pub fn take_operations(&self) -> Vec<String> {
        std::mem::take(
            &mut *self
                .0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }
}

impl aws_sdk_dynamodb::config::Intercept for RequestCounter {
    fn name(&self) -> &'static str {
        "RequestCounter"
    }

    fn read_before_transmit(
        &self,
        context: &aws_sdk_dynamodb::config::interceptors::BeforeTransmitInterceptorContextRef<'_>,
        _runtime_components: &aws_sdk_dynamodb::config::RuntimeComponents,
        _cfg: &mut aws_sdk_dynamodb::config::ConfigBag,
    ) -> Result<(), aws_sdk_dynamodb::error::BoxError> {
        // `X-Amz-Target: DynamoDB_20120810.PutItem`
        let operation = context
            .request()
            .headers()
            .get("x-amz-target")
            .and_then(|target| target.rsplit('.').next())
            .unwrap_or("?")
            .to_owned();
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(operation);
        Ok(())
    }
}

/// A DynamoDB client whose requests are counted.
pub async fn counted_dynamodb() -> (aws_sdk_dynamodb::Client, RequestCounter) {
    dynamodb().await; // fail early, with the how-to, when the emulator is down
    let counter = RequestCounter::default();
    let config = aws_sdk_dynamodb::config::Builder::from(&sdk_config().await)
        .interceptor(counter.clone())
        .build();
    (aws_sdk_dynamodb::Client::from_conf(config), counter)
}

/// Path of a file under `tests/fixtures/` (upstream payloads; see its README).
pub fn fixture_path(relative: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(relative)
}

/// A fixture's text.
pub fn fixture(relative: &str) -> String {
    let path = fixture_path(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("fixture {}: {e}", path.display()))
}

/// A fixture parsed as JSON.
pub fn fixture_json(relative: &str) -> serde_json::Value {
    serde_json::from_str(&fixture(relative)).unwrap_or_else(|e| panic!("fixture {relative}: {e}"))
}

/// Path of a file under the repository's `events/` (sample Lambda events).
pub fn event_path(relative: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("events")
        .join(relative)
}

/// A sample Lambda event from `events/<function>/`, whose file name ends in the HTTP status
/// the handler must answer with (`search-200.json`); for the queue consumer (tool-worker),
/// in the number of messages the batch response must report as failed (`poison-in-batch-1`).
pub struct SampleEvent {
    pub name: String,
    pub expected_status: u16,
    /// The event JSON, for `lambda_http::request::from_str` or `cargo lambda invoke`.
    pub text: String,
}

/// Panics unless `value` fits `T`'s JSON Schema: a tool result's data is what MCP clients
/// get as `structuredContent`, checked against the `outputSchema` derived from `T`.
pub fn assert_fits_schema<T: schemars::JsonSchema>(value: &serde_json::Value) {
    let schema = serde_json::to_value(schemars::schema_for!(T)).unwrap_or_default();
    let validator = jsonschema::validator_for(&schema).unwrap_or_else(|e| panic!("schema: {e}"));
    let problems: Vec<String> = validator
        .iter_errors(value)
        .map(|e| e.to_string())
        .collect();
    assert!(problems.is_empty(), "{problems:?} in {value}");
}

/// A handler's response as its status and JSON body (`Null` when the body is not JSON).
pub async fn json_response<B>(response: http::Response<B>) -> (u16, serde_json::Value)
where
    B: http_body::Body,
{
    use http_body_util::BodyExt;
    let status = response.status().as_u16();
    let bytes = response
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(serde_json::Value::Null),
    )
}

/// Every sample event of `function`, sorted by name; panics if there are none or a file
/// name does not end in `-<status>.json`.
pub fn sample_events(function: &str) -> Vec<SampleEvent> {
    let dir = event_path(function);
    let files = files_in(&dir, |p| p.extension().is_some_and(|ext| ext == "json"));
    assert!(!files.is_empty(), "no sample events in {}", dir.display());
    files
        .into_iter()
        .map(|file| {
            let name = file
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or_default()
                .to_owned();
            let expected_status = name
                .rsplit('-')
                .next()
                .and_then(|s| s.parse().ok())
                .unwrap_or_else(|| panic!("{name}: the file name must end in -<status>.json"));
            let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{name}: {e}"));
            SampleEvent {
                name,
                expected_status,
                text,
            }
        })
        .collect()
}

/// The files in `dir` that `keep` accepts, sorted, so tests read them in the same order on
/// every machine; panics when `dir` cannot be read.
pub(crate) fn files_in(dir: &Path, keep: impl Fn(&Path) -> bool) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| keep(p))
        .collect();
    files.sort();
    files
}
