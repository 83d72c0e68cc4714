//! `SqliteStore`: the embedded default (rusqlite, SQLite bundled).
//!
//! WAL mode, a busy timeout, foreign keys on, and `BEGIN IMMEDIATE` for every write
//! transaction, so racing writers queue on the write lock instead of failing a read-to-
//! write upgrade. The schema is created and migrated on open, under a schema version.
//!
//! One store holds two connections: writes go through one, in groups that share a
//! transaction and its commit ([`super::group`]: each write in a savepoint of its own,
//! none answered before its group is on disk), so concurrent admissions and transitions
//! pay one fsync between them instead of one each; reads (`read`, `list`) go through the
//! other and, WAL being what it is, see only committed data and never wait for a commit.

use super::group::{GroupCommit, Grouped};
use super::row::{
    CasParams, Columns, SqlRow, TASK_COLUMNS, TaskParams, cas_predicate, claim_from_row,
    encode_input, encode_outcome, owner_clause, sql_int, sql_limit, task_from_row,
};
use super::schema::{self, MetaTable};
use super::{
    Answer, CANCEL_ATTEMPTS_MAX, CLAIM_BATCH_MAX, CreateCommand, InputCommand, ListPage, ListQuery,
    OutboxClaim, SqliteOptions, StoreError, StoreOptions, TaskStore, TransitionCommand,
    applied_transition, cancel_message, cancelled_record, check_transition_command,
    classify_refused_cancel, classify_refused_transition, input_decision, list_page, list_preamble,
    page_limit,
};
use crate::contract::{self, Decision, Negotiated, TaskRecord, TaskStatus};
use crate::sync::{Mutex, MutexGuard};
use rusqlite::{Connection, OptionalExtension, Row, TransactionBehavior, params};
use std::sync::LazyLock;

/// Prepared statements a connection keeps.
const STATEMENTS_CACHED_MAX: usize = 64;

/// `PRAGMA synchronous`: how much a commit waits for the disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Synchronous {
    /// Survives power loss (fsync at every commit). The default.
    Full,
    /// Survives process crashes, not power loss. For tests and throwaway data.
    Normal,
}

impl Synchronous {
    /// The `PRAGMA synchronous` value.
    pub fn pragma(self) -> &'static str {
        match self {
            Synchronous::Full => "FULL",
            Synchronous::Normal => "NORMAL",
        }
    }
}

/// The SQLite adapter, the embedded default: one WAL-mode file, a connection that writes
/// in groups and one that reads.
pub struct SqliteStore {
    writer: GroupCommit<Writer>,
    reader: Mutex<Connection>,
    cursor_secret: Vec<u8>,
}

/// The writing connection, as [`GroupCommit`] drives it.
struct Writer(Connection);

impl Writer {
    fn run(&self, sql: &str) -> Result<(), String> {
        self.0.execute_batch(sql).map_err(|error| error.to_string())
    }

    /// Runs one of the statements every write runs, prepared once (parsing `SAVEPOINT` and
    /// `RELEASE` at every write was about 2% of the server's CPU on bare creates).
    fn run_cached(&self, sql: &str) -> Result<(), String> {
        self.0
            .prepare_cached(sql)
            .and_then(|mut statement| statement.execute([]))
            .map(drop)
            .map_err(|error| error.to_string())
    }
}

impl Grouped for Writer {
    fn begin(&mut self) -> Result<(), String> {
        self.run_cached("BEGIN IMMEDIATE")
    }
    fn savepoint(&mut self) -> Result<(), String> {
        self.run_cached("SAVEPOINT write")
    }
    fn release(&mut self) -> Result<(), String> {
        self.run_cached("RELEASE write")
    }
    fn rollback_to_savepoint(&mut self) -> Result<(), String> {
        self.run("ROLLBACK TO write")
    }
    fn commit(&mut self) -> Result<(), String> {
        self.run_cached("COMMIT")
    }
    fn rollback(&mut self) {
        // Fails harmlessly if SQLite already rolled back (a failed COMMIT may).
        let _ = self.run("ROLLBACK");
    }
}

