//! Configuration from environment variables, read and validated once at cold start.
//!
//! Each function assembles the parts it needs (`StorageConfig::from_env(&env)?`, ...). All
//! problems of one part are reported together, naming the variable, what it is for and where
//! it usually comes from, so a misconfigured deploy fails on its first invocation with a
//! message that says how to fix it.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Display;
use std::str::FromStr;
use std::sync::{Arc, Mutex};

use time::Duration;

use domain::{Error, Result};

/// A snapshot of the environment (the process's, or a map in tests).
#[derive(Debug, Clone, Default)]
pub struct Env {
    vars: HashMap<String, String>,
    /// Set by [`Env::recording`]: every variable read, with its default.
    reads: Option<Arc<Mutex<BTreeMap<String, VarDefault>>>>,
}

/// What a variable falls back to when unset, as the code says it (for the docs check).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VarDefault {
    /// Unset is an error.
    Required,
    /// Unset means "not used" (no default value).
    Unset,
    /// This value, as `Display` writes it.
    Value(String),
}

impl Env {
    /// The process's environment, as it is now.
    pub fn from_process() -> Self {
        Self {
            vars: std::env::vars().collect(),
            reads: None,
        }
    }

    /// An environment of exactly these variables (for tests).
    pub fn from_pairs<K: Into<String>, V: Into<String>>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        Self {
            vars: pairs
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
            reads: None,
        }
    }

    /// This environment, remembering from now on which variables are read and their
    /// defaults, so a test can hold the configuration docs against the code.
    pub fn recording(mut self) -> Self {
        self.reads = Some(Arc::default());
        self
    }

    /// The variables read so far (empty unless [`Env::recording`]).
    pub fn reads(&self) -> BTreeMap<String, VarDefault> {
        self.reads
            .as_ref()
            .and_then(|r| r.lock().ok().map(|r| r.clone()))
            .unwrap_or_default()
    }

    /// Notes a read; a more specific default replaces `Unset` from a plain [`Env::get`].
    fn note(&self, name: &str, default: VarDefault) {
        if let Some(mut reads) = self.reads.as_ref().and_then(|r| r.lock().ok()) {
            let entry = reads.entry(name.to_owned()).or_insert(VarDefault::Unset);
            if *entry == VarDefault::Unset {
                *entry = default;
            }
        }
    }

    /// The value of `name`, treating an empty value as unset.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.note(name, VarDefault::Unset);
        self.vars
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.trim().is_empty())
    }

    /// Starts collecting the variables of one configuration part.
    pub fn reader(&self) -> EnvReader<'_> {
        EnvReader {
            env: self,
            problems: Vec::new(),
        }
    }
}

/// Reads variables and collects every problem instead of stopping at the first.
pub struct EnvReader<'a> {
    env: &'a Env,
    problems: Vec<String>,
}

impl EnvReader<'_> {
    /// A required variable; `purpose` ends up in the error message.
    pub fn required(&mut self, name: &str, purpose: &str) -> String {
        self.env.note(name, VarDefault::Required);
        match self.env.get(name) {
            Some(v) => v.to_owned(),
            None => {
                self.problems.push(format!("{name} is not set ({purpose})"));
                String::new()
            }
        }
    }

    /// A variable that may be unset.
    pub fn optional(&mut self, name: &str) -> Option<String> {
        self.env.get(name).map(str::to_owned)
    }

    /// A required variable, parsed; unset or unparsable is a problem.
    pub fn required_parse<T: FromStr + Default>(&mut self, name: &str, purpose: &str) -> T
    where
        T::Err: std::fmt::Display,
    {
        self.env.note(name, VarDefault::Required);
        match self.env.get(name) {
            None => {
                self.problems.push(format!("{name} is not set ({purpose})"));
                T::default()
            }
            Some(raw) => raw.trim().parse().unwrap_or_else(|e| {
                self.problems.push(format!("{name} is invalid: {e}"));
                T::default()
            }),
        }
    }

    /// A variable with a default when unset.
    pub fn or(&mut self, name: &str, default: &str) -> String {
        self.env.note(name, VarDefault::Value(default.to_owned()));
        self.env.get(name).unwrap_or(default).to_owned()
    }

    /// A parsed variable with a default when unset; an unparsable value is a problem.
    pub fn parse_or<T: FromStr + Display>(&mut self, name: &str, default: T) -> T
    where
        T::Err: std::fmt::Display,
    {
        self.env.note(name, VarDefault::Value(default.to_string()));
        match self.env.get(name) {
            None => default,
            Some(raw) => match raw.trim().parse() {
                Ok(v) => v,
                Err(e) => {
                    self.problems
                        .push(format!("{name}={raw:?} is invalid: {e}"));
                    default
                }
            },
        }
    }

    /// A parsed variable that may be unset (`None`); an unparsable value is a problem.
    pub fn parse_optional<T: FromStr>(&mut self, name: &str) -> Option<T>
    where
        T::Err: std::fmt::Display,
    {
        let raw = self.env.get(name)?;
        match raw.trim().parse() {
            Ok(v) => Some(v),
            Err(e) => {
                self.problems
                    .push(format!("{name}={raw:?} is invalid: {e}"));
                None
            }
        }
    }

    /// Whole seconds, e.g. `DEDUPE_WINDOW_SECS=600`.
    pub fn seconds_or(&mut self, name: &str, default_secs: u32) -> Duration {
        Duration::seconds(i64::from(self.parse_or(name, default_secs)))
    }

    /// Ends the part: `Error::Config` listing every problem, if there were any.
    pub fn finish<T>(self, value: T) -> Result<T> {
        if self.problems.is_empty() {
            Ok(value)
        } else {
            Err(Error::Config(self.problems.join("; ")))
        }
    }
}

