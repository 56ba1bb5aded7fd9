//! The hook's handler against local fakes of Lambda's Invoke and CodeDeploy's
//! PutLifecycleEventHookExecutionStatus (wiremock; the SDK clients point at them by endpoint
//! URL). The fake Lambda answers each sample event as a healthy version would, except for the
//! faults a test asks for.

// Tests and benches fail loudly: unwrap, expect and panic are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use aws_sdk_codedeploy::types::LifecycleEventStatus;
use deploy_hook::{CHECKS, Config, Deps, Expect, HookError, HookEvent, Target, handle};
use serde_json::{Value, json};
use wiremock::matchers::{header, method, path, path_regex};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

const REPORT_TARGET: &str = "CodeDeploy_20141006.PutLifecycleEventHookExecutionStatus";

fn version(target: Target) -> String {
    format!("arn:aws:lambda:us-east-1:123456789012:function:{target:?}:7")
}

/// How the fake treats one (function, sample event) pair.
#[derive(Clone)]
enum Fault {
    /// Answers this HTTP status instead of the expected one.
    Status(u16),
    /// The invocation fails (`X-Amz-Function-Error: Unhandled`).
    Crash,
    /// Answers after this long.
    Slow(Duration),
}

fn answer(expect: Expect) -> Value {
    match expect {
        Expect::Status(status) => json!({"statusCode": status, "headers": {}, "body": "{}"}),
        Expect::BatchFailures(n) => {
            let failures: Vec<Value> = (0..n)
                .map(|i| json!({"itemIdentifier": i.to_string()}))
                .collect();
            json!({"batchItemFailures": failures})
        }
    }
}

/// A fake Lambda: the function (a version ARN) from the path, the check from the payload.
async fn fake_lambda(faults: HashMap<(String, &'static str), Fault>) -> MockServer {
    let server = MockServer::start().await;
    let faults = Arc::new(faults);
    Mock::given(method("POST"))
        .and(path_regex(r"^/2015-03-31/functions/[^/]+/invocations$"))
        .respond_with(move |req: &Request| {
            let function = req
                .url
                .path()
                .split('/')
                .nth(3)
                .unwrap_or_default()
                .replace("%3A", ":");
            let body = String::from_utf8_lossy(&req.body);
            let Some(check) = CHECKS.iter().find(|c| c.event == body) else {
                return ResponseTemplate::new(400).set_body_string("unknown event");
            };
            let ok = ResponseTemplate::new(200).set_body_json(answer(check.expect));
            match faults.get(&(function, check.name)) {
                None => ok,
                Some(Fault::Status(status)) => {
                    ResponseTemplate::new(200).set_body_json(answer(Expect::Status(*status)))
                }
                Some(Fault::Crash) => ResponseTemplate::new(200)
                    .insert_header("X-Amz-Function-Error", "Unhandled")
                    .set_body_json(
                        json!({"errorType": "Runtime.ExitError", "errorMessage": "exited"}),
                    ),
                Some(Fault::Slow(delay)) => ok.set_delay(*delay),
            }
        })
        .mount(&server)
        .await;
    server
}

/// A fake CodeDeploy that accepts every report (or answers `status` to each).
async fn fake_codedeploy(status: u16) -> MockServer {
    let server = MockServer::start().await;
    let response = if status == 200 {
        ResponseTemplate::new(200).set_body_json(json!({"lifecycleEventHookExecutionId": "hook-1"}))
    } else {
        ResponseTemplate::new(status).set_body_json(
            json!({"__type": "DeploymentDoesNotExistException", "message": "no such deployment"}),
        )
    };
    Mock::given(method("POST"))
        .and(path("/"))
        .and(header("x-amz-target", REPORT_TARGET))
        .respond_with(response.insert_header("content-type", "application/x-amz-json-1.1"))
        .mount(&server)
        .await;
    server
}

fn deps(lambda: &MockServer, codedeploy: &MockServer, config: Config) -> Deps {
    use aws_sdk_lambda::config::{BehaviorVersion, Credentials, Region};
    let credentials = Credentials::new("test", "test", None, None, "test");
    let lambda = aws_sdk_lambda::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(credentials.clone())
        .endpoint_url(lambda.uri())
        .build();
    let codedeploy = aws_sdk_codedeploy::Config::builder()
        .behavior_version(aws_sdk_codedeploy::config::BehaviorVersion::latest())
        .region(aws_sdk_codedeploy::config::Region::new("us-east-1"))
        .credentials_provider(credentials)
        .endpoint_url(codedeploy.uri())
        .retry_config(aws_sdk_codedeploy::config::retry::RetryConfig::disabled())
        .build();
    Deps {
        lambda: aws_sdk_lambda::Client::from_conf(lambda),
        codedeploy: aws_sdk_codedeploy::Client::from_conf(codedeploy),
        config,
        check_timeout: Duration::from_secs(5),
    }
}

fn all_versions() -> Config {
    Config::from_lookup(|name| {
        Target::ALL
            .iter()
            .copied()
            .find(|t| t.variable() == name)
            .map(version)
    })
}

fn event() -> HookEvent {
    serde_json::from_value(json!({
        "DeploymentId": "d-EXAMPLE1",
        "LifecycleEventHookExecutionId": "hook-execution-1"
    }))
    .unwrap()
}

/// The statuses CodeDeploy was told, with the ids they were for.
async fn reports(codedeploy: &MockServer) -> Vec<Value> {
    codedeploy
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|r| serde_json::from_slice(&r.body).unwrap())
        .collect()
}

