//! AWS SDK calls in the trace: one client span per operation (`DynamoDB.UpdateItem`,
//! `SQS.SendMessage`) made for a piece of work the trace is about (beneath a tool call's
//! `execute_tool`, a tool function's request, a queue message), with the AWS conventions'
//! attributes (`rpc.*`, `aws.dynamodb.table_names`), the HTTP status, the attempts the
//! SDK's retries took and the failure kind. An interceptor, so that every call of a client
//! built with it is covered: the stores make theirs in forty places. The router's own
//! bookkeeping of a turn (its record, log, chat and usage writes, about seven per turn) gets
//! none: each span costs about as much to export as to make, and those calls' time is in
//! `invoke_agent`'s.

use aws_sdk_dynamodb::operation::{
    delete_item::DeleteItemInput, get_item::GetItemInput, put_item::PutItemInput,
    query::QueryInput, scan::ScanInput, update_item::UpdateItemInput,
};
use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::interceptors::Intercept;
use aws_smithy_runtime_api::client::interceptors::context::{
    BeforeSerializationInterceptorContextRef, FinalizerInterceptorContextRef, Input,
};
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use aws_smithy_runtime_api::client::retries::RequestAttempts;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::config_bag::{ConfigBag, Storable, StoreReplace};

use tracing_subscriber::Registry;
use tracing_subscriber::registry::LookupSpan;

use crate::telemetry::{TARGET, enabled, record_attempt, record_error, record_status};

/// The interceptor that gives every operation of a client its span while traces are on.
#[derive(Debug, Clone, Copy, Default)]
pub struct SdkSpans;

/// The span of the operation under way, kept in its configuration bag between the hooks.
#[derive(Debug, Clone)]
struct CallSpan(tracing::Span);

impl Storable for CallSpan {
    type Storer = StoreReplace<Self>;
}

impl Intercept for SdkSpans {
    fn name(&self) -> &'static str {
        "SdkSpans"
    }

    // Not `read_before_execution`: a client's interceptors run that before the operation's
    // configuration (its name among it) is in the bag.
    fn read_before_serialization(
        &self,
        context: &BeforeSerializationInterceptorContextRef<'_>,
        _: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        if !enabled() || !for_traced_work() {
            return Ok(());
        }
        let Some(operation) = cfg.load::<Metadata>() else {
            return Ok(());
        };
        let span = tracing::trace_span!(
            target: TARGET,
            "aws",
            otel.name = %format!("{}.{}", operation.service(), operation.name()),
            otel.kind = "client",
            rpc.system = "aws-api",
            rpc.service = %operation.service(),
            rpc.method = %operation.name(),
            aws.dynamodb.table_names = tracing::field::Empty,
            app.http.attempts = tracing::field::Empty,
            http.response.status_code = tracing::field::Empty,
            error.type = tracing::field::Empty,
        );
        if let Some(table) = dynamodb_table(context.input()) {
            span.record("aws.dynamodb.table_names", table);
        }
        cfg.interceptor_state().store_put(CallSpan(span));
        Ok(())
    }

    fn read_after_execution(
        &self,
        context: &FinalizerInterceptorContextRef<'_>,
        _: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let Some(CallSpan(span)) = cfg.load::<CallSpan>() else {
            return Ok(());
        };
        if let Some(attempts) = cfg.load::<RequestAttempts>() {
            record_attempt(span, attempts.attempts());
        }
        if let Some(response) = context.response() {
            record_status(span, response.status().as_u16());
        }
        if let Some(Err(error)) = context.output_or_error() {
            let kind = if error.is_timeout_error() {
                "timeout"
            } else if error.is_connector_error() {
                "connection"
            } else if error.is_operation_error() {
                // The service's answer, e.g. a failed condition: often an expected outcome.
                "operation"
            } else {
                "response"
            };
            record_error(span, kind);
        }
        // Dropping the handle ends the span now rather than when the bag goes.
        cfg.interceptor_state().unset::<CallSpan>();
        Ok(())
    }
}

/// The spans whose calls to AWS are traced: a tool call, a request a function serves, a
/// queue message it processes.
const TRACED_WORK: [&str; 3] = ["execute_tool", "request", "process"];

/// Whether the call under way is made for one of [`TRACED_WORK`]: one of them is among the
/// current span's ancestors.
fn for_traced_work() -> bool {
    tracing::dispatcher::get_default(|dispatch| {
        let (Some(registry), Some(current)) = (
            dispatch.downcast_ref::<Registry>(),
            dispatch.current_span().id().cloned(),
        ) else {
            return false;
        };
        registry.span(&current).is_some_and(|span| {
            span.scope().any(|s| {
                let meta = s.metadata();
                meta.target() == TARGET && TRACED_WORK.contains(&meta.name())
            })
        })
    })
}

/// The table a single-table DynamoDB operation names.
fn dynamodb_table(input: &Input) -> Option<&str> {
    input
        .downcast_ref::<GetItemInput>()
        .and_then(|i| i.table_name())
        .or_else(|| {
            input
                .downcast_ref::<PutItemInput>()
                .and_then(|i| i.table_name())
        })
        .or_else(|| {
            input
                .downcast_ref::<UpdateItemInput>()
                .and_then(|i| i.table_name())
        })
        .or_else(|| {
            input
                .downcast_ref::<DeleteItemInput>()
                .and_then(|i| i.table_name())
        })
        .or_else(|| {
            input
                .downcast_ref::<QueryInput>()
                .and_then(|i| i.table_name())
        })
        .or_else(|| {
            input
                .downcast_ref::<ScanInput>()
                .and_then(|i| i.table_name())
        })
}
