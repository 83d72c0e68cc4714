//! `PostgresStore`: the adapter for many server replicas sharing one database.
//!
//! The same schema and predicates as SQLite, written so each operation is one round trip
//! where it can be: create is a single statement whose CTE inserts the task and its outbox
//! entry together; a transition is one `UPDATE … WHERE … RETURNING`; outbox claims use
//! `FOR UPDATE SKIP LOCKED` so replicas never hand one entry to two workers at once.
//! A zero-row update is followed by a re-read that the contract classifies.

use super::row::{
    CasParams, Columns, SqlRow, TASK_COLUMNS, TaskParams, cas_predicate, claim_from_row,
    encode_input, encode_outcome, owner_clause, sql_int, sql_limit, task_from_row,
};
use super::schema::{self, MetaTable};
use super::{
    Answer, CANCEL_ATTEMPTS_MAX, CANCEL_MESSAGE, CANCEL_PAST_POINT_AFTER, CANCEL_PAST_POINT_BEFORE,
    CLAIM_BATCH_MAX, Change, ChangeFeed, ChangeSink, CreateCommand, InputCommand, ListPage,
    ListQuery, OutboxClaim, StoreError, StoreOptions, TaskStore, TransitionCommand,
    check_transition_command, classify_refused_cancel, classify_refused_transition, input_decision,
    list_page, list_preamble, page_limit,
};
use crate::contract::{self, Decision, Negotiated, TaskRecord, TaskStatus};
use crate::mutants::{Mutant, on};
use crate::sync::{Condvar, Deadline, Mutex};
use postgres::types::ToSql;
use postgres::{Client, GenericClient, NoTls, Row, Statement, Transaction};
use std::collections::HashMap;
use std::sync::LazyLock;

/// The PostgreSQL adapter: a pool of up to [`CONNECTIONS_MAX`] connections, every
/// operation one round trip where it can be, tables in the schema it was opened with.
///
/// Concurrent operations run on connections of their own, so their commits reach the
/// server together and share its WAL flushes (PostgreSQL's own group commit): one
/// connection behind a lock made every admission wait for the one before it to be
/// flushed. Two operations of one process race as two replicas' do, which the store
/// is written for (compare-and-swap, `SKIP LOCKED`, conflict re-reads).
pub struct PostgresStore {
    pool: Pool,
    cursor_secret: Vec<u8>,
    /// The `NOTIFY` channel of this store's schema: `tasklatch_<schema>`.
    channel: String,
}

/// Connections one store opens at most: enough concurrent commits to fill a WAL flush on
/// a small server, few enough that several replicas fit PostgreSQL's default 100.
pub const CONNECTIONS_MAX: usize = 8;
/// How long an operation waits for a connection when all are busy before it fails.
const CONNECTION_WAIT_MS_MAX: u64 = 30_000;

/// The store's connections, opened on demand (one while the store is used by one thread
/// at a time). A connection found closed is dropped, not reused.
struct Pool {
    idle: Mutex<PoolState>,
    returned: Condvar,
    /// Where every connection goes, the change feed's too (the URL the store was opened
    /// with).
    url: String,
    /// `SET search_path …` for the store's schema, run on every new connection.
    setup: Option<String>,
    /// The backends of this store's connections: notifications they sent are not news to
    /// this process, which woke its own waits already.
    own_pids: std::sync::Arc<Mutex<std::collections::BTreeSet<i32>>>,
}

struct PoolState {
    idle: Vec<Connection>,
    /// Idle and lent out together.
    opened: usize,
}

/// A connection lent by the pool; back to it when dropped.
struct Pooled<'a> {
    pool: &'a Pool,
    connection: Option<Connection>,
}

impl std::ops::Deref for Pooled<'_> {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        self.connection.as_ref().expect("present until dropped")
    }
}

impl std::ops::DerefMut for Pooled<'_> {
    fn deref_mut(&mut self) -> &mut Connection {
        self.connection.as_mut().expect("present until dropped")
    }
}

impl Drop for Pooled<'_> {
    fn drop(&mut self) {
        let Some(connection) = self.connection.take() else {
            return;
        };
        let Ok(mut state) = self.pool.idle.lock() else {
            return;
        };
        if connection.client.is_closed() {
            self.pool.discard(&mut state, &connection);
        } else {
            state.idle.push(connection);
        }
        drop(state);
        self.pool.returned.notify_one();
    }
}