#[tokio::test]
async fn healthy_versions_are_reported_succeeded() {
    let lambda = fake_lambda(HashMap::new()).await;
    let codedeploy = fake_codedeploy(200).await;
    let report = handle(&deps(&lambda, &codedeploy, all_versions()), event())
        .await
        .unwrap();
    assert_eq!(
        report.status,
        LifecycleEventStatus::Succeeded,
        "{:?}",
        report.failures
    );
    assert!(report.failures.is_empty());
    assert_eq!(
        reports(&codedeploy).await,
        vec![json!({
            "deploymentId": "d-EXAMPLE1",
            "lifecycleEventHookExecutionId": "hook-execution-1",
            "status": "Succeeded"
        })]
    );
    // Every check reached the version it is for.
    let invoked = lambda.received_requests().await.unwrap();
    assert_eq!(invoked.len(), CHECKS.len());
    for check in CHECKS {
        let arn = version(check.target).replace(':', "%3A");
        assert!(
            invoked
                .iter()
                .any(|r| r.url.path().contains(&arn) && r.body == check.event.as_bytes()),
            "{} did not reach {arn}",
            check.name
        );
    }
}

#[tokio::test]
async fn a_version_answering_500_to_a_bad_request_is_reported_failed() {
    let faults = HashMap::from([(
        (
            version(Target::SeatsAeroSearch),
            "seatsaero-search/bad-iata-400",
        ),
        Fault::Status(500),
    )]);
    let lambda = fake_lambda(faults).await;
    let codedeploy = fake_codedeploy(200).await;
    let report = handle(&deps(&lambda, &codedeploy, all_versions()), event())
        .await
        .unwrap();
    assert_eq!(report.status, LifecycleEventStatus::Failed);
    assert_eq!(report.failures.len(), 1, "{:?}", report.failures);
    let failure = report.failures[0].to_string();
    assert!(
        failure.contains("seatsaero-search/bad-iata-400")
            && failure.contains("expected status 400, got status 500"),
        "{failure}"
    );
    assert_eq!(reports(&codedeploy).await[0]["status"], "Failed");
}

#[tokio::test]
async fn a_crashing_or_hanging_version_is_reported_failed() {
    let faults = HashMap::from([
        (
            (version(Target::ToolWorker), "tool-worker/stale-job-0"),
            Fault::Crash,
        ),
        (
            (version(Target::ChatRouter), "chat-router/chat-get-405"),
            Fault::Slow(Duration::from_secs(3)),
        ),
    ]);
    let lambda = fake_lambda(faults).await;
    let codedeploy = fake_codedeploy(200).await;
    let mut deps = deps(&lambda, &codedeploy, all_versions());
    deps.check_timeout = Duration::from_millis(500);
    let report = handle(&deps, event()).await.unwrap();
    assert_eq!(report.status, LifecycleEventStatus::Failed);
    assert!(
        report
            .failures
            .iter()
            .any(|f| matches!(f, HookError::FunctionError { kind, .. } if kind == "Unhandled")),
        "{:?}",
        report.failures
    );
    assert!(
        report.failures.iter().any(|f| matches!(
            f,
            HookError::Timeout {
                check: "chat-router/chat-get-405",
                ..
            }
        )),
        "{:?}",
        report.failures
    );
    assert_eq!(report.failures.len(), 2);
    assert_eq!(reports(&codedeploy).await[0]["status"], "Failed");
}

#[tokio::test]
async fn a_hook_checks_only_its_own_functions() {
    let lambda = fake_lambda(HashMap::new()).await;
    let codedeploy = fake_codedeploy(200).await;
    let config = Config::from_lookup(|name| {
        (name == "CHAT_ROUTER_VERSION").then(|| version(Target::ChatRouter))
    });
    let report = handle(&deps(&lambda, &codedeploy, config), event())
        .await
        .unwrap();
    assert_eq!(
        report.status,
        LifecycleEventStatus::Succeeded,
        "{:?}",
        report.failures
    );
    let router_checks = CHECKS
        .iter()
        .filter(|c| c.target == Target::ChatRouter)
        .count();
    assert_eq!(
        lambda.received_requests().await.unwrap().len(),
        router_checks
    );
}

#[tokio::test]
async fn no_version_at_all_is_a_failure_not_a_silent_pass() {
    let lambda = fake_lambda(HashMap::new()).await;
    let codedeploy = fake_codedeploy(200).await;
    let config = Config::from_lookup(|_| Some(String::new()));
    let report = handle(&deps(&lambda, &codedeploy, config), event())
        .await
        .unwrap();
    assert_eq!(report.status, LifecycleEventStatus::Failed);
    assert!(
        matches!(report.failures[..], [HookError::NoVersions(_)]),
        "{:?}",
        report.failures
    );
    assert_eq!(reports(&codedeploy).await[0]["status"], "Failed");
}

#[tokio::test]
async fn a_refused_report_is_the_handlers_error() {
    let lambda = fake_lambda(HashMap::new()).await;
    let codedeploy = fake_codedeploy(400).await;
    let err = handle(&deps(&lambda, &codedeploy, all_versions()), event())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, HookError::Report { status: "Succeeded", deployment_id, .. } if deployment_id == "d-EXAMPLE1"),
        "{err}"
    );
}
