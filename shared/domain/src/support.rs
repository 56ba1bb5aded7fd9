//! A traveller's request for a person (`contact_support`): what the operator sees, in the
//! chats table and in the notification to the support topic.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Error;

/// The longest summary a request keeps.
pub const MAX_SUMMARY_CHARS: usize = 1000;

/// `contact_support`'s arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContactSupportArgs {
    /// What the user needs a person for, in the user's own words (at most 1000 characters).
    pub summary: String,
}

impl ContactSupportArgs {
    /// The summary trimmed; `Error::Invalid` when it is empty or too long.
    pub fn validated(self) -> Result<Self, Error> {
        let summary = self.summary.trim().to_owned();
        if summary.is_empty() {
            return Err(Error::Invalid("summary must not be empty".into()));
        }
        if summary.chars().count() > MAX_SUMMARY_CHARS {
            return Err(Error::Invalid(format!(
                "summary: at most {MAX_SUMMARY_CHARS} characters"
            )));
        }
        Ok(Self { summary })
    }
}

/// One request for a person, as kept and sent to the operator.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SupportRequest {
    /// Its reference, which the traveller is told (`SR-` and a ULID).
    pub id: String,
    /// Who asked (the token's subject).
    pub owner: String,
    /// The chat it was asked in.
    pub chat_id: String,
    /// What the user needs, in their own words: untrusted text.
    pub summary: String,
    /// The language of the chat (`en`, `de`), to answer in.
    pub language: String,
    /// When it was asked (RFC 3339, UTC).
    pub created_at: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_is_trimmed_and_bounded() {
        let ok = ContactSupportArgs {
            summary: "  my refund  ".into(),
        };
        assert_eq!(
            ok.validated().map(|a| a.summary).ok().as_deref(),
            Some("my refund")
        );
        for bad in ["   ".to_owned(), "x".repeat(MAX_SUMMARY_CHARS + 1)] {
            assert!(ContactSupportArgs { summary: bad }.validated().is_err());
        }
    }
}