impl Pool {
    fn take(&self) -> Result<Pooled<'_>, StoreError> {
        fn poisoned<T>(_: T) -> StoreError {
            StoreError::Backend {
                operation: "take a PostgreSQL connection",
                cause: "a thread panicked while holding the pool".into(),
            }
        }
        let deadline = Deadline::after_ms(CONNECTION_WAIT_MS_MAX);
        let mut state = self.idle.lock().map_err(poisoned)?;
        loop {
            if let Some(connection) = state.idle.pop() {
                // Closed while idle, or its closing was noticed only after it came back.
                if connection.client.is_closed() {
                    self.discard(&mut state, &connection);
                    continue;
                }
                return Ok(Pooled {
                    pool: self,
                    connection: Some(connection),
                });
            }
            if state.opened < CONNECTIONS_MAX {
                state.opened += 1;
                drop(state);
                // Connect outside the lock: the others keep lending meanwhile.
                return match self.connect() {
                    Ok(connection) => Ok(Pooled {
                        pool: self,
                        connection: Some(connection),
                    }),
                    Err(error) => {
                        self.idle.lock().map_err(poisoned)?.opened -= 1;
                        self.returned.notify_one();
                        Err(error)
                    }
                };
            }
            if deadline.passed() {
                return Err(StoreError::Backend {
                    operation: "take a PostgreSQL connection",
                    cause: format!(
                        "all {CONNECTIONS_MAX} connections stayed busy for {CONNECTION_WAIT_MS_MAX} ms"
                    ),
                });
            }
            state = self
                .returned
                .wait_until(state, &deadline)
                .map_err(poisoned)?
                .0;
        }
    }

    /// Forgets a closed connection: it no longer counts, and its pid may be another
    /// backend's later, whose notifications are news.
    fn discard(&self, state: &mut PoolState, connection: &Connection) {
        state.opened -= 1;
        if let Ok(mut pids) = self.own_pids.lock() {
            pids.remove(&connection.pid);
        }
    }

    fn connect(&self) -> Result<Connection, StoreError> {
        let failed = backend("open a PostgreSQL connection");
        let mut client = Client::connect(&self.url, NoTls).map_err(&failed)?;
        if let Some(setup) = &self.setup {
            client.batch_execute(setup).map_err(&failed)?;
        }
        let pid: i32 = client
            .query_one("SELECT pg_backend_pid()", &[])
            .map_err(&failed)?
            .get(0);
        if let Ok(mut pids) = self.own_pids.lock() {
            pids.insert(pid);
        }
        Ok(Connection {
            client,
            statements: HashMap::new(),
            pid,
        })
    }
}

/// One connection and its prepared statements: each SQL text is parsed once per
/// connection, so an operation costs one round trip, not two (parse, then execute).
struct Connection {
    client: Client,
    statements: HashMap<String, Statement>,
    /// Its backend process, in the pool's `own_pids` while the connection lives.
    pid: i32,
}

/// Bound on cached statements; the store uses a fixed set of SQL texts, far fewer.
const STATEMENTS_MAX: usize = 64;

impl Connection {
    fn prepared(&mut self, sql: &str, operation: &'static str) -> Result<Statement, StoreError> {
        if let Some(statement) = self.statements.get(sql) {
            return Ok(statement.clone());
        }
        let statement = self.client.prepare(sql).map_err(backend(operation))?;
        if self.statements.len() >= STATEMENTS_MAX {
            self.statements.clear();
        }
        self.statements.insert(sql.to_owned(), statement.clone());
        Ok(statement)
    }

    /// Prepares `sql` (cached) and decodes every row it returns as a task.
    fn tasks(
        &mut self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
        operation: &'static str,
    ) -> Result<Vec<TaskRecord>, StoreError> {
        let statement = self.prepared(sql, operation)?;
        query_tasks(&mut self.client, &statement, params, operation)
    }

    fn read_task(&mut self, task_id: &str) -> Result<Option<TaskRecord>, StoreError> {
        // Every get, result and refused compare-and-swap reads through here.
        static SQL: LazyLock<String> =
            LazyLock::new(|| format!("SELECT {TASK_COLUMNS} FROM tasks WHERE task_id = $1"));
        Ok(self.tasks(&SQL, &[&task_id], "read a task")?.pop())
    }

    fn execute(
        &mut self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
        operation: &'static str,
    ) -> Result<u64, StoreError> {
        let statement = self.prepared(sql, operation)?;
        self.client
            .execute(&statement, params)
            .map_err(backend(operation))
    }
}

