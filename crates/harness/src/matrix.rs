//! The kill matrix: every engine against every mutant, and against the unmutated build.
//!
//! An engine *kills* a mutant when it reports a failure with that mutant active; the cell
//! records how much of the engine's everyday budget it spent to get there (cases, checks,
//! seeds, interleavings) and the time. The unmutated row must show no kill at all: an
//! engine that fails without a mutant proves nothing when it fails with one.
//!
//! [`Matrix::shortfalls`] states what each engine must kill; a mutant surviving an engine
//! that should kill it is a bug in that engine, to be fixed there, not in the mutant.

use crate::conformance;
use crate::fixture::{ContractEvaluator, parse_fixture, replay};
use crate::interleave::{models, prop};
use crate::mutants::{Mutant, select};
use crate::sim::{Scenario, Sim};
use crate::store::{MemoryFactory, SqliteFactory, StoreFactory};
use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

mod shard;

/// An engine of the matrix, in column order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Engine {
    /// The contract fixture replayed through the pure contract.
    Fixture,
    /// The conformance suite; a column per store: memory, SQLite (and PostgreSQL when
    /// given).
    Conformance,
    /// Every scenario's default seeds; a column per store the simulation can run: memory,
    /// SQLite.
    Simulation,
    /// The state machine's everyday cases; a column per store, as conformance.
    Proptest,
    /// Every loom model.
    Loom,
    /// The black-box probe (`tasklatch probe`) against `tasklatch serve` of this build
    /// with the mutant named in `TASKLATCH_MUTANT`, on SQLite: over stdio, then over HTTP
    /// with two identities. Only when the plan names the server binary
    /// ([`Plan::probe_server`]).
    Probe,
}

impl Engine {
    /// Every engine, in column order.
    pub const ALL: [Engine; 6] = [
        Engine::Fixture,
        Engine::Conformance,
        Engine::Simulation,
        Engine::Proptest,
        Engine::Loom,
        Engine::Probe,
    ];

    /// The engine's name (`fixture`, `conformance`, …), as columns and `--engine` name it.
    pub fn name(self) -> &'static str {
        match self {
            Engine::Fixture => "fixture",
            Engine::Conformance => "conformance",
            Engine::Simulation => "simulation",
            Engine::Proptest => "proptest",
            Engine::Loom => "loom",
            Engine::Probe => "probe",
        }
    }

    /// The engine named `name` (as [`Engine::name`] spells it); the error lists the known
    /// ones.
    pub fn parse(name: &str) -> Result<Engine, String> {
        Engine::ALL
            .into_iter()
            .find(|engine| engine.name() == name)
            .ok_or_else(|| {
                let known: Vec<&str> = Engine::ALL.iter().map(|e| e.name()).collect();
                format!("unknown engine {name:?}; known: {}", known.join(", "))
            })
    }

    /// Whether this engine must kill `mutant`.
    pub fn must_kill(self, mutant: Mutant) -> bool {
        match self {
            Engine::Fixture => mutant.in_contract(),
            Engine::Conformance => false,
            Engine::Simulation | Engine::Proptest => mutant.concerns_state(),
            Engine::Loom => mutant.concerns_interleaving(),
            Engine::Probe => mutant.seen_on_the_wire(),
        }
    }

    /// The unit its budget is counted in.
    fn unit(self) -> &'static str {
        match self {
            Engine::Fixture => "cases",
            Engine::Conformance => "checks",
            Engine::Simulation => "seeds",
            Engine::Proptest => "cases",
            Engine::Loom => "interleavings",
            Engine::Probe => "runs",
        }
    }
}

/// One cell.
#[derive(Clone, Debug)]
pub struct Cell {
    /// The engine reported a failure with the row's mutant on.
    pub killed: bool,
    /// Units of budget spent: up to and including the first failure when killed, all of
    /// it otherwise.
    pub spent: u64,
    /// Wall-clock time the engine took.
    pub elapsed: Duration,
    /// The first failure, in one line (empty when it survived).
    pub detail: String,
    /// The plan left this cell out ([`Plan::probe_required_only`]): neither killed nor
    /// survived.
    pub skipped: bool,
}

