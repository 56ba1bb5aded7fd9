//! `create_fare_alert`: keeps a fare alert for the user (a route, a date range, a cabin and
//! a limit in miles and/or cash). It waits for the user's approval (`approval = "always"`
//! in `config/agents.toml`); tool-worker checks kept alerts on a schedule, and the user
//! lists and deletes them with `GET/DELETE /alerts`.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use crate::catalog::Label;
use crate::catalog::McpExposure;
use crate::catalog::ToolInfo;
use crate::context::ToolContext;
use crate::deps::ToolDeps;
use crate::typed::Tool;
use shared::Result;
use shared::alerts::AlertStore;
use shared::domain::alert::{CreateFareAlertArgs, FareAlert};
use shared::domain::flight::{Cabin, Locale};
use shared::domain::tool_call::ToolName;
use shared::domain::tool_result::ToolExecutionResult;

/// `create_fare_alert`: keeps a fare alert once the user approves it.
pub struct CreateFareAlertTool {
    store: Arc<dyn AlertStore>,
}

/// Models write `"business"`; the schema's enum is strict, so normalise before validating
/// instead of spending a repair round on it.
fn normalise_cabin(args: &mut Value) {
    if let Some(cabin) = args.get_mut("cabin")
        && let Some(parsed) = cabin.as_str().and_then(|c| c.parse::<Cabin>().ok())
    {
        *cabin = Value::String(parsed.as_str().to_owned());
    }
}

#[async_trait]
impl Tool for CreateFareAlertTool {
    const INFO: ToolInfo = ToolInfo {
        name: ToolName::new("create_fare_alert"),
        label: Label {
            en: "the fare alert",
            de: "die Preisalarm-Funktion",
        },
        title: Label {
            en: "Fare alert",
            de: "Preisalarm",
        },
        mcp: McpExposure::Served,
    };
    type Args = CreateFareAlertArgs;
    type Request = CreateFareAlertArgs;
    type Output = ();

    fn build(deps: &ToolDeps) -> Result<Self> {
        Ok(Self {
            store: deps.alerts.clone(),
        })
    }

    fn canonical(args: &CreateFareAlertArgs) -> Result<Value> {
        Ok(args.canonical())
    }

    /// Models write `"business"`; the schema's enum is strict.
    fn tidy(args: &mut Value, _: &ToolContext) {
        normalise_cabin(args);
    }

    fn prepare(&self, args: CreateFareAlertArgs, ctx: &ToolContext) -> Result<CreateFareAlertArgs> {
        args.validate(ctx.today)?;
        Ok(args)
    }

    async fn run(
        &self,
        ctx: &ToolContext,
        args: CreateFareAlertArgs,
    ) -> Result<ToolExecutionResult> {
        // Approval may come days later: the range must still lie ahead then.
        args.validate(ctx.today)?;
        let summary = args.summary(ctx.locale);
        // The same alert twice watches nothing more: say the one there is.
        if let Some(same) = self.existing(ctx, &args).await? {
            let message = match ctx.locale {
                Locale::De => format!(
                    "Diesen Preisalarm gibt es schon: {summary}. Es wurde kein zweiter angelegt."
                ),
                Locale::En => {
                    format!("This fare alert exists already: {summary}. No second one was created.")
                }
            };
            return Ok(ToolExecutionResult::succeeded(message)
                .with_raw(serde_json::to_value(&same).unwrap_or_default()));
        }
        let alert = self.store.create(&ctx.user_id, &args).await?;
        let message = match ctx.locale {
            Locale::De => format!(
                "Gespeichert: {summary}. Der Alarm wird regelmäßig geprüft; Treffer und das Löschen findet der Nutzer unter seinen Preisalarmen."
            ),
            Locale::En => format!(
                "Saved: {summary}. The alert is checked regularly; the user finds what it finds, and can delete it, under their fare alerts."
            ),
        };
        Ok(ToolExecutionResult::succeeded(message)
            .with_raw(serde_json::to_value(&alert).unwrap_or_default()))
    }

    fn approval_summary(&self, args: &CreateFareAlertArgs, locale: Locale) -> Option<String> {
        Some(args.summary(locale))
    }

    /// An alert the user has already is only reported: nothing to approve. When the list
    /// cannot be read, the user is asked as usual.
    async fn needs_approval(&self, ctx: &ToolContext, args: &CreateFareAlertArgs) -> bool {
        !matches!(self.existing(ctx, args).await, Ok(Some(_)))
    }
}

