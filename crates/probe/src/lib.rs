//! # tasklatch-probe
//!
//! `tasklatch probe`: checks a live MCP tasks server, in any language, from the outside;
//! and [`bench`](mod@bench), `tasklatch bench http`, its load generator. The black box links the
//! contract's vocabulary and the oracle's independent readings, never the server it
//! judges (its dependencies show it).
//!
//! The probe is a client. It reaches the server over stdio (it spawns the process: one
//! process is one requestor) or Streamable HTTP (one identity per `--token NAME=TOKEN`),
//! opens each protocol era the server advertises (`--era auto`) or the one asked for, lists
//! the tools and their `taskSupport`, and runs its checks. Each check ends **pass**,
//! **fail** or **n/a** (with the reason: a check that needs a kind of tool, capability or
//! identity the server lacks says so, never passes silently), and keeps the requests and
//! responses that decided it as evidence.
//!
//! Phases:
//! 1. [`shapes`] — the wire shapes of both eras: capabilities and their nesting,
//!    `taskSupport`, `CreateTaskResult`, `tasks/get`, `tasks/result` and its related-task
//!    `_meta` (2025-11-25), the 2026-07-28 extension's shapes, error codes for unknown ids,
//!    malformed JSON, wrong types, unknown params tolerated.
//! 2. [`hostile`] — the hostile cases a client can express: a `required` tool called
//!    without a task, a `forbidden` one as a task, a task param without the capability,
//!    undeclared methods served, another identity's `get` / `result` / `cancel` / `list` /
//!    `update` (refused exactly as an unknown id), a cancelled task that completes, a
//!    terminal task that changes, an expired task revived, a retried `tools/call` (a second
//!    task is a **risk**, not a failure: neither era has an idempotency key; tasklatch's
//!    `_meta["dev.tasklatch/idempotency-key"]` is checked where the server honours it).
//! 3. [`workload`] — clients of every identity issue seeded random operations for the
//!    budget, then a liveness phase waits for every task to end; [`oracle`] judges the
//!    history (unique ids, isolation, terminal latch, gone stays gone, one result,
//!    liveness, every request answered).
//!
//! What black-box evidence cannot show: the probe sees no versions and no store, and its
//! clock is real, so a run is not deterministic; a finding is reported with what the wire
//! showed, and `--seed` replays the probe's own choices, not the server's timing.
//!
//! Exit codes: 0 nothing failed, 1 a check failed, 2 bad usage or a server that cannot be
//! reached or initialized (with the reason).

#![warn(missing_docs)]

mod asked;
pub mod bench;
pub mod effects;
mod era;
pub mod hostile;
pub mod lasting;
pub mod oracle;
pub mod outcomes;
pub mod peer;
pub mod progress;
mod pushed;
pub mod render;
pub mod retry;
pub mod shapes;
pub mod sse;
pub mod swimlane;
pub mod transport;
pub mod workload;

// The layers below, under the names the probe's code has always used.
use tasklatch_contract as contract;
use tasklatch_oracle as check;
use tasklatch_oracle::report;

use crate::contract::Era;
use peer::{Facts, Peer, ToolInfo};
use serde::Serialize;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use transport::{
    Clock, Connection, Exchange, HttpPeer, HttpUrl, Owned, OwnedHttp, StdioServer, StdioSlot,
    Unreachable,
};

/// The schema name of a probe report.
pub const REPORT_FORMAT: &str = "tasklatch.probe/v1";

/// How a check ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// The server did what the spec asks.
    Pass,
    /// It did not: a finding.
    Fail,
    /// The check could not be run against this server (the reason says why).
    NotApplicable,
    /// Allowed by the spec, dangerous in use (a retried call creating a second task): shown,
    /// not counted as a finding.
    Risk,
}

impl Verdict {
    /// `pass`, `fail`, `n/a`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::NotApplicable => "n/a",
            Verdict::Risk => "risk",
        }
    }
}

/// How strongly the spec asks for what a check checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Level {
    /// MUST (or the JSON-RPC base protocol).
    Must,
    /// SHOULD: a failure is reported, and counted apart.
    Should,
}