impl Cell {
    fn text(&self, engine: Engine) -> String {
        if self.skipped {
            return "not run".to_owned();
        }
        let verdict = if self.killed { "killed" } else { "survived" };
        format!(
            "{verdict} {} {} {:.2}s",
            self.spent,
            engine.unit(),
            self.elapsed.as_secs_f64()
        )
    }
}

/// A column: an engine, on one store when the engine drives a store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Column {
    /// The engine run.
    pub engine: Engine,
    /// The store's name (`memory`, `sqlite`, `postgres`); `None` for the fixture (the pure
    /// contract) and loom (the memory store's own source, compiled against loom).
    pub store: Option<String>,
}

impl Column {
    /// `conformance:sqlite`, or the engine's name alone.
    pub fn name(&self) -> String {
        match &self.store {
            Some(store) => format!("{}:{store}", self.engine.name()),
            None => self.engine.name().to_owned(),
        }
    }
}

/// A row: `None` for the unmutated build.
#[derive(Clone, Debug)]
pub struct Row {
    /// The mutant on; `None` for the unmutated build.
    pub mutant: Option<Mutant>,
    /// One cell per column, in column order.
    pub cells: Vec<(Column, Cell)>,
}

impl Row {
    /// The mutant's name, or `(unmutated)`.
    pub fn label(&self) -> &'static str {
        self.mutant.map_or("(unmutated)", Mutant::name)
    }

    /// The cell of the column named `column` (see [`Column::name`]).
    pub fn cell(&self, column: &str) -> Option<&Cell> {
        self.cells
            .iter()
            .find(|(c, _)| c.name() == column)
            .map(|(_, cell)| cell)
    }
}

/// The whole matrix.
#[derive(Clone, Debug)]
pub struct Matrix {
    /// One row per planned mutant, in the plan's order.
    pub rows: Vec<Row>,
}

/// What to run.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The rows to run: each mutant, `None` for the unmutated build.
    pub mutants: Vec<Option<Mutant>>,
    /// The engines (columns) to run.
    pub engines: Vec<Engine>,
    /// Where the SQLite stores of the conformance and proptest engines live.
    pub scratch: std::path::PathBuf,
    /// A PostgreSQL server for the conformance engine too (feature `postgres`): each
    /// store it opens is a fresh schema `tl_matrix_<pid>_<n>`, dropped after use.
    pub postgres_url: Option<String>,
    /// The `tasklatch` binary of this build (feature `mutants`) the probe column serves
    /// each mutant with; `None`: no probe column.
    pub probe_server: Option<std::path::PathBuf>,
    /// Probe only the unmutated build and the mutants the probe must kill (the rest read
    /// `not run`): what a test needs, in half the time.
    pub probe_required_only: bool,
    /// Probe cells run side by side at most (they wait on their servers, mostly; more
    /// would make a 2-core machine's timing the finding): 5, divided among shards.
    pub probe_cells_parallel: usize,
}

impl Plan {
    /// `engine`'s columns, each with the store it drives (none for the fixture and loom).
    fn columns(&self, engine: Engine) -> Vec<(Column, Option<Box<dyn StoreFactory>>)> {
        let stores = match engine {
            Engine::Probe if self.probe_server.is_none() => return Vec::new(),
            Engine::Fixture | Engine::Loom | Engine::Probe => {
                return vec![(
                    Column {
                        engine,
                        store: None,
                    },
                    None,
                )];
            }
            Engine::Conformance | Engine::Proptest => self.factories(),
            // The simulation runs its store in-process: no PostgreSQL.
            Engine::Simulation => self.in_process_factories(),
        };
        stores
            .into_iter()
            .map(|store| {
                let column = Column {
                    engine,
                    store: Some(store.name().to_owned()),
                };
                (column, Some(store))
            })
            .collect()
    }

    /// The stores: memory, SQLite in `scratch`, and PostgreSQL when a server is given
    /// (each store a fresh schema `tl_matrix_<pid>_<n>`).
    fn factories(&self) -> Vec<Box<dyn StoreFactory>> {
        let mut factories = self.in_process_factories();
        factories.extend(self.postgres_factory());
        factories
    }

    /// The stores that run inside the caller's process: memory, SQLite in `scratch`.
    fn in_process_factories(&self) -> Vec<Box<dyn StoreFactory>> {
        vec![
            Box::new(MemoryFactory),
            Box::new(SqliteFactory::new(&self.scratch)),
        ]
    }

