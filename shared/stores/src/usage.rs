//! LLM usage records: one per LLM call, with tokens and a cost from a price table (the
//! original always wrote 0).

use std::collections::BTreeMap;
use std::sync::Arc;

pub use domain::token_usage::TokenUsage;

use async_trait::async_trait;
use aws_sdk_dynamodb::Client;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use aws_sdk_dynamodb::types::{Put, TransactWriteItem};
use domain::clock::{Clock, SystemClock};

use crate::{Error, Result};
use domain::ids::new_id;
use lambda_kit::companion::Companion;
use lambda_kit::dynamo::{
    Item, from_item, invalid_action, n, s, sdk_error, sortable_time, to_item,
};

/// USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ModelPrice {
    /// A million prompt tokens (cached ones at `cached_input_per_million`, when set).
    pub input_per_million: f64,
    /// A million completion tokens.
    pub output_per_million: f64,
    /// Input tokens the provider served from its prompt cache; unset: the input price.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input_per_million: Option<f64>,
}

/// Prices by model-name prefix; the longest matching prefix wins, so
/// `gpt-4o-mini-2024-07-18` is priced as `gpt-4o-mini`, not `gpt-4o`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PriceTable(BTreeMap<String, ModelPrice>);

impl Default for PriceTable {
    /// List prices of common OpenAI models and Amazon Bedrock model ids (on-demand, US
    /// regions) at the time of writing; override with `LLM_PRICES_JSON` when they change or
    /// for other providers. Bedrock's cached rate is its cache-read price.
    fn default() -> Self {
        let price = |i, c, o| ModelPrice {
            input_per_million: i,
            output_per_million: o,
            cached_input_per_million: Some(c),
        };
        Self(BTreeMap::from([
            ("gpt-4o".into(), price(2.50, 1.25, 10.00)),
            ("gpt-4o-mini".into(), price(0.15, 0.075, 0.60)),
            ("gpt-4.1".into(), price(2.00, 0.50, 8.00)),
            ("gpt-4.1-mini".into(), price(0.40, 0.10, 1.60)),
            ("gpt-4.1-nano".into(), price(0.10, 0.025, 0.40)),
            ("gpt-5".into(), price(1.25, 0.125, 10.00)),
            ("gpt-5-mini".into(), price(0.25, 0.025, 2.00)),
            ("gpt-5-nano".into(), price(0.05, 0.005, 0.40)),
            ("text-embedding-3-small".into(), price(0.02, 0.02, 0.0)),
            ("text-embedding-3-large".into(), price(0.13, 0.13, 0.0)),
            // Amazon Bedrock model ids; a cross-region inference profile (`us.`, `eu.`, ...)
            // is priced as its model (see `price`).
            ("amazon.nova-micro-v1".into(), price(0.035, 0.00875, 0.14)),
            ("amazon.nova-lite-v1".into(), price(0.06, 0.015, 0.24)),
            ("amazon.nova-pro-v1".into(), price(0.80, 0.20, 3.20)),
            ("anthropic.claude-3-haiku".into(), price(0.25, 0.03, 1.25)),
            ("anthropic.claude-3-5-haiku".into(), price(0.80, 0.08, 4.00)),
            ("anthropic.claude-haiku-4-5".into(), price(1.00, 0.10, 5.00)),
            (
                "anthropic.claude-3-5-sonnet".into(),
                price(3.00, 0.30, 15.00),
            ),
            (
                "anthropic.claude-3-7-sonnet".into(),
                price(3.00, 0.30, 15.00),
            ),
            ("anthropic.claude-sonnet-4".into(), price(3.00, 0.30, 15.00)),
            ("meta.llama3-1-8b-instruct".into(), price(0.22, 0.22, 0.22)),
            ("meta.llama3-1-70b-instruct".into(), price(0.72, 0.72, 0.72)),
            ("mistral.mistral-large-2407".into(), price(2.00, 2.00, 6.00)),
            ("amazon.titan-embed-text-v2".into(), price(0.02, 0.02, 0.0)),
        ]))
    }
}

