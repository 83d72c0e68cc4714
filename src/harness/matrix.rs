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
}

impl Engine {
    /// Every engine, in column order.
    pub const ALL: [Engine; 5] = [
        Engine::Fixture,
        Engine::Conformance,
        Engine::Simulation,
        Engine::Proptest,
        Engine::Loom,
    ];

    /// The engine's name (`fixture`, `conformance`, …), as columns and `--engine` name it.
    pub fn name(self) -> &'static str {
        match self {
            Engine::Fixture => "fixture",
            Engine::Conformance => "conformance",
            Engine::Simulation => "simulation",
            Engine::Proptest => "proptest",
            Engine::Loom => "loom",
        }
    }

    /// Whether this engine must kill `mutant`.
    pub fn must_kill(self, mutant: Mutant) -> bool {
        match self {
            Engine::Fixture => mutant.in_contract(),
            Engine::Conformance => false,
            Engine::Simulation | Engine::Proptest => mutant.concerns_state(),
            Engine::Loom => mutant.concerns_interleaving(),
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
}

impl Cell {
    fn text(&self, engine: Engine) -> String {
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
}

impl Plan {
    /// `engine`'s columns, each with the store it drives (none for the fixture and loom).
    fn columns(&self, engine: Engine) -> Vec<(Column, Option<Box<dyn StoreFactory>>)> {
        let stores = match engine {
            Engine::Fixture | Engine::Loom => {
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
        }
    }
}

/// Runs the plan, one cell at a time (engines share the process-wide mutant selection),
/// calling `progress` after each cell.
pub fn run(plan: &Plan, progress: &mut dyn FnMut(&str, &Column, &Cell)) -> Matrix {
    // Engines report failures as panics caught here; their default printout would bury
    // the matrix under thousands of expected backtraces.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let mut rows = Vec::new();
    for mutant in &plan.mutants {
        select(*mutant);
        let mut row = Row {
            mutant: *mutant,
            cells: Vec::new(),
        };
        for engine in &plan.engines {
            for (column, factory) in plan.columns(*engine) {
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

    /// A Markdown table (the README's).
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
