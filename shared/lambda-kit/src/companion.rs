//! Writes that ride along in another store's transaction: a chat turn's record and its turn
//! limiter go into the new chat's creating write, a tool's rate-limit counter into its
//! ledger claim, LLM usage records into the step's chat write. Each is written with the
//! write it rides in or not at all, and costs no request of its own.
//!
//! A companion may carry a condition (the limiter's "below the limit", the turn record's
//! "not begun yet"); when it fails, the whole transaction is canceled and the companion's
//! own error is what the caller gets.

use std::fmt;
use std::sync::Arc;

use aws_sdk_dynamodb::types::TransactWriteItem;

use crate::dynamo::{Item, Transaction};
use domain::Error;

/// What a companion's failed condition means, from the item as it was (when returned).
type Refusal = Arc<dyn Fn(Option<Item>) -> Error + Send + Sync>;

/// One write to make in another write's transaction.
#[derive(Clone)]
pub struct Companion {
    action: TransactWriteItem,
    refusal: Refusal,
    what: &'static str,
}

impl Companion {
    /// `what` names the write in logs; `refusal` turns its failed condition into the error
    /// the caller gets.
    pub fn new(
        what: &'static str,
        action: TransactWriteItem,
        refusal: impl Fn(Option<Item>) -> Error + Send + Sync + 'static,
    ) -> Self {
        Self {
            action,
            refusal: Arc::new(refusal),
            what,
        }
    }

    /// A write without a condition: it cannot be the reason a transaction fails.
    pub fn unconditional(what: &'static str, action: TransactWriteItem) -> Self {
        Self::new(what, action, move |_| Error::Dynamo {
            op: "TransactWriteItems",
            message: format!("{what}: an unconditional write was refused"),
        })
    }

    /// The write, as an action of a transaction.
    pub fn action(&self) -> TransactWriteItem {
        self.action.clone()
    }
}

impl fmt::Debug for Companion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Companion")
            .field("what", &self.what)
            .finish_non_exhaustive()
    }
}

/// The actions of `companions`, to append to a transaction's own.
pub fn actions(companions: &[Companion]) -> impl Iterator<Item = TransactWriteItem> + '_ {
    companions.iter().map(Companion::action)
}

/// The error of the first companion (its actions starting at `offset` in the transaction)
/// whose condition failed, if one did.
pub fn refusal(
    canceled: &mut Transaction,
    offset: usize,
    companions: &[Companion],
) -> Option<Error> {
    companions.iter().enumerate().find_map(|(i, companion)| {
        canceled
            .failed_at(offset + i)
            .then(|| (companion.refusal)(canceled.take_item(offset + i)))
    })
}
