//! The SQL schema and its migration, shared by the SQLite and PostgreSQL adapters: one
//! table description rendered per [`Dialect`], one migration loop over a [`MetaTable`].

use super::{StoreError, decode_hex_secret, random_secret};

/// The schema version this build writes. Migrations bring older databases up to it.
pub(crate) const SCHEMA_VERSION: i64 = 4;

/// The database a schema is rendered for.
#[derive(Clone, Copy)]
pub(crate) enum Dialect {
    /// Both tables `WITHOUT ROWID`, clustered on `task_id`: a create then writes one
    /// b-tree page fewer per table (no separate primary-key index), which is most of what
    /// a create costs in WAL mode.
    Sqlite,
    #[cfg(feature = "postgres")]
    Postgres,
}

/// `migrations(d)[v]` moves a database from version `v` to `v + 1`.
fn migrations(dialect: Dialect) -> [String; 4] {
    let (int, flag, options) = match dialect {
        Dialect::Sqlite => ("INTEGER", "INTEGER NOT NULL DEFAULT 0", " WITHOUT ROWID"),
        #[cfg(feature = "postgres")]
        Dialect::Postgres => ("BIGINT", "BOOLEAN NOT NULL DEFAULT FALSE", ""),
    };
    [
        format!(
            "
CREATE TABLE tasks (
    task_id          TEXT PRIMARY KEY,
    auth_key         TEXT NOT NULL,
    method           TEXT NOT NULL,
    tool_name        TEXT NOT NULL,
    request_digest   TEXT NOT NULL,
    idempotency_key  TEXT,
    status           TEXT NOT NULL CHECK (status IN
                       ('working', 'input_required', 'completed', 'failed', 'cancelled')),
    version          {int} NOT NULL CHECK (version >= 1),
    created_at_ms    {int} NOT NULL,
    updated_at_ms    {int} NOT NULL,
    expires_at_ms    {int},
    ttl_ms           {int},
    poll_interval_ms {int},
    cancel_requested {flag},
    outcome          TEXT,
    status_message   TEXT,
    correlation_id   TEXT NOT NULL
){options};
CREATE UNIQUE INDEX tasks_idempotency ON tasks (auth_key, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
CREATE INDEX tasks_owner_order ON tasks (auth_key, created_at_ms, task_id);
CREATE INDEX tasks_expiry ON tasks (expires_at_ms) WHERE expires_at_ms IS NOT NULL;
CREATE TABLE outbox (
    task_id             TEXT PRIMARY KEY REFERENCES tasks (task_id) ON DELETE CASCADE,
    auth_key            TEXT NOT NULL,
    request             TEXT NOT NULL,
    enqueued_at_ms      {int} NOT NULL,
    attempt             {int} NOT NULL DEFAULT 0,
    lease_owner         TEXT,
    lease_expires_at_ms {int},
    acked_at_ms         {int}
){options};
CREATE INDEX outbox_ready ON outbox (enqueued_at_ms, task_id) WHERE acked_at_ms IS NULL;
"
        ),
        // Version 2: the protocol era a task was created in (existing tasks are
        // 2025-11-25, the only era there was), and its input requests and answers.
        "
ALTER TABLE tasks ADD COLUMN era TEXT NOT NULL DEFAULT '2025-11-25'
    CHECK (era IN ('2025-11-25', '2026-07-28'));
ALTER TABLE tasks ADD COLUMN input_requests TEXT;
ALTER TABLE tasks ADD COLUMN input_responses TEXT;
"
        .to_owned(),
        // Version 3: the irreversible effect a task declared at its point of no return.
        "ALTER TABLE tasks ADD COLUMN irreversible_effect TEXT;".to_owned(),
        // Version 4: the claim's two sources indexed apart. One index over every unacked
        // entry made each claim walk past all entries already leased (up to the queue's
        // capacity) to find free ones; now unleased entries come in enqueue order and
        // expired leases by expiry, each from its own partial index.
        "
DROP INDEX outbox_ready;
CREATE INDEX outbox_unleased ON outbox (enqueued_at_ms, task_id)
    WHERE acked_at_ms IS NULL AND lease_expires_at_ms IS NULL;
CREATE INDEX outbox_leased ON outbox (lease_expires_at_ms)
    WHERE acked_at_ms IS NULL AND lease_expires_at_ms IS NOT NULL;
"
        .to_owned(),
    ]
}

/// What the migration needs of a connection, inside the transaction the adapter opened.
pub(crate) trait MetaTable {
    /// Runs statements without parameters.
    fn run(&mut self, sql: &str) -> Result<(), StoreError>;
    /// The value of `key` in `tasklatch_meta`.
    fn get(&mut self, key: &str) -> Result<Option<String>, StoreError>;
    /// Sets `key` in `tasklatch_meta`.
    fn set(&mut self, key: &str, value: &str) -> Result<(), StoreError>;
}

/// Creates or upgrades the schema; returns the persisted cursor secret (drawn and stored
/// the first time). A newer schema is refused before anything is written.
pub(crate) fn migrate(db: &mut impl MetaTable, dialect: Dialect) -> Result<Vec<u8>, StoreError> {
    // SQLite's migration runs under `BEGIN IMMEDIATE`, which already holds the write lock;
    // PostgreSQL replicas opening together queue on the meta table's lock.
    let lock = match dialect {
        Dialect::Sqlite => "",
        #[cfg(feature = "postgres")]
        Dialect::Postgres => "LOCK TABLE tasklatch_meta IN EXCLUSIVE MODE",
    };
    db.run(&format!(
        "CREATE TABLE IF NOT EXISTS tasklatch_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL); {lock}"
    ))?;
    let found = match db.get("schema_version")? {
        None => 0,
        Some(text) => text.parse().map_err(|_| StoreError::Corrupt {
            task_id: String::new(),
            column: "tasklatch_meta.schema_version",
            detail: format!("not a number: {text:?}"),
        })?,
    };
    if found > SCHEMA_VERSION {
        return Err(StoreError::SchemaTooNew {
            found,
            supported: SCHEMA_VERSION,
        });
    }
    let done = usize::try_from(found).map_err(|_| StoreError::Corrupt {
        task_id: String::new(),
        column: "tasklatch_meta.schema_version",
        detail: format!("negative version {found}"),
    })?;
    for step in &migrations(dialect)[done..] {
        db.run(step)?;
    }
    db.set("schema_version", &SCHEMA_VERSION.to_string())?;
    match db.get("cursor_secret")? {
        Some(hex) => decode_hex_secret(&hex),
        None => {
            let secret = random_secret()?;
            db.set("cursor_secret", &crate::contract::hex_lower(&secret))?;
            Ok(secret)
        }
    }
}