/// The outbox claim: the oldest `?4` of the unleased and the expired entries, each read from
/// its own partial index (schema v4), merged in enqueue order: the same entries one scan of
/// both would find, without walking past the leased ones. `(?4 + 0)`, not `?4`: SQLite plans
/// a bare LIMIT parameter by its value and prepares the statement again whenever it changes
/// (the queue's room changes it at every claim under load), ~100 µs a claim against ~13 µs,
/// measured; `tests::the_claim_is_prepared_once_whatever_its_limit` keeps it so.
const CLAIM_SQL: &str = "UPDATE outbox SET attempt = attempt + 1, lease_owner = ?1, \
    lease_expires_at_ms = ?2 \
    WHERE task_id IN (SELECT task_id FROM ( \
        SELECT * FROM (SELECT task_id, enqueued_at_ms FROM outbox \
            WHERE acked_at_ms IS NULL AND lease_expires_at_ms IS NULL \
            ORDER BY enqueued_at_ms, task_id LIMIT (?4 + 0)) \
        UNION ALL \
        SELECT * FROM (SELECT task_id, enqueued_at_ms FROM outbox \
            WHERE acked_at_ms IS NULL AND lease_expires_at_ms <= ?3 \
            ORDER BY enqueued_at_ms, task_id LIMIT (?4 + 0))) \
        ORDER BY enqueued_at_ms, task_id LIMIT (?4 + 0)) \
    RETURNING task_id, auth_key, request, attempt, enqueued_at_ms";

fn backend(operation: &'static str) -> impl Fn(rusqlite::Error) -> StoreError {
    move |error| StoreError::Backend {
        operation,
        cause: error.to_string(),
    }
}

impl SqliteStore {
    /// Opens (creating if needed) the database at `options.path` and migrates its schema.
    pub fn open(
        options: &SqliteOptions,
        store_options: &StoreOptions,
    ) -> Result<SqliteStore, StoreError> {
        let target = format!("SQLite database {}", options.path.display());
        let open_error = |error: rusqlite::Error| StoreError::Open {
            target: target.clone(),
            cause: error.to_string(),
        };
        let mut connection = Connection::open(&options.path).map_err(open_error)?;
        let reader = Connection::open(&options.path).map_err(open_error)?;
        let synchronous = options.synchronous.pragma();
        // journal_mode answers with a row; the others do not.
        let mode: String = connection
            .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
            .map_err(open_error)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::Open {
                target,
                cause: format!("cannot switch to WAL mode (journal_mode is {mode})"),
            });
        }
        connection
            .execute_batch(&format!(
                "PRAGMA synchronous = {synchronous}; PRAGMA foreign_keys = ON;"
            ))
            .map_err(open_error)?;
        for connection in [&connection, &reader] {
            connection
                .busy_timeout(std::time::Duration::from_millis(options.busy_timeout_ms))
                .map_err(open_error)?;
            // Every statement the store runs stays prepared (rusqlite keeps 16; the
            // writer alone runs about 20, a transition's text differing by its status).
            connection.set_prepared_statement_cache_capacity(STATEMENTS_CACHED_MAX);
        }
        // The reader never writes; saying so makes a slip an error, not a write outside
        // the groups.
        reader
            .execute_batch("PRAGMA query_only = ON")
            .map_err(open_error)?;
        let persisted_secret = migrate(&mut connection).map_err(|error| match error {
            StoreError::Backend { cause, .. } => StoreError::Open {
                target: target.clone(),
                cause,
            },
            other => other,
        })?;
        Ok(SqliteStore {
            writer: GroupCommit::new(Writer(connection)),
            reader: Mutex::new(reader),
            cursor_secret: store_options
                .cursor_secret
                .clone()
                .unwrap_or(persisted_secret),
        })
    }

    /// How many commits the writes so far took (see [`super::group`]).
    pub fn group_figures(&self) -> super::group::GroupFigures {
        self.writer.figures()
    }

    fn read_lock(&self) -> Result<MutexGuard<'_, Connection>, StoreError> {
        self.reader.lock().map_err(|_| StoreError::Backend {
            operation: "lock the SQLite reading connection",
            cause: "a thread panicked while holding it".into(),
        })
    }
}

