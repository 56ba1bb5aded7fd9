//! The router's end-to-end rig: DynamoDB Local and moto (tables, secrets), a scripted fake
//! LLM, and the real seatsaero-search, cash-search and kb-retrieve handlers served over
//! HTTP on local ports, fed by wiremock fakes of their upstreams.
#![allow(dead_code)] // each test binary uses a different part

use lambda_http::tower::Layer as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent::profiles::AgentCatalog;
use agent::runtime::ToolClients;
use chat_router::{Config, Deps};
use http_body_util::BodyExt;
use lambda_http::http::Method;
use lambda_http::{Request, RequestExt};
use serde_json::{Value, json};
use shared::clock::OffsetClock;
use shared::config::Env;
use shared::http::auth::{AuthConfig, DevClaims, mint_hs256};
use shared::metrics::Metrics;
use shared::secrets::{AwsSecretSource, SecretsCache};
use test_support::fake_llm::FakeLlm;
pub use test_support::fake_llm::Protocol;
use test_support::serve::{LocalServer, serve_lambda};
use wiremock::MockServer;

/// The model a rig on Bedrock asks for by default (priced, so costs are recorded).
pub const BEDROCK_MODEL: &str = "amazon.nova-lite-v1:0";

/// Declares each named test body `async fn name(llm: Protocol)` as two tests,
/// `name::openai` and `name::bedrock`: one test body, two fakes.
#[allow(unused_macros)] // each test binary uses a different part
macro_rules! on_both_providers {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                #[tokio::test]
                async fn openai() {
                    super::$name($crate::common::Protocol::OpenAi).await
                }

                #[tokio::test]
                async fn bedrock() {
                    super::$name($crate::common::Protocol::Bedrock).await
                }
            }
        )*
    };
}

pub const ISSUER: &str = "https://auth.test.local/";
pub const AUDIENCE: &str = "chat-router-tests";

/// A flight-search call the fake LLM makes; the fixtures answer any route.
pub fn flight_args() -> Value {
    json!({"origin": "FRA", "destination": "JFK", "depart_date": test_support::future_date(), "cabin": "BUSINESS"})
}

pub async fn secrets() -> Arc<SecretsCache> {
    Arc::new(SecretsCache::new(
        Arc::new(AwsSecretSource::new(test_support::secrets_manager().await)),
        Duration::from_secs(300),
    ))
}

pub fn http() -> reqwest::Client {
    shared::upstream::http_client().unwrap_or_else(|e| panic!("http client: {e}"))
}

/// Upstream fakes and the three tool functions served locally.
pub struct Functions {
    pub seats_upstream: MockServer,
    pub amadeus_upstream: MockServer,
    pub award: LocalServer,
    pub cash: LocalServer,
    pub kb: LocalServer,
    pub kb_table: String,
    /// What the award function emitted (EMF documents).
    pub award_metrics: Metrics,
    /// The `X-Amzn-Trace-Id` of each request the award function received.
    pub award_traces: Arc<std::sync::Mutex<Vec<String>>>,
}

