//! Runs cases through the real runtime: the agent as chat-router builds it (profiles,
//! system prompts, tool schemas, guards, the model clients), its stores on the local
//! emulators, one turn per case. The turn is stopped once the model's first step has
//! answered, so no tool runs and no second model call is paid for: what is scored is the
//! model's choice and arguments.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use agent::profiles::AgentCatalog;
use agent::runtime::{ToolClients, ToolRuntime, ToolsConfig};
use agent::{Agent, EventSink, StopSignal, TurnEvent, TurnInput, TurnSettings};
use serde_json::Value;
use shared::chats::DynamoChatStore;
use shared::config::Env;
use shared::secrets::{AwsSecretSource, SecretsCache};
use test_support::fake_llm::FakeLlm;
use time::Date;

use crate::case::Case;
use crate::score::{Observed, ObservedCall};
use crate::{Error, Result};

/// The model a run asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Model {
    /// The deployment's settings from the environment: `LLM_PROVIDER`, `OPENAI_BASE_URL`,
    /// `OPENAI_MODEL`, `BEDROCK_MODEL_ID` (and the key in `OPENAI_API_KEY`).
    Configured,
    /// The offline stand-in of the local stack, served in this process.
    StandIn,
}

impl Model {
    /// The configured model when the environment names one (an OpenAI key or base URL, or
    /// `LLM_PROVIDER=bedrock`), else the stand-in.
    pub fn from_env(env: &Env) -> Self {
        let set = |name: &str| env.get(name).is_some_and(|v| !v.trim().is_empty());
        if env.get("LLM_PROVIDER") == Some("bedrock")
            || set("OPENAI_API_KEY")
            || set("OPENAI_BASE_URL")
        {
            Self::Configured
        } else {
            Self::StandIn
        }
    }
}

/// The runtime cases run on.
pub struct Runner {
    agent: Agent,
    catalog: AgentCatalog,
    /// `<provider>:<model>` of the default profile.
    pub model: String,
    /// Whether the stand-in answers.
    pub stand_in: bool,
    /// The day the model is told is today (UTC).
    pub today: Date,
    run_id: String,
    // Serves the stand-in while the runner lives.
    _stand_in: Option<FakeLlm>,
}

/// How long one case's turn may take.
const CASE_DEADLINE: Duration = Duration::from_secs(90);

impl Runner {
    /// A runner on the emulators named by `vars` (`.local/run/env`) and the model `model`.
    pub async fn start(mut vars: Vec<(String, String)>, model: Model) -> Result<Self> {
        let today = time::OffsetDateTime::now_utc().date();
        let stand_in = match model {
            Model::StandIn => {
                let fake = FakeLlm::start_with(
                    0,
                    Box::new(move |request| dev_stack::standin::reply(request, today)),
                )
                .await;
                vars.retain(|(k, _)| {
                    !matches!(
                        k.as_str(),
                        "LLM_PROVIDER" | "OPENAI_API_KEY_SECRET" | "OPENAI_MODEL"
                    )
                });
                vars.push(("OPENAI_BASE_URL".into(), fake.base_url()));
                vars.push(("OPENAI_MODEL".into(), "offline-stand-in".into()));
                Some(fake)
            }
            Model::Configured => None,
        };
        // Tools never run here; function-backed ones get an address nothing listens on.
        vars.retain(|(k, _)| !matches!(k.as_str(), "TOOL_FUNCTION_URLS" | "TOOL_QUEUE_URL"));
        vars.push(("TOOL_FUNCTION_URLS".into(), "http://127.0.0.1:9".into()));
        let env = Env::from_pairs(vars);
        let config = ToolsConfig::from_env(&env).map_err(Error::Runtime)?;
        let catalog = AgentCatalog::from_env(&env).map_err(Error::Runtime)?;
        let sdk = shared::aws::sdk_config().await;
        let secrets_client = shared::aws::secrets_manager(&sdk);
        if stand_in.is_none() {
            store_openai_key(&env, &config, &secrets_client).await?;
        }
        let dynamodb = shared::aws::dynamodb(&sdk);
        let clients = ToolClients {
            dynamodb: dynamodb.clone(),
            sqs: aws_sdk_sqs::Client::new(&sdk),
            secrets: Arc::new(SecretsCache::new(
                Arc::new(AwsSecretSource::new(secrets_client)),
                Duration::from_secs(300),
            )),
            http: shared::upstream::http_client().map_err(Error::Runtime)?,
            llm: Arc::new(llm::Clients::from_sdk(&sdk)),
            signer: None,
            metrics: shared::metrics::Metrics::discard(),
        };
        let runtime = ToolRuntime::new(&config, &catalog, clients, 5).map_err(Error::Runtime)?;
        let settings = TurnSettings {
            max_tool_steps: 4,
            max_tool_calls: 5,
            default_max_tokens: config.llm.max_tokens,
            turns_per_minute: None,
            daily_budget_usd: None,
            tool_budget: Duration::from_secs(15),
            history_max_messages: 30,
            history_token_budget: 3000,
            tool_result_max_chars: 6000,
            models: config.llm.model_defaults(),
            stack_notice: None,
            answer_link_hosts: config.link_hosts.clone(),
        };
        let chats = Arc::new(DynamoChatStore::new(
            dynamodb,
            config.storage.chats_table.clone(),
        ));
        let defaults = config.llm.model_defaults();
        let model = catalog
            .profile(None)
            .map(|p| {
                let models = p.step_models(&defaults);
                format!("{}:{}", models.provider, models.decision)
            })
            .unwrap_or_default();
        let agent = Agent::new(&runtime, chats, Arc::new(catalog.clone()), settings);
        Ok(Self {
            agent,
            catalog,
            model,
            stand_in: stand_in.is_some(),
            today,
            run_id: shared::ids::new_id(),
            _stand_in: stand_in,
        })
    }

