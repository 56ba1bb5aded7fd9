//! The runtime's entry point without HTTP: `Agent::open` + `Agent::run_turn` against DynamoDB
//! Local and the scripted fake LLM, events collected by a plain sink.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agent::profiles::AgentCatalog;
use agent::runtime::{ToolClients, ToolRuntime, ToolsConfig};
use agent::timezone::UserTimeZone;
use agent::{Agent, EventSink, TurnErrorCode, TurnEvent, TurnInput, TurnSettings};
use serde_json::json;
use shared::chats::{ChatStore, DynamoChatStore};
use shared::config::Env;
use shared::domain::chat::Role;
use shared::domain::tool_call::RefusalReason;
use shared::secrets::{AwsSecretSource, SecretsCache};
use test_support::RequestCounter;
use test_support::dynamo_faults::{DynamoFaults, Fault};
use test_support::fake_llm::{FakeLlm, Protocol, Reply};

/// Collects every event.
#[derive(Default)]
struct Recorded(Mutex<Vec<TurnEvent>>);

impl EventSink for Recorded {
    fn emit(&self, event: TurnEvent) {
        if let Ok(mut events) = self.0.lock() {
            events.push(event);
        }
    }
}

impl Recorded {
    fn events(&self) -> Vec<TurnEvent> {
        self.0.lock().map(|e| e.clone()).unwrap_or_default()
    }
}

struct Rig {
    llm: FakeLlm,
    agent: Agent,
    chats: Arc<dyn ChatStore>,
    catalog: AgentCatalog,
    requests: RequestCounter,
}

impl Rig {
    async fn start() -> Self {
        Self::start_with(None).await
    }

    /// A rig whose model is on `llm`'s provider.
    async fn on(llm: Protocol) -> Self {
        Self::start_on(llm, None).await
    }

    /// As [`Rig::start`]; the agent's chat store uses `faults` (DynamoDB errors) when given.
    async fn start_with(faults: Option<DynamoFaults>) -> Self {
        Self::start_on(Protocol::OpenAi, faults).await
    }

    async fn start_on(protocol: Protocol, faults: Option<DynamoFaults>) -> Self {
        let llm = FakeLlm::start().await;
        let mut pairs: Vec<(String, String)> = std::env::vars()
            .filter(|(k, _)| {
                !matches!(
                    k.as_str(),
                    "OPENAI_API_KEY_SECRET" | "TOOL_QUEUE_URL" | "LLM_PROVIDER"
                )
            })
            .collect();
        match protocol {
            Protocol::OpenAi => pairs.push(("OPENAI_BASE_URL".into(), llm.base_url())),
            Protocol::Bedrock => {
                pairs.retain(|(k, _)| !k.starts_with("OPENAI_"));
                pairs.push(("LLM_PROVIDER".into(), "bedrock".into()));
            }
        }
        // No tool is reachable: these turns either need none or never get past admission.
        pairs.push(("TOOL_FUNCTION_URLS".into(), "http://127.0.0.1:9".into()));
        let config = ToolsConfig::from_env(&Env::from_pairs(pairs))
            .unwrap_or_else(|e| panic!("tools config: {e}"));
        let (dynamodb, requests) = test_support::counted_dynamodb().await;
        let secrets = Arc::new(SecretsCache::new(
            Arc::new(AwsSecretSource::new(test_support::secrets_manager().await)),
            Duration::from_secs(60),
        ));
        let catalog = AgentCatalog::built_in().unwrap_or_else(|e| panic!("agents: {e}"));
        let clients = ToolClients {
            dynamodb: dynamodb.clone(),
            sqs: test_support::sqs().await,
            secrets,
            http: shared::upstream::http_client().unwrap_or_else(|e| panic!("http: {e}")),
            llm: std::sync::Arc::new(llm::Clients::new().with_bedrock(
                llm::bedrock::sdk_client_at(&test_support::sdk_config().await, &llm.endpoint_url()),
            )),
            signer: None,
            metrics: shared::metrics::Metrics::discard(),
        };
        let chats: Arc<dyn ChatStore> = Arc::new(DynamoChatStore::new(
            dynamodb,
            config.storage.chats_table.clone(),
        ));
        let agent_chats: Arc<dyn ChatStore> = match faults {
            Some(faults) => {
                let faulty = shared::aws::dynamodb_config(&test_support::sdk_config().await)
                    .interceptor(faults)
                    .build();
                Arc::new(DynamoChatStore::new(
                    aws_sdk_dynamodb::Client::from_conf(faulty),
                    config.storage.chats_table.clone(),
                ))
            }
            None => chats.clone(),
        };
        let runtime = ToolRuntime::new(&config, &catalog, clients, 5)
            .unwrap_or_else(|e| panic!("runtime: {e}"));
        let settings = TurnSettings {
            max_tool_steps: 4,
            max_tool_calls: 5,
            default_max_tokens: 1024,
            turns_per_minute: None,
            daily_budget_usd: None,
            tool_budget: Duration::from_secs(5),
            history_max_messages: 30,
            history_token_budget: 3000,
            tool_result_max_chars: 6000,
            models: config.llm.model_defaults(),
            stack_notice: None,
            answer_link_hosts: vec!["seats.aero".into()],
        };
        let agent = Agent::new(&runtime, agent_chats, Arc::new(catalog.clone()), settings);
        Self {
            llm,
            agent,
            chats,
            catalog,
            requests,
        }
    }

