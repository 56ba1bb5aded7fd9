//! Provider fallback: a profile lists models to try, in order, when its model stays
//! unavailable. Which failures fall back ([`falls_back`]) and which models rest for a while
//! after failing again and again ([`ModelHealth`], one per container).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::Error;
use domain::provider::Provider;

/// A model of a provider: where a call can go.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ModelRef {
    /// Who serves it.
    pub provider: Provider,
    /// The provider's model id.
    pub model: String,
}

impl std::fmt::Display for ModelRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.provider, self.model)
    }
}

/// Whether a call that failed with `e` before its first token may go to the next model:
/// the provider stayed unavailable (429, 408, 5xx, a failed connection, through the client's
/// own retries) or did not answer in time. A request it rejected (4xx), credentials it
/// refused, a model it does not know, garbage it answered or a budget of ours never does:
/// the next model would fail the same way, or the fault is ours to fix.
pub fn falls_back(e: &Error) -> bool {
    matches!(
        e,
        Error::UpstreamUnavailable { .. } | Error::UpstreamTimeout { .. }
    )
}

/// Consecutive failed calls after which a model rests.
pub const FAILURES_BEFORE_REST: u32 = 2;

/// How long a model that keeps failing is skipped while another can answer.
pub const REST: Duration = Duration::from_secs(60);

#[derive(Debug, Default, Clone, Copy)]
struct Health {
    /// Failed calls since the last answer (or the last rest).
    failures: u32,
    /// Skipped until then.
    resting_until: Option<Instant>,
}

/// How each model this container called has been doing: a model whose last
/// [`FAILURES_BEFORE_REST`] calls fell back rests for [`REST`], and calls go to their next
/// model without waiting for it to fail again. Per container (Lambda keeps no state between
/// containers, and a new one tries every model afresh).
#[derive(Debug, Default)]
pub struct ModelHealth {
    models: Mutex<HashMap<ModelRef, Health>>,
}

impl ModelHealth {
    /// Whether `model` rests at `now`.
    pub fn resting(&self, model: &ModelRef, now: Instant) -> bool {
        self.lock()
            .get(model)
            .and_then(|h| h.resting_until)
            .is_some_and(|until| now < until)
    }

    /// A call to `model` fell back at `now`; the second in a row sends it to rest.
    pub fn failed(&self, model: &ModelRef, now: Instant) {
        let mut models = self.lock();
        let health = models.entry(model.clone()).or_default();
        health.failures += 1;
        if health.failures >= FAILURES_BEFORE_REST {
            health.failures = 0;
            health.resting_until = Some(now + REST);
            tracing::warn!(provider = %model.provider, model = %model.model, rest_secs = REST.as_secs(), "llm model keeps failing; calls go to its fallback for a while");
        }
    }

    /// `model` answered: it is healthy again.
    pub fn answered(&self, model: &ModelRef) {
        let mut models = self.lock();
        if models.contains_key(model) {
            models.remove(model);
        }
    }

    /// `candidates` in the order to try them: those not resting as listed, then the resting
    /// ones (a last resort rather than no answer).
    pub fn order<'a>(&self, candidates: &'a [ModelRef], now: Instant) -> Vec<&'a ModelRef> {
        let (awake, resting): (Vec<_>, Vec<_>) =
            candidates.iter().partition(|m| !self.resting(m, now));
        awake.into_iter().chain(resting).collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ModelRef, Health>> {
        // The map holds counters only: one a panicking holder left is still usable.
        self.models
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(name: &str) -> ModelRef {
        ModelRef {
            provider: Provider::OpenAi,
            model: name.into(),
        }
    }

    #[test]
    fn a_model_rests_after_failing_twice_in_a_row_and_only_for_the_rest() {
        let health = ModelHealth::default();
        let (a, b) = (model("a"), model("b"));
        let now = Instant::now();
        health.failed(&a, now);
        assert!(!health.resting(&a, now), "one failure is not a pattern");
        health.failed(&a, now);
        assert!(health.resting(&a, now));
        assert!(!health.resting(&b, now));
        let candidates = [a.clone(), b.clone()];
        assert_eq!(health.order(&candidates, now), vec![&b, &a]);
        let later = now + REST;
        assert!(!health.resting(&a, later));
        assert_eq!(health.order(&candidates, later), vec![&a, &b]);
    }

    #[test]
    fn an_answer_in_between_resets_the_count() {
        let health = ModelHealth::default();
        let a = model("a");
        let now = Instant::now();
        health.failed(&a, now);
        health.answered(&a);
        health.failed(&a, now);
        assert!(!health.resting(&a, now));
    }

    #[test]
    fn only_unavailability_and_timeouts_fall_back() {
        assert!(falls_back(&Error::UpstreamUnavailable {
            service: "llm",
            message: "HTTP 503".into()
        }));
        assert!(falls_back(&Error::UpstreamTimeout { service: "llm" }));
        assert!(!falls_back(&Error::UpstreamRejected {
            service: "llm",
            status: 400,
            message: "bad request".into()
        }));
        assert!(!falls_back(&Error::Upstream {
            service: "llm",
            message: "credentials rejected (HTTP 401)".into()
        }));
    }
}
