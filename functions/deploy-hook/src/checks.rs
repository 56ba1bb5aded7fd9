//! The synthetic requests each new version must answer as expected before it gets traffic.
//! All are sample events from `events/` that need no upstream API: requests the functions
//! refuse during validation or routing, and cheap ones that only touch the stack's own
//! tables.

use serde_json::Value;

/// The functions the hook checks, each named by the environment variable that carries the
/// ARN of its new version (`!Ref <Function>.Version` in template.yaml).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Target {
    SeatsAeroSearch,
    CashSearch,
    KbRetrieve,
    ChatRouter,
    ToolWorker,
    McpServer,
}

impl Target {
    // Slices, not arrays: a new function adds its lines and no count.
    pub const ALL: &[Target] = &[
        Target::SeatsAeroSearch,
        Target::CashSearch,
        Target::KbRetrieve,
        Target::ChatRouter,
        Target::ToolWorker,
        Target::McpServer,
    ];

    /// The environment variable holding the new version's ARN.
    pub fn variable(self) -> &'static str {
        match self {
            Target::SeatsAeroSearch => "SEATSAERO_SEARCH_VERSION",
            Target::CashSearch => "CASH_SEARCH_VERSION",
            Target::KbRetrieve => "KB_RETRIEVE_VERSION",
            Target::ChatRouter => "CHAT_ROUTER_VERSION",
            Target::ToolWorker => "TOOL_WORKER_VERSION",
            Target::McpServer => "MCP_SERVER_VERSION",
        }
    }
}

/// What a check's answer must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// An HTTP response (API Gateway or Function URL payload) with this status.
    Status(u16),
    /// An SQS batch response naming this many failed messages.
    BatchFailures(usize),
}

impl std::fmt::Display for Expect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Expect::Status(status) => write!(f, "status {status}"),
            Expect::BatchFailures(n) => write!(f, "{n} failed messages"),
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub struct Check {
    /// `<function>/<sample event>`, as in `events/`.
    pub name: &'static str,
    pub target: Target,
    pub event: &'static str,
    pub expect: Expect,
}

macro_rules! check {
    ($target:expr, $file:literal, $expect:expr) => {
        Check {
            name: $file,
            target: $target,
            event: include_str!(concat!("../../../events/", $file, ".json")),
            expect: $expect,
        }
    };
}

/// Every check, per function: a bad request refused, and a cheap one answered.
pub const CHECKS: &[Check] = &[
    check!(
        Target::SeatsAeroSearch,
        "seatsaero-search/bad-iata-400",
        Expect::Status(400)
    ),
    check!(
        Target::SeatsAeroSearch,
        "seatsaero-search/get-405",
        Expect::Status(405)
    ),
    check!(
        Target::CashSearch,
        "cash-search/bad-iata-400",
        Expect::Status(400)
    ),
    check!(
        Target::CashSearch,
        "cash-search/get-405",
        Expect::Status(405)
    ),
    check!(
        Target::KbRetrieve,
        "kb-retrieve/bad-top-k-400",
        Expect::Status(400)
    ),
    // Reads the knowledge-base table (BM25 when no embeddings endpoint answers).
    check!(
        Target::KbRetrieve,
        "kb-retrieve/search-200",
        Expect::Status(200)
    ),
    // The router checks the token before the body: without one it answers 401.
    check!(
        Target::ChatRouter,
        "chat-router/chat-no-token-401",
        Expect::Status(401)
    ),
    check!(
        Target::ChatRouter,
        "chat-router/chat-get-405",
        Expect::Status(405)
    ),
    // A retry of a call the ledger does not hold: dropped, nothing to redeliver.
    check!(
        Target::ToolWorker,
        "tool-worker/stale-job-0",
        Expect::BatchFailures(0)
    ),
    // Like the router: the token before anything else, and the public metadata.
    check!(
        Target::McpServer,
        "mcp-server/tools-list-no-token-401",
        Expect::Status(401)
    ),
    check!(
        Target::McpServer,
        "mcp-server/protected-resource-200",
        Expect::Status(200)
    ),
];

/// What an answer was, read from an invocation's payload: an HTTP response (buffered or, from
/// a streaming function, its JSON prelude before eight NUL bytes) or an SQS batch response.
pub fn outcome(payload: &[u8]) -> Result<Expect, String> {
    let value: Value = match serde_json::from_slice(payload) {
        Ok(value) => value,
        Err(whole) => {
            let prelude = payload
                .windows(8)
                .position(|w| w == [0u8; 8])
                .map(|end| &payload[..end])
                .ok_or_else(|| format!("not JSON ({whole}) and no streaming prelude"))?;
            serde_json::from_slice(prelude).map_err(|e| format!("streaming prelude: {e}"))?
        }
    };
    if let Some(status) = value.get("statusCode").and_then(Value::as_u64) {
        return u16::try_from(status)
            .map(Expect::Status)
            .map_err(|_| format!("status {status} out of range"));
    }
    if let Some(failures) = value.get("batchItemFailures").and_then(Value::as_array) {
        return Ok(Expect::BatchFailures(failures.len()));
    }
    Err("neither statusCode nor batchItemFailures".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_function_has_a_refused_and_an_answered_request() {
        for &target in Target::ALL {
            let checks: Vec<_> = CHECKS.iter().filter(|c| c.target == target).collect();
            assert!(!checks.is_empty(), "{target:?} has no check");
            for check in checks {
                let event: Value = serde_json::from_str(check.event).unwrap();
                assert!(event.is_object(), "{}", check.name);
            }
        }
    }

    #[test]
    fn reads_buffered_streamed_and_batch_answers() {
        assert_eq!(
            outcome(br#"{"statusCode":400,"body":"x"}"#),
            Ok(Expect::Status(400))
        );
        let mut streamed = br#"{"statusCode":405,"headers":{}}"#.to_vec();
        streamed.extend_from_slice(&[0; 8]);
        streamed.extend_from_slice(b"{\"error\":\"method\"}");
        assert_eq!(outcome(&streamed), Ok(Expect::Status(405)));
        assert_eq!(
            outcome(br#"{"batchItemFailures":[{"itemIdentifier":"a"}]}"#),
            Ok(Expect::BatchFailures(1))
        );
        assert!(outcome(b"oops").is_err());
        assert!(outcome(b"{}").is_err());
    }
}
