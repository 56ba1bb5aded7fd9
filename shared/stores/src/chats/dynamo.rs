//! [`ChatStore`] on DynamoDB: `pk = CHAT#<chat>`, `sk = META` for the chat (owner, session
//! state, version, message count) and `sk = MSG#S<seq>` for each message, numbered by the
//! chat in the write that stores it.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::types::{
    Put, ReturnValue, ReturnValuesOnConditionCheckFailure, TransactWriteItem, Update,
};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use super::{ChatStore, TurnLease};
use crate::{Error, Result};
use domain::chat::{Chat, ChatSummary, Message, MessageToolCall, NewMessage, Role, TITLE_CHARS};
use domain::clock::{Clock, SystemClock};
use domain::flight::Locale;
use domain::ids::{monotonic_id, new_id};
use domain::session::{SessionState, SessionStatePatch};
use domain::ui::UiElement;
use lambda_kit::companion::{self, Companion};
use lambda_kit::dynamo::{
    ConditionFailure, Cursor, Item, MAX_TRANSIENT_ROUNDS, Page, Transaction, backoff,
    delete_partition, from_item, invalid_action, is_transient, n, page, rfc3339, s, sdk_error,
    sortable_time, to_av, to_item, transact,
};

/// The index of each owner's chats by last activity (template.yaml, `ChatsTable`).
const OWNER_INDEX: &str = "by_owner";

/// Enough for dozens of writers patching one chat at once (each round one of them wins).
const MAX_PATCH_ROUNDS: u32 = 64;
/// DynamoDB allows 100 actions per transaction; one is the owner check.
const MESSAGES_PER_TRANSACTION: usize = 99;

/// [`ChatStore`](super::ChatStore) on the chats table.
#[derive(Clone)]
pub struct DynamoChatStore {
    client: Client,
    table: String,
    clock: Arc<dyn Clock>,
    /// A chat expires this long after its last write, a message this long after its own.
    retention: time::Duration,
}