/// DynamoDB table names; set by template.yaml, locally by `infra/local/emulators.sh`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StorageConfig {
    /// The tool-call ledger's table (`TOOL_CALLS_TABLE`).
    pub tool_calls_table: String,
    /// The table of chats and their messages (`CHATS_TABLE`).
    pub chats_table: String,
    /// The LLM usage table (`USAGE_TABLE`).
    pub usage_table: String,
    /// The rate limiters' table (`RATE_LIMITS_TABLE`).
    pub rate_limits_table: String,
    /// The knowledge base's table (`KB_TABLE`).
    pub kb_table: String,
}

impl StorageConfig {
    /// Reads the table names; every one is required.
    pub fn from_env(env: &Env) -> Result<Self> {
        const HINT: &str = "set by template.yaml; locally `source .local/run/env`";
        let mut r = env.reader();
        let config = Self {
            tool_calls_table: r.required(
                "TOOL_CALLS_TABLE",
                &format!("tool-call ledger table, {HINT}"),
            ),
            chats_table: r.required("CHATS_TABLE", &format!("chats and messages table, {HINT}")),
            usage_table: r.required("USAGE_TABLE", &format!("LLM usage table, {HINT}")),
            rate_limits_table: r
                .required("RATE_LIMITS_TABLE", &format!("rate-limit table, {HINT}")),
            kb_table: r.required("KB_TABLE", &format!("knowledge-base table, {HINT}")),
        };
        r.finish(config)
    }
}

/// Tool-call ledger behaviour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LedgerConfig {
    /// Identical calls within this window execute once (`DEDUPE_WINDOW_SECS`, default 600).
    pub dedupe_window: Duration,
    /// How long a tool call stays in the audit log after its last change
    /// (`TOOL_CALL_RETENTION_DAYS`, default 90; DynamoDB TTL deletes it afterwards).
    pub retention: Duration,
    /// How long a queued call waits for a worker before the next identical call takes it
    /// over (`QUEUED_CALL_DEADLINE_SECS`, default 1800: SQS's longest delay, 15 minutes,
    /// plus as long again for the worker).
    pub queue_deadline: Duration,
}

impl Default for LedgerConfig {
    fn default() -> Self {
        Self {
            dedupe_window: Duration::minutes(10),
            retention: Duration::days(90),
            queue_deadline: Duration::minutes(30),
        }
    }
}

impl LedgerConfig {
    /// Reads the ledger's settings; each has a default.
    pub fn from_env(env: &Env) -> Result<Self> {
        let mut r = env.reader();
        let config = Self {
            dedupe_window: r.seconds_or("DEDUPE_WINDOW_SECS", 600),
            retention: Duration::days(i64::from(r.parse_or("TOOL_CALL_RETENTION_DAYS", 90u32))),
            queue_deadline: r.seconds_or("QUEUED_CALL_DEADLINE_SECS", 1800),
        };
        r.finish(config)
    }
}

/// How long users' data is kept after it was last written; DynamoDB TTL deletes it then.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetentionConfig {
    /// A chat (its item, from its last turn) and each message (from when it was written)
    /// (`CHAT_RETENTION_DAYS`, default 90).
    pub chats: Duration,
    /// Each usage record (`USAGE_RETENTION_DAYS`, default 400: a year of bills and some).
    pub usage: Duration,
}

impl Default for RetentionConfig {
    fn default() -> Self {
        Self {
            chats: Duration::days(90),
            usage: Duration::days(400),
        }
    }
}

impl RetentionConfig {
    /// Reads the retention periods; each has a default.
    pub fn from_env(env: &Env) -> Result<Self> {
        let mut r = env.reader();
        let config = Self {
            chats: Duration::days(i64::from(r.parse_or("CHAT_RETENTION_DAYS", 90u32))),
            usage: Duration::days(i64::from(r.parse_or("USAGE_RETENTION_DAYS", 400u32))),
        };
        r.finish(config)
    }
}

/// How long secrets stay cached in a container (`SECRETS_CACHE_TTL_SECS`, default 300).
pub fn secrets_cache_ttl(env: &Env) -> Result<std::time::Duration> {
    let mut r = env.reader();
    let secs: u64 = r.parse_or("SECRETS_CACHE_TTL_SECS", 300);
    r.finish(std::time::Duration::from_secs(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_tables_are_all_named_at_once() {
        let env = Env::from_pairs([("TOOL_CALLS_TABLE", "t"), ("CHATS_TABLE", " ")]);
        let err = StorageConfig::from_env(&env)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        for name in [
            "CHATS_TABLE",
            "USAGE_TABLE",
            "RATE_LIMITS_TABLE",
            "KB_TABLE",
        ] {
            assert!(err.contains(name), "{err}");
        }
        assert!(!err.contains("TOOL_CALLS_TABLE"), "{err}");
    }

    #[test]
    fn defaults_and_bad_numbers() {
        let defaults = LedgerConfig::from_env(&Env::default()).ok();
        assert_eq!(defaults, Some(LedgerConfig::default()));

        let env = Env::from_pairs([("DEDUPE_WINDOW_SECS", "ten")]);
        let err = LedgerConfig::from_env(&env)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            err.contains("DEDUPE_WINDOW_SECS=\"ten\" is invalid"),
            "{err}"
        );

        let env = Env::from_pairs([("DEDUPE_WINDOW_SECS", "30")]);
        let config = LedgerConfig::from_env(&env).ok();
        assert_eq!(config.map(|c| c.dedupe_window), Some(Duration::seconds(30)));
    }
}
