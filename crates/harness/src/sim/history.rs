//! The history a run records: events with their lanes, node names, coverage marks.

use super::scenario::Plan;
use crate::check::Event;
use crate::runtime::Point;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// Events a run's history has room for before it grows (most runs record a few hundred;
/// growing moves every event recorded so far).
const EVENTS_RESERVED: usize = 1_024;

/// The events and, index for index, their lanes.
struct Recorded {
    events: Vec<Event>,
    /// Shared names: recording an event costs no allocation for its lane.
    lanes: Vec<Arc<str>>,
}

impl Default for Recorded {
    fn default() -> Recorded {
        Recorded {
            events: Vec::with_capacity(EVENTS_RESERVED),
            lanes: Vec::with_capacity(EVENTS_RESERVED),
        }
    }
}

/// The shared, append-only record the oracle reads.
#[derive(Default)]
pub(super) struct History {
    /// Each event with its lane.
    recorded: Mutex<Recorded>,
    pub(super) marks: Mutex<BTreeMap<String, u64>>,
    /// Node names by id, for lanes; unnamed nodes (the supervisor) are `supervisor`.
    names: Mutex<BTreeMap<madsim::task::NodeId, Arc<str>>>,
    /// The run's knobs and faults, once drawn.
    pub(super) plan: Mutex<Option<Plan>>,
}

impl History {
    /// Records `event` on the lane of the node recording it.
    pub(super) fn push(&self, event: Event) {
        self.push_on(self.lane_of(madsim::plugin::node()), event);
    }

    /// How many events are recorded so far.
    pub(super) fn len(&self) -> usize {
        self.recorded.lock().expect("events").events.len()
    }

    pub(super) fn lane_of(&self, node: madsim::task::NodeId) -> Arc<str> {
        self.names
            .lock()
            .expect("names")
            .get(&node)
            .cloned()
            .unwrap_or_else(|| "supervisor".into())
    }

    /// Records `event` on `lane` (a fault's victim).
    pub(super) fn push_on(&self, lane: impl Into<Arc<str>>, event: Event) {
        let mut recorded = self.recorded.lock().expect("history");
        recorded.events.push(event);
        recorded.lanes.push(lane.into());
    }

    pub(super) fn node_names(&self) -> Vec<String> {
        match self.names.lock() {
            Ok(names) => names.values().map(|name| name.to_string()).collect(),
            Err(poisoned) => poisoned
                .into_inner()
                .values()
                .map(|name| name.to_string())
                .collect(),
        }
    }

    /// Every named node.
    pub(super) fn node_ids(&self) -> Vec<madsim::task::NodeId> {
        self.names.lock().expect("names").keys().copied().collect()
    }

    pub(super) fn name(&self, node: madsim::task::NodeId, name: &str) {
        self.names.lock().expect("names").insert(node, name.into());
    }

    /// The history so far, split into events and lanes (a poisoned lock still yields it:
    /// the run that panicked is the one worth reading).
    pub(super) fn take(&self) -> (Vec<Event>, Vec<Arc<str>>) {
        let mut recorded = match self.recorded.lock() {
            Ok(recorded) => recorded,
            Err(poisoned) => poisoned.into_inner(),
        };
        (
            std::mem::take(&mut recorded.events),
            std::mem::take(&mut recorded.lanes),
        )
    }

    pub(super) fn mark(&self, name: impl AsRef<str> + Into<String>) {
        let mut marks = self.marks.lock().expect("marks");
        // Counted in place once seen: most marks repeat, and a key costs an allocation.
        match marks.get_mut(name.as_ref()) {
            Some(count) => *count += 1,
            None => {
                marks.insert(name.into(), 1);
            }
        }
    }

    /// Marks `{prefix}:{point}` without building the name when it was seen before.
    pub(super) fn mark_point(&self, prefix: &str, point: Point) {
        let name = point.name();
        let length = prefix.len() + 1 + name.len();
        let mut buffer = [0u8; 64];
        if length > buffer.len() {
            return self.mark(format!("{prefix}:{name}"));
        }
        buffer[..prefix.len()].copy_from_slice(prefix.as_bytes());
        buffer[prefix.len()] = b':';
        buffer[prefix.len() + 1..length].copy_from_slice(name.as_bytes());
        self.mark(std::str::from_utf8(&buffer[..length]).expect("two names and a colon"));
    }
}