/// Creates or upgrades the schema in one immediate transaction; returns the persisted
/// cursor secret. A newer schema is refused before anything is written.
fn migrate(connection: &mut Connection) -> Result<Vec<u8>, StoreError> {
    let failed = backend("migrate the schema");
    let mut transaction = connection
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(&failed)?;
    let secret = schema::migrate(&mut transaction, schema::Dialect::Sqlite)?;
    transaction.commit().map_err(&failed)?;
    Ok(secret)
}

impl MetaTable for rusqlite::Transaction<'_> {
    fn run(&mut self, sql: &str) -> Result<(), StoreError> {
        self.execute_batch(sql)
            .map_err(backend("migrate the schema"))
    }

    fn get(&mut self, key: &str) -> Result<Option<String>, StoreError> {
        self.query_row(
            "SELECT value FROM tasklatch_meta WHERE key = ?1",
            [key],
            |row| row.get(0),
        )
        .optional()
        .map_err(backend("migrate the schema"))
    }

    fn set(&mut self, key: &str, value: &str) -> Result<(), StoreError> {
        self.execute(
            "INSERT INTO tasklatch_meta (key, value) VALUES (?1, ?2)
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [key, value],
        )
        .map(drop)
        .map_err(backend("migrate the schema"))
    }
}

impl SqlRow for Row<'_> {
    fn text(&self, at: usize) -> Result<Option<String>, String> {
        self.get(at).map_err(|error| error.to_string())
    }

    fn int(&self, at: usize) -> Result<Option<i64>, String> {
        self.get(at).map_err(|error| error.to_string())
    }

    fn flag(&self, at: usize) -> Result<Option<bool>, String> {
        self.get(at).map_err(|error| error.to_string())
    }
}

/// Runs `sql` and decodes every row as a task.
fn query_tasks(
    connection: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
    operation: &'static str,
) -> Result<Vec<TaskRecord>, StoreError> {
    let mut statement = connection.prepare_cached(sql).map_err(backend(operation))?;
    let mut rows = statement.query(params).map_err(backend(operation))?;
    let mut tasks = Vec::new();
    while let Some(row) = rows.next().map_err(backend(operation))? {
        tasks.push(task_from_row(row)?);
    }
    Ok(tasks)
}

fn read_task(connection: &Connection, task_id: &str) -> Result<Option<TaskRecord>, StoreError> {
    // Every get, result and compare-and-swap reads through here: build the text once.
    static SQL: LazyLock<String> =
        LazyLock::new(|| format!("SELECT {TASK_COLUMNS} FROM tasks WHERE task_id = ?1"));
    Ok(query_tasks(connection, &SQL, [task_id], "read a task")?.pop())
}

fn insert_task(connection: &Connection, task: &TaskParams<'_>) -> Result<(), StoreError> {
    // Every admission inserts through here: build the text once.
    static SQL: LazyLock<String> = LazyLock::new(|| {
        format!(
            "INSERT INTO tasks ({TASK_COLUMNS}) VALUES \
             (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, \
              ?19, ?20, ?21)"
        )
    });
    let record = task.record;
    let mut statement = connection
        .prepare_cached(&SQL)
        .map_err(backend("insert a task"))?;
    statement
        .execute(params![
            record.task_id,
            record.auth_key,
            record.method,
            record.tool_name,
            task.request_digest,
            record.idempotency_key,
            task.status,
            task.version,
            task.created_at_ms,
            task.updated_at_ms,
            task.expires_at_ms,
            task.ttl_ms,
            task.poll_interval_ms,
            record.cancel_requested,
            task.outcome,
            record.status_message,
            record.correlation_id,
            task.era,
            task.input_requests,
            task.input_responses,
            record.irreversible_effect,
        ])
        .map_err(|error| match error.sqlite_error_code() {
            Some(rusqlite::ErrorCode::ConstraintViolation)
                if error.to_string().contains("tasks.task_id") =>
            {
                StoreError::Duplicate {
                    task_id: record.task_id.clone(),
                }
            }
            _ => backend("insert a task")(error),
        })?;
    Ok(())
}

