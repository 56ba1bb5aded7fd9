//! DynamoDB errors injected into a client's first requests of chosen operations, as DynamoDB
//! sends them: the request goes to a local fault server instead of the emulator and gets the
//! error's HTTP response, so nothing is written and the SDK parses a real error.
//!
//! ```no_run
//! # async fn demo() {
//! use test_support::dynamo_faults::{DynamoFaults, Fault};
//!
//! let faults = DynamoFaults::start().await;
//! faults.fail("TransactWriteItems", Fault::CanceledByConflict, 3);
//! let config = aws_sdk_dynamodb::config::Builder::from(&test_support::sdk_config().await)
//!     .interceptor(faults.clone());
//! let client = aws_sdk_dynamodb::Client::from_conf(config.build());
//! // ... use `client`; then
//! assert_eq!(faults.remaining(), 0, "every planned fault was met");
//! # }
//! ```

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use aws_sdk_dynamodb::config::interceptors::BeforeTransmitInterceptorContextMut;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::error::BoxError;
use wiremock::matchers::header;
use wiremock::{Mock, MockServer, ResponseTemplate};

/// Marks a request for the fault server with the error to answer.
const FAULT_HEADER: &str = "x-injected-fault";

/// An error DynamoDB answers a write with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// `TransactionConflictException`: a single-item write met a transaction on its item.
    TransactionConflict,
    /// `TransactionCanceledException` with the reason `TransactionConflict`: a transaction
    /// met another one.
    CanceledByConflict,
    /// `ThrottlingException`.
    Throttling,
    /// `ProvisionedThroughputExceededException`.
    ThroughputExceeded,
}

impl Fault {
    const ALL: [Fault; 4] = [
        Fault::TransactionConflict,
        Fault::CanceledByConflict,
        Fault::Throttling,
        Fault::ThroughputExceeded,
    ];

    fn code(self) -> &'static str {
        match self {
            Fault::TransactionConflict => "TransactionConflictException",
            Fault::CanceledByConflict => "TransactionCanceledException",
            Fault::Throttling => "ThrottlingException",
            Fault::ThroughputExceeded => "ProvisionedThroughputExceededException",
        }
    }

    fn body(self) -> serde_json::Value {
        let mut body = serde_json::json!({
            "__type": format!("com.amazonaws.dynamodb.v20120810#{}", self.code()),
            "message": match self {
                Fault::TransactionConflict => "Transaction is ongoing for the item",
                Fault::CanceledByConflict => "Transaction cancelled, please refer cancellation reasons for specific reasons [TransactionConflict]",
                Fault::Throttling | Fault::ThroughputExceeded => "Rate of requests exceeds the allowed throughput.",
            },
        });
        if self == Fault::CanceledByConflict {
            body["CancellationReasons"] = serde_json::json!([
                {"Code": "TransactionConflict", "Message": "Transaction is ongoing for the item"}
            ]);
        }
        body
    }
}

struct Planned {
    operation: String,
    /// Only requests whose JSON body contains this text.
    body_contains: Option<String>,
    fault: Fault,
    remaining: usize,
}

struct Inner {
    plan: Mutex<Vec<Planned>>,
    injected: Mutex<Vec<(String, Fault)>>,
    server: MockServer,
}

/// The fault plan and its server; add it to a DynamoDB client as an interceptor.
#[derive(Clone)]
pub struct DynamoFaults(Arc<Inner>);

impl std::fmt::Debug for DynamoFaults {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DynamoFaults")
            .field("injected", &*lock(&self.0.injected))
            .finish()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl DynamoFaults {
    /// A fault server with an empty plan (every request passes through).
    pub async fn start() -> Self {
        let server = MockServer::start().await;
        for fault in Fault::ALL {
            Mock::given(header(FAULT_HEADER, fault.code()))
                .respond_with(
                    ResponseTemplate::new(400)
                        .insert_header("content-type", "application/x-amz-json-1.0")
                        .insert_header("x-amzn-requestid", "injected-fault")
                        .set_body_json(fault.body()),
                )
                .mount(&server)
                .await;
        }
        Self(Arc::new(Inner {
            plan: Mutex::new(Vec::new()),
            injected: Mutex::new(Vec::new()),
            server,
        }))
    }

    /// Answers the next `times` requests of `operation` (e.g. `"UpdateItem"`) with `fault`,
    /// after faults planned earlier for it.
    pub fn fail(&self, operation: &str, fault: Fault, times: usize) -> &Self {
        self.plan(operation, None, fault, times)
    }

    /// As [`DynamoFaults::fail`], for requests whose JSON body contains `text` (a table
    /// name, an expression) only.
    pub fn fail_matching(&self, operation: &str, text: &str, fault: Fault, times: usize) -> &Self {
        self.plan(operation, Some(text), fault, times)
    }

    /// Drops the faults not yet met: from now on every request passes through.
    pub fn clear(&self) {
        lock(&self.0.plan).clear();
    }

    fn plan(
        &self,
        operation: &str,
        body_contains: Option<&str>,
        fault: Fault,
        times: usize,
    ) -> &Self {
        lock(&self.0.plan).push(Planned {
            operation: operation.to_owned(),
            body_contains: body_contains.map(str::to_owned),
            fault,
            remaining: times,
        });
        self
    }

    /// Faults planned but not yet met.
    pub fn remaining(&self) -> usize {
        lock(&self.0.plan).iter().map(|p| p.remaining).sum()
    }

    /// The faults injected so far, in order: (operation, fault).
    pub fn injected(&self) -> Vec<(String, Fault)> {
        lock(&self.0.injected).clone()
    }

    /// The fault for the next request of `operation`, if one is planned.
    fn take(&self, operation: &str, body: &[u8]) -> Option<Fault> {
        let mut plan = lock(&self.0.plan);
        let body = String::from_utf8_lossy(body);
        let planned = plan.iter_mut().find(|p| {
            p.operation == operation
                && p.remaining > 0
                && p.body_contains
                    .as_deref()
                    .is_none_or(|text| body.contains(text))
        })?;
        planned.remaining -= 1;
        let fault = planned.fault;
        lock(&self.0.injected).push((operation.to_owned(), fault));
        Some(fault)
    }
}

impl Intercept for DynamoFaults {
    fn name(&self) -> &'static str {
        "DynamoFaults"
    }

    fn modify_before_transmit(
        &self,
        context: &mut BeforeTransmitInterceptorContextMut<'_>,
        _runtime_components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let request = context.request_mut();
        // `X-Amz-Target: DynamoDB_20120810.UpdateItem`
        let operation = request
            .headers()
            .get("x-amz-target")
            .and_then(|target| target.rsplit('.').next())
            .unwrap_or_default()
            .to_owned();
        let body = request.body().bytes().unwrap_or_default();
        if let Some(fault) = self.take(&operation, body) {
            request.headers_mut().insert(FAULT_HEADER, fault.code());
            request.set_uri(format!("{}/", self.0.server.uri()))?;
        }
        Ok(())
    }
}