impl PriceTable {
    /// Parses `{"model-prefix": {"input_per_million": 0.15, "output_per_million": 0.6}, ...}`.
    pub fn from_json(text: &str) -> Result<Self> {
        serde_json::from_str(text)
            .map_err(|e| Error::Config(format!("LLM_PRICES_JSON is invalid: {e}")))
    }

    /// The price of `model`: its longest listed prefix; a Bedrock cross-region inference
    /// profile id (`us.anthropic...`, `eu.amazon...`) without an entry of its own is priced
    /// as the model after its region prefix.
    pub fn price(&self, model: &str) -> Option<ModelPrice> {
        let lookup = |model: &str| {
            self.0
                .iter()
                .filter(|(prefix, _)| model.starts_with(prefix.as_str()))
                .max_by_key(|(prefix, _)| prefix.len())
                .map(|(_, price)| *price)
        };
        lookup(model).or_else(|| {
            let (region, rest) = model.split_once('.')?;
            INFERENCE_PROFILE_PREFIXES
                .contains(&region)
                .then(|| lookup(rest))
                .flatten()
        })
    }

    /// Cost in USD; `None` for a model without a price (recorded as unpriced, not as free).
    /// Cached input tokens (a part of the prompt tokens) are priced at the cached rate.
    pub fn cost(&self, model: &str, usage: &TokenUsage) -> Option<f64> {
        self.price(model).map(|p| {
            let cached = usage.cached_tokens.min(usage.prompt_tokens);
            let fresh = usage.prompt_tokens - cached;
            let cached_rate = p.cached_input_per_million.unwrap_or(p.input_per_million);
            let cost = fresh as f64 * p.input_per_million / 1e6
                + cached as f64 * cached_rate / 1e6
                + usage.completion_tokens as f64 * p.output_per_million / 1e6;
            (cost * 1e9).round() / 1e9
        })
    }
}

/// USD to the nano-dollar, as costs are priced: keeps the counter's sums exact decimals.
fn round_usd(usd: f64) -> f64 {
    (usd * 1e9).round() / 1e9
}

/// The region prefixes of Bedrock's cross-region inference profiles.
const INFERENCE_PROFILE_PREFIXES: [&str; 8] =
    ["us", "eu", "apac", "global", "us-gov", "jp", "au", "ca"];

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One LLM call's usage as stored: who made it, which model, the tokens and the cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UsageRecord {
    /// The record's id, a ULID.
    pub id: String,
    /// The user the call was made for.
    pub user_id: String,
    /// The chat it was made in; `None` outside a chat.
    pub chat_id: Option<String>,
    /// The model, as the provider names it; its price is looked up by prefix.
    pub model: String,
    /// What the call was for, e.g. `chat`, `ask_gpt`, `embedding`.
    pub operation: String,
    /// Tokens of the prompt, cached ones included.
    pub prompt_tokens: u64,
    /// Tokens the model generated.
    pub completion_tokens: u64,
    /// Prompt and completion tokens together (at least their sum).
    pub total_tokens: u64,
    /// Prompt tokens served from the provider's cache (see [`TokenUsage::cached_tokens`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cached_tokens: u64,
    /// The token counts are our estimate (see [`TokenUsage::estimated`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub estimated: bool,
    /// What the call cost in USD; `None` for a model without a price.
    pub cost_usd: Option<f64>,
    /// When the call was recorded.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

/// A hold on part of a user's daily budget for one LLM call, settled to what the call cost
/// once it has ended (see [`UsageStore::reserve`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Reservation {
    /// The user whose budget is held.
    pub user_id: String,
    /// The UTC day the hold counts against (`YYYY-MM-DD`), also when settled after midnight.
    pub day: String,
    /// The amount held, in USD.
    pub amount_usd: f64,
}

