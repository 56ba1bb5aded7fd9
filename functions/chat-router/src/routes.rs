//! The router's routes: which path is which resource, the methods each answers and the ids
//! its path names. Matching is on the path's trailing segments, so the router works under
//! any prefix (a Function URL, `cargo lambda watch`'s `/lambda-url/chat-router/…`, a custom
//! domain).

use lambda_http::http::Method;

#[derive(strum::EnumCount)]
pub(crate) enum Route<'a> {
    Chat,
    Chats,
    Messages {
        chat_id: &'a str,
    },
    /// `PATCH` renames the chat, `DELETE` deletes it.
    OneChat {
        chat_id: &'a str,
    },
    ToolCalls {
        chat_id: &'a str,
    },
    RefusedCalls {
        chat_id: &'a str,
    },
    ToolCall {
        chat_id: &'a str,
        call_id: &'a str,
    },
    Cancel {
        chat_id: &'a str,
        call_id: &'a str,
    },
    /// `approve` or `deny` a call awaiting approval; streams the turn that follows.
    Decide {
        chat_id: &'a str,
        call_id: &'a str,
        approve: bool,
    },
    TurnEvents {
        chat_id: &'a str,
        turn_id: &'a str,
    },
    TurnCancel {
        chat_id: &'a str,
        turn_id: &'a str,
    },
    /// `GET` lists what is remembered about the user, `DELETE` forgets all of it.
    Memory,
    /// `DELETE` forgets one preference (by name) or note (by id).
    Forget {
        item: &'a str,
    },
    /// `GET` lists the user's fare alerts with what they found.
    Alerts,
    /// `DELETE` removes one of the user's fare alerts.
    Alert {
        alert_id: &'a str,
    },
}

/// The route `path` names, if any.
pub(crate) fn route(path: &str) -> Option<Route<'_>> {
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    match segments.as_slice() {
        [.., "chats", chat_id, "tool-calls"] => Some(Route::ToolCalls { chat_id }),
        [.., "chats", chat_id, "refused-calls"] => Some(Route::RefusedCalls { chat_id }),
        [.., "chats", chat_id, "tool-calls", call_id] => Some(Route::ToolCall { chat_id, call_id }),
        [.., "chats", chat_id, "tool-calls", call_id, "cancel"] => {
            Some(Route::Cancel { chat_id, call_id })
        }
        [
            ..,
            "chats",
            chat_id,
            "tool-calls",
            call_id,
            verb @ ("approve" | "deny"),
        ] => Some(Route::Decide {
            chat_id,
            call_id,
            approve: *verb == "approve",
        }),
        [.., "chats", chat_id, "turns", turn_id, "events"] => {
            Some(Route::TurnEvents { chat_id, turn_id })
        }
        [.., "chats", chat_id, "turns", turn_id, "cancel"] => {
            Some(Route::TurnCancel { chat_id, turn_id })
        }
        [.., "chats", chat_id, "messages"] => Some(Route::Messages { chat_id }),
        [.., "chats", chat_id] => Some(Route::OneChat { chat_id }),
        [.., "chats"] => Some(Route::Chats),
        [.., "chat"] => Some(Route::Chat),
        [.., "memory"] => Some(Route::Memory),
        [.., "memory", item] => Some(Route::Forget { item }),
        [.., "alerts"] => Some(Route::Alerts),
        [.., "alerts", alert_id] => Some(Route::Alert { alert_id }),
        _ => None,
    }
}

/// How many routes the router has: every one must be in the OpenAPI document.
pub const ROUTE_COUNT: usize = <Route as strum::EnumCount>::COUNT;

/// The name of the route `path` matches and the methods it answers: how the OpenAPI
/// document is checked against the router.
pub fn route_summary(path: &str) -> Option<(&'static str, &'static [Method])> {
    route(path).map(|r| (r.name(), r.methods()))
}

impl Route<'_> {
    /// A name per route, for [`route_summary`].
    fn name(&self) -> &'static str {
        match self {
            Route::Chat => "chat",
            Route::Chats => "chats",
            Route::Messages { .. } => "messages",
            Route::OneChat { .. } => "one_chat",
            Route::ToolCalls { .. } => "tool_calls",
            Route::RefusedCalls { .. } => "refused_calls",
            Route::ToolCall { .. } => "tool_call",
            Route::Cancel { .. } => "cancel",
            Route::Decide { .. } => "decide",
            Route::TurnEvents { .. } => "turn_events",
            Route::TurnCancel { .. } => "turn_cancel",
            Route::Memory => "memory",
            Route::Forget { .. } => "forget",
            Route::Alerts => "alerts",
            Route::Alert { .. } => "alert",
        }
    }

    /// The methods the route answers.
    pub(crate) fn methods(&self) -> &'static [Method] {
        match self {
            Route::Chat
            | Route::Cancel { .. }
            | Route::TurnCancel { .. }
            | Route::Decide { .. } => &[Method::POST],
            Route::OneChat { .. } => &[Method::PATCH, Method::DELETE],
            Route::Forget { .. } | Route::Alert { .. } => &[Method::DELETE],
            Route::Memory => &[Method::GET, Method::DELETE],
            _ => &[Method::GET],
        }
    }

    /// The ids the path names, each checked by `validate::id`.
    pub(crate) fn ids(&self) -> Vec<(&'static str, &str)> {
        match *self {
            Route::Chat | Route::Chats | Route::Memory | Route::Alerts => Vec::new(),
            Route::Forget { item } => vec![("item", item)],
            Route::Alert { alert_id } => vec![("alert_id", alert_id)],
            Route::ToolCalls { chat_id }
            | Route::Messages { chat_id }
            | Route::RefusedCalls { chat_id }
            | Route::OneChat { chat_id } => vec![("chat_id", chat_id)],
            Route::ToolCall { chat_id, call_id }
            | Route::Cancel { chat_id, call_id }
            | Route::Decide {
                chat_id, call_id, ..
            } => {
                vec![("chat_id", chat_id), ("call_id", call_id)]
            }
            Route::TurnEvents { chat_id, turn_id } | Route::TurnCancel { chat_id, turn_id } => {
                vec![("chat_id", chat_id), ("turn_id", turn_id)]
            }
        }
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_match_under_any_prefix() {
        assert!(matches!(route("/chat"), Some(Route::Chat)));
        assert!(matches!(
            route("/lambda-url/chat-router/chat"),
            Some(Route::Chat)
        ));
        assert!(matches!(
            route("/chats/c1/tool-calls"),
            Some(Route::ToolCalls { chat_id: "c1" })
        ));
        assert!(matches!(
            route("/chats/c1/tool-calls/t9"),
            Some(Route::ToolCall {
                chat_id: "c1",
                call_id: "t9"
            })
        ));
        assert!(matches!(
            route("/chats/c1/tool-calls/t9/cancel"),
            Some(Route::Cancel {
                chat_id: "c1",
                call_id: "t9"
            })
        ));
        assert!(matches!(route("/memory"), Some(Route::Memory)));
        assert!(matches!(
            route("/memory/home_airport"),
            Some(Route::Forget {
                item: "home_airport"
            })
        ));
        assert!(matches!(route("/alerts"), Some(Route::Alerts)));
        assert!(matches!(
            route("/alerts/01J0ALERT"),
            Some(Route::Alert {
                alert_id: "01J0ALERT"
            })
        ));
        assert!(route("/nope").is_none());
    }
}