    #[cfg(feature = "postgres")]
    fn postgres_factory(&self) -> Option<Box<dyn StoreFactory>> {
        let url = self.postgres_url.as_ref()?;
        let factory = crate::store::PostgresFactory::new(url, "tl_matrix");
        Some(Box::new(factory.expect("a valid schema prefix")))
    }

    /// Without the adapter there is nothing to open (the CLI refuses `--postgres`).
    #[cfg(not(feature = "postgres"))]
    fn postgres_factory(&self) -> Option<Box<dyn StoreFactory>> {
        None
    }

    /// Every mutant, the unmutated build first, every engine.
    pub fn full(scratch: impl Into<std::path::PathBuf>) -> Plan {
        let mut mutants = vec![None];
        mutants.extend(Mutant::ALL.map(Some));
        Plan {
            mutants,
            engines: Engine::ALL.to_vec(),
            scratch: scratch.into(),
            postgres_url: None,
            probe_server: None,
            probe_required_only: false,
            probe_cells_parallel: 5,
        }
    }
}

/// Runs the plan, one cell at a time (engines share the process-wide mutant selection),
/// calling `progress` after each cell. The probe's cells come first, a few side by side:
/// each serves its mutant in a process of its own, and spends its time waiting on it.
pub fn run(plan: &Plan, progress: &mut dyn FnMut(&str, &Column, &Cell)) -> Matrix {
    let mut probed = match (&plan.probe_server, plan.engines.contains(&Engine::Probe)) {
        (Some(server), true) => {
            let wanted: Vec<bool> = plan
                .mutants
                .iter()
                .map(|mutant| {
                    !plan.probe_required_only
                        || mutant.is_none_or(|mutant| Engine::Probe.must_kill(mutant))
                })
                .collect();
            let parallel = plan.probe_cells_parallel;
            probe::cells(server, &plan.mutants, &wanted, &plan.scratch, parallel)
        }
        _ => Vec::new(),
    }
    .into_iter();
    // Engines report failures as panics caught here; their default printout would bury
    // the matrix under thousands of expected backtraces.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let mut rows = Vec::new();
    for mutant in &plan.mutants {
        let mut probe_cell = probed.next();
        select(*mutant);
        let mut row = Row {
            mutant: *mutant,
            cells: Vec::new(),
        };
        for engine in &plan.engines {
            for (column, factory) in plan.columns(*engine) {
                if *engine == Engine::Probe {
                    let cell = probe_cell.take().expect("a probe cell per row");
                    progress(row.label(), &column, &cell);
                    row.cells.push((column, cell));
                    continue;
                }
                let started = Instant::now();
                let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    run_engine(*engine, factory.as_deref())
                }));
                let (killed, spent, detail) = match outcome {
                    Ok(result) => result,
                    Err(panic) => (true, 1, format!("panic: {}", panic_text(&*panic))),
                };
                let cell = Cell {
                    killed,
                    spent,
                    elapsed: started.elapsed(),
                    detail,
                    skipped: false,
                };
                progress(row.label(), &column, &cell);
                row.cells.push((column, cell));
            }
        }
        rows.push(row);
    }
    select(None);
    std::panic::set_hook(hook);
    Matrix { rows }
}

fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|text| (*text).to_owned()))
        .unwrap_or_else(|| "a non-text panic".into())
}

/// `(killed, spent, first failure)` of `engine`, on `store` when it drives one.
fn run_engine(engine: Engine, store: Option<&dyn StoreFactory>) -> (bool, u64, String) {
    match (engine, store) {
        (Engine::Fixture, _) => fixture_engine(),
        (Engine::Loom, _) => loom_engine(),
        (Engine::Conformance, Some(store)) => conformance_engine(store),
        (Engine::Simulation, Some(store)) => simulation_engine(store),
        (Engine::Proptest, Some(store)) => proptest_engine(store),
        (Engine::Probe, _) => unreachable!("the probe's cells run apart"),
        (engine, None) => unreachable!("{} drives a store", engine.name()),
    }
}