impl CreateFareAlertTool {
    /// The user's alert that watches the same as `args`, if they have one.
    async fn existing(
        &self,
        ctx: &ToolContext,
        args: &CreateFareAlertArgs,
    ) -> Result<Option<FareAlert>> {
        let kept = self.store.list(&ctx.user_id).await?;
        Ok(kept.into_iter().find(|alert| args.same_as(alert)))
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use serde_json::json;
    use shared::domain::alert::FareAlert;
    use shared::domain::session::SessionState;
    use std::sync::Mutex;

    use super::*;
    use crate::dyn_tool::DynTool;
    use crate::typed::TypedTool;
    use shared::Error;

    /// Keeps created alerts in memory; the DynamoDB store has its own tests.
    #[derive(Default)]
    struct Kept(Mutex<Vec<(String, FareAlert)>>);

    #[async_trait]
    impl AlertStore for Kept {
        async fn create(&self, owner: &str, args: &CreateFareAlertArgs) -> Result<FareAlert> {
            let alert = FareAlert::new("a1".into(), args, "2027-01-01T00:00:00Z".into());
            if let Ok(mut kept) = self.0.lock() {
                kept.push((owner.to_owned(), alert.clone()));
            }
            Ok(alert)
        }
        async fn list(&self, owner: &str) -> Result<Vec<FareAlert>> {
            Ok(self
                .0
                .lock()
                .map(|kept| {
                    kept.iter()
                        .filter(|(o, _)| o == owner)
                        .map(|(_, a)| a.clone())
                        .collect()
                })
                .unwrap_or_default())
        }
        async fn delete(&self, _: &str, _: &str) -> Result<()> {
            Err(Error::NotFound)
        }
        async fn due(&self, _: usize) -> Result<Vec<shared::alerts::DueAlert>> {
            Ok(Vec::new())
        }
        async fn record_matches(
            &self,
            _: &shared::alerts::DueAlert,
            _: &[shared::domain::alert::AlertMatch],
            _: Option<time::OffsetDateTime>,
        ) -> Result<usize> {
            Ok(0)
        }
    }

    fn ctx(locale: Locale) -> ToolContext {
        ToolContext {
            user_id: "u1".into(),
            chat_id: "c1".into(),
            session_state: SessionState::default(),
            memory: Default::default(),
            today: time::macros::date!(2027 - 02 - 01),
            locale,
            deadline: Instant::now() + Duration::from_secs(2),
            progress: Default::default(),
            trace_header: None,
        }
    }

    fn example() -> Value {
        json!({"origin": "fra", "destination": "jfk", "date_from": "2027-03-01",
               "date_to": "2027-03-15", "cabin": "business", "max_miles": 80000})
    }

    #[tokio::test]
    async fn creates_the_alert_for_the_caller() {
        let store = Arc::new(Kept::default());
        let tool = TypedTool::new(CreateFareAlertTool {
            store: store.clone(),
        })
        .unwrap();
        let request = tool.prepare(example(), &ctx(Locale::En)).unwrap();
        assert_eq!(request["origin"], json!("FRA"));
        assert_eq!(request["cabin"], json!("BUSINESS"));
        let result = tool.execute(&ctx(Locale::En), &request).await.unwrap();
        assert!(result.is_success());
        assert!(
            result
                .message
                .starts_with("Saved: Fare alert FRA → JFK, 1–15 Mar 2027, business"),
            "{}",
            result.message
        );
        assert_eq!(result.raw.unwrap()["id"], json!("a1"));
        assert_eq!(store.0.lock().unwrap()[0].0, "u1");
    }

    #[tokio::test]
    async fn the_same_alert_twice_is_recognised_and_not_created_again() {
        let store = Arc::new(Kept::default());
        let tool = TypedTool::new(CreateFareAlertTool {
            store: store.clone(),
        })
        .unwrap();
        let request = tool.prepare(example(), &ctx(Locale::En)).unwrap();
        // A new alert is put to the user; one they have already is not.
        assert!(tool.needs_approval(&ctx(Locale::En), &request).await);
        tool.execute(&ctx(Locale::En), &request).await.unwrap();
        assert!(!tool.needs_approval(&ctx(Locale::En), &request).await);
        let again = tool.execute(&ctx(Locale::De), &request).await.unwrap();
        assert!(again.is_success());
        assert!(
            again
                .message
                .starts_with("Diesen Preisalarm gibt es schon: Preisalarm FRA → JFK"),
            "{}",
            again.message
        );
        assert_eq!(store.0.lock().unwrap().len(), 1, "no second alert");
        // Another limit is another alert.
        let mut other = example();
        other["max_miles"] = json!(60000);
        let other = tool.prepare(other, &ctx(Locale::En)).unwrap();
        let created = tool.execute(&ctx(Locale::En), &other).await.unwrap();
        assert!(created.message.starts_with("Saved:"), "{}", created.message);
        assert_eq!(store.0.lock().unwrap().len(), 2);
    }

    #[test]
    fn the_approval_summary_is_in_the_users_language() {
        let tool = TypedTool::new(CreateFareAlertTool {
            store: Arc::new(Kept::default()),
        })
        .unwrap();
        let request = tool.prepare(example(), &ctx(Locale::En)).unwrap();
        assert_eq!(
            tool.approval_summary(&request, Locale::En),
            "Fare alert FRA → JFK, 1–15 Mar 2027, business, at most 80,000 miles"
        );
        assert_eq!(
            tool.approval_summary(&request, Locale::De),
            "Preisalarm FRA → JFK, 1.–15. März 2027, business, höchstens 80.000 Meilen"
        );
    }

    #[test]
    fn invalid_input_names_the_field() {
        let tool = TypedTool::new(CreateFareAlertTool {
            store: Arc::new(Kept::default()),
        })
        .unwrap();
        let mut past = example();
        past["date_from"] = json!("2027-01-15");
        let err = tool
            .prepare(past, &ctx(Locale::En))
            .unwrap_err()
            .to_string();
        assert!(err.contains("date_from"), "{err}");
        let mut bad = example();
        bad["origin"] = json!("FRANKFURT");
        let err = tool.prepare(bad, &ctx(Locale::En)).unwrap_err().to_string();
        assert!(err.contains("origin"), "{err}");
        let mut no_limit = example();
        no_limit.as_object_mut().unwrap().remove("max_miles");
        let err = tool
            .prepare(no_limit, &ctx(Locale::En))
            .unwrap_err()
            .to_string();
        assert!(err.contains("max_miles"), "{err}");
    }
}
