//! `tasklatch bench store`: store throughput as a ratio to the bare driver. (`tasklatch
//! bench http`, the load generator for live servers, is the black box's: it lives in
//! `tasklatch-probe`'s `bench`.)
//!
//! Each adapter is measured beside a baseline that runs bare `UPDATE … WHERE id = ?`
//! statements through the same driver, on the same database, in the same run, in
//! alternating trials (store, bare, store, bare, …); the report gives the median of each
//! and their ratio. A shared, noisy machine moves both numbers together; the ratio is what
//! carries across machines.
//!
//! Two workloads:
//! - **create+complete**: one writer admits a task (record + outbox entry) and completes
//!   it; each store call counts as one op, against one bare UPDATE per op.
//! - **contended transitions**: `writers` threads, each with its own connection, toggle a
//!   small set of tasks between `working` and `input_required` by compare-and-swap at the
//!   version they last saw (a refused write refreshes it from the answer), against the same
//!   threads running bare UPDATEs on the same number of rows.

use crate::contract::{Decision, Negotiated, TaskStatus, TaskSupport};
use crate::store::{
    CreateCommand, SqliteOptions, SqliteStore, StoreError, StoreOptions, TaskStore,
    TransitionCommand, WrappedRequest,
};
use std::time::Instant;

/// What to measure.
#[derive(Clone, Debug)]
pub struct BenchConfig {
    /// Tasks created and completed per create+complete trial.
    pub tasks: usize,
    /// Concurrent writers in the contended workload.
    pub writers: usize,
    /// Transition attempts per writer per contended trial.
    pub attempts: usize,
    /// Rows the contended writers share.
    pub hot_rows: usize,
    /// Trials per side; the median is reported.
    pub trials: usize,
}

impl Default for BenchConfig {
    fn default() -> BenchConfig {
        BenchConfig {
            tasks: 2_000,
            writers: 8,
            attempts: 1_000,
            hot_rows: 16,
            trials: 3,
        }
    }
}

/// One workload on one adapter.
#[derive(Clone, Debug)]
pub struct BenchRow {
    /// The adapter measured (`sqlite`, `postgres`).
    pub adapter: String,
    /// The workload: `"create+complete"` or `"contended transitions"`.
    pub workload: &'static str,
    /// Median store operations per second.
    pub store_ops_per_s: f64,
    /// Median bare UPDATEs per second through the same driver.
    pub bare_ops_per_s: f64,
    /// The same rows written by hand (create+complete only).
    pub same_writes_ops_per_s: Option<f64>,
    /// Share of contended compare-and-swaps that applied (the rest were refused as
    /// stale and wrote nothing, which a bare UPDATE never is).
    pub applied_fraction: Option<f64>,
}

impl BenchRow {
    /// Store throughput as a fraction of bare throughput (1.0: no overhead).
    pub fn ratio(&self) -> f64 {
        self.store_ops_per_s / self.bare_ops_per_s
    }
}

/// A database the bench can open store connections and bare connections to.
pub trait BenchTarget: Sync {
    /// The adapter's name, as the report shows it.
    fn name(&self) -> String;
    /// A store on the database, schema created.
    fn store(&self) -> Result<Box<dyn TaskStore>, StoreError>;
    /// A bare connection with a `bench_rows(id, v)` table of `rows` rows.
    fn bare(&self, rows: usize) -> Result<Box<dyn BareUpdate>, StoreError>;
}

/// Bare statements through the raw driver.
pub trait BareUpdate: Send {
    /// `UPDATE bench_rows SET v = v + 1 WHERE id = ?`.
    fn update(&mut self, id: i64) -> Result<(), StoreError>;
    /// The rows a create+complete writes (task row and outbox row in one transaction,
    /// then the status update), written by hand into the same tables: what the database
    /// itself charges for the work, without tasklatch's lookups, guards and decoding.
    fn same_writes(&mut self, task_id: &str) -> Result<(), StoreError>;
}

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn per_second(ops: usize, started: Instant) -> f64 {
    ops as f64 / started.elapsed().as_secs_f64().max(1e-9)
}