/// One admission, in its group's savepoint: the idempotency key's holder read and judged
/// by the contract, then the task and its outbox entry. `None` when admitted: the caller
/// moves its record into the answer, so the record is not cloned while the writer waits.
fn write_admission(
    writer: &mut Writer,
    command: &CreateCommand,
    request: &contract::CreateRequest<'_>,
    task: &TaskParams<'_>,
    request_json: &str,
) -> Result<Option<Answer>, StoreError> {
    static BOUND_SQL: LazyLock<String> = LazyLock::new(|| {
        format!("SELECT {TASK_COLUMNS} FROM tasks WHERE auth_key = ?1 AND idempotency_key = ?2")
    });
    let failed = backend("create a task");
    let transaction = &writer.0;
    let bound = match &command.idempotency_key {
        Some(key) => query_tasks(
            transaction,
            &BOUND_SQL,
            [&command.caller, key],
            "create a task",
        )?
        .pop(),
        None => None,
    };
    let decision = contract::guard_create(request, bound.as_ref(), command.now_ms);
    match decision {
        Decision::AcceptTask => {}
        Decision::ReplayTask => return super::replay(bound).map(Some),
        _ => return Ok(Some(Answer::bare(decision))),
    }
    if let Some(expired) = &bound {
        transaction
            .execute(
                "UPDATE tasks SET idempotency_key = NULL WHERE task_id = ?1",
                [&expired.task_id],
            )
            .map_err(&failed)?;
    }
    let record = task.record;
    if let Err(error) = insert_task(transaction, task) {
        let answer = super::collided(error, || read_task(transaction, &record.task_id));
        // Nothing of this admission stays (the expired holder keeps its key).
        writer
            .rollback_to_savepoint()
            .map_err(|cause| StoreError::Backend {
                operation: "create a task",
                cause,
            })?;
        return answer.map(Some);
    }
    transaction
        .prepare_cached(
            "INSERT INTO outbox (task_id, auth_key, request, enqueued_at_ms) \
             VALUES (?1, ?2, ?3, ?4)",
        )
        .and_then(|mut statement| {
            statement.execute(params![
                record.task_id,
                record.auth_key,
                request_json,
                task.created_at_ms,
            ])
        })
        .map_err(&failed)?;
    Ok(None)
}

impl TaskStore for SqliteStore {
    fn create(&self, command: &CreateCommand) -> Result<Answer, StoreError> {
        let digest = command.request.digest();
        let request = command.contract_request(&digest);
        // Refusals and synchronous calls precede idempotency: they never touch the database.
        let unbound = contract::guard_create(&request, None, command.now_ms);
        if unbound != Decision::AcceptTask {
            return Ok(Answer::bare(unbound));
        }
        let record = command.admission_record(digest.clone());
        // Encoded before the writer is taken: the connection waits for nothing but SQL.
        let task = TaskParams::of(&record)?;
        let request_json = serde_json::to_string(&command.request).expect("requests serialise");
        // `None`: admitted (the record is moved into the answer once the write is done).
        let not_admitted = self.writer.write("create a task", |writer| {
            write_admission(writer, command, &request, &task, &request_json)
        })?;
        Ok(not_admitted.unwrap_or_else(|| Answer::new(Decision::AcceptTask, Some(record))))
    }