impl DynamoChatStore {
    /// A store on `table` (the chats table), with the system clock and the default retention.
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self::with_clock(client, table, Arc::new(SystemClock))
    }

    /// The same, reading the time from `clock` (tests move it).
    pub fn with_clock(client: Client, table: impl Into<String>, clock: Arc<dyn Clock>) -> Self {
        Self {
            client,
            table: table.into(),
            clock,
            retention: lambda_kit::config::RetentionConfig::default().chats,
        }
    }

    /// Chats and messages are deleted by TTL this long after they were last written.
    pub fn with_retention(mut self, retention: time::Duration) -> Self {
        self.retention = retention;
        self
    }

    /// The TTL of an item written `now` (epoch seconds).
    fn expiry(&self, now: OffsetDateTime) -> i64 {
        (now + self.retention).unix_timestamp()
    }

    fn meta_key(chat_id: &str) -> Item {
        Item::from([
            ("pk".to_owned(), s(format!("CHAT#{chat_id}"))),
            ("sk".to_owned(), s("META")),
        ])
    }

    async fn read_meta(&self, chat_id: &str) -> Result<Option<ChatItem>> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(Self::meta_key(chat_id)))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| sdk_error("GetItem", e))?;
        out.item.map(from_item).transpose()
    }

    async fn owned(&self, owner_id: &str, chat_id: &str) -> Result<ChatItem> {
        match self.read_meta(chat_id).await? {
            Some(item) if item.owner_id == owner_id => Ok(item),
            _ => Err(Error::NotFound),
        }
    }

    /// The last `limit` messages of a chat, oldest first (no owner check: callers make it).
    async fn query_messages(&self, chat_id: &str, limit: u32) -> Result<Vec<Message>> {
        let page = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression("pk = :pk AND begins_with(sk, :msg)")
            .expression_attribute_values(":pk", s(format!("CHAT#{chat_id}")))
            .expression_attribute_values(":msg", s("MSG#"))
            .scan_index_forward(false)
            .consistent_read(true)
            .limit(i32::try_from(limit.clamp(1, 1000)).unwrap_or(1000))
            .send()
            .await
            .map_err(|e| sdk_error("Query", e))?;
        let mut messages = page
            .items
            .unwrap_or_default()
            .into_iter()
            .map(|item| from_item::<MessageItem>(item).map(Message::from))
            .collect::<Result<Vec<_>>>()?;
        messages.reverse();
        Ok(messages)
    }

    /// Items for `messages`, numbered on from the chat's message count, in the given order.
    fn message_items(&self, chat: &Chat, messages: &[NewMessage]) -> Vec<MessageItem> {
        let now = self.clock.now();
        (chat.message_count..)
            .zip(messages.iter().cloned())
            .map(|(seq, m)| MessageItem {
                pk: format!("CHAT#{}", chat.id),
                sk: message_sort_key(seq),
                chat_id: chat.id.clone(),
                owner_id: chat.owner_id.clone(),
                message_id: monotonic_id(),
                seq: Some(seq),
                role: m.role,
                content: m.content,
                tool_calls: m.tool_calls,
                tool_call_id: m.tool_call_id,
                ledger_call_id: m.ledger_call_id,
                background: m.background,
                ui: m.ui,
                stopped: m.stopped,
                language: m.language,
                created_at: now,
                ttl: Some(self.expiry(now)),
            })
            .collect()
    }

    /// The chat item's part of a step's write: the next message count, the state (when the
    /// step has a patch) and the end of the lease (when `release` names the holding turn),
    /// conditioned on the owner, the message count and version read, and the lease.
    fn step_update(
        &self,
        current: &Chat,
        appended: u64,
        state: Option<&SessionState>,
        release: Option<&str>,
        title: Option<&str>,
        now: OffsetDateTime,
    ) -> Result<Update> {
        // The chat list's index: every step moves the chat to the top of its owner's list.
        let mut set = vec![
            "message_seq = :count",
            "#ttl = :ttl",
            "owner_chats = :owner",
            "active_at = :active",
        ];
        // A chat from before message numbering has no count yet; its first numbered write
        // sets it.
        let mut condition = vec![
            "owner_id = :owner",
            "(message_seq = :seq OR attribute_not_exists(message_seq))",
        ];
        let mut builder = Update::builder()
            .table_name(&self.table)
            .set_key(Some(Self::meta_key(&current.id)))
            .expression_attribute_values(":owner", s(&current.owner_id))
            .expression_attribute_values(":seq", n(current.message_count))
            .expression_attribute_values(":count", n(current.message_count + appended))
            .expression_attribute_names("#ttl", "ttl")
            .expression_attribute_values(":ttl", n(self.expiry(now)))
            .expression_attribute_values(":active", s(sortable_time(now)));
        if let Some(title) = title {
            set.push("title = if_not_exists(title, :title)");
            builder = builder.expression_attribute_values(":title", s(title));
        }
        if let Some(state) = state {
            set.extend([
                "session_state = :state",
                "version = :next",
                "updated_at = :now",
            ]);
            condition.push("version = :version");
            builder = builder
                .expression_attribute_values(":state", to_av(state)?)
                .expression_attribute_values(":next", n(current.version + 1))
                .expression_attribute_values(":now", rfc3339(now))
                .expression_attribute_values(":version", n(current.version));
        }
        let mut expression = format!("SET {}", set.join(", "));
        if let Some(turn_id) = release {
            expression.push_str(" REMOVE turn_id, turn_until");
            condition.push("turn_id = :turn");
            builder = builder.expression_attribute_values(":turn", s(turn_id));
        }
        builder
            .update_expression(expression)
            .condition_expression(condition.join(" AND "))
            .build()
            .map_err(invalid_action)
    }

    /// Appends `messages` after the chat's last one and merges `patch`, in one transaction
    /// per 99 messages (the patch, the release and the companions `with` go with the last). A writer that read an
    /// older count or version reads the chat again and numbers and patches anew, so no
    /// message or patch is lost or misplaced. If `release`'s lease was taken over, the step
    /// is written alone and the other turn's lease is left alone.
    async fn write_step(
        &self,
        chat: &Chat,
        messages: &[NewMessage],
        patch: &SessionStatePatch,
        release: Option<&str>,
        with: &[Companion],
    ) -> Result<(Chat, Vec<Message>)> {
        let room = MESSAGES_PER_TRANSACTION.saturating_sub(with.len()).max(1);
        let mut chunks: Vec<&[NewMessage]> = messages.chunks(room).collect();
        let last = chunks.pop().unwrap_or_default();
        let none = SessionStatePatch::default();
        let mut current = chat.clone();
        let mut written = Vec::with_capacity(messages.len());
        for chunk in chunks {
            let step = Step::new(chunk, &none, None);
            current = self.write_chunk(current, step, &[], &mut written).await?;
        }
        let step = Step::new(last, patch, release);
        let current = self.write_chunk(current, step, with, &mut written).await?;
        Ok((current, written))
    }

    async fn write_chunk(
        &self,
        mut current: Chat,
        step: Step<'_>,
        with: &[Companion],
        written: &mut Vec<Message>,
    ) -> Result<Chat> {
        let Step {
            messages,
            patch,
            mut release,
        } = step;
        let chat_id = current.id.clone();
        for round in 0..MAX_PATCH_ROUNDS {
            let mut state = current.session_state.clone();
            state.apply(patch);
            let now = self.clock.now();
            let items = self.message_items(&current, messages);
            let appended = items.len() as u64;
            let state = (!patch.is_empty()).then_some(state);
            let title = title_of(messages);
            let update = self.step_update(
                &current,
                appended,
                state.as_ref(),
                release,
                title.as_deref(),
                now,
            )?;
            let actions = || {
                let mut actions = vec![TransactWriteItem::builder().update(update.clone()).build()];
                actions.extend(puts(&self.table, &items)?);
                Ok(actions)
            };
            match self.transact(actions, with).await? {
                Transacted::Written => {
                    written.extend(items.into_iter().map(Message::from));
                    current.message_count += appended;
                    if let Some(state) = state {
                        current.session_state = state;
                        current.version += 1;
                        current.updated_at = now;
                    }
                    return Ok(current);
                }
                // Another writer moved the count or version on (or the chat is not the
                // owner's): read it again and number and patch on top.
                Transacted::ConditionFailed => {
                    let item = self.owned(&current.owner_id, &chat_id).await?;
                    if release.is_some() && item.turn_id.as_deref() != release {
                        release = None;
                    }
                    current = item.into();
                    backoff(round).await;
                }
            }
        }
        Err(Error::Contention(format!(
            "messages and session state of chat {chat_id}"
        )))
    }

    /// A new chat item, held by `lease` when given; with companions, in one transaction
    /// with them.
    async fn create_item(
        &self,
        owner_id: &str,
        chat_id: &str,
        lease: Option<&TurnLease>,
        with: &[Companion],
    ) -> Result<Chat> {
        let now = self.clock.now();
        let chat_id = chat_id.to_owned();
        let item = ChatItem {
            pk: format!("CHAT#{chat_id}"),
            sk: "META".into(),
            chat_id,
            owner_id: owner_id.to_owned(),
            session_state: SessionState::default(),
            version: 0,
            message_seq: Some(0),
            created_at: now,
            updated_at: now,
            turn_id: lease.map(|l| l.turn_id.clone()),
            turn_until: lease.map(|l| sortable_time(l.until)),
            ttl: Some(self.expiry(now)),
            owner_chats: Some(owner_id.to_owned()),
            active_at: Some(sortable_time(now)),
            title: None,
        };
        let taken = || Error::Contention(format!("chat id {} is taken", item.chat_id));
        let put = Put::builder()
            .table_name(&self.table)
            .set_item(Some(to_item(&item)?))
            .condition_expression("attribute_not_exists(pk)")
            .build()
            .map_err(invalid_action)?;
        if !with.is_empty() {
            let action = || Ok(vec![TransactWriteItem::builder().put(put.clone()).build()]);
            return match self.transact(action, with).await? {
                Transacted::Written => Ok(item.into()),
                Transacted::ConditionFailed => Err(taken()),
            };
        }
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(put.item().clone()))
            .condition_expression("attribute_not_exists(pk)")
            .send()
            .await
            .map_err(|e| match e.condition_failed_item() {
                Some(_) => taken(),
                None => sdk_error("PutItem", e),
            })?;
        Ok(item.into())
    }

    /// Takes the chat for `lease`'s turn: a conditional update that also reads it (the
    /// chat as written comes back), so holding costs no extra request.
    async fn take(&self, owner_id: &str, chat_id: &str, lease: &TurnLease) -> Result<Chat> {
        let now = sortable_time(self.clock.now());
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(Self::meta_key(chat_id)))
            .update_expression("SET turn_id = :turn, turn_until = :until, #ttl = :ttl")
            .expression_attribute_names("#ttl", "ttl")
            .expression_attribute_values(":ttl", n(self.expiry(self.clock.now())))
            // The turn holding the chat may take it again: a request that took the turn over
            // from its dead host.
            .condition_expression(
                "owner_id = :owner AND (attribute_not_exists(turn_id) OR turn_until < :now OR turn_id = :turn)",
            )
            .expression_attribute_values(":turn", s(&lease.turn_id))
            .expression_attribute_values(":until", s(sortable_time(lease.until)))
            .expression_attribute_values(":owner", s(owner_id))
            .expression_attribute_values(":now", s(now))
            .return_values(ReturnValue::AllNew)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        match result {
            Ok(out) => from_item::<ChatItem>(out.attributes.unwrap_or_default()).map(Chat::from),
            Err(err) => match err.condition_failed_item() {
                Some(Some(item)) => {
                    let held: ChatItem = from_item(item)?;
                    if held.owner_id != owner_id {
                        return Err(Error::NotFound);
                    }
                    Err(Error::TurnInProgress {
                        turn_id: held.turn_id.unwrap_or_default(),
                    })
                }
                // No such chat: the owner condition failed on a missing item.
                Some(None) => Err(Error::NotFound),
                None => Err(sdk_error("UpdateItem", err)),
            },
        }
    }

    /// Runs a transaction whose first action is the chat item's condition, with `with`
    /// appended (conflicts and throttling are retried by [`transact`]). A companion's failed
    /// condition is its own error.
    async fn transact(
        &self,
        actions: impl Fn() -> Result<Vec<TransactWriteItem>>,
        with: &[Companion],
    ) -> Result<Transacted> {
        // Where the companions' actions begin, for reading their cancellation reasons.
        let offset = AtomicUsize::new(0);
        let all = || {
            let mut all = actions()?;
            offset.store(all.len(), Ordering::Relaxed);
            all.extend(companion::actions(with));
            Ok(all)
        };
        match transact(&self.client, all).await? {
            Transaction::Written => Ok(Transacted::Written),
            mut canceled => {
                match companion::refusal(&mut canceled, offset.load(Ordering::Relaxed), with) {
                    Some(refused) => Err(refused),
                    None if canceled.failed_at(0) => Ok(Transacted::ConditionFailed),
                    None => Err(canceled.unexpected()),
                }
            }
        }
    }
}