/// A readable cause: the server's message and SQLSTATE when there is one.
fn cause(error: &postgres::Error) -> String {
    match error.as_db_error() {
        Some(db) => format!("{} ({}): {}", db.severity(), db.code().code(), db.message()),
        None => {
            let mut text = error.to_string();
            let mut source = std::error::Error::source(error);
            while let Some(inner) = source {
                text.push_str(": ");
                text.push_str(&inner.to_string());
                source = inner.source();
            }
            text
        }
    }
}

fn backend(operation: &'static str) -> impl Fn(postgres::Error) -> StoreError {
    move |error| StoreError::Backend {
        operation,
        cause: cause(&error),
    }
}

fn is_unique_violation(error: &postgres::Error) -> bool {
    error.code() == Some(&postgres::error::SqlState::UNIQUE_VIOLATION)
}

impl PostgresStore {
    /// Connects to `url`; with `schema`, keeps all tables in that schema (created if
    /// missing), so several stores can share one database. Migrates on open.
    pub fn open(
        url: &str,
        schema: Option<&str>,
        options: &StoreOptions,
    ) -> Result<PostgresStore, StoreError> {
        let redacted = redact(url);
        let open_error = |cause: String| StoreError::Open {
            target: format!("PostgreSQL {redacted}"),
            cause,
        };
        if let Some(schema) = schema {
            let valid = !schema.is_empty()
                && schema.len() <= 63
                && schema
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
            if !valid {
                return Err(StoreError::Invalid(format!(
                    "schema name {schema:?}: use 1-63 of [a-z0-9_]"
                )));
            }
        }
        let pool = Pool {
            idle: Mutex::new(PoolState {
                idle: Vec::new(),
                opened: 0,
            }),
            returned: Condvar::new(),
            url: url.to_owned(),
            // Validated above, so it can be spliced into the statement. A search path
            // may name a schema that does not exist yet: the first connection creates it.
            setup: schema.map(|schema| format!("SET search_path TO {schema}")),
            own_pids: std::sync::Arc::new(Mutex::new(std::collections::BTreeSet::new())),
        };
        // The first connection is made as every later one is, through the pool.
        let opened = |error: StoreError| match error {
            StoreError::Backend { cause, .. } => open_error(cause),
            other => other,
        };
        let mut first = pool.take().map_err(opened)?;
        if let Some(schema) = schema {
            first
                .client
                .batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS {schema}"))
                .map_err(|error| open_error(cause(&error)))?;
        }
        let persisted_secret = migrate(&mut first.client)?;
        let schema_name: String = first
            .client
            .query_one("SELECT COALESCE(current_schema(), 'public')::TEXT", &[])
            .map_err(|error| open_error(cause(&error)))?
            .get(0);
        drop(first);
        // A channel is an identifier: keep it to characters that need no quoting.
        let channel: String = format!("tasklatch_{schema_name}")
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '_'
                }
            })
            .take(63)
            .collect();
        Ok(PostgresStore {
            pool,
            cursor_secret: options.cursor_secret.clone().unwrap_or(persisted_secret),
            channel,
        })
    }

    fn lock(&self) -> Result<Pooled<'_>, StoreError> {
        self.pool.take()
    }

    /// How many connections the pool has opened (idle and lent out).
    pub fn connections_opened(&self) -> usize {
        self.pool.idle.lock().map_or(0, |state| state.opened)
    }
}

/// `postgres://user:secret@host/db` → `postgres://user:***@host/db`.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let credentials = &url[scheme + 3..at];
            match credentials.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..scheme + 3], &url[at..]),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}

/// Creates or upgrades the schema in one transaction that holds the meta table
/// exclusively, so replicas opening together migrate once; returns the cursor secret.
fn migrate(client: &mut Client) -> Result<Vec<u8>, StoreError> {
    let mut transaction = client
        .transaction()
        .map_err(backend("migrate the schema"))?;
    let secret = schema::migrate(&mut transaction, schema::Dialect::Postgres)?;
    transaction
        .commit()
        .map_err(backend("migrate the schema"))?;
    Ok(secret)
}

impl MetaTable for Transaction<'_> {
    fn run(&mut self, sql: &str) -> Result<(), StoreError> {
        self.batch_execute(sql)
            .map_err(backend("migrate the schema"))
    }

    fn get(&mut self, key: &str) -> Result<Option<String>, StoreError> {
        self.query_opt("SELECT value FROM tasklatch_meta WHERE key = $1", &[&key])
            .and_then(|row| row.map(|row| row.try_get(0)).transpose())
            .map_err(backend("migrate the schema"))
    }

    fn set(&mut self, key: &str, value: &str) -> Result<(), StoreError> {
        self.execute(
            "INSERT INTO tasklatch_meta (key, value) VALUES ($1, $2)
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            &[&key, &value],
        )
        .map(drop)
        .map_err(backend("migrate the schema"))
    }
}