    fn transition(&self, command: &TransitionCommand) -> Result<Answer, StoreError> {
        check_transition_command(command)?;
        // Optimistic: read (a WAL reader takes no lock), let the contract decide, then one
        // autocommit compare-and-swap. The write lock is held for that one statement only.
        // If the swap applies, the row was exactly the state read (every change bumps the
        // version the predicate pins), so the record after it is computed, not re-read.
        // (RETURNING would do the same in one statement, but on this schema SQLite's
        // RETURNING costs more than the UPDATE itself: ~120 µs against ~47 µs, measured.)
        let now = sql_int(command.now_ms, "now_ms")?;
        let expected = sql_int(command.expected_version, "expected_version")?;
        self.writer.write("write a transition", |writer| {
            let connection = &writer.0;
            let before = read_task(connection, &command.task_id)?;
            let decision = contract::guard_transition(
                &command.contract_request(),
                before.as_ref(),
                command.now_ms,
            );
            if decision != Decision::ApplyTransition {
                return Ok(Answer::new(decision, before));
            }
            let before = before.expect("apply implies found");
            super::check_questions_are_new(&before, command)?;
            let sql = format!(
                "UPDATE tasks SET status = ?1, version = version + 1, \
                 updated_at_ms = max(updated_at_ms, ?2), outcome = ?3, \
                 status_message = coalesce(?4, status_message), \
                 input_requests = CASE ?1 WHEN 'input_required' THEN ?8 \
                     WHEN 'working' THEN NULL ELSE input_requests END, \
                 irreversible_effect = coalesce(?9, irreversible_effect) \
             WHERE task_id = ?5 AND {predicate}",
                predicate = cas_predicate(
                    command.next,
                    &CasParams {
                        auth_key: "?6",
                        version: Some("?7"),
                        now_ms: "?2",
                        point_of_no_return: command.irreversible_effect.is_some(),
                    },
                ),
            );
            let changed = connection
                .prepare_cached(&sql)
                .and_then(|mut statement| {
                    statement.execute(params![
                        command.next.as_str(),
                        now,
                        encode_outcome(&super::written_outcome(command)),
                        super::written_message(command),
                        command.task_id,
                        command.caller,
                        expected,
                        encode_input(&command.input_requests),
                        command.irreversible_effect,
                    ])
                })
                .map_err(backend("write a transition"))?;
            match changed {
                1 => Ok(Answer::new(
                    Decision::ApplyTransition,
                    Some(applied_transition(&before, command)),
                )),
                // Another writer got there between the read and the swap: classify what won.
                0 => classify_refused_transition(command, read_task(connection, &command.task_id)?),
                changed => Err(StoreError::Inconsistent(format!(
                    "task {}: a transition changed {changed} rows",
                    command.task_id
                ))),
            }
        })
    }

    fn read(&self, task_id: &str) -> Result<Option<TaskRecord>, StoreError> {
        read_task(&*self.read_lock()?, task_id)
    }

    fn cancel(
        &self,
        negotiated: Negotiated,
        caller: &str,
        task_id: &str,
        now_ms: u64,
    ) -> Result<Answer, StoreError> {
        // Optimistic like `transition`; the swap pins the version read, so a concurrent
        // working ↔ input_required change makes it retry (bounded), never mis-cancel.
        let sql = format!(
            "UPDATE tasks SET status = 'cancelled', cancel_requested = 1, \
                 version = version + 1, updated_at_ms = max(updated_at_ms, ?1), \
                 status_message = ?2 \
             WHERE task_id = ?3 AND {predicate}",
            predicate = cas_predicate(
                TaskStatus::Cancelled,
                &CasParams {
                    auth_key: "?4",
                    version: Some("?5"),
                    now_ms: "?1",
                    point_of_no_return: false,
                },
            ),
        );
        let now = sql_int(now_ms, "now_ms")?;
        self.writer.write("cancel a task", |writer| {
            let connection = &writer.0;
            for _ in 0..CANCEL_ATTEMPTS_MAX {
                let before = read_task(connection, task_id)?;
                let decision = contract::guard_cancel(negotiated, caller, before.as_ref(), now_ms);
                if decision != Decision::ApplyCancel {
                    return Ok(Answer::new(decision, before));
                }
                let before = before.expect("apply implies found");
                let version = sql_int(before.version, "version")?;
                let changed = connection
                    .prepare_cached(&sql)
                    .and_then(|mut statement| {
                        statement.execute(params![
                            now,
                            cancel_message(&before),
                            task_id,
                            caller,
                            version,
                        ])
                    })
                    .map_err(backend("cancel a task"))?;
                if changed == 1 {
                    return Ok(Answer::new(
                        Decision::ApplyCancel,
                        Some(cancelled_record(&before, now_ms)),
                    ));
                }
            }
            let current = read_task(connection, task_id)?;
            match classify_refused_cancel(negotiated, caller, task_id, now_ms, current) {
                Err(StoreError::Inconsistent(_)) => Err(StoreError::Backend {
                    operation: "cancel a task",
                    cause: format!("the task kept changing for {CANCEL_ATTEMPTS_MAX} attempts"),
                }),
                answer => answer,
            }
        })
    }