/// One check's outcome, with the exchanges that decided it.
#[derive(Clone, Debug, Serialize)]
pub struct CheckOutcome {
    /// The check's name, `phase.subject.what` (`shapes.get.task-fields`).
    pub check: String,
    /// The era it ran in.
    pub era: &'static str,
    /// How strongly the spec asks for it.
    pub level: Level,
    /// How it ended.
    pub verdict: Verdict,
    /// Why, in words: what was expected and what came.
    pub detail: String,
    /// The requests and responses behind the verdict.
    pub evidence: Vec<Exchange>,
}

/// What the probe is pointed at.
#[derive(Clone, Debug)]
pub enum Target {
    /// Spawn `program args…` and speak over its stdin and stdout.
    Stdio {
        /// The program.
        program: String,
        /// Its arguments.
        args: Vec<String>,
    },
    /// Speak Streamable HTTP to `url`, as each identity (none: one anonymous identity).
    Http {
        /// `http://HOST:PORT/PATH`.
        url: String,
        /// `(name, token)` pairs; each is an identity.
        tokens: Vec<(String, String)>,
        /// A command that starts the server (`--start`): the probe owns it, so it can kill
        /// and restart it.
        start: Option<String>,
    },
}

/// Which eras to probe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EraChoice {
    /// Each era the server advertises.
    Auto,
    /// Only this one (a server that does not speak it cannot be initialized: exit 2).
    Only(Era),
}

/// Everything a probe run needs.
#[derive(Clone, Debug)]
pub struct Config {
    /// The server.
    pub target: Target,
    /// The eras.
    pub era: EraChoice,
    /// The task tool the checks create tasks with (default: the first tool that can run
    /// as a task).
    pub tool: Option<String>,
    /// Arguments laid over those sampled from its input schema.
    pub args: Option<Value>,
    /// A tool whose tasks ask for input: the 2026-07-28 workload creates a quarter of its
    /// tasks with it and answers their questions by `tasks/update` (2025-11-25 asks by
    /// side requests on `tasks/result`, which the workload does not answer, so it is unused
    /// there). Its arguments: `input_args` laid over those sampled.
    pub input_tool: Option<String>,
    /// Arguments laid over those sampled for `input_tool`.
    pub input_args: Option<Value>,
    /// Where a task's side effect shows, `{taskId}` standing for its id (e.g.
    /// `exports/{taskId}.json`): with it, `hostile.cancelled-without-effect` aims cancels
    /// at the completion moment and looks for the effect of every task that ends cancelled.
    pub effect_path: Option<String>,
    /// Where a task's side effect shows as a line of a shared log (`--effect-log`): the
    /// same check, reading the log.
    pub effect_log: Option<effects::EffectLog>,
    /// The seed of the hostile checks' drawn choices (the workload has its own).
    pub seed: u64,
    /// How long one request may wait for its answer.
    pub request_timeout: Duration,
    /// How long a task the checks created may take to end.
    pub task_timeout: Duration,
    /// The longest TTL the expiry check waits out (a server granting more: n/a).
    pub expiry_wait: Duration,
    /// Phase 3's workload (none: phases 1 and 2 only).
    pub workload: Option<workload::Workload>,
    /// Print a line on stderr as each phase starts, and every 10 s of the workload.
    pub progress: bool,
}

impl Config {
    /// A config with the default timeouts (10 s per request, 60 s per task, expiry waited
    /// out up to 15 s).
    pub fn new(target: Target) -> Config {
        Config {
            target,
            era: EraChoice::Auto,
            tool: None,
            args: None,
            input_tool: None,
            input_args: None,
            effect_path: None,
            effect_log: None,
            seed: 1,
            request_timeout: Duration::from_secs(10),
            task_timeout: Duration::from_secs(60),
            expiry_wait: Duration::from_secs(15),
            workload: None,
            progress: false,
        }
    }
}