impl SqlRow for Row {
    fn text(&self, at: usize) -> Result<Option<String>, String> {
        self.try_get(at).map_err(|error| cause(&error))
    }

    fn int(&self, at: usize) -> Result<Option<i64>, String> {
        self.try_get(at).map_err(|error| cause(&error))
    }

    fn flag(&self, at: usize) -> Result<Option<bool>, String> {
        self.try_get(at).map_err(|error| cause(&error))
    }
}

fn query_tasks(
    client: &mut impl GenericClient,
    statement: &Statement,
    params: &[&(dyn ToSql + Sync)],
    operation: &'static str,
) -> Result<Vec<TaskRecord>, StoreError> {
    client
        .query(statement, params)
        .map_err(backend(operation))?
        .iter()
        .map(task_from_row)
        .collect()
}

impl TaskParams<'_> {
    /// Parameters `$1..$21`, in [`TASK_COLUMNS`] order.
    fn bind(&self) -> Vec<&(dyn ToSql + Sync)> {
        let record = self.record;
        vec![
            &record.task_id,
            &record.auth_key,
            &record.method,
            &record.tool_name,
            &self.request_digest,
            &record.idempotency_key,
            &self.status,
            &self.version,
            &self.created_at_ms,
            &self.updated_at_ms,
            &self.expires_at_ms,
            &self.ttl_ms,
            &self.poll_interval_ms,
            &record.cancel_requested,
            &self.outcome,
            &record.status_message,
            &record.correlation_id,
            &self.era,
            &self.input_requests,
            &self.input_responses,
            &record.irreversible_effect,
        ]
    }
}

const TASK_VALUES: &str = "$1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, \
    $17, $18, $19, $20, $21";

/// Inserts the task and its outbox entry in one statement. `Ok(None)`: the idempotency
/// key is already bound (nothing was written).
fn insert_admission_sql() -> String {
    format!(
        "WITH t AS (INSERT INTO tasks ({TASK_COLUMNS}) VALUES ({TASK_VALUES}) \
             ON CONFLICT (auth_key, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING \
             RETURNING {TASK_COLUMNS}), \
         o AS (INSERT INTO outbox (task_id, auth_key, request, enqueued_at_ms) \
             SELECT task_id, auth_key, $22, created_at_ms FROM t RETURNING task_id) \
         SELECT {TASK_COLUMNS} FROM t"
    )
}

fn insert_admission(
    client: &mut impl GenericClient,
    statement: &Statement,
    task: &TaskParams<'_>,
    request_json: &str,
) -> Result<Option<TaskRecord>, StoreError> {
    let mut bound = task.bind();
    bound.push(&request_json);
    match client.query(statement, &bound) {
        Ok(rows) => rows.first().map(task_from_row).transpose(),
        Err(error) if is_unique_violation(&error) => Err(StoreError::Duplicate {
            task_id: task.record.task_id.clone(),
        }),
        Err(error) => Err(backend("create a task")(error)),
    }
}

/// Bound on create's conflict → re-read → rebind loop (a key whose expired holder is
/// released and re-taken by racing creates).
const CREATE_ATTEMPTS_MAX: usize = 4;

