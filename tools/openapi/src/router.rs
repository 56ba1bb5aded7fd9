//! The chat-router's routes (one Function URL, user JWT): chat turns, turn resume and
//! cancel, history, the tool-call audit, memory and fare alerts.

use chat_router::decide::DecisionBody;
use chat_router::handler::{AlertList, ChatRequest, MAX_KEY_CHARS, RenameRequest};
use chat_router::turn_log::CancelResponse;
use chat_router::validate::{CURSOR_PATTERN, DEFAULT_PAGE, ID_PATTERN, MAX_PAGE};
use serde_json::{Map, Value, json};
use shared::domain::chat::{ChatSummary, Message};
use shared::domain::memory::UserMemory;
use shared::domain::tool_call::{RefusedCall, ToolCallRecord};
use shared::ledger::Page;

use crate::FUNCTION_KEY;
use crate::components::Components;
use crate::operation::{Operation, header, path, query};

/// The local stack's router (`make dev`).
pub fn server_local() -> Value {
    json!({
        "url": "http://127.0.0.1:9000/lambda-url/chat-router",
        "description": "chat-router on the local stack (`make dev`; WATCH_PORT 9000)"
    })
}

/// The deployed router: the stack output `ChatRouterUrl`.
pub fn server_deployed() -> Value {
    json!({
        "url": "https://{urlId}.lambda-url.{region}.on.aws",
        "description": "chat-router Function URL (stack output `ChatRouterUrl`)",
        "variables": {
            "urlId": {"default": "your-url-id", "description": "the Function URL's id"},
            "region": {"default": "us-east-1"}
        }
    })
}