    fn answer_input(&self, command: &InputCommand) -> Result<Answer, StoreError> {
        // Optimistic like `cancel`: the swap pins the version read, so a concurrent change
        // makes it decide again on what won (bounded).
        const SQL: &str = "UPDATE tasks SET status = ?1, version = version + 1, \
                 updated_at_ms = max(updated_at_ms, ?2), input_requests = ?3, \
                 input_responses = ?4 \
             WHERE task_id = ?5 AND auth_key = ?6 AND version = ?7 \
               AND status = 'input_required' \
               AND (expires_at_ms IS NULL OR expires_at_ms > ?2)";
        let now = sql_int(command.now_ms, "now_ms")?;
        self.writer
            .write("answer a task's input requests", |writer| {
                let connection = &writer.0;
                for _ in 0..CANCEL_ATTEMPTS_MAX {
                    let before = read_task(connection, &command.task_id)?;
                    let (decision, after) = input_decision(command, before.as_ref());
                    let Some(after) = after else {
                        return Ok(Answer::new(decision, before));
                    };
                    let version = sql_int(after.version - 1, "version")?;
                    let changed = connection
                        .prepare_cached(SQL)
                        .and_then(|mut statement| {
                            statement.execute(params![
                                after.status.as_str(),
                                now,
                                encode_input(&after.input_requests),
                                encode_input(&after.input_responses),
                                command.task_id,
                                command.caller,
                                version,
                            ])
                        })
                        .map_err(backend("answer a task's input requests"))?;
                    if changed == 1 {
                        return Ok(Answer::new(decision, Some(after)));
                    }
                }
                Err(StoreError::Backend {
                    operation: "answer a task's input requests",
                    cause: format!("the task kept changing for {CANCEL_ATTEMPTS_MAX} attempts"),
                })
            })
    }

    fn list(&self, query: &ListQuery) -> Result<ListPage, StoreError> {
        let after = match list_preamble(&self.cursor_secret, query) {
            Ok(after) => after,
            Err(refused) => return Ok(refused),
        };
        let limit = page_limit(query.limit);
        let (after_ms, after_id) = match after {
            Some(after) => (sql_int(after.created_at_ms, "cursor")?, after.task_id),
            None => (-1, String::new()),
        };
        // The caller is applied here, in the query: no other tenant's row is ever read.
        // `(?5 + 0)`: a page size that changes must not prepare the statement again (see
        // `claim`).
        let sql = format!(
            "SELECT {TASK_COLUMNS} FROM tasks \
             WHERE {owner} AND (expires_at_ms IS NULL OR expires_at_ms > ?2) \
               AND (created_at_ms > ?3 OR (created_at_ms = ?3 AND task_id > ?4)) \
             ORDER BY created_at_ms, task_id LIMIT (?5 + 0)",
            owner = owner_clause("?1"),
        );
        let tasks = query_tasks(
            &*self.read_lock()?,
            &sql,
            params![
                query.caller,
                sql_int(query.now_ms, "now_ms")?,
                after_ms,
                after_id,
                sql_limit(limit + 1)
            ],
            "list tasks",
        )?;
        Ok(list_page(&self.cursor_secret, &query.caller, tasks, limit))
    }

    fn claim(
        &self,
        worker: &str,
        now_ms: u64,
        lease_ms: u64,
        max: usize,
    ) -> Result<Vec<OutboxClaim>, StoreError> {
        let failed = backend("claim outbox entries");
        let now = sql_int(now_ms, "now_ms")?;
        let lease_expires_at_ms = now_ms.saturating_add(lease_ms);
        let lease = sql_int(lease_expires_at_ms, "lease expiry (now_ms + lease_ms)")?;
        self.writer.write("claim outbox entries", |writer| {
            let transaction = &writer.0;
            let mut claimed: Vec<(u64, OutboxClaim)> = Vec::new();
            {
                let mut statement = transaction.prepare_cached(CLAIM_SQL).map_err(&failed)?;
                let mut rows = statement
                    .query(params![
                        worker,
                        lease,
                        now,
                        sql_limit(max.min(CLAIM_BATCH_MAX))
                    ])
                    .map_err(&failed)?;
                while let Some(row) = rows.next().map_err(&failed)? {
                    let columns = Columns::new(row, "outbox.task_id")?;
                    claimed.push((
                        columns.u64(4, "outbox.enqueued_at_ms")?,
                        claim_from_row(&columns, lease_expires_at_ms)?,
                    ));
                }
            }
            claimed.sort_by(|a, b| (a.0, &a.1.task_id).cmp(&(b.0, &b.1.task_id)));
            let mut claims = Vec::with_capacity(claimed.len());
            for (_, mut claim) in claimed {
                // The outbox row cascades with its task, so the task is there.
                let task = read_task(transaction, &claim.task_id)?.ok_or_else(|| {
                    StoreError::Inconsistent(format!("outbox entry {} has no task", claim.task_id))
                })?;
                claim.task_version = task.version;
                claim.task_status = super::claim_status(task.status);
                claims.push(claim);
            }
            Ok(claims)
        })
    }

