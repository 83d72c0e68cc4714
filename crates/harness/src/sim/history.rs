//! The history a run records: events with their lanes, node names, coverage marks.

use super::scenario::Plan;
use crate::check::Event;
use crate::runtime::Point;
use std::collections::BTreeMap;
use std::sync::Mutex;

/// The shared, append-only record the oracle reads.
#[derive(Default)]
pub(super) struct History {
    /// Each event with its lane.
    pub(super) events: Mutex<Vec<(Event, String)>>,
    pub(super) marks: Mutex<BTreeMap<String, u64>>,
    /// Node names by id, for lanes; unnamed nodes (the supervisor) are `supervisor`.
    pub(super) names: Mutex<BTreeMap<madsim::task::NodeId, String>>,
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
        self.events.lock().expect("events").len()
    }

    pub(super) fn lane_of(&self, node: madsim::task::NodeId) -> String {
        self.names
            .lock()
            .expect("names")
            .get(&node)
            .cloned()
            .unwrap_or_else(|| "supervisor".into())
    }

    /// Records `event` on `lane` (a fault's victim).
    pub(super) fn push_on(&self, lane: impl Into<String>, event: Event) {
        self.events
            .lock()
            .expect("history")
            .push((event, lane.into()));
    }

    pub(super) fn node_names(&self) -> Vec<String> {
        match self.names.lock() {
            Ok(names) => names.values().cloned().collect(),
            Err(poisoned) => poisoned.into_inner().values().cloned().collect(),
        }
    }

    pub(super) fn name(&self, node: madsim::task::NodeId, name: &str) {
        self.names.lock().expect("names").insert(node, name.into());
    }

    /// The history so far, split into events and lanes (a poisoned lock still yields it:
    /// the run that panicked is the one worth reading).
    pub(super) fn take(&self) -> (Vec<Event>, Vec<String>) {
        let mut events = match self.events.lock() {
            Ok(events) => events,
            Err(poisoned) => poisoned.into_inner(),
        };
        std::mem::take(&mut *events).into_iter().unzip()
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