fn create_command(prefix: &str, n: usize) -> CreateCommand {
    let task_id = format!("{prefix}-{n}");
    CreateCommand {
        caller: "bench/tenant".into(),
        negotiated: Negotiated::FULL,
        task_support: TaskSupport::Optional,
        task_requested: true,
        idempotency_key: Some(format!("key-{task_id}")),
        request: WrappedRequest {
            method: "tools/call".into(),
            name: "export".into(),
            arguments: Some(serde_json::json!({ "n": n })),
        },
        ttl_ms: None,
        poll_interval_ms: None,
        correlation_id: task_id.clone(),
        task_id,
        now_ms: 1,
        era: crate::contract::Era::Core2025,
        input_responses: None,
    }
}

fn store_create_complete(
    store: &dyn TaskStore,
    prefix: &str,
    tasks: usize,
) -> Result<f64, StoreError> {
    let started = Instant::now();
    for n in 0..tasks {
        let command = create_command(prefix, n);
        store.create(&command)?;
        store.transition(&TransitionCommand {
            irreversible_effect: None,
            task_id: command.task_id,
            caller: command.caller,
            expected_version: 1,
            next: TaskStatus::Completed,
            outcome: crate::conformance::outcome_for(TaskStatus::Completed, "bench"),
            status_message: None,
            now_ms: 2,
            input_requests: None,
        })?;
    }
    Ok(per_second(2 * tasks, started))
}

fn bare_same_writes(
    bare: &mut dyn BareUpdate,
    prefix: &str,
    tasks: usize,
) -> Result<f64, StoreError> {
    let started = Instant::now();
    for n in 0..tasks {
        bare.same_writes(&format!("{prefix}-{n}"))?;
    }
    Ok(per_second(2 * tasks, started))
}

fn bare_sequential(bare: &mut dyn BareUpdate, ops: usize, rows: usize) -> Result<f64, StoreError> {
    let started = Instant::now();
    for n in 0..ops {
        bare.update((n % rows) as i64)?;
    }
    Ok(per_second(ops, started))
}

