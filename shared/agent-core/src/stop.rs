//! A turn's stop signal: set when its cancel is seen (the chat-router's event log reads it
//! from the turn's record), checked by the turn at its safe points: before a model step,
//! while it streams (the stream is abandoned), before a step's tools run, and while they
//! run (they are aborted).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::Notify;

/// Cloning shares the signal.
#[derive(Clone, Default)]
pub struct StopSignal(Arc<Inner>);

#[derive(Default)]
struct Inner {
    stopped: AtomicBool,
    notify: Notify,
}

impl StopSignal {
    /// Stops the turn; waiters wake once.
    pub fn stop(&self) {
        if !self.0.stopped.swap(true, Ordering::SeqCst) {
            self.0.notify.notify_waiters();
        }
    }

    /// Whether the turn was stopped.
    pub fn is_stopped(&self) -> bool {
        self.0.stopped.load(Ordering::SeqCst)
    }

    /// Completes once [`StopSignal::stop`] was called (at once if it was already).
    pub async fn stopped(&self) {
        loop {
            let notified = self.0.notify.notified();
            tokio::pin!(notified);
            // Registered before the check, so a stop in between is not missed.
            notified.as_mut().enable();
            if self.is_stopped() {
                return;
            }
            notified.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_waiter_wakes_on_stop_and_a_late_one_at_once() {
        let signal = StopSignal::default();
        let waiter = tokio::spawn({
            let signal = signal.clone();
            async move { signal.stopped().await }
        });
        tokio::task::yield_now().await;
        assert!(!signal.is_stopped());
        signal.stop();
        assert!(waiter.await.is_ok());
        signal.stopped().await;
        assert!(signal.is_stopped());
    }
}