impl Functions {
    pub async fn start() -> Self {
        let seats_upstream = MockServer::start().await;
        test_support::upstreams::mount_seatsaero(&seats_upstream).await;
        let seats_key = test_support::create_secret("router-test/seatsaero", "sk-test").await;
        let seats_config = seatsaero_search::Config::new(&seats_upstream.uri(), seats_key)
            .unwrap_or_else(|e| panic!("seatsaero config: {e}"));
        let award_metrics = Metrics::capture("seatsaero-search");
        let seats_deps =
            seatsaero_search::Deps::new(http(), (*secrets().await).clone(), seats_config)
                .with_metrics(award_metrics.clone());
        let award_traces = Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = award_traces.clone();
        // In the trace layer, as deployed: the request's span joins the turn's trace.
        // A service is Send, not Sync: each request clones it under a lock.
        let award_handler = std::sync::Mutex::new(shared::layers::trace_layer().layer(
            lambda_http::tower::service_fn(move |req: Request| {
                let deps = seats_deps.clone();
                async move {
                    Ok::<_, std::convert::Infallible>(seatsaero_search::handle(&deps, req).await)
                }
            }),
        ));
        let award = serve_lambda(move |req: Request| {
            if let Some(trace) = req.headers().get("x-amzn-trace-id")
                && let (Ok(trace), Ok(mut seen)) = (trace.to_str(), seen.lock())
            {
                seen.push(trace.to_owned());
            }
            let handler = award_handler
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone();
            shared::layers::call(handler, req)
        })
        .await;

        let amadeus_upstream = MockServer::start().await;
        test_support::upstreams::mount_amadeus(&amadeus_upstream).await;
        let credentials = json!({"client_id": "id", "client_secret": "secret"}).to_string();
        let amadeus_env = Env::from_pairs([
            (
                "AMADEUS_CREDENTIALS_SECRET".to_owned(),
                test_support::create_secret("router-test/amadeus", &credentials).await,
            ),
            (
                "AMADEUS_TOKEN_SECRET".to_owned(),
                test_support::create_secret("router-test/amadeus-token", "{}").await,
            ),
            ("AMADEUS_BASE_URL".to_owned(), amadeus_upstream.uri()),
        ]);
        let amadeus_config = cash_search::Config::from_env(&amadeus_env)
            .unwrap_or_else(|e| panic!("amadeus config: {e}"));
        let amadeus_deps =
            cash_search::Deps::new(http(), (*secrets().await).clone(), amadeus_config);
        let cash = serve_lambda(move |req: Request| {
            let deps = amadeus_deps.clone();
            async move { cash_search::handle(&deps, req).await }
        })
        .await;

        // kb-retrieve over an empty knowledge base of its own: every query misses.
        let kb_table = empty_kb_table().await;
        let kb_config = kb_retrieve::Config::new(kb_table.clone(), None);
        let kb_deps = kb_retrieve::Deps::new(
            http(),
            (*secrets().await).clone(),
            Arc::new(shared::kb::DynamoKbStore::new(
                test_support::dynamodb().await,
                kb_table.clone(),
            )),
            kb_config,
        );
        let kb = serve_lambda(move |req: Request| {
            let deps = kb_deps.clone();
            async move { kb_retrieve::handle(&deps, req).await }
        })
        .await;
        Self {
            seats_upstream,
            amadeus_upstream,
            award,
            cash,
            kb,
            kb_table,
            award_metrics,
            award_traces,
        }
    }

    /// Requests the Seats.aero fake received for `/search`.
    pub async fn seats_searches(&self) -> usize {
        self.seats_upstream
            .received_requests()
            .await
            .unwrap_or_default()
            .iter()
            .filter(|r| r.url.path() == "/search")
            .count()
    }
}

/// cash-search with `CASH_PROVIDER=duffel` over the fake Duffel (`test_support::duffel`),
/// served on a port of its own: a rig whose cash-search URL points here prices cash fares
/// with Duffel, as a deployment with `CashFareProvider=duffel` does.
pub struct DuffelCash {
    pub upstream: MockServer,
    pub function: LocalServer,
}

impl DuffelCash {
    pub async fn start() -> Self {
        let upstream = MockServer::start().await;
        test_support::duffel::mount(&upstream).await;
        let token = test_support::create_secret("router-test/duffel", "duffel_test_x").await;
        let env = Env::from_pairs([
            ("CASH_PROVIDER".to_owned(), "duffel".to_owned()),
            ("DUFFEL_TOKEN_SECRET".to_owned(), token),
            ("DUFFEL_BASE_URL".to_owned(), upstream.uri()),
        ]);
        let config =
            cash_search::Config::from_env(&env).unwrap_or_else(|e| panic!("duffel config: {e}"));
        let deps = cash_search::Deps::new(http(), (*secrets().await).clone(), config);
        let function = serve_lambda(move |req: Request| {
            let deps = deps.clone();
            async move { cash_search::handle(&deps, req).await }
        })
        .await;
        Self { upstream, function }
    }

    /// The bodies of the offer requests the fake Duffel received.
    pub async fn offer_requests(&self) -> Vec<Value> {
        self.upstream
            .received_requests()
            .await
            .unwrap_or_default()
            .iter()
            .filter(|r| r.url.path() == "/air/offer_requests")
            .filter_map(|r| serde_json::from_slice(&r.body).ok())
            .collect()
    }
}

async fn empty_kb_table() -> String {
    test_support::create_pk_sk_table(&test_support::dynamodb().await, "router-kb").await
}

/// Everything one test needs: the fakes, the served functions and the router's deps.
pub struct Rig {
    pub llm: FakeLlm,
    pub functions: Functions,
    pub deps: Deps,
    /// What the router emitted (EMF documents).
    pub metrics: Metrics,
    jwt_secret: String,
}