    fn input(&self, user: &str, message: &str) -> TurnInput {
        TurnInput {
            user_id: user.to_owned(),
            chat_id: None,
            profile: self
                .catalog
                .profile(None)
                .cloned()
                .unwrap_or_else(|| panic!("no default profile")),
            agent_named: false,
            message: agent::guard::input::UserMessage::new(message),
            deadline: Instant::now() + Duration::from_secs(20),
            timezone: None,
            language: None,
            turn_id: shared::ids::new_id(),
            new_chat_id: shared::ids::new_id(),
            stop: agent::StopSignal::default(),
            decision: None,
            trace: None,
            begin_with: Vec::new(),
            resumes: false,
            replay: None,
        }
    }

    async fn run(&self, input: TurnInput) -> (String, Vec<TurnEvent>) {
        let turn = self
            .agent
            .open(input)
            .await
            .unwrap_or_else(|e| panic!("open: {e}"));
        let chat_id = turn.chat_id().to_owned();
        let sink = Recorded::default();
        self.agent.run_turn(turn, &sink).await;
        (chat_id, sink.events())
    }
}

/// Event names in order, runs of one name folded.
fn kinds(events: &[TurnEvent]) -> Vec<&'static str> {
    let mut kinds: Vec<&'static str> = events.iter().map(TurnEvent::name).collect();
    kinds.dedup();
    kinds
}

/// Declares each named test body `async fn name(llm: Protocol)` as two tests,
/// `name::openai` and `name::bedrock`: one test body, two fakes.
macro_rules! on_both_providers {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                #[tokio::test]
                async fn openai() {
                    super::$name(super::Protocol::OpenAi).await
                }

                #[tokio::test]
                async fn bedrock() {
                    super::$name(super::Protocol::Bedrock).await
                }
            }
        )*
    };
}

on_both_providers!(
    a_text_turn_streams_in_contract_order_and_writes_the_chat_once,
    invalid_tool_calls_get_one_repair_round_then_an_error_and_an_apology,
);