impl TaskStore for PostgresStore {
    fn create(&self, command: &CreateCommand) -> Result<Answer, StoreError> {
        let digest = command.request.digest();
        let request = command.contract_request(&digest);
        let unbound = contract::guard_create(&request, None, command.now_ms);
        if unbound != Decision::AcceptTask {
            return Ok(Answer::bare(unbound));
        }
        let record = command.admission_record(digest.clone());
        let task = TaskParams::of(&record)?;
        let request_json = serde_json::to_string(&command.request).expect("requests serialise");
        let mut connection = self.lock()?;
        let insert = connection.prepared(&insert_admission_sql(), "create a task")?;
        for _ in 0..CREATE_ATTEMPTS_MAX {
            let inserted =
                match insert_admission(&mut connection.client, &insert, &task, &request_json) {
                    Err(duplicate @ StoreError::Duplicate { .. }) => {
                        let sql = format!("SELECT {TASK_COLUMNS} FROM tasks WHERE task_id = $1");
                        return super::collided(duplicate, || {
                            let held = connection.tasks(&sql, &[&record.task_id], "create a task");
                            Ok(held?.pop())
                        });
                    }
                    other => other?,
                };
            if let Some(inserted) = inserted {
                return Ok(Answer::new(Decision::AcceptTask, Some(inserted)));
            }
            // The key is bound: classify against the holder.
            let sql = format!(
                "SELECT {TASK_COLUMNS} FROM tasks WHERE auth_key = $1 AND idempotency_key = $2"
            );
            let bound = connection
                .tasks(
                    &sql,
                    &[&command.caller, &command.idempotency_key],
                    "create a task",
                )?
                .pop();
            let decision = contract::guard_create(&request, bound.as_ref(), command.now_ms);
            match (decision, bound) {
                (Decision::AcceptTask, Some(expired)) => {
                    // Release the expired holder's key and insert, in one transaction.
                    let mut transaction = connection
                        .client
                        .transaction()
                        .map_err(backend("create a task"))?;
                    transaction
                        .execute(
                            "UPDATE tasks SET idempotency_key = NULL \
                             WHERE task_id = $1 AND idempotency_key = $2",
                            &[&expired.task_id, &command.idempotency_key],
                        )
                        .map_err(backend("create a task"))?;
                    let inserted =
                        insert_admission(&mut transaction, &insert, &task, &request_json)?;
                    transaction.commit().map_err(backend("create a task"))?;
                    if let Some(inserted) = inserted {
                        return Ok(Answer::new(Decision::AcceptTask, Some(inserted)));
                    }
                }
                (Decision::AcceptTask, None) => {} // the holder vanished (swept): insert again
                (Decision::ReplayTask, bound) => {
                    return super::replay(bound);
                }
                (decision, _) => return Ok(Answer::bare(decision)),
            }
        }
        Err(StoreError::Backend {
            operation: "create a task",
            cause: format!(
                "the idempotency key stayed contended after {CREATE_ATTEMPTS_MAX} attempts"
            ),
        })
    }

    fn transition(&self, command: &TransitionCommand) -> Result<Answer, StoreError> {
        check_transition_command(command)?;
        let sql = format!(
            "UPDATE tasks SET status = $1, version = version + 1, \
                 updated_at_ms = GREATEST(updated_at_ms, $2), outcome = $3, \
                 status_message = COALESCE($4, status_message), \
                 input_requests = CASE $1::TEXT WHEN 'input_required' THEN $8::TEXT \
                     WHEN 'working' THEN NULL ELSE input_requests END, \
                 irreversible_effect = COALESCE($9::TEXT, irreversible_effect) \
             WHERE task_id = $5 AND {predicate} \
             RETURNING {TASK_COLUMNS}, pg_notify($10, task_id)",
            predicate = cas_predicate(
                command.next,
                &CasParams {
                    auth_key: "$6::TEXT",
                    version: Some("$7::BIGINT"),
                    now_ms: "$2::BIGINT",
                    point_of_no_return: command.irreversible_effect.is_some(),
                },
            ),
        );
        let now_ms = sql_int(command.now_ms, "now_ms")?;
        let expected = sql_int(command.expected_version, "expected_version")?;
        let outcome = encode_outcome(&super::written_outcome(command));
        let message = super::written_message(command);
        let input_requests = encode_input(&command.input_requests);
        let mut connection = self.lock()?;
        if command.input_requests.is_some() {
            // Only a working task can be asked (the swap pins its version), and a working
            // task's answers cannot change: what is read here is what the swap writes over.
            let current = connection.read_task(&command.task_id)?;
            if let Some(current) =
                current.filter(|current| current.version == command.expected_version)
            {
                super::check_questions_are_new(&current, command)?;
            }
        }
        let applied = connection
            .tasks(
                &sql,
                &[
                    &command.next.as_str(),
                    &now_ms,
                    &outcome,
                    &message,
                    &command.task_id,
                    &command.caller,
                    &expected,
                    &input_requests,
                    &command.irreversible_effect,
                    &self.channel,
                ],
                "write a transition",
            )?
            .pop();
        match applied {
            Some(after) => Ok(Answer::new(Decision::ApplyTransition, Some(after))),
            None => classify_refused_transition(command, connection.read_task(&command.task_id)?),
        }
    }

    fn read(&self, task_id: &str) -> Result<Option<TaskRecord>, StoreError> {
        self.lock()?.read_task(task_id)
    }

