//! `contact_support`: an honest way to a person. It keeps the user's request for the
//! operator (a record in the chats table; the template forwards each new one to the support
//! topic the operator subscribes to) and tells the user what happens next and how to reach
//! support. Nobody joins the chat, and the answer never says someone did.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::json;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::catalog::Label;
use crate::catalog::McpExposure;
use crate::catalog::ToolInfo;
use crate::context::ToolContext;
use crate::deps::ToolDeps;
use crate::typed::Tool;
use shared::Result;
use shared::domain::flight::Locale;
use shared::domain::support::{ContactSupportArgs, SupportRequest};
use shared::domain::tool_call::ToolName;
use shared::domain::tool_result::ToolExecutionResult;
use shared::support::SupportRequests;

/// `contact_support`: records a request for a person and says what happens next.
pub struct ContactSupportTool {
    store: Arc<dyn SupportRequests>,
    /// How users reach support outside the chat (`SUPPORT_CONTACT`), if the operator says.
    contact: Option<String>,
}

#[async_trait]
impl Tool for ContactSupportTool {
    const INFO: ToolInfo = ToolInfo {
        name: ToolName::new("contact_support"),
        label: Label {
            en: "the support request",
            de: "die Support-Anfrage",
        },
        title: Label {
            en: "Contact support",
            de: "Support kontaktieren",
        },
        mcp: McpExposure::NotServed("works only inside a chat"),
    };
    type Args = ContactSupportArgs;
    type Request = ContactSupportArgs;
    type Output = ();

    fn build(deps: &ToolDeps) -> Result<Self> {
        Ok(Self {
            store: deps.support.clone(),
            contact: deps.support_contact.clone(),
        })
    }

    fn prepare(&self, args: ContactSupportArgs, _: &ToolContext) -> Result<ContactSupportArgs> {
        args.validated()
    }

    async fn run(
        &self,
        ctx: &ToolContext,
        args: ContactSupportArgs,
    ) -> Result<ToolExecutionResult> {
        let created_at = OffsetDateTime::now_utc()
            .format(&Rfc3339)
            .map_err(|e| shared::Error::Config(format!("time: {e}")))?;
        let request = SupportRequest {
            id: format!("SR-{}", shared::ids::new_id()),
            owner: ctx.user_id.clone(),
            chat_id: ctx.chat_id.clone(),
            summary: args.summary,
            language: match ctx.locale {
                Locale::De => "de",
                Locale::En => "en",
            }
            .to_owned(),
            created_at,
        };
        self.store.record(&request).await?;
        tracing::info!(reference = %request.id, "support request recorded");
        let message = next_steps(&request.id, self.contact.as_deref(), ctx.locale);
        Ok(ToolExecutionResult::succeeded(message)
            .with_raw(json!({"reference": request.id, "created_at": request.created_at})))
    }
}

/// What the user is told: the reference, that a person reads it outside this chat, and
/// how to reach support; never that someone is here.
fn next_steps(reference: &str, contact: Option<&str>, locale: Locale) -> String {
    match (locale, contact) {
        (Locale::De, Some(contact)) => format!(
            "Deine Anfrage ist beim Support-Team gespeichert (Referenz {reference}). Ein Mensch liest sie und antwortet außerhalb dieses Chats; in diesem Chat bin nur ich, der Assistent. Du erreichst den Support auch direkt: {contact} (nenne die Referenz)."
        ),
        (Locale::De, None) => format!(
            "Deine Anfrage ist beim Support-Team gespeichert (Referenz {reference}). Ein Mensch liest sie und antwortet außerhalb dieses Chats; in diesem Chat bin nur ich, der Assistent. Nenne die Referenz, wenn du den Betreiber dieses Dienstes kontaktierst."
        ),
        (Locale::En, Some(contact)) => format!(
            "Your request is with the support team (reference {reference}). A person reads it and answers outside this chat; in this chat there is only me, the assistant. You can also reach support directly: {contact} (quote the reference)."
        ),
        (Locale::En, None) => format!(
            "Your request is with the support team (reference {reference}). A person reads it and answers outside this chat; in this chat there is only me, the assistant. Quote the reference when you contact the operator of this service."
        ),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::time::{Duration, Instant};

    use shared::domain::session::SessionState;

    use super::*;

    #[derive(Default)]
    struct Kept(Mutex<Vec<SupportRequest>>);

    #[async_trait]
    impl SupportRequests for Kept {
        async fn record(&self, request: &SupportRequest) -> Result<()> {
            if let Ok(mut kept) = self.0.lock() {
                kept.push(request.clone());
            }
            Ok(())
        }
        async fn newest(&self, _: i32) -> Result<Vec<SupportRequest>> {
            Ok(self.0.lock().map(|k| k.clone()).unwrap_or_default())
        }
    }

    fn ctx(locale: Locale) -> ToolContext {
        ToolContext {
            user_id: "u1".into(),
            chat_id: "c1".into(),
            session_state: SessionState::default(),
            memory: Arc::default(),
            today: time::macros::date!(2027 - 01 - 01),
            locale,
            deadline: Instant::now() + Duration::from_secs(5),
            progress: Default::default(),
            trace_header: None,
        }
    }

    #[tokio::test]
    async fn a_request_is_kept_and_the_user_told_what_happens_next_in_their_language() {
        let store = Arc::new(Kept::default());
        for (locale, contact, says) in [
            (
                Locale::En,
                Some("support@example.com"),
                "support@example.com",
            ),
            (Locale::De, None, "Betreiber dieses Dienstes"),
        ] {
            let tool = ContactSupportTool {
                store: store.clone(),
                contact: contact.map(str::to_owned),
            };
            let args = tool
                .prepare(
                    ContactSupportArgs {
                        summary: " I need a refund for my cancelled flight ".into(),
                    },
                    &ctx(locale),
                )
                .unwrap_or_else(|e| panic!("{e}"));
            let result = tool
                .run(&ctx(locale), args)
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            let message = result.message.clone();
            assert!(message.contains(says), "{message}");
            assert!(message.contains("SR-"), "{message}");
            // Never that a person is in the chat.
            for pretence in ["connected you", "is here", "verbunden", "ist jetzt da"] {
                assert!(!message.contains(pretence), "{message}");
            }
        }
        let kept = store.newest(10).await.unwrap_or_default();
        assert_eq!(kept.len(), 2);
        assert_eq!(kept[0].summary, "I need a refund for my cancelled flight");
        assert_eq!(
            (kept[0].owner.as_str(), kept[0].chat_id.as_str()),
            ("u1", "c1")
        );
        assert_eq!(kept[1].language, "de");
    }
}