/// The result of a run.
#[derive(Debug, Serialize)]
pub struct Report {
    /// [`REPORT_FORMAT`].
    pub format: &'static str,
    /// The eras probed.
    pub eras: Vec<&'static str>,
    /// The eras not probed, and why (`--era auto`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<String>,
    /// What the server said about itself, per era.
    pub server: Vec<Value>,
    /// Every check, in the order run.
    pub checks: Vec<CheckOutcome>,
    /// The workload's seed (phase 3).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Each era's workload history (phase 3), for the timeline.
    #[serde(skip)]
    pub histories: Vec<EraHistory>,
    /// Per failed check (`ERA CHECK`), in how many of the reruns it failed again, of how
    /// many (`--reruns`).
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub recurrence: std::collections::BTreeMap<String, (usize, usize)>,
    /// The server's last stderr lines (stdio).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stderr_tail: Vec<String>,
    /// What the reader should know about how far the checks reached: arguments the probe
    /// raised so tasks last, checks weakened, a token the server does not check.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl Report {
    /// The checks that failed.
    pub fn findings(&self) -> impl Iterator<Item = &CheckOutcome> {
        self.checks
            .iter()
            .filter(|check| check.verdict == Verdict::Fail)
    }

    /// How many checks ended each way.
    pub fn counts(&self) -> Counts {
        let count = |verdict| {
            self.checks
                .iter()
                .filter(|check| check.verdict == verdict)
                .count()
        };
        Counts {
            pass: count(Verdict::Pass),
            fail: count(Verdict::Fail),
            not_applicable: count(Verdict::NotApplicable),
            risk: count(Verdict::Risk),
        }
    }
}

/// Checks by verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counts {
    /// Passed.
    pub pass: usize,
    /// Failed: findings.
    pub fail: usize,
    /// Not applicable.
    pub not_applicable: usize,
    /// Risks shown.
    pub risk: usize,
}

/// One era's workload, for the timeline and the swimlane.
#[derive(Clone, Debug)]
pub struct EraHistory {
    /// The era.
    pub era: &'static str,
    /// Every operation, in completion order.
    pub ops: Vec<workload::Op>,
    /// The kills.
    pub kills: Vec<workload::Kill>,
}

/// The name of an era as the report writes it.
pub fn era_name(era: Era) -> &'static str {
    match era {
        Era::Core2025 => peer::VERSION_2025,
        Era::Extension2026 => peer::VERSION_2026,
    }
}

/// One era opened for one identity: what the checks work with.
pub struct Opened {
    /// The client.
    pub peer: Peer,
    /// What the server declared.
    pub facts: Facts,
    /// Its tools.
    pub tools: Vec<ToolInfo>,
}

/// The connections of a run: one per identity, and the server the probe owns, if any.
pub struct Connections {
    /// One connection per identity, in the order given.
    pub identities: Vec<Arc<Connection>>,
    /// The server the probe spawned (stdio) or started (`--start`): it can kill it.
    pub owned: Option<Owned>,
}

impl Connections {
    /// The stdio server running now, if the probe spawned one.
    fn stdio(&self) -> Option<Arc<StdioServer>> {
        match self
            .identities
            .first()
            .map(|connection| connection.as_ref())
        {
            Some(Connection::Stdio(slot)) => Some(slot.current()),
            _ => None,
        }
    }
}

/// Connects to `target`: spawns a stdio server, or starts the HTTP server (`start`) and sets
/// up one HTTP peer per identity.
pub async fn connect(target: &Target, clock: Clock) -> Result<Connections, Unreachable> {
    match target {
        Target::Stdio { program, args } => {
            let connection = Arc::new(Connection::Stdio(StdioSlot::spawn(program, args, clock)?));
            Ok(Connections {
                identities: vec![connection.clone()],
                owned: Some(Owned::Stdio(connection)),
            })
        }
        Target::Http { url, tokens, start } => {
            let url = HttpUrl::parse(url).map_err(Unreachable)?;
            let owned = match start {
                None => None,
                Some(command) => Some(Owned::Http(Arc::new(
                    OwnedHttp::start(command, &url.authority, READY_TIMEOUT).await?,
                ))),
            };
            let identities = if tokens.is_empty() {
                vec![Arc::new(Connection::Http(HttpPeer::new(
                    url,
                    "anonymous".to_owned(),
                    None,
                    clock,
                )))]
            } else {
                tokens
                    .iter()
                    .map(|(name, token)| {
                        Arc::new(Connection::Http(HttpPeer::new(
                            url.clone(),
                            name.clone(),
                            Some(token.clone()),
                            clock,
                        )))
                    })
                    .collect()
            };
            Ok(Connections { identities, owned })
        }
    }
}