    fn answer_input(&self, command: &InputCommand) -> Result<Answer, StoreError> {
        // Optimistic: decide on the row as read, then swap at its version; another writer
        // in between makes it decide again on what won (bounded).
        let sql = format!(
            "UPDATE tasks SET status = $1, version = version + 1, \
                 updated_at_ms = GREATEST(updated_at_ms, $2), input_requests = $3, \
                 input_responses = $4 \
             WHERE task_id = $5 AND auth_key = $6 AND version = $7 \
               AND status = 'input_required' \
               AND (expires_at_ms IS NULL OR expires_at_ms > $2) \
             RETURNING {TASK_COLUMNS}, pg_notify($8, task_id)"
        );
        let now_ms = sql_int(command.now_ms, "now_ms")?;
        let mut connection = self.lock()?;
        for _ in 0..CANCEL_ATTEMPTS_MAX {
            let before = connection.read_task(&command.task_id)?;
            let (decision, after) = input_decision(command, before.as_ref());
            let Some(after) = after else {
                return Ok(Answer::new(decision, before));
            };
            let version = sql_int(after.version - 1, "version")?;
            let applied = connection
                .tasks(
                    &sql,
                    &[
                        &after.status.as_str(),
                        &now_ms,
                        &encode_input(&after.input_requests),
                        &encode_input(&after.input_responses),
                        &command.task_id,
                        &command.caller,
                        &version,
                        &self.channel,
                    ],
                    "answer a task's input requests",
                )?
                .pop();
            if let Some(applied) = applied {
                return Ok(Answer::new(decision, Some(applied)));
            }
        }
        Err(StoreError::Backend {
            operation: "answer a task's input requests",
            cause: format!("the task kept changing for {CANCEL_ATTEMPTS_MAX} attempts"),
        })
    }