/// Every route of the router, as `(path, path item)`.
pub fn paths(c: &mut Components) -> Vec<(String, Value)> {
    let error = c.error();
    let events = c.events();
    let op = |id: &str, tag: &str, summary: &str| {
        Operation::new(id, tag, summary, &error)
            .security("userJwt")
            .error(
                401,
                "`unauthorized`: missing, malformed, expired or foreign token",
            )
            .error(500, "`internal`: storage, secret or configuration failure")
            .error(
                502,
                "`upstream_error`: the identity provider's JWKS could not be fetched (`jwks` mode)",
            )
            .error(
                504,
                "`upstream_timeout`: the identity provider's JWKS did not answer in time",
            )
    };
    let with_ids = |op: Operation, names: &[&str]| {
        names
            .iter()
            .fold(op, |op, name| op.parameter(id_parameter(name)))
            .error(
                400,
                "`validation_failed`: a path id is malformed (1–64 letters, digits, `-` or `_`)",
            )
    };
    let paged = |op: Operation| {
        op.parameter(query(
            "limit",
            "Page size.",
            json!({"type": "integer", "minimum": 1, "maximum": MAX_PAGE, "default": DEFAULT_PAGE}),
        ))
        .parameter(query(
            "cursor",
            "`next_cursor` of the previous page of this listing.",
            json!({"type": "string", "pattern": CURSOR_PATTERN}),
        ))
        .error(400, "`validation_failed`: a malformed id, `limit` or `cursor`, or a cursor of another listing")
    };
    let chat_missing = "`not_found`: the chat is missing or another user's";

    let chat = op("postChat", "chat", "One chat turn, streamed as Server-Sent Events")
        .description("Everything that can be refused is refused before the stream starts, as a JSON error; once `200` is sent, problems arrive as `error` events followed by `done`. docs/api.md#post-chat.")
        .parameter(header(
            "Idempotency-Key",
            "One key per message, reused when the same message is sent again (kept 24 h per user): a resend joins or replays the turn.",
            json!({"type": "string", "minLength": 1, "maxLength": MAX_KEY_CHARS, "pattern": "^[ -~]+$"}),
        ))
        .parameter(accept_language())
        .json_body(c.request::<ChatRequest>(), true, "The message and its options.")
        .event_stream("The turn's events, `init` first and `done` last.", &events)
        .error(400, "`invalid_json` or `validation_failed`: empty or malformed body, wrong field, empty message, unknown agent, time zone or language tag, malformed `Idempotency-Key`")
        .error(404, "`not_found`: `chat_id` is missing or another user's")
        .error(409, "`turn_in_progress`: another message of this chat is still being answered (`details.turn_id`)")
        .error(413, "`payload_too_large`: body above 256 KiB, or the message above `MAX_MESSAGE_CHARS`")
        .error(422, "`idempotency_key_reused`: the key was used before with a different body")
        .error(429, "`rate_limited`: the caller's turns per minute or daily budget are used up (`details.limit`, `details.reset_at`)")
        .build();

    let chats = paged(op(
        "listChats",
        "history",
        "The caller's chats, the most recently active first",
    ))
    .json(200, "A page of chats.", c.response::<Page<ChatSummary>>())
    .build();
    let delete_chat = with_ids(
        op(
            "deleteChat",
            "history",
            "Delete a chat with its messages, state and tool-call records",
        ),
        &["chat_id"],
    )
    .no_content("Deleted.")
    .error(404, chat_missing)
    .error(409, "`turn_in_progress`: a turn holds the chat")
    .build();
    let rename_chat = with_ids(
        op(
            "renameChat",
            "history",
            "Give a chat a title of the owner's choice",
        ),
        &["chat_id"],
    )
    .json_body(c.request::<RenameRequest>(), true, "The new title.")
    .no_content("Renamed; the chat keeps its place in the list.")
    .error(400, "`validation_failed`: the title is empty or longer than 80 characters (`details.field: \"title\"`)")
    .error(404, chat_missing)
    .build();
    let messages = paged(with_ids(
        op(
            "listMessages",
            "history",
            "The chat's messages, newest first",
        ),
        &["chat_id"],
    ))
    .json(200, "A page of messages.", c.response::<Page<Message>>())
    .error(404, chat_missing)
    .build();

    let tool_calls = paged(with_ids(
        op(
            "listToolCalls",
            "audit",
            "The chat's tool calls, most recently attempted first",
        ),
        &["chat_id"],
    ))
    .json(
        200,
        "A page of tool-call records.",
        c.response::<Page<ToolCallRecord>>(),
    )
    .error(404, chat_missing)
    .build();
    let tool_call = with_ids(
        op("getToolCall", "audit", "One tool-call record"),
        &["chat_id", "call_id"],
    )
    .json(200, "The record.", c.response::<ToolCallRecord>())
    .error(404, "`not_found`: the call is missing or another user's")
    .build();
    let cancel_call = with_ids(
        op(
            "cancelToolCall",
            "audit",
            "Cancel a queued or running tool call",
        ),
        &["chat_id", "call_id"],
    )
    .json(
        200,
        "The updated record (`canceled`).",
        c.response::<ToolCallRecord>(),
    )
    .error(404, "`not_found`: the call is missing or another user's")
    .error(
        409,
        "`conflict`: the call has already ended, or kept changing under the cancel",
    )
    .build();
    let refused = paged(with_ids(
        op(
            "listRefusedCalls",
            "audit",
            "The chat's tool calls refused before they ran, newest first",
        ),
        &["chat_id"],
    ))
    .json(
        200,
        "A page of refused calls.",
        c.response::<Page<RefusedCall>>(),
    )
    .error(404, chat_missing)
    .build();
    let decision = |id: &str, summary: &str, body: Value, text: &str| {
        with_ids(op(id, "chat", summary), &["chat_id", "call_id"])
            .parameter(accept_language())
            .json_body(body, false, text)
            .event_stream("The turn that follows the decision, streamed like `POST /chat`'s.", &events)
            .error(404, "`not_found`: the call is not the caller's, or not in that chat")
            .error(409, "`conflict` (the call was decided otherwise, or is not waiting any more: `details.status`) or `turn_in_progress`")
            .error(413, "`payload_too_large`: body above 256 KiB")
            .error(429, "`rate_limited`: the caller's turns per minute or daily budget are used up")
            .build()
    };
    // An approval takes no reason (one is 400): its body is an empty object at most.
    let empty = json!({"type": "object", "additionalProperties": false});
    let approve = decision(
        "approveToolCall",
        "Approve a call that waits for approval, and stream the turn that runs it",
        empty,
        "None, or `{}`.",
    );
    let deny = decision(
        "denyToolCall",
        "Deny a call that waits for approval, and stream the turn that follows",
        c.request::<DecisionBody>(),
        "None, `{}` or `{\"reason\": …}`.",
    );

    let turn_events = with_ids(op("turnEvents", "turns", "Resume a turn's event stream"), &["chat_id", "turn_id"])
        .parameter(header("Last-Event-ID", "Resume after this event id (wins over `after`).", json!({"type": "string", "pattern": "^[0-9]+$"})))
        .parameter(query("after", "Resume after this event id.", json!({"type": "integer", "minimum": 0})))
        .parameter(accept_language())
        .event_stream("The turn's events after the resume point, then the live turn's until `done`.", &events)
        .error(400, "`validation_failed`: a malformed id, or `Last-Event-ID` / `after` that is not a whole number")
        .error(404, "`not_found`: the turn is missing, another user's, or of another chat")
        .build();
    let turn_cancel = with_ids(
        op(
            "cancelTurn",
            "turns",
            "Stop a running turn at its next safe point",
        ),
        &["chat_id", "turn_id"],
    )
    .json(
        200,
        "The turn; `cancel_requested: false` for one that has already ended.",
        c.response::<CancelResponse>(),
    )
    .error(404, "`not_found`: the turn is missing or another user's")
    .build();

    let get_memory = op("getMemory", "memory", "What is remembered about the caller")
        .json(200, "Preferences and notes.", c.response::<UserMemory>())
        .build();
    let clear_memory = op(
        "clearMemory",
        "memory",
        "Forget everything about the caller",
    )
    .no_content("Forgotten.")
    .build();
    let forget = with_ids(
        op(
            "forgetMemoryItem",
            "memory",
            "Forget one preference (by name) or note (by id)",
        ),
        &["item"],
    )
    .no_content("Forgotten.")
    .error(404, "`not_found`: nothing by that name is remembered")
    .build();
    let alerts = op(
        "listAlerts",
        "alerts",
        "The caller's fare alerts with their matches",
    )
    .json(200, "The alerts.", c.response::<AlertList>())
    .build();
    let delete_alert = with_ids(
        op(
            "deleteAlert",
            "alerts",
            "Delete one of the caller's fare alerts",
        ),
        &["alert_id"],
    )
    .no_content("Deleted.")
    .error(404, "`not_found`: the alert is missing or another user's")
    .build();

    let item = |operations: Vec<(&str, Value)>| {
        let mut item = Map::new();
        item.insert(FUNCTION_KEY.into(), json!("chat-router"));
        for (method, operation) in operations {
            item.insert(method.into(), operation);
        }
        Value::Object(item)
    };
    vec![
        ("/chat".into(), item(vec![("post", chat)])),
        ("/chats".into(), item(vec![("get", chats)])),
        (
            "/chats/{chat_id}".into(),
            item(vec![("patch", rename_chat), ("delete", delete_chat)]),
        ),
        (
            "/chats/{chat_id}/messages".into(),
            item(vec![("get", messages)]),
        ),
        (
            "/chats/{chat_id}/tool-calls".into(),
            item(vec![("get", tool_calls)]),
        ),
        (
            "/chats/{chat_id}/tool-calls/{call_id}".into(),
            item(vec![("get", tool_call)]),
        ),
        (
            "/chats/{chat_id}/tool-calls/{call_id}/cancel".into(),
            item(vec![("post", cancel_call)]),
        ),
        (
            "/chats/{chat_id}/tool-calls/{call_id}/approve".into(),
            item(vec![("post", approve)]),
        ),
        (
            "/chats/{chat_id}/tool-calls/{call_id}/deny".into(),
            item(vec![("post", deny)]),
        ),
        (
            "/chats/{chat_id}/refused-calls".into(),
            item(vec![("get", refused)]),
        ),
        (
            "/chats/{chat_id}/turns/{turn_id}/events".into(),
            item(vec![("get", turn_events)]),
        ),
        (
            "/chats/{chat_id}/turns/{turn_id}/cancel".into(),
            item(vec![("post", turn_cancel)]),
        ),
        (
            "/memory".into(),
            item(vec![("get", get_memory), ("delete", clear_memory)]),
        ),
        ("/memory/{item}".into(), item(vec![("delete", forget)])),
        ("/alerts".into(), item(vec![("get", alerts)])),
        (
            "/alerts/{alert_id}".into(),
            item(vec![("delete", delete_alert)]),
        ),
    ]
}

fn id_parameter(name: &str) -> Value {
    let description = match name {
        "chat_id" => "The chat.",
        "call_id" => "The tool call (`tc_` + 32 hex; the `job_id` of its events).",
        "turn_id" => "The turn (the `turn_id` of its `init`).",
        "item" => "A preference's name (e.g. `home_airport`) or a note's id.",
        "alert_id" => "The alert.",
        _ => "An id.",
    };
    path(
        name,
        description,
        json!({"type": "string", "pattern": ID_PATTERN}),
    )
}

fn accept_language() -> Value {
    header(
        "Accept-Language",
        "The user's languages: the first supported one (German, English) is the turn's language unless the body names one; a malformed header is ignored.",
        json!({"type": "string"}),
    )
}