async fn a_text_turn_streams_in_contract_order_and_writes_the_chat_once(llm: Protocol) {
    let rig = Rig::on(llm).await;
    rig.llm
        .push(Reply::text("Hello! How can I help with your travel plans?"));
    let user = test_support::unique("user");
    let input = rig.input(&user, "Hi there");
    rig.requests.take();
    let (chat_id, events) = rig.run(input).await;
    let requests = rig.requests.take();

    assert_eq!(kinds(&events), ["init", "assistant_token", "final", "done"]);
    let streamed: String = events
        .iter()
        .filter_map(|e| match e {
            TurnEvent::AssistantToken(token) => Some(token.content.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(streamed, "Hello! How can I help with your travel plans?");

    let messages = rig
        .chats
        .recent_messages(&user, &chat_id, 10)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let stored: Vec<(Role, &str)> = messages
        .iter()
        .map(|m| (m.role, m.content.as_str()))
        .collect();
    assert_eq!(
        stored,
        [
            (Role::User, "Hi there"),
            (
                Role::Assistant,
                "Hello! How can I help with your travel plans?"
            )
        ]
    );
    // Create the chat (held by the turn) while reading the user's memory, then one
    // transaction: the turn's messages, the LLM usage record and letting go of the chat.
    assert_eq!(requests, 3, "DynamoDB requests of a new chat's text turn");
}

async fn invalid_tool_calls_get_one_repair_round_then_an_error_and_an_apology(llm: Protocol) {
    let rig = Rig::on(llm).await;
    let bad = json!({"origin": "Frankfurt?", "destination": 7});
    rig.llm
        .push(Reply::tool_call("search_flights", bad.clone()));
    rig.llm.push(Reply::tool_call("search_flights", bad));
    let user = test_support::unique("user");
    let (chat_id, events) = rig.run(rig.input(&user, "Flights please")).await;

    // Each refused call is shown to the client (and audited) before the turn gives up; the
    // apology is streamed before the error.
    assert_eq!(
        kinds(&events),
        ["init", "tool_result", "assistant_token", "error", "done"]
    );
    let refused = events
        .iter()
        .filter(|e| {
            matches!(
                e,
                TurnEvent::ToolResult(result)
                    if result.job_id.is_none()
                        && result.metadata.get("reason") == Some(&serde_json::json!(RefusalReason::InvalidArguments))
            )
        })
        .count();
    assert_eq!(refused, 2, "{events:?}");
    assert!(events.iter().any(|e| matches!(
        e,
        TurnEvent::Error(error) if error.code == TurnErrorCode::InvalidToolCall
    )));
    assert_eq!(
        rig.llm.request_count(),
        2,
        "one repair round, no third call"
    );
    let roles: Vec<Role> = rig
        .chats
        .recent_messages(&user, &chat_id, 20)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .iter()
        .map(|m| m.role)
        .collect();
    assert_eq!(
        roles,
        [
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Assistant,
            Role::Tool,
            Role::Assistant
        ]
    );
}

#[tokio::test]
async fn a_foreign_chat_is_refused_before_any_event() {
    let rig = Rig::start().await;
    let owner = test_support::unique("owner");
    let chat = rig
        .chats
        .create(&owner)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let mut input = rig.input(&test_support::unique("stranger"), "let me in");
    input.chat_id = Some(chat.id);
    assert!(matches!(
        rig.agent.open(input).await,
        Err(shared::Error::NotFound)
    ));
    assert_eq!(rig.llm.request_count(), 0);
}

/// At 22:00 UTC it is already the next morning in Sydney: "today" in the prompt is the
/// Sydney date, a search for the UTC date is refused as in the past, one for the Sydney
/// "tomorrow" is not, and the chat remembers the zone for its next turn.
#[tokio::test]
async fn today_is_the_users_date_in_their_time_zone() {
    let mut rig = Rig::start().await;
    let clock = shared::clock::ManualClock::new(time::macros::datetime!(2027-03-01 22:00 UTC));
    rig.agent = rig.agent.with_clock(Arc::new(clock));
    let search = |date: &str| {
        (
            "search_flights",
            json!({"origin": "FRA", "destination": "SYD", "depart_date": date, "cabin": "BUSINESS"}),
        )
    };
    rig.llm.push(Reply::tool_calls(vec![
        search("2027-03-01"),
        search("2027-03-03"),
    ]));
    rig.llm.push(Reply::text("Here is what I found."));
    let user = test_support::unique("sydney");
    let mut input = rig.input(&user, "Flights to Sydney tomorrow?");
    input.timezone = Some(UserTimeZone::parse("Australia/Sydney").unwrap());
    let (chat_id, events) = rig.run(input).await;
    let system = |request: &serde_json::Value| request["messages"][1]["content"].to_string();
    let requests = rig.llm.requests();
    assert!(
        system(&requests[0]).contains("Today is 2027-03-02."),
        "{}",
        system(&requests[0])
    );
    let refused: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            TurnEvent::ToolResult(result) => result.refusal_message().map(str::to_owned),
            _ => None,
        })
        .collect();
    assert_eq!(
        refused.len(),
        1,
        "only the UTC date is refused: {refused:?}"
    );
    assert!(
        refused[0].contains("2027-03-01 is in the past"),
        "{refused:?}"
    );
    let chat = rig.chats.get(&user, &chat_id).await.unwrap();
    assert_eq!(
        chat.session_state.timezone.as_deref(),
        Some("Australia/Sydney")
    );

    // The next message sends no zone: the remembered one applies.
    rig.llm.push(Reply::text("Anything else?"));
    let mut again = rig.input(&user, "Thanks");
    again.chat_id = Some(chat_id);
    rig.run(again).await;
    let last = rig.llm.requests().last().cloned().unwrap_or_default();
    assert!(
        system(&last).contains("Today is 2027-03-02."),
        "{}",
        system(&last)
    );
}

/// Stored before shown: when the answer cannot be written, the client gets `error` and
/// `done`, never `final`; the failed turn's fallback write keeps the user's message.
#[tokio::test]
async fn an_answer_that_cannot_be_stored_is_never_final() {
    // The answer's write (the step that lets go of the chat) meets one conflict more than
    // the store retries (the SDK retries none of a transaction's); the write after it, which
    // keeps the user's message, gets through.
    let faults = DynamoFaults::start().await;
    faults.fail_matching(
        "TransactWriteItems",
        "REMOVE turn_id",
        Fault::CanceledByConflict,
        shared::MAX_TRANSIENT_ROUNDS as usize + 1,
    );
    let rig = Rig::start_with(Some(faults.clone())).await;
    rig.llm
        .push(Reply::text("An answer that history must not lack."));
    let user = shared::ids::new_id();
    let (chat_id, events) = rig.run(rig.input(&user, "hello")).await;
    assert_eq!(faults.remaining(), 0);
    let names: Vec<&str> = events.iter().map(TurnEvent::name).collect();
    assert!(!names.contains(&"final"), "{names:?}");
    assert_eq!(names[names.len() - 2..], ["error", "done"], "{names:?}");
    let history = rig
        .chats
        .recent_messages(&user, &chat_id, 10)
        .await
        .unwrap();
    assert_eq!(
        history.first().map(|m| m.content.as_str()),
        Some("hello"),
        "the user's message is kept"
    );
}