impl Rig {
    /// What the model reads of `user`'s latest tool result in `turn`'s chat: the stored tool
    /// message. For a tool that answers directly it holds what the short answer leaves to
    /// the client's tables (the flight list).
    pub async fn tool_message(&self, user: &str, turn: &Turn) -> String {
        let messages = self
            .deps
            .chats
            .recent_messages(user, &turn.chat_id(), 20)
            .await
            .unwrap_or_else(|e| panic!("reading the chat: {e}"));
        messages
            .iter()
            .rev()
            .find(|m| m.role == shared::domain::chat::Role::Tool)
            .map(|m| m.content.clone())
            .unwrap_or_default()
    }

    /// The text of the first tool message in the LLM's `nth` request (0-based): what the
    /// model read of a tool's result.
    pub fn tool_message_seen(&self, nth: usize) -> String {
        self.llm
            .requests()
            .get(nth)
            .and_then(|r| r["messages"].as_array().cloned())
            .and_then(|m| m.into_iter().find(|m| m["role"] == json!("tool")))
            .and_then(|m| m["content"].as_str().map(str::to_owned))
            .unwrap_or_default()
    }

    /// The tool names the LLM's `nth` request (0-based) offered.
    pub fn offered(&self, nth: usize) -> Vec<String> {
        self.llm.requests()[nth]["tools"]
            .as_array()
            .map(|tools| {
                tools
                    .iter()
                    .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    }

    pub async fn start() -> Self {
        Self::with(|_| {}, None).await
    }

    /// A rig whose LLM speaks `llm`'s protocol: the router runs on that provider.
    pub async fn on(llm: Protocol) -> Self {
        Self::with_on(llm, |_| {}, None).await
    }

    /// `vars` may override router settings; `agents` replaces the built-in catalog.
    pub async fn with(vars: impl FnOnce(&mut Vec<(String, String)>), agents: Option<&str>) -> Self {
        Self::with_dynamodb(vars, agents, test_support::dynamodb().await).await
    }

    /// As [`Rig::with`], on `llm`'s provider.
    pub async fn with_on(
        llm: Protocol,
        vars: impl FnOnce(&mut Vec<(String, String)>),
        agents: Option<&str>,
    ) -> Self {
        let fake = FakeLlm::start().await;
        Self::with_llm_on(llm, fake, vars, agents, test_support::dynamodb().await).await
    }

    /// As [`Rig::with`], with the router's DynamoDB client given (e.g. one that counts).
    pub async fn with_dynamodb(
        vars: impl FnOnce(&mut Vec<(String, String)>),
        agents: Option<&str>,
        dynamodb: aws_sdk_dynamodb::Client,
    ) -> Self {
        Self::with_llm(FakeLlm::start().await, vars, agents, dynamodb).await
    }

    /// As [`Rig::with_dynamodb`], with the model given (e.g. one that answers by a rule).
    pub async fn with_llm(
        llm: FakeLlm,
        vars: impl FnOnce(&mut Vec<(String, String)>),
        agents: Option<&str>,
        dynamodb: aws_sdk_dynamodb::Client,
    ) -> Self {
        Self::with_llm_on(Protocol::OpenAi, llm, vars, agents, dynamodb).await
    }

    /// As [`Rig::with_llm`], the router on `protocol`'s provider. On Bedrock the router
    /// gets no OpenAI setting at all: `LLM_PROVIDER=bedrock` and `BEDROCK_MODEL_ID` only.
    pub async fn with_llm_on(
        protocol: Protocol,
        llm: FakeLlm,
        vars: impl FnOnce(&mut Vec<(String, String)>),
        agents: Option<&str>,
        dynamodb: aws_sdk_dynamodb::Client,
    ) -> Self {
        let functions = Functions::start().await;
        let jwt_secret = test_support::unique("jwt-secret");
        let jwt_secret_name = test_support::create_secret("router-test/jwt", &jwt_secret).await;
        let mut pairs: Vec<(String, String)> = std::env::vars().collect();
        pairs.extend(
            [
                ("OPENAI_BASE_URL", llm.base_url()),
                ("OPENAI_MODEL", "gpt-4o-mini".to_owned()),
                (
                    "TOOL_FUNCTION_URLS",
                    // The three functions at their fakes; any other nowhere.
                    format!(
                        "http://127.0.0.1:9,seatsaero-search={},cash-search={},kb-retrieve={}",
                        functions.award.url(""),
                        functions.cash.url(""),
                        functions.kb.url("")
                    ),
                ),
                ("JWT_SECRET_NAME", jwt_secret_name),
                ("JWT_ISSUER", ISSUER.to_owned()),
                ("JWT_AUDIENCE", AUDIENCE.to_owned()),
                ("TURN_TIMEOUT_SECS", "30".to_owned()),
                // As on the local stack; the privilege test turns it off.
                ("DEBUG_FOR_EVERYONE", "true".to_owned()),
            ]
            .map(|(k, v)| (k.to_owned(), v)),
        );
        // No tool queue unless a test brings its own (see `Rig::with_queues`).
        pairs.retain(|(k, _)| {
            !matches!(
                k.as_str(),
                "OPENAI_API_KEY_SECRET"
                    | "JWT_JWKS_URL"
                    | "TOOL_QUEUE_URL"
                    | "TOOL_DLQ_URL"
                    | "LLM_PROVIDER"
                    | "BEDROCK_MODEL_ID"
            )
        });
        if protocol == Protocol::Bedrock {
            pairs.retain(|(k, _)| !k.starts_with("OPENAI_"));
            pairs.push(("LLM_PROVIDER".into(), "bedrock".into()));
            pairs.push(("BEDROCK_MODEL_ID".into(), BEDROCK_MODEL.into()));
        }
        vars(&mut pairs);
        let env = Env::from_pairs(pairs);
        let config = Config::from_env(&env).unwrap_or_else(|e| panic!("router config: {e}"));
        let agents = match agents {
            Some(text) => AgentCatalog::from_toml(text, "test agents"),
            None => AgentCatalog::built_in(),
        }
        .unwrap_or_else(|e| panic!("agents: {e}"));
        let auth = AuthConfig::from_env(&env).unwrap_or_else(|e| panic!("auth config: {e}"));
        let metrics = Metrics::capture("chat-router");
        let clients = ToolClients {
            dynamodb,
            sqs: test_support::sqs().await,
            secrets: secrets().await,
            http: http(),
            llm: Arc::new(
                llm::Clients::new().with_bedrock(llm::bedrock::sdk_client_at(
                    &test_support::sdk_config().await,
                    &llm.endpoint_url(),
                )),
            ),
            // Signed as deployed: the functions admit only IAM-authorised calls.
            signer: agent::tools::SigV4Signer::from_sdk_config(&test_support::sdk_config().await),
            metrics: metrics.clone(),
        };
        let mut deps =
            Deps::new(config, agents, auth, clients).unwrap_or_else(|e| panic!("deps: {e}"));
        // "Today" is the tests' (`TEST_CLOCK_OFFSET_DAYS` moves it): past-date checks run
        // against the same day the tests' dates are derived from.
        let agent = Arc::try_unwrap(deps.agent).unwrap_or_else(|_| panic!("agent is shared"));
        deps.agent =
            Arc::new(agent.with_clock(Arc::new(OffsetClock::new(test_support::clock::offset()))));
        Self {
            llm,
            functions,
            deps,
            metrics,
            jwt_secret,
        }
    }

    /// The JWT signing secret the router's secrets cache holds.
    pub fn jwt_secret(&self) -> &str {
        &self.jwt_secret
    }

    /// A valid token for `user` (one hour).
    pub fn token(&self, user: &str) -> String {
        self.token_with(user, ISSUER, AUDIENCE, 3600)
    }

    pub fn token_with(&self, user: &str, issuer: &str, audience: &str, expires_in: i64) -> String {
        let now = time::OffsetDateTime::now_utc().unix_timestamp();
        self.mint(&DevClaims {
            sub: user.to_owned(),
            iss: issuer.to_owned(),
            aud: audience.to_owned(),
            exp: now + expires_in,
            iat: now,
            groups: Vec::new(),
        })
    }

    /// A valid token for `user` in the Cognito group `group`.
    pub fn token_in_group(&self, user: &str, group: &str) -> String {
        let mut claims = DevClaims::new(user, ISSUER, AUDIENCE, Duration::from_secs(3600));
        claims.groups = vec![group.to_owned()];
        self.mint(&claims)
    }

    fn mint(&self, claims: &DevClaims) -> String {
        mint_hs256(&self.jwt_secret, claims).unwrap_or_else(|e| panic!("mint: {e}"))
    }

    /// `POST /chat` through the handler; reads the whole stream.
    pub async fn chat(&self, token: Option<&str>, body: Value) -> Turn {
        let started = Instant::now();
        let response = chat_router::handler::handle(&self.deps, post_chat(token, &body)).await;
        Turn::read(response, started).await
    }

    /// `POST /chat` with an `Idempotency-Key`.
    pub async fn chat_keyed(&self, token: &str, key: &str, body: Value) -> Turn {
        let mut req = post_chat(Some(token), &body);
        req.headers_mut().insert(
            "idempotency-key",
            key.parse().unwrap_or_else(|e| panic!("key: {e}")),
        );
        self.send(req).await
    }

    /// Any request through the handler; reads the whole response.
    pub async fn send(&self, req: Request) -> Turn {
        let started = Instant::now();
        Turn::read(chat_router::handler::handle(&self.deps, req).await, started).await
    }

    /// `GET …/turns/{turn_id}/events`, resuming after `last_event_id` when given.
    pub async fn resume(
        &self,
        token: &str,
        chat_id: &str,
        turn_id: &str,
        last_event_id: Option<u64>,
    ) -> Turn {
        let mut builder = lambda_http::http::Request::builder()
            .method(Method::GET)
            .uri(format!("/chats/{chat_id}/turns/{turn_id}/events"))
            .header("authorization", format!("Bearer {token}"));
        if let Some(id) = last_event_id {
            builder = builder.header("last-event-id", id.to_string());
        }
        let req = builder
            .body(lambda_http::Body::Empty)
            .unwrap_or_else(|e| panic!("request: {e}"));
        self.send(req).await
    }

    /// The audit record of `turn`'s first tool call, read through the router.
    pub async fn first_call_record(&self, token: &str, turn: &Turn) -> Value {
        let job = turn.first("tool_started")["job_id"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let path = format!("/chats/{}/tool-calls/{job}", turn.chat_id());
        let (status, record) = self.get(token, &path).await;
        assert_eq!(status, 200, "{record}");
        record
    }

    pub async fn get(&self, token: &str, path: &str) -> (u16, Value) {
        self.call(Method::GET, token, path).await
    }

    /// `DELETE` through the handler.
    pub async fn delete(&self, token: &str, path: &str) -> (u16, Value) {
        self.call(Method::DELETE, token, path).await
    }

    /// `PATCH` with a JSON body through the handler.
    pub async fn patch(&self, token: &str, path: &str, body: &Value) -> (u16, Value) {
        let req = lambda_http::http::Request::builder()
            .method(Method::PATCH)
            .uri(path)
            .header("authorization", format!("Bearer {token}"))
            .header("content-type", "application/json")
            .body(lambda_http::Body::Text(body.to_string()))
            .unwrap_or_else(|e| panic!("request: {e}"));
        test_support::json_response(chat_router::handler::handle(&self.deps, req).await).await
    }

    /// A bodiless `POST` (e.g. cancel) through the handler.
    pub async fn post(&self, token: &str, path: &str) -> (u16, Value) {
        self.call(Method::POST, token, path).await
    }

    async fn call(&self, method: Method, token: &str, path: &str) -> (u16, Value) {
        let req = lambda_http::http::Request::builder()
            .method(method)
            .uri(path)
            .header("authorization", format!("Bearer {token}"))
            .body(lambda_http::Body::Empty)
            .unwrap_or_else(|e| panic!("request: {e}"));
        // As Lambda does: the query string also arrives parsed (no percent-decoding here).
        let query: std::collections::HashMap<String, String> = path
            .split_once('?')
            .map(|(_, q)| q.split('&'))
            .into_iter()
            .flatten()
            .filter_map(|pair| pair.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        let req = req.with_query_string_parameters(query);
        test_support::json_response(chat_router::handler::handle(&self.deps, req).await).await
    }
}

pub fn post_chat(token: Option<&str>, body: &Value) -> Request {
    let mut builder = lambda_http::http::Request::builder()
        .method(Method::POST)
        .uri("/chat")
        .header("content-type", "application/json");
    if let Some(token) = token {
        builder = builder.header("authorization", format!("Bearer {token}"));
    }
    builder
        .body(lambda_http::Body::Text(body.to_string()))
        .unwrap_or_else(|e| panic!("request: {e}"))
}

/// One SSE event as received, with its arrival time since the request.
#[derive(Debug, Clone)]
pub struct Event {
    /// The SSE `id:` (the event's sequence in its turn), if it had one.
    pub id: Option<u64>,
    pub name: String,
    pub data: Value,
    pub at: Duration,
}

/// A finished `POST /chat`: the status, and either the events or the JSON error body.
#[derive(Debug)]
pub struct Turn {
    pub status: u16,
    pub events: Vec<Event>,
    pub json: Value,
    /// The `Retry-After` header, in seconds.
    pub retry_after: Option<u64>,
}

impl Turn {
    pub async fn read(
        response: lambda_http::http::Response<lambda_http::lambda_runtime::streaming::Body>,
        started: Instant,
    ) -> Self {
        Self::read_until(response, started, |_| false).await
    }

    /// As [`Turn::read`], but hangs up (drops the body) right after an event for which
    /// `hang_up` is true: a client whose connection dropped.
    pub async fn read_until(
        response: lambda_http::http::Response<lambda_http::lambda_runtime::streaming::Body>,
        started: Instant,
        hang_up: impl Fn(&Event) -> bool,
    ) -> Self {
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok());
        let is_stream = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        let mut body = response.into_body();
        let mut buffer = String::new();
        let mut events = Vec::new();
        while let Some(frame) = body.frame().await {
            let Ok(frame) = frame else { break };
            if let Ok(data) = frame.into_data() {
                buffer.push_str(&String::from_utf8_lossy(&data));
            }
            if is_stream {
                while let Some(end) = buffer.find("\n\n") {
                    let block: String = buffer.drain(..end + 2).collect();
                    let event = parse_event(&block, started.elapsed());
                    let stop = hang_up(&event);
                    events.push(event);
                    if stop {
                        return Self {
                            status,
                            events,
                            json: Value::Null,
                            retry_after,
                        };
                    }
                }
            }
        }
        let json = if is_stream {
            Value::Null
        } else {
            serde_json::from_str(&buffer).unwrap_or(Value::Null)
        };
        Self {
            status,
            events,
            json,
            retry_after,
        }
    }

    pub fn names(&self) -> Vec<&str> {
        self.events.iter().map(|e| e.name.as_str()).collect()
    }

    /// Event names with consecutive `assistant_token`s collapsed into one, without
    /// `tool_progress` (whether a search reports progress depends on which provider the
    /// fakes answer first; `progress_arrives_before_the_slow_provider_finishes` tests it).
    pub fn shape(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for name in self.names() {
            if name == "tool_progress" {
                continue;
            }
            if !(name == "assistant_token" && out.last() == Some(&"assistant_token")) {
                out.push(name);
            }
        }
        out
    }

    pub fn first(&self, name: &str) -> &Value {
        self.events
            .iter()
            .find(|e| e.name == name)
            .map(|e| &e.data)
            .unwrap_or_else(|| panic!("no {name} event in {:?}", self.names()))
    }

    pub fn all(&self, name: &str) -> Vec<&Value> {
        self.events
            .iter()
            .filter(|e| e.name == name)
            .map(|e| &e.data)
            .collect()
    }

    pub fn chat_id(&self) -> String {
        self.first("init")["chat_id"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    pub fn text(&self) -> String {
        self.all("assistant_token")
            .iter()
            .filter_map(|d| d["content"].as_str())
            .collect()
    }
}

fn parse_event(block: &str, at: Duration) -> Event {
    let mut name = String::new();
    let mut data = String::new();
    let mut id = None;
    for line in block.lines() {
        if let Some(i) = line.strip_prefix("id: ") {
            id = i.parse().ok();
        } else if let Some(n) = line.strip_prefix("event: ") {
            name = n.to_owned();
        } else if let Some(d) = line.strip_prefix("data: ") {
            data.push_str(d);
        }
    }
    Event {
        id,
        name,
        data: serde_json::from_str(&data).unwrap_or(Value::Null),
        at,
    }
}

/// Waits until `check` holds, up to `limit`.
pub async fn eventually<F, Fut>(limit: Duration, mut check: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let until = Instant::now() + limit;
    while Instant::now() < until {
        if check().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

/// Points `function` (`kb-retrieve`) of a rig's environment at `base` instead of the rig's
/// fake: a later entry of `TOOL_FUNCTION_URLS` replaces an earlier one.
pub fn route_function(vars: &mut [(String, String)], function: &str, base: &str) {
    if let Some((_, urls)) = vars.iter_mut().find(|(k, _)| k == "TOOL_FUNCTION_URLS") {
        urls.push_str(&format!(",{function}={base}"));
    }
}
