//! The queue contract: at-least-once delivery with leases. A received message is leased to
//! its consumer; unacknowledged, it becomes visible again when the lease expires (so a
//! killed worker's message is redelivered); `nack` makes it visible again at a chosen time.
//! Only the current delivery may ack or nack (a receipt names the delivery).
//!
//! The queue holds no durable state the system depends on: the store's outbox is the
//! durable backstop, republishing any entry whose task is not terminal. Losing the whole
//! queue costs time, never a task. Time is an argument, as in the store.

use crate::store::WrappedRequest;
use crate::sync::{Mutex, MutexGuard};
use std::collections::BTreeMap;

/// What the dispatcher publishes for a task.
#[derive(Clone, Debug, PartialEq)]
pub struct Message {
    /// The task to run.
    pub task_id: String,
    /// The task's authorization key; the worker's completion write acts for it.
    pub auth_key: String,
    /// The `tools/call` the task wraps.
    pub request: WrappedRequest,
    /// The outbox attempt that published it: the worker acks the outbox entry with it.
    pub outbox_attempt: u32,
}

/// Names one delivery of one message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Receipt {
    /// The message's number in this queue, unique per publication.
    pub sequence: u64,
    /// Which delivery of that message, from 1; a redelivery invalidates older receipts.
    pub delivery: u32,
}

/// A message handed to a consumer under a lease.
#[derive(Clone, Debug, PartialEq)]
pub struct Delivery {
    /// The message delivered.
    pub message: Message,
    /// What acks or nacks this delivery (and no other).
    pub receipt: Receipt,
}

/// Why a queue operation failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum QueueError {
    /// The queue is at capacity: publish later (the outbox keeps the entry).
    Full {
        /// The queue's bound, in messages.
        capacity: usize,
    },
    /// A thread panicked holding the queue's lock; the queue is unusable.
    Poisoned,
}

impl std::fmt::Display for QueueError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            QueueError::Full { capacity } => write!(f, "queue full ({capacity} messages)"),
            QueueError::Poisoned => f.write_str("queue lock poisoned by a panic"),
        }
    }
}

impl std::error::Error for QueueError {}

/// The queue port.
pub trait Queue: Send + Sync {
    /// Adds a message, visible at once; [`QueueError::Full`] at capacity.
    fn publish(&self, message: Message, now_ms: u64) -> Result<(), QueueError>;
    /// The oldest visible message, leased until `now_ms + lease_ms`.
    fn receive(&self, now_ms: u64, lease_ms: u64) -> Result<Option<Delivery>, QueueError>;
    /// Removes the message if `receipt` is its current delivery.
    fn ack(&self, receipt: Receipt) -> Result<bool, QueueError>;
    /// Makes the message visible again at `visible_at_ms` if `receipt` is current.
    fn nack(&self, receipt: Receipt, visible_at_ms: u64) -> Result<bool, QueueError>;
    /// Messages held (visible or leased).
    fn len(&self) -> Result<usize, QueueError>;
    /// No message held, visible or leased.
    fn is_empty(&self) -> Result<bool, QueueError> {
        Ok(self.len()? == 0)
    }
    /// How many more messages it takes now, if it knows (`None`: no bound it can tell).
    /// The dispatcher claims no more outbox entries than this: an entry claimed but not
    /// published sits leased, unpublishable, until its lease runs out.
    fn room(&self) -> Result<Option<usize>, QueueError> {
        Ok(None)
    }
}

struct Entry {
    message: Message,
    visible_at_ms: u64,
    deliveries: u32,
}

#[derive(Default)]
struct State {
    next_sequence: u64,
    entries: BTreeMap<u64, Entry>,
}

/// An in-process queue, bounded.
pub struct MemoryQueue {
    state: Mutex<State>,
    capacity: usize,
}

/// Default bound on held messages.
pub const QUEUE_CAPACITY_DEFAULT: usize = 10_000;

impl MemoryQueue {
    /// An empty queue holding at most `capacity` messages (at least 1).
    pub fn new(capacity: usize) -> MemoryQueue {
        assert!(capacity > 0, "a queue needs room for one message");
        MemoryQueue {
            state: Mutex::new(State::default()),
            capacity,
        }
    }

    fn lock(&self) -> Result<MutexGuard<'_, State>, QueueError> {
        self.state.lock().map_err(|_| QueueError::Poisoned)
    }
}

impl Default for MemoryQueue {
    fn default() -> MemoryQueue {
        MemoryQueue::new(QUEUE_CAPACITY_DEFAULT)
    }
}

impl Queue for MemoryQueue {
    fn publish(&self, message: Message, now_ms: u64) -> Result<(), QueueError> {
        let mut state = self.lock()?;
        if state.entries.len() >= self.capacity {
            return Err(QueueError::Full {
                capacity: self.capacity,
            });
        }
        let sequence = state.next_sequence;
        state.next_sequence += 1;
        state.entries.insert(
            sequence,
            Entry {
                message,
                visible_at_ms: now_ms,
                deliveries: 0,
            },
        );
        Ok(())
    }

    fn receive(&self, now_ms: u64, lease_ms: u64) -> Result<Option<Delivery>, QueueError> {
        let mut state = self.lock()?;
        let Some((&sequence, entry)) = state
            .entries
            .iter_mut()
            .find(|(_, entry)| entry.visible_at_ms <= now_ms)
        else {
            return Ok(None);
        };
        entry.deliveries += 1;
        entry.visible_at_ms = now_ms.saturating_add(lease_ms.max(1));
        Ok(Some(Delivery {
            message: entry.message.clone(),
            receipt: Receipt {
                sequence,
                delivery: entry.deliveries,
            },
        }))
    }

    fn ack(&self, receipt: Receipt) -> Result<bool, QueueError> {
        let mut state = self.lock()?;
        let current = state
            .entries
            .get(&receipt.sequence)
            .is_some_and(|entry| entry.deliveries == receipt.delivery);
        if current {
            state.entries.remove(&receipt.sequence);
        }
        Ok(current)
    }

    fn nack(&self, receipt: Receipt, visible_at_ms: u64) -> Result<bool, QueueError> {
        let mut state = self.lock()?;
        match state.entries.get_mut(&receipt.sequence) {
            Some(entry) if entry.deliveries == receipt.delivery => {
                entry.visible_at_ms = visible_at_ms;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    fn room(&self) -> Result<Option<usize>, QueueError> {
        Ok(Some(
            self.capacity.saturating_sub(self.lock()?.entries.len()),
        ))
    }

    fn len(&self) -> Result<usize, QueueError> {
        Ok(self.lock()?.entries.len())
    }
}