fn fixture_engine() -> (bool, u64, String) {
    let fixture = parse_fixture(
        Path::new("fixtures/contract/tasks-2025-11-25.json"),
        conformance::CONTRACT_FIXTURE.as_bytes(),
    )
    .expect("the embedded fixture parses");
    let report = replay(&fixture, &mut ContractEvaluator);
    match report.cases.iter().position(|case| !case.matched) {
        Some(index) => {
            let case = &report.cases[index];
            (
                true,
                index as u64 + 1,
                format!(
                    "{}: expected {}, got {}{}",
                    case.id,
                    case.expected.code(),
                    case.actual.map_or("nothing", |d| d.code()),
                    case.detail
                        .as_ref()
                        .map(|detail| format!(" ({detail})"))
                        .unwrap_or_default()
                ),
            )
        }
        None => (false, report.cases.len() as u64, String::new()),
    }
}

fn conformance_engine(store: &dyn StoreFactory) -> (bool, u64, String) {
    let mut spent = 0;
    for check in conformance::CHECKS {
        spent += 1;
        if let Err(detail) = (check.run)(store) {
            return (true, spent, format!("{}: {detail}", check.name));
        }
    }
    (false, spent, String::new())
}

fn simulation_engine(store: &dyn StoreFactory) -> (bool, u64, String) {
    let scenarios = Scenario::all().expect("the committed scenarios load");
    let mut spent = 0;
    for scenario in &scenarios {
        for seed in scenario.default_seeds() {
            spent += 1;
            let outcome = Sim::new(scenario).store(store).run(seed);
            if let Some(violation) = outcome.violations.first() {
                return (
                    true,
                    spent,
                    format!("{} seed {seed}: {violation}", scenario.name),
                );
            }
        }
    }
    (false, spent, String::new())
}

/// The everyday budget of the proptest engine: cases per adapter.
pub const PROPTEST_CASES: u32 = 256;

fn proptest_engine(store: &dyn StoreFactory) -> (bool, u64, String) {
    match prop::search(store, PROPTEST_CASES, prop::EVERYDAY_SEED) {
        Ok(()) => (false, u64::from(PROPTEST_CASES), String::new()),
        Err(found) => (
            true,
            u64::from(found.cases_to_fail),
            format!("shrank to {} steps: {}", found.steps.len(), found.message),
        ),
    }
}

fn loom_engine() -> (bool, u64, String) {
    let mut spent = 0;
    for model in models::Model::ALL {
        let run = models::run(model);
        spent += run.iterations as u64;
        if let Some(failure) = run.failure {
            return (true, spent, format!("{}: {failure}", model.name()));
        }
    }
    (false, spent, String::new())
}

impl Matrix {
    /// Every requirement the matrix misses: a kill in the unmutated row, or a survivor of
    /// an engine that must kill it.
    pub fn shortfalls(&self) -> Vec<String> {
        let mut out = Vec::new();
        for row in &self.rows {
            for (column, cell) in &row.cells {
                match row.mutant {
                    None if cell.killed => out.push(format!(
                        "{} fails without a mutant: {}",
                        column.name(),
                        cell.detail
                    )),
                    Some(mutant) if column.engine.must_kill(mutant) && !cell.killed => out.push(
                        format!("{} survives {}, which must kill it", mutant, column.name()),
                    ),
                    _ => {}
                }
            }
        }
        out
    }

    /// The columns, as the rows hold them.
    fn columns(&self) -> Vec<Column> {
        self.rows
            .first()
            .map(|row| row.cells.iter().map(|(column, _)| column.clone()).collect())
            .unwrap_or_default()
    }

    /// A plain-text table.
    pub fn render_text(&self) -> String {
        let columns = self.columns();
        let mut out = String::new();
        let _ = write!(out, "{:<28}", "mutant");
        for column in &columns {
            let _ = write!(out, " | {:<28}", column.name());
        }
        out.push('\n');
        for row in &self.rows {
            let _ = write!(out, "{:<28}", row.label());
            for (column, cell) in &row.cells {
                let mark = match row.mutant {
                    Some(mutant) if column.engine.must_kill(mutant) => "*",
                    _ => " ",
                };
                let _ = write!(out, " | {mark}{:<27}", cell.text(column.engine));
            }
            out.push('\n');
        }
        out.push_str("* the engine must kill this mutant\n");
        out
    }