/// One chat write's part of a step: its messages, its state patch, and the lease to let go.
struct Step<'a> {
    messages: &'a [NewMessage],
    patch: &'a SessionStatePatch,
    release: Option<&'a str>,
}

impl<'a> Step<'a> {
    fn new(
        messages: &'a [NewMessage],
        patch: &'a SessionStatePatch,
        release: Option<&'a str>,
    ) -> Self {
        Self {
            messages,
            patch,
            release,
        }
    }
}

/// How a transaction ended, short of an error.
enum Transacted {
    Written,
    /// The first action's condition (owner, version) did not hold.
    ConditionFailed,
}

/// The sort key of a chat's `seq`-th message. Zero-padded so text order is number order;
/// the `S` sorts after any ULID (they start with 0–7), the keys of messages written before
/// messages were numbered, so those keep their place ahead of the numbered ones.
fn message_sort_key(seq: u64) -> String {
    format!("MSG#S{seq:012}")
}

/// `Put` actions for message items.
fn puts(table: &str, items: &[MessageItem]) -> Result<Vec<TransactWriteItem>> {
    items
        .iter()
        .map(|item| {
            let put = Put::builder()
                .table_name(table)
                .set_item(Some(to_item(item)?))
                .build()
                .map_err(invalid_action)?;
            Ok(TransactWriteItem::builder().put(put).build())
        })
        .collect()
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct ChatItem {
    pk: String,
    sk: String,
    chat_id: String,
    owner_id: String,
    #[serde(default)]
    session_state: SessionState,
    version: u64,
    /// How many messages the chat has (absent on chats from before numbering).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    message_seq: Option<u64>,
    #[serde(with = "time::serde::rfc3339")]
    created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    updated_at: OffsetDateTime,
    /// The turn holding the chat, until `turn_until` (sortable UTC time, so a condition
    /// can compare it with now as text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    turn_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    turn_until: Option<String>,
    /// When DynamoDB deletes the chat (epoch seconds): moved on by every turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ttl: Option<i64>,
    /// The owner again, on the chat item only: the hash key of the `by_owner` index, so
    /// the index holds chats and no messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    owner_chats: Option<String>,
    /// When a turn last wrote to the chat (sortable UTC time): the index's sort key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    active_at: Option<String>,
    /// The start of the first user message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    title: Option<String>,
}

/// A chat's title: the start of the first user message of `messages` that says more than a
/// greeting, so chats that all began with "Hello" still tell apart (a greeting's chat gets
/// its title from the next message).
fn title_of(messages: &[NewMessage]) -> Option<String> {
    let first = messages.iter().find(|m| m.role == Role::User)?;
    let text: String = first
        .content
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    if is_small_talk(&text) {
        return None;
    }
    let title: String = text.chars().take(TITLE_CHARS).collect();
    (!title.is_empty()).then_some(title)
}

/// "Hi", "Hallo!", "thanks", "ok": a message of greetings and fillers alone.
fn is_small_talk(text: &str) -> bool {
    const WORDS: &[&str] = &[
        "hi", "hello", "hey", "hallo", "moin", "servus", "good", "morning", "evening", "guten",
        "tag", "morgen", "abend", "thanks", "thank", "you", "danke", "ok", "okay", "yes", "no",
        "ja", "nein", "there", "bye", "tschüss",
    ];
    let lower = text.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    words.len() <= 4 && words.iter().all(|w| WORDS.contains(w))
}

impl ChatItem {
    fn into_summary(self) -> ChatSummary {
        let active_at = self
            .active_at
            .unwrap_or_else(|| sortable_time(self.updated_at));
        ChatSummary {
            chat_id: self.chat_id,
            title: self.title,
            message_count: self.message_seq.unwrap_or_default(),
            created_at: self.created_at,
            active_at,
        }
    }
}

impl From<ChatItem> for Chat {
    fn from(item: ChatItem) -> Self {
        Chat {
            id: item.chat_id,
            owner_id: item.owner_id,
            session_state: item.session_state,
            version: item.version,
            message_count: item.message_seq.unwrap_or(0),
            created_at: item.created_at,
            updated_at: item.updated_at,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct MessageItem {
    pk: String,
    sk: String,
    chat_id: String,
    owner_id: String,
    message_id: String,
    /// Absent on messages from before numbering.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    seq: Option<u64>,
    role: Role,
    content: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<MessageToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ledger_call_id: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    background: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    ui: Vec<UiElement>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    stopped: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    language: Option<Locale>,
    #[serde(with = "time::serde::rfc3339")]
    created_at: OffsetDateTime,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ttl: Option<i64>,
}

impl From<MessageItem> for Message {
    fn from(item: MessageItem) -> Self {
        Message {
            id: item.message_id,
            chat_id: item.chat_id,
            seq: item.seq.unwrap_or(0),
            role: item.role,
            content: item.content,
            tool_calls: item.tool_calls,
            tool_call_id: item.tool_call_id,
            ledger_call_id: item.ledger_call_id,
            background: item.background,
            ui: item.ui,
            stopped: item.stopped,
            language: item.language,
            created_at: item.created_at,
        }
    }
}

#[async_trait]
impl ChatStore for DynamoChatStore {
    async fn list(
        &self,
        owner_id: &str,
        limit: u32,
        cursor: Option<&str>,
    ) -> Result<Page<ChatSummary>> {
        let mut query = self
            .client
            .query()
            .table_name(&self.table)
            .index_name(OWNER_INDEX)
            .key_condition_expression("owner_chats = :owner")
            .expression_attribute_values(":owner", s(owner_id))
            .scan_index_forward(false)
            .limit(i32::try_from(limit.clamp(1, 100)).unwrap_or(100));
        if let Some(cursor) = cursor {
            let start = Cursor::decode(cursor)?;
            if start.get("owner_chats") != Some(owner_id) {
                return Err(Error::Invalid("cursor belongs to another listing".into()));
            }
            query = query.set_exclusive_start_key(Some(start.into_key()));
        }
        let out = query.send().await.map_err(|e| sdk_error("Query", e))?;
        page(out, |item| {
            from_item::<ChatItem>(item).map(ChatItem::into_summary)
        })
    }

    async fn messages(
        &self,
        owner_id: &str,
        chat_id: &str,
        limit: u32,
        cursor: Option<&str>,
    ) -> Result<Page<Message>> {
        self.owned(owner_id, chat_id).await?;
        let pk = format!("CHAT#{chat_id}");
        let mut query = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression("pk = :pk AND begins_with(sk, :msg)")
            .expression_attribute_values(":pk", s(&pk))
            .expression_attribute_values(":msg", s("MSG#"))
            .scan_index_forward(false)
            .consistent_read(true)
            .limit(i32::try_from(limit.clamp(1, 100)).unwrap_or(100));
        if let Some(cursor) = cursor {
            let start = Cursor::decode(cursor)?;
            if start.get("pk") != Some(pk.as_str())
                || !start.get("sk").unwrap_or_default().starts_with("MSG#")
            {
                return Err(Error::Invalid("cursor belongs to another listing".into()));
            }
            query = query.set_exclusive_start_key(Some(start.into_key()));
        }
        let out = query.send().await.map_err(|e| sdk_error("Query", e))?;
        page(out, |item| {
            from_item::<MessageItem>(item).map(Message::from)
        })
    }

    async fn create(&self, owner_id: &str) -> Result<Chat> {
        self.create_item(owner_id, &new_id(), None, &[]).await
    }

    async fn create_held_with(
        &self,
        owner_id: &str,
        chat_id: &str,
        lease: &TurnLease,
        with: &[Companion],
    ) -> Result<Chat> {
        self.create_item(owner_id, chat_id, Some(lease), with).await
    }

    async fn open_held(
        &self,
        owner_id: &str,
        chat_id: &str,
        lease: &TurnLease,
        limit: u32,
    ) -> Result<(Chat, Vec<Message>)> {
        let (chat, messages) = tokio::join!(
            self.take(owner_id, chat_id, lease),
            self.query_messages(chat_id, limit)
        );
        Ok((chat?, messages?))
    }

    async fn release(&self, chat_id: &str, turn_id: &str) -> Result<()> {
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(Self::meta_key(chat_id)))
            .update_expression("REMOVE turn_id, turn_until")
            .condition_expression("turn_id = :turn")
            .expression_attribute_values(":turn", s(turn_id))
            .send()
            .await;
        match result {
            Ok(_) => Ok(()),
            // Taken over after its lease ran out: the chat belongs to that turn now.
            Err(err) if err.condition_failed_item().is_some() => Ok(()),
            Err(err) => Err(sdk_error("UpdateItem", err)),
        }
    }

    async fn get(&self, owner_id: &str, chat_id: &str) -> Result<Chat> {
        self.owned(owner_id, chat_id).await.map(Chat::from)
    }

    async fn rename(&self, owner_id: &str, chat_id: &str, title: &str) -> Result<()> {
        // The automatic title is written `if_not_exists`: a chosen one stays. The chat's
        // place in the list (`active_at`) is left alone.
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(Self::meta_key(chat_id)))
            .update_expression("SET title = :title, updated_at = :now")
            .condition_expression("owner_id = :owner")
            .expression_attribute_values(":title", s(title))
            .expression_attribute_values(":now", rfc3339(self.clock.now()))
            .expression_attribute_values(":owner", s(owner_id))
            .send()
            .await;
        match result {
            Ok(_) => Ok(()),
            Err(err) if err.condition_failed_item().is_some() => Err(Error::NotFound),
            Err(err) => Err(sdk_error("UpdateItem", err)),
        }
    }

    async fn delete(&self, owner_id: &str, chat_id: &str) -> Result<()> {
        let chat = self.owned(owner_id, chat_id).await?;
        let now = sortable_time(self.clock.now());
        if let (Some(turn_id), Some(until)) = (&chat.turn_id, &chat.turn_until)
            && *until >= now
        {
            return Err(Error::TurnInProgress {
                turn_id: turn_id.clone(),
            });
        }
        // The chat item goes last: if deleting stops half-way, the chat is still there
        // (and its owner can delete it again).
        let is_meta =
            |key: &Item| matches!(key.get("sk"), Some(v) if v.as_s().is_ok_and(|s| s == "META"));
        let deleted = delete_partition(
            &self.client,
            &self.table,
            &format!("CHAT#{chat_id}"),
            is_meta,
        )
        .await?;
        tracing::info!(chat_id, items = deleted, "chat deleted");
        Ok(())
    }

    async fn patch_state(
        &self,
        owner_id: &str,
        chat_id: &str,
        patch: &SessionStatePatch,
    ) -> Result<Chat> {
        let mut current = self.owned(owner_id, chat_id).await?;
        let mut transient = 0;
        for round in 0..MAX_PATCH_ROUNDS {
            let mut state = current.session_state.clone();
            state.apply(patch);
            let result = self
                .client
                .update_item()
                .table_name(&self.table)
                .set_key(Some(Self::meta_key(chat_id)))
                .update_expression(
                    "SET session_state = :state, version = :next, updated_at = :now, #ttl = :ttl",
                )
                .condition_expression("owner_id = :owner AND version = :version")
                .expression_attribute_names("#ttl", "ttl")
                .expression_attribute_values(":ttl", n(self.expiry(self.clock.now())))
                .expression_attribute_values(":state", to_av(&state)?)
                .expression_attribute_values(":next", n(current.version + 1))
                .expression_attribute_values(":now", rfc3339(self.clock.now()))
                .expression_attribute_values(":owner", s(owner_id))
                .expression_attribute_values(":version", n(current.version))
                .return_values(ReturnValue::AllNew)
                .return_values_on_condition_check_failure(
                    ReturnValuesOnConditionCheckFailure::AllOld,
                )
                .send()
                .await;
            match result {
                Ok(out) => {
                    return from_item::<ChatItem>(out.attributes.unwrap_or_default())
                        .map(Chat::from);
                }
                Err(err) => match err.condition_failed_item() {
                    // Lost the race: the failed write handed back the winner's version.
                    Some(returned) => {
                        current = match returned {
                            Some(item) => from_item(item)?,
                            None => self.owned(owner_id, chat_id).await?,
                        };
                        if current.owner_id != owner_id {
                            return Err(Error::NotFound);
                        }
                        backoff(round).await;
                    }
                    // A transaction on the chat item (a turn's step) or throttling: the
                    // same write again after a pause, never given up silently.
                    None if is_transient(&err) && transient < MAX_TRANSIENT_ROUNDS => {
                        transient += 1;
                        tracing::warn!(chat_id, transient, error = %sdk_error("UpdateItem", err), "session-state patch retried");
                        backoff(transient).await;
                    }
                    None => return Err(sdk_error("UpdateItem", err)),
                },
            }
        }
        Err(Error::Contention(format!(
            "session state of chat {chat_id}"
        )))
    }

    async fn append_messages(
        &self,
        owner_id: &str,
        chat_id: &str,
        messages: Vec<NewMessage>,
    ) -> Result<Vec<Message>> {
        let chat = self.owned(owner_id, chat_id).await?.into();
        let none = SessionStatePatch::default();
        let (_, written) = self.write_step(&chat, &messages, &none, None, &[]).await?;
        Ok(written)
    }

    async fn record_step_with(
        &self,
        chat: &Chat,
        messages: Vec<NewMessage>,
        patch: &SessionStatePatch,
        release: Option<&str>,
        with: &[Companion],
    ) -> Result<Chat> {
        let (chat, _) = self
            .write_step(chat, &messages, patch, release, with)
            .await?;
        Ok(chat)
    }

    async fn open(
        &self,
        owner_id: &str,
        chat_id: &str,
        limit: u32,
    ) -> Result<(Chat, Vec<Message>)> {
        let (chat, messages) = tokio::join!(
            self.owned(owner_id, chat_id),
            self.query_messages(chat_id, limit)
        );
        Ok((chat?.into(), messages?))
    }

    async fn recent_messages(
        &self,
        owner_id: &str,
        chat_id: &str,
        limit: u32,
    ) -> Result<Vec<Message>> {
        self.open(owner_id, chat_id, limit).await.map(|(_, m)| m)
    }
}
