//! Identifiers: ULIDs, which sort by creation time.

use std::sync::Mutex;

use ulid::{Generator, Ulid};

static MONOTONIC: Mutex<Generator> = Mutex::new(Generator::new());

/// A new random, time-ordered id.
pub fn new_id() -> String {
    Ulid::generate().to_string()
}

/// A new id strictly greater than every earlier one from this process, even within one
/// millisecond; used where id order must be insertion order (messages).
pub fn monotonic_id() -> String {
    let mut generator = MONOTONIC
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    match generator.generate() {
        Ok(id) => id,
        Err(overflow) => overflow.commit_overflow_increment(),
    }
    .to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn monotonic_ids_increase() {
        let ids: Vec<String> = (0..1000).map(|_| super::monotonic_id()).collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
    }
}
