//! The tool functions' routes: flight search (award, cash) and knowledge-base retrieval, each
//! on the internal tools API (IAM) and, with `PublicToolRoutes=true`, on the public one.

use kb_retrieve::handler::{SearchRequest, SearchResponse};
use serde_json::{Value, json};
use shared::domain::flight::{FlightSearchParams, FlightSearchResult};

use crate::FUNCTION_KEY;
use crate::components::Components;
use crate::operation::Operation;

/// One tool function's route.
struct Route {
    function: &'static str,
    /// The route without `/internal`.
    path: &'static str,
    id: &'static str,
    tag: &'static str,
    summary: &'static str,
}

const ROUTES: [Route; 3] = [
    Route {
        function: "seatsaero-search",
        path: seatsaero_search::handler::ROUTE,
        id: "searchAward",
        tag: "flights",
        summary: "Award seats (miles) from Seats.aero",
    },
    Route {
        function: "cash-search",
        path: cash_search::handler::ROUTE,
        id: "searchCash",
        tag: "flights",
        summary: "Cash fares from Duffel or Amadeus (`CashFareProvider`)",
    },
    Route {
        function: "kb-retrieve",
        path: kb_retrieve::handler::ROUTE,
        id: "searchKnowledgeBase",
        tag: "knowledge base",
        summary: "Hybrid (BM25 + vector) knowledge-base retrieval, or an Amazon Bedrock knowledge base's",
    },
];

/// Every tool route, internal and public, as `(path, path item)`.
pub fn paths(c: &mut Components) -> Vec<(String, Value)> {
    let error = c.error();
    let mut out = Vec::new();
    for route in &ROUTES {
        let flights = route.tag == "flights";
        let (body, reply) = if flights {
            (
                c.request::<FlightSearchParams>(),
                c.response::<FlightSearchResult>(),
            )
        } else {
            (c.request::<SearchRequest>(), c.response::<SearchResponse>())
        };
        let operation = |id: String, security: &str, access: &str| {
            let mut op = Operation::new(&id, route.tag, route.summary, &error)
                .description(access)
                .security(security)
                .json_body(body.clone(), true, "The search.")
                .json(200, "The results.", reply.clone())
                .error(400, "`invalid_json` or `validation_failed`: malformed body, or a field breaks the rules (the message names it); for a flight search also an upstream's rejection")
                .error(403, "`forbidden`: a user's token while `PublicToolRoutes` is off, or a request no authorizer vouched for")
                .error(413, "`payload_too_large`: body above 256 KiB")
                .error(500, "`internal`: secret, storage or configuration problem");
            if flights {
                op = op
                    .error(404, "`not_found`: the upstream answered 404")
                    .error(502, "`upstream_error`: the upstream is down, answered garbage, or refused our credentials")
                    .error(504, "`upstream_timeout`: the upstream did not answer in the invocation's time");
            } else {
                op = op
                    .error(502, "`upstream_error`: with `KB_BACKEND=bedrock`, the Bedrock knowledge base failed (the log names the error code)")
                    .error(504, "`upstream_timeout`: with `KB_BACKEND=bedrock`, the knowledge base did not answer in the invocation's time");
            }
            op
        };
        let internal = operation(
            format!("{}Internal", route.id),
            "iamSigV4",
            "For the chat-router and the tool-worker, signed with their roles; `x-tool-user` names the user (a malformed value is 400).",
        )
        .parameter(json!({
            "name": "x-tool-user",
            "in": "header",
            "required": false,
            "description": "The user the call is for (signed).",
            "schema": {"type": "string", "maxLength": 256}
        }))
        .build();
        let public = operation(
            route.id.to_owned(),
            "userJwt",
            "Only with the template parameter `PublicToolRoutes=true`: the user is the token's `sub`, limited to `PublicRouteCallsPerMinute` calls per minute.",
        )
        .error(401, "`unauthorized`: a token without `sub` (API Gateway's authorizer refuses a bad token itself, without this envelope)")
        .error(429, "`rate_limited`: the user's calls per minute on this route are used up (`details.limit` is the route)")
        .build();
        out.push((
            format!("/internal{}", route.path),
            item(
                route.function,
                internal,
                "ToolsApiUrl",
                "Tools HTTP API (IAM)",
            ),
        ));
        out.push((
            route.path.to_owned(),
            item(
                route.function,
                public,
                "PublicToolsApiUrl",
                "Public tools HTTP API (JWT)",
            ),
        ));
    }
    out
}

/// A path item served by `function`, with its deployed API and the local stack as servers.
fn item(function: &str, operation: Value, output: &str, api: &str) -> Value {
    json!({
        FUNCTION_KEY: function,
        "servers": [
            {
                "url": format!("http://127.0.0.1:9000/lambda-url/{function}"),
                "description": format!("{function} on the local stack (`make dev`), no authorizer")
            },
            {
                "url": "https://{apiId}.execute-api.{region}.amazonaws.com",
                "description": format!("{api}: stack output `{output}`"),
                "variables": {
                    "apiId": {"default": "your-api-id"},
                    "region": {"default": "us-east-1"}
                }
            }
        ],
        "post": operation
    })
}