fn store_contended(
    target: &dyn BenchTarget,
    prefix: &str,
    config: &BenchConfig,
) -> Result<(f64, f64), StoreError> {
    let setup = target.store()?;
    for row in 0..config.hot_rows {
        setup.create(&create_command(prefix, row))?;
    }
    let stores: Vec<Box<dyn TaskStore>> = (0..config.writers)
        .map(|_| target.store())
        .collect::<Result<_, _>>()?;
    // Warm every connection (schema parse, first statement preparation) before timing.
    for store in &stores {
        store.read(&format!("{prefix}-0"))?;
    }
    let started = Instant::now();
    let applied = std::thread::scope(|scope| {
        let handles: Vec<_> = stores
            .iter()
            .enumerate()
            .map(|(writer, store)| {
                scope.spawn(move || -> Result<usize, StoreError> {
                    let mut applied = 0;
                    let mut seen = vec![(1u64, TaskStatus::Working); config.hot_rows];
                    for attempt in 0..config.attempts {
                        let row = (writer + attempt) % config.hot_rows;
                        let (version, status) = seen[row];
                        let next = if status == TaskStatus::Working {
                            TaskStatus::InputRequired
                        } else {
                            TaskStatus::Working
                        };
                        let answer = store.transition(&TransitionCommand {
                            irreversible_effect: None,
                            task_id: format!("{prefix}-{row}"),
                            caller: "bench/tenant".into(),
                            expected_version: version,
                            next,
                            outcome: None,
                            status_message: None,
                            now_ms: 2,
                            input_requests: None,
                        })?;
                        applied += usize::from(answer.decision == Decision::ApplyTransition);
                        if let Some(record) = answer.record {
                            seen[row] = (record.version, record.status);
                        }
                    }
                    Ok(applied)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().expect("bench writer panicked"))
            .sum::<Result<usize, StoreError>>()
    })?;
    let attempts = config.writers * config.attempts;
    Ok((
        per_second(attempts, started),
        applied as f64 / attempts as f64,
    ))
}

fn bare_contended(target: &dyn BenchTarget, config: &BenchConfig) -> Result<f64, StoreError> {
    let mut connections: Vec<Box<dyn BareUpdate>> = (0..config.writers)
        .map(|_| target.bare(config.hot_rows))
        .collect::<Result<_, _>>()?;
    for bare in &mut connections {
        bare.update(0)?; // warm, as for the store
    }
    let started = Instant::now();
    std::thread::scope(|scope| {
        let handles: Vec<_> = connections
            .iter_mut()
            .enumerate()
            .map(|(writer, bare)| {
                scope.spawn(move || -> Result<(), StoreError> {
                    for attempt in 0..config.attempts {
                        bare.update(((writer + attempt) % config.hot_rows) as i64)?;
                    }
                    Ok(())
                })
            })
            .collect();
        handles
            .into_iter()
            .try_for_each(|handle| handle.join().expect("bench writer panicked"))
    })?;
    Ok(per_second(config.writers * config.attempts, started))
}

/// Runs both workloads on `target`, alternating store and bare trials.
pub fn bench_target(
    target: &dyn BenchTarget,
    config: &BenchConfig,
    run_id: &str,
) -> Result<Vec<BenchRow>, StoreError> {
    let store = target.store()?;
    let mut bare = target.bare(config.hot_rows)?;
    let (mut store_seq, mut bare_seq, mut same_seq) = (vec![], vec![], vec![]);
    let (mut store_hot, mut bare_hot, mut applied_hot) = (vec![], vec![], vec![]);
    for trial in 0..config.trials {
        same_seq.push(bare_same_writes(
            &mut *bare,
            &format!("{run_id}-raw{trial}"),
            config.tasks,
        )?);
        store_seq.push(store_create_complete(
            &*store,
            &format!("{run_id}-seq{trial}"),
            config.tasks,
        )?);
        bare_seq.push(bare_sequential(
            &mut *bare,
            2 * config.tasks,
            config.hot_rows,
        )?);
        let (ops_per_s, applied) =
            store_contended(target, &format!("{run_id}-hot{trial}"), config)?;
        store_hot.push(ops_per_s);
        applied_hot.push(applied);
        bare_hot.push(bare_contended(target, config)?);
    }
    Ok(vec![
        BenchRow {
            adapter: target.name(),
            workload: "create+complete",
            store_ops_per_s: median(store_seq),
            bare_ops_per_s: median(bare_seq),
            same_writes_ops_per_s: Some(median(same_seq)),
            applied_fraction: None,
        },
        BenchRow {
            adapter: target.name(),
            workload: "contended transitions",
            store_ops_per_s: median(store_hot),
            bare_ops_per_s: median(bare_hot),
            same_writes_ops_per_s: None,
            applied_fraction: Some(median(applied_hot)),
        },
    ])
}

/// The report as a Markdown table.
pub fn render(rows: &[BenchRow], config: &BenchConfig) -> String {
    let mut out = String::from(
        "| adapter | workload | store ops/s | bare UPDATE ops/s | store / bare UPDATE \
         | same rows by hand ops/s | store / same rows | CAS applied |\n\
         |---|---|---:|---:|---:|---:|---:|---:|\n",
    );
    for row in rows {
        let (same, same_ratio) = match row.same_writes_ops_per_s {
            Some(same) => (
                format!("{same:.0}"),
                format!("{:.0}%", 100.0 * row.store_ops_per_s / same),
            ),
            None => ("—".into(), "—".into()),
        };
        out.push_str(&format!(
            "| {} | {} | {:.0} | {:.0} | {:.0}% | {same} | {same_ratio} | {} |\n",
            row.adapter,
            row.workload,
            row.store_ops_per_s,
            row.bare_ops_per_s,
            100.0 * row.ratio(),
            row.applied_fraction
                .map_or("—".into(), |applied| format!("{:.0}%", 100.0 * applied)),
        ));
    }
    out.push_str(&format!(
        "\n{} tasks per create+complete trial; {} writers x {} attempts on {} hot rows; median of {} alternating trials.\n",
        config.tasks, config.writers, config.attempts, config.hot_rows, config.trials
    ));
    out
}

/// A SQLite file measured with the adapter and with bare rusqlite.
pub struct SqliteTarget {
    /// Where the SQLite file is and how the adapter opens it.
    pub options: SqliteOptions,
}

struct BareSqlite(rusqlite::Connection);

fn bare_error(error: impl std::fmt::Display) -> StoreError {
    StoreError::Backend {
        operation: "bare statement",
        cause: error.to_string(),
    }
}

/// A task row as the store writes it, for the hand-written baseline.
const SAME_TASK_INSERT: &str = "INSERT INTO tasks (task_id, auth_key, method, tool_name, \
    request_digest, idempotency_key, status, version, created_at_ms, updated_at_ms, \
    cancel_requested, correlation_id) VALUES ($1, 'bench/tenant', 'tools/call', 'export', \
    'sha256:0000000000000000000000000000000000000000000000000000000000000000', $1, 'working', \
    1, 1, 1, FALSE, $1)";
const SAME_OUTBOX_INSERT: &str = "INSERT INTO outbox (task_id, auth_key, request, enqueued_at_ms) \
    VALUES ($1, 'bench/tenant', '{\"method\":\"tools/call\",\"name\":\"export\"}', 1)";
const SAME_COMPLETE: &str = "UPDATE tasks SET status = 'completed', version = 2, \
    updated_at_ms = 2, outcome = '{\"kind\":\"result\",\"result\":{}}' \
    WHERE task_id = $1 AND version = 1";

impl BareUpdate for BareSqlite {
    fn update(&mut self, id: i64) -> Result<(), StoreError> {
        self.0
            .prepare_cached("UPDATE bench_rows SET v = v + 1 WHERE id = ?1")
            .and_then(|mut statement| statement.execute([id]))
            .map(drop)
            .map_err(bare_error)
    }

    fn same_writes(&mut self, task_id: &str) -> Result<(), StoreError> {
        let transaction = self
            .0
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(bare_error)?;
        for sql in [SAME_TASK_INSERT, SAME_OUTBOX_INSERT] {
            transaction
                .prepare_cached(sql)
                .and_then(|mut statement| statement.execute([task_id]))
                .map_err(bare_error)?;
        }
        transaction.commit().map_err(bare_error)?;
        self.0
            .prepare_cached(SAME_COMPLETE)
            .and_then(|mut statement| statement.execute([task_id]))
            .map(drop)
            .map_err(bare_error)
    }
}

impl BenchTarget for SqliteTarget {
    fn name(&self) -> String {
        "sqlite".into()
    }

    fn store(&self) -> Result<Box<dyn TaskStore>, StoreError> {
        Ok(Box::new(SqliteStore::open(
            &self.options,
            &StoreOptions::default(),
        )?))
    }

    fn bare(&self, rows: usize) -> Result<Box<dyn BareUpdate>, StoreError> {
        let failed = |error: rusqlite::Error| StoreError::Backend {
            operation: "open the bare connection",
            cause: error.to_string(),
        };
        // The store opens first so the pragmas (WAL, synchronous) match the adapter's.
        drop(SqliteStore::open(&self.options, &StoreOptions::default())?);
        let connection = rusqlite::Connection::open(&self.options.path).map_err(failed)?;
        let synchronous = self.options.synchronous.pragma();
        connection
            .execute_batch(&format!(
                "PRAGMA synchronous = {synchronous};
                 CREATE TABLE IF NOT EXISTS bench_rows (id INTEGER PRIMARY KEY, v INTEGER NOT NULL);"
            ))
            .map_err(failed)?;
        connection
            .busy_timeout(std::time::Duration::from_millis(
                self.options.busy_timeout_ms,
            ))
            .map_err(failed)?;
        for id in 0..rows as i64 {
            connection
                .execute(
                    "INSERT OR IGNORE INTO bench_rows (id, v) VALUES (?1, 0)",
                    [id],
                )
                .map_err(failed)?;
        }
        Ok(Box::new(BareSqlite(connection)))
    }
}

/// A PostgreSQL database measured with the adapter and with the bare `postgres` client.
#[cfg(feature = "postgres")]
pub struct PostgresTarget {
    /// The PostgreSQL connection URL.
    pub url: String,
    /// The schema the bench creates its tables in: its own, so it touches no other data.
    pub schema: String,
}

#[cfg(feature = "postgres")]
struct BarePostgres {
    client: postgres::Client,
    update: postgres::Statement,
    /// Task and outbox rows in one statement, as the store writes them.
    admit: postgres::Statement,
    complete: postgres::Statement,
}

#[cfg(feature = "postgres")]
impl BareUpdate for BarePostgres {
    fn update(&mut self, id: i64) -> Result<(), StoreError> {
        self.client
            .execute(&self.update, &[&id])
            .map(drop)
            .map_err(bare_error)
    }

    fn same_writes(&mut self, task_id: &str) -> Result<(), StoreError> {
        self.client
            .execute(&self.admit, &[&task_id])
            .map_err(bare_error)?;
        self.client
            .execute(&self.complete, &[&task_id])
            .map(drop)
            .map_err(bare_error)
    }
}

#[cfg(feature = "postgres")]
impl BenchTarget for PostgresTarget {
    fn name(&self) -> String {
        "postgres".into()
    }

    fn store(&self) -> Result<Box<dyn TaskStore>, StoreError> {
        Ok(Box::new(crate::store::PostgresStore::open(
            &self.url,
            Some(&self.schema),
            &StoreOptions::default(),
        )?))
    }

    fn bare(&self, rows: usize) -> Result<Box<dyn BareUpdate>, StoreError> {
        let failed = |error: postgres::Error| StoreError::Backend {
            operation: "open the bare connection",
            cause: error.to_string(),
        };
        drop(self.store()?); // creates the schema
        let mut client = postgres::Client::connect(&self.url, postgres::NoTls).map_err(failed)?;
        client
            .batch_execute(&format!(
                "SET search_path TO {schema};
                 CREATE TABLE IF NOT EXISTS bench_rows (id BIGINT PRIMARY KEY, v BIGINT NOT NULL);",
                schema = self.schema
            ))
            .map_err(failed)?;
        for id in 0..rows as i64 {
            client
                .execute(
                    "INSERT INTO bench_rows (id, v) VALUES ($1, 0) ON CONFLICT DO NOTHING",
                    &[&id],
                )
                .map_err(failed)?;
        }
        let update = client
            .prepare("UPDATE bench_rows SET v = v + 1 WHERE id = $1")
            .map_err(failed)?;
        let outbox_from_t = SAME_OUTBOX_INSERT
            .replacen("VALUES ($1,", "SELECT task_id,", 1)
            .replacen(", 1)", ", 1 FROM t", 1);
        let admit = client
            .prepare(&format!(
                "WITH t AS ({SAME_TASK_INSERT} RETURNING task_id) {outbox_from_t}"
            ))
            .map_err(failed)?;
        let complete = client.prepare(SAME_COMPLETE).map_err(failed)?;
        Ok(Box::new(BarePostgres {
            client,
            update,
            admit,
            complete,
        }))
    }
}
