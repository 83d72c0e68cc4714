//! What a run leaves: its outcome, the timeline and trace hash, the command that replays
//! it, and the seed ranges and store URLs the CLI and tests pass in.

use super::SIM_EPOCH_MS;
use super::render;
use super::scenario::{Plan, Scenario};
use crate::check::{Event, Violation};
use crate::store::StoreFactory;
use std::collections::BTreeMap;

/// The outcome of one seed.
#[derive(Clone, Debug)]
pub struct SimOutcome {
    /// The scenario's name.
    pub scenario: String,
    /// The seed run.
    pub seed: u64,
    /// The knobs and fault schedule the run drew (or was given); `None` when it
    /// panicked before drawing them.
    pub plan: Option<Plan>,
    /// Broken invariants; a panic inside the simulation (an assertion of the system
    /// under test, say) is reported as the pseudo-invariant `panic`.
    pub violations: Vec<Violation>,
    /// Coverage marks: how often each interesting path happened.
    pub marks: BTreeMap<String, u64>,
    /// SHA-256 of the whole history: equal for equal seeds.
    pub trace_hash: String,
    /// The recorded history; [`SimOutcome::timeline`] renders it.
    pub history: Vec<Event>,
    /// For each event of the history, the lane it happened on: the node that recorded
    /// it (`client-0`, `worker-1`, `dispatcher`, …), or the victim of a fault.
    pub lanes: Vec<std::sync::Arc<str>>,
    /// Every node of the world by name, whether or not it recorded anything.
    pub nodes: Vec<String>,
    /// The store the run used: its factory's name (`memory`, `sqlite`, yours).
    pub store: String,
    /// The URL that reopens that kind of store (`--store`); `None` for the default memory
    /// store and for stores the CLI cannot name.
    pub store_url: Option<String>,
}

impl SimOutcome {
    /// The history, one line per event with its simulated time.
    pub fn timeline(&self) -> Vec<String> {
        self.history
            .iter()
            .zip(&self.lanes)
            .map(|(event, lane)| TimelineLine(event, lane).to_string())
            .collect()
    }

    /// The line a user pastes to replay this run (with the active mutant and the store,
    /// if any).
    pub fn repro_command(&self) -> String {
        repro_command(
            &self.scenario,
            self.seed,
            crate::mutants::active_name(),
            self.store_url.as_deref(),
        )
    }
}

impl SimOutcome {
    /// A run that ended before its checks, with one pseudo-violation saying why.
    pub(super) fn unfinished(
        scenario: &Scenario,
        seed: u64,
        invariant: &'static str,
        detail: String,
    ) -> SimOutcome {
        SimOutcome {
            scenario: scenario.name.clone(),
            seed,
            plan: None,
            violations: vec![Violation {
                invariant,
                task_id: String::new(),
                detail,
                events: Vec::new(),
            }],
            marks: BTreeMap::new(),
            trace_hash: trace_hash(&[], &[]),
            history: Vec::new(),
            lanes: Vec::new(),
            nodes: Vec::new(),
            store: String::new(),
            store_url: None,
        }
    }
}

/// The line a user pastes to replay `seed` of `scenario` (a name, or a scenario file) with
/// `mutant` on, on the store `store_url` names (the memory store when `None`); it prints
/// the run's timeline and trace hash.
pub fn repro_command(
    scenario: &str,
    seed: u64,
    mutant: Option<&str>,
    store_url: Option<&str>,
) -> String {
    let quote = |text: &str| {
        if text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./:".contains(&b))
        {
            text.to_owned()
        } else {
            format!("'{}'", text.replace('\'', r"'\''"))
        }
    };
    let quoted = quote(scenario);
    let store = store_url
        .map(|url| format!(" --store {}", quote(url)))
        .unwrap_or_default();
    match mutant {
        None => {
            format!("cargo run --features sim -- repro --scenario {quoted} --seed {seed}{store}")
        }
        Some(mutant) => format!(
            "TASKLATCH_MUTANT={mutant} cargo run --features mutants -- repro --scenario {quoted} --seed {seed}{store}"
        ),
    }
}

