//! Store errors: each names its cause. A store error never leaves a half-written change:
//! every write is one statement or one transaction.

use std::fmt;

/// Why a store operation failed; nothing was changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreError {
    /// The store URL does not parse or names an unsupported store.
    Url {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The database could not be opened or connected to.
    Open {
        /// The file or server tried (never with a password).
        target: String,
        /// The driver's error.
        cause: String,
    },
    /// The database was written by a newer tasklatch.
    SchemaTooNew {
        /// The database's schema version.
        found: i64,
        /// The newest schema version this build reads.
        supported: i64,
    },
    /// A stored row does not decode; names the task and the column.
    Corrupt {
        /// The task whose row is corrupted.
        task_id: String,
        /// The column that does not decode.
        column: &'static str,
        /// What is wrong with the value.
        detail: String,
    },
    /// A command that breaks a precondition (e.g. an outcome with a live status).
    Invalid(String),
    /// An import or insert of a task id that exists.
    Duplicate {
        /// The id that exists already.
        task_id: String,
    },
    /// The database refused or failed an operation.
    Backend {
        /// What was attempted, as a verb phrase (`"draw a cursor secret"`).
        operation: &'static str,
        /// The driver's error.
        cause: String,
    },
    /// The store's enforcement and the contract disagree: a bug, reported, not hidden.
    Inconsistent(String),
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Url { url, reason } => write!(f, "bad store URL {url:?}: {reason}"),
            StoreError::Open { target, cause } => write!(f, "cannot open {target}: {cause}"),
            StoreError::SchemaTooNew { found, supported } => write!(
                f,
                "the database has schema version {found}, newer than this tasklatch supports \
                 ({supported}); upgrade tasklatch, nothing was changed"
            ),
            StoreError::Corrupt {
                task_id,
                column,
                detail,
            } => write!(
                f,
                "corrupted row: task {task_id:?}, column {column}: {detail}"
            ),
            StoreError::Invalid(reason) => write!(f, "invalid command: {reason}"),
            StoreError::Duplicate { task_id } => write!(f, "task {task_id:?} already exists"),
            StoreError::Backend { operation, cause } => write!(f, "cannot {operation}: {cause}"),
            StoreError::Inconsistent(reason) => write!(f, "store and contract disagree: {reason}"),
        }
    }
}

impl std::error::Error for StoreError {}