/// How long a server the probe starts or restarts may take to accept connections.
pub const READY_TIMEOUT: Duration = Duration::from_secs(30);

/// Opens `era` as `connection`'s identity and lists the tools; the error says why the
/// server could not be initialized in that era.
pub async fn open(
    era: Era,
    connection: Arc<Connection>,
    config: &Config,
) -> Result<Opened, String> {
    let peer = Peer::new(era, connection, config.request_timeout);
    let facts = peer.open().await.map_err(|exchange| {
        format!(
            "{} could not be opened: {}",
            era_name(era),
            exchange.summary()
        )
    })?;
    let tools = peer.tools().await.map_err(|exchange| {
        format!(
            "tools/list failed in {}: {}",
            era_name(era),
            exchange.summary()
        )
    })?;
    Ok(Opened { peer, facts, tools })
}

/// Probes one opened era: its server entry, the shapes and hostile checks (with every
/// other identity opened in it) and the workload, each into `report`.
async fn probe_era(
    report: &mut Report,
    opened: &Opened,
    connections: &Connections,
    era: Era,
    config: &Config,
    clock: Clock,
    progress: &progress::Progress,
) -> Result<(), Unreachable> {
    report.eras.push(era_name(era));
    report.server.push(serde_json::json!({
        "era": era_name(era),
        "serverInfo": opened.facts.server_info,
        "capabilities": opened.facts.capabilities,
        "tools": opened.tools.iter().map(|tool| serde_json::json!({
            "name": tool.name, "taskSupport": tool.task_support,
        })).collect::<Vec<_>>(),
    }));
    let mut others = Vec::new();
    for connection in &connections.identities[1..] {
        let other = open(era, connection.clone(), config)
            .await
            .map_err(|reason| {
                Unreachable(format!("identity {}: {reason}", connection.identity()))
            })?;
        others.push(other);
    }
    let context = shapes::Context {
        opened,
        others: &others,
        config,
        clock,
    };
    let lasting = lasting::calibrate(&context).await;
    if let Some(note) = lasting.note {
        report.notes.push(format!("{}: {note}", era_name(era)));
    }
    let raised;
    let context = match lasting.args {
        Some(args) => {
            raised = Config {
                args: Some(args),
                ..config.clone()
            };
            shapes::Context {
                config: &raised,
                ..context
            }
        }
        None => context,
    };
    let say = |what: &str| progress.phase(clock.now_ms() as f64 / 1000.0, era_name(era), what);
    say("phase 1, shapes");
    report.checks.extend(shapes::run(&context).await);
    say("phase 2, hostile cases");
    report.checks.extend(hostile::run(&context).await);
    report.checks.extend(deaths_of(connections, era));
    if let Some(workload) = &config.workload {
        say(&format!(
            "phase 3, workload for {:?}{} (seed {})",
            workload.budget,
            if workload.kill { " with kills" } else { "" },
            workload.seed
        ));
        let (checks, history) =
            run_workload(&context, workload, connections.owned.clone(), progress).await;
        report.checks.extend(checks);
        report.histories.push(history);
        report.checks.extend(
            deaths_of(connections, era)
                .into_iter()
                .filter(|check| check.verdict == Verdict::Fail),
        );
    }
    Ok(())
}