/// What [`UsageStore::reserve`] decided.
#[derive(Debug, Clone, PartialEq)]
pub enum Hold {
    /// No daily budget is set: nothing is held.
    Unlimited,
    /// The call may run; settle the reservation when it has ended.
    Reserved(Reservation),
    /// The day's budget cannot take the call: it must not run.
    Refused {
        /// When the day ends (UTC) and the budget frees up.
        reset_at: OffsetDateTime,
    },
}

/// Usage records of LLM calls and the users' daily budget.
#[async_trait]
pub trait UsageStore: Send + Sync {
    /// The record of one LLM call (with its cost), not yet written.
    fn priced(
        &self,
        user_id: &str,
        chat_id: Option<&str>,
        model: &str,
        operation: &str,
        usage: TokenUsage,
    ) -> UsageRecord;

    /// Writes `record`.
    async fn save(&self, record: &UsageRecord) -> Result<()>;

    /// Writing `record` as a write in another store's transaction (a turn's chat write).
    fn save_companion(&self, record: &UsageRecord) -> Result<Companion>;

    /// Records one LLM call and returns the stored record (with its cost).
    async fn record(
        &self,
        user_id: &str,
        chat_id: Option<&str>,
        model: &str,
        operation: &str,
        usage: TokenUsage,
    ) -> Result<UsageRecord> {
        let record = self.priced(user_id, chat_id, model, operation, usage);
        self.save(&record).await?;
        Ok(record)
    }

    /// Holds `amount_usd` (an LLM call's most expensive likely outcome) of the user's daily
    /// budget before the call, with a conditional write, so concurrent turns cannot spend
    /// past the budget by more than one call's underestimate. A store without a budget holds
    /// nothing.
    async fn reserve(&self, _user_id: &str, _amount_usd: f64) -> Result<Hold> {
        Ok(Hold::Unlimited)
    }

    /// Replaces `reservation` with what the call actually cost.
    async fn settle(&self, _reservation: &Reservation, _actual_usd: f64) -> Result<()> {
        Ok(())
    }

    /// A user's records since `since`, oldest first.
    async fn list_for_user(&self, user_id: &str, since: OffsetDateTime)
    -> Result<Vec<UsageRecord>>;

    /// What a user's LLM calls since `since` cost, in USD (unpriced calls count 0).
    async fn spent_since(&self, user_id: &str, since: OffsetDateTime) -> Result<f64> {
        Ok(self
            .list_for_user(user_id, since)
            .await?
            .iter()
            .filter_map(|r| r.cost_usd)
            .sum())
    }
}

/// [`UsageStore`] on the usage table.
#[derive(Clone)]
pub struct DynamoUsageStore {
    client: Client,
    table: String,
    prices: Arc<PriceTable>,
    clock: Arc<dyn Clock>,
    retention: time::Duration,
    /// `USER_DAILY_BUDGET_USD`: what [`UsageStore::reserve`] holds calls against.
    daily_budget_usd: Option<f64>,
}

impl DynamoUsageStore {
    /// A store on `table` (the usage table) pricing with `prices`, without a daily budget.
    pub fn new(client: Client, table: impl Into<String>, prices: PriceTable) -> Self {
        Self {
            client,
            table: table.into(),
            prices: Arc::new(prices),
            clock: Arc::new(SystemClock),
            retention: lambda_kit::config::RetentionConfig::default().usage,
            daily_budget_usd: None,
        }
    }

    /// Holds each LLM call against `budget` USD per user and UTC day ([`UsageStore::reserve`]).
    pub fn with_daily_budget(mut self, budget: Option<f64>) -> Self {
        self.daily_budget_usd = budget;
        self
    }

    /// Reads "now" from `clock` (tests move the day).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// The key of a user's day counter: its own partition, apart from the records.
    fn budget_key(user_id: &str, day: &str) -> Item {
        Item::from([
            ("pk".to_owned(), s(format!("BUDGET#{user_id}"))),
            ("sk".to_owned(), s(day)),
        ])
    }

