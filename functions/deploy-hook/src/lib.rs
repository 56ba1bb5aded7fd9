//! CodeDeploy pre-traffic hook. Before CodeDeploy moves any traffic to a function's new
//! version, it invokes this function with the deployment's ids; the hook invokes the new
//! versions it is configured with ([`Config`]) with the synthetic requests of [`checks`] and
//! reports `Succeeded` or `Failed` (`PutLifecycleEventHookExecutionStatus`). `Failed` makes
//! CodeDeploy stop and keep the alias on the old version. See docs/operations.md, "Gradual
//! deployments".

pub mod checks;
pub mod error;

use std::collections::BTreeMap;
use std::time::Duration;

use aws_sdk_codedeploy::types::LifecycleEventStatus;
use aws_sdk_lambda::primitives::Blob;
use serde::Deserialize;

pub use checks::{CHECKS, Check, Expect, Target};
pub use error::HookError;

/// How long one check may take: a cold start plus a request refused in validation, or one
/// table read.
pub const CHECK_TIMEOUT: Duration = Duration::from_secs(25);

/// CodeDeploy's event for a lifecycle hook.
#[derive(Debug, Clone, Deserialize)]
pub struct HookEvent {
    #[serde(rename = "DeploymentId")]
    pub deployment_id: String,
    #[serde(rename = "LifecycleEventHookExecutionId")]
    pub lifecycle_event_hook_execution_id: String,
}

/// The versions to check: the new version ARN of each function this hook is for, from the
/// environment. The template has two hooks of this binary, each given some of the functions
/// (template.yaml explains why); a function without its variable is not checked.
#[derive(Debug, Clone, Default)]
pub struct Config {
    pub versions: BTreeMap<Target, String>,
}

impl Config {
    /// Reads every target's variable. None set is not an error here but a failed check, so
    /// CodeDeploy hears `Failed` instead of waiting for the hook's time to run out.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Self {
        let versions = Target::ALL
            .iter()
            .copied()
            .filter_map(|t| {
                lookup(t.variable())
                    .filter(|v| !v.is_empty())
                    .map(|v| (t, v))
            })
            .collect();
        Self { versions }
    }

    pub fn from_env() -> Self {
        Self::from_lookup(|name| std::env::var(name).ok())
    }
}

#[derive(Debug, Clone)]
pub struct Deps {
    pub lambda: aws_sdk_lambda::Client,
    pub codedeploy: aws_sdk_codedeploy::Client,
    pub config: Config,
    pub check_timeout: Duration,
}

impl Deps {
    /// The Lambda and CodeDeploy clients of a container, and the checks' configuration.
    pub async fn from_env() -> Self {
        let sdk = lambda_kit::aws::sdk_config().await;
        Self {
            lambda: aws_sdk_lambda::Client::new(&sdk),
            codedeploy: aws_sdk_codedeploy::Client::new(&sdk),
            config: Config::from_env(),
            check_timeout: CHECK_TIMEOUT,
        }
    }
}

/// What the hook reported, and why.
#[derive(Debug)]
pub struct Report {
    pub status: LifecycleEventStatus,
    pub failures: Vec<HookError>,
}

/// Runs every check against the new versions and reports the result to CodeDeploy. Errs only
/// when the report itself fails.
pub async fn handle(deps: &Deps, event: HookEvent) -> Result<Report, HookError> {
    let failures = run_checks(deps).await;
    let status = if failures.is_empty() {
        LifecycleEventStatus::Succeeded
    } else {
        LifecycleEventStatus::Failed
    };
    for failure in &failures {
        tracing::error!(deployment = %event.deployment_id, %failure, "pre-traffic check failed");
    }
    deps.codedeploy
        .put_lifecycle_event_hook_execution_status()
        .deployment_id(&event.deployment_id)
        .lifecycle_event_hook_execution_id(&event.lifecycle_event_hook_execution_id)
        .status(status.clone())
        .send()
        .await
        .map_err(|e| HookError::Report {
            deployment_id: event.deployment_id.clone(),
            status: status_name(&status),
            message: aws_sdk_codedeploy::error::DisplayErrorContext(e).to_string(),
        })?;
    tracing::info!(deployment = %event.deployment_id, status = status_name(&status), checks = CHECKS.len(), "pre-traffic hook reported");
    Ok(Report { status, failures })
}

fn status_name(status: &LifecycleEventStatus) -> &'static str {
    match status {
        LifecycleEventStatus::Succeeded => "Succeeded",
        _ => "Failed",
    }
}

/// Every check at once; the failures, none when every version answered as expected.
pub async fn run_checks(deps: &Deps) -> Vec<HookError> {
    let mut failures = Vec::new();
    if deps.config.versions.is_empty() {
        let names: Vec<&str> = Target::ALL.iter().map(|t| t.variable()).collect();
        failures.push(HookError::NoVersions(names.join(", ")));
    }
    let runs = CHECKS.iter().filter_map(|check| {
        let version = deps.config.versions.get(&check.target)?;
        Some(run_check(deps, check, version))
    });
    failures.extend(
        futures::future::join_all(runs)
            .await
            .into_iter()
            .filter_map(Result::err),
    );
    failures
}

async fn run_check(deps: &Deps, check: &Check, version: &str) -> Result<(), HookError> {
    let invoke = deps
        .lambda
        .invoke()
        .function_name(version)
        .payload(Blob::new(check.event.as_bytes()))
        .send();
    let output = tokio::time::timeout(deps.check_timeout, invoke)
        .await
        .map_err(|_| HookError::Timeout {
            check: check.name,
            function: version.to_owned(),
            seconds: deps.check_timeout.as_secs(),
        })?
        .map_err(|e| HookError::Invoke {
            check: check.name,
            function: version.to_owned(),
            message: aws_sdk_lambda::error::DisplayErrorContext(e).to_string(),
        })?;
    let payload = output.payload().map(Blob::as_ref).unwrap_or_default();
    if let Some(kind) = output.function_error() {
        return Err(HookError::FunctionError {
            check: check.name,
            function: version.to_owned(),
            kind: kind.to_owned(),
            detail: String::from_utf8_lossy(&payload[..payload.len().min(500)]).into_owned(),
        });
    }
    let got = checks::outcome(payload).map_err(|message| HookError::Payload {
        check: check.name,
        function: version.to_owned(),
        message,
    })?;
    if got == check.expect {
        Ok(())
    } else {
        Err(HookError::Unexpected {
            check: check.name,
            expected: check.expect.to_string(),
            got: got.to_string(),
        })
    }
}