/// Opens `era` as the first identity if the server offers it: `None` (with the reason in
/// `report.skipped`) for an era `--era auto` skips; `Err` for a forced era the server
/// cannot open or does not advertise at all (every check would only report that).
async fn open_offered(
    era: Era,
    first: &Arc<Connection>,
    config: &Config,
    connections: &Connections,
    report: &mut Report,
) -> Result<Option<Opened>, Unreachable> {
    // Each era is opened once: a second `initialize` on one session is refused.
    let opened = match open(era, first.clone(), config).await {
        Ok(opened) => opened,
        Err(reason) if config.era == EraChoice::Auto => {
            report.skipped.push(reason);
            return Ok(None);
        }
        Err(reason) => {
            return Err(Unreachable(format!("{reason}{}", stderr_of(connections))));
        }
    };
    let declared = match era {
        Era::Core2025 => opened.facts.capabilities.get("tasks").is_some(),
        Era::Extension2026 => opened.facts.tool_tasks(),
    };
    if !declared && config.era == EraChoice::Auto {
        report.skipped.push(format!(
            "{}: the server does not advertise tasks in this era",
            era_name(era)
        ));
        return Ok(None);
    }
    // Forced, a malformed declaration (`true` for an object) is still an offer: its shape
    // is a finding of its own.
    let mentioned = match era {
        Era::Core2025 => declared,
        Era::Extension2026 => {
            !opened.facts.capabilities["extensions"][peer::TASKS_EXTENSION].is_null()
        }
    };
    if !mentioned {
        if let Some(owned) = &connections.owned {
            owned.stop().await;
        }
        return Err(Unreachable(format!(
            "--era {} was forced, but the server does not advertise tasks in that era \
             (2025-11-25: `capabilities.tasks` in `initialize`; 2026-07-28: the tasks \
             extension in `server/discover`); drop --era to probe what it offers{}",
            era_name(era),
            stderr_of(connections)
        )));
    }
    Ok(Some(opened))
}

/// Runs the probe. `Err` is a target that cannot be reached or initialized (exit 2).
pub async fn run(config: &Config) -> Result<Report, Unreachable> {
    let clock = Clock::start();
    let progress = progress::Progress::new(config.progress);
    progress.phase(0.0, "probe", "connecting");
    let connections = connect(&config.target, clock).await?;
    let first = connections.identities[0].clone();
    let candidates = match config.era {
        EraChoice::Only(era) => vec![era],
        EraChoice::Auto => vec![Era::Core2025, Era::Extension2026],
    };
    let mut report = Report {
        format: REPORT_FORMAT,
        eras: Vec::new(),
        skipped: Vec::new(),
        server: Vec::new(),
        checks: Vec::new(),
        seed: config.workload.as_ref().map(|workload| workload.seed),
        histories: Vec::new(),
        recurrence: std::collections::BTreeMap::new(),
        stderr_tail: Vec::new(),
        notes: Vec::new(),
    };
    for era in candidates {
        let Some(opened) = open_offered(era, &first, config, &connections, &mut report).await?
        else {
            continue;
        };
        if report.eras.is_empty()
            && let Some(note) = token_unchecked(&config.target, era, config, clock).await
        {
            report.notes.push(note);
        }
        probe_era(
            &mut report,
            &opened,
            &connections,
            era,
            config,
            clock,
            &progress,
        )
        .await?;
    }
    if report.eras.is_empty() {
        return Err(Unreachable(format!(
            "no era to probe (2025-11-25 needs `capabilities.tasks` in `initialize`, \
             2026-07-28 the tasks extension in `server/discover`): {}{}",
            report.skipped.join("; "),
            stderr_of(&connections)
        )));
    }
    if let Some(server) = connections.stdio() {
        report.stderr_tail = server.stderr_tail();
    }
    if let Some(owned) = &connections.owned {
        owned.stop().await;
    }
    Ok(report)
}

/// Phases 1 and 2 of one era, in s: about this long with quick tools, and this long at
/// most with slow ones (the expiry wait and aimed cancels are added to the most).
const CHECKS_S_TYPICAL: u64 = 15;
const CHECKS_S_MOST: u64 = 60;