    /// A Markdown table (docs/kill-matrix.md's).
    pub fn render_markdown(&self) -> String {
        let columns = self.columns();
        let mut out = String::from("| mutant |");
        for column in &columns {
            let _ = write!(out, " {} |", column.name());
        }
        out.push_str("\n|---|");
        for _ in &columns {
            out.push_str("---|");
        }
        out.push('\n');
        for row in &self.rows {
            let _ = write!(out, "| `{}` |", row.label());
            for (column, cell) in &row.cells {
                let must = matches!(row.mutant, Some(m) if column.engine.must_kill(m));
                let text = cell.text(column.engine);
                if must {
                    let _ = write!(out, " **{text}** |");
                } else {
                    let _ = write!(out, " {text} |");
                }
            }
            out.push('\n');
        }
        out
    }

    /// Each killed cell's first failure, one line each.
    pub fn render_details(&self) -> String {
        let mut out = String::new();
        for row in &self.rows {
            for (column, cell) in &row.cells {
                if cell.killed {
                    let mut detail = cell.detail.replace('\n', " ");
                    if detail.len() > 240 {
                        let mut end = 240;
                        while !detail.is_char_boundary(end) {
                            end -= 1;
                        }
                        detail.truncate(end);
                        detail.push('…');
                    }
                    let _ = writeln!(out, "{} × {}: {detail}", row.label(), column.name());
                }
            }
        }
        out
    }
}

/// The probe column: `tasklatch probe` against `tasklatch serve` with each row's mutant.
mod probe {
    use super::Cell;
    use crate::mutants::Mutant;
    use crate::probe::workload::Workload;
    use crate::probe::{self, Config, Target};
    use std::path::Path;
    use std::sync::Mutex;
    use std::time::{Duration, Instant};

    /// One cell per row of `mutants`, in order, `parallel` at a time; a row not `wanted`
    /// is skipped.
    pub fn cells(
        server: &Path,
        mutants: &[Option<Mutant>],
        wanted: &[bool],
        scratch: &Path,
        parallel: usize,
    ) -> Vec<Cell> {
        let next = Mutex::new(0usize);
        let cells: Mutex<Vec<Option<Cell>>> = Mutex::new(vec![None; mutants.len()]);
        std::thread::scope(|scope| {
            for _ in 0..parallel.clamp(1, mutants.len().max(1)) {
                scope.spawn(|| {
                    loop {
                        let index = {
                            let mut next = next.lock().unwrap_or_else(|e| e.into_inner());
                            let index = *next;
                            *next += 1;
                            index
                        };
                        let Some(mutant) = mutants.get(index) else {
                            return;
                        };
                        let cell = if wanted[index] {
                            let dir = scratch.join(format!("probe-{index}"));
                            let cell = cell(server, *mutant, &dir);
                            let _ = std::fs::remove_dir_all(&dir);
                            cell
                        } else {
                            Cell {
                                killed: false,
                                spent: 0,
                                elapsed: Duration::ZERO,
                                detail: String::new(),
                                skipped: true,
                            }
                        };
                        cells.lock().unwrap_or_else(|e| e.into_inner())[index] = Some(cell);
                    }
                });
            }
        });
        cells
            .into_inner()
            .unwrap_or_else(|e| e.into_inner())
            .into_iter()
            .map(|cell| cell.expect("every row probed"))
            .collect()
    }

    /// `env` arguments that run `server` with `mutant` (or none) selected.
    fn with_mutant(mutant: Option<Mutant>, server: &Path) -> Vec<String> {
        let mut args = match mutant {
            Some(mutant) => vec![format!("TASKLATCH_MUTANT={}", mutant.name())],
            None => vec!["-u".to_owned(), "TASKLATCH_MUTANT".to_owned()],
        };
        args.push(server.display().to_string());
        args
    }

    /// The probe's settings for a cell: a short workload (2 s per era, one client per
    /// identity, seed 1), the `export` tool (and, in 2026-07-28, its confirming variant),
    /// timeouts generous enough for five cells at once on two cores. An export takes
    /// 1.5 s, longer than the shortest TTL `serve` grants (1 s): the expiry check's cancel
    /// then reaches a task that expired while it ran.
    fn config(target: Target) -> Config {
        let mut config = Config::new(target);
        config.tool = Some("export".to_owned());
        config.args = Some(serde_json::json!({ "delay_ms": 1_500 }));
        config.input_tool = Some("export".to_owned());
        config.input_args = Some(serde_json::json!({ "delay_ms": 100, "confirm": true }));
        config.request_timeout = Duration::from_secs(5);
        config.task_timeout = Duration::from_secs(5);
        config.expiry_wait = Duration::from_secs(3);
        config.workload = Some(Workload {
            budget: Duration::from_secs(2),
            seed: 1,
            clients_per_identity: 1,
            kill: false,
            durable: false,
        });
        config
    }