    fn cancel(
        &self,
        negotiated: Negotiated,
        caller: &str,
        task_id: &str,
        now_ms: u64,
    ) -> Result<Answer, StoreError> {
        if contract::guard_cancel(negotiated, caller, None, now_ms) == Decision::BlockCapability {
            return Ok(Answer::bare(Decision::BlockCapability));
        }
        let sql = format!(
            "UPDATE tasks SET status = 'cancelled', cancel_requested = TRUE, version = version + 1, \
                 updated_at_ms = GREATEST(updated_at_ms, $1), \
                 status_message = $2 || COALESCE($5 || irreversible_effect || $6, '') \
             WHERE task_id = $3 AND {predicate} AND {cooperative}\
             RETURNING {TASK_COLUMNS}, pg_notify($7, task_id)",
            predicate = cas_predicate(
                TaskStatus::Cancelled,
                &CasParams {
                    auth_key: "$4::TEXT",
                    version: None,
                    now_ms: "$1::BIGINT",
                    point_of_no_return: false,
                },
            ),
            // The one rule of contract::guard_cancel this single statement must restate:
            // a 2026-07-28 task past its point of no return acknowledges, never cancels.
            cooperative = if on(Mutant::PointOfNoReturnIgnored) {
                "TRUE "
            } else {
                "NOT (era = '2026-07-28' AND irreversible_effect IS NOT NULL) "
            },
        );
        // The mutant's silence: no words around the effect, so none is named.
        let before = (!on(Mutant::PointOfNoReturnIgnored)).then_some(CANCEL_PAST_POINT_BEFORE);
        let now = sql_int(now_ms, "now_ms")?;
        let mut connection = self.lock()?;
        let applied = connection
            .tasks(
                &sql,
                &[
                    &now,
                    &CANCEL_MESSAGE,
                    &task_id,
                    &caller,
                    &before,
                    &CANCEL_PAST_POINT_AFTER,
                    &self.channel,
                ],
                "cancel a task",
            )?
            .pop();
        match applied {
            Some(after) => Ok(Answer::new(Decision::ApplyCancel, Some(after))),
            None => classify_refused_cancel(
                negotiated,
                caller,
                task_id,
                now_ms,
                connection.read_task(task_id)?,
            ),
        }
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
        let sql = format!(
            "SELECT {TASK_COLUMNS} FROM tasks \
             WHERE {owner} AND (expires_at_ms IS NULL OR expires_at_ms > $2) \
               AND (created_at_ms, task_id) > ($3, $4) \
             ORDER BY created_at_ms, task_id LIMIT $5",
            owner = owner_clause("$1::TEXT"),
        );
        let now = sql_int(query.now_ms, "now_ms")?;
        let fetch = sql_limit(limit + 1);
        let tasks = self.lock()?.tasks(
            &sql,
            &[&query.caller, &now, &after_ms, &after_id, &fetch],
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
        let now = sql_int(now_ms, "now_ms")?;
        let lease_expires_at_ms = now_ms.saturating_add(lease_ms);
        let lease = sql_int(lease_expires_at_ms, "lease expiry (now_ms + lease_ms)")?;
        let batch = sql_limit(max.min(CLAIM_BATCH_MAX));
        let mut connection = self.lock()?;
        let statement = connection.prepared(
            // The oldest `$4` of the unleased and the expired entries, each read from
            // its own partial index (schema v4), merged in enqueue order; rows another
            // claimer holds are skipped.
            "WITH unleased AS ( \
                     SELECT task_id, enqueued_at_ms FROM outbox \
                     WHERE acked_at_ms IS NULL AND lease_expires_at_ms IS NULL \
                     ORDER BY enqueued_at_ms, task_id LIMIT $4 FOR UPDATE SKIP LOCKED), \
                 expired AS ( \
                     SELECT task_id, enqueued_at_ms FROM outbox \
                     WHERE acked_at_ms IS NULL AND lease_expires_at_ms <= $3 \
                     ORDER BY enqueued_at_ms, task_id LIMIT $4 FOR UPDATE SKIP LOCKED), \
                 ready AS ( \
                     SELECT task_id FROM (SELECT * FROM unleased UNION ALL SELECT * FROM expired) r \
                     ORDER BY enqueued_at_ms, task_id LIMIT $4), \
                 c AS ( \
                     UPDATE outbox o SET attempt = o.attempt + 1, lease_owner = $1, \
                         lease_expires_at_ms = $2 \
                     FROM ready \
                     WHERE o.task_id = ready.task_id \
                     RETURNING o.task_id, o.auth_key, o.request, o.attempt, o.enqueued_at_ms) \
                 SELECT c.task_id, c.auth_key, c.request, c.attempt, t.version, t.status \
                 FROM c JOIN tasks t ON t.task_id = c.task_id \
                 ORDER BY c.enqueued_at_ms, c.task_id",
            "claim outbox entries",
        )?;
        let rows = connection
            .client
            .query(&statement, &[&worker, &lease, &now, &batch])
            .map_err(backend("claim outbox entries"))?;
        rows.iter()
            .map(|row| {
                let columns = Columns::new(row, "outbox.task_id")?;
                Ok(OutboxClaim {
                    task_version: columns.u64(4, "version")?,
                    task_status: super::claim_status(columns.status(5, "status")?),
                    ..claim_from_row(&columns, lease_expires_at_ms)?
                })
            })
            .collect()
    }

    fn ack(&self, task_id: &str, attempt: u32, now_ms: u64) -> Result<bool, StoreError> {
        let now = sql_int(now_ms, "now_ms")?;
        let changed = self.lock()?.execute(
            "UPDATE outbox SET acked_at_ms = $1, lease_owner = NULL, lease_expires_at_ms = NULL \
                 WHERE task_id = $2 AND attempt = $3 AND acked_at_ms IS NULL",
            &[&now, &task_id, &i64::from(attempt)],
            "ack an outbox entry",
        )?;
        Ok(changed == 1)
    }

    fn release_expired_leases(&self, now_ms: u64) -> Result<usize, StoreError> {
        let now = sql_int(now_ms, "now_ms")?;
        let changed = self.lock()?.execute(
            "UPDATE outbox SET lease_owner = NULL, lease_expires_at_ms = NULL \
                 WHERE acked_at_ms IS NULL AND lease_expires_at_ms <= $1",
            &[&now],
            "release expired leases",
        )?;
        Ok(changed as usize)
    }

    fn sweep_expired(&self, now_ms: u64, max: usize) -> Result<usize, StoreError> {
        let now = sql_int(now_ms, "now_ms")?;
        let changed = self.lock()?.execute(
            "DELETE FROM tasks WHERE task_id IN (SELECT task_id FROM tasks \
                     WHERE expires_at_ms <= $1 ORDER BY expires_at_ms, task_id LIMIT $2)",
            &[&now, &sql_limit(super::sweep_bound(max))],
            "sweep expired tasks",
        )?;
        Ok(changed as usize)
    }

    fn import(&self, records: &[TaskRecord]) -> Result<(), StoreError> {
        let tasks = records
            .iter()
            .map(TaskParams::of)
            .collect::<Result<Vec<_>, _>>()?;
        let sql = format!("INSERT INTO tasks ({TASK_COLUMNS}) VALUES ({TASK_VALUES})");
        let mut client = self.lock()?;
        let mut transaction = client
            .client
            .transaction()
            .map_err(backend("import tasks"))?;
        let statement = transaction.prepare(&sql).map_err(backend("import tasks"))?;
        for task in &tasks {
            // An error drops the transaction, which rolls everything back.
            transaction
                .execute(&statement, &task.bind())
                .map_err(|error| {
                    if is_unique_violation(&error) {
                        StoreError::Duplicate {
                            task_id: task.record.task_id.clone(),
                        }
                    } else {
                        backend("import tasks")(error)
                    }
                })?;
        }
        transaction.commit().map_err(backend("import tasks"))
    }

    /// `LISTEN` on the schema's channel, on a connection of its own in a thread of its
    /// own: every transition, cancel and answer commits a `NOTIFY` naming its task (in the
    /// statement's `RETURNING`, so it is sent at commit and only then). Notifications from
    /// this store's own connections are skipped (this process woke its waits already). A
    /// lost connection is retried with backoff, then reported as [`Change::Unknown`].
    fn changes(&self, sink: ChangeSink) -> Result<Option<ChangeFeed>, StoreError> {
        let open_error = |cause: String| StoreError::Open {
            target: format!("PostgreSQL change feed {}", redact(&self.pool.url)),
            cause,
        };
        let listen = format!("LISTEN {}", self.channel);
        let connect = {
            let (url, listen) = (self.pool.url.clone(), listen.clone());
            move || -> Result<Client, String> {
                let mut client = Client::connect(&url, NoTls).map_err(|error| cause(&error))?;
                client
                    .batch_execute(&listen)
                    .map_err(|error| cause(&error))?;
                Ok(client)
            }
        };
        // The first connection is made here, so a feed that cannot start says so at once.
        let first = connect().map_err(open_error)?;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopped = stop.clone();
        let own_pids = self.pool.own_pids.clone();
        // A thread, not a task: the postgres client blocks, and this is never simulated.
        std::thread::Builder::new()
            .name("tasklatch-pg-feed".into())
            .spawn(move || follow_changes(first, connect, &own_pids, sink, &stopped))
            .map_err(|error| open_error(error.to_string()))?;
        Ok(Some(ChangeFeed::new(stop)))
    }
}

/// How long the feed's thread waits for a notification before it checks whether it was
/// stopped.
const FEED_POLL_MS: u64 = 250;
/// The longest pause between two reconnection attempts of the feed.
const FEED_BACKOFF_MS_MAX: u64 = 5_000;

/// The change feed's loop: delivers each notification's task id until `stop` is set.
fn follow_changes(
    first: Client,
    connect: impl Fn() -> Result<Client, String>,
    own_pids: &Mutex<std::collections::BTreeSet<i32>>,
    sink: ChangeSink,
    stop: &std::sync::atomic::AtomicBool,
) {
    use std::sync::atomic::Ordering;
    let mut client = Some(first);
    let mut backoff_ms = 100;
    while !stop.load(Ordering::SeqCst) {
        let Some(listening) = client.as_mut() else {
            std::thread::sleep(std::time::Duration::from_millis(backoff_ms));
            match connect() {
                Ok(reconnected) => {
                    client = Some(reconnected);
                    backoff_ms = 100;
                    // Whatever was written while it was away was not heard.
                    sink(Change::Unknown);
                }
                Err(error) => {
                    eprintln!("tasklatch: PostgreSQL change feed: reconnecting: {error}");
                    backoff_ms = (backoff_ms * 2).min(FEED_BACKOFF_MS_MAX);
                }
            }
            continue;
        };
        let mut lost = false;
        {
            let mut notifications = listening.notifications();
            let mut heard =
                notifications.timeout_iter(std::time::Duration::from_millis(FEED_POLL_MS));
            loop {
                match postgres::fallible_iterator::FallibleIterator::next(&mut heard) {
                    Ok(Some(notification)) => {
                        let own = own_pids
                            .lock()
                            .is_ok_and(|pids| pids.contains(&notification.process_id()));
                        if !own {
                            sink(Change::Task(notification.payload().to_owned()));
                        }
                    }
                    Ok(None) => break,
                    Err(_) => {
                        lost = true;
                        break;
                    }
                }
            }
        }
        if lost || listening.is_closed() {
            client = None;
        }
    }
}