    fn ack(&self, task_id: &str, attempt: u32, now_ms: u64) -> Result<bool, StoreError> {
        let now = sql_int(now_ms, "now_ms")?;
        let changed = self.writer.write("ack an outbox entry", |writer| {
            writer
            .0
            .prepare_cached(
                "UPDATE outbox SET acked_at_ms = ?1, lease_owner = NULL, lease_expires_at_ms = NULL \
                 WHERE task_id = ?2 AND attempt = ?3 AND acked_at_ms IS NULL",
            )
            .and_then(|mut statement| {
                statement.execute(params![now, task_id, attempt])
            })
            .map_err(backend("ack an outbox entry"))
        })?;
        Ok(changed == 1)
    }

    fn release_expired_leases(&self, now_ms: u64) -> Result<usize, StoreError> {
        let now = sql_int(now_ms, "now_ms")?;
        self.writer.write("release expired leases", |writer| {
            writer
                .0
                .execute(
                    "UPDATE outbox SET lease_owner = NULL, lease_expires_at_ms = NULL \
                     WHERE acked_at_ms IS NULL AND lease_expires_at_ms <= ?1",
                    [now],
                )
                .map_err(backend("release expired leases"))
        })
    }

    fn sweep_expired(&self, now_ms: u64, max: usize) -> Result<usize, StoreError> {
        let now = sql_int(now_ms, "now_ms")?;
        self.writer.write("sweep expired tasks", |writer| {
            writer
                .0
                .execute(
                    "DELETE FROM tasks WHERE task_id IN (SELECT task_id FROM tasks \
                         WHERE expires_at_ms <= ?1 ORDER BY expires_at_ms, task_id LIMIT ?2)",
                    params![now, sql_limit(super::sweep_bound(max))],
                )
                .map_err(backend("sweep expired tasks"))
        })
    }

    fn import(&self, records: &[TaskRecord]) -> Result<(), StoreError> {
        let tasks = records
            .iter()
            .map(TaskParams::of)
            .collect::<Result<Vec<_>, _>>()?;
        self.writer.write("import tasks", |writer| {
            for task in &tasks {
                // An error rolls the write back to its savepoint: all or nothing.
                insert_task(&writer.0, task)?;
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::StatementStatus;

    /// Runs the claim `sql` once per limit on a fresh schema; the times SQLite prepared it
    /// again.
    fn reprepares(sql: &str, limits: &[i64]) -> i32 {
        let mut connection = Connection::open_in_memory().expect("an in-memory database");
        migrate(&mut connection).expect("the schema");
        let mut statement = connection.prepare(sql).expect("the claim prepares");
        for &limit in limits {
            let mut rows = statement
                .query(params!["worker", 1_000, 0, limit])
                .expect("the claim runs");
            while rows.next().expect("a row").is_some() {}
        }
        statement.get_status(StatementStatus::RePrepare)
    }

    #[test]
    fn the_claim_is_prepared_once_whatever_its_limit() {
        let limits = [1, 2, 3, 32, 7];
        assert_eq!(reprepares(CLAIM_SQL, &limits), 0);
        // The same text with bare `LIMIT ?4` is prepared again at every new limit: what the
        // first assertion guards against is visible here.
        let bare = CLAIM_SQL.replace("(?4 + 0)", "?4");
        assert!(reprepares(&bare, &limits) >= 4);
    }
}
