//! Pipeline events: what happened, published by every stage, streamed to `events.subscribe`.
//!
//! The bus is a bounded broadcast channel: a subscriber that falls behind loses the oldest events
//! and is told how many, so a stuck client can never make the daemon's memory grow.

use serde::Serialize;
use tokio::sync::broadcast;

/// How many events a slow subscriber may fall behind before it starts losing them.
pub const EVENT_BUFFER: usize = 1024;

/// One event.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Event {
    /// Increasing number within one daemon run.
    pub seq: u64,
    /// RFC 3339 time, UTC.
    pub ts: String,
    /// Dotted kind, e.g. `config.reloaded`, `daemon.stopping`.
    pub kind: String,
    /// Kind-specific details.
    pub data: serde_json::Value,
}

/// The publishing side of the event stream. Cheap to clone.
#[derive(Debug, Clone)]
pub struct EventBus {
    sender: broadcast::Sender<Event>,
    next_seq: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl Default for EventBus {
    fn default() -> Self {
        Self::new()
    }
}

impl EventBus {
    /// A bus with no subscribers yet.
    pub fn new() -> Self {
        let (sender, _) = broadcast::channel(EVENT_BUFFER);
        EventBus {
            sender,
            next_seq: Default::default(),
        }
    }

    /// Publishes an event to every current subscriber; without subscribers it is dropped.
    pub fn publish(&self, kind: &str, data: serde_json::Value) -> Event {
        let seq = self
            .next_seq
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            + 1;
        let event = Event {
            seq,
            ts: jiff::Timestamp::now().to_string(),
            kind: kind.to_owned(),
            data,
        };
        // An error only means nobody listens, which is normal.
        let _ = self.sender.send(event.clone());
        event
    }

    /// A new subscription receiving events published from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.sender.subscribe()
    }

    /// How many events were published so far.
    pub fn published(&self) -> u64 {
        self.next_seq.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// How many receivers listen: the daemon's own stages and each subscribed connection.
    pub fn receivers(&self) -> usize {
        self.sender.receiver_count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn subscribers_receive_in_order_and_lag_is_bounded() {
        let bus = EventBus::new();
        let mut rx = bus.subscribe();
        bus.publish("a", serde_json::json!({"n": 1}));
        bus.publish("b", serde_json::json!({}));
        let first = rx.recv().await.expect("first");
        assert_eq!((first.seq, first.kind.as_str()), (1, "a"));
        assert_eq!(rx.recv().await.expect("second").kind, "b");
        for _ in 0..EVENT_BUFFER + 10 {
            bus.publish("flood", serde_json::Value::Null);
        }
        match rx.recv().await {
            Err(broadcast::error::RecvError::Lagged(n)) => assert_eq!(n, 10),
            other => panic!("expected lag, got {other:?}"),
        }
        assert_eq!(bus.published(), EVENT_BUFFER as u64 + 12);
    }
}
