//! The hook's one error type: why a check of a new version failed, or why the result could
//! not be reported to CodeDeploy.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum HookError {
    /// The template passes the new versions a hook checks in environment variables
    /// (`*_VERSION`, [`crate::Target::variable`]); none is set.
    #[error("no version to check: none of {0} is set")]
    NoVersions(String),
    #[error("{check}: invoking {function} failed: {message}")]
    Invoke {
        check: &'static str,
        function: String,
        message: String,
    },
    #[error("{check}: {function} did not answer within {seconds} s")]
    Timeout {
        check: &'static str,
        function: String,
        seconds: u64,
    },
    /// The invocation itself failed (a panic, a crash at start-up, a timeout inside Lambda).
    #[error("{check}: {function} failed ({kind}): {detail}")]
    FunctionError {
        check: &'static str,
        function: String,
        kind: String,
        detail: String,
    },
    #[error("{check}: {function} answered something unreadable: {message}")]
    Payload {
        check: &'static str,
        function: String,
        message: String,
    },
    #[error("{check}: expected {expected}, got {got}")]
    Unexpected {
        check: &'static str,
        expected: String,
        got: String,
    },
    /// CodeDeploy did not take the result; it fails the deployment when the hook's time is up.
    #[error("reporting {status} for deployment {deployment_id} failed: {message}")]
    Report {
        deployment_id: String,
        status: &'static str,
        message: String,
    },
}