    fn cell(server: &Path, mutant: Option<Mutant>, dir: &Path) -> Cell {
        let started = Instant::now();
        let runtime = match tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
        {
            Ok(runtime) => runtime,
            Err(error) => return failed_to_run(started, format!("a tokio runtime: {error}")),
        };
        let targets = match probe_targets(server, mutant, dir) {
            Ok(targets) => targets,
            Err(what) => return failed_to_run(started, what),
        };
        let mut runs = 0;
        for target in targets {
            runs += 1;
            let what = match &target {
                Target::Stdio { .. } => "stdio",
                Target::Http { .. } => "http",
            };
            match runtime.block_on(probe::run(&config(target))) {
                Ok(report) => {
                    if let Some(finding) = report.findings().next() {
                        return Cell {
                            killed: true,
                            spent: runs,
                            elapsed: started.elapsed(),
                            detail: format!(
                                "{what} {} {}: {}",
                                finding.era, finding.check, finding.detail
                            ),
                            skipped: false,
                        };
                    }
                }
                Err(error) => {
                    return Cell {
                        killed: true,
                        spent: runs,
                        elapsed: started.elapsed(),
                        detail: format!("{what}: the server could not be probed: {error}"),
                        skipped: false,
                    };
                }
            }
        }
        Cell {
            killed: false,
            spent: runs,
            elapsed: started.elapsed(),
            detail: String::new(),
            skipped: false,
        }
    }

    /// The mutant served over stdio, and over HTTP with two tokens, each on SQLite in `dir`.
    fn probe_targets(
        server: &Path,
        mutant: Option<Mutant>,
        dir: &Path,
    ) -> Result<[Target; 2], String> {
        std::fs::create_dir_all(dir).map_err(|error| format!("{}: {error}", dir.display()))?;
        let store = |name: &str| format!("sqlite:{}", dir.join(name).display());
        let exports = |name: &str| dir.join(name).display().to_string();
        // Exports sleep: workers are cheap, and the liveness phase wants every task done.
        let mut stdio = with_mutant(mutant, server);
        stdio.extend(
            [
                "serve",
                "--workers",
                "32",
                "--stdio",
                "--store",
                &store("stdio.db"),
                "--exports",
                &exports("stdio-exports"),
            ]
            .map(str::to_owned),
        );
        let tokens = dir.join("tokens.json");
        let written = std::fs::write(
            &tokens,
            r#"{"tokens": {"matrix-token-a": "tenant-a/a", "matrix-token-b": "tenant-b/b"}}"#,
        );
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .map(|address| address.port());
        let (Ok(()), Ok(port)) = (written, port) else {
            return Err("a tokens file and a free port".to_owned());
        };
        let mut http = with_mutant(mutant, server);
        http.extend(
            [
                "serve",
                "--workers",
                "32",
                "--http",
                &format!("127.0.0.1:{port}"),
                "--tokens",
                &tokens.display().to_string(),
                "--store",
                &store("http.db"),
                "--exports",
                &exports("http-exports"),
            ]
            .map(str::to_owned),
        );
        let quoted: Vec<String> = http
            .iter()
            .map(|arg| format!("'{}'", arg.replace('\'', r"'\''")))
            .collect();
        Ok([
            Target::Stdio {
                program: "env".to_owned(),
                args: stdio,
            },
            Target::Http {
                url: format!("http://127.0.0.1:{port}/mcp"),
                tokens: vec![
                    ("a".to_owned(), "matrix-token-a".to_owned()),
                    ("b".to_owned(), "matrix-token-b".to_owned()),
                ],
                start: Some(format!("env {}", quoted.join(" "))),
            },
        ])
    }

    /// A cell that could not run: reported as a kill, so the unmutated row shows it.
    fn failed_to_run(started: Instant, what: String) -> Cell {
        Cell {
            killed: true,
            spent: 0,
            elapsed: started.elapsed(),
            detail: format!("the probe could not run: {what}"),
            skipped: false,
        }
    }
}