    /// The stored item: by user, in time order; kept for the retention.
    fn item(&self, record: &UsageRecord) -> Result<Item> {
        let mut item = to_item(record)?;
        item.insert("pk".into(), s(format!("USER#{}", record.user_id)));
        let sk = format!("{}#{}", sortable_time(record.created_at), record.id);
        item.insert("sk".into(), s(sk));
        let expires = (record.created_at + self.retention).unix_timestamp();
        item.insert("ttl".into(), n(expires));
        Ok(item)
    }

    /// Records are deleted by TTL this long after they were written.
    pub fn with_retention(mut self, retention: time::Duration) -> Self {
        self.retention = retention;
        self
    }
}

#[async_trait]
impl UsageStore for DynamoUsageStore {
    fn priced(
        &self,
        user_id: &str,
        chat_id: Option<&str>,
        model: &str,
        operation: &str,
        usage: TokenUsage,
    ) -> UsageRecord {
        let cost_usd = self.prices.cost(model, &usage);
        if cost_usd.is_none() {
            tracing::warn!(model, "no price for model; usage recorded without cost");
        }
        UsageRecord {
            id: new_id(),
            user_id: user_id.to_owned(),
            chat_id: chat_id.map(str::to_owned),
            model: model.to_owned(),
            operation: operation.to_owned(),
            prompt_tokens: usage.prompt_tokens,
            completion_tokens: usage.completion_tokens,
            total_tokens: usage
                .total_tokens
                .max(usage.prompt_tokens + usage.completion_tokens),
            cached_tokens: usage.cached_tokens,
            estimated: usage.estimated,
            cost_usd,
            created_at: self.clock.now(),
        }
    }