/// What a run will do and about how long it takes, said before it starts: `--budget` is
/// per era and `--reruns` repeats the whole run.
pub fn plan(config: &Config, reruns: usize) -> String {
    let (eras, eras_max) = match config.era {
        EraChoice::Auto => ("each era the server advertises (up to 2)".to_owned(), 2),
        EraChoice::Only(era) => (era_name(era).to_owned(), 1),
    };
    let effects_s = if config.effect_path.is_some() || config.effect_log.is_some() {
        30
    } else {
        0
    };
    let most_checks_s = CHECKS_S_MOST + effects_s + config.expiry_wait.as_secs();
    let (workload, budget_s, settle_s) = match &config.workload {
        Some(workload) => (
            format!(
                ", then the workload for {:?}{} and up to {:?} for its tasks to end",
                workload.budget,
                if workload.kill { " with kills" } else { "" },
                config.task_timeout
            ),
            workload.budget.as_secs(),
            config.task_timeout.as_secs(),
        ),
        None => (", no workload (--budget 0)".to_owned(), 0, 0),
    };
    let runs = 1 + reruns as u64;
    let typical_s = eras_max * (CHECKS_S_TYPICAL + budget_s) * runs;
    let least_s = CHECKS_S_TYPICAL + budget_s;
    let most_s = eras_max * (most_checks_s + budget_s + settle_s) * runs;
    format!(
        "plan: eras: {eras}; per era: shapes and hostile checks (about {CHECKS_S_TYPICAL}–\
         {most_checks_s} s){workload}; reruns: {}; expected: about {} ({} for one era and \
         no rerun, at most {} with slow tools)",
        if reruns == 0 {
            "none".to_owned()
        } else {
            format!("{reruns} (the whole run again, same seed, if it finds something)")
        },
        duration_words(typical_s),
        duration_words(least_s),
        duration_words(most_s),
    )
}

fn duration_words(seconds: u64) -> String {
    if seconds < 120 {
        format!("{seconds} s")
    } else {
        format!("{} min", seconds.div_ceil(60))
    }
}

/// Runs the probe, then `reruns` more times with the same settings (the same seed), and
/// records how often each finding recurred.
pub async fn run_with_reruns(config: &Config, reruns: usize) -> Result<Report, Unreachable> {
    let mut report = run(config).await?;
    let failed: Vec<String> = report
        .findings()
        .map(|check| format!("{} {}", check.era, check.check))
        .collect();
    if reruns == 0 || failed.is_empty() {
        return Ok(report);
    }
    let mut recurred = vec![0; failed.len()];
    for round in 0..reruns {
        if config.progress {
            eprintln!("rerun {} of {reruns}", round + 1);
        }
        let again = run(config).await?;
        for (index, name) in failed.iter().enumerate() {
            recurred[index] += usize::from(
                again
                    .findings()
                    .any(|check| format!("{} {}", check.era, check.check) == *name),
            );
        }
    }
    report.recurrence = failed
        .into_iter()
        .zip(recurred)
        .map(|(name, count)| (name, (count, reruns)))
        .collect();
    Ok(report)
}