    /// Runs `case`'s message as a new chat's first turn and returns what the model's first
    /// step did. `Err` only when the runtime itself failed (a store, a profile the case
    /// names that does not exist); a model's failure is in [`Observed::error`].
    pub async fn run(&self, case: &Case) -> Result<Observed> {
        let profile = self
            .catalog
            .profile(case.agent.as_deref())
            .cloned()
            .ok_or_else(|| {
                Error::Dataset(format!(
                    "case `{}` names agent {:?}, which the profiles do not have",
                    case.id, case.agent
                ))
            })?;
        let stop = StopSignal::default();
        let input = TurnInput {
            user_id: format!("eval-{}-{}", self.run_id, case.id),
            chat_id: None,
            profile,
            agent_named: case.agent.is_some(),
            message: agent::guard::input::UserMessage::new(&case.message),
            deadline: Instant::now() + CASE_DEADLINE,
            timezone: None,
            language: None,
            turn_id: shared::ids::new_id(),
            new_chat_id: shared::ids::new_id(),
            stop: stop.clone(),
            decision: None,
            trace: None,
            begin_with: Vec::new(),
            resumes: false,
            replay: None,
        };
        let turn = self.agent.open(input).await.map_err(Error::Runtime)?;
        let sink = FirstStep {
            stop,
            seen: Mutex::default(),
        };
        self.agent.run_turn(turn, &sink).await;
        Ok(sink
            .seen
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner))
    }
}

/// Collects the first model step and stops the turn once it has answered (before its
/// tools would run).
struct FirstStep {
    stop: StopSignal,
    seen: Mutex<Observed>,
}

impl EventSink for FirstStep {
    fn emit(&self, event: TurnEvent) {
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        match event {
            TurnEvent::Debug(debug) if debug.kind == "llm_choice" => {
                // The model has answered: what it asked for comes next in this step's
                // events; nothing after this step runs.
                self.stop.stop();
            }
            TurnEvent::Debug(debug) if debug.kind == "llm_tool_call_arguments" => {
                seen.calls = calls_of(&debug.payload);
            }
            TurnEvent::AssistantToken(token) if !self.stop.is_stopped() => {
                seen.text.push_str(&token.content);
            }
            TurnEvent::Error(error) if seen.error.is_none() && !self.stop.is_stopped() => {
                seen.error = Some(
                    serde_json::to_value(error.code)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_owned))
                        .unwrap_or_else(|| "error".into()),
                );
            }
            _ => {}
        }
    }

    fn wants_debug(&self) -> bool {
        true
    }
}

fn calls_of(payload: &Value) -> Vec<ObservedCall> {
    payload
        .as_array()
        .map(|calls| {
            calls
                .iter()
                .map(|c| ObservedCall {
                    name: c["name"].as_str().unwrap_or_default().to_owned(),
                    arguments: c["arguments"].as_str().unwrap_or_default().to_owned(),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Puts `OPENAI_API_KEY` into the emulator's secret the runtime reads the key from, as the
/// local stack's provisioning does. The key is never printed.
async fn store_openai_key(
    env: &Env,
    config: &ToolsConfig,
    secrets: &aws_sdk_secretsmanager::Client,
) -> Result<()> {
    let (Some(key), Some(name)) = (env.get("OPENAI_API_KEY"), &config.llm.key_secret) else {
        return Ok(());
    };
    secrets
        .put_secret_value()
        .secret_id(name)
        .secret_string(key)
        .send()
        .await
        .map_err(|e| {
            Error::Runtime(shared::Error::Secret {
                name: name.clone(),
                message: format!("storing OPENAI_API_KEY in the local emulator failed: {e}"),
            })
        })?;
    Ok(())
}