    async fn save(&self, record: &UsageRecord) -> Result<()> {
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(self.item(record)?))
            .send()
            .await
            .map_err(|e| sdk_error("PutItem", e))?;
        Ok(())
    }

    fn save_companion(&self, record: &UsageRecord) -> Result<Companion> {
        let put = Put::builder()
            .table_name(&self.table)
            .set_item(Some(self.item(record)?))
            .build()
            .map_err(invalid_action)?;
        let action = TransactWriteItem::builder().put(put).build();
        Ok(Companion::unconditional("usage record", action))
    }

    /// `committed_usd` of the user's day counter is what the day's calls cost plus what
    /// running calls hold. A hold is added only while the counter stays within the budget
    /// with it; the first call of a day runs even if its hold alone is more than the budget,
    /// so a budget below one call's cost still allows one call.
    async fn reserve(&self, user_id: &str, amount_usd: f64) -> Result<Hold> {
        let Some(budget) = self.daily_budget_usd else {
            return Ok(Hold::Unlimited);
        };
        let now = self.clock.now();
        let day = now.date().to_string();
        let amount_usd = round_usd(amount_usd.max(0.0));
        let room = round_usd((budget - amount_usd).max(0.0));
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(Self::budget_key(user_id, &day)))
            .update_expression("ADD committed_usd :amount SET #ttl = :ttl")
            .condition_expression("attribute_not_exists(committed_usd) OR committed_usd <= :room")
            .expression_attribute_names("#ttl", "ttl")
            .expression_attribute_values(":amount", n(amount_usd))
            .expression_attribute_values(":room", n(room))
            .expression_attribute_values(
                ":ttl",
                n((now + time::Duration::days(2)).unix_timestamp()),
            )
            .send()
            .await;
        match result {
            Ok(_) => Ok(Hold::Reserved(Reservation {
                user_id: user_id.to_owned(),
                day,
                amount_usd,
            })),
            Err(err)
                if err
                    .as_service_error()
                    .is_some_and(|e| e.is_conditional_check_failed_exception()) =>
            {
                Ok(Hold::Refused {
                    reset_at: now.replace_time(time::Time::MIDNIGHT) + time::Duration::DAY,
                })
            }
            Err(err) => Err(sdk_error("UpdateItem", err)),
        }
    }

    async fn settle(&self, reservation: &Reservation, actual_usd: f64) -> Result<()> {
        let delta = round_usd(actual_usd.max(0.0) - reservation.amount_usd);
        if delta == 0.0 {
            return Ok(());
        }
        self.client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(Self::budget_key(
                &reservation.user_id,
                &reservation.day,
            )))
            .update_expression("ADD committed_usd :delta")
            .expression_attribute_values(":delta", n(delta))
            .send()
            .await
            .map_err(|e| sdk_error("UpdateItem", e))?;
        Ok(())
    }

    async fn list_for_user(
        &self,
        user_id: &str,
        since: OffsetDateTime,
    ) -> Result<Vec<UsageRecord>> {
        let mut records = Vec::new();
        let mut start = None;
        loop {
            let out = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression("pk = :pk AND sk >= :since")
                .expression_attribute_values(":pk", s(format!("USER#{user_id}")))
                .expression_attribute_values(":since", s(sortable_time(since)))
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(|e| sdk_error("Query", e))?;
            for item in out.items.unwrap_or_default() {
                records.push(from_item::<UsageRecord>(item)?);
            }
            start = out.last_evaluated_key;
            if start.is_none() {
                return Ok(records);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(prompt: u64, cached: u64, completion: u64) -> TokenUsage {
        TokenUsage {
            prompt_tokens: prompt,
            completion_tokens: completion,
            total_tokens: prompt + completion,
            cached_tokens: cached,
            estimated: false,
        }
    }

    #[test]
    fn cached_input_tokens_cost_the_cached_rate() {
        let prices = PriceTable::default();
        // gpt-4o: 2.50 per million fresh, 1.25 cached.
        let all_fresh = prices.cost("gpt-4o", &tokens(1_000_000, 0, 0));
        let half_cached = prices.cost("gpt-4o", &tokens(1_000_000, 500_000, 0));
        assert_eq!((all_fresh, half_cached), (Some(2.5), Some(1.875)));
        // Without a cached price, cached tokens cost the input price.
        let table =
            PriceTable::from_json(r#"{"m": {"input_per_million": 1, "output_per_million": 2}}"#)
                .unwrap();
        assert_eq!(table.cost("m", &tokens(1_000_000, 1_000_000, 0)), Some(1.0));
    }

    #[test]
    fn longest_prefix_wins_and_unknown_models_are_unpriced() {
        let prices = PriceTable::default();
        assert_eq!(
            prices.cost("gpt-4o-mini-2024-07-18", &tokens(1_000_000, 0, 1_000_000)),
            Some(0.75)
        );
        assert_eq!(
            prices.cost("gpt-4o-2024-08-06", &tokens(1_000_000, 0, 0)),
            Some(2.5)
        );
        assert_eq!(prices.cost("llama3.1:8b", &tokens(10, 0, 10)), None);
    }

    #[test]
    fn bedrock_models_and_their_inference_profiles_are_priced() {
        let prices = PriceTable::default();
        let nova = prices.cost("amazon.nova-lite-v1:0", &tokens(1_000_000, 0, 1_000_000));
        assert_eq!(nova, Some(0.30));
        assert_eq!(
            prices.cost("us.amazon.nova-lite-v1:0", &tokens(1_000_000, 0, 1_000_000)),
            nova
        );
        assert_eq!(
            prices.cost(
                "eu.anthropic.claude-3-5-haiku-20241022-v1:0",
                &tokens(1_000_000, 0, 0)
            ),
            Some(0.8)
        );
        assert_eq!(
            prices.cost("xx.amazon.nova-lite-v1:0", &tokens(1, 0, 1)),
            None
        );
    }

    #[test]
    fn prices_parse_from_json() {
        let table = PriceTable::from_json(
            r#"{"llama": {"input_per_million": 0, "output_per_million": 0}}"#,
        );
        assert_eq!(
            table
                .ok()
                .and_then(|t| t.cost("llama3.1:8b", &tokens(5, 0, 5))),
            Some(0.0)
        );
        assert!(PriceTable::from_json("[]").is_err());
    }
}