/// Phase 3 in one era: the clients of every identity, then the oracle.
async fn run_workload(
    context: &shapes::Context<'_>,
    workload: &workload::Workload,
    owned: Option<Owned>,
    progress: &progress::Progress,
) -> (Vec<CheckOutcome>, EraHistory) {
    let era = context.opened.peer.era;
    let tool = match shapes::chosen_tool(context) {
        Ok(tool) => tool,
        Err(why) => {
            let mut out = outcomes::Outcomes::new(era);
            out.not_applicable("workload", Level::Must, &why);
            return (
                out.list,
                EraHistory {
                    era: era_name(era),
                    ops: Vec::new(),
                    kills: Vec::new(),
                },
            );
        }
    };
    let mut noted = outcomes::Outcomes::new(era);
    let input_tool = match (&context.config.input_tool, era) {
        (Some(name), Era::Extension2026) => {
            let found = shapes::named_tool(context, name, context.config.input_args.as_ref());
            if found.is_none() {
                noted.not_applicable(
                    "workload.input-tool",
                    Level::Must,
                    &format!("n/a (no such tool): `--input-tool {name}` is not in tools/list"),
                );
            }
            found
        }
        _ => None,
    };
    let mut clients = Vec::new();
    for opened in std::iter::once(context.opened).chain(context.others.iter()) {
        for _ in 0..workload.clients_per_identity.max(1) {
            let mut waiting_peer = opened.peer.sibling();
            waiting_peer.timeout = context.config.task_timeout;
            clients.push(workload::ClientSpec {
                peer: Arc::new(opened.peer.sibling()),
                waiting_peer: Arc::new(waiting_peer),
                tool: tool.clone(),
                input_tool: input_tool.clone(),
                list: opened.facts.list(),
                cancel: opened.facts.cancel(),
            });
        }
    }
    let history = workload::run(
        clients,
        workload,
        owned,
        context.clock,
        context.config.task_timeout,
        progress,
    )
    .await;
    let ops = history.ops();
    let kills = history.kills();
    let mut checks = noted.list;
    checks.extend(oracle::judge(
        &ops,
        &history.owned(),
        era,
        &kills,
        workload.durable,
    ));
    if workload.kill {
        let mut out = outcomes::Outcomes::new(era);
        let failure = history
            .restart_failure
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        out.judge(
            "workload.restarts",
            Level::Must,
            &format!("{} kill(s), the server restarted after each", kills.len()),
            failure.map(|failure| format!("the server did not come back after a kill: {failure}")),
            &[],
        );
        checks.extend(out.list);
    }
    (
        checks,
        EraHistory {
            era: era_name(era),
            ops,
            kills,
        },
    )
}

/// With `--token`: a note when a request without a token is served as well (opening the
/// era and listing the tools), so the foreign-identity checks judged session scoping, not
/// identities.
async fn token_unchecked(
    target: &Target,
    era: Era,
    config: &Config,
    clock: Clock,
) -> Option<String> {
    let Target::Http { url, tokens, .. } = target else {
        return None;
    };
    if tokens.is_empty() {
        return None;
    }
    let url = HttpUrl::parse(url).ok()?;
    let anonymous = Arc::new(Connection::Http(HttpPeer::new(
        url,
        "no-token".to_owned(),
        None,
        clock,
    )));
    open(era, anonymous, config).await.ok()?;
    Some(format!(
        "--token: the server served a request without any token ({} initialize and \
         tools/list), so it checks no token: the foreign-identity checks then judge what a \
         second session sees, not a second identity",
        era_name(era)
    ))
}

/// `process.stayed-up`: a stdio server the probe spawned must not end on its own (it was
/// spawned again after each death, so the checks after it still ran).
fn deaths_of(connections: &Connections, era: Era) -> Vec<CheckOutcome> {
    let mut out = outcomes::Outcomes::new(era);
    let Some(Connection::Stdio(slot)) = connections.identities.first().map(|c| c.as_ref()) else {
        out.not_applicable(
            "process.stayed-up",
            Level::Must,
            "n/a: the probe sees the process only over stdio",
        );
        return out.list;
    };
    let deaths = slot.take_deaths();
    out.judge(
        "process.stayed-up",
        Level::Must,
        "the server process never ended on its own",
        deaths.first().map(|death| {
            format!(
                "the server process ended {} time(s) without being killed (spawned again each \
                 time); first noticed at {} ms ({}); its stderr ended: {}",
                deaths.len(),
                death.noticed_ms,
                death.reason,
                death
                    .stderr_tail
                    .iter()
                    .rev()
                    .take(6)
                    .rev()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(" | ")
            )
        }),
        &[],
    );
    out.list
}

fn stderr_of(connections: &Connections) -> String {
    let Some(server) = connections.stdio() else {
        return String::new();
    };
    let tail = server.stderr_tail();
    if tail.is_empty() {
        String::new()
    } else {
        let start = tail.len().saturating_sub(10);
        format!(
            "; the server's stderr ends:\n  {}",
            tail[start..].join("\n  ")
        )
    }
}