/// The factory for a `--store` URL the simulation can run: `memory:` or `sqlite:DIR`.
/// A networked store (PostgreSQL) is refused: it would run outside the simulation's
/// control — its own threads, sockets and clock — so no seed could replay.
pub fn store_for(url: &str) -> Result<Box<dyn StoreFactory>, String> {
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        return Err(format!(
            "--store {url:?}: the simulation runs its store in-process on one deterministic \
             thread; a networked store (PostgreSQL) cannot replay a seed. Check PostgreSQL \
             with the conformance suite and the proptest machine instead"
        ));
    }
    crate::store::factory_for(url).map_err(|error| format!("--store: {error}"))
}

/// Seeds from `SIM_SEED=n` or `SIM_SEEDS=a..b`, else `default`.
///
/// Environment: `SIM_SEED` (one seed) and `SIM_SEEDS` (a half-open range `a..b`) override
/// the default range of the seed tests and of `tasklatch sim`.
pub fn seeds_from_env(default: std::ops::Range<u64>) -> Result<std::ops::Range<u64>, String> {
    if let Ok(one) = std::env::var("SIM_SEED") {
        let seed: u64 = one
            .parse()
            .map_err(|_| format!("SIM_SEED={one:?} is not a number"))?;
        return Ok(seed..seed + 1);
    }
    if let Ok(range) = std::env::var("SIM_SEEDS") {
        return parse_seed_range(&range).map_err(|error| format!("SIM_SEEDS: {error}"));
    }
    Ok(default)
}

/// Parses a half-open seed range `a..b` (non-empty).
pub fn parse_seed_range(text: &str) -> Result<std::ops::Range<u64>, String> {
    let (a, b) = text
        .split_once("..")
        .ok_or_else(|| format!("{text:?}: expected a..b"))?;
    let (a, b): (u64, u64) = (
        a.parse().map_err(|_| format!("{text:?}: bad start"))?,
        b.parse().map_err(|_| format!("{text:?}: bad end"))?,
    );
    if a >= b {
        return Err(format!("{text:?} is empty"));
    }
    Ok(a..b)
}

/// Simulated milliseconds since the start of the run at which `event` happened.
pub fn offset_ms(event: &Event) -> u64 {
    match event {
        Event::Client { at_ms, .. }
        | Event::Applied { at_ms, .. }
        | Event::Effect { at_ms, .. }
        | Event::EffectPrepared { at_ms, .. }
        | Event::EffectDiscarded { at_ms, .. }
        | Event::Notified { at_ms, .. }
        | Event::StoreError { at_ms, .. }
        | Event::Claimed { at_ms, .. }
        | Event::Acked { at_ms, .. }
        | Event::Refused { at_ms, .. }
        | Event::Swept { at_ms, .. }
        | Event::Injected { at_ms, .. }
        | Event::Runtime { at_ms, .. }
        | Event::Pushed { at_ms, .. }
        | Event::Opened { at_ms, .. }
        | Event::ToolRun { at_ms, .. }
        | Event::ToolReturned { at_ms, .. }
        | Event::Fault { at_ms, .. } => at_ms - SIM_EPOCH_MS,
    }
}

/// One timeline line: the offset, the lane, then the event. The trace hash is taken over
/// exactly these.
pub(super) struct TimelineLine<'e>(pub(super) &'e Event, pub(super) &'e str);

impl std::fmt::Display for TimelineLine<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:>8} ms  {:<10}  {:?}",
            offset_ms(self.0),
            self.1,
            self.0
        )
    }
}

/// SHA-256 over the timeline's lines joined by newlines. Each line is rendered into one
/// reused buffer (by [`render::write_line`], byte for byte a [`TimelineLine`]) and hashed
/// whole (many tiny hasher updates cost more than the copy).
pub(super) fn trace_hash(events: &[Event], lanes: &[std::sync::Arc<str>]) -> String {
    use sha2::Digest as _;
    let mut hasher = sha2::Sha256::new();
    let mut line = String::with_capacity(512);
    for (index, (event, lane)) in events.iter().zip(lanes).enumerate() {
        line.clear();
        if index > 0 {
            line.push('\n');
        }
        render::write_line(&mut line, offset_ms(event), lane, event);
        hasher.update(line.as_bytes());
    }
    crate::contract::hex_lower(&hasher.finalize())
}
